//! The documented examples of the evaluators teams migrate from, written down by hand as
//! tracereplay oracles and traces, each with the peer's stated result: tracereplay must agree.
//! The migration guide (`docs/coming-from.md`) maps every metric and assertion; these are its
//! worked examples.

use serde_json::{Value, json};

use super::test_support::one;
use super::{OracleResult, Verdict};

fn call(id: &str, tool: &str, args: Value) -> String {
    json!({"kind": "tool_call", "call_id": id, "tool": tool, "args": args}).to_string()
}

fn user(n: u8) -> String {
    format!(r#"{{"kind":"user_message","prompt":{{"h":"b3:{n:064x}","len":12}}}}"#)
}

fn answer(text: &str) -> String {
    json!({"kind": "final_answer", "text": text}).to_string()
}

const END: &str = r#"{"kind":"run_end","status":"completed"}"#;

fn judge(oracle: Value, events: &[String]) -> OracleResult {
    let mut lines: Vec<&str> = events.iter().map(String::as_str).collect();
    lines.push(END);
    let r = one(oracle, &lines);
    assert!(!r.misconfigured, "{}", r.message);
    r
}

fn agrees(r: &OracleResult, passes: bool, score: f64) {
    assert_eq!(r.verdict == Verdict::Pass, passes, "{}", r.message);
    assert!(
        (r.score - score).abs() < 1e-9,
        "score {} != {score}: {}",
        r.score,
        r.message
    );
}

/// DeepEval `ToolCorrectnessMetric` (default threshold 0.5).
mod deepeval {
    use super::*;

    /// The docs' usage example: WebSearch and ToolQuery called, WebSearch expected. Names only,
    /// no ordering: every expected tool was called, score 1.0, passes.
    #[test]
    fn usage_example_names_only() {
        let events = [
            call("1", "WebSearch", json!({})),
            call("2", "ToolQuery", json!({})),
        ];
        let r = judge(
            json!({"type": "tool-sequence", "mode": "superset", "tools": ["WebSearch"], "threshold": 0.5}),
            &events,
        );
        agrees(&r, true, 1.0);
    }

    /// `should_exact_match=True`: the called list must equal the expected one: 0.0, fails.
    #[test]
    fn exact_match() {
        let events = [
            call("1", "WebSearch", json!({})),
            call("2", "ToolQuery", json!({})),
        ];
        let r = judge(
            json!({"type": "tool-sequence", "mode": "exact", "tools": ["WebSearch"], "threshold": 0.5}),
            &events,
        );
        agrees(&r, false, 0.0);
    }

    /// `should_consider_ordering=True`: the longest common subsequence ÷ expected: 2 of 3.
    #[test]
    fn ordering_is_the_longest_common_subsequence() {
        let events = [
            call("1", "ToolQuery", json!({})),
            call("2", "Summarize", json!({})),
        ];
        let r = judge(
            json!({"type": "tool-sequence", "mode": "in-order", "tools": ["WebSearch", "ToolQuery", "Summarize"], "threshold": 0.5}),
            &events,
        );
        agrees(&r, true, 2.0 / 3.0);
    }

    /// Partial credit below the threshold: 1 of 3 expected tools called, 0.333 < 0.5, fails.
    #[test]
    fn partial_credit_below_the_threshold() {
        let events = [call("1", "WebSearch", json!({}))];
        let r = judge(
            json!({"type": "tool-sequence", "mode": "superset", "tools": ["WebSearch", "ToolQuery", "Summarize"], "threshold": 0.5}),
            &events,
        );
        agrees(&r, false, 1.0 / 3.0);
    }

    /// `evaluation_params=[INPUT_PARAMETERS]` with exact arguments: a call with other arguments
    /// does not count.
    #[test]
    fn input_parameters_exact() {
        let events = [
            call("1", "WebSearch", json!({"query": "shoe sizes"})),
            call("2", "ToolQuery", json!({"id": 7})),
        ];
        let oracle = |q: &str| json!({"type": "tool-sequence", "mode": "superset", "calls": [{"tool": "WebSearch", "args": {"query": q}}, {"tool": "ToolQuery", "args": {"id": 7}}], "threshold": 0.5});
        agrees(&judge(oracle("shoe sizes"), &events), true, 1.0);
        agrees(&judge(oracle("refunds"), &events), true, 0.5);
    }
}

/// Google ADK evaluation criteria: `tool_trajectory_avg_score` (default threshold 1.0; EXACT,
/// IN_ORDER, ANY_ORDER) and `response_match_score` (ROUGE-1, default threshold 0.8).
mod adk {
    use super::*;

    fn two_invocations(second_tool: &str) -> Vec<String> {
        vec![
            user(1),
            call("1", "get_weather", json!({"city": "Paris"})),
            answer("It is sunny in Paris."),
            user(2),
            call("2", second_tool, json!({"city": "Paris"})),
        ]
    }

    /// Each invocation scores 1 or 0 and the metric is their mean; one of two matching gives
    /// 0.5, which fails the default threshold 1.0 and passes 0.5.
    #[test]
    fn trajectory_score_is_the_mean_over_invocations() {
        let turns = json!([[{"tool": "get_weather", "args": {"city": "Paris"}}], [{"tool": "get_forecast", "args": {"city": "Paris"}}]]);
        let events = two_invocations("get_time");
        agrees(
            &judge(
                json!({"type": "tool-sequence", "mode": "exact", "turns": turns}),
                &events,
            ),
            false,
            0.5,
        );
        agrees(
            &judge(
                json!({"type": "tool-sequence", "mode": "exact", "turns": turns, "threshold": 0.5}),
                &events,
            ),
            true,
            0.5,
        );
        agrees(
            &judge(
                json!({"type": "tool-sequence", "mode": "exact", "turns": turns}),
                &two_invocations("get_forecast"),
            ),
            true,
            1.0,
        );
    }

    /// IN_ORDER allows extra calls between the expected ones; ANY_ORDER allows any order.
    #[test]
    fn in_order_and_any_order() {
        let events = [
            call("1", "search", json!({})),
            call("2", "lookup", json!({})),
            call("3", "book", json!({})),
        ];
        agrees(
            &judge(
                json!({"type": "tool-sequence", "mode": "in-order", "tools": ["search", "book"]}),
                &events,
            ),
            true,
            1.0,
        );
        agrees(
            &judge(
                json!({"type": "tool-sequence", "mode": "in-order", "tools": ["book", "search"]}),
                &events,
            ),
            false,
            0.5,
        );
        agrees(
            &judge(
                json!({"type": "tool-sequence", "mode": "superset", "tools": ["book", "search"]}),
                &events,
            ),
            true,
            1.0,
        );
    }

    /// `response_match_score` at its default 0.8: a paraphrase with the same words passes, an
    /// unrelated answer fails (the score is ROUGE-1 F, tested to the digit against ADK itself in
    /// `similarity`).
    #[test]
    fn response_match_score() {
        let oracle = json!({"type": "response-similarity", "value": "Your flight to Paris is booked for Friday.", "threshold": 0.8});
        let r = judge(
            oracle.clone(),
            &[answer("I booked your flight to Paris for Friday.")],
        );
        agrees(&r, true, 0.875);
        let r = judge(oracle, &[answer("There are no flights.")]);
        assert_eq!(r.verdict, Verdict::Fail, "{}", r.message);
    }
}

/// promptfoo trajectory assertions, `not-` and `javascript`.
mod promptfoo {
    use super::*;

    fn run() -> Vec<String> {
        vec![
            call(
                "1",
                "search_orders",
                json!({"customer": {"id": "c-9", "tier": "gold"}, "limit": 5}),
            ),
            call("2", "get_order", json!({"order_id": "A1"})),
            call(
                "3",
                "book_reservation",
                json!({"date": "2026-12-24", "party": 4}),
            ),
        ]
    }

    /// `trajectory:tool-used` with a name, a glob pattern, and `min`/`max` counts.
    #[test]
    fn tool_used() {
        agrees(
            &judge(
                json!({"type": "tool-called", "tool": "search_orders"}),
                &run(),
            ),
            true,
            1.0,
        );
        agrees(
            &judge(json!({"type": "tool-called", "tool": "*_order*"}), &run()),
            true,
            1.0,
        );
        agrees(
            &judge(
                json!({"type": "tool-call-count", "tool": "book_reservation", "count": 1}),
                &run(),
            ),
            true,
            1.0,
        );
        agrees(
            &judge(
                json!({"type": "tool-call-count", "tool": "get_*", "min": 2}),
                &run(),
            ),
            false,
            0.0,
        );
    }

    /// `trajectory:tool-args-match` in `partial` mode: nested keys, extra keys allowed.
    #[test]
    fn tool_args_match_partial() {
        let oracle = |tier: &str| json!({"type": "tool-args", "tool": "search_orders", "args": {"customer": {"tier": tier}}, "argsMatch": "partial"});
        agrees(&judge(oracle("gold"), &run()), true, 1.0);
        agrees(&judge(oracle("silver"), &run()), false, 0.0);
    }

    /// `trajectory:tool-sequence` in `exact` and `in_order` modes.
    #[test]
    fn tool_sequence() {
        agrees(
            &judge(
                json!({"type": "tool-sequence", "mode": "in-order", "tools": ["search_orders", "book_reservation"]}),
                &run(),
            ),
            true,
            1.0,
        );
        agrees(
            &judge(
                json!({"type": "tool-sequence", "mode": "exact", "tools": ["search_orders", "book_reservation"]}),
                &run(),
            ),
            false,
            0.0,
        );
    }

    /// `not-trajectory:tool-used`: any assertion negated.
    #[test]
    fn not_prefix() {
        agrees(
            &judge(
                json!({"type": "not", "oracle": {"type": "tool-called", "tool": "cancel_*"}}),
                &run(),
            ),
            true,
            1.0,
        );
        agrees(
            &judge(
                json!({"type": "not", "oracle": {"type": "tool-called", "tool": "book_*"}}),
                &run(),
            ),
            false,
            0.0,
        );
    }

    /// A `javascript` assertion, as a jq expression over the same run.
    #[test]
    fn javascript_becomes_expr() {
        let jq = r#"[.events[] | select(.kind == "tool_call" and .tool == "book_reservation") | .args.party] | all(. <= 6)"#;
        agrees(&judge(json!({"type": "expr", "jq": jq}), &run()), true, 1.0);
    }
}

/// agentevals trajectory match evaluators (`strict`, `unordered`, `subset`, `superset`), on the
/// README's weather example.
mod agentevals {
    use super::*;

    fn planned(calls: &[(&str, Value)]) -> String {
        let calls: Vec<Value> = (calls.iter().enumerate())
            .map(|(i, (t, a))| json!({"call_id": format!("p{i}"), "tool": t, "args": a}))
            .collect();
        json!({"kind": "inference", "output": {"tool_calls": calls}}).to_string()
    }

    fn sf() -> Value {
        json!({"city": "San Francisco"})
    }

    /// `strict`: the same calls, message by message: one inference planning get_weather.
    #[test]
    fn strict() {
        let events = [
            user(1),
            planned(&[("get_weather", sf())]),
            answer("It's 80 degrees and sunny in SF."),
        ];
        let oracle = json!({"type": "tool-sequence", "mode": "exact", "of": "planned", "inferences": [[{"tool": "get_weather", "args": {"city": "San Francisco"}}]]});
        agrees(&judge(oracle.clone(), &events), true, 1.0);
        let split = [
            user(1),
            planned(&[("get_weather", sf())]),
            planned(&[("get_fun_activities", sf())]),
        ];
        agrees(&judge(oracle, &split), false, 0.0);
    }

    /// `unordered`: the same calls in any order.
    #[test]
    fn unordered() {
        let events = [
            planned(&[("get_fun_activities", sf())]),
            planned(&[("get_weather", sf())]),
        ];
        let oracle = json!({"type": "tool-sequence", "mode": "unordered", "of": "planned", "calls": [{"tool": "get_weather", "args": sf()}, {"tool": "get_fun_activities", "args": sf()}]});
        agrees(&judge(oracle, &events), true, 1.0);
    }

    /// `superset`: the output calls at least the reference's; `subset`: at most.
    #[test]
    fn superset_and_subset() {
        let both = [planned(&[
            ("get_weather", sf()),
            ("get_fun_activities", sf()),
        ])];
        let only = [planned(&[("get_weather", sf())])];
        let reference_one = json!([{"tool": "get_weather", "args": sf()}]);
        let reference_two = json!([{"tool": "get_weather", "args": sf()}, {"tool": "get_fun_activities", "args": sf()}]);
        agrees(
            &judge(
                json!({"type": "tool-sequence", "mode": "superset", "of": "planned", "calls": reference_one}),
                &both,
            ),
            true,
            1.0,
        );
        agrees(
            &judge(
                json!({"type": "tool-sequence", "mode": "subset", "of": "planned", "calls": reference_two}),
                &only,
            ),
            true,
            1.0,
        );
        agrees(
            &judge(
                json!({"type": "tool-sequence", "mode": "subset", "of": "planned", "calls": reference_one}),
                &both,
            ),
            false,
            0.5,
        );
    }
}
