//! `check` and `explain` map one sequencer's outcome: for each outcome they agree on whether
//! the trace was judged, on why not (the same message), and on the verdict. `check` exits 1 on
//! an error row; `explain` exits 2 only when the scenarios kept the trace from being judged.

use crate::util::*;

/// Lays out scenario `s` (expecting a `search` call) and the trace `traces/s/t.trace.ndjson.zst`
/// with `bytes`.
fn suite_with(env: &Env, scenario_body: &str, bytes: Vec<u8>) {
    env.write("traces/s/s.scenario.json", scenario_body);
    env.write("traces/s/t.trace.ndjson.zst", bytes);
}

/// What `check --json` says of the one row, and what `explain` prints, with both exit codes.
fn both(env: &Env) -> (serde_json::Value, i32, String, i32) {
    let checked = env.run(&["check", "traces/", "--format", "json", "--no-cache"]);
    let report = json(&checked);
    let row = row(&report, "t.trace.ndjson.zst").clone();
    let explained = env.run(&["explain", "traces/s/t.trace.ndjson.zst", "--in", "traces/"]);
    (row, checked.code, explained.stdout, explained.code)
}

/// A scenario the quality gates refuse: an unknown key and no risk.
const INVALID_SCENARIO: &str =
    r#"{"id":"s","title":"t","oracles":[{"type":"tool-called","tool":"search"}],"colour":1}"#;

fn searched() -> String {
    let c = call("c1", "search");
    trace_text("s", "default", &[&c, END])
}

#[track_caller]
fn not_judged_alike(env: &Env, category: &str, explain_code: i32) -> serde_json::Value {
    let (row, check_code, explained, explained_code) = both(env);
    assert_eq!(row["verdict"], "error", "{row:#}");
    assert_eq!(row["error"]["category"], category, "{row:#}");
    // Where each looked for scenarios may differ (`explain` adds the trace's own directory).
    let message = row["error"]["message"].as_str().unwrap();
    let message = message.split(" (looked in ").next().unwrap();
    assert!(
        explained.contains(&format!("not judged: {message}")),
        "explain says otherwise than check's `{message}`:\n{explained}"
    );
    assert_eq!(
        (check_code, explained_code),
        (1, explain_code),
        "{explained}"
    );
    row
}

#[test]
fn an_unreadable_trace_is_not_judged_by_either_and_both_say_why() {
    let env = Env::new();
    let mut text = sealed_bytes(&searched());
    // One byte of the body changed: the seal no longer holds.
    let at = text.windows(6).position(|w| w == b"search").unwrap();
    text[at] = b'S';
    suite_with(
        &env,
        &scenario("s", "High", "search"),
        zstd::bulk::compress(&text, 3).unwrap(),
    );
    let _ = not_judged_alike(&env, "integrity", 0);
}

#[test]
fn a_sealed_trace_that_does_not_parse_is_not_judged_by_either() {
    let env = Env::new();
    let text = trace_text(
        "s",
        "default",
        &[r#"{"kind":"tool_call","call_id":"c1"}"#, END],
    );
    suite_with(
        &env,
        &scenario("s", "High", "search"),
        sealed_zst_unchecked(&text),
    );
    let _ = not_judged_alike(&env, "malformed", 0);
}

#[test]
fn an_unknown_scenario_is_the_same_error_in_both() {
    let env = Env::new();
    let c = call("c1", "search");
    let text = trace_text("z", "default", &[&c, END]);
    suite_with(&env, &scenario("s", "High", "search"), sealed_zst(&text));
    let _ = not_judged_alike(&env, "unknown-scenario", 2);
}

#[test]
fn a_scenario_with_problems_is_judged_by_neither() {
    let env = Env::new();
    // The quality gates' problems, so `check` refuses to judge it.
    suite_with(&env, INVALID_SCENARIO, sealed_zst(&searched()));
    let row = not_judged_alike(&env, "scenario-invalid", 2);
    assert!(
        row["oracles"].as_array().is_none_or(Vec::is_empty),
        "{row:#}"
    );
}

#[test]
fn a_judged_trace_has_the_same_verdicts_in_both() {
    for (tool, verdict, check_code) in [("search", "pass", 0), ("book", "fail", 1)] {
        let env = Env::new();
        suite_with(&env, &scenario("s", "High", tool), sealed_zst(&searched()));
        let (row, code, explained, explain_code) = both(&env);
        assert_eq!(row["verdict"], verdict, "{row:#}");
        assert_eq!(code, check_code);
        assert_eq!(explain_code, 0, "explain judged it: {explained}");
        for o in row["oracles"].as_array().unwrap() {
            let index = o["index"]
                .as_u64()
                .map(|i| format!(" #{i}"))
                .unwrap_or_default();
            let line = format!(
                "{} {}{index}: {}",
                o["verdict"].as_str().unwrap(),
                o["type"].as_str().unwrap(),
                o["message"].as_str().unwrap()
            );
            assert!(explained.contains(&line), "`{line}` not in:\n{explained}");
        }
    }
}

#[test]
fn diff_between_recordings_judges_neither_side_against_a_scenario_with_problems() {
    let env = Env::new();
    suite_with(&env, INVALID_SCENARIO, sealed_zst(&searched()));
    env.write("new/s/t.trace.ndjson.zst", sealed_zst(&searched()));
    let out = env.run(&[
        "diff", "--from", "traces", "--to", "new", "--format", "json",
    ]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let errors = json(&out)["errors"].to_string();
    assert!(
        errors.contains("`traces/s/s.scenario.json`: scenario `s`: unknown key `colour`"),
        "{errors}"
    );
    // With the scenario fixed, the same recordings compare without drift.
    env.write("traces/s/s.scenario.json", scenario("s", "High", "search"));
    let out = env.run(&[
        "diff", "--from", "traces", "--to", "new", "--format", "json",
    ]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
}
