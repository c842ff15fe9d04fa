//! One trace's spans → one run, in the attribute dialects of `dialects.rs` (one table each):
//!
//! | what | GenAI conventions | OpenInference | Vercel AI SDK | Traceloop / OpenLLMetry |
//! |---|---|---|---|---|
//! | the agent (names the run) | `invoke_agent` (`gen_ai.agent.name`) | kind `AGENT` | `ai.generateText`, `ai.streamText` | `traceloop.span.kind` `workflow`/`agent` |
//! | an inference | `chat`, `text_completion`, `generate_content`, `call_llm` | kind `LLM` | `ai.*.doGenerate`, `ai.*.doStream` | (its `chat` child span) |
//! | its input | `gen_ai.input.messages` | `llm.input_messages.N.message.*` | `ai.prompt.messages` | `gen_ai.prompt.N.*` |
//! | its output | `gen_ai.output.messages` (text and `tool_call` parts), any-agent's `gen_ai.output` | `llm.output_messages.N.message.*` (`tool_calls.M.tool_call.*`) | `ai.response.text`, `ai.response.toolCalls` | `gen_ai.completion.N.*` |
//! | a tool execution | `execute_tool` (`gen_ai.tool.name`, `.call.id`, `.call.arguments` or `gen_ai.tool.args`, `.call.result`) | kind `TOOL` (`tool.name`, `input.value`, `output.value`) | `ai.toolCall` (`ai.toolCall.name/id/args/result`) | `traceloop.span.kind` `tool` (`traceloop.entity.*`) |
//!
//! Usage, model, finish reason and response id come from whichever dialect's keys are present.
//! Arguments are decoded when they are JSON (also twice-encoded JSON); anything else — a Python
//! repr, say — is kept as the string recorded, never guessed at. A tool execution takes the id
//! of the planned call it carries, else of the first planned, not yet executed call of the same
//! tool, else `span-<span id>`. A planned call with no execution stays on its inference. The
//! first inference's user messages (and any new ones later) become `user_message`s; the last
//! inference text is the final answer. Spans of other kinds (chains, retrievers, HTTP…) are
//! counted as skipped, by kind.

use std::collections::BTreeMap;

use serde_json::Value;

use super::Span;
use super::dialects::{self, KEYS};
use super::messages::{
    Message, conversation, finish_attr, input_of, output_of, system_instructions, tools_offered,
    usage_of,
};
use crate::ingest::identity;
use crate::ingest::naming::{Position, RunIds, name};
use crate::ingest::{IngestOptions, IngestOutcome, InputFormat, RunBuilder, args_from};
use crate::trace::{EventBody, Inference, InferenceOutput, Json, PlannedCall, RunStatus, Str};

/// What a span is to a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Role {
    Agent,
    Inference,
    Tool,
    /// Not mapped; the label counts it as skipped.
    Other(String),
}

/// What a span is: by the first dialect that says ([`dialects::role_of`]), else skipped under
/// its GenAI operation name.
fn role(s: &Span) -> Role {
    dialects::role_of(s).unwrap_or_else(|| match s.str_attr(&["gen_ai.operation.name"]) {
        Some(op) => Role::Other(format!("`{}` spans", op.to_ascii_lowercase())),
        None => Role::Other("spans without GenAI attributes".into()),
    })
}

/// A tool result value: JSON when it is JSON text, else the text.
fn result_value(v: &Value) -> Value {
    match v {
        Value::String(t) => serde_json::from_str::<Value>(t).unwrap_or_else(|_| v.clone()),
        other => other.clone(),
    }
}

/// The first of `keys` the span has, else its name without the operation `prefix` the GenAI
/// conventions put before it (`invoke_agent planner` → `planner`).
fn named(s: &Span, keys: &[&str], prefix: &str) -> String {
    s.str_attr(keys).map(str::to_owned).unwrap_or_else(|| {
        (s.name.strip_prefix(prefix).unwrap_or(&s.name))
            .trim()
            .to_owned()
    })
}

/// The agent's name: its dialect's name for it, or the span name.
fn agent_name(s: &Span) -> String {
    named(s, &KEYS.agent_name, "invoke_agent ")
}

/// Builds the run of one trace into `outcome`.
pub(super) fn build_run(
    format: InputFormat,
    trace_id: &str,
    spans: &[Span],
    final_output: Option<&Value>,
    opts: &IngestOptions,
    outcome: &mut IngestOutcome,
) {
    let at = format!("trace {trace_id}");
    let roles: Vec<Role> = spans.iter().map(role).collect();
    let ids_in: std::collections::HashSet<&str> =
        spans.iter().map(|s| s.span_id.as_str()).collect();
    let agent = (spans.iter().zip(&roles))
        .find(|(_, r)| **r == Role::Agent)
        .map(|(s, _)| s)
        .or_else(|| {
            spans
                .iter()
                .find(|s| s.parent_id.as_deref().is_none_or(|p| !ids_in.contains(p)))
        });
    let ids = RunIds {
        agent: agent.map(agent_name).filter(|a| !a.is_empty()),
        trace: Some(trace_id.to_owned()),
        ..RunIds::default()
    };
    let (scenario, case) = match name(&ids, Position { n: 1, of: 1 }, opts) {
        Ok(n) => n,
        Err(e) => {
            outcome.reject(at, e);
            return;
        }
    };
    let model = spans.iter().find_map(|s| s.str_attr(&KEYS.model));
    let mut labels = std::collections::BTreeMap::from([(
        crate::trace::TRACE_ID_LABEL.to_owned(),
        trace_id.to_owned(),
    )]);
    if let Some(a) = agent {
        labels.insert(crate::trace::SPAN_ID_LABEL.to_owned(), a.span_id.clone());
    }
    let ids = (scenario.as_str(), case.as_str(), None);
    let mut b = RunBuilder::with_labels(format, ids, model, labels, opts);
    // Planned calls not yet executed: id → (tool, arguments).
    let mut planned: Vec<(String, String, Value)> = Vec::new();
    let mut results: Vec<String> = Vec::new();
    let mut users_seen = 0;
    let mut final_answer = None;
    let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
    // Inferences whose conversation the spans do not give (no `input_h`).
    let not_given = &mut 0usize;
    for (n, (s, r)) in spans.iter().zip(&roles).enumerate() {
        let ts = Some((s.start_ns / 1_000_000) as i64);
        let position = format!("{at}, span {}", n + 1);
        match r {
            Role::Inference => {
                let (input, input_text) = input_of(s);
                // A result handed back for a planned call no `execute_tool` span ran (an
                // instrumented client with no tool spans): its `tool_call` and `tool_result`,
                // from the tool message — as `record` records them.
                for m in input.iter().filter(|m| m.role == "tool") {
                    let Some(at) = (m.answers.as_ref())
                        .and_then(|id| planned.iter().position(|(p, _, _)| p == id))
                    else {
                        continue;
                    };
                    let (id, tool, args) = planned.remove(at);
                    let body = EventBody::ToolCall {
                        call_id: Str::from(id.clone()),
                        tool: Str::from(tool),
                        args: args_from(Some(&args)).0,
                    };
                    b.push(ts, body);
                    let output = m.text.clone().map(Value::String);
                    b.push(
                        ts,
                        EventBody::ToolResult {
                            call_id: Str::from(id.clone()),
                            ok: true,
                            output: output.as_ref().map(Json::from_value),
                            output_h: None,
                            error: None,
                        },
                    );
                    results.push(id);
                }
                let users: Vec<&Message> = input.iter().filter(|m| m.role == "user").collect();
                for u in users.iter().skip(users_seen) {
                    if let Some(text) = &u.text {
                        let prompt = b.prompt(text);
                        b.push(ts, EventBody::UserMessage { prompt, id: None });
                    }
                }
                users_seen = users_seen.max(users.len());
                let conversation = conversation(s, &input, input_text.as_deref());
                // The system text as every door reads it: the conversation's last system
                // message, else the instructions recorded apart, else the input's system texts.
                let system = match &conversation {
                    Some(c) => identity::system_text(c),
                    None => system_instructions(s).or_else(|| {
                        let texts: Vec<&str> = (input.iter())
                            .filter(|m| m.role == "system" || m.role == "developer")
                            .filter_map(|m| m.text.as_deref())
                            .collect();
                        (!texts.is_empty()).then(|| texts.join("\n"))
                    }),
                };
                let offered = tools_offered(s);
                // Results handed back to the model: the tool messages in its input.
                let consumes: Vec<Str<'static>> = if input.iter().any(|m| m.role == "tool") {
                    results.drain(..).map(Str::from).collect()
                } else {
                    Vec::new()
                };
                let out = output_of(s);
                let mut calls = Vec::new();
                for (k, (id, tool, args)) in out.calls.into_iter().enumerate() {
                    let id = id.unwrap_or_else(|| format!("{}-{k}", s.span_id));
                    let (parsed, invalid) = args_from(Some(&args));
                    if invalid {
                        outcome.warn(
                            &position,
                            format!("the arguments of call `{id}` are not JSON; kept as the string recorded"),
                        );
                    }
                    planned.push((id.clone(), tool.clone(), args));
                    calls.push(PlannedCall {
                        call_id: Str::from(id),
                        tool: Str::from(tool),
                        args: parsed,
                    });
                }
                let (input_h, request_h) = match &conversation {
                    Some(c) => {
                        let input_h = b.prompt(&identity::conversation_text(c)).h;
                        let parts = identity::request_parts(c, offered.as_deref(), &opts.hasher);
                        let parts = (parts.into_iter())
                            .map(|(at, h)| (Str::from(at), Str::from(h)))
                            .collect();
                        (Some(input_h), Some(parts))
                    }
                    None => {
                        *not_given += 1;
                        (None, None)
                    }
                };
                let system_h = system.map(|t| b.prompt(&t).h);
                let tools_offered = offered.map(|defs| {
                    (defs.iter())
                        .filter_map(|d| d.pointer("/function/name").and_then(Value::as_str))
                        .map(|n| Str::from(n.to_owned()))
                        .collect()
                });
                b.push(
                    ts,
                    EventBody::Inference(Box::new(Inference {
                        request_id: s.str_attr(&KEYS.response_id).map(Str::from),
                        model: s.str_attr(&KEYS.model).map(Str::from),
                        input_h,
                        system_h,
                        request_h,
                        tools_offered,
                        consumes: (!consumes.is_empty()).then_some(consumes),
                        output: Some(InferenceOutput {
                            text: out.text.clone().map(Str::from),
                            tool_calls: (!calls.is_empty()).then_some(calls),
                        }),
                        usage: usage_of(s),
                        finish: finish_attr(s),
                        ..Inference::default()
                    })),
                );
                if out.text.is_some() {
                    final_answer = out.text;
                }
            }
            Role::Tool => {
                let tool = named(s, &KEYS.tool_name, "execute_tool ");
                let own_id = s.str_attr(&KEYS.tool_call_id).map(str::to_owned);
                let from_plan = match &own_id {
                    Some(id) => planned.iter().position(|(p, _, _)| p == id),
                    None => planned.iter().position(|(_, t, _)| *t == tool),
                };
                let plan = from_plan.map(|i| planned.remove(i));
                let id = (own_id.clone())
                    .or_else(|| plan.as_ref().map(|(id, _, _)| id.clone()))
                    .unwrap_or_else(|| format!("span-{}", s.span_id));
                let raw_args = (KEYS.tool_args.iter())
                    .find_map(|k| s.get(k).cloned())
                    .or_else(|| plan.map(|(_, _, a)| a));
                let (args, invalid) = args_from(raw_args.as_ref());
                if invalid {
                    outcome.warn(
                        &position,
                        format!(
                            "the arguments of `{tool}` are not JSON; kept as the string recorded"
                        ),
                    );
                }
                b.push(
                    ts,
                    EventBody::ToolCall {
                        call_id: Str::from(id.clone()),
                        tool: Str::from(tool),
                        args,
                    },
                );
                let output = (KEYS.tool_result.iter())
                    .find_map(|k| s.get(k))
                    .map(result_value);
                b.push(
                    Some((s.end_ns / 1_000_000) as i64),
                    EventBody::ToolResult {
                        call_id: Str::from(id.clone()),
                        ok: s.error.is_none(),
                        output: output.as_ref().map(Json::from_value),
                        output_h: None,
                        error: s.error.clone().map(Str::from),
                    },
                );
                results.push(id);
            }
            Role::Agent => {}
            Role::Other(label) => *skipped.entry(label.clone()).or_default() += 1,
        }
        if !matches!(r, Role::Other(_)) {
            for k in s.unread() {
                *skipped.entry(format!("attribute `{k}`")).or_default() += 1;
            }
        }
    }
    if *not_given > 0 {
        let why = "inferences whose conversation was not captured (content capture off, or roles without their content): no `input_h`";
        *outcome.skipped.entry(why.to_owned()).or_default() += *not_given;
    }
    for (reason, n) in skipped {
        let why = if reason.starts_with("attribute") {
            "ignored"
        } else {
            "not mapped"
        };
        *outcome
            .skipped
            .entry(format!("{reason} ({why})"))
            .or_default() += n;
    }
    if final_answer.is_none() {
        final_answer = final_output
            .filter(|v| !v.is_null() && v.as_object().is_none_or(|o| !o.is_empty()))
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned));
    }
    let (status, error) = match agent.and_then(|a| a.error.clone()) {
        Some(e) => (RunStatus::Failed, Some(e)),
        None => (RunStatus::Completed, None),
    };
    b.finish_into(outcome, &at, opts, (final_answer, status, error));
}
