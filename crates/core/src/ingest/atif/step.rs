//! One ATIF step into trace events: who said it, what the model was asked and answered, the
//! tools it called and what came back — every field mapped or counted.

use serde_json::{Value, json};

use super::{present, skip};
use crate::ingest::identity::Conversation;
use crate::ingest::{IngestOutcome, RunBuilder, args_from, content_text, id_str};
use crate::trace::{
    Event, EventBody, Finish, Inference, InferenceOutput, Json, Phase, PlannedCall, Str, Usage,
};

/// What the steps so far leave for the next.
pub(super) struct State {
    /// The conversation so far, in OpenAI's shape (its hash is each inference's `input_h`).
    pub(super) messages: Conversation,
    /// The hash of the last system prompt.
    pub(super) system_h: Option<Str<'static>>,
    /// A system prompt no inference has used yet.
    pub(super) system_unused: bool,
    /// The last agent message, while no tool call or user turn came after it.
    pub(super) final_answer: Option<String>,
    /// The names of the agent's tool definitions.
    pub(super) tools_offered: Option<Vec<Str<'static>>>,
    /// The agent's model.
    pub(super) model: Option<String>,
}

/// Where and how a step's events are marked: its time, and whether it is copied context.
#[derive(Clone, Copy)]
struct Mark {
    ts_ms: Option<i64>,
    sub_ns: Option<u32>,
    copied: bool,
}

impl Mark {
    fn push(self, b: &mut RunBuilder, body: EventBody<'_>) {
        b.push_event(&Event {
            ts_sub_ns: self.sub_ns,
            copied: self.copied,
            ..Event::new(0, self.ts_ms, body)
        });
    }
}

/// The fields only an agent step may have.
const AGENT_ONLY: [&str; 6] = [
    "model_name",
    "reasoning_content",
    "tool_calls",
    "metrics",
    "llm_call_count",
    "reasoning_effort",
];

/// Imports step `n` (1-based); a step of no known `source` is an error.
pub(super) fn step(
    b: &mut RunBuilder,
    state: &mut State,
    (n, step): (usize, &Value),
    outcome: &mut IngestOutcome,
) -> Result<(), String> {
    let source = step.get("source").and_then(Value::as_str).unwrap_or("");
    if !matches!(source, "system" | "user" | "agent") {
        return Err(format!(
            "a step's `source` must be system, user or agent, not `{source}`"
        ));
    }
    if step.get("step_id").and_then(Value::as_u64) != Some(n as u64) {
        skip(
            outcome,
            "atif step `step_id` out of sequence (steps are numbered by position)",
        );
    }
    let (ts_ms, sub_ns) = step_time(step.get("timestamp"), outcome);
    let copied = step.get("is_copied_context").and_then(Value::as_bool) == Some(true);
    let mark = Mark {
        ts_ms,
        sub_ns,
        copied,
    };
    for counted in ["extra", "reasoning_effort"] {
        if present(step.get(counted)) {
            skip(outcome, &format!("atif step `{counted}`"));
        }
    }
    if source != "agent" {
        for field in AGENT_ONLY.iter().filter(|f| present(step.get(**f))) {
            skip(outcome, &format!("atif `{field}` on a {source} step"));
        }
    }
    let text = text_of(step.get("message"), outcome).unwrap_or_default();
    match source {
        "system" => {
            for (field, there) in [
                ("timestamp", ts_ms.is_some()),
                ("is_copied_context", copied),
            ] {
                if there {
                    skip(
                        outcome,
                        &format!("atif system step `{field}` (a system prompt is no event)"),
                    );
                }
            }
            if !text.is_empty() {
                if state.system_unused {
                    skip(
                        outcome,
                        "atif system step with no model request after it (its hash is kept by none)",
                    );
                }
                state.system_h = Some(b.prompt(&text).h);
                state.system_unused = true;
                state
                    .messages
                    .push(json!({"role": "system", "content": text}));
            }
        }
        "user" => {
            let prompt = b.prompt(&text);
            mark.push(b, EventBody::UserMessage { prompt, id: None });
            state
                .messages
                .push(json!({"role": "user", "content": text}));
            state.final_answer = None;
        }
        _ => agent(b, state, (n, step, mark, &text), outcome),
    }
    observations(b, (source, step, mark), &mut state.messages, outcome);
    Ok(())
}

/// An agent step: an inference (none with `llm_call_count: 0`, whose message is a `message`
/// instead), its reasoning as a note before it, and its tool calls.
fn agent(
    b: &mut RunBuilder,
    state: &mut State,
    (n, step, mark, text): (usize, &Value, Mark, &str),
    outcome: &mut IngestOutcome,
) {
    let calls = planned_calls(n, step, outcome);
    let llm_calls = step.get("llm_call_count").and_then(Value::as_u64);
    if llm_calls == Some(0) {
        for field in ["reasoning_content", "metrics"] {
            if present(step.get(field)) {
                skip(
                    outcome,
                    &format!(
                        "atif `{field}` on a step without a model request (`llm_call_count: 0`)"
                    ),
                );
            }
        }
        if !text.is_empty() {
            let message = EventBody::Message {
                id: Str::from(format!("atif-step-{n}")),
                phase: Phase::Final,
                text: Str::from(text.to_owned()),
                reply_to: None,
                channel: None,
            };
            mark.push(b, message);
        } else if calls.is_empty() {
            skip(
                outcome,
                "atif agent step with nothing to record (no model request, message or tool call)",
            );
        }
    } else {
        if let Some(r) = step.get("reasoning_content").and_then(Value::as_str) {
            let text = Str::from(format!("reasoning: {r}"));
            mark.push(b, EventBody::Note { text });
        }
        let inference = Inference {
            consumes: consumed(&state.messages),
            model: step
                .get("model_name")
                .and_then(Value::as_str)
                .or(state.model.as_deref())
                .map(|m| Str::from(m.to_owned())),
            input_h: Some(Str::from(state.messages.input_h())),
            system_h: state.system_h.clone(),
            tools_offered: state.tools_offered.clone(),
            output: Some(InferenceOutput {
                text: (!text.is_empty()).then(|| Str::from(text.to_owned())),
                tool_calls: (!calls.is_empty()).then(|| calls.clone()),
            }),
            usage: usage(step.get("metrics"), outcome),
            finish: Some(if calls.is_empty() {
                Finish::Stop
            } else {
                Finish::ToolCall
            }),
            llm_calls: llm_calls
                .filter(|c| *c > 1)
                .map(|c| u32::try_from(c).unwrap_or(u32::MAX)),
            ..Default::default()
        };
        mark.push(b, EventBody::Inference(Box::new(inference)));
        state.system_unused = false;
    }
    for c in &calls {
        let call = EventBody::ToolCall {
            call_id: c.call_id.clone(),
            tool: c.tool.clone(),
            args: c.args.clone(),
        };
        mark.push(b, call);
    }
    let calls_json: Vec<Value> = (calls.iter())
        .map(|c| json!({"id": &*c.call_id, "type": "function", "function": {"name": &*c.tool, "arguments": &c.args}}))
        .collect();
    let mut m = json!({"role": "assistant", "content": text});
    if !calls_json.is_empty() {
        m["tool_calls"] = Value::Array(calls_json);
    }
    state.messages.push(m);
    state.final_answer = (calls.is_empty() && !text.is_empty()).then(|| text.to_owned());
}

/// A step's tool calls; a call without an id gets one of its own, which no result names.
fn planned_calls(n: usize, step: &Value, outcome: &mut IngestOutcome) -> Vec<PlannedCall<'static>> {
    let calls = step.get("tool_calls").and_then(Value::as_array);
    (calls.into_iter().flatten().enumerate())
        .map(|(k, c)| {
            if present(c.get("extra")) {
                skip(outcome, "atif tool call `extra`");
            }
            let id = match id_str(c.get("tool_call_id")) {
                Some(id) => id.to_owned(),
                None => {
                    skip(outcome, "atif tool call without `tool_call_id` (given an id of its own, linked to no result)");
                    format!("atif-step-{n}-call-{}", k + 1)
                }
            };
            let tool = c.get("function_name").and_then(Value::as_str).unwrap_or_default();
            PlannedCall {
                call_id: Str::from(id),
                tool: Str::from(tool.to_owned()),
                args: args_from(Some(c.get("arguments").unwrap_or(&json!({})))).0,
            }
        })
        .collect()
}

/// The results handed back since the model last answered: the tool messages after the
/// conversation's last assistant message.
fn consumed(messages: &Conversation) -> Option<Vec<Str<'static>>> {
    let mut consumes: Vec<Str<'static>> = (messages.messages().iter().rev())
        .take_while(|m| m.get("role").and_then(Value::as_str) != Some("assistant"))
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
        .filter_map(|m| m.get("tool_call_id").and_then(Value::as_str))
        .map(|id| Str::from(id.to_owned()))
        .collect();
    consumes.reverse();
    (!consumes.is_empty()).then_some(consumes)
}

/// A step's `metrics` as usage: kept when it has both token counts; what the trace has no
/// place for (token ids, log probabilities, `extra`) counted.
fn usage(metrics: Option<&Value>, outcome: &mut IngestOutcome) -> Option<Usage> {
    let metrics = metrics.filter(|m| !m.is_null())?;
    for counted in [
        "prompt_token_ids",
        "completion_token_ids",
        "logprobs",
        "extra",
    ] {
        if present(metrics.get(counted)) {
            skip(outcome, &format!("atif step metrics `{counted}`"));
        }
    }
    let n = |k: &str| metrics.get(k).and_then(Value::as_u64);
    let cost = metrics.get("cost_usd").filter(|c| !c.is_null());
    let cost_usd = cost
        .and_then(Value::as_f64)
        .filter(|c| *c >= 0.0 && c.is_finite());
    if cost.is_some() && cost_usd.is_none() {
        skip(
            outcome,
            "atif step metrics `cost_usd` (not a non-negative number)",
        );
    }
    match (n("prompt_tokens"), n("completion_tokens")) {
        (Some(i), Some(o)) => Some(Usage {
            input_tokens: i,
            output_tokens: o,
            cache_read_tokens: n("cached_tokens"),
            cost_usd,
            ..Usage::default()
        }),
        _ => {
            let any = [
                "prompt_tokens",
                "completion_tokens",
                "cached_tokens",
                "cost_usd",
            ]
            .iter()
            .any(|k| present(metrics.get(*k)));
            if any {
                skip(
                    outcome,
                    "atif step `metrics` without both `prompt_tokens` and `completion_tokens` (not kept)",
                );
            }
            None
        }
    }
}

/// A step's observation results: each a `tool_result` of its call, or a note.
fn observations(
    b: &mut RunBuilder,
    (source, step, mark): (&str, &Value, Mark),
    messages: &mut Conversation,
    outcome: &mut IngestOutcome,
) {
    let results = step
        .pointer("/observation/results")
        .and_then(Value::as_array);
    for r in results.into_iter().flatten() {
        for counted in ["extra", "subagent_trajectory_ref"] {
            if present(r.get(counted)) {
                skip(outcome, &format!("atif observation result `{counted}`"));
            }
        }
        let content = text_of(r.get("content"), outcome).unwrap_or_default();
        let results_mark = Mark {
            ts_ms: None,
            sub_ns: None,
            ..mark
        };
        match id_str(r.get("source_call_id")) {
            Some(id) => {
                let result = EventBody::ToolResult {
                    call_id: Str::from(id.to_owned()),
                    ok: true,
                    output: Some(Json::from_value(&Value::String(content.clone()))),
                    output_h: None,
                    error: None,
                };
                results_mark.push(b, result);
                messages.push(json!({"role": "tool", "tool_call_id": id, "content": content}));
            }
            None => {
                if source != "system" {
                    let a = if source == "agent" { "an" } else { "a" };
                    skip(
                        outcome,
                        &format!(
                            "atif observation result without `source_call_id` on {a} {source} step (kept as a note, written back on a system step)"
                        ),
                    );
                }
                let text = Str::from(content);
                results_mark.push(b, EventBody::Note { text });
            }
        }
    }
}

/// The text of a message or result: a string, or the text parts of a content-part list joined
/// (the list form, and each part that is not text, counted).
fn text_of(v: Option<&Value>, outcome: &mut IngestOutcome) -> Option<String> {
    let v = v?;
    if let Value::Array(parts) = v {
        skip(
            outcome,
            "atif content given as parts (its text parts kept, as one string)",
        );
        for p in parts {
            if p.get("type").and_then(Value::as_str) != Some("text") {
                skip(outcome, "atif non-text content part");
            }
        }
        let texts: Vec<&str> = parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect();
        return Some(texts.join("\n"));
    }
    content_text(v)
}

/// A step's `timestamp` as Unix milliseconds and the nanoseconds below
/// ([`crate::ingest::stamp`]): one refused, or not a string, is counted under `skipped:` and
/// gives no time — never a shifted one.
fn step_time(v: Option<&Value>, outcome: &mut IngestOutcome) -> (Option<i64>, Option<u32>) {
    match v {
        None | Some(Value::Null) => (None, None),
        Some(Value::String(t)) => match crate::ingest::stamp::parse(t) {
            Ok(s) => (Some(s.ms), (s.sub_ms_ns > 0).then_some(s.sub_ms_ns)),
            Err(_) => {
                skip(
                    outcome,
                    "atif step `timestamp` (not an ISO 8601 time: refused)",
                );
                (None, None)
            }
        },
        Some(_) => {
            skip(outcome, "atif step `timestamp` (not a string: refused)");
            (None, None)
        }
    }
}
