//! What the oracle families' tests share: judging event lines against a scenario, and the
//! events they use.

use serde_json::json;

pub(super) use super::tests::judge_events;
use super::*;

/// The verdict of one oracle on `events`.
pub(super) fn one(oracle: serde_json::Value, events: &[&str]) -> OracleResult {
    judge_events(json!({"oracles": [oracle]}), events).remove(0)
}

pub(super) fn check(r: &OracleResult, verdict: Verdict, message: &str, evidence: &[u64]) {
    assert_eq!(r.verdict, verdict, "{}", r.message);
    assert!(
        r.message.contains(message),
        "`{}` does not contain `{message}`",
        r.message
    );
    assert_eq!(r.evidence, evidence, "{}", r.message);
}

pub(super) const END: &str = r#"{"kind":"run_end","status":"completed"}"#;
pub(super) const PLAN: &str = r#"{"kind":"inference","output":{"tool_calls":[{"call_id":"c1","tool":"read","args":{"path":"a.md"}}]},"usage":{"input_tokens":100,"output_tokens":10},"tools_offered":["read","write"]}"#;
pub(super) const CALL: &str =
    r#"{"kind":"tool_call","call_id":"c1","tool":"read","args":{"path":"a.md","limit":5}}"#;
pub(super) const RESULT_OK: &str =
    r#"{"kind":"tool_result","call_id":"c1","ok":true,"output":"Alpha\nBeta"}"#;
pub(super) const RESULT_BAD: &str =
    r#"{"kind":"tool_result","call_id":"c1","ok":true,"error":"partial read"}"#;
pub(super) const CONSUME: &str = r#"{"kind":"inference","consumes":["c1"],"output":{"text":"done"},"usage":{"input_tokens":50,"output_tokens":5},"tools_offered":["write","READ"]}"#;
pub(super) const PREVIEW: &str =
    r#"{"kind":"message","id":"m1","phase":"preview","text":"working"}"#;
pub(super) const FINAL: &str =
    r#"{"kind":"message","id":"m2","phase":"final","text":"Done: wrote it","ts_ms":2000}"#;
pub(super) const DELETE_PREVIEW: &str = r#"{"kind":"message_delete","id":"m1"}"#;
