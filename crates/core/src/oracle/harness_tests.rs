//! Tests of the harness oracles' messages and evidence (`harness.rs`).

use serde_json::json;

use super::test_support::*;
use super::*;

#[test]
fn harness_oracles_messages_and_evidence() {
    let shell = r#"{"kind":"tool_call","call_id":"s1","tool":"shell","args":{"command":"ls"}}"#;
    let req = r#"{"kind":"approval_request","tool":"shell"}"#;
    let fa = r#"{"kind":"final_answer","text":"Listed the demo files"}"#;
    type Case<'c> = (serde_json::Value, Vec<&'c str>, Verdict, &'c str, Vec<u64>);
    let cases: Vec<Case> = vec![
        (
            json!({"type":"tool-called","tool":"shell"}),
            vec![shell, END],
            Verdict::Pass,
            "called `shell`",
            vec![1],
        ),
        (
            json!({"type":"tool-called","tool":"git"}),
            vec![shell, END],
            Verdict::Fail,
            "`git` never called",
            vec![],
        ),
        (
            json!({"type":"tool-not-called","tool":"git"}),
            vec![shell, END],
            Verdict::Pass,
            "never called `git`",
            vec![],
        ),
        (
            json!({"type":"tool-not-called","tool":"shell"}),
            vec![shell, END],
            Verdict::Fail,
            "forbidden `shell` called at seq 1",
            vec![1],
        ),
        (
            json!({"type":"max-tool-calls","limit":1}),
            vec![shell, END],
            Verdict::Pass,
            "1 tool call(s), limit 1",
            vec![],
        ),
        (
            json!({"type":"max-tool-calls","limit":0}),
            vec![shell, END],
            Verdict::Fail,
            "1 tool calls exceed the limit of 0; the first beyond it is at seq 1",
            vec![1],
        ),
        (
            json!({"type":"final-answer-contains","value":"DEMO"}),
            vec![fa, END],
            Verdict::Pass,
            "final answer contains `DEMO`",
            vec![1],
        ),
        (
            json!({"type":"final-answer-contains","value":"secret"}),
            vec![fa, END],
            Verdict::Fail,
            "final answer lacks `secret`",
            vec![1],
        ),
        (
            json!({"type":"final-answer-not-contains","value":"secret"}),
            vec![fa, END],
            Verdict::Pass,
            "final answer free of `secret`",
            vec![1],
        ),
        (
            json!({"type":"final-answer-not-contains","value":"files"}),
            vec![fa, END],
            Verdict::Fail,
            "final answer contains forbidden `files`",
            vec![1],
        ),
        (
            json!({"type":"approval-required","tool":"shell"}),
            vec![req, shell, END],
            Verdict::Pass,
            "found an approval request for `shell` at seq 1",
            vec![1],
        ),
        (
            json!({"type":"approval-required"}),
            vec![shell, END],
            Verdict::Fail,
            "no approval request",
            vec![],
        ),
        (
            json!({"type":"approval-not-required"}),
            vec![shell, END],
            Verdict::Pass,
            "no approval was requested",
            vec![],
        ),
        (
            json!({"type":"approval-not-required"}),
            vec![req, END],
            Verdict::Fail,
            "approval requested at seq 1",
            vec![1],
        ),
        (
            json!({"type":"no-unsafe-tool"}),
            vec![req, shell, END],
            Verdict::Pass,
            "every unsafe call was covered",
            vec![1, 2],
        ),
        (
            json!({"type":"no-unsafe-tool"}),
            vec![shell, END],
            Verdict::Fail,
            "`shell` at seq 1",
            vec![1],
        ),
        (
            json!({"type":"status-is","value":"completed"}),
            vec![END],
            Verdict::Pass,
            "run status is `completed`",
            vec![1],
        ),
        (
            json!({"type":"status-is","value":"failed"}),
            vec![END],
            Verdict::Fail,
            "run status is `completed`, not `failed`",
            vec![1],
        ),
    ];
    for (oracle, events, verdict, message, evidence) in cases {
        check(&one(oracle, &events), verdict, message, &evidence);
    }
}
