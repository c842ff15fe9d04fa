//! Argument matchers as users write them: a BFCL-style ground truth judged by `check` in
//! `tool-args` and `tool-sequence`, `explain` saying which matcher decided, `gates` pointing at
//! a malformed matcher's line, and `gates --strength` killing what each matcher checks.

use serde_json::{Value, json};

use crate::util::*;

/// A run that called `get_scores` twice in parallel (swapped against the ground truth's order)
/// and `weather` with a float where an integer is due.
fn run(env: &Env, id: &str, calls: &[(&str, Value)]) {
    let mut events: Vec<String> = Vec::new();
    for (n, (tool, args)) in calls.iter().enumerate() {
        let call =
            json!({"kind": "tool_call", "call_id": format!("c{n}"), "tool": tool, "args": args});
        let result =
            json!({"kind": "tool_result", "call_id": format!("c{n}"), "ok": true, "output": "ok"});
        events.push(call.to_string());
        events.push(result.to_string());
    }
    events.push(END.to_owned());
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    env.write(
        &format!("traces/{id}/default.trace.ndjson.zst"),
        sealed_zst(&trace_text(id, "default", &refs)),
    );
}

fn scenario(env: &Env, id: &str, oracles: Value) {
    env.write(
        &format!("traces/{id}/{id}.scenario.json"),
        serde_json::to_string_pretty(
            &json!({"id": id, "title": "t", "risk": "High", "oracles": oracles}),
        )
        .unwrap(),
    );
}

/// BFCL's parallel entry: `get_scores(sport=["tennis"], year=[2021, 2022], gender=["men", ""])`
/// twice, as possible answers list them.
fn ground_truth() -> Value {
    json!({
        "sport": {"$oneOf": ["tennis"], "$text": true},
        "year": {"$oneOf": [2021, 2022], "$type": "integer"},
        "gender": {"$oneOf": ["men", "women"], "$optional": true},
    })
}

fn verdicts(report: &Value, id: &str) -> Vec<String> {
    (row(report, &format!("{id}/default.trace.ndjson.zst"))["oracles"]
        .as_array()
        .unwrap()
        .iter())
    .map(|o| {
        format!(
            "{} {}",
            o["type"].as_str().unwrap(),
            o["verdict"].as_str().unwrap()
        )
    })
    .collect()
}

#[test]
fn a_benchmark_ground_truth_is_judged_as_it_reads_and_explain_names_the_matcher() {
    let env = Env::new();
    let sequence = |_: &str| {
        json!([
            {"type": "tool-sequence", "mode": "unordered", "calls": [
                {"tool": "get_scores", "args": ground_truth()},
                {"tool": "get_scores", "args": ground_truth()}]},
            {"type": "tool-args", "tool": "get_scores", "args": ground_truth()},
        ])
    };
    // Passes: normalised text, one of the years, an optional key present or not.
    scenario(&env, "good", sequence("good"));
    run(
        &env,
        "good",
        &[
            ("get_scores", json!({"sport": "TENNIS", "year": 2022})),
            (
                "get_scores",
                json!({"sport": "Tennis ", "year": 2021, "gender": "women"}),
            ),
        ],
    );
    // Fails: a float year, where the ground truth wants an integer.
    scenario(&env, "float", sequence("float"));
    run(
        &env,
        "float",
        &[
            ("get_scores", json!({"sport": "tennis", "year": 2021.0})),
            ("get_scores", json!({"sport": "tennis", "year": 2021.0})),
        ],
    );
    let out = env.run(&["check", "traces", "--format", "json"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let report = json(&out);
    assert_eq!(
        verdicts(&report, "good"),
        ["tool-sequence pass", "tool-args pass", "run-completed pass"]
    );
    assert_eq!(
        verdicts(&report, "float"),
        ["tool-sequence fail", "tool-args fail", "run-completed pass"]
    );
    // `explain` says which matcher decided.
    let good = env.run(&["explain", "traces/good/default.trace.ndjson.zst"]);
    assert!(
        good.stdout
            .contains(r#"`sport`: "TENNIS" matched "tennis" after normalisation"#)
            && good.stdout.contains("`gender`: absent, which it may be")
            && good.stdout.contains("`year`: 2022 is one of [2021,2022]"),
        "{}",
        good.stdout
    );
    let float = env.run(&["explain", "traces/float/default.trace.ndjson.zst"]);
    assert!(
        float
            .stdout
            .contains("`year` (2021.0 is not of type integer)"),
        "{}",
        float.stdout
    );
}

#[test]
fn gates_points_at_a_malformed_matcher_by_file_and_line() {
    let env = Env::new();
    scenario(
        &env,
        "typo",
        json!([
            {"type": "tool-args", "tool": "get_scores", "args": {"sport": {"$oneof": ["tennis"]}}},
            {"type": "tool-sequence", "mode": "exact", "calls": [{"tool": "a", "args": {"n": {"$approx": 1}}}]},
        ]),
    );
    let out = env.run(&["gates", "traces"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let text = std::fs::read_to_string(env.path("traces/typo/typo.scenario.json")).unwrap();
    let line_of = |needle: &str| text.lines().position(|l| l.contains(needle)).unwrap() + 1;
    for (line, message) in [
        (
            line_of("\"sport\""),
            "`args.sport`: `$oneof` is not a matcher key; did you mean `$oneOf`?",
        ),
        (
            line_of("\"n\""),
            "`calls[0].args.n`: `$approx` needs a tolerance",
        ),
    ] {
        let want = format!("`traces/typo/typo.scenario.json`, line {line}, column");
        assert!(
            out.stdout
                .lines()
                .any(|l| l.contains(&want) && l.contains(message)),
            "{want} … {message}\n{}",
            out.stdout
        );
    }
}

#[test]
fn strength_kills_what_each_matcher_checks() {
    let env = Env::new();
    let calls = [("book", json!({"seats": 2, "city": "Paris"}))];
    // `$type` is killed by the integer retyped as a float, a required key by its removal, the
    // pattern by unrelated text.
    scenario(
        &env,
        "typed",
        json!([{"type": "tool-args", "tool": "book", "args": {
        "seats": {"$eq": 2, "$type": "integer"}, "city": {"$regex": "^Par"}}}]),
    );
    run(&env, "typed", &calls);
    // A pattern that matches anything kills nothing: strength says so.
    scenario(
        &env,
        "loose",
        json!([{"type": "tool-args", "tool": "book", "args": {
        "seats": {"$any": true, "$optional": true}, "city": {"$regex": ".*"}}}]),
    );
    run(&env, "loose", &calls);
    let out = env.run(&["gates", "--strength", "traces"]);
    let section = |id: &str| -> String {
        let start = out
            .stdout
            .find(&format!("  {id}  "))
            .unwrap_or_else(|| panic!("{}", out.stdout));
        out.stdout[start..]
            .lines()
            .take_while(|l| !l.contains("scenarios:"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let typed = section("typed");
    for killed in [
        "retype-argument (seq 1, `seats`)",
        "drop-argument",
        "change-argument",
        "replace-argument",
    ] {
        assert!(
            !typed.contains(&format!("survived: {killed}")),
            "{killed}: {}",
            out.stdout
        );
    }
    let loose = section("loose");
    // (Each mutation is made: the loose scenario lets it survive.)
    for survived in [
        "retype-argument (seq 1, `seats`)",
        "drop-argument (seq 1, `seats`)",
        "change-argument (seq 1, `city`)",
        "replace-argument (seq 1, `city`)",
    ] {
        assert!(
            loose.contains(&format!("survived: {survived}")),
            "{survived}: {}",
            out.stdout
        );
    }
}
