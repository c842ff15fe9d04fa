//! Scores, thresholds, composition and `expr` through the binary: what reports print, what
//! `gates` makes of them, and that a hostile jq program cannot take the run down.

use crate::util::*;

const TWO_TURNS: &[&str] = &[
    r#"{"kind":"user_message","prompt":{"h":"b3:00000000000000000000000000000000000000000000000000000000000000a1","len":9}}"#,
    r#"{"kind":"tool_call","call_id":"c1","tool":"search","args":{"q":"x"}}"#,
    r#"{"kind":"tool_result","call_id":"c1","ok":true}"#,
    r#"{"kind":"user_message","prompt":{"h":"b3:00000000000000000000000000000000000000000000000000000000000000a2","len":4}}"#,
    r#"{"kind":"tool_call","call_id":"c2","tool":"book_flight","args":{"to":"PAR"}}"#,
    r#"{"kind":"tool_result","call_id":"c2","ok":true}"#,
    r#"{"kind":"final_answer","text":"Your flight to Paris is booked."}"#,
    END,
];

fn suite(env: &Env, oracles: serde_json::Value) {
    env.write(
        "traces/s/s.scenario.json",
        serde_json::json!({"id": "s", "title": "t", "risk": "High", "oracles": oracles})
            .to_string(),
    );
    env.write(
        "traces/s/default.trace.ndjson.zst",
        sealed_zst(&trace_text("s", "default", TWO_TURNS)),
    );
}

#[test]
fn scores_and_thresholds_reach_every_report() {
    let env = Env::new();
    suite(
        &env,
        serde_json::json!([
            {"type": "tool-called", "tools": ["search", "book_flight", "refund"], "threshold": 0.6},
            {"type": "tool-sequence", "mode": "superset", "tools": ["search", "refund", "cancel", "book_*"]},
            {"type": "response-similarity", "value": "Your flight to Paris is booked for Friday."}
        ]),
    );
    let out = env.run(&["check", "traces", "--format", "json", "--no-cache"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let report = json(&out);
    let oracles = &row(&report, "default.trace.ndjson.zst")["oracles"];
    let score = |i: usize| oracles[i]["score"].as_f64().unwrap();
    assert_eq!(oracles[0]["verdict"], "pass");
    assert!((score(0) - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!(oracles[1]["verdict"], "fail");
    assert_eq!(score(1), 0.5);
    assert_eq!(oracles[2]["verdict"], "fail");
    assert!(score(2) > 0.8 && score(2) < 1.0, "{}", score(2));
    assert_eq!(oracles[3]["type"], "run-completed");
    assert_eq!(score(3), 1.0);

    let human = env.run(&["check", "traces", "--no-cache"]).stdout;
    assert!(
        human.contains("pass tool-called #0 (score 0.667): score 0.667 reaches threshold 0.6"),
        "{human}"
    );
    assert!(
        human.contains("fail tool-sequence #1 (score 0.5):"),
        "{human}"
    );
    let md = env
        .run(&["check", "traces", "--format", "markdown", "--no-cache"])
        .stdout;
    assert!(md.contains("`tool-sequence` (score 0.5)"), "{md}");
}

#[test]
fn gates_counts_a_negated_tool_oracle_and_refuses_misspelt_thresholds() {
    let env = Env::new();
    env.write(
        "traces/g.scenario.json",
        serde_json::json!([
            {"id": "negated", "title": "t", "risk": "Low", "tags": ["tool-use"],
             "oracles": [{"type": "not", "oracle": {"type": "tool-called", "tool": "shell"}}]},
            {"id": "misspelt", "title": "t", "risk": "Low",
             "oracles": [{"type": "tool-called", "tool": "a", "threshhold": 0.5}]},
            {"id": "out-of-range", "title": "t", "risk": "Low",
             "oracles": [{"type": "all-of", "oracles": [{"type": "tool-called", "tool": "a", "threshold": 2}]}]}
        ])
        .to_string(),
    );
    let out = env.run(&["gates", "traces"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(!out.stdout.contains("`negated`"), "{}", out.stdout);
    assert!(out.stdout.contains("scenario `misspelt`: oracle 0 (`tool-called`): unknown parameter `threshhold` for tool-called; did you mean `threshold`?"), "{}", out.stdout);
    assert!(out.stdout.contains("scenario `out-of-range`: oracle 0 (`all-of`): `oracles[0]` (`tool-called`): `threshold` 2 is outside (0, 1]"), "{}", out.stdout);
}

#[test]
fn strength_says_a_threshold_weakens_and_a_not_inverts_what_it_kills() {
    let env = Env::new();
    suite(
        &env,
        serde_json::json!([
            {"type": "tool-called", "tools": ["search", "book_flight"], "threshold": 0.5},
            {"type": "not", "oracle": {"type": "tool-called", "tool": "shell"}}
        ]),
    );
    let out = env.run(&["gates", "traces", "--strength", "--min-strength", "0"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stdout
            .contains("weakened: oracle 0 (`tool-called`) passes at threshold 0.5"),
        "{}",
        out.stdout
    );
    // The mutant that adds an unapproved shell call is caught only by the `not`.
    assert!(
        !out.stdout.contains("survived: add-unapproved-shell"),
        "{}",
        out.stdout
    );
    let out = env.run(&["gates", "traces", "--strength", "--min-strength", "1"]);
    assert!(
        out.stdout.contains("survived: drop-call (seq 2)"),
        "{}",
        out.stdout
    );
    assert!(
        !out.stdout.contains("survived: add-unapproved-shell"),
        "{}",
        out.stdout
    );
    suite(
        &env,
        serde_json::json!([{"type": "tool-called", "tools": ["search", "book_flight"], "threshold": 0.5}]),
    );
    let out = env.run(&["gates", "traces", "--strength", "--min-strength", "1"]);
    assert!(
        out.stdout.contains("survived: add-unapproved-shell"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_jq_program_that_crashes_or_never_ends_fails_alone_and_the_run_goes_on() {
    let env = Env::new();
    suite(
        &env,
        serde_json::json!([
            {"type": "expr", "jq": "def f: 1 + f; f"},
            {"type": "expr", "jq": "def f: f; f"},
            {"type": "expr", "jq": "[.events[] | select(.kind == \"tool_call\")] | length == 2"},
            {"type": "expr", "jq": "env | length > 0"}
        ]),
    );
    let out = env.run(&["check", "traces", "--format", "json", "--no-cache"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let report = json(&out);
    let oracles = &row(&report, "default.trace.ndjson.zst")["oracles"];
    let msg = |i: usize| oracles[i]["message"].as_str().unwrap().to_owned();
    assert!(msg(0).contains("crashed its evaluator"), "{}", msg(0));
    assert!(msg(1).contains("time budget"), "{}", msg(1));
    assert_eq!(oracles[2]["verdict"], "pass", "{}", msg(2));
    assert!(msg(3).contains("not available"), "{}", msg(3));
}

/// A jq program that takes memory without end fails alone, on its worker's cap (how much the
/// worker may grow past what it maps at start), and the worker's next program runs as before:
/// the cap is on growth, so the allocator's own reservations never make a program crash.
#[test]
fn a_jq_program_that_takes_memory_without_end_fails_alone_on_its_cap() {
    let env = Env::new();
    suite(
        &env,
        serde_json::json!([
            {"type": "expr", "jq": "reduce range(40) as $i (\"x\"; . + .) | length > 0"},
            {"type": "expr", "jq": "[.events[] | select(.kind == \"tool_call\")] | length == 2"}
        ]),
    );
    let out = env.run(&[
        "check",
        "traces",
        "--format",
        "json",
        "--no-cache",
        "-j",
        "1",
    ]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let report = json(&out);
    let oracles = &row(&report, "default.trace.ndjson.zst")["oracles"];
    let message = oracles[0]["message"].as_str().unwrap();
    assert!(message.contains("crashed its evaluator"), "{message}");
    assert_eq!(oracles[1]["verdict"], "pass", "{}", oracles[1]);
}
