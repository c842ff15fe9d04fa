//! An empty id is no id, in every importer: never a call or result linked by the id `""`.

use serde_json::json;

use super::*;

/// Every trace line of the runs `outcome` built, as one text.
fn written(outcome: &IngestOutcome) -> String {
    (outcome.runs.iter())
        .map(|r| String::from_utf8_lossy(&r.trace.bytes).into_owned())
        .collect()
}

#[test]
fn atif_a_call_and_a_result_with_empty_ids_are_linked_to_nothing() {
    let doc = json!({
        "schema_version": "ATIF-v1.8", "session_id": "ids",
        "agent": {"name": "weather", "version": "1"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "weather?"},
            {"step_id": 2, "source": "agent", "message": "",
             "tool_calls": [{"tool_call_id": "", "function_name": "weather", "arguments": {"city": "Paris"}}],
             "observation": {"results": [{"source_call_id": "", "content": "sunny"}]}},
            {"step_id": 3, "source": "agent", "message": "Sunny."},
        ],
    });
    let outcome = InputFormat::Atif.ingest_for_tests(doc.to_string().as_bytes());
    let text = written(&outcome);
    assert!(!text.contains(r#""call_id":"""#), "{text}");
    assert!(text.contains(r#""call_id":"atif-step-2-call-1""#), "{text}");
    assert!(
        (outcome.skipped.keys()).any(|k| k.contains("without `tool_call_id`")),
        "{:?}",
        outcome.skipped
    );
}

#[test]
fn openai_a_result_with_an_empty_id_is_a_result_without_one() {
    let messages = json!([
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "", "content": "sunny"},
    ]);
    let mut opts = IngestOptions::for_tests(None);
    opts.scenario = Some("s".into());
    opts.case = Some("c".into());
    let outcome = ingest(
        InputFormat::OpenaiMessages,
        messages.to_string().as_bytes(),
        &opts,
    );
    // As a result without `tool_call_id` is: refused, naming why.
    assert!(
        (outcome.problems.iter()).any(|p| p.message.contains("without `tool_call_id`")),
        "{:?}",
        outcome.problems
    );
    assert!(!written(&outcome).contains(r#""call_id":"""#));
}

#[test]
fn otel_and_openai_message_parts_with_empty_ids_have_none() {
    let call = json!({"id": "", "function": {"name": "weather", "arguments": "{}"}});
    assert_eq!(identity::call_parts(&call).0, None);
    let call = json!({"id": "  ", "name": "weather"});
    assert_eq!(identity::call_parts(&call).0, None);
    let call = json!({"id": "c1", "name": "weather"});
    assert_eq!(identity::call_parts(&call).0, Some("c1"));
}

#[test]
fn openclaw_a_call_with_an_empty_id_is_numbered() {
    let script = json!({"steps": [
        {"kind": "toolCall", "toolName": "weather", "callId": "", "argumentsJson": "{}"},
        {"kind": "toolResult", "toolName": "weather", "result": "sunny"},
    ]});
    let opts = IngestOptions::for_tests(None);
    let trace = openclaw::scripted_trace("s", "c", None, script.as_object().unwrap(), &opts)
        .expect("built");
    let text = String::from_utf8_lossy(&trace.bytes).into_owned();
    assert!(!text.contains(r#""call_id":"""#), "{text}");
    assert!(text.contains(r#""call_id":"call-1""#), "{text}");
}
