use super::*;
use crate::{Json, Limits, TraceFile, parse_trace};

#[test]
fn the_kept_compression_context_writes_what_a_fresh_one_does() {
    for _ in 0..3 {
        let t = sample();
        assert_eq!(
            t.compress().unwrap(),
            zstd::bulk::compress(&t.bytes, ZSTD_LEVEL).unwrap()
        );
    }
}

fn sample() -> SealedTrace {
    let mut header = Header::new("agent.tool.basic", "default");
    header.runtime = Some(Runtime {
        name: "openclaw".into(),
        version: Some("0.9.1".into()),
    });
    header.model = Some("gpt-4.1".into());
    let mut w = TraceWriter::new(header);
    w.push(
        Some(1_764_417_600_000),
        EventBody::UserMessage {
            prompt: PromptRef {
                h: crate::content_hash(b"Look up demo information.").into(),
                len: Some(25),
            },
            id: Some("in1".into()),
        },
    );
    w.push(
        None,
        EventBody::ToolCall {
            call_id: "c1".into(),
            tool: "web_search".into(),
            args: Args::Object(Json::from_value(&serde_json::json!({"query": "demo"}))),
        },
    );
    w.push(
        None,
        EventBody::ToolResult {
            call_id: "c1".into(),
            ok: true,
            output: Some(Json::from_value("found")),
            output_h: None,
            error: None,
        },
    );
    w.push(
        None,
        EventBody::FinalAnswer {
            text: "Here is the demo.".into(),
        },
    );
    w.push(
        None,
        EventBody::RunEnd {
            status: RunStatus::Completed,
            error: None,
        },
    );
    w.finish().unwrap()
}

/// The writer keeps the reader's order rules: what breaks one is not sealed, and the error
/// names the event and the rule.
#[test]
fn an_event_that_breaks_the_order_rules_is_not_sealed() {
    let end = || EventBody::RunEnd {
        status: RunStatus::Completed,
        error: None,
    };
    let mut w = TraceWriter::new(Header::new("s", "default"));
    w.push(None, end());
    w.push(None, end());
    let err = w.finish().unwrap_err();
    assert_eq!(
        err.to_string(),
        "the event at seq 2 breaks the trace's event order: a second `run_end` (a trace has at most one)"
    );
    let mut w = TraceWriter::new(Header::new("s", "default"));
    w.push(None, EventBody::MessageDelete { id: "m9".into() });
    let err = w.finish().unwrap_err();
    assert_eq!(
        err.rule,
        crate::OrderError::UnknownMessage {
            kind: "message_delete"
        }
    );
    // A `seq` given out of order is raised, not refused.
    let mut w = TraceWriter::new(Header::new("s", "default"));
    let event = |seq| Event::new(seq, None, EventBody::Note { text: "n".into() });
    w.push_event(&event(5));
    w.push_event(&event(3));
    let text = String::from_utf8(w.finish().unwrap().bytes).unwrap();
    assert!(text.contains(r#""seq":6"#), "{text}");
}

/// Golden: an accidental change to the writer's bytes or key order fails loudly here.
#[test]
fn golden_bytes_and_content_hash() {
    let sealed = sample();
    let text = String::from_utf8(sealed.bytes.clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        r#"{"kind":"header","format":"tracereplay.trace","version":1,"scenario":"agent.tool.basic","case":"default","runtime":{"name":"openclaw","version":"0.9.1"},"model":"gpt-4.1","privacy":{"prompts":"hashed","hash":"blake3"}}"#
    );
    assert_eq!(
        lines[2],
        r#"{"kind":"tool_call","seq":2,"call_id":"c1","tool":"web_search","args":{"query":"demo"}}"#
    );
    assert_eq!(
        lines[5],
        r#"{"kind":"run_end","seq":5,"status":"completed"}"#
    );
    assert_eq!(
        sealed.content_hash,
        "b3:6ae606a136a01752b92e03e37d509efee9f528a0675b566e6511dee71178767b"
    );
    assert!(lines[6].starts_with(r#"{"kind":"footer","events":5,"content_hash":"b3:"#));
}

#[test]
fn opting_in_adds_a_sidecar_and_changes_no_trace_byte() {
    let record = |raw: bool| {
        let mut w =
            TraceWriter::with_prompts(Header::new("s", "default"), PromptHasher::keyed(b"k"), raw);
        w.user_message(None, Some("in1"), "my private question");
        let system = w.prompt("You are a careful agent.");
        w.push(
            None,
            EventBody::Inference(Box::new(Inference {
                system_h: Some(system.h),
                ..Inference::default()
            })),
        );
        w.finish().unwrap()
    };
    let (plain, raw) = (record(false), record(true));
    assert_eq!(plain.bytes, raw.bytes);
    assert_eq!(plain.content_hash, raw.content_hash);
    assert!(plain.sidecar.is_none());
    let text = String::from_utf8(plain.bytes.clone()).unwrap();
    assert!(!text.contains("private question") && !text.contains("careful agent"));
    assert!(
        text.contains(r#""privacy":{"prompts":"hashed","hash":"blake3-keyed","kid":"k_"#),
        "{text}"
    );
    let sidecar = String::from_utf8(raw.sidecar.unwrap()).unwrap();
    assert_eq!(sidecar.lines().count(), 2);
    assert!(sidecar.contains("my private question") && sidecar.contains("b3k:"));
    // The written trace verifies and parses.
    let dir = tempfile::tempdir().unwrap();
    let path = camino::Utf8PathBuf::from_path_buf(dir.path().join("run.trace.ndjson.zst")).unwrap();
    record(true).write(&path).unwrap();
    assert!(path.with_file_name("run.prompts.ndjson").exists());
    let file = TraceFile::open(&path, Limits::default()).unwrap();
    assert!(file.verify_seal(true).unwrap().sealed);
}

#[test]
fn written_traces_read_back_sealed_and_deterministic() {
    let a = sample();
    assert_eq!(a.bytes, sample().bytes);
    let compressed = a.compress().unwrap();
    let decompressed = zstd::bulk::decompress(&compressed, 1 << 20).unwrap();
    let file = TraceFile::from_bytes("x.trace.ndjson.zst", decompressed, true);
    let seal = file.verify_seal(true).unwrap();
    assert!(seal.sealed);
    assert_eq!(seal.content_hash, a.content_hash);
    let parsed = parse_trace(&file, &seal, Limits::default()).unwrap();
    assert_eq!(parsed.trace.events.len(), 5);
    assert_eq!(parsed.trace.header.scenario.as_str(), "agent.tool.basic");
}
