//! agentevals trajectory match evaluators (`strict`, `unordered`, `subset`, `superset`), on the
//! replay example's weather trajectory (`docs/replay.md`).

use serde_json::json;

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
