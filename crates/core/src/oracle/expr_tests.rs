//! Tests of [`super`]: the `expr` oracle, its sandbox and its budgets.
use super::*;
use crate::oracle::test_support::one;
use serde_json::json;

const EVENTS: &[&str] = &[
    r#"{"kind":"user_message","prompt":{"h":"b3:7d0c2f5be3a8e1a06f1d9d6f2f4f0f2b6b4d6a1c3e5f7a9b1c3d5e7f9a1b3c5d","len":5}}"#,
    r#"{"kind":"tool_call","call_id":"c1","tool":"search","args":{"q":"x"}}"#,
    r#"{"kind":"tool_result","call_id":"c1","ok":true}"#,
    r#"{"kind":"run_end","status":"completed"}"#,
];

fn expr(jq: &str) -> OracleResult {
    one(json!({"type": "expr", "jq": jq}), EVENTS)
}

#[test]
fn true_passes_false_fails_with_evidence() {
    let r = expr(r#"[.events[] | select(.kind == "tool_call")] | length == 1"#);
    assert_eq!(r.verdict, crate::oracle::Verdict::Pass, "{}", r.message);
    let r = expr(r#"any(.events[]; .kind == "approval_request")"#);
    assert_eq!(r.verdict, crate::oracle::Verdict::Fail);
    let r = expr(r#"{pass: false, seq: [.events[] | select(.kind == "tool_call") | .seq]}"#);
    assert_eq!(
        (r.verdict, r.evidence.clone()),
        (crate::oracle::Verdict::Fail, vec![2])
    );
}

#[test]
fn builtins_the_format_promises_are_there() {
    for jq in [
        r#"[.events[] | .kind] | unique | length > 0"#,
        r#".events | map(select(.tool != null)) | all(.tool | test("^sea"))"#,
        r#".events | group_by(.kind) | length == 4"#,
        r#"[.events[] | .tool // empty | ascii_downcase] | contains(["search"])"#,
        r#".header | with_entries(.) | length >= 0"#,
    ] {
        assert_eq!(
            expr(jq).verdict,
            crate::oracle::Verdict::Pass,
            "{jq}: {}",
            expr(jq).message
        );
    }
}

#[test]
fn other_outputs_and_errors_fail_with_the_reason() {
    let r = expr(".events[]");
    assert!(r.message.contains("more than one output"), "{}", r.message);
    let r = expr("empty");
    assert!(r.message.contains("no output"), "{}", r.message);
    let r = expr("1");
    assert!(r.message.contains("not a boolean"), "{}", r.message);
    let r = expr(r#".events | error("boom")"#);
    assert!(r.message.contains("boom"), "{}", r.message);
}

#[test]
fn the_sandbox_holds_and_syntax_errors_are_misconfigurations() {
    for jq in [
        "env | length > 0",
        "now > 0",
        "halt",
        "debug | true",
        "localtime | true",
    ] {
        let r = expr(jq);
        assert_eq!(r.verdict, crate::oracle::Verdict::Fail, "{jq}");
        assert!(r.message.contains("not available"), "{jq}: {}", r.message);
    }
    for (jq, says) in [
        ("$ENV | length > 0", "undefined variable `$ENV`"),
        ("[.events[] | ", "does not parse"),
        ("nosuchfilter", "undefined filter `nosuchfilter`"),
        ("input", "undefined filter `input`"),
        (
            "[limit(3; inputs)] | length == 0",
            "undefined filter `inputs`",
        ),
    ] {
        let r = expr(jq);
        assert!(r.misconfigured, "{jq}: {}", r.message);
        assert!(r.message.contains(says), "{jq}: {}", r.message);
    }
}

#[test]
fn a_program_that_never_ends_fails_on_its_budget() {
    let started = std::time::Instant::now();
    let r = expr("def f: f; f");
    assert_eq!(r.verdict, crate::oracle::Verdict::Fail);
    assert!(r.message.contains("time budget"), "{}", r.message);
    let r = expr("last(repeat(1))");
    assert_eq!(r.verdict, crate::oracle::Verdict::Fail);
    assert!(r.message.contains("time budget"), "{}", r.message);
    // The run went on: the answer came after the budget, not after the program.
    assert!(started.elapsed() < TIME_BUDGET * 10);
}
