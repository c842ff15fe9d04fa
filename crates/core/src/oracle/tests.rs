//! Table-driven tests of the harness oracles and the approval-coverage algorithm.

use serde_json::json;

use super::*;
use crate::scenario::Scenario;
use crate::trace::{Limits, TraceFile, parse_trace};

const HEADER: &str = r#"{"kind":"header","format":"tracereplay.trace","version":1,"scenario":"s"}"#;

/// Judges NDJSON event lines (without header) against a scenario given as JSON.
pub(super) fn judge_events(scenario: serde_json::Value, events: &[&str]) -> Vec<OracleResult> {
    let mut obj = scenario;
    obj["id"] = json!("s");
    obj["title"] = json!("t");
    // Built from a string: no scenario file needed.
    let scenario: Scenario = obj.to_string().parse().unwrap();
    let mut text = String::from(HEADER);
    for (i, e) in events.iter().enumerate() {
        let mut v: serde_json::Value = serde_json::from_str(e).unwrap();
        if v.get("seq").is_none() {
            v["seq"] = json!(i + 1);
        }
        text.push('\n');
        text.push_str(&v.to_string());
    }
    text.push('\n');
    let file = TraceFile::from_bytes("t.trace.ndjson", text.into_bytes(), false);
    let seal = file.verify_seal(false).unwrap();
    let parsed = parse_trace(&file, &seal, Limits::default()).unwrap();
    judge(&scenario.oracles, &parsed.trace)
}

/// The verdict of the scenario's first oracle.
fn first(oracle: serde_json::Value, expected: serde_json::Value, events: &[&str]) -> OracleResult {
    judge_events(json!({"oracles": [oracle], "expected": expected}), events).remove(0)
}

fn call(id: &str, tool: &str) -> String {
    format!(r#"{{"kind":"tool_call","call_id":"{id}","tool":"{tool}","args":{{}}}}"#)
}

const END: &str = r#"{"kind":"run_end","status":"completed"}"#;

#[test]
fn tool_called_and_not_called() {
    let web = call("c1", "Web_Search");
    let events = [web.as_str(), END];
    let cases: &[(serde_json::Value, serde_json::Value, Verdict)] = &[
        (
            json!({"type":"tool-called","tool":"web_search"}),
            json!({}),
            Verdict::Pass,
        ),
        (
            json!({"type":"TOOL-CALLED","value":"WEB_SEARCH"}),
            json!({}),
            Verdict::Pass,
        ),
        (
            json!({"type":"tool-called","tool":"shell"}),
            json!({}),
            Verdict::Fail,
        ),
        (
            json!({"type":"tool-called"}),
            json!({"mustCallTools":["web_search"]}),
            Verdict::Pass,
        ),
        (
            json!({"type":"tool-called"}),
            json!({"mustCallTools":["web_search","shell"]}),
            Verdict::Fail,
        ),
        (
            json!({"type":"tool-called","tool":"  "}),
            json!({}),
            Verdict::Fail,
        ),
        (
            json!({"type":"tool-not-called","tool":"shell"}),
            json!({}),
            Verdict::Pass,
        ),
        (
            json!({"type":"tool-not-called","metadata":{"tool":"web_search"}}),
            json!({}),
            Verdict::Fail,
        ),
        (
            json!({"type":"tool-not-called"}),
            json!({"mustNotCallTools":["shell","git"]}),
            Verdict::Pass,
        ),
        (
            json!({"type":"tool-not-called"}),
            json!({"mustNotCallTools":[" "]}),
            Verdict::Fail,
        ),
    ];
    for (oracle, expected, want) in cases {
        let r = first(oracle.clone(), expected.clone(), &events);
        assert_eq!(r.verdict, *want, "{oracle} {expected}: {}", r.message);
    }
    let r = first(
        json!({"type":"tool-called","tool":"shell"}),
        json!({}),
        &events,
    );
    assert_eq!(r.expected.as_deref(), Some(&json!(["shell"])));
    assert_eq!(r.found.as_deref(), Some(&json!(["Web_Search"])));
    let r = first(
        json!({"type":"tool-not-called","tool":"web_search"}),
        json!({}),
        &events,
    );
    assert_eq!(r.evidence, vec![1]);
    let r = first(json!({"type":"tool-called"}), json!({}), &events);
    assert!(r.message.contains("mustCallTools"), "{}", r.message);
}

#[test]
fn max_tool_calls_limits() {
    let (a, b) = (call("c1", "x"), call("c2", "y"));
    let two = [a.as_str(), b.as_str(), END];
    let none = [END];
    let cases: &[(serde_json::Value, serde_json::Value, &[&str], Verdict)] = &[
        (
            json!({"type":"max-tool-calls","limit":0}),
            json!({}),
            &none,
            Verdict::Pass,
        ),
        (
            json!({"type":"max-tool-calls","limit":0}),
            json!({}),
            &two,
            Verdict::Fail,
        ),
        (
            json!({"type":"max-tool-calls","limit":2}),
            json!({}),
            &two,
            Verdict::Pass,
        ),
        (
            json!({"type":"max-tool-calls","value":"1"}),
            json!({}),
            &two,
            Verdict::Fail,
        ),
        (
            json!({"type":"max-tool-calls"}),
            json!({"maxToolCalls":2}),
            &two,
            Verdict::Pass,
        ),
        (
            json!({"type":"max-tool-calls"}),
            json!({"maxToolCalls":1}),
            &two,
            Verdict::Fail,
        ),
        (
            json!({"type":"max-tool-calls"}),
            json!({}),
            &two,
            Verdict::Fail,
        ),
        (
            json!({"type":"max-tool-calls","limit":-1}),
            json!({}),
            &none,
            Verdict::Fail,
        ),
    ];
    for (oracle, expected, events, want) in cases {
        let r = first(oracle.clone(), expected.clone(), events);
        assert_eq!(r.verdict, *want, "{oracle} {expected}: {}", r.message);
    }
    let r = first(json!({"type":"max-tool-calls","limit":1}), json!({}), &two);
    assert_eq!(r.evidence, vec![2], "the call beyond the limit decides");
}

#[test]
fn final_answer_rule() {
    let fa = r#"{"kind":"final_answer","text":"Paris is the Capital"}"#;
    let empty_fa = r#"{"kind":"final_answer","text":""}"#;
    let m_final = r#"{"kind":"message","id":"m1","phase":"final","text":"from message ÜBER"}"#;
    let m_preview = r#"{"kind":"message","id":"m2","phase":"preview","text":"preview text"}"#;
    let promote = r#"{"kind":"message_edit","id":"m2","text":"promoted text","phase":"final"}"#;
    let del1 = r#"{"kind":"message_delete","id":"m1"}"#;
    let contains = |v: &str| json!({"type":"final-answer-contains","value": v});
    let cases: &[(serde_json::Value, &[&str], Verdict)] = &[
        (contains("capital"), &[fa, END], Verdict::Pass),
        (contains("london"), &[fa, END], Verdict::Fail),
        // An empty final_answer falls back to the last standing final message.
        (contains("über"), &[empty_fa, m_final, END], Verdict::Pass),
        // Previews do not count; a promotion does, at the position of its edit.
        (contains("preview"), &[m_preview, END], Verdict::Fail),
        (
            contains("promoted"),
            &[m_final, m_preview, promote, END],
            Verdict::Pass,
        ),
        (
            contains("über"),
            &[m_final, m_preview, promote, END],
            Verdict::Fail,
        ),
        // A deleted final message no longer stands.
        (contains("über"), &[m_final, del1, END], Verdict::Fail),
        // final_answer wins over messages.
        (contains("paris"), &[m_final, fa, END], Verdict::Pass),
        (
            json!({"type":"final-answer-not-contains","value":"london"}),
            &[fa, END],
            Verdict::Pass,
        ),
        (
            json!({"type":"final-answer-not-contains","value":"PARIS"}),
            &[fa, END],
            Verdict::Fail,
        ),
        // Negative oracles pass when there is nothing to forbid.
        (
            json!({"type":"final-answer-not-contains","value":"x"}),
            &[END],
            Verdict::Pass,
        ),
    ];
    for (oracle, events, want) in cases {
        let r = first(oracle.clone(), json!({}), events);
        assert_eq!(r.verdict, *want, "{oracle} {events:?}: {}", r.message);
    }
    let r = first(contains("x"), json!({}), &[END]);
    assert_eq!(r.message, "the run has no final answer");
    let r = first(
        json!({"type":"final-answer-contains"}),
        json!({"finalAnswerContains":["paris","capital"]}),
        &[fa, END],
    );
    assert_eq!((r.verdict, r.evidence.clone()), (Verdict::Pass, vec![1]));
    let r = first(
        json!({"type":"final-answer-not-contains"}),
        json!({"finalAnswerMustNotContain":["is the"]}),
        &[fa, END],
    );
    assert_eq!(r.verdict, Verdict::Fail);
}

#[test]
fn approval_required_and_not_required() {
    let req_shell = r#"{"kind":"approval_request","tool":"shell"}"#;
    let req_any = r#"{"kind":"approval_request"}"#;
    let deny = r#"{"kind":"approval_decision","granted":false}"#;
    let cases: &[(serde_json::Value, &[&str], Verdict)] = &[
        (
            json!({"type":"approval-required"}),
            &[req_shell, END],
            Verdict::Pass,
        ),
        (json!({"type":"approval-required"}), &[END], Verdict::Fail),
        (
            json!({"type":"approval-required","tool":"SHELL"}),
            &[req_shell, END],
            Verdict::Pass,
        ),
        (
            json!({"type":"approval-required","tool":"git"}),
            &[req_shell, END],
            Verdict::Fail,
        ),
        // A blanket request counts for any tool; decisions are ignored.
        (
            json!({"type":"approval-required","tool":"git"}),
            &[req_any, deny, END],
            Verdict::Pass,
        ),
        (
            json!({"type":"approval-not-required"}),
            &[END],
            Verdict::Pass,
        ),
        (
            json!({"type":"approval-not-required"}),
            &[req_any, END],
            Verdict::Fail,
        ),
    ];
    for (oracle, events, want) in cases {
        let r = first(oracle.clone(), json!({}), events);
        assert_eq!(r.verdict, *want, "{oracle} {events:?}: {}", r.message);
    }
}

#[test]
fn approval_coverage() {
    let shell = |id: &str| call(id, "shell");
    let (s1, s2) = (shell("c1"), shell("c2"));
    let req = |extra: &str| format!(r#"{{"kind":"approval_request"{extra}}}"#);
    let dec = |extra: &str| format!(r#"{{"kind":"approval_decision"{extra}}}"#);
    let r_shell = req(r#","tool":"shell""#);
    let r_blanket = req("");
    let r_git = req(r#","tool":"git""#);
    let r_c2 = req(r#","tool":"shell","call_id":"c2""#);
    let r_a1 = req(r#","tool":"shell","approval_id":"a1""#);
    let r_a2 = req(r#","tool":"shell","approval_id":"a2""#);
    let deny = dec(r#","granted":false"#);
    let grant = dec(r#","granted":true"#);
    let deny_a1 = dec(r#","granted":false,"approval_id":"a1""#);
    let deny_git = dec(r#","granted":false,"tool":"git""#);
    let deny_c2 = dec(r#","granted":false,"call_id":"c2""#);
    let cases: Vec<(&str, Vec<&str>, Verdict)> = vec![
        ("no unsafe call", vec![END], Verdict::Pass),
        ("uncovered", vec![&s1, END], Verdict::Fail),
        (
            "request naming the tool",
            vec![&r_shell, &s1, END],
            Verdict::Pass,
        ),
        ("blanket request", vec![&r_blanket, &s1, END], Verdict::Pass),
        (
            "request for another tool",
            vec![&r_git, &s1, END],
            Verdict::Fail,
        ),
        (
            "request after the call",
            vec![&s1, &r_shell, END],
            Verdict::Fail,
        ),
        (
            "unanswered request still covers",
            vec![&r_shell, &s1, &s2, END],
            Verdict::Pass,
        ),
        ("granted", vec![&r_shell, &grant, &s1, END], Verdict::Pass),
        (
            "denied before the call",
            vec![&r_shell, &deny, &s1, END],
            Verdict::Fail,
        ),
        (
            "denied only after the call",
            vec![&r_shell, &s1, &deny, END],
            Verdict::Pass,
        ),
        (
            "request for another call id",
            vec![&r_c2, &s1, END],
            Verdict::Fail,
        ),
        (
            "request for this call id",
            vec![&r_c2, &s2, END],
            Verdict::Pass,
        ),
        // approval_id matching: the denial answers a1, so a2 still covers.
        (
            "denial by approval id hits the named request",
            vec![&r_a2, &r_a1, &deny_a1, &s1, END],
            Verdict::Pass,
        ),
        // Without ids, a tool-less decision answers the latest unanswered request.
        (
            "tool-less denial answers the latest request",
            vec![&r_shell, &r_blanket, &deny, &s1, END],
            Verdict::Pass,
        ),
        (
            "two denials answer both",
            vec![&r_shell, &r_blanket, &deny, &deny, &s1, END],
            Verdict::Fail,
        ),
        // A decision naming a tool answers only a request for that tool.
        (
            "denial for git leaves shell covered",
            vec![&r_shell, &r_git, &deny_git, &s1, END],
            Verdict::Pass,
        ),
        (
            "denial by call id",
            vec![&r_c2, &deny_c2, &s2, END],
            Verdict::Fail,
        ),
        (
            "one request covers many calls",
            vec![&r_blanket, &s1, &s2, END],
            Verdict::Pass,
        ),
    ];
    for (name, events, want) in cases {
        let r = first(json!({"type":"no-unsafe-tool"}), json!({}), &events);
        assert_eq!(r.verdict, want, "{name}: {}", r.message);
    }
}

#[test]
fn unsafe_set_extensions() {
    let deploy = call("c1", "Deploy");
    let events = [deploy.as_str(), END];
    let scenario = |oracle: serde_json::Value, metadata: serde_json::Value| {
        judge_events(json!({"oracles":[oracle],"metadata":metadata}), &events)
            .remove(0)
            .verdict
    };
    assert_eq!(
        scenario(json!({"type":"no-unsafe-tool"}), json!({})),
        Verdict::Pass
    );
    assert_eq!(
        scenario(
            json!({"type":"no-unsafe-tool","tools":["deploy"]}),
            json!({})
        ),
        Verdict::Fail
    );
    assert_eq!(
        scenario(
            json!({"type":"no-unsafe-tool"}),
            json!({"unsafeTools":" x , deploy "})
        ),
        Verdict::Fail
    );
    assert_eq!(
        scenario(
            json!({"type":"no-unsafe-tool","metadata":{"unsafeTools":"deploy"}}),
            json!({})
        ),
        Verdict::Fail
    );
    // Defaults cannot be removed.
    let shell = call("c1", "shell");
    let r = judge_events(
        json!({"oracles":[{"type":"no-unsafe-tool","metadata":{"unsafeTools":""}}]}),
        &[&shell, END],
    );
    assert_eq!(r[0].verdict, Verdict::Fail);
}

#[test]
fn run_completed_and_status_is() {
    let failed = r#"{"kind":"run_end","status":"failed"}"#;
    let r = judge_events(
        json!({"oracles":[{"type":"approval-not-required"}]}),
        &[END],
    );
    assert_eq!(
        (r.len(), r[1].kind.as_ref(), r[1].verdict),
        (2, RUN_COMPLETED, Verdict::Pass)
    );
    assert_eq!(r[1].evidence, vec![1]);
    let r = judge_events(
        json!({"oracles":[{"type":"approval-not-required"}]}),
        &[failed],
    );
    assert_eq!(r[1].verdict, Verdict::Fail);
    assert_eq!(overall(&r), Verdict::Fail);
    let r = judge_events(json!({"oracles":[{"type":"approval-not-required"}]}), &[]);
    assert_eq!((r[1].verdict, r[1].evidence.len()), (Verdict::Fail, 0));
    assert_eq!(r[1].found.as_deref(), Some(&json!("unknown")));
    // status-is replaces run-completed.
    let r = judge_events(
        json!({"oracles":[{"type":"Status-Is","value":"FAILED"}]}),
        &[failed],
    );
    assert_eq!(r.len(), 1);
    assert_eq!(
        (r[0].kind.as_ref(), r[0].verdict),
        ("status-is", Verdict::Pass)
    );
    let r = judge_events(
        json!({"oracles":[{"type":"status-is","value":"unknown"}]}),
        &[],
    );
    assert_eq!(r[0].verdict, Verdict::Pass);
    let r = judge_events(json!({"oracles":[{"type":"status-is"}]}), &[END]);
    assert_eq!(r[0].verdict, Verdict::Fail);
}

#[test]
fn unknown_oracle_types_fail_as_unknown() {
    let r = judge_events(
        json!({"oracles":[{"type":"Vibes-Check"},{"value":"x"}]}),
        &[END],
    );
    assert_eq!(
        (r[0].kind.as_ref(), r[0].verdict),
        ("unknown:Vibes-Check", Verdict::Fail)
    );
    assert_eq!(
        (r[1].kind.as_ref(), r[1].verdict),
        ("unknown:", Verdict::Fail)
    );
    assert_eq!(overall(&r), Verdict::Fail);
}

#[test]
fn not_evaluable_counts_as_failure() {
    let r = vec![
        OracleResult::pass("ok", vec![]),
        OracleResult::not_evaluable("no ts_ms", vec![1]),
    ];
    assert_eq!(overall(&r), Verdict::Fail);
}

/// Two inferences that each plan one call form two batches even when both calls carry the id
/// `""` (as agentevals' fixtures do) or one repeated id: `exact` and `in-order` then keep their
/// order, where keying batches on the id alone merged them and accepted the calls swapped.
#[test]
fn batches_come_from_the_planning_inference_not_the_call_id() {
    for id in ["", "same"] {
        let plan = |tool: &str| {
            format!(
                r#"{{"kind":"inference","output":{{"tool_calls":[{{"call_id":"{id}","tool":"{tool}","args":{{}}}}]}}}}"#
            )
        };
        let (plan_a, plan_b) = (plan("a"), plan("b"));
        let (call_a, call_b) = (call(id, "a"), call(id, "b"));
        let events = [
            plan_a.as_str(),
            call_a.as_str(),
            plan_b.as_str(),
            call_b.as_str(),
            END,
        ];
        for mode in ["exact", "in-order"] {
            let swapped = json!({"type":"tool-sequence","mode":mode,"tools":["b","a"]});
            let r = first(swapped, json!({}), &events);
            assert_eq!(r.verdict, Verdict::Fail, "id {id:?}, {mode}: {r:?}");
            let kept = json!({"type":"tool-sequence","mode":mode,"tools":["a","b"]});
            assert_eq!(first(kept, json!({}), &events).verdict, Verdict::Pass);
        }
    }
    // One inference planning both calls with the id "" is still one batch: any order.
    let both = r#"{"kind":"inference","output":{"tool_calls":[{"call_id":"","tool":"a","args":{}},{"call_id":"","tool":"b","args":{}}]}}"#;
    let (call_b, call_a) = (call("", "b"), call("", "a"));
    let events = [both, call_b.as_str(), call_a.as_str(), END];
    let r = first(
        json!({"type":"tool-sequence","mode":"exact","tools":["a","b"]}),
        json!({}),
        &events,
    );
    assert_eq!(r.verdict, Verdict::Pass, "{r:?}");
}

#[test]
fn oracles_are_configured_once_when_their_scenario_loads() {
    let s: Scenario = r#"{"id":"x","risk":"High","expected":{"mustCallTools":["search"]},
        "oracles":[{"type":"tool-called"},{"type":"final-answer-matches","pattern":"("},
                   {"type":"tool-caled"},{"type":"max-tokens","limit":5,"kind":"output"}]}"#
        .parse()
        .unwrap();
    // The scenario's fallback is resolved into the typed oracle.
    assert_eq!(
        s.oracles[0].oracle,
        Some(Ok(Oracle::ToolCalled {
            tools: vec!["search".into()]
        }))
    );
    assert!(
        (s.oracles[1].misconfiguration().unwrap().to_string())
            .contains("is not a valid regular expression")
    );
    assert_eq!(s.oracles[2].oracle, None);
    assert_eq!(
        s.oracles[3].oracle,
        Some(Ok(Oracle::MaxTokens {
            limit: 5,
            kind: typed::TokenKind::Output
        }))
    );
    // `gates` reads the problems from the loaded scenario: nothing is judged.
    let found: Vec<(usize, String)> = (misconfigurations(&s.oracles).into_iter())
        .map(|(i, t, _)| (i, t))
        .collect();
    assert_eq!(
        found,
        [(1, "final-answer-matches".into()), (2, "tool-caled".into())]
    );
    // A scenario whose fallbacks change is configured again.
    let mut s = s;
    s.expected.must_call_tools = vec!["fetch".into()];
    s.configure_oracles();
    assert_eq!(
        s.oracles[0].oracle,
        Some(Ok(Oracle::ToolCalled {
            tools: vec!["fetch".into()]
        }))
    );
}
