//! Tests of the behaviour oracles (`behaviour.rs`): a passing and a failing case for each, their
//! misconfigurations, scores, and use inside compositions.

use serde_json::json;

use super::test_support::*;
use super::*;

fn call(id: &str, tool: &str, args: &str) -> String {
    format!(r#"{{"kind":"tool_call","call_id":"{id}","tool":"{tool}","args":{args}}}"#)
}

fn result(id: &str, ok: bool) -> String {
    if ok {
        format!(r#"{{"kind":"tool_result","call_id":"{id}","ok":true,"output":"fine"}}"#)
    } else {
        format!(r#"{{"kind":"tool_result","call_id":"{id}","ok":false,"error":"timeout"}}"#)
    }
}

fn answer(text: &str) -> String {
    format!(r#"{{"kind":"final_answer","text":"{text}"}}"#)
}

fn run(lines: &[String]) -> Vec<&str> {
    let mut v: Vec<&str> = lines.iter().map(String::as_str).collect();
    v.push(END);
    v
}

#[test]
fn no_repeated_call_counts_the_same_call_by_canonical_arguments() {
    let lines = [
        call("c1", "search", r#"{"q":"a","n":1}"#),
        call("c2", "search", r#"{"n":1.0,"q":"a"}"#),
        call("c3", "Search", r#"{"q":"a","n":1}"#),
        call("c4", "search", r#"{"q":"b"}"#),
    ];
    let r = one(json!({"type":"no-repeated-call"}), &run(&lines));
    check(
        &r,
        Verdict::Fail,
        "`search` was called with the same arguments 3 times (at most 2 allowed), at seq 1, 2, 3",
        &[1, 2, 3],
    );
    assert!((r.score - 0.75).abs() < 1e-9, "{}", r.score);
    check(
        &one(json!({"type":"no-repeated-call","max":3}), &run(&lines)),
        Verdict::Pass,
        "no call was made more than 3 time(s) (4 call(s))",
        &[],
    );
    // In a row: another call between them breaks the run.
    let apart = [
        call("c1", "search", r#"{"q":"a"}"#),
        call("c2", "search", r#"{"q":"a"}"#),
        call("c3", "read", r#"{}"#),
        call("c4", "search", r#"{"q":"a"}"#),
    ];
    check(
        &one(
            json!({"type":"no-repeated-call","max":2,"consecutive":true}),
            &run(&apart),
        ),
        Verdict::Pass,
        "in a row",
        &[],
    );
    check(
        &one(
            json!({"type":"no-repeated-call","max":1,"consecutive":true}),
            &run(&apart),
        ),
        Verdict::Fail,
        "2 times in a row (at most 1 allowed), at seq 1, 2",
        &[1, 2],
    );
    // Only the tools named.
    check(
        &one(
            json!({"type":"no-repeated-call","tools":["read"]}),
            &run(&lines),
        ),
        Verdict::Pass,
        "(0 call(s))",
        &[],
    );
    assert!(one(json!({"type":"no-repeated-call","max":0}), &[END]).misconfigured);
    assert!(one(json!({"type":"no-repeated-call","max":"x"}), &[END]).misconfigured);
    assert!(one(json!({"type":"no-repeated-call","limit":2}), &[END]).misconfigured);
}

#[test]
fn no_retry_spiral_counts_unchanged_retries_of_a_failing_call() {
    let spiral = [
        call("c1", "pay", r#"{"id":7}"#),
        result("c1", false),
        call("c2", "pay", r#"{"id":7}"#),
        result("c2", false),
        call("c3", "pay", r#"{"id":7}"#),
        result("c3", false),
        call("c4", "pay", r#"{"id":7}"#),
        result("c4", false),
    ];
    check(
        &one(json!({"type":"no-retry-spiral"}), &run(&spiral)),
        Verdict::Fail,
        "`pay` failed and was retried with the same arguments 3 times (at most 2 allowed), at seq 1, 3, 5, 7",
        &[1, 3, 5, 7],
    );
    check(
        &one(json!({"type":"no-retry-spiral","max":3}), &run(&spiral)),
        Verdict::Pass,
        "more than 3 time(s)",
        &[],
    );
    // A change of arguments ends the streak; so does a success, or a user turn in between.
    let changed = [
        call("c1", "pay", r#"{"id":7}"#),
        result("c1", false),
        call("c2", "pay", r#"{"id":7}"#),
        result("c2", false),
        call("c3", "pay", r#"{"id":8}"#),
        result("c3", false),
        call("c4", "pay", r#"{"id":8}"#),
        result("c4", false),
        r#"{"kind":"user_message","prompt":{"h":"b3:7d0c2f5be3a8e1a06f1d9d6f2f4f0f2b6b4d6a1c3e5f7a9b1c3d5e7f9a1b3c5d","len":5}}"#.to_owned(),
        call("c5", "pay", r#"{"id":8}"#),
        result("c5", false),
    ];
    check(
        &one(json!({"type":"no-retry-spiral","max":1}), &run(&changed)),
        Verdict::Pass,
        "no failed call was retried unchanged more than 1 time(s)",
        &[],
    );
    check(
        &one(json!({"type":"no-retry-spiral","max":0}), &run(&changed)),
        Verdict::Fail,
        "retried with the same arguments 1 times",
        &[1, 3],
    );
    // Failed results written before their calls still count: the spiral cannot hide by order.
    let early = [
        result("c1", false),
        call("c1", "pay", r#"{"id":7}"#),
        result("c2", false),
        call("c2", "pay", r#"{"id":7}"#),
        result("c3", false),
        call("c3", "pay", r#"{"id":7}"#),
        result("c4", false),
        call("c4", "pay", r#"{"id":7}"#),
    ];
    check(
        &one(json!({"type":"no-retry-spiral"}), &run(&early)),
        Verdict::Fail,
        "retried with the same arguments 3 times",
        &[2, 4, 6, 8],
    );
}

#[test]
fn a_claim_of_success_after_another_call_is_no_handling() {
    let o = json!({"type":"tool-errors-handled","success":["refund issued"]});
    // The campaign's false green: the refund fails, another tool is called (and succeeds), and
    // the answer claims the refund.
    let covered = [
        call("c1", "refund", r#"{"order":7}"#),
        result("c1", false),
        call("c2", "lookup_order", r#"{"order":7}"#),
        result("c2", true),
        answer("Refund issued!"),
    ];
    let r = one(o.clone(), &run(&covered));
    check(
        &r,
        Verdict::Fail,
        "the answer at seq 5 claims success (`refund issued`), though no call of `refund` succeeded after it failed",
        &[2, 5],
    );
    // A retry with other arguments that fails does not make the claim true either.
    let retried_badly = [
        call("c1", "refund", r#"{"order":7}"#),
        result("c1", false),
        call("c2", "refund", r#"{"order":7,"force":true}"#),
        result("c2", false),
        answer("Refund issued!"),
    ];
    assert_eq!(one(o.clone(), &run(&retried_badly)).verdict, Verdict::Fail);
    // A retry that succeeds does: the claim is then true.
    let retried = [
        call("c1", "refund", r#"{"order":7}"#),
        result("c1", false),
        call("c2", "lookup_order", r#"{"order":7}"#),
        result("c2", true),
        call("c3", "refund", r#"{"order":7,"force":true}"#),
        result("c3", true),
        answer("Refund issued!"),
    ];
    assert_eq!(one(o.clone(), &run(&retried)).verdict, Verdict::Pass);
    // Zero-width and non-breaking spaces, and full-width letters, hide no phrase.
    for hidden in [
        "Refund\\u200b issued!",
        "Refund\\u00a0issued!",
        "Re\\u200dfund issued",
        "\\uff32efund issued",
    ] {
        let claims = [
            call("c1", "refund", "{}"),
            result("c1", false),
            answer(hidden),
        ];
        assert_eq!(
            one(o.clone(), &run(&claims)).verdict,
            Verdict::Fail,
            "{hidden}"
        );
    }
}

#[test]
fn tool_errors_handled_wants_a_change_of_course_or_an_honest_answer() {
    let other_tool = [
        call("c1", "pay", "{}"),
        result("c1", false),
        call("c2", "refund", "{}"),
    ];
    check(
        &one(json!({"type":"tool-errors-handled"}), &run(&other_tool)),
        Verdict::Pass,
        "each of the 1 failed call(s) was handled",
        &[2],
    );
    // An unchanged retry that succeeds handles it; one that fails hands it on.
    let retried = [
        call("c1", "pay", "{}"),
        result("c1", false),
        call("c2", "pay", "{}"),
        result("c2", true),
    ];
    assert_eq!(
        one(json!({"type":"tool-errors-handled"}), &run(&retried)).verdict,
        Verdict::Pass
    );
    let silent = [call("c1", "pay", "{}"), result("c1", false)];
    let r = one(json!({"type":"tool-errors-handled"}), &run(&silent));
    check(
        &r,
        Verdict::Fail,
        "1 of 1 failed call(s) went unhandled; the first, `pay` at seq 1: nothing followed it",
        &[2],
    );
    assert_eq!(r.score, 0.0);
    // An answer claiming success, with the configured phrases.
    let claims = [
        call("c1", "pay", "{}"),
        result("c1", false),
        answer("Payment done!"),
    ];
    let o = json!({"type":"tool-errors-handled","success":["payment done"]});
    check(
        &one(o.clone(), &run(&claims)),
        Verdict::Fail,
        "the answer at seq 3 claims success (`payment done`)",
        &[2, 3],
    );
    // Without phrases, an answer is enough; an honest one passes with them.
    assert_eq!(
        one(json!({"type":"tool-errors-handled"}), &run(&claims)).verdict,
        Verdict::Pass
    );
    let honest = [
        call("c1", "pay", "{}"),
        result("c1", false),
        answer("The payment failed."),
    ];
    assert_eq!(one(o, &run(&honest)).verdict, Verdict::Pass);
    // A call of the same batch made before the failure came back is not a reaction to it.
    let batch = [
        call("c1", "pay", "{}"),
        call("c2", "log", "{}"),
        result("c1", false),
        result("c2", true),
    ];
    assert_eq!(
        one(json!({"type":"tool-errors-handled"}), &run(&batch)).verdict,
        Verdict::Fail
    );
    check(
        &one(json!({"type":"tool-errors-handled"}), &[END]),
        Verdict::Pass,
        "no tool call failed",
        &[],
    );
    assert!(
        one(
            json!({"type":"tool-errors-handled","success":[" "]}),
            &[END]
        )
        .misconfigured
    );
}

#[test]
fn step_status_wants_every_call_of_the_named_tools_to_end_ok() {
    let lines = [
        call("c1", "db_read", "{}"),
        result("c1", true),
        call("c2", "db_write", "{}"),
        result("c2", false),
        call("c3", "db_write", r#"{"x":1}"#),
    ];
    let r = one(json!({"type":"step-status","tools":["db_*"]}), &run(&lines));
    check(
        &r,
        Verdict::Fail,
        "2 of 3 call(s) of `db_*` did not end ok (at most 0 allowed); the first, `db_write` at seq 3, failed",
        &[4, 5],
    );
    assert!((r.score - 1.0 / 3.0).abs() < 1e-9);
    check(
        &one(
            json!({"type":"step-status","tools":["db_*"],"max_errors":2}),
            &run(&lines),
        ),
        Verdict::Pass,
        "1 of 3 call(s) of `db_*` ended ok (2 error(s), at most 2 allowed)",
        &[4, 5],
    );
    check(
        &one(json!({"type":"step-status","tool":"db_read"}), &run(&lines)),
        Verdict::Pass,
        "1 of 1 call(s) of `db_read` ended ok",
        &[],
    );
    assert!(one(json!({"type":"step-status"}), &[END]).misconfigured);
    assert!(
        one(
            json!({"type":"step-status","tool":"x","max-errors":-1}),
            &[END]
        )
        .misconfigured
    );
}

#[test]
fn behaviour_oracles_compose() {
    let lines = [call("c1", "pay", "{}"), result("c1", false)];
    let not = json!({"type":"not","oracle":{"type":"tool-errors-handled"}});
    assert_eq!(one(not, &run(&lines)).verdict, Verdict::Pass);
    let all = json!({"type":"all-of","oracles":[
        {"type":"no-repeated-call"},
        {"type":"step-status","tool":"pay"}
    ]});
    assert_eq!(one(all, &run(&lines)).verdict, Verdict::Fail);
    let any = json!({"type":"any-of","oracles":[
        {"type":"no-retry-spiral"},
        {"type":"step-status","tool":"pay"}
    ]});
    assert_eq!(one(any, &run(&lines)).verdict, Verdict::Pass);
}

/// A hostile run: 30,000 identical calls in one batch, then their 30,000 failed results and an
/// answer. Every oracle looks each call up by binary search and works the retry chains out once,
/// so this is linear work (it was quadratic: minutes, not milliseconds).
#[test]
fn many_failed_calls_stay_linear() {
    let n = 30_000;
    let mut lines: Vec<String> = (0..n)
        .map(|i| call(&format!("c{i}"), "pay", "{}"))
        .collect();
    lines.extend((0..n).map(|i| result(&format!("c{i}"), false)));
    lines.push(answer("All done."));
    let events = run(&lines);
    let started = std::time::Instant::now();
    for o in [
        json!({"type":"no-repeated-call"}),
        json!({"type":"no-retry-spiral"}),
        json!({"type":"tool-errors-handled","success":["done"]}),
        json!({"type":"step-status","tool":"pay"}),
    ] {
        assert_eq!(one(o, &events).verdict, Verdict::Fail);
    }
    // Not a timing assertion: a generous bound that only a quadratic walk would break.
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}
