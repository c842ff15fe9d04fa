//! Tests of the artifact oracles (`artifacts.rs`): a passing and a failing case for each,
//! asserting message and evidence.

use serde_json::json;

use super::test_support::*;
use super::*;

#[test]
fn artifacts() {
    let art = r#"{"kind":"artifact","path":"./out\\status.txt","h":"b3:x","bytes":5,"text":"Status: DONE","mtime_ms":1500}"#;
    let late = r#"{"kind":"artifact","path":"out/status.txt","h":"b3:x","bytes":5,"text":"Status","mtime_ms":2500}"#;
    let untexted = r#"{"kind":"artifact","path":"out/status.txt","h":"b3:x","bytes":5}"#;
    let contains = |vals: serde_json::Value| json!({"type":"artifact-contains","path":"out/status.txt","values":vals});
    check(
        &one(contains(json!(["status:", "done"])), &[art, END]),
        Verdict::Pass,
        "`out/status.txt` contains every value",
        &[1],
    );
    check(
        &one(contains(json!(["done"])), &[art, late, END]),
        Verdict::Fail,
        "`out/status.txt` lacks `done`",
        &[2],
    );
    check(
        &one(contains(json!(["x"])), &[END]),
        Verdict::Fail,
        "no artifact at `out/status.txt`",
        &[],
    );
    check(
        &one(contains(json!(["x"])), &[untexted, END]),
        Verdict::NotEvaluable,
        "without `text`",
        &[1],
    );
    let before = json!({"type":"artifact-before-reply","path":"out/status.txt"});
    check(
        &one(before.clone(), &[art, FINAL, END]),
        Verdict::Pass,
        "before every final reply",
        &[1, 2],
    );
    check(
        &one(before.clone(), &[late, FINAL, END]),
        Verdict::Fail,
        "the final message `m2` (seq 2) was sent before",
        &[1, 2],
    );
    check(
        &one(before.clone(), &[untexted, FINAL, END]),
        Verdict::NotEvaluable,
        "has no `mtime_ms`",
        &[1],
    );
    let untimed = r#"{"kind":"message","id":"m3","phase":"final","text":"x"}"#;
    check(
        &one(before.clone(), &[art, untimed, END]),
        Verdict::NotEvaluable,
        "lack `ts_ms`",
        &[2],
    );
    check(
        &one(before, &[art, END]),
        Verdict::Fail,
        "no final message stands",
        &[1],
    );
}
