//! promptfoo trajectory assertions, `not-` and `javascript`.

use serde_json::json;

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
