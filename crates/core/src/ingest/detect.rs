//! Which importer reads an input, told from its content (`ingest` without `--from`): the first
//! JSON value of the file (a document, the first line of JSON Lines, or the first of several
//! concatenated values) is matched against each format's marks.

use serde_json::Value;

use super::InputFormat;
use super::spans::{otlp, sdk};
use crate::scenario::field;

/// What each format is recognised by, for the message when nothing matches.
const LOOKED_FOR: &str = "an OTLP/JSON export (`resourceSpans`), OpenTelemetry SDK span JSON (spans with `context.span_id`), an OpenClaw scenario (`scriptedTrace`), OpenAI-style messages (items with `role` or `type`, or runs with `messages`, `traj` or `simulations`), or an ATIF trajectory (`schema_version` `ATIF-v…`)";

/// The format of `bytes`, or why it cannot be told.
pub fn detect(bytes: &[u8]) -> Result<InputFormat, String> {
    let mut stream = serde_json::Deserializer::from_slice(bytes).into_iter::<Value>();
    let first = match stream.next() {
        Some(Ok(v)) => v,
        Some(Err(e)) => {
            return Err(format!(
                "line {}, column {}: not JSON ({}); looked for {LOOKED_FOR}",
                e.line(),
                e.column(),
                crate::trace::json::message_without_position(&e)
            ));
        }
        None => return Err(format!("empty; looked for {LOOKED_FOR}")),
    };
    let atif = |v: &Value| {
        (v.get("schema_version").and_then(Value::as_str)).is_some_and(|s| s.starts_with("ATIF"))
    };
    if atif(&first) || first.as_array().and_then(|a| a.first()).is_some_and(atif) {
        return Ok(InputFormat::Atif);
    }
    if otlp::is_export(&first) {
        return Ok(InputFormat::OtlpJson);
    }
    if sdk::looks_like(&first) {
        return Ok(InputFormat::OtelSpans);
    }
    let objects: Vec<&Value> = match &first {
        Value::Array(items) => items.iter().take(8).collect(),
        v => vec![v],
    };
    let has = |v: &Value, key: &str| v.as_object().is_some_and(|o| field(o, key).is_some());
    if objects.iter().any(|v| has(v, "scriptedTrace")) {
        return Ok(InputFormat::OpenclawScenario);
    }
    let message = |v: &Value| has(v, "role") || (has(v, "type") && !has(v, "oracles"));
    let run = |v: &Value| {
        ["messages", "traj", "simulations", "input"]
            .iter()
            .any(|k| has(v, k))
    };
    if !objects.is_empty() && objects.iter().all(|v| message(v) || run(v)) {
        return Ok(InputFormat::OpenaiMessages);
    }
    Err(format!(
        "cannot tell its format: looked for {LOOKED_FOR}; pass `--from`"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_by_its_marks() {
        let cases: &[(&str, InputFormat)] = &[
            (r#"{"resourceSpans":[]}"#, InputFormat::OtlpJson),
            (
                "{\"resourceSpans\":[]}\n{\"resourceSpans\":[]}\n",
                InputFormat::OtlpJson,
            ),
            (
                r#"{"spans":[{"name":"x","context":{"trace_id":1,"span_id":2}}]}"#,
                InputFormat::OtelSpans,
            ),
            (
                r#"[{"name":"x","context":{"trace_id":"0x1","span_id":"0x2"}}]"#,
                InputFormat::OtelSpans,
            ),
            (
                r#"{"name":"x","context":{"trace_id":1,"span_id":2}} {"name":"y","context":{"trace_id":1,"span_id":3}}"#,
                InputFormat::OtelSpans,
            ),
            (
                r#"{"id":"s","ScriptedTrace":{"steps":[]}}"#,
                InputFormat::OpenclawScenario,
            ),
            (
                r#"[{"role":"user","content":"hi"}]"#,
                InputFormat::OpenaiMessages,
            ),
            (
                r#"[{"task_id":1,"trial":0,"traj":[]}]"#,
                InputFormat::OpenaiMessages,
            ),
            (
                r#"{"tasks":[],"simulations":[]}"#,
                InputFormat::OpenaiMessages,
            ),
            (
                r#"{"schema_version":"ATIF-v1.6","agent":{},"steps":[]}"#,
                InputFormat::Atif,
            ),
            (
                "{\"messages\":[]}\n{\"messages\":[]}",
                InputFormat::OpenaiMessages,
            ),
        ];
        for (text, want) in cases {
            assert_eq!(detect(text.as_bytes()), Ok(*want), "{text}");
        }
    }

    #[test]
    fn nothing_matching_says_what_was_looked_for() {
        for text in [r#"{"hello":"world"}"#, "", "not json", "[1,2]"] {
            let e = detect(text.as_bytes()).unwrap_err();
            assert!(e.contains("looked for an OTLP/JSON export"), "{text}: {e}");
        }
    }
}
