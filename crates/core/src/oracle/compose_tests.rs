use serde_json::json;

use super::super::test_support::one;
use crate::oracle::Verdict;

const TWO_TURNS: &[&str] = &[
    r#"{"kind":"user_message","prompt":{"h":"b3:7d0c2f5be3a8e1a06f1d9d6f2f4f0f2b6b4d6a1c3e5f7a9b1c3d5e7f9a1b3c5d","len":5}}"#,
    r#"{"kind":"tool_call","call_id":"c1","tool":"search","args":{"q":"a"}}"#,
    r#"{"kind":"tool_result","call_id":"c1","ok":true}"#,
    r#"{"kind":"final_answer","text":"first answer"}"#,
    r#"{"kind":"user_message","prompt":{"h":"b3:8d0c2f5be3a8e1a06f1d9d6f2f4f0f2b6b4d6a1c3e5f7a9b1c3d5e7f9a1b3c5d","len":7}}"#,
    r#"{"kind":"tool_call","call_id":"c2","tool":"book_flight","args":{"to":"PAR"}}"#,
    r#"{"kind":"tool_result","call_id":"c2","ok":true}"#,
    r#"{"kind":"run_end","status":"completed"}"#,
];

#[test]
fn not_inverts_and_keeps_the_inner_evidence() {
    let r = one(
        json!({"type": "not", "oracle": {"type": "tool-called", "tool": "search"}}),
        TWO_TURNS,
    );
    assert_eq!(
        (r.verdict, r.score, r.evidence.clone()),
        (Verdict::Fail, 0.0, vec![2])
    );
    let r = one(
        json!({"type": "not", "oracle": {"type": "tool-called", "tool": "delete"}}),
        TWO_TURNS,
    );
    assert_eq!((r.verdict, r.score), (Verdict::Pass, 1.0));
}

#[test]
fn not_keeps_not_evaluable_and_misconfiguration() {
    let r = one(
        json!({"type": "not", "oracle": {"type": "tool-called", "tool": "x", "turn": 1}}),
        &[r#"{"kind":"run_end","status":"completed"}"#],
    );
    assert_eq!(r.verdict, Verdict::NotEvaluable, "{}", r.message);
    let r = one(
        json!({"type": "not", "oracle": {"type": "tool-called", "tols": ["x"]}}),
        TWO_TURNS,
    );
    assert!(
        r.misconfigured && r.message.contains("did you mean `tools`"),
        "{}",
        r.message
    );
    let r = one(
        json!({"type": "not", "threshold": 0.5, "oracle": {"type": "tool-called", "tool": "x"}}),
        TWO_TURNS,
    );
    assert!(
        r.misconfigured && r.message.contains("no `threshold` of its own"),
        "{}",
        r.message
    );
}

#[test]
fn all_of_and_any_of_take_the_min_and_max_score() {
    let inner = json!([
        {"type": "tool-called", "tools": ["search", "book_flight", "refund", "cancel"]},
        {"type": "tool-called", "tool": "search"}
    ]);
    let r = one(json!({"type": "all-of", "oracles": inner}), TWO_TURNS);
    assert_eq!((r.verdict, r.score), (Verdict::Fail, 0.5), "{}", r.message);
    let r = one(json!({"type": "any-of", "oracles": inner}), TWO_TURNS);
    assert_eq!((r.verdict, r.score), (Verdict::Pass, 1.0), "{}", r.message);
    let with_threshold = json!([
        {"type": "tool-called", "tools": ["search", "book_flight", "refund", "cancel"], "threshold": 0.5},
        {"type": "tool-called", "tool": "search"}
    ]);
    let r = one(
        json!({"type": "all-of", "oracles": with_threshold}),
        TWO_TURNS,
    );
    assert_eq!((r.verdict, r.score), (Verdict::Pass, 0.5), "{}", r.message);
    let r = one(json!({"type": "any-of", "oracles": []}), TWO_TURNS);
    assert!(r.misconfigured, "{}", r.message);
    let r = one(
        json!({"type": "any-of", "oracles": [{"type": "tool-caled", "tool": "x"}]}),
        TWO_TURNS,
    );
    assert!(
        r.misconfigured && r.message.contains("did you mean `tool-called`"),
        "{}",
        r.message
    );
}

#[test]
fn thresholds_pass_on_the_score_and_are_validated() {
    let tools = json!(["search", "book_flight", "refund"]);
    let r = one(json!({"type": "tool-called", "tools": tools}), TWO_TURNS);
    assert_eq!(r.verdict, Verdict::Fail);
    assert!((r.score - 2.0 / 3.0).abs() < 1e-12);
    let r = one(
        json!({"type": "tool-called", "tools": tools, "threshold": 0.6}),
        TWO_TURNS,
    );
    assert_eq!(r.verdict, Verdict::Pass, "{}", r.message);
    assert!(
        r.message.starts_with("score 0.667 reaches threshold 0.6"),
        "{}",
        r.message
    );
    let r = one(
        json!({"type": "tool-called", "tools": tools, "threshold": 0.7}),
        TWO_TURNS,
    );
    assert_eq!(r.verdict, Verdict::Fail);
    for bad in [json!(0), json!(1.5), json!(-0.2), json!("0.5")] {
        let r = one(
            json!({"type": "tool-called", "tool": "search", "threshold": bad}),
            TWO_TURNS,
        );
        assert!(r.misconfigured, "{bad}: {}", r.message);
    }
    let r = one(
        json!({"type": "tool-called", "tool": "search", "threshhold": 0.5}),
        TWO_TURNS,
    );
    assert!(
        r.misconfigured && r.message.contains("did you mean `threshold`"),
        "{}",
        r.message
    );
    // `not-evaluable` stays a failure whatever the threshold.
    let r = one(
        json!({"type": "tool-called", "tool": "search", "turn": 1, "threshold": 0.01}),
        &[r#"{"kind":"run_end","status":"completed"}"#],
    );
    assert_eq!(r.verdict, Verdict::NotEvaluable);
}

#[test]
fn turn_judges_one_turn_with_the_run_end() {
    let r = one(
        json!({"type": "tool-called", "tool": "book_flight", "turn": 2}),
        TWO_TURNS,
    );
    assert_eq!(r.verdict, Verdict::Pass, "{}", r.message);
    let r = one(
        json!({"type": "tool-called", "tool": "book_flight", "turn": 1}),
        TWO_TURNS,
    );
    assert_eq!(r.verdict, Verdict::Fail, "{}", r.message);
    assert!(r.message.starts_with("turn 1: "), "{}", r.message);
    let r = one(
        json!({"type": "tool-not-called", "tool": "search", "turn": -1}),
        TWO_TURNS,
    );
    assert_eq!(r.verdict, Verdict::Pass, "{}", r.message);
    let r = one(
        json!({"type": "status-is", "value": "completed", "turn": 1}),
        TWO_TURNS,
    );
    assert_eq!(r.verdict, Verdict::Pass, "{}", r.message);
    let r = one(
        json!({"type": "final-answer-contains", "value": "first", "turn": 1}),
        TWO_TURNS,
    );
    assert_eq!(r.verdict, Verdict::Pass, "{}", r.message);
    let r = one(
        json!({"type": "tool-called", "tool": "search", "turn": 3}),
        TWO_TURNS,
    );
    assert_eq!(r.verdict, Verdict::Fail);
    assert!(
        r.message
            .contains("turn 3 does not exist: the trace has 2 turn(s)"),
        "{}",
        r.message
    );
    let r = one(
        json!({"type": "tool-called", "tool": "search", "turn": 0}),
        TWO_TURNS,
    );
    assert!(r.misconfigured, "{}", r.message);
}

#[test]
fn globs_name_tools_everywhere() {
    let r = one(json!({"type": "tool-called", "tool": "book_*"}), TWO_TURNS);
    assert_eq!(r.verdict, Verdict::Pass, "{}", r.message);
    let r = one(
        json!({"type": "tool-not-called", "tools": ["delete_*", "drop_?"]}),
        TWO_TURNS,
    );
    assert_eq!(r.verdict, Verdict::Pass, "{}", r.message);
    let r = one(
        json!({"type": "tool-call-count", "tool": "*", "count": 2}),
        TWO_TURNS,
    );
    assert_eq!(r.verdict, Verdict::Pass, "{}", r.message);
    let r = one(
        json!({"type": "tool-call-count", "tool": "search", "max": 0}),
        TWO_TURNS,
    );
    assert_eq!(r.verdict, Verdict::Fail, "{}", r.message);
    let r = one(
        json!({"type": "tool-args", "tool": "BOOK_*", "args": {"to": "PAR"}}),
        TWO_TURNS,
    );
    assert_eq!(r.verdict, Verdict::Pass, "{}", r.message);
    let r = one(
        json!({"type": "tool-sequence", "mode": "exact", "tools": ["sea*", "book_[a-z]light"]}),
        TWO_TURNS,
    );
    assert_eq!(r.verdict, Verdict::Pass, "{}", r.message);
    let r = one(json!({"type": "tool-call-count", "count": 1}), TWO_TURNS);
    assert!(r.misconfigured, "{}", r.message);
}
