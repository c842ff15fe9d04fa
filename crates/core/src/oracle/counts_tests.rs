//! Tests of the counting oracles (`counts.rs`): a passing and a failing case for each,
//! asserting message and evidence.

use serde_json::json;

use super::test_support::*;
use super::*;

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

#[test]
fn token_sums_that_overflow_saturate_and_fail() {
    // Found by fuzzing: the sum wrapped (release builds) and a huge usage passed the limit.
    let huge =
        r#"{"kind":"inference","usage":{"input_tokens":18446744073709551615,"output_tokens":2}}"#;
    for kind in ["total", "input"] {
        let r = one(
            json!({"type":"max-tokens","limit":10,"kind":kind}),
            &[huge, huge, END],
        );
        check(&r, Verdict::Fail, "18446744073709551615", &[1, 2]);
    }
}

/// `max-cost`: passing, failing, misconfigured, inside a composition and on one turn.
#[test]
fn max_cost_is_judged_configured_and_composed() {
    let costed = |c: f64| {
        format!(
            r#"{{"kind":"inference","usage":{{"input_tokens":10,"output_tokens":1,"cost_usd":{c}}}}}"#
        )
    };
    let (a, b) = (costed(0.25), costed(0.5));
    let events = [a.as_str(), b.as_str(), END];
    check(
        &one(json!({"type": "max-cost", "limit": 1}), &events),
        Verdict::Pass,
        "cost $0.75, limit $1.00",
        &[1, 2],
    );
    let over = one(json!({"type": "max-cost", "limit": 0.5}), &events);
    check(
        &over,
        Verdict::Fail,
        "cost $0.75 exceeds the limit of $0.50",
        &[1, 2],
    );
    assert_eq!(over.found.as_deref(), Some(&json!({"cost_usd": 0.75})));
    // Usage without a cost: not evaluable, and `not` cannot turn it into a pass.
    check(
        &one(json!({"type": "max-cost", "limit": 1}), &[PLAN, END]),
        Verdict::NotEvaluable,
        "record no cost and no price applies",
        &[1],
    );
    let negated = one(
        json!({"type": "not", "oracle": {"type": "max-cost", "limit": 1}}),
        &[PLAN, END],
    );
    assert_ne!(negated.verdict, Verdict::Pass, "{}", negated.message);
    check(
        &one(
            json!({"type": "not", "oracle": {"type": "max-cost", "limit": 0.5}}),
            &events,
        ),
        Verdict::Pass,
        "",
        &[1, 2],
    );
    // On one turn, only that turn's requests count.
    let user = r#"{"kind":"user_message","prompt":{"h":"b3:0000000000000000000000000000000000000000000000000000000000000000","len":1}}"#;
    let turns = [user, a.as_str(), user, b.as_str(), END];
    check(
        &one(json!({"type": "max-cost", "limit": 0.3, "turn": 1}), &turns),
        Verdict::Pass,
        "turn 1: cost $0.25",
        &[2],
    );
    for (bad, why) in [
        (json!({"type": "max-cost"}), "no `limit`"),
        (
            json!({"type": "max-cost", "limit": -1}),
            "non-negative number of US dollars",
        ),
        (
            json!({"type": "max-cost", "limit": 1, "trials": {"p90": 1}}),
            "unknown key `trials.p90`",
        ),
        (
            json!({"type": "max-cost", "limit": 1, "trials": {}}),
            "neither `median` nor `max`",
        ),
        (
            json!({"type": "max-tokens", "limit": 1, "trials": {"max": 1.5}}),
            "non-negative integer",
        ),
    ] {
        let r = one(bad, &events);
        assert!(r.misconfigured && r.message.contains(why), "{}", r.message);
    }
}
