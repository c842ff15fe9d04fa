//! Tests of `parse.rs`.
use super::*;

const H: &str = r#"{"kind":"header","format":"tracereplay.trace","version":1,"scenario":"s"}"#;

fn parse_text(text: &str, compressed: bool) -> Result<(usize, Vec<String>, String), TraceError> {
    let file = TraceFile::from_bytes("x.trace.ndjson", text.as_bytes().to_vec(), compressed);
    let seal = Seal {
        sealed: false,
        content_hash: String::new(),
        body_len: file.bytes.len(),
        event_lines: 0,
    };
    let p = parse_trace(&file, &seal, Limits::default())?;
    let kinds = p
        .trace
        .events
        .iter()
        .map(|e| e.body.kind().to_owned())
        .collect();
    Ok((p.trace.events.len(), kinds, p.warnings.join("\n")))
}

fn malformed(events: &str) -> String {
    match parse_text(&format!("{H}\n{events}\n"), false) {
        Err(e @ TraceError::Malformed { .. }) => e.to_string(),
        other => panic!("expected malformed for {events}, got {other:?}"),
    }
}

#[test]
fn every_kind_parses_and_harness_spellings_normalise() {
    let text = format!(
        "{H}\n{}\n",
        [
            r#"{"kind":"userMessage","seq":1,"prompt":{"h":"b3k:0000000000000000000000000000000000000000000000000000000000000000","len":3}}"#,
            r#"{"kind":"inference","seq":2,"consumes":[],"output":{"text":"t","tool_calls":[{"call_id":"c","tool":"t","args":"{\"a\":1}"}]},"usage":{"input_tokens":1,"output_tokens":2},"finish":"tool_call"}"#,
            r#"{"kind":"toolCall","seq":3,"call_id":"c","tool":"t","args":"{\"b\": 2}"}"#,
            r#"{"kind":"Tool-Result","seq":4,"call_id":"c","ok":false,"error":"boom","output":[1,2]}"#,
            r#"{"kind":"approval_request","seq":5}"#,
            r#"{"kind":"approval_decision","seq":6,"granted":true}"#,
            r#"{"kind":"message","seq":7,"id":"m","phase":"preview","text":"p"}"#,
            r#"{"kind":"message_edit","seq":8,"id":"m","text":"q","phase":"final"}"#,
            r#"{"kind":"message_delete","seq":9,"id":"m"}"#,
            r#"{"kind":"artifact","seq":10,"path":"a","h":"b3:x","bytes":1}"#,
            r#"{"kind":"state_change","seq":11,"path":"p","from":1,"to":{"x":2}}"#,
            r#"{"kind":"error","seq":12,"message":"m","code":500}"#,
            r#"{"kind":"note","seq":13,"text":"n"}"#,
            r#"{"kind":"final_answer","seq":14,"text":"f"}"#,
            r#"{"kind":"run_end","seq":20,"status":"completed","extra":true}"#,
        ]
        .join("\n")
    );
    let (n, kinds, warnings) = parse_text(&text, false).unwrap();
    assert_eq!(n, 15);
    assert_eq!(kinds[0], "user_message");
    assert_eq!(kinds[2], "tool_call");
    assert_eq!(kinds[3], "tool_result");
    assert!(warnings.is_empty());
}

#[test]
fn args_strings_holding_objects_are_parsed_others_kept() {
    let text = format!(
        "{H}\n{}\n{}\n",
        r#"{"kind":"tool_call","seq":1,"call_id":"c","tool":"t","args":"{\"b\":2,\"a\":1}"}"#,
        r#"{"kind":"tool_call","seq":2,"call_id":"d","tool":"t","args":"ls -la"}"#
    );
    let file = TraceFile::from_bytes("x.trace.ndjson", text.into_bytes(), false);
    let seal = file.verify_seal(false).unwrap();
    let p = parse_trace(&file, &seal, Limits::default()).unwrap();
    let calls: Vec<_> = p.trace.tool_calls().collect();
    assert_eq!(calls[0].args.value(), serde_json::json!({"a":1,"b":2}));
    assert_eq!(calls[1].args.value(), serde_json::json!("ls -la"));
}

#[test]
fn unknown_kinds_are_kept_and_warned_once() {
    let text = format!(
        "{H}\n{}\n{}\n{}\n",
        r#"{"kind":"telemetry","seq":1,"text":5}"#,
        r#"{"kind":"telemetry","seq":2}"#,
        r#"{"kind":"run_end","seq":3,"status":"completed"}"#
    );
    let (n, kinds, warnings) = parse_text(&text, false).unwrap();
    assert_eq!((n, kinds[0].as_str()), (3, "telemetry"));
    // Once, named by its first line, never by its name (a kind is a value of the trace).
    assert!(!warnings.contains("telemetry"), "{warnings}");
    assert!(
        warnings.contains("1 unknown event kind(s), first on line(s) 2,"),
        "{warnings}"
    );
}

#[test]
fn malformed_events_name_the_line() {
    for (events, needle) in [
        (
            r#"{"kind":"tool_call","seq":1,"call_id":"c","args":{}}"#,
            "line 2: `tool_call` lacks required field `tool`",
        ),
        (
            r#"{"kind":"tool_call","seq":1,"call_id":"c","tool":7,"args":{}}"#,
            "line 2: `tool` must be a string, found a non-negative integer",
        ),
        (
            r#"{"kind":"tool_call","seq":1,"call_id":"c","tool":"t","args":[1]}"#,
            "`args` must be a JSON object or a string",
        ),
        (
            r#"{"kind":"message","seq":1,"id":"m","phase":"draft","text":"x"}"#,
            "`phase` is not one of: preview, final (found a string of 5 characters)",
        ),
        (
            r#"{"kind":"run_end","seq":1,"status":"done"}"#,
            "`status` is not one of: completed, failed, cancelled",
        ),
        (
            r#"{"kind":"inference","seq":1,"finish":"halt"}"#,
            "`finish` is not one of:",
        ),
        (
            r#"{"kind":"note","seq":1}"#,
            "`note` lacks required field `text`",
        ),
        (
            "{\"kind\":\"note\",\"seq\":2,\"text\":\"a\"}\n{\"kind\":\"note\",\"seq\":2,\"text\":\"b\"}",
            "line 3: `seq` 2 does not increase",
        ),
        (r#"{"kind":"note","text":"a"}"#, "event lacks `seq`"),
        (
            "{\"kind\":\"run_end\",\"seq\":1,\"status\":\"failed\"}\n{\"kind\":\"run_end\",\"seq\":2,\"status\":\"completed\"}",
            "line 3: a second `run_end`",
        ),
        (
            "{\"kind\":\"final_answer\",\"seq\":1,\"text\":\"a\"}\n{\"kind\":\"final_answer\",\"seq\":2,\"text\":\"b\"}",
            "a second `final_answer`",
        ),
        (
            r#"{"kind":"message_edit","seq":1,"id":"m9","text":"x"}"#,
            "names a message id that no earlier `message` sent",
        ),
        (
            r#"{"kind":"message_delete","seq":1,"id":"m9"}"#,
            "`message_delete` names a message id",
        ),
        (
            r#"{"kind":"inference","seq":1,"usage":{"input_tokens":1}}"#,
            "missing field `output_tokens`",
        ),
        ("not json", "line 2: not a valid JSON object"),
        (r#"{"seq":1}"#, "event lacks `kind`"),
        (
            r#"{"kind":"header","format":"tracereplay.trace","version":1,"scenario":"s"}"#,
            "a second header",
        ),
    ] {
        let msg = malformed(events);
        assert!(
            msg.contains(needle),
            "{events}\n  got: {msg}\n  want: {needle}"
        );
        assert!(msg.starts_with("`x.trace.ndjson`, line "), "{msg}");
    }
}

#[test]
fn prompt_text_is_a_privacy_violation() {
    let text = format!(
        "{H}\n{}\n",
        r#"{"kind":"user_message","seq":1,"prompt":{"h":"b3:0000000000000000000000000000000000000000000000000000000000000000","text":"my secret question"}}"#
    );
    let err = parse_text(&text, false).unwrap_err();
    assert_eq!(err.category(), "privacy");
    assert!(!err.to_string().contains("my secret question"));
}

/// The prompt side fails closed: raw text anywhere on a prompt-bearing event is a privacy
/// violation naming the line and key, and no message quotes it. Text in fields the format does
/// not define is admitted by the developer opt-in; text inside the prompt object never is.
#[test]
fn raw_prompt_text_anywhere_on_the_prompt_side_is_a_violation() {
    const SECRET: &str = "SECRET_PROMPT_WORDS";
    let h = "b3:0000000000000000000000000000000000000000000000000000000000000000";
    for (line, key, admitted) in [
        (
            format!(r#"{{"kind":"user_message","seq":1,"prompt":"{SECRET}"}}"#),
            "`prompt`",
            false,
        ),
        (
            format!(r#"{{"kind":"user_message","seq":1,"prompt":{{"h":"{SECRET}"}}}}"#),
            "`prompt.h`",
            false,
        ),
        (
            format!(
                r#"{{"kind":"user_message","seq":1,"prompt":{{"h":"{h}","Text":"{SECRET}"}}}}"#
            ),
            "`prompt.Text`",
            false,
        ),
        (
            format!(
                r#"{{"kind":"user_message","seq":1,"prompt":{{"h":"{h}","raw":{{"text":"{SECRET}"}}}}}}"#
            ),
            "`prompt.raw.text`",
            false,
        ),
        (
            format!(
                r#"{{"kind":"user_message","seq":1,"prompt":{{"h":"{h}"}},"text":"{SECRET}"}}"#
            ),
            "`text`",
            true,
        ),
        (
            format!(r#"{{"kind":"inference","seq":1,"input_h":"{SECRET}"}}"#),
            "`input_h`",
            false,
        ),
        (
            format!(
                r#"{{"kind":"inference","seq":1,"messages":[{{"role":"system","content":"{SECRET}"}}]}}"#
            ),
            "`messages[0].content`",
            true,
        ),
        (
            format!(r#"{{"kind":"systemMessage","seq":1,"content":"{SECRET}"}}"#),
            "`content`",
            true,
        ),
    ] {
        let text = format!("{H}\n{line}\n");
        let err = parse_text(&text, false).unwrap_err();
        let shown = err.to_string();
        assert_eq!(err.category(), "privacy", "{line}: {shown}");
        assert_eq!(err.line(), Some(2));
        assert!(shown.contains(key), "{line}: {shown}");
        assert!(!shown.contains(SECRET), "{shown}");
        let file = TraceFile::from_bytes("x.trace.ndjson", text.into_bytes(), false);
        let seal = file.verify_seal(false).unwrap();
        let opted = crate::parse_trace_with(&file, &seal, Limits::default(), true);
        assert_eq!(opted.is_ok(), admitted, "{line}");
    }
}

/// No error message quotes a value of the trace: type errors name the key and the shape.
#[test]
fn errors_never_quote_trace_values() {
    const SECRET: &str = "SECRET_VALUE_WORDS";
    for line in [
        format!(r#"{{"kind":"note","seq":"{SECRET}","text":"x"}}"#),
        format!(r#"{{"kind":"run_end","seq":1,"status":"{SECRET}"}}"#),
        format!(r#"{{"kind":"message","seq":1,"id":"m","phase":"{SECRET}","text":"x"}}"#),
        format!(r#"{{"kind":"message_delete","seq":1,"id":"{SECRET}"}}"#),
        format!(r#"{{"kind":"tool_result","seq":1,"call_id":"c","ok":"{SECRET}"}}"#),
        format!(r#"{{"kind":"inference","seq":1,"output":{{"text":["{SECRET}"]}}}}"#),
        format!(r#"{{"kind":"{SECRET}","seq":1}}"#),
    ] {
        let shown = match parse_text(&format!("{H}\n{line}\n"), false) {
            Err(e) => e.to_string(),
            Ok((_, _, warnings)) => warnings,
        };
        assert!(!shown.contains(SECRET), "{line}: {shown}");
        assert!(
            shown.contains("line 2") || shown.contains("line(s) 2"),
            "{shown}"
        );
    }
    let header = format!(r#"{{"kind":"header","format":"{SECRET}","version":1,"scenario":"s"}}"#);
    let shown = parse_text(&format!("{header}\n"), false)
        .unwrap_err()
        .to_string();
    assert!(!shown.contains(SECRET), "{shown}");
}

#[test]
fn header_problems() {
    for (header, needle) in [
        (
            r#"{"kind":"header","format":"tracereplay.trace","version":2,"scenario":"s"}"#,
            "unsupported trace format version 2",
        ),
        (
            r#"{"kind":"header","format":"other","version":1,"scenario":"s"}"#,
            "header `format` is not `tracereplay.trace`",
        ),
        (
            r#"{"kind":"header","format":"tracereplay.trace","version":"1","scenario":"s"}"#,
            "`version` must be an integer",
        ),
        (
            r#"{"kind":"header","format":"tracereplay.trace","version":1}"#,
            "lacks a non-empty `scenario`",
        ),
        (
            r#"{"kind":"note","seq":1,"text":"x"}"#,
            "the first line must be the header",
        ),
        (
            r#"{"kind":"header","format":"tracereplay.trace","version":1,"scenario":"s","privacy":{"prompts":"plain"}}"#,
            "`privacy.prompts` is not `hashed` or `raw-sidecar`",
        ),
    ] {
        let err = parse_text(&format!("{header}\n"), false)
            .unwrap_err()
            .to_string();
        assert!(err.contains(needle), "{header}: {err}");
    }
}

#[test]
fn line_ends_and_blank_lines() {
    let crlf = format!("{H}\r\n{}\r\n", r#"{"kind":"note","seq":1,"text":"x"}"#);
    assert!(parse_text(&crlf, false).is_ok());
    let err = parse_text(&crlf, true).unwrap_err().to_string();
    assert!(err.contains("carriage return"), "{err}");
    let blank = format!("{H}\n\n{}\n", r#"{"kind":"note","seq":1,"text":"x"}"#);
    assert!(
        parse_text(&blank, false)
            .unwrap_err()
            .to_string()
            .contains("line 2: blank line")
    );
    let bom = format!("\u{feff}{H}\n");
    assert!(
        parse_text(&bom, false)
            .unwrap_err()
            .to_string()
            .contains("byte-order mark")
    );
    // No final newline is fine.
    assert!(parse_text(H, false).is_ok());
}

#[test]
fn long_lines_name_the_limit_and_flag() {
    let text = format!(
        "{H}\n{{\"kind\":\"note\",\"seq\":1,\"text\":\"{}\"}}\n",
        "x".repeat(200)
    );
    let file = TraceFile::from_bytes("x.trace.ndjson", text.into_bytes(), false);
    let seal = file.verify_seal(false).unwrap();
    let limits = Limits {
        max_line_bytes: 100,
        ..Limits::default()
    };
    let err = parse_trace(&file, &seal, limits).unwrap_err().to_string();
    assert!(
        err.contains("line 2") && err.contains("100 bytes") && err.contains("--max-line-bytes"),
        "{err}"
    );
}

/// The events are reserved for once, from the seal's count of lines, but never beyond what the
/// bytes could hold, whatever the count says.
#[test]
fn events_are_reserved_for_from_the_seal_within_what_the_bytes_allow() {
    let text = format!(
        "{H}\n{}\n{}\n",
        r#"{"kind":"note","seq":1,"text":"a"}"#,
        r#"{"kind":"run_end","seq":2,"status":"completed"}"#
    );
    let file = TraceFile::from_bytes("x.trace.ndjson", text.clone().into_bytes(), false);
    let seal = file.verify_seal(false).unwrap();
    assert_eq!(seal.event_lines, 2);
    let parsed = parse_trace(&file, &seal, Limits::default()).unwrap();
    assert_eq!(parsed.trace.events.len(), 2);
    assert_eq!(parsed.trace.events.capacity(), 2, "reserved for, not grown");
    for claimed in [1_000_000, usize::MAX] {
        let seal = Seal {
            event_lines: claimed,
            ..seal.clone()
        };
        let parsed = parse_trace(&file, &seal, Limits::default()).unwrap();
        assert_eq!(parsed.trace.events.len(), 2);
        assert!(
            parsed.trace.events.capacity() <= text.len() / 21,
            "{claimed}"
        );
    }
}

#[test]
fn request_parts_hold_only_pointers_to_hashes() {
    let h = format!("b3:{}", "a".repeat(64));
    let good = format!(
        r#"{{"kind":"inference","seq":1,"latency_ms":5,"request_h":{{"/messages/0/content":"{h}","/tools":"{h}"}}}}"#
    );
    assert!(parse_text(&format!("{H}\n{good}\n"), false).is_ok());
    for bad in [
        r#"{"kind":"inference","seq":1,"request_h":{"/messages/0/content":"What is my password?"}}"#.to_owned(),
        format!(r#"{{"kind":"inference","seq":1,"request_h":{{"note":"{h}"}}}}"#),
        format!(r#"{{"kind":"inference","seq":1,"request_h":{{"/messages/0/my password is hunter2":"{h}"}}}}"#),
        r#"{"kind":"inference","seq":1,"request_h":["x"]}"#.to_owned(),
    ] {
        let e = parse_text(&format!("{H}\n{bad}\n"), false).unwrap_err();
        assert!(e.to_string().contains("`request_h` must be an object"), "{e}");
    }
}

#[test]
fn the_run_a_first_line_claims_is_read_with_its_trial() {
    let probe = |line: &str| probe_run(format!("{line}\n{{\"kind\":\"note\"}}\n").as_bytes());
    let head = r#"{"kind":"header","format":"tracereplay.trace","version":1,"scenario":"s""#;
    assert_eq!(
        probe(&format!(r#"{head},"case":"c","trial":3}}"#)),
        Some(("s".into(), "c".into(), Some(TrialId::parse("3").unwrap())))
    );
    assert_eq!(
        probe(&format!(r#"{head},"trial":"t-1"}}"#)),
        Some((
            "s".into(),
            "default".into(),
            Some(TrialId::parse("t-1").unwrap())
        ))
    );
    // A trial that is no valid id is left out; the scenario and case still count.
    assert_eq!(
        probe(&format!(r#"{head},"case":"c","trial":"a b"}}"#)),
        Some(("s".into(), "c".into(), None))
    );
    assert_eq!(probe(r#"{"kind":"note","scenario":"s"}"#), None);
    assert_eq!(
        probe_header(format!("{head}}}\n").as_bytes()),
        Some(("s".into(), "default".into()))
    );
}

#[test]
fn finer_time_copied_context_and_aggregated_requests_read_and_are_checked() {
    let text = format!(
        "{H}\n{}\n{}\n",
        r#"{"kind":"note","seq":1,"ts_ms":5,"ts_sub_ns":365000,"copied":true,"text":"n"}"#,
        r#"{"kind":"inference","seq":2,"llm_calls":3}"#,
    );
    let file = TraceFile::from_bytes("x.trace.ndjson", text.into_bytes(), false);
    let seal = Seal {
        sealed: false,
        content_hash: String::new(),
        body_len: file.bytes.len(),
        event_lines: 0,
    };
    let p = parse_trace(&file, &seal, Limits::default()).unwrap();
    let (note, inference) = (&p.trace.events[0], &p.trace.events[1]);
    assert_eq!((note.ts_sub_ns, note.copied), (Some(365_000), true));
    assert_eq!((inference.ts_sub_ns, inference.copied), (None, false));
    match &inference.body {
        EventBody::Inference(i) => assert_eq!(i.llm_calls, Some(3)),
        other => panic!("{other:?}"),
    }
    // Copied context is left out of what is judged, unless asked for.
    assert_eq!(p.trace.judged(false).events.len(), 1);
    assert_eq!(p.trace.judged(true).events.len(), 2);
    for (line, want) in [
        (
            r#"{"kind":"note","seq":1,"ts_ms":5,"ts_sub_ns":1000000,"text":"n"}"#,
            "`ts_sub_ns` must be below 1,000,000",
        ),
        (
            r#"{"kind":"inference","seq":1,"llm_calls":0}"#,
            "`llm_calls` must be at least 1",
        ),
        (
            r#"{"kind":"note","seq":1,"copied":"yes","text":"n"}"#,
            "wrong type",
        ),
    ] {
        let e = malformed(line);
        assert!(e.contains(want), "{line}: {e}");
    }
}
