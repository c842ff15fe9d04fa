//! How a recorded run ended when the runtime did not say: inferred only where it is safe.
//!
//! A runtime that never posts `finish` (the five-line examples, an agent that simply returns)
//! still ended its run somehow. The recorder writes the run `completed` — with the last answer's
//! text as its final answer, and a `note` saying how the end was known — only when the last
//! thing the model did was answer in text, with finish `stop` and no tool call, and nothing
//! failed, was cut, was handed back or was asked (a user turn) after it. Any other run without a
//! reported end is written `failed`, as before: a run is never called completed that the
//! evidence does not show ended.

use crate::trace::{Event, EventBody, Finish, RunStatus, Str};

/// The end the evidence shows, when the runtime reported none: the request number (1-based,
/// among the run's inferences) of the final answer, and its text.
pub(super) struct Inferred {
    request: usize,
    text: String,
}

impl Inferred {
    /// The end `events` show, if they show one (see the module's rule); `None` when a request
    /// was cut short by the session's end.
    pub(super) fn from(events: &[Event<'_>], cut_short: bool) -> Option<Inferred> {
        if cut_short {
            return None;
        }
        // The last event that says what the agent or the model did; runtime notes, messages
        // and artifacts after the final answer do not change how it ended.
        let last = (events.iter().rev()).find(|e| {
            matches!(
                e.body,
                EventBody::Inference(_)
                    | EventBody::Error { .. }
                    | EventBody::ToolCall { .. }
                    | EventBody::ToolResult { .. }
                    | EventBody::ApprovalRequest { .. }
                    | EventBody::UserMessage { .. }
            )
        })?;
        let EventBody::Inference(last) = &last.body else {
            return None;
        };
        if last.finish != Some(Finish::Stop) || last.truncated {
            return None;
        }
        let output = last.output.as_ref()?;
        let text = output.text.as_deref().filter(|t| !t.trim().is_empty())?;
        if output.tool_calls.as_ref().is_some_and(|c| !c.is_empty()) {
            return None;
        }
        let request = (events.iter())
            .filter(|e| matches!(e.body, EventBody::Inference(_)))
            .count();
        Some(Inferred {
            request,
            text: text.to_owned(),
        })
    }

    /// The events that end the run: a `note` saying how the end was known, the final answer
    /// (unless the runtime reported one), and `run_end` `completed`.
    pub(super) fn events(&self, source: &str, final_answer_reported: bool) -> Vec<Event<'static>> {
        let text = format!(
            "run end inferred by the {source} server: the runtime reported none, and the last model answer (request {}) was text with finish `stop` and no tool call{}",
            self.request,
            if final_answer_reported {
                ""
            } else {
                "; its text is the final answer"
            }
        );
        let mut out = vec![EventBody::Note { text: text.into() }];
        if !final_answer_reported {
            out.push(EventBody::FinalAnswer {
                text: Str::from(self.text.as_str()),
            });
        }
        out.push(EventBody::RunEnd {
            status: RunStatus::Completed,
            error: None,
        });
        out.into_iter().map(|b| Event::new(0, None, b)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// `v` as the trace reader reads it, typed.
    fn typed(v: &Value) -> Event<'static> {
        let mut v = v.clone();
        v["seq"] = json!(1);
        let h = json!({"kind": "header", "format": "tracereplay.trace", "version": 1, "scenario": "s", "case": "c"});
        let file =
            crate::trace::TraceFile::from_bytes("t", format!("{h}\n{v}\n").into_bytes(), false);
        let seal = file.verify_seal(false).unwrap();
        let parsed = crate::trace::parse_trace(&file, &seal, Default::default()).unwrap();
        parsed.trace.events[0].clone().into_owned()
    }

    fn all(events: &[Value]) -> Vec<Event<'static>> {
        events.iter().map(typed).collect()
    }

    fn written(e: &Event<'_>) -> Value {
        serde_json::to_value(e).unwrap()
    }

    fn inference(text: Option<&str>, calls: bool, finish: &str) -> Value {
        let mut output = json!({});
        if let Some(t) = text {
            output["text"] = json!(t);
        }
        if calls {
            output["tool_calls"] = json!([{"call_id": "c1", "tool": "weather", "args": {}}]);
        }
        json!({"kind": "inference", "output": output, "finish": finish})
    }

    #[test]
    fn a_final_text_answer_ends_the_run() {
        let events = [
            inference(None, true, "tool_call"),
            json!({"kind": "tool_result", "call_id": "c1", "ok": true}),
            inference(Some("Sunny, 21 C."), false, "stop"),
            json!({"kind": "note", "text": "runtime note"}),
        ];
        let end = Inferred::from(&all(&events), false).expect("inferred");
        assert_eq!((end.request, end.text.as_str()), (2, "Sunny, 21 C."));
        let written: Vec<Value> = end.events("record", false).iter().map(written).collect();
        assert_eq!(written.len(), 3);
        assert_eq!(written[1]["kind"], "final_answer");
        assert_eq!(written[1]["text"], "Sunny, 21 C.");
        assert_eq!(written[2]["status"], "completed");
        assert!(written[0]["text"].as_str().unwrap().contains("request 2"));
        // A final answer the runtime reported is kept, not doubled.
        assert_eq!(end.events("record", true).len(), 2);
    }

    #[test]
    fn anything_else_is_no_end() {
        let cases: Vec<(Vec<Value>, bool)> = vec![
            (vec![], false),
            (vec![inference(Some("x"), true, "tool_call")], false),
            (vec![inference(Some("x"), false, "length")], false),
            (vec![inference(Some("  "), false, "stop")], false),
            (vec![inference(None, false, "stop")], false),
            (vec![inference(Some("x"), false, "stop")], true),
            (
                vec![
                    inference(Some("x"), false, "stop"),
                    json!({"kind": "error", "code": "upstream-error", "message": "m"}),
                ],
                false,
            ),
            (
                vec![
                    inference(Some("x"), false, "stop"),
                    json!({"kind": "tool_result", "call_id": "c", "ok": true}),
                ],
                false,
            ),
            (
                vec![
                    inference(Some("x"), false, "stop"),
                    json!({"kind": "user_message", "prompt": {"h": format!("b3:{}", "0".repeat(64)), "len": 1}}),
                ],
                false,
            ),
            (
                vec![{
                    let mut e = inference(Some("x"), false, "stop");
                    e["truncated"] = json!(true);
                    e
                }],
                false,
            ),
        ];
        for (events, cut) in cases {
            assert!(
                Inferred::from(&all(&events), cut).is_none(),
                "{events:?} {cut}"
            );
        }
    }
}
