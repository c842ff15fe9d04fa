//! `openclaw-scenario`: OpenClaw.NET harness scenarios whose `scriptedTrace` becomes a trace of
//! that scenario. The scenario's `input` is never copied (only a hash of `input.userMessage`).
//!
//! | step `kind` (case, `-`, `_` ignored) | trace |
//! |---|---|
//! | `toolCall` (`toolName`, `argumentsJson`) | `tool_call` (call ids `call-1`, `call-2`… unless the step has `callId`/`id`) |
//! | `toolResult` (`toolName`, `result`, `error`) | `tool_result` of the latest unanswered call of that tool; `ok` unless `error` |
//! | `approvalRequest` (`toolName`) | `approval_request` |
//! | `reasoning`, `event` | `note` |
//! | `stateChange` | `state_change` |
//! | `error` | `error` |
//! | `timestampUtc` | `ts_ms` |
//! | `finalAnswer`, `status` | `final_answer`, `run_end` (`completed` unless the status says failed or cancelled) |

use serde_json::Value;

use super::naming::{self, Position, RunIds};
use super::{
    IngestOptions, IngestOutcome, IngestedRun, InputFormat, RunBuilder, args_from, parse_rfc3339_ms,
};
use crate::scenario::{field, scalar_string};
use crate::trace::{EventBody, Json, RunStatus, Str, squash};

/// Imports harness scenario files (one object or an array).
pub(crate) fn ingest(bytes: &[u8], opts: &IngestOptions) -> IngestOutcome {
    let mut outcome = IngestOutcome::default();
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => {
            outcome.reject(
                format!("line {}, column {}", e.line(), e.column()),
                format!(
                    "not JSON: {}",
                    crate::trace::json::message_without_position(&e)
                ),
            );
            return outcome;
        }
    };
    let scenarios: Vec<Value> = match value {
        Value::Array(a) => a,
        other => vec![other],
    };
    for (i, s) in scenarios.iter().enumerate() {
        let at = format!("scenario {}", i + 1);
        let Some(obj) = s.as_object() else {
            outcome.reject(&at, "not a scenario object");
            continue;
        };
        let Some(id) = (opts.scenario.clone())
            .or_else(|| field(obj, "id").and_then(Value::as_str).map(str::to_owned))
        else {
            outcome.reject(&at, "the scenario has no `id`; pass `--scenario ID`");
            continue;
        };
        let Some(script) = field(obj, "scriptedTrace").and_then(Value::as_object) else {
            outcome.warn(
                &at,
                format!("scenario `{id}` has no `scriptedTrace`; nothing to import"),
            );
            continue;
        };
        let user = field(obj, "input")
            .and_then(|v| v.as_object())
            .and_then(|i| field(i, "userMessage"))
            .and_then(Value::as_str);
        let ids = RunIds {
            scenario: Some(id),
            case: Some("scripted".to_owned()),
            ..RunIds::default()
        };
        let at_run = Position {
            n: i + 1,
            of: scenarios.len(),
        };
        let (scenario, case) = match naming::name(&ids, at_run, opts) {
            Ok(n) => n,
            Err(e) => {
                outcome.reject(&at, e);
                continue;
            }
        };
        match scripted_trace(&scenario, &case, user, script, opts) {
            Ok(trace) => outcome.add(IngestedRun::new(scenario, case, trace), &at, opts),
            Err((step, message)) => outcome.reject(format!("{at}, step {step}"), message),
        }
    }
    outcome
}

/// A step's id (`callId`, `id`): an empty one is no id.
fn id_of(step: &serde_json::Map<String, Value>, names: &[&str]) -> Option<String> {
    text_of(step, names).filter(|id| !id.trim().is_empty())
}

fn text_of(step: &serde_json::Map<String, Value>, names: &[&str]) -> Option<String> {
    names.iter().find_map(|n| {
        field(step, n).and_then(scalar_string).or_else(|| {
            field(step, n)
                .filter(|v| !v.is_null())
                .map(Value::to_string)
        })
    })
}

/// Builds the trace of one `scriptedTrace`; the error names the 1-based step.
pub(crate) fn scripted_trace(
    scenario: &str,
    case: &str,
    user_message: Option<&str>,
    script: &serde_json::Map<String, Value>,
    opts: &IngestOptions,
) -> Result<crate::trace::SealedTrace, (usize, String)> {
    let mut b = RunBuilder::new(
        InputFormat::OpenclawScenario,
        (scenario, case, None),
        None,
        opts,
    );
    if let Some(text) = user_message {
        let prompt = b.prompt(text);
        b.push(None, EventBody::UserMessage { prompt, id: None });
    }
    let mut open_calls: Vec<(String, String)> = Vec::new(); // (tool, call id) without a result yet
    let mut n = 0;
    let steps = field(script, "steps")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, step) in steps.iter().enumerate() {
        let at = i + 1;
        let step = step
            .as_object()
            .ok_or((at, "a step is not an object".to_owned()))?;
        let kind = field(step, "kind")
            .and_then(Value::as_str)
            .map(squash)
            .unwrap_or_default();
        let ts = match field(step, "timestampUtc").and_then(Value::as_str) {
            Some(t) => Some(
                parse_rfc3339_ms(t)
                    .ok_or((at, format!("`timestampUtc` `{t}` is not an RFC 3339 time")))?,
            ),
            None => None,
        };
        let tool = text_of(step, &["toolName", "tool"]);
        match kind.as_str() {
            "toolcall" => {
                let tool = tool.ok_or((at, "a `toolCall` step has no `toolName`".to_owned()))?;
                n += 1;
                let id = id_of(step, &["callId", "id"]).unwrap_or_else(|| format!("call-{n}"));
                let raw = field(step, "argumentsJson").or_else(|| field(step, "arguments"));
                let (args, _) = args_from(raw);
                open_calls.push((tool.clone(), id.clone()));
                b.push(
                    ts,
                    EventBody::ToolCall {
                        call_id: Str::from(id),
                        tool: Str::from(tool),
                        args,
                    },
                );
            }
            "toolresult" => {
                let pos = match &tool {
                    Some(t) => open_calls
                        .iter()
                        .rposition(|(ct, _)| ct.eq_ignore_ascii_case(t)),
                    None => open_calls.len().checked_sub(1),
                };
                let (_, id) = open_calls.remove(pos.ok_or((
                    at,
                    "a `toolResult` step with no earlier call of that tool".to_owned(),
                ))?);
                let error = text_of(step, &["error"]).filter(|e| !e.is_empty());
                let output = field(step, "result").cloned().filter(|v| !v.is_null());
                b.push(
                    ts,
                    EventBody::ToolResult {
                        call_id: Str::from(id),
                        ok: error.is_none(),
                        output: output.as_ref().map(Json::from_value),
                        output_h: None,
                        error: error.map(Str::from),
                    },
                );
            }
            "approvalrequest" => {
                b.push(
                    ts,
                    EventBody::ApprovalRequest {
                        tool: tool.map(Str::from),
                        call_id: None,
                        approval_id: None,
                        reason: text_of(step, &["reason", "message"]).map(Str::from),
                    },
                );
            }
            "reasoning" | "event" => {
                let text = text_of(step, &["content", "text", "message", "result"])
                    .unwrap_or_else(|| kind.clone());
                b.push(
                    ts,
                    EventBody::Note {
                        text: Str::from(text),
                    },
                );
            }
            "statechange" => {
                let path = text_of(step, &["path", "key", "name", "toolName"])
                    .unwrap_or_else(|| "state".to_owned());
                b.push(
                    ts,
                    EventBody::StateChange {
                        path: Str::from(path),
                        from: field(step, "from").map(Json::from_value),
                        to: field(step, "to").map(Json::from_value),
                    },
                );
            }
            "error" => {
                let message = text_of(step, &["error", "message", "result"])
                    .unwrap_or_else(|| "error".to_owned());
                b.push(
                    ts,
                    EventBody::Error {
                        message: Str::from(message),
                        code: None,
                        input_h: None,
                    },
                );
            }
            other => return Err((at, format!("unknown step kind `{other}`"))),
        }
    }
    let status = match text_of(script, &["status"]).map(|s| s.trim().to_ascii_lowercase()) {
        Some(s) if ["failed", "failure", "error", "errored"].contains(&s.as_str()) => {
            RunStatus::Failed
        }
        Some(s) if ["cancelled", "canceled", "aborted"].contains(&s.as_str()) => {
            RunStatus::Cancelled
        }
        _ => RunStatus::Completed,
    };
    b.finish(text_of(script, &["finalAnswer"]), status, None)
        .map_err(|e| (steps.len(), e.to_string()))
}
