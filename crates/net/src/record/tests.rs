//! The recording written from typed events: what the recorder builds and what a runtime
//! reports, redacted, written once and read back.

use serde_json::{Value, json};

use super::*;
use crate::script::PlannedCall as Call;
use crate::trace::{PromptHasher, parse_trace};

fn read(sealed: &crate::trace::SealedTrace) -> Vec<Value> {
    let file = TraceFile::from_bytes("t", sealed.bytes.clone(), false);
    let seal = file.verify_seal(true).expect("sealed");
    let parsed = parse_trace(&file, &seal, Limits::default()).expect("reads back");
    (parsed.trace.events.iter())
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}

const RUN: RunHeader<'static> = RunHeader {
    scenario: "weather",
    case: "paris",
    trial: None,
    model: Some("gpt-x"),
    source: "record",
};

#[test]
fn a_recording_is_written_typed_once_with_every_credential_redacted() {
    let limits = Limits::default();
    let hasher = PromptHasher::unkeyed();
    let mut r = Recording::default();
    let request =
        json!({"model": "gpt-x", "messages": [{"role": "user", "content": "Weather in Paris?"}]});
    let captured = crate::capture::capture(crate::canonical::Api::Chat, &request, &hasher, false);
    let step = Step {
        tool_calls: vec![
            Call {
                id: "c1".into(),
                name: "weather".into(),
                arguments: r#"{"city": "Paris", "key": "sk-live-1234"}"#.into(),
            },
            // Not an object: kept as the text it is (it broke the recording once).
            Call {
                id: "c2".into(),
                name: "list".into(),
                arguments: "[1, 2]".into(),
            },
        ],
        finish: Some(crate::trace::Finish::ToolCall),
        ..Step::default()
    };
    r.inference(None, &step, &captured, (Timing::default(), limits));
    let mut next = captured.clone();
    next.results = vec![
        (
            "c1".into(),
            json!({"sk-live-1234": "echoed sk-live-1234"}),
            true,
        ),
        ("c2".into(), Value::Null, false),
    ];
    r.results(&next, limits).unwrap();
    let answer = Step {
        text: Some("Sunny.".into()),
        finish: Some(crate::trace::Finish::Stop),
        ..Step::default()
    };
    r.inference(None, &answer, &next, (Timing::default(), limits));
    r.report(
        json!({"kind": "message", "id": "m1", "phase": "final", "text": "Sunny."}),
        limits,
    )
    .expect("a message is reported");
    let secrets = std::collections::BTreeSet::from(["sk-live-1234".to_owned()]);
    let sealed = r.seal(&RUN, (&hasher, &secrets), limits).unwrap();
    let text = String::from_utf8_lossy(&sealed.bytes);
    assert!(!text.contains("sk-live-1234"), "{text}");
    assert!(text.starts_with(r#"{"kind":"header","format":"tracereplay.trace","version":1,"scenario":"weather","case":"paris","model":"gpt-x","#), "{text}");
    let events = read(&sealed);
    let kinds: Vec<&str> = events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "user_message",
            "inference",
            "tool_call",
            "tool_result",
            "tool_call",
            "tool_result",
            "inference",
            "message",
            "note",
            "final_answer",
            "run_end"
        ]
    );
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=11).collect::<Vec<_>>());
    let calls = &events[1]["output"]["tool_calls"];
    assert_eq!(
        calls[0]["args"],
        json!({"city": "Paris", "key": "[redacted]"})
    );
    assert_eq!(calls[1]["args"], json!("[1, 2]"));
    assert_eq!(events[2]["args"], calls[0]["args"], "the call as planned");
    assert_eq!(
        events[3]["output"],
        json!({"[redacted]": "echoed [redacted]"})
    );
    assert_eq!(
        (events[5]["ok"].clone(), events[5].get("output")),
        (json!(false), None)
    );
    assert_eq!(events[6]["consumes"], json!(["c1", "c2"]));
    assert_eq!(events[10]["status"], "completed");
    // Writing the same recording again gives the same bytes.
    assert_eq!(
        r.seal(&RUN, (&hasher, &secrets), limits).unwrap().bytes,
        sealed.bytes
    );
}

#[test]
fn a_reported_raw_prompt_is_refused_with_what_the_recorder_takes_instead() {
    let mut r = Recording::default();
    let why = r
        .report(
            json!({"kind": "user_message", "prompt": {"h": format!("b3:{}", "0".repeat(64))}, "content": "hi"}),
            Limits::default(),
        )
        .unwrap_err();
    let Refused::Invalid(message) = why else {
        panic!("{why:?}")
    };
    assert!(
        message.contains("privacy violation") && message.contains("`content`"),
        "{message}"
    );
    assert!(message.contains("the recorder hashes it"), "{message}");
    assert!(!message.contains("--allow-raw-prompts"), "{message}");
}

#[test]
fn events_are_numbered_in_order_whoever_made_them() {
    // Reported before anything else, then a divergence: 1, 2, then the end the recorder wrote.
    let limits = Limits::default();
    let mut r = Recording::default();
    r.report(json!({"kind": "note", "text": "starting"}), limits)
        .expect("a note is reported");
    r.divergence("the request differs", limits);
    let sealed = r
        .seal(
            &RUN,
            (&PromptHasher::unkeyed(), &Default::default()),
            limits,
        )
        .unwrap();
    let events = read(&sealed);
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [1, 2, 3], "{events:?}");
    assert_eq!(events[0]["kind"], "note");
    assert_eq!(events[2]["status"], "failed");
}
