//! Shared by the per-peer test files: the documented examples of the evaluators teams migrate from, written down by hand as
//! tracereplay oracles and traces, each with the peer's stated result: tracereplay must agree.
//! The migration guide (`docs/coming-from.md`) maps every metric and assertion; these are its
//! worked examples.

use serde_json::{Value, json};

use super::test_support::one;
use super::{OracleResult, Verdict};

pub(super) fn call(id: &str, tool: &str, args: Value) -> String {
    json!({"kind": "tool_call", "call_id": id, "tool": tool, "args": args}).to_string()
}

pub(super) fn user(n: u8) -> String {
    format!(r#"{{"kind":"user_message","prompt":{{"h":"b3:{n:064x}","len":12}}}}"#)
}

pub(super) fn answer(text: &str) -> String {
    json!({"kind": "final_answer", "text": text}).to_string()
}

pub(super) const END: &str = r#"{"kind":"run_end","status":"completed"}"#;

pub(super) fn judge(oracle: Value, events: &[String]) -> OracleResult {
    let mut lines: Vec<&str> = events.iter().map(String::as_str).collect();
    lines.push(END);
    let r = one(oracle, &lines);
    assert!(!r.misconfigured, "{}", r.message);
    r
}

pub(super) fn agrees(r: &OracleResult, passes: bool, score: f64) {
    assert_eq!(r.verdict == Verdict::Pass, passes, "{}", r.message);
    assert!(
        (r.score - score).abs() < 1e-9,
        "score {} != {score}: {}",
        r.score,
        r.message
    );
}

mod adk;
mod agentevals;
mod deepeval;
mod promptfoo;
