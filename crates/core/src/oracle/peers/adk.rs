//! Google ADK evaluation criteria: `tool_trajectory_avg_score` (default threshold 1.0; EXACT,
//! IN_ORDER, ANY_ORDER) and `response_match_score` (ROUGE-1, default threshold 0.8).

use serde_json::json;

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
