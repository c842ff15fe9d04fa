//! Tests of `sequence.rs`.
use super::*;

fn actual(calls: &[(&str, Value, Option<u64>)]) -> Vec<ActualCall> {
    calls
        .iter()
        .enumerate()
        .map(|(i, (tool, args, batch))| ActualCall {
            seq: i as u64 + 1,
            tool: (*tool).to_owned(),
            args: args.clone(),
            batch: *batch,
        })
        .collect()
}

fn cfg(mode: &str, calls: Value, args_match: &str) -> SeqConfig {
    let spec = OracleSpec::new(
        0,
        serde_json::from_value(
            json!({"type": "tool-sequence", "mode": mode, "calls": calls, "argsMatch": args_match}),
        )
        .unwrap(),
    );
    configure(&spec).unwrap()
}

fn verdict(mode: &str, calls: Value, args_match: &str, a: &[(&str, Value, Option<u64>)]) -> bool {
    check_sequence(&cfg(mode, calls, args_match), &actual(a)).verdict == super::super::Verdict::Pass
}

const MODES: [&str; 5] = ["exact", "in-order", "unordered", "superset", "subset"];

/// (case, expected calls, actual calls, verdict per mode in MODES order), under every argsMatch
/// that leaves the outcome unchanged (args identical on both sides, or none expected).
#[test]
fn modes_table() {
    let f = |a: Value| ("f", a, None);
    let g = |a: Value| ("g", a, None);
    type Case<'c> = (
        &'c str,
        Value,
        Vec<(&'c str, Value, Option<u64>)>,
        [bool; 5],
    );
    let cases: Vec<Case> = vec![
        (
            "identical",
            json!([{"tool":"f","args":{"a":1}},{"tool":"g","args":{"b":2}}]),
            vec![f(json!({"a":1})), g(json!({"b":2}))],
            [true, true, true, true, true],
        ),
        (
            "extra actual call",
            json!([{"tool":"f","args":{"a":1}}]),
            vec![f(json!({"a":1})), g(json!({"b":2}))],
            [false, true, false, true, false],
        ),
        (
            "missing actual call",
            json!([{"tool":"f","args":{"a":1}},{"tool":"g","args":{"b":2}}]),
            vec![f(json!({"a":1}))],
            [false, false, false, false, true],
        ),
        (
            "swapped order",
            json!([{"tool":"f","args":{"a":1}},{"tool":"g","args":{"b":2}}]),
            vec![g(json!({"b":2})), f(json!({"a":1}))],
            [false, false, true, true, true],
        ),
        (
            "duplicate actual",
            json!([{"tool":"f","args":{"a":1}}]),
            vec![f(json!({"a":1})), f(json!({"a":1}))],
            [false, true, false, true, false],
        ),
        (
            "duplicate expected",
            json!([{"tool":"f","args":{"a":1}},{"tool":"f","args":{"a":1}}]),
            vec![f(json!({"a":1}))],
            [false, false, false, false, true],
        ),
        (
            "empty expected, calls made",
            json!([]),
            vec![f(json!({"a":1}))],
            [false, true, false, true, false],
        ),
        (
            "empty expected, no calls",
            json!([]),
            vec![],
            [true, true, true, true, true],
        ),
        (
            "no calls",
            json!([{"tool":"f","args":{"a":1}}]),
            vec![],
            [false, false, false, false, true],
        ),
        (
            "retry: wrong then right",
            json!([{"tool":"f","args":{"a":1}}]),
            vec![f(json!({"a":0})), f(json!({"a":1}))],
            [false, true, false, true, false],
        ),
        (
            "nested args",
            json!([{"tool":"f","args":{"o":{"x":[1,{"y":true}]}}}]),
            vec![f(json!({"o":{"x":[1,{"y":true}]}}))],
            [true, true, true, true, true],
        ),
        (
            "6 equals 6.0",
            json!([{"tool":"f","args":{"n":6}}]),
            vec![f(json!({"n":6.0}))],
            [true, true, true, true, true],
        ),
        (
            "true is not 1",
            json!([{"tool":"f","args":{"n":true}}]),
            vec![f(json!({"n":1}))],
            [false, false, false, false, false],
        ),
        (
            "null is not missing",
            json!([{"tool":"f","args":{"n":null}}]),
            vec![f(json!({}))],
            [false, false, false, false, false],
        ),
        (
            "tool names ignore case",
            json!([{"tool":"F","args":{"a":1}}]),
            vec![f(json!({"a":1}))],
            [true, true, true, true, true],
        ),
    ];
    for (name, calls, a, want) in &cases {
        // `{n: null}` against `{}` is the one case argsMatch decides: subset holds vacuously
        // (the actual call has no key to check), so it is asserted on its own below.
        let arg_modes: &[&str] = if *name == "null is not missing" {
            &["exact", "superset"]
        } else {
            &["exact", "superset", "subset"]
        };
        for (mode, w) in MODES.iter().zip(want) {
            for am in arg_modes.iter().copied() {
                assert_eq!(
                    verdict(mode, calls.clone(), am, a),
                    *w,
                    "{name}: mode {mode}, argsMatch {am}"
                );
            }
        }
    }
}

#[test]
fn null_against_a_missing_key_under_subset() {
    let a = [("f", json!({}), None)];
    assert!(verdict(
        "exact",
        json!([{"tool":"f","args":{"n":null}}]),
        "subset",
        &a
    ));
    assert!(!verdict(
        "exact",
        json!([{"tool":"f","args":{"n":null}}]),
        "superset",
        &a
    ));
}

#[test]
fn args_recorded_as_json_strings_compare_as_objects() {
    // The reader parses a top-level `args` string holding an object; key order is irrelevant.
    let text = format!(
        "{}\n{}\n",
        r#"{"kind":"header","format":"tracereplay.trace","version":1,"scenario":"s"}"#,
        r#"{"kind":"tool_call","seq":1,"call_id":"c","tool":"f","args":"{\"b\":[1,2],\"a\":{\"y\":1,\"x\":6.0}}"}"#
    );
    let file = crate::trace::TraceFile::from_bytes("t.trace.ndjson", text.into_bytes(), false);
    let seal = file.verify_seal(false).unwrap();
    let parsed = crate::trace::parse_trace(&file, &seal, crate::trace::Limits::default()).unwrap();
    let facts = Facts::new(&parsed.trace);
    let a = actual_calls(&facts);
    for mode in MODES {
        let c = cfg(
            mode,
            json!([{"tool":"f","args":{"a":{"x":6,"y":1},"b":[1,2]}}]),
            "exact",
        );
        assert_eq!(
            check_sequence(&c, &a).verdict,
            super::super::Verdict::Pass,
            "{mode}"
        );
    }
}

#[test]
fn args_match_modes_keep_their_direction_in_every_mode() {
    // Expected {a:1}; actual {a:1, b:2}: superset holds (actual has more), subset does not.
    let calls = json!([{"tool":"f","args":{"a":1}}]);
    let a = [("f", json!({"a":1,"b":2}), None)];
    for mode in MODES {
        assert!(!verdict(mode, calls.clone(), "exact", &a), "{mode} exact");
        assert!(
            verdict(mode, calls.clone(), "superset", &a),
            "{mode} superset"
        );
        assert!(!verdict(mode, calls.clone(), "subset", &a), "{mode} subset");
        assert!(verdict(mode, calls.clone(), "ignore", &a), "{mode} ignore");
    }
    let calls = json!([{"tool":"f","args":{"a":1,"b":2}}]);
    let a = [("f", json!({"a":1}), None)];
    for mode in MODES {
        assert!(
            verdict(mode, calls.clone(), "subset", &a),
            "{mode} subset, reversed"
        );
        assert!(
            !verdict(mode, calls.clone(), "superset", &a),
            "{mode} superset, reversed"
        );
    }
    // `args: {}` under exact means no arguments; no `args` means any.
    assert!(!verdict(
        "exact",
        json!([{"tool":"f","args":{}}]),
        "exact",
        &[("f", json!({"x":1}), None)]
    ));
    assert!(verdict(
        "exact",
        json!([{"tool":"f"}]),
        "exact",
        &[("f", json!({"x":1}), None)]
    ));
}

#[test]
fn pairing_is_optimal_not_greedy() {
    // The issue's example: greedy would pair f{} with f{a:1} and strand f{a:1}.
    let calls = json!([{"tool":"f","args":{}},{"tool":"f","args":{"a":1}}]);
    for order in [
        [json!({"a":1}), json!({"b":2})],
        [json!({"b":2}), json!({"a":1})],
    ] {
        let a: Vec<_> = order.iter().map(|x| ("f", x.clone(), None)).collect();
        assert!(
            verdict("superset", calls.clone(), "superset", &a),
            "{order:?}"
        );
        assert!(
            verdict("unordered", calls.clone(), "superset", &a),
            "{order:?}"
        );
    }
}

#[test]
fn batches_run_in_any_order_unless_strict() {
    let calls = json!([{"tool":"f"},{"tool":"g"},{"tool":"h"}]);
    let a = [
        ("g", json!({}), Some(1)),
        ("f", json!({}), Some(1)),
        ("h", json!({}), None),
    ];
    assert!(verdict("exact", calls.clone(), "exact", &a));
    assert!(verdict("in-order", calls.clone(), "exact", &a));
    let spec = OracleSpec::new(
        0,
        serde_json::from_value(
            json!({"type":"tool-sequence","mode":"exact","calls":calls,"batchOrder":"strict"}),
        )
        .unwrap(),
    );
    assert!(
        check_sequence(&configure(&spec).unwrap(), &actual(&a)).verdict
            != super::super::Verdict::Pass
    );
    // Calls of different batches keep their order.
    let b = [
        ("g", json!({}), Some(1)),
        ("f", json!({}), Some(2)),
        ("h", json!({}), None),
    ];
    assert!(!verdict("exact", calls.clone(), "exact", &b));
    // in-order with a batch among extra calls.
    let c = [
        ("x", json!({}), None),
        ("g", json!({}), Some(3)),
        ("f", json!({}), Some(3)),
        ("y", json!({}), None),
        ("h", json!({}), None),
    ];
    assert!(verdict("in-order", calls, "exact", &c));
}

#[test]
fn overrides_and_tools_shorthand() {
    let spec = |p: Value| OracleSpec::new(0, serde_json::from_value(p).unwrap());
    let s = spec(
        json!({"type":"tool-sequence","mode":"exact","calls":[{"tool":"write","args":{"path":"a","content":"x"}},{"tool":"order","args":{"order":{"id":7,"note":"n"}}}],
        "argsMatchOverrides":{"WRITE":"ignore","order":["order.id"]}}),
    );
    let a = actual(&[
        ("write", json!({"path":"b"}), None),
        ("order", json!({"order":{"id":7.0,"note":"other"}}), None),
    ]);
    assert_eq!(
        check_sequence(&configure(&s).unwrap(), &a).verdict,
        super::super::Verdict::Pass
    );
    let s = spec(json!({"type":"tool-sequence","mode":"in_order","tools":["read","write"]}));
    let a = actual(&[
        ("read", json!({"p":1}), None),
        ("other", json!({}), None),
        ("write", json!({}), None),
    ]);
    assert_eq!(
        check_sequence(&configure(&s).unwrap(), &a).verdict,
        super::super::Verdict::Pass
    );
}

#[test]
fn misconfigurations_are_named() {
    for (params, needle) in [
        (json!({"calls":[]}), "`mode` is required"),
        (json!({"mode":"fuzzy","calls":[]}), "`mode` `fuzzy`"),
        (
            json!({"mode":"exact"}),
            "give `calls`, `tools`, `turns` or `inferences`",
        ),
        (json!({"mode":"exact","calls":[],"tools":[]}), "not both"),
        (
            json!({"mode":"exact","calls":[{"tool":"f","args":null}]}),
            "`calls[0].args` is null",
        ),
        (
            json!({"mode":"exact","calls":[{"args":{}}]}),
            "`calls[0]` has no `tool`",
        ),
        (
            json!({"mode":"exact","calls":[],"argsMatch":"loose"}),
            "`argsMatch` `loose`",
        ),
        (
            json!({"mode":"exact","calls":[],"batchOrder":"random"}),
            "`batchOrder`",
        ),
    ] {
        let spec = OracleSpec::new(0, serde_json::from_value(params.clone()).unwrap());
        let err = configure(&spec).unwrap_err().to_string();
        assert!(err.contains(needle), "{params}: {err}");
    }
}

#[test]
fn failure_evidence_names_the_unplaced_call_and_the_closest_candidate() {
    let c = cfg(
        "superset",
        json!([{"tool":"read","args":{"path":"A.md"}},{"tool":"write","args":{"path":"out.txt","content":"x"}}]),
        "exact",
    );
    let a = actual(&[
        ("read", json!({"path":"A.md"}), None),
        ("write", json!({"path":"out.txt","content":"y"}), None),
        ("write", json!({"path":"other","content":"z"}), None),
    ]);
    let r = check_sequence(&c, &a);
    assert_eq!(r.verdict, super::super::Verdict::Fail);
    assert_eq!(r.evidence, vec![2]);
    assert_eq!(
        r.message,
        "expected call 1 `write` was not matched in mode `superset`; the closest actual call is seq 2, differing in `content` (expected \"x\", found \"y\")"
    );
    assert_eq!(r.found.as_ref().unwrap()["differs"], json!(["content"]));
    // subset: the lowest unplaced actual call.
    let c = cfg("subset", json!([{"tool":"read"}]), "exact");
    let r = check_sequence(
        &c,
        &actual(&[
            ("read", json!({}), None),
            ("shell", json!({"cmd":"ls"}), None),
        ]),
    );
    assert_eq!(
        (r.evidence.clone(), r.message.as_str()),
        (
            vec![2],
            "actual call at seq 2 `shell` is not allowed in mode `subset`: no expected call of that tool"
        )
    );
}

/// The grouped maximum flow finds matchings exactly as large as the one-call-at-a-time matching
/// (Kuhn's algorithm) on random small cases, and every pair it makes is a valid one.
#[test]
fn grouped_matching_is_maximum_and_valid() {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for case in 0..2_000 {
        let tools = ["a", "b", "B"];
        let expected: Vec<Value> = (0..next(7))
            .map(|_| {
                let tool = tools[next(3) as usize];
                match next(3) {
                    0 => json!({"tool": tool}),
                    1 => json!({"tool": tool, "args": {"x": next(3)}}),
                    _ => json!({"tool": tool, "args": {"x": next(3) as f64, "y": next(2)}}),
                }
            })
            .collect();
        let actual_calls: Vec<(&str, Value, Option<u64>)> = (0..next(7))
            .map(|_| {
                let args = if next(2) == 0 {
                    json!({"x": next(3)})
                } else {
                    json!({"x": next(3), "y": next(2)})
                };
                (tools[next(3) as usize], args, None)
            })
            .collect();
        let a = actual(&actual_calls);
        for args_match in ["exact", "superset", "subset", "ignore"] {
            let c = cfg("superset", json!(expected), args_match);
            let ok = |i: usize, j: usize| c.matches(&c.expected[i], &a[j]);
            for left_expected in [true, false] {
                let kuhn = if left_expected {
                    max_matching(c.expected.len(), a.len(), &|l, r| ok(l, r))
                } else {
                    max_matching(a.len(), c.expected.len(), &|l, r| ok(r, l))
                };
                let grouped = super::super::matching::group_matching(&c, &a, left_expected);
                let size = |m: &[Option<usize>]| m.iter().flatten().count();
                assert_eq!(size(&grouped), size(&kuhn), "case {case}, {args_match}");
                for (l, r) in grouped.iter().enumerate() {
                    if let Some(r) = r {
                        let (i, j) = if left_expected { (l, *r) } else { (*r, l) };
                        assert!(ok(i, j), "case {case}: invalid pair");
                    }
                }
            }
        }
    }
}

/// 3,001 expected calls against 3,000 actual ones, unordered: the extra expected call is named
/// (the matching used to be about cubic: 17 s for this case).
#[test]
fn large_unordered_sequences_are_fast() {
    let expected: Vec<Value> = (0..3001)
        .map(|i| json!({"tool": format!("t{}", i % 7), "args": {"n": i % 50}}))
        .collect();
    let calls: Vec<(String, Value, Option<u64>)> = (0..3000)
        .map(|i| (format!("t{}", i % 7), json!({"n": i % 50}), None))
        .collect();
    let refs: Vec<(&str, Value, Option<u64>)> = calls
        .iter()
        .map(|(t, a, b)| (t.as_str(), a.clone(), *b))
        .collect();
    let a = actual(&refs);
    // (Its time is measured by the `sequence` bench group, not asserted here.)
    let r = check_sequence(&cfg("unordered", json!(expected), "exact"), &a);
    assert_eq!(r.verdict, super::super::Verdict::Fail);
    assert!(r.message.contains("expected call 3000"), "{}", r.message);
}

fn score(mode: &str, tools: &[&str], a: &[&str]) -> f64 {
    let calls: Vec<Value> = tools.iter().map(|t| json!({"tool": t})).collect();
    let acts: Vec<(&str, Value, Option<u64>)> = a.iter().map(|t| (*t, json!({}), None)).collect();
    check_sequence(&cfg(mode, json!(calls), "ignore"), &actual(&acts)).score
}

#[test]
fn natural_fractions_per_mode() {
    // superset: matched ÷ |E|; unordered: matched ÷ max(|E|, |A|); subset: matched ÷ |A|.
    assert_eq!(score("superset", &["a", "b", "c"], &["a", "c"]), 2.0 / 3.0);
    assert_eq!(
        score("unordered", &["a", "b"], &["a", "x", "y", "z"]),
        1.0 / 4.0
    );
    assert_eq!(
        score("subset", &["a", "b"], &["a", "x", "y", "z"]),
        1.0 / 4.0
    );
    assert_eq!(score("subset", &["a"], &[]), 1.0);
    // in-order: the longest in-order match, not a greedy prefix (DeepEval's LCS).
    assert_eq!(score("in-order", &["a", "b", "c"], &["b", "c"]), 2.0 / 3.0);
    assert_eq!(
        score("in-order", &["a", "b", "c"], &["c", "b", "a"]),
        1.0 / 3.0
    );
    assert_eq!(score("exact", &["a", "b"], &["a"]), 0.0);
    assert_eq!(score("exact", &[], &[]), 1.0);
    assert_eq!(score("superset", &["book_*", "x"], &["book_flight"]), 0.5);
    // A batch's calls count in the expected order.
    let c = cfg(
        "in-order",
        json!([{"tool": "a"}, {"tool": "b"}, {"tool": "z"}]),
        "ignore",
    );
    let batch = actual(&[("b", json!({}), Some(1)), ("a", json!({}), Some(1))]);
    assert_eq!(check_sequence(&c, &batch).score, 2.0 / 3.0);
}

#[test]
fn globs_pair_in_every_mode() {
    for mode in MODES {
        assert!(
            verdict(
                mode,
                json!([{"tool": "get_*"}, {"tool": "put_?"}]),
                "ignore",
                &[("get_user", json!({}), None), ("put_x", json!({}), None)]
            ),
            "{mode}"
        );
    }
    assert!(!verdict(
        "superset",
        json!([{"tool": "get_*"}, {"tool": "get_*"}]),
        "ignore",
        &[("get_user", json!({}), None)]
    ));
}

#[test]
fn partial_argument_matching_recurses() {
    let a = [(
        "t",
        json!({"trip": {"to": "PAR", "from": "BER"}, "legs": [{"n": 1, "x": 0}], "seat": "1"}),
        None,
    )];
    assert!(verdict(
        "exact",
        json!([{"tool": "t", "args": {"trip": {"to": "PAR"}, "legs": [{"n": 1}]}}]),
        "partial",
        &a
    ));
    assert!(!verdict(
        "exact",
        json!([{"tool": "t", "args": {"trip": {"to": "LIS"}}}]),
        "partial",
        &a
    ));
    // Arrays must keep their length; `superset` stays top-level.
    assert!(!verdict(
        "exact",
        json!([{"tool": "t", "args": {"legs": [{"n": 1}, {"n": 2}]}}]),
        "partial",
        &a
    ));
    assert!(!verdict(
        "exact",
        json!([{"tool": "t", "args": {"trip": {"to": "PAR"}}}]),
        "superset",
        &a
    ));
}

fn judged(oracle: Value, events: &[&str]) -> super::super::OracleResult {
    super::super::test_support::one(oracle, events)
}

const PLANNED: &[&str] = &[
    r#"{"kind":"inference","output":{"tool_calls":[{"call_id":"p1","tool":"search","args":{"q":"a"}},{"call_id":"p2","tool":"lookup","args":{"id":1}}]}}"#,
    r#"{"kind":"tool_call","call_id":"p1","tool":"search","args":{"q":"a"}}"#,
    r#"{"kind":"tool_result","call_id":"p1","ok":true}"#,
    r#"{"kind":"inference","output":{"tool_calls":[{"call_id":"p3","tool":"book","args":{"id":1}}]}}"#,
    r#"{"kind":"run_end","status":"completed"}"#,
];

#[test]
fn planned_calls_are_judged_per_inference_like_agentevals_strict() {
    use super::super::Verdict;
    let r = judged(
        json!({"type": "tool-sequence", "mode": "exact", "of": "planned", "tools": ["search", "lookup", "book"]}),
        PLANNED,
    );
    assert_eq!(r.verdict, Verdict::Pass, "{}", r.message);
    let r = judged(
        json!({"type": "tool-sequence", "mode": "exact", "tools": ["search", "lookup", "book"]}),
        PLANNED,
    );
    assert_eq!(
        r.verdict,
        Verdict::Fail,
        "executed calls by default: {}",
        r.message
    );
    let r = judged(
        json!({"type": "tool-sequence", "mode": "exact", "of": "planned", "inferences": [["lookup", "search"], [{"tool": "book", "args": {"id": 1}}]]}),
        PLANNED,
    );
    assert_eq!(r.verdict, Verdict::Pass, "{}", r.message);
    let r = judged(
        json!({"type": "tool-sequence", "mode": "exact", "of": "planned", "inferences": [["search"], ["book"]]}),
        PLANNED,
    );
    assert_eq!((r.verdict, r.score), (Verdict::Fail, 0.5), "{}", r.message);
    let r = judged(
        json!({"type": "tool-sequence", "mode": "exact", "of": "planned", "inferences": [["search", "lookup"]]}),
        PLANNED,
    );
    assert_eq!((r.verdict, r.score), (Verdict::Fail, 0.0), "{}", r.message);
    assert!(
        r.message
            .contains("2 inference(s) planned calls and `inferences` lists 1"),
        "{}",
        r.message
    );
    let r = judged(
        json!({"type": "tool-sequence", "mode": "exact", "inferences": [["search"]]}),
        PLANNED,
    );
    assert!(
        r.misconfigured && r.message.contains("\"of\": \"planned\""),
        "{}",
        r.message
    );
    let r = judged(
        json!({"type": "tool-args", "of": "planned", "tool": "book", "args": {"id": 1}}),
        PLANNED,
    );
    assert_eq!(
        (r.verdict, r.evidence.clone()),
        (Verdict::Pass, vec![4]),
        "{}",
        r.message
    );
    let r = judged(
        json!({"type": "tool-call-count", "of": "planned", "tool": "*", "count": 3}),
        PLANNED,
    );
    assert_eq!(r.verdict, Verdict::Pass, "{}", r.message);
    let r = judged(
        json!({"type": "tool-call-count", "of": "plannned", "tool": "*", "count": 3}),
        PLANNED,
    );
    assert!(r.misconfigured, "{}", r.message);
}

#[test]
fn turns_score_the_mean_of_turns_like_adk() {
    use super::super::Verdict;
    let user =
        |n: u8| format!(r#"{{"kind":"user_message","prompt":{{"h":"b3:{n:064x}","len":3}}}}"#);
    let (u1, u2, u3) = (user(1), user(2), user(3));
    let c = |id: &str, t: &str| {
        format!(r#"{{"kind":"tool_call","call_id":"{id}","tool":"{t}","args":{{}}}}"#)
    };
    let (a, b, d) = (c("1", "a"), c("2", "b"), c("3", "d"));
    let events = [
        u1.as_str(),
        a.as_str(),
        u2.as_str(),
        b.as_str(),
        u3.as_str(),
        d.as_str(),
        r#"{"kind":"run_end","status":"completed"}"#,
    ];
    let r = judged(
        json!({"type": "tool-sequence", "mode": "exact", "turns": [["a"], ["b"], ["x"]]}),
        &events,
    );
    assert_eq!(r.verdict, Verdict::Fail);
    assert!((r.score - 2.0 / 3.0).abs() < 1e-12, "{}", r.score);
    assert!(r.message.contains("turn 3:"), "{}", r.message);
    let r = judged(
        json!({"type": "tool-sequence", "mode": "exact", "turns": [["a"], ["b"], ["x"]], "threshold": 0.6}),
        &events,
    );
    assert_eq!(r.verdict, Verdict::Pass, "{}", r.message);
    let r = judged(
        json!({"type": "tool-sequence", "mode": "exact", "turns": [["a"], ["b"]]}),
        &events,
    );
    assert_eq!((r.verdict, r.score), (Verdict::Fail, 0.0));
    assert!(
        r.message.contains("3 turn(s) and `turns` lists 2"),
        "{}",
        r.message
    );
    let r = judged(
        json!({"type": "tool-sequence", "mode": "exact", "turns": []}),
        &events,
    );
    assert!(r.misconfigured, "{}", r.message);
    let r = judged(
        json!({"type": "tool-sequence", "mode": "exact", "turns": [["a"]]}),
        &[a.as_str(), r#"{"kind":"run_end","status":"completed"}"#],
    );
    assert_eq!(r.verdict, Verdict::NotEvaluable, "{}", r.message);
}

/// Calls are grouped as interchangeable only when JSON equality holds them equal: two integers
/// past 2^53 that one `f64` cannot tell apart are different arguments. With few calls (grouped
/// by comparing them) and with many (grouped by key), a run that made one of the two expected
/// calls twice and the other never does not pass.
#[test]
fn integers_past_2_53_are_not_grouped_together() {
    for padding in [0usize, 40] {
        let big = "9007199254740993".parse::<serde_json::Number>().unwrap();
        let near = "9007199254740992".parse::<serde_json::Number>().unwrap();
        let mut expected = vec![json!({"tool": "f", "args": {"id": big}}); 2];
        let mut calls: Vec<(&str, Value, Option<u64>)> = vec![
            ("f", json!({"id": big}), None),
            ("f", json!({"id": near}), None),
        ];
        for i in 0..padding {
            expected.push(json!({"tool": "g", "args": {"n": i}}));
            calls.push(("g", json!({"n": i}), None));
        }
        for mode in ["superset", "unordered"] {
            assert!(
                !verdict(mode, Value::Array(expected.clone()), "exact", &calls),
                "{mode} with {padding} more calls"
            );
        }
        // An integral float equals its integer, in both paths.
        calls[1] = ("f", json!({"id": 2.0}), None);
        expected[1] = json!({"tool": "f", "args": {"id": 2}});
        assert!(
            verdict("superset", Value::Array(expected.clone()), "exact", &calls),
            "{padding}"
        );
    }
}

/// Argument matchers in the expected calls: the grouped matching stays maximum and valid, with
/// few calls (compared pairwise) and many (keyed) — `3` and `3.0` included, which a `$type`
/// matcher tells apart though JSON equality does not.
#[test]
fn grouped_matching_with_matchers_is_maximum_and_valid() {
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for case in 0..600 {
        let size = if case % 3 == 0 { 40 } else { 7 };
        let expected: Vec<Value> = (0..next(size))
            .map(|_| match next(5) {
                0 => json!({"tool": "a", "args": {"x": {"$oneOf": [0, 1]}}}),
                1 => json!({"tool": "a", "args": {"x": {"$eq": 1, "$type": "integer"}}}),
                2 => json!({"tool": "a", "args": {"x": {"$default": 2}}}),
                3 => json!({"tool": "a", "args": {"x": {"$approx": 1, "$abs": 0.5}}}),
                _ => json!({"tool": "a", "args": {"x": next(3)}}),
            })
            .collect();
        let actual_calls: Vec<(&str, Value, Option<u64>)> = (0..next(size))
            .map(|_| {
                let args = match next(4) {
                    0 => json!({}),
                    1 => json!({"x": next(3) as f64}),
                    _ => json!({"x": next(3)}),
                };
                ("a", args, None)
            })
            .collect();
        let a = actual(&actual_calls);
        for args_match in ["exact", "superset", "subset"] {
            let c = cfg("superset", json!(expected), args_match);
            let ok = |i: usize, j: usize| c.matches(&c.expected[i], &a[j]);
            let kuhn = max_matching(c.expected.len(), a.len(), &|l, r| ok(l, r));
            let grouped = super::super::matching::group_matching(&c, &a, true);
            let count = |m: &[Option<usize>]| m.iter().flatten().count();
            assert_eq!(count(&grouped), count(&kuhn), "case {case}, {args_match}");
            for (i, j) in grouped.iter().enumerate() {
                if let Some(j) = j {
                    assert!(ok(i, *j), "case {case}: invalid pair");
                }
            }
        }
    }
}

/// Every permutation of `items` (few).
fn permutations(items: &[usize]) -> Vec<Vec<usize>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for k in 0..items.len() {
        let mut rest = items.to_vec();
        let first = rest.remove(k);
        for mut p in permutations(&rest) {
            p.insert(0, first);
            out.push(p);
        }
    }
    out
}

/// Whether `e` (indices of expected calls, in order) embeds into the actual calls in order,
/// every call left over passing `spare`; with `exact`, using every call.
fn embeds(
    e: &[usize],
    n: usize,
    ok: &dyn Fn(usize, usize) -> bool,
    spare: &dyn Fn(usize) -> bool,
) -> bool {
    fn go(
        e: &[usize],
        j: usize,
        n: usize,
        ok: &dyn Fn(usize, usize) -> bool,
        spare: &dyn Fn(usize) -> bool,
    ) -> bool {
        if j == n {
            return e.is_empty();
        }
        (!e.is_empty() && ok(e[0], j) && go(&e[1..], j + 1, n, ok, spare))
            || (spare(j) && go(e, j + 1, n, ok, spare))
    }
    go(e, 0, n, ok, spare)
}

/// `anyOrder` groups and `readOnly` tools against their definitions, by brute force over small
/// random sequences: some order of each group's calls embeds (in `exact`, position by position;
/// in `in-order`, as a subsequence), and with read-only tools every call left over is read-only;
/// in `superset` and `unordered`, some pairing covers every expected call and every call that is
/// not read-only.
#[test]
fn groups_and_read_only_tools_decide_as_defined() {
    let mut seed: u64 = 0x1234_5678_9abc_def1;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let tools = ["read", "write", "search"];
    for case in 0..3_000 {
        // Expected: calls and groups of calls, by tool with an argument in {0, 1} or none.
        let mut calls = Vec::new();
        let mut flat: Vec<(&str, Option<u64>)> = Vec::new();
        let mut ranges = Vec::new();
        for _ in 0..next(4) {
            let one = |next: &mut dyn FnMut(u64) -> u64| {
                // Now and then a glob, which a read-only call and another may both match.
                let tool = match next(5) {
                    0 => "*",
                    k => tools[(k % 3) as usize],
                };
                let arg = (next(3) < 2).then(|| next(2));
                (tool, arg)
            };
            let start = flat.len();
            if next(3) == 0 {
                let group: Vec<(&str, Option<u64>)> =
                    (0..1 + next(3)).map(|_| one(&mut next)).collect();
                calls.push(json!({"anyOrder": group.iter().map(|(t, a)| match a {
                    Some(a) => json!({"tool": t, "args": {"x": a}}),
                    None => json!({"tool": t}),
                }).collect::<Vec<_>>()}));
                flat.extend(group);
            } else {
                let (t, a) = one(&mut next);
                calls.push(match a {
                    Some(a) => json!({"tool": t, "args": {"x": a}}),
                    None => json!({"tool": t}),
                });
                flat.push((t, a));
            }
            ranges.push(start..flat.len());
        }
        let actual_calls: Vec<(&str, Value, Option<u64>)> = (0..next(6))
            .map(|_| (tools[next(3) as usize], json!({"x": next(2)}), None))
            .collect();
        let a = actual(&actual_calls);
        let ok = |i: usize, j: usize| {
            (flat[i].0 == "*" || flat[i].0 == a[j].tool)
                && flat[i].1.is_none_or(|x| a[j].args["x"] == json!(x))
        };
        let grouped = calls.iter().any(|c| c.get("anyOrder").is_some());
        for read_only in [vec![], vec!["read"], vec!["read", "search"]] {
            let ro = |j: usize| read_only.contains(&a[j].tool.as_str());
            for mode in ["exact", "in-order", "superset", "unordered"] {
                if grouped && !matches!(mode, "exact" | "in-order") {
                    continue;
                }
                let spec = json!({"type": "tool-sequence", "mode": mode, "calls": calls, "readOnly": read_only});
                let c =
                    configure(&OracleSpec::new(0, serde_json::from_value(spec).unwrap())).unwrap();
                let got = check_sequence(&c, &a).verdict == super::super::Verdict::Pass;
                let want = match mode {
                    "exact" | "in-order" => {
                        // Every order of each group's calls, one after another.
                        let mut orders: Vec<Vec<usize>> = vec![Vec::new()];
                        for r in &ranges {
                            let perms = permutations(&r.clone().collect::<Vec<_>>());
                            orders = orders
                                .iter()
                                .flat_map(|o| {
                                    perms.iter().map(move |p| [o.clone(), p.clone()].concat())
                                })
                                .collect();
                        }
                        let spare = |j: usize| match (mode, read_only.is_empty()) {
                            ("exact", true) => false,
                            (_, true) => true,
                            (_, false) => ro(j),
                        };
                        // Without groups, `exact` and `in-order` keep their batch rule: these
                        // calls have no batches, so it changes nothing here.
                        orders.iter().any(|o| embeds(o, a.len(), &ok, &spare))
                    }
                    _ => {
                        // Some injective pairing covering the expected calls and the calls
                        // that are not read-only (in `unordered` without read-only tools, all).
                        let needed =
                            |j: usize| !(ro(j) || (mode == "superset" && read_only.is_empty()));
                        let all: Vec<usize> = (0..a.len()).collect();
                        let e = flat.len();
                        e <= a.len()
                            && permutations(&all).iter().any(|p| {
                                (0..e).all(|i| ok(i, p[i])) && p[e..].iter().all(|&j| !needed(j))
                            })
                    }
                };
                assert_eq!(
                    got,
                    want,
                    "case {case}: {mode}, readOnly {read_only:?}, calls {}, actual {actual_calls:?}",
                    json!(calls)
                );
            }
        }
    }
}

#[test]
fn groups_and_read_only_tools_are_checked_when_configured() {
    for (spec, want) in [
        (
            json!({"type": "tool-sequence", "mode": "superset", "calls": [{"anyOrder": [{"tool": "a"}]}]}),
            "mode `superset` compares in any order already",
        ),
        (
            json!({"type": "tool-sequence", "mode": "exact", "calls": [{"anyOrder": []}]}),
            "`calls[0].anyOrder` must be a non-empty array of calls",
        ),
        (
            json!({"type": "tool-sequence", "mode": "exact", "calls": [{"anyOrder": [{"tool": "a", "arg": {}}]}]}),
            "calls[0].anyOrder[0]",
        ),
        (
            json!({"type": "tool-sequence", "mode": "exact", "tools": ["a"], "readOnly": [""]}),
            "`readOnly[0]` is not a tool name",
        ),
    ] {
        let e = configure(&OracleSpec::new(
            0,
            serde_json::from_value(spec.clone()).unwrap(),
        ))
        .expect_err(&spec.to_string())
        .to_string();
        assert!(e.contains(want), "{spec}: {e}");
    }
}
