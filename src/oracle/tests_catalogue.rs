//! A passing and a failing case for every oracle of the full catalogue, asserting message and
//! evidence, plus Harness Contracts.

use serde_json::json;

use super::tests::judge_events;
use super::*;

fn one(oracle: serde_json::Value, events: &[&str]) -> OracleResult {
    judge_events(json!({"oracles": [oracle]}), events).remove(0)
}

fn check(r: &OracleResult, verdict: Verdict, message: &str, evidence: &[u64]) {
    assert_eq!(r.verdict, verdict, "{}", r.message);
    assert!(
        r.message.contains(message),
        "`{}` does not contain `{message}`",
        r.message
    );
    assert_eq!(r.evidence, evidence, "{}", r.message);
}

const END: &str = r#"{"kind":"run_end","status":"completed"}"#;
const PLAN: &str = r#"{"kind":"inference","output":{"tool_calls":[{"call_id":"c1","tool":"read","args":{"path":"a.md"}}]},"usage":{"input_tokens":100,"output_tokens":10},"tools_offered":["read","write"]}"#;
const CALL: &str =
    r#"{"kind":"tool_call","call_id":"c1","tool":"read","args":{"path":"a.md","limit":5}}"#;
const RESULT_OK: &str = r#"{"kind":"tool_result","call_id":"c1","ok":true,"output":"Alpha\nBeta"}"#;
const RESULT_BAD: &str =
    r#"{"kind":"tool_result","call_id":"c1","ok":true,"error":"partial read"}"#;
const CONSUME: &str = r#"{"kind":"inference","consumes":["c1"],"output":{"text":"done"},"usage":{"input_tokens":50,"output_tokens":5},"tools_offered":["write","READ"]}"#;

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

#[test]
fn counts() {
    check(
        &one(
            json!({"type":"request-count","count":2}),
            &[PLAN, CONSUME, END],
        ),
        Verdict::Pass,
        "2 model request(s)",
        &[1, 2],
    );
    check(
        &one(
            json!({"type":"request-count","min":3}),
            &[PLAN, CONSUME, END],
        ),
        Verdict::Fail,
        "2 model request(s), outside",
        &[1, 2],
    );
    check(
        &one(
            json!({"type":"step-count","kind":"TOOL-CALL","count":1}),
            &[CALL, END],
        ),
        Verdict::Pass,
        "1 `TOOL-CALL` event(s)",
        &[1],
    );
    check(
        &one(
            json!({"type":"step-count","kind":"runEnd","max":0}),
            &[CALL, END],
        ),
        Verdict::Fail,
        "1 `runEnd` event(s), outside",
        &[2],
    );
    assert!(one(json!({"type":"request-count","count":1,"max":2}), &[END]).misconfigured);
    assert!(one(json!({"type":"request-count"}), &[END]).misconfigured);
    assert!(one(json!({"type":"step-count","count":1}), &[END]).misconfigured);
}

const PREVIEW: &str = r#"{"kind":"message","id":"m1","phase":"preview","text":"working"}"#;
const FINAL: &str =
    r#"{"kind":"message","id":"m2","phase":"final","text":"Done: wrote it","ts_ms":2000}"#;
const DELETE_PREVIEW: &str = r#"{"kind":"message_delete","id":"m1"}"#;

#[test]
fn message_count() {
    check(
        &one(
            json!({"type":"message-count","count":1}),
            &[PREVIEW, FINAL, END],
        ),
        Verdict::Pass,
        "1 standing `final` message(s)",
        &[2],
    );
    check(
        &one(
            json!({"type":"message-count","phase":"preview","value":"WORK","count":0}),
            &[PREVIEW, FINAL, END],
        ),
        Verdict::Fail,
        "1 standing `preview` message(s) containing `WORK`",
        &[1],
    );
    check(
        &one(
            json!({"type":"message-count","phase":"preview","count":0}),
            &[PREVIEW, DELETE_PREVIEW, END],
        ),
        Verdict::Pass,
        "0 standing",
        &[],
    );
}

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

#[test]
fn max_tokens() {
    check(
        &one(
            json!({"type":"max-tokens","limit":165}),
            &[PLAN, CONSUME, END],
        ),
        Verdict::Pass,
        "165 total tokens, limit 165",
        &[1, 2],
    );
    check(
        &one(
            json!({"type":"max-tokens","limit":100,"kind":"input"}),
            &[PLAN, CONSUME, END],
        ),
        Verdict::Fail,
        "150 input tokens exceed the limit of 100",
        &[1, 2],
    );
    check(
        &one(
            json!({"type":"max-tokens","limit":10,"kind":"output"}),
            &[PLAN, END],
        ),
        Verdict::Pass,
        "10 output tokens",
        &[1],
    );
    let no_usage = r#"{"kind":"inference"}"#;
    check(
        &one(
            json!({"type":"max-tokens","limit":10}),
            &[PLAN, no_usage, END],
        ),
        Verdict::NotEvaluable,
        "1 inference(s) lack `usage`",
        &[2],
    );
    check(
        &one(json!({"type":"max-tokens","limit":0}), &[END]),
        Verdict::Pass,
        "0 total tokens",
        &[],
    );
}

#[test]
fn tools_offered() {
    check(
        &one(
            json!({"type":"tools-offered","tools":["READ","write"]}),
            &[PLAN, CONSUME, END],
        ),
        Verdict::Pass,
        "exactly the",
        &[1, 2],
    );
    check(
        &one(
            json!({"type":"tools-offered","tools":["read"]}),
            &[PLAN, END],
        ),
        Verdict::Fail,
        "the inference at seq 1 offered a different tool set",
        &[1],
    );
    check(
        &one(
            json!({"type":"tools-offered","tools":["read","write","shell"],"mode":"subset"}),
            &[PLAN, END],
        ),
        Verdict::Pass,
        "a subset of the",
        &[1],
    );
    check(
        &one(
            json!({"type":"tools-offered","tools":["read","write","shell"]}),
            &[PLAN, END],
        ),
        Verdict::Fail,
        "different tool set",
        &[1],
    );
    let bare = r#"{"kind":"inference"}"#;
    check(
        &one(
            json!({"type":"tools-offered","tools":["read"]}),
            &[bare, END],
        ),
        Verdict::NotEvaluable,
        "lack `tools_offered`",
        &[1],
    );
    check(
        &one(json!({"type":"tools-offered","tools":["read"]}), &[END]),
        Verdict::Fail,
        "no inference",
        &[],
    );
}

fn with_contract(contract: &serde_json::Value, events: &[&str]) -> OracleResult {
    let dir = tempfile::tempdir().unwrap();
    let root = camino::Utf8PathBuf::from_path_buf(dir.path().to_owned()).unwrap();
    std::fs::write(root.join("plan.contract.json"), contract.to_string()).unwrap();
    std::fs::write(
        root.join("s.scenario.json"),
        json!({"id":"s","title":"t","contract":"plan.contract.json","oracles":[{"type":"contract-conformant"}]}).to_string(),
    )
    .unwrap();
    let scenario = crate::scenario::load_file(&root.join("s.scenario.json"))
        .unwrap()
        .remove(0)
        .unwrap();
    let mut text = String::from(
        r#"{"kind":"header","format":"tracereplay.trace","version":1,"scenario":"s"}"#,
    );
    for (i, e) in events.iter().enumerate() {
        let mut v: serde_json::Value = serde_json::from_str(e).unwrap();
        v["seq"] = json!(i + 1);
        text.push('\n');
        text.push_str(&v.to_string());
    }
    let file = crate::trace::TraceFile::from_bytes("t.trace.ndjson", text.into_bytes(), false);
    let seal = file.verify_seal(false).unwrap();
    let parsed = crate::trace::parse_trace(&file, &seal, crate::trace::Limits::default()).unwrap();
    judge(&scenario, &parsed.trace).remove(0)
}

#[test]
fn contract_conformant() {
    let contract = json!({"id":"plan-1","plannedActions":[
        {"id":"r","toolName":"read_file","actionType":"read","readSet":[{"kind":"directory","path":"docs"}]},
        {"id":"w","toolName":"write_file","actionType":"write","requiresApproval":true,"writeSet":[{"kind":"directory","path":"notes"},{"kind":"file","path":"CHANGELOG.md"}]},
        {"id":"t","toolName":"shell","actionType":"execute"}],
      "verificationPlan":[{"id":"v","kind":"command","command":"cargo test"},{"id":"opt","kind":"command","command":"cargo bench","required":false}]});
    let read =
        r#"{"kind":"tool_call","call_id":"c1","tool":"read_file","args":{"path":"docs/a.md"}}"#;
    let req = r#"{"kind":"approval_request","tool":"write_file","approval_id":"a"}"#;
    let grant = r#"{"kind":"approval_decision","granted":true,"approval_id":"a"}"#;
    let write_ok = r#"{"kind":"tool_call","call_id":"c2","tool":"write_file","args":{"file_path":"./notes/x.md"}}"#;
    let art_ok = r#"{"kind":"artifact","path":"notes/x.md","h":"b3:x","bytes":1}"#;
    let test = r#"{"kind":"tool_call","call_id":"c3","tool":"shell","args":{"command":"cargo test --quiet"}}"#;
    check(
        &with_contract(&contract, &[read, req, grant, write_ok, art_ok, test, END]),
        Verdict::Pass,
        "3 call(s) stayed inside contract `plan-1`",
        &[1, 4, 6],
    );

    let write_out = r#"{"kind":"tool_call","call_id":"c2","tool":"write_file","args":{"path":"notes/../secrets.txt"}}"#;
    let art_out = r#"{"kind":"artifact","path":"secrets.txt","h":"b3:x","bytes":1}"#;
    let push = r#"{"kind":"tool_call","call_id":"c4","tool":"git","args":{"cmd":"push"}}"#;
    let r = with_contract(&contract, &[read, write_out, art_out, push, END]);
    check(&r, Verdict::Fail, "5 contract violation(s)", &[2, 3, 4]);
    let found = r.found.unwrap().to_string();
    for needle in [
        "writes `secrets.txt`, outside its action's write set",
        "`write_file` at seq 2 needs a granted approval before it and had none",
        "artifact `secrets.txt` at seq 3 is outside every write set",
        "`git` at seq 4 is not named by any planned action",
        "required verification step `v` (`cargo test`) never ran",
    ] {
        assert!(found.contains(needle), "{needle} not in {found}");
    }
    // A denied request does not grant; a grant after the call is too late.
    let deny = r#"{"kind":"approval_decision","granted":false,"approval_id":"a"}"#;
    let r = with_contract(&contract, &[req, deny, write_ok, test, END]);
    assert!(
        r.found
            .unwrap()
            .to_string()
            .contains("needs a granted approval")
    );
    let r = with_contract(&contract, &[req, write_ok, grant, test, END]);
    assert_eq!(r.verdict, Verdict::Fail);
    // A contract that does not load is a misconfiguration.
    let bad = with_contract(
        &json!({"plannedActions":[{"toolName":"x","actionType":"teleport"}]}),
        &[END],
    );
    assert!(
        bad.misconfigured && bad.message.contains("`actionType` is `teleport`"),
        "{}",
        bad.message
    );
}

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

#[test]
fn unknown_kinds_are_seen_by_no_oracle() {
    // Counting a kind the format does not define could only ever find 0, so naming one (a
    // typo such as `tool_cal`) is a misconfiguration, never a pass.
    let unknown = r#"{"kind":"telemetry","text":"x"}"#;
    let call = r#"{"kind":"tool_call","call_id":"c1","tool":"deploy","args":{}}"#;
    for (kind, says) in [
        (
            "telemetry",
            "`kind` `telemetry` is not an event kind of the trace format",
        ),
        ("tool_cal", "did you mean `tool_call`?"),
    ] {
        let r = one(
            json!({"type":"step-count","kind":kind,"max":0}),
            &[unknown, call, END],
        );
        assert_eq!(r.verdict, Verdict::Fail, "{kind}");
        assert!(r.misconfigured && r.message.contains(says), "{}", r.message);
    }
}
