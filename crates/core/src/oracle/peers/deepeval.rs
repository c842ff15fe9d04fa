//! DeepEval `ToolCorrectnessMetric` (default threshold 0.5).

use serde_json::json;

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
