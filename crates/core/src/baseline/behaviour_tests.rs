//! Tests of the behaviour a baseline records.

mod behaviour {
    use super::super::*;
    use serde_json::json;

    #[test]
    fn numbers_are_canonical() {
        assert_eq!(
            canonical(&json!({"a": 6.0, "b": [-0.0, 1.5], "c": 7})),
            json!({"a": 6, "b": [0, 1.5], "c": 7})
        );
    }

    #[test]
    fn a_recorded_result_hashes_as_its_canonical_value_whatever_the_path() {
        let big = format!(
            "\"{}\"",
            "x".repeat(crate::trace::json::LARGE_VALUE_BYTES + 1)
        );
        let escaped = r#" "caf\u00e9 \"quoted\"" "#.trim().to_owned();
        for raw in [
            r#""sunny, 21 C""#,
            escaped.as_str(),
            r#"{"b": 1.0, "a": [2, "x"]}"#,
            "6.0",
            big.as_str(),
        ] {
            let as_written = crate::trace::Json::from_raw(
                serde_json::value::RawValue::from_string(raw.to_owned()).unwrap(),
            );
            let slow = result_hash(&as_written.value());
            let shown = &raw[..raw.len().min(40)];
            assert_eq!(recorded_result_hash(&as_written), slow, "{shown}");
        }
    }

    #[test]
    fn a_results_text_is_its_json_bounded_with_secrets_masked() {
        let text = |raw: &str| {
            let json = crate::trace::Json::from_raw(
                serde_json::value::RawValue::from_string(raw.to_owned()).unwrap(),
            );
            result_text(&json)
        };
        assert_eq!(text(r#""sunny, 21 C""#), r#""sunny, 21 C""#);
        assert_eq!(text(r#"{"b": 1.0, "a": 2}"#), r#"{"a":2,"b":1}"#);
        let long = text(&format!("\"{}\"", "é".repeat(1000)));
        assert_eq!(
            long.chars().count(),
            RESULT_TEXT_CHARS + " (1002 characters)".len() + 1
        );
        assert!(long.ends_with("… (1002 characters)"), "{long}");
        assert!(long.starts_with(&format!("\"{}…", "é".repeat(RESULT_TEXT_CHARS - 1))));
        // Exactly the limit is kept whole; one character more is cut to it.
        let at_limit = format!("\"{}\"", "ü".repeat(RESULT_TEXT_CHARS - 2));
        assert_eq!(text(&at_limit), at_limit);
        let past = text(&format!("\"{}\"", "ü".repeat(RESULT_TEXT_CHARS - 1)));
        assert_eq!(
            past,
            format!("\"{}… (401 characters)", "ü".repeat(RESULT_TEXT_CHARS - 1))
        );
        let secret = text(r#""key: AKIAIOSFODNN7EXAMPLE""#);
        assert!(!secret.contains("AKIAIOSFODNN7EXAMPLE"), "{secret}");
        assert!(secret.contains("[secret"), "{secret}");
    }

    #[test]
    fn artifact_paths_normalise() {
        assert_eq!(normalize_artifact_path("./out\\a.txt"), "out/a.txt");
    }
}

mod traces {
    use super::super::*;
    use crate::baseline::BaselineFile;
    use crate::oracle::judge;
    use crate::scenario::load_file;
    use crate::trace::{Limits, TraceFile, parse_trace};

    fn behaviour_of(text: &str) -> Behaviour {
        let file = TraceFile::from_bytes("t.trace.ndjson", text.as_bytes().to_vec(), false);
        let seal = file.verify_seal(false).unwrap();
        let parsed = parse_trace(&file, &seal, Limits::default()).unwrap();
        Behaviour::from_trace(&parsed.trace, &[])
    }

    const H: &str = r#"{"kind":"header","format":"tracereplay.trace","version":1,"scenario":"s"}"#;

    #[test]
    fn a_reused_call_id_records_each_call_with_its_own_result() {
        let text = format!(
            "{H}\n{}\n{}\n{}\n{}\n",
            r#"{"kind":"tool_call","seq":1,"call_id":"c","tool":"search","args":{}}"#,
            r#"{"kind":"tool_result","seq":2,"call_id":"c","ok":false,"error":"down"}"#,
            r#"{"kind":"tool_call","seq":3,"call_id":"c","tool":"book","args":{}}"#,
            r#"{"kind":"tool_result","seq":4,"call_id":"c","ok":true,"output":"booked"}"#,
        );
        let b = behaviour_of(&text);
        let outcomes: Vec<(&str, Option<bool>, Option<&str>)> = (b.tool_calls.iter())
            .map(|c| (c.tool.as_str(), c.ok, c.error.as_deref()))
            .collect();
        assert_eq!(
            outcomes,
            [
                ("search", Some(false), Some("down")),
                ("book", Some(true), None)
            ]
        );
    }

    #[test]
    fn batches_sort_and_call_ids_are_renamed_by_first_appearance() {
        let plan = r#"{"kind":"inference","seq":1,"output":{"tool_calls":[{"call_id":"X","tool":"b","args":{"n":2.0}},{"call_id":"Y","tool":"a","args":{}}]}}"#;
        let one = format!(
            "{H}\n{plan}\n{}\n{}\n{}\n{}\n",
            r#"{"kind":"tool_call","seq":2,"call_id":"X","tool":"b","args":{"n":2}}"#,
            r#"{"kind":"tool_call","seq":3,"call_id":"Y","tool":"a","args":{}}"#,
            r#"{"kind":"tool_result","seq":4,"call_id":"Y","ok":false,"error":"nope"}"#,
            r#"{"kind":"tool_result","seq":5,"call_id":"X","ok":true}"#,
        );
        // The same batch executed in the other order, with other ids and timestamps.
        let two = one
            .replace("\"X\"", "\"q1\"")
            .replace("\"Y\"", "\"q2\"")
            .replace(
                r#""seq":2,"call_id":"q1","tool":"b","args":{"n":2}"#,
                r#""seq":2,"ts_ms":5,"call_id":"q2","tool":"a","args":{}"#,
            )
            .replace(
                r#""seq":3,"call_id":"q2","tool":"a","args":{}"#,
                r#""seq":3,"call_id":"q1","tool":"b","args":{"n":2}"#,
            );
        let (a, b) = (behaviour_of(&one), behaviour_of(&two));
        assert_eq!(a, b);
        let tools: Vec<(&str, &str)> = a
            .tool_calls
            .iter()
            .map(|c| (c.tool.as_str(), c.call.as_str()))
            .collect();
        assert_eq!(tools, vec![("a", "call#2"), ("b", "call#1")]);
        assert_eq!(a.tool_calls[0].error.as_deref(), Some("nope"));
        assert_eq!(a.tool_calls[1].args, serde_json::json!({"n": 2}));
    }

    /// Calls of two inferences that share the id `""` stay in their order: batches are not
    /// keyed on call ids, so swapping them is drift.
    #[test]
    fn calls_of_different_inferences_keep_their_order_whatever_their_ids() {
        let run = |first: &str, second: &str| {
            let plan = |seq: u32, tool: &str| {
                format!(
                    r#"{{"kind":"inference","seq":{seq},"output":{{"tool_calls":[{{"call_id":"","tool":"{tool}","args":{{}}}}]}}}}"#
                )
            };
            let call = |seq: u32, tool: &str| {
                format!(
                    r#"{{"kind":"tool_call","seq":{seq},"call_id":"","tool":"{tool}","args":{{}}}}"#
                )
            };
            behaviour_of(&format!(
                "{H}\n{}\n{}\n{}\n{}\n",
                plan(1, first),
                call(2, first),
                plan(3, second),
                call(4, second)
            ))
        };
        let tools = |b: &Behaviour| -> Vec<String> {
            b.tool_calls.iter().map(|c| c.tool.clone()).collect()
        };
        assert_eq!(tools(&run("b", "a")), ["b", "a"]);
        assert_ne!(run("b", "a"), run("a", "b"));
    }

    #[test]
    fn edits_and_deletes_apply_before_recording_messages() {
        let text = format!(
            "{H}\n{}\n{}\n{}\n{}\n{}\n",
            r#"{"kind":"message","seq":1,"id":"p","phase":"preview","text":"draft"}"#,
            r#"{"kind":"message","seq":2,"id":"q","phase":"preview","text":"gone"}"#,
            r#"{"kind":"message_delete","seq":3,"id":"q"}"#,
            r#"{"kind":"message_edit","seq":4,"id":"p","text":"final text","phase":"final"}"#,
            r#"{"kind":"approval_decision","seq":5,"granted":true,"tool":"shell"}"#,
        );
        let b = behaviour_of(&text);
        assert_eq!(
            b.messages,
            vec![MessageRecord {
                phase: "final".into(),
                text: "final text".into()
            }]
        );
        assert_eq!(b.final_answer.as_deref(), Some("final text"));
        assert_eq!(b.status, "unknown");
        assert!(!b.approvals[0].requested);
    }

    /// Golden: the exact bytes of the spec example's baseline, judged by the demo scenario.
    #[test]
    fn golden_baseline_bytes_for_the_spec_example() {
        let root = camino::Utf8PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let text = std::fs::read(root.join("tests/fixtures/agent-progress-evidence.trace.ndjson"))
            .unwrap();
        let scenario = load_file(
            &root.join("traces/agent-progress-evidence/agent-progress-evidence.scenario.json"),
        )
        .unwrap()
        .remove(0)
        .unwrap();
        let file = TraceFile::from_bytes("t.trace.ndjson", text, false);
        let seal = file.verify_seal(false).unwrap();
        let parsed = parse_trace(&file, &seal, Limits::default()).unwrap();
        let results = judge(&scenario.oracles, &parsed.trace);
        let mut baseline = BaselineFile::new(
            &scenario.id,
            "default",
            &seal.content_hash,
            Behaviour::from_trace(&parsed.trace, &results),
        );
        baseline.tool_version = "0.0.0-golden".into();
        let path = root.join("tests/fixtures/agent-progress-evidence.baseline.json");
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::write(&path, baseline.to_text()).unwrap();
        }
        let golden = std::fs::read_to_string(&path).unwrap();
        assert_eq!(baseline.to_text(), golden);
    }
}
