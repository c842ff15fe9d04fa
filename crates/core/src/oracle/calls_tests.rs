//! Tests of the call and result oracles (`calls.rs`): a passing and a failing case for each,
//! asserting message and evidence.

use serde_json::json;

use super::test_support::*;
use super::*;

#[test]
fn tool_args() {
    let o = |args: serde_json::Value, m: &str| json!({"type":"tool-args","tool":"read","args":args,"argsMatch":m});
    check(
        &one(o(json!({"path":"a.md"}), "superset"), &[CALL, END]),
        Verdict::Pass,
        "`read` at seq 1 has the expected arguments",
        &[1],
    );
    check(
        &one(o(json!({"path":"a.md"}), "exact"), &[CALL, END]),
        Verdict::Fail,
        "the closest is seq 1, differing in `limit`",
        &[1],
    );
    check(
        &one(o(json!({"path":"a.md"}), "exact"), &[END]),
        Verdict::Fail,
        "`read` was never called",
        &[],
    );
    assert!(one(json!({"type":"tool-args","tool":"read"}), &[END]).misconfigured);
}

#[test]
fn tool_succeeded() {
    check(
        &one(json!({"type":"tool-succeeded"}), &[CALL, RESULT_OK, END]),
        Verdict::Pass,
        "1 result(s) of any tool succeeded",
        &[2],
    );
    check(
        &one(
            json!({"type":"tool-succeeded","tool":"read"}),
            &[CALL, RESULT_BAD, END],
        ),
        Verdict::Fail,
        "1 of 1 result(s) of `read` failed; the first at seq 2",
        &[2],
    );
    check(
        &one(
            json!({"type":"tool-succeeded","tool":"write"}),
            &[CALL, RESULT_OK, END],
        ),
        Verdict::Fail,
        "no result of `write`",
        &[],
    );
}

#[test]
fn tool_result_contains() {
    let o = |v: &str| json!({"type":"tool-result-contains","tool":"read","value":v});
    check(
        &one(o("beta"), &[CALL, RESULT_OK, END]),
        Verdict::Pass,
        "the result at seq 2 contains `beta`",
        &[2],
    );
    check(
        &one(o("PARTIAL"), &[CALL, RESULT_BAD, END]),
        Verdict::Pass,
        "contains `PARTIAL`",
        &[2],
    );
    check(
        &one(o("gamma"), &[CALL, RESULT_OK, END]),
        Verdict::Fail,
        "no result of `read` contains `gamma`",
        &[2],
    );
    let bare = r#"{"kind":"tool_result","call_id":"c1","ok":true}"#;
    check(
        &one(o("x"), &[CALL, bare, END]),
        Verdict::NotEvaluable,
        "has an `output` or `error`",
        &[2],
    );
    // A JSON output is searched in its compact form.
    let obj = r#"{"kind":"tool_result","call_id":"c1","ok":true,"output":{"rows":[{"id":7}]}}"#;
    check(
        &one(o("\"id\":7"), &[CALL, obj, END]),
        Verdict::Pass,
        "contains",
        &[2],
    );
}

#[test]
fn call_result_linked() {
    let o = json!({"type":"call-result-linked"});
    check(
        &one(o.clone(), &[PLAN, CALL, RESULT_OK, CONSUME, END]),
        Verdict::Pass,
        "1 call(s) each linked to exactly one result",
        &[2, 3],
    );
    check(
        &one(o.clone(), &[PLAN, CALL, END]),
        Verdict::Fail,
        "the call `c1` at seq 2 has no result",
        &[2],
    );
    check(
        &one(o.clone(), &[PLAN, CALL, RESULT_OK, RESULT_OK, END]),
        Verdict::Fail,
        "has 2 results",
        &[2],
    );
    let early = r#"{"kind":"tool_result","call_id":"c1","ok":true}"#;
    check(
        &one(o.clone(), &[early, CALL, END]),
        Verdict::Fail,
        "comes before its call",
        &[1],
    );
    let other = r#"{"kind":"tool_call","call_id":"zz","tool":"read","args":{}}"#;
    let zz = r#"{"kind":"tool_result","call_id":"zz","ok":true}"#;
    check(
        &one(o.clone(), &[PLAN, other, zz, END]),
        Verdict::Fail,
        "planned call `c1`, which was never executed with that id",
        &[1],
    );
    let consume_twice = r#"{"kind":"inference","consumes":["c1","c1"]}"#;
    check(
        &one(o.clone(), &[CALL, RESULT_OK, consume_twice, END]),
        Verdict::Fail,
        "is consumed 2 times",
        &[2],
    );
    let consume_unknown = r#"{"kind":"inference","consumes":["c1","nope"]}"#;
    check(
        &one(o.clone(), &[CALL, RESULT_OK, consume_unknown, END]),
        Verdict::Fail,
        "consumes `nope`, which has no earlier result",
        &[3],
    );
    let dup = r#"{"kind":"tool_call","call_id":"c1","tool":"read","args":{}}"#;
    check(
        &one(o.clone(), &[CALL, RESULT_OK, dup, END]),
        Verdict::Fail,
        "call id `c1` is used by more than one call",
        &[3],
    );
    check(&one(o, &[END]), Verdict::Fail, "no tool call to link", &[]);
}

/// A call id used twice, as real recordings do (tau-bench's gpt-4o runs): each result belongs
/// to the call before it, not to the last call with that id.
#[test]
fn a_reused_call_id_gives_each_result_its_own_call() {
    let events = [
        r#"{"kind":"tool_call","call_id":"c1","tool":"search","args":{"q":"x"}}"#,
        r#"{"kind":"tool_result","call_id":"c1","ok":false,"error":"search is down"}"#,
        r#"{"kind":"tool_call","call_id":"c1","tool":"book","args":{"id":7}}"#,
        r#"{"kind":"tool_result","call_id":"c1","ok":true,"output":"booked 7"}"#,
        END,
    ];
    // The failed result is `search`'s, so `book` succeeded and `search` did not.
    check(
        &one(json!({"type":"tool-succeeded","tool":"book"}), &events),
        Verdict::Pass,
        "1 result(s) of `book` succeeded",
        &[4],
    );
    check(
        &one(json!({"type":"tool-succeeded","tool":"search"}), &events),
        Verdict::Fail,
        "1 of 1 result(s) of `search` failed; the first at seq 2",
        &[2],
    );
    check(
        &one(
            json!({"type":"tool-result-contains","tool":"search","value":"booked"}),
            &events,
        ),
        Verdict::Fail,
        "no result of `search` contains `booked`",
        &[2],
    );
}
