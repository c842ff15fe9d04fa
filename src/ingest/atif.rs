//! `atif`: Harbor's Agent Trajectory Interchange Format (ATIF v1.x) — one trajectory per
//! document (or JSON Lines of them, or an array). Prompt text is hashed on the way in, as every
//! importer hashes it.
//!
//! | ATIF | trace |
//! |---|---|
//! | `agent.model_name`, `.name`, `.version`, `session_id` | header `model`; labels `atif.agent`, `atif.agent_version`, `atif.session_id` |
//! | `system` step | hashed: the `system_h` of the inferences after it |
//! | `user` step | `user_message` (hashed) |
//! | `agent` step (an LLM call) | `inference`: `input_h` of the conversation so far, `output` (`message`, `tool_calls`), `usage` (`metrics`), `model_name`, `timestamp`; `reasoning_content` a `note` before it |
//! | `agent` step with `llm_call_count: 0` | its tool calls and message only (no inference) |
//! | `tool_calls` | `tool_call` events |
//! | `observation.results` | `tool_result` of their `source_call_id` (its `content` the output); a result of no call a `note` of its content |
//! | the last agent step's message, with no tool calls after it | `final_answer`; `run_end` `completed` (else `failed`) |
//! | `subagent_trajectories` | runs of their own, case `<case>.<trajectory_id>` |
//!
//! What the trace format has no place for — `extra` objects, `reasoning_effort`,
//! `is_copied_context`, `final_metrics`, `notes`, `continued_trajectory_ref`, non-text content
//! parts — is counted in the import's summary, by field.

use crate::ingest::identity::Conversation;
use serde_json::{Value, json};

use super::naming::{self, Position, RunIds};
use super::{Format, IngestOptions, IngestOutcome, RunBuilder, args_from, content_text};
use crate::trace::{EventBody, Finish, InferenceOutput, Json, PlannedCall, RunStatus, Str, Usage};

/// Imports ATIF trajectories.
pub(crate) fn ingest(bytes: &[u8], opts: &IngestOptions) -> IngestOutcome {
    let mut outcome = IngestOutcome::default();
    let mut docs = Vec::new();
    for (i, raw) in serde_json::Deserializer::from_slice(bytes)
        .into_iter::<Box<serde_json::value::RawValue>>()
        .enumerate()
    {
        // An object holding a key twice (`steps` twice, say) is refused, never resolved
        // last-wins: which one a reader takes is not the input's to leave open.
        let v = raw.and_then(|raw| {
            crate::trace::json::no_duplicate_keys(raw.get().as_bytes())?;
            serde_json::from_str::<Value>(raw.get())
        });
        match v {
            Ok(Value::Array(items)) => docs.extend(items),
            Ok(v) => docs.push(v),
            Err(e) => {
                outcome.reject(
                    format!("line {}, column {}", e.line(), e.column()),
                    format!(
                        "document {}: not JSON: {}",
                        i + 1,
                        crate::trace::json::message_without_position(&e)
                    ),
                );
                return outcome;
            }
        }
    }
    let of = docs.len();
    for (i, doc) in docs.iter().enumerate() {
        let at = format!("trajectory {}", i + 1);
        let ids = RunIds {
            source: Some("atif".to_owned()),
            agent: doc
                .pointer("/agent/name")
                .and_then(Value::as_str)
                .map(str::to_owned),
            id: (doc.get("session_id").or_else(|| doc.get("trajectory_id")))
                .and_then(Value::as_str)
                .map(str::to_owned),
            ..RunIds::default()
        };
        let named = naming::name(&ids, Position { n: i + 1, of }, opts);
        let (scenario, case) = match named {
            Ok(n) => n,
            Err(e) => {
                outcome.reject(&at, e);
                continue;
            }
        };
        run(doc, (&scenario, &case), &at, opts, &mut outcome);
    }
    outcome
}

/// Imports one trajectory (and its embedded subagents, as runs of their own).
fn run(
    doc: &Value,
    (scenario, case): (&str, &str),
    at: &str,
    opts: &IngestOptions,
    outcome: &mut IngestOutcome,
) {
    let Some(steps) = doc.get("steps").and_then(Value::as_array) else {
        outcome.reject(at, "not an ATIF trajectory: it has no `steps` list");
        return;
    };
    if doc
        .pointer("/agent/tool_definitions")
        .is_some_and(|v| !v.is_null())
    {
        skip(outcome, "atif agent `tool_definitions`");
    }
    for dropped in [
        "extra",
        "final_metrics",
        "notes",
        "continued_trajectory_ref",
    ] {
        if doc.get(dropped).is_some_and(|v| !v.is_null()) {
            skip(outcome, &format!("atif trajectory `{dropped}`"));
        }
    }
    let model = doc.pointer("/agent/model_name").and_then(Value::as_str);
    let mut labels = std::collections::BTreeMap::new();
    for (label, pointer) in [
        ("atif.agent", "/agent/name"),
        ("atif.agent_version", "/agent/version"),
        ("atif.session_id", "/session_id"),
    ] {
        if let Some(v) = doc.pointer(pointer).and_then(Value::as_str) {
            labels.insert(label.to_owned(), v.to_owned());
        }
    }
    let mut b = RunBuilder::with_labels(Format::Atif, (scenario, case, None), model, labels, opts);
    let mut messages = Conversation::new(&opts.hasher);
    let mut system_h = None;
    let mut final_answer = None;
    for (n, step) in steps.iter().enumerate() {
        let at = format!("{at}, step {}", n + 1);
        let source = step.get("source").and_then(Value::as_str).unwrap_or("");
        let ts = step_time(step.get("timestamp"), outcome);
        for dropped in ["extra", "reasoning_effort", "is_copied_context"] {
            if step.get(dropped).is_some_and(|v| !v.is_null()) {
                skip(outcome, &format!("atif step `{dropped}`"));
            }
        }
        let text = text_of(step.get("message"), outcome).unwrap_or_default();
        match source {
            "system" => {
                system_h = Some(b.prompt(&text).h);
                messages.push(json!({"role": "system", "content": text}));
            }
            "user" => {
                let prompt = b.prompt(&text);
                b.push(ts, EventBody::UserMessage { prompt, id: None });
                messages.push(json!({"role": "user", "content": text}));
                final_answer = None;
            }
            "agent" => {
                let calls = step
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                agent_step(
                    &mut b,
                    step,
                    (ts, &text, &calls),
                    (&mut messages, system_h.clone()),
                    model,
                    outcome,
                );
                final_answer = (calls.is_empty() && !text.is_empty()).then(|| text.clone());
            }
            other => {
                outcome.reject(
                    &at,
                    format!("a step's `source` must be system, user or agent, not `{other}`"),
                );
                return;
            }
        }
        observations(&mut b, step, &mut messages, outcome);
    }
    let status = match final_answer.is_some() {
        true => (RunStatus::Completed, None),
        false => (
            RunStatus::Failed,
            Some("the trajectory ends without an answer from the agent".to_owned()),
        ),
    };
    b.finish_into(outcome, at, opts, (final_answer, status.0, status.1));
    for (i, sub) in (doc.get("subagent_trajectories").and_then(Value::as_array))
        .into_iter()
        .flatten()
        .enumerate()
    {
        let id = sub
            .get("trajectory_id")
            .and_then(Value::as_str)
            .map_or_else(|| format!("sub-{}", i + 1), str::to_owned);
        run(
            sub,
            (scenario, &format!("{case}.{id}")),
            &format!("{at}, subagent `{id}`"),
            opts,
            outcome,
        );
    }
}

/// An agent step: an inference (unless `llm_call_count` is 0), its reasoning as a note, and
/// its tool calls.
fn agent_step(
    b: &mut RunBuilder,
    step: &Value,
    (ts, text, calls): (Option<i64>, &str, &[Value]),
    (messages, system_h): (&mut Conversation, Option<Str<'static>>),
    model: Option<&str>,
    outcome: &mut IngestOutcome,
) {
    let step_id = step
        .get("step_id")
        .map_or_else(String::new, Value::to_string);
    let planned: Vec<(String, String, Value)> = (calls.iter().enumerate())
        .map(|(k, c)| {
            if c.get("extra").is_some_and(|v| !v.is_null()) {
                skip(outcome, "atif tool call `extra`");
            }
            // An empty id is no id: the call gets one of its own, which no result names.
            let id = match super::id_str(c.get("tool_call_id")) {
                Some(id) => id.to_owned(),
                None => {
                    skip(outcome, "atif tool call without `tool_call_id` (given an id of its own, linked to no result)");
                    format!("atif-step-{step_id}-call-{}", k + 1)
                }
            };
            (
                id,
                c.get("function_name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                c.get("arguments").cloned().unwrap_or_else(|| json!({})),
            )
        })
        .collect();
    if let Some(r) = step.get("reasoning_content").and_then(Value::as_str) {
        b.push(
            ts,
            EventBody::Note {
                text: Str::from(format!("reasoning: {r}")),
            },
        );
    }
    if step.get("llm_call_count").and_then(Value::as_u64) != Some(0) {
        let input_h = messages.input_h();
        let tool_calls: Vec<PlannedCall> = (planned.iter())
            .map(|(id, tool, args)| PlannedCall {
                call_id: Str::from(id.clone()),
                tool: Str::from(tool.clone()),
                args: args_from(Some(args)).0,
            })
            .collect();
        let metrics = step.get("metrics");
        let n = |k: &str| metrics.and_then(|m| m.get(k)).and_then(Value::as_u64);
        let usage = match (n("prompt_tokens"), n("completion_tokens")) {
            (Some(i), Some(o)) => Some(Usage {
                input_tokens: i,
                output_tokens: o,
                cache_read_tokens: n("cached_tokens"),
                cost_usd: metrics
                    .and_then(|m| m.get("cost_usd"))
                    .and_then(Value::as_f64)
                    .filter(|c| *c >= 0.0 && c.is_finite()),
                ..Usage::default()
            }),
            _ => None,
        };
        // The results handed back since the model last answered: the tool messages after the
        // conversation's last assistant message.
        let mut consumes: Vec<Str<'static>> = (messages.messages().iter().rev())
            .take_while(|m| m.get("role").and_then(Value::as_str) != Some("assistant"))
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
            .filter_map(|m| m.get("tool_call_id").and_then(Value::as_str))
            .map(|id| Str::from(id.to_owned()))
            .collect();
        consumes.reverse();
        let inference = crate::trace::Inference {
            consumes: (!consumes.is_empty()).then_some(consumes),
            model: step
                .get("model_name")
                .and_then(Value::as_str)
                .or(model)
                .map(|m| Str::from(m.to_owned())),
            input_h: Some(Str::from(input_h)),
            system_h,
            output: Some(InferenceOutput {
                text: (!text.is_empty()).then(|| Str::from(text.to_owned())),
                tool_calls: (!tool_calls.is_empty()).then_some(tool_calls),
            }),
            usage,
            finish: Some(if planned.is_empty() {
                Finish::Stop
            } else {
                Finish::ToolCall
            }),
            ..Default::default()
        };
        b.push(ts, EventBody::Inference(Box::new(inference)));
    }
    for (id, tool, args) in &planned {
        b.push(
            ts,
            EventBody::ToolCall {
                call_id: Str::from(id.clone()),
                tool: Str::from(tool.clone()),
                args: args_from(Some(args)).0,
            },
        );
    }
    let calls_json: Vec<Value> = (planned.iter())
        .map(|(id, tool, args)| json!({"id": id, "type": "function", "function": {"name": tool, "arguments": args}}))
        .collect();
    let mut m = json!({"role": "assistant", "content": text});
    if !calls_json.is_empty() {
        m["tool_calls"] = Value::Array(calls_json);
    }
    messages.push(m);
}

/// A step's observation results: each a `tool_result` of its call, or a note.
fn observations(
    b: &mut RunBuilder,
    step: &Value,
    messages: &mut Conversation,
    outcome: &mut IngestOutcome,
) {
    for r in (step
        .pointer("/observation/results")
        .and_then(Value::as_array))
    .into_iter()
    .flatten()
    {
        if r.get("extra").is_some_and(|v| !v.is_null()) {
            skip(outcome, "atif observation result `extra`");
        }
        let content = text_of(r.get("content"), outcome).unwrap_or_default();
        match super::id_str(r.get("source_call_id")) {
            Some(id) => {
                b.push(
                    None,
                    EventBody::ToolResult {
                        call_id: Str::from(id.to_owned()),
                        ok: true,
                        output: Some(Json::from_value(&Value::String(content.clone()))),
                        output_h: None,
                        error: None,
                    },
                );
                messages.push(json!({"role": "tool", "tool_call_id": id, "content": content}));
            }
            None => {
                b.push(
                    None,
                    EventBody::Note {
                        text: Str::from(content),
                    },
                );
            }
        }
    }
}

/// The text of a message or result: a string, or the text parts of a content-part list (the
/// others counted as dropped).
fn text_of(v: Option<&Value>, outcome: &mut IngestOutcome) -> Option<String> {
    let v = v?;
    if let Value::Array(parts) = v {
        let others = parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str) != Some("text"))
            .count();
        for _ in 0..others {
            skip(outcome, "atif non-text content part");
        }
        let texts: Vec<&str> = parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect();
        return Some(texts.join("\n"));
    }
    content_text(v)
}

/// A step's `timestamp` as Unix milliseconds ([`super::stamp`]): one refused, or not a string,
/// is counted under `skipped:` and gives no time — never a shifted one; digits below the
/// millisecond, which `ts_ms` cannot hold, are counted too.
fn step_time(v: Option<&Value>, outcome: &mut IngestOutcome) -> Option<i64> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::String(t)) => match super::stamp::parse(t) {
            Ok(s) => {
                if s.sub_ms_ns > 0 {
                    skip(
                        outcome,
                        "atif step `timestamp` digits below the millisecond",
                    );
                }
                Some(s.ms)
            }
            Err(_) => {
                skip(
                    outcome,
                    "atif step `timestamp` (not an ISO 8601 time: refused)",
                );
                None
            }
        },
        Some(_) => {
            skip(outcome, "atif step `timestamp` (not a string: refused)");
            None
        }
    }
}

fn skip(outcome: &mut IngestOutcome, what: &str) {
    *outcome.skipped.entry(what.to_owned()).or_default() += 1;
}
