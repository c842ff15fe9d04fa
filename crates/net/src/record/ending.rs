//! How a recorded run ended when the runtime did not say: inferred only where it is safe.
//!
//! A runtime that never posts `finish` (the five-line examples, an agent that simply returns)
//! still ended its run somehow. The recorder writes the run `completed` — with the last answer's
//! text as its final answer, and a `note` saying how the end was known — only when the last
//! thing the model did was answer in text, with finish `stop` and no tool call, and nothing
//! failed, was cut, was handed back or was asked (a user turn) after it. Any other run without a
//! reported end is written `failed`, as before: a run is never called completed that the
//! evidence does not show ended.

use serde_json::{Value, json};

/// The end the evidence shows, when the runtime reported none: the request number (1-based,
/// among the run's inferences) of the final answer, and its text.
pub(super) struct Inferred {
    request: usize,
    text: String,
}

impl Inferred {
    /// The end `events` show, if they show one (see the module's rule); `None` when a request
    /// was cut short by the session's end.
    pub(super) fn from(events: &[Value], cut_short: bool) -> Option<Inferred> {
        if cut_short {
            return None;
        }
        let kind = |e: &Value| e["kind"].as_str().unwrap_or("").to_owned();
        // The last event that says what the agent or the model did; runtime notes, messages
        // and artifacts after the final answer do not change how it ended.
        let last = (events.iter().rev()).find(|e| {
            matches!(
                kind(e).as_str(),
                "inference"
                    | "error"
                    | "tool_call"
                    | "tool_result"
                    | "approval_request"
                    | "user_message"
            )
        })?;
        if kind(last) != "inference" || last["finish"] != "stop" {
            return None;
        }
        let output = &last["output"];
        let text = output["text"].as_str().filter(|t| !t.trim().is_empty())?;
        let calls = output["tool_calls"]
            .as_array()
            .is_some_and(|c| !c.is_empty());
        if calls || last["truncated"] == true {
            return None;
        }
        let request = (events.iter()).filter(|e| e["kind"] == "inference").count();
        Some(Inferred {
            request,
            text: text.to_owned(),
        })
    }

    /// The events that end the run: a `note` saying how the end was known, the final answer
    /// (unless the runtime reported one), and `run_end` `completed`.
    pub(super) fn events(&self, source: &str, final_answer_reported: bool) -> Vec<Value> {
        let mut out = vec![json!({
            "kind": "note",
            "text": format!(
                "run end inferred by the {source} server: the runtime reported none, and the last model answer (request {}) was text with finish `stop` and no tool call{}",
                self.request,
                if final_answer_reported { "" } else { "; its text is the final answer" }
            ),
        })];
        if !final_answer_reported {
            out.push(json!({"kind": "final_answer", "text": self.text}));
        }
        out.push(json!({"kind": "run_end", "status": "completed"}));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let end = Inferred::from(&events, false).expect("inferred");
        assert_eq!((end.request, end.text.as_str()), (2, "Sunny, 21 C."));
        let written = end.events("record", false);
        assert_eq!(written.len(), 3);
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
                    json!({"kind": "user_message", "prompt": {"h": "b3:00", "len": 1}}),
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
            assert!(Inferred::from(&events, cut).is_none(), "{events:?} {cut}");
        }
    }
}
