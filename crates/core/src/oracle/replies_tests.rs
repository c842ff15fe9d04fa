//! Tests of the oracles about what reached the user (`replies.rs`): a passing and a failing
//! case for each, asserting message and evidence.

use serde_json::json;

use super::test_support::*;
use super::*;

#[test]
fn no_preview_left() {
    check(
        &one(
            json!({"type":"no-preview-left"}),
            &[PREVIEW, DELETE_PREVIEW, FINAL, END],
        ),
        Verdict::Pass,
        "1 preview(s), all deleted or promoted",
        &[1],
    );
    check(
        &one(json!({"type":"no-preview-left"}), &[PREVIEW, FINAL, END]),
        Verdict::Fail,
        "1 preview(s) left standing, the first sent at seq 1",
        &[1],
    );
    // A deletion after the run ended comes too late.
    check(
        &one(
            json!({"type":"no-preview-left"}),
            &[PREVIEW, END, DELETE_PREVIEW],
        ),
        Verdict::Fail,
        "left standing",
        &[1],
    );
    let promote = r#"{"kind":"message_edit","id":"m1","text":"final","phase":"final"}"#;
    check(
        &one(
            json!({"type":"no-preview-left","require":true}),
            &[PREVIEW, promote, END],
        ),
        Verdict::Pass,
        "all deleted or promoted",
        &[1],
    );
    check(
        &one(
            json!({"type":"no-preview-left","require":true}),
            &[FINAL, END],
        ),
        Verdict::Fail,
        "no preview was sent",
        &[],
    );
    check(
        &one(json!({"type":"no-preview-left"}), &[FINAL, END]),
        Verdict::Pass,
        "0 preview(s)",
        &[],
    );
}

#[test]
fn final_after_tool() {
    let write = r#"{"kind":"tool_call","call_id":"w","tool":"write","args":{}}"#;
    let ok = r#"{"kind":"tool_result","call_id":"w","ok":true}"#;
    let bad = r#"{"kind":"tool_result","call_id":"w","ok":false,"error":"disk full"}"#;
    let o = json!({"type":"final-after-tool","tool":"write","value":"done:"});
    check(
        &one(o.clone(), &[PREVIEW, write, ok, FINAL, END]),
        Verdict::Pass,
        "nothing matching was sent before `write` succeeded at seq 3",
        &[3],
    );
    check(
        &one(o.clone(), &[write, FINAL, ok, END]),
        Verdict::Fail,
        "message `m2` at seq 2 came before `write` first succeeded at seq 3",
        &[2, 3],
    );
    check(
        &one(o.clone(), &[write, bad, FINAL, END]),
        Verdict::Fail,
        "`write` never succeeded",
        &[],
    );
    // The preview does not contain the value, so it may come first; with phase preview and no value it may not.
    check(
        &one(
            json!({"type":"final-after-tool","tool":"write","phase":"preview"}),
            &[PREVIEW, write, ok, END],
        ),
        Verdict::Fail,
        "message `m1` at seq 1",
        &[1, 3],
    );
}

#[test]
fn final_answer_matches() {
    let fa = r#"{"kind":"final_answer","text":"Order A-1187 refunded"}"#;
    check(
        &one(
            json!({"type":"final-answer-matches","pattern":"A-\\d{4}"}),
            &[fa, END],
        ),
        Verdict::Pass,
        "matches `A-\\d{4}`",
        &[1],
    );
    check(
        &one(
            json!({"type":"final-answer-matches","pattern":"^refunded"}),
            &[fa, END],
        ),
        Verdict::Fail,
        "does not match",
        &[1],
    );
    check(
        &one(
            json!({"type":"final-answer-matches","pattern":"(?i)ORDER"}),
            &[fa, END],
        ),
        Verdict::Pass,
        "matches",
        &[1],
    );
    check(
        &one(json!({"type":"final-answer-matches","pattern":"x"}), &[END]),
        Verdict::Fail,
        "no final answer",
        &[],
    );
    let bad = one(
        json!({"type":"final-answer-matches","pattern":"(unclosed"}),
        &[fa, END],
    );
    assert!(
        bad.misconfigured && bad.message.contains("not a valid regular expression"),
        "{}",
        bad.message
    );
}
