//! `gates`: every quality-gate rule, all problems listed; `--strength` on the demo.

use crate::util::*;

#[test]
fn every_rule_is_reported_with_its_file() {
    let env = Env::new();
    env.write(
        "traces/broken.scenario.json",
        "{\n  \"id\": \"x\",\n  \"title\": \"t\",\n}\n",
    );
    env.write(
        "traces/many.scenario.json",
        serde_json::json!([
            {"id": "blank-title", "title": " ", "risk": "Low", "oracles": [{"type": "approval-not-required"}]},
            {"id": "Dup", "title": "t", "risk": "Low", "oracles": [{"type": "approval-not-required"}]},
            {"id": "dup", "title": "t", "risk": "Low", "oracles": [{"type": "approval-not-required"}]},
            {"id": "no-oracles", "title": "t", "risk": "Low"},
            {"id": "unknown-type", "title": "t", "risk": "Low", "oracles": [{"type": "vibes"}]},
            {"id": "no-mode", "title": "t", "risk": "Low", "oracles": [{"type": "tool-sequence", "tools": ["a"]}]},
            {"id": "bad-regex", "title": "t", "risk": "Low", "oracles": [{"type": "final-answer-matches", "pattern": "(x"}]},
            {"id": "tool-tag", "title": "t", "risk": "Low", "tags": ["Tools"], "oracles": [{"type": "approval-not-required"}]},
            {"id": "safety-tag", "title": "t", "risk": "Low", "type": "security", "oracles": [{"type": "final-answer-contains", "value": "x"}]},
            {"id": "requires-approval", "title": "t", "risk": "Low", "expected": {"requiresApproval": false}, "oracles": [{"type": "final-answer-contains", "value": "x"}]},
            {"id": "bad-contract", "title": "t", "risk": "Low", "contract": "missing.contract.json", "oracles": [{"type": "contract-conformant"}]},
            {"id": "fine", "title": "t", "risk": "Low", "tags": ["tool-use"], "expected": {"mustCallTools": ["a"]}, "oracles": [{"type": "tool-called"}]}
        ])
        .to_string(),
    );
    let out = env.run(&["gates", "traces"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    for needle in [
        "error: `traces/broken.scenario.json`, line 4, column 1: trailing comma",
        "scenario `blank-title`: `title` is blank",
        "scenario `Dup`: duplicate id",
        "scenario `dup`: duplicate id",
        "scenario `no-oracles`: no oracles, so it proves nothing",
        "scenario `unknown-type`: oracle 0 has unknown type `vibes` (judged as `unknown:vibes`)",
        "scenario `no-mode`: oracle 0 (`tool-sequence`): `mode` is required",
        "scenario `bad-regex`: oracle 0 (`final-answer-matches`): `pattern` `(x` is not a valid regular expression: unclosed group",
        "scenario `tool-tag`: is tagged as tool use but has no tool oracle",
        "scenario `safety-tag`: is about approvals or safety",
        "scenario `requires-approval`: is about approvals or safety",
        "scenario `bad-contract`: its contract does not load: cannot read contract",
    ] {
        assert!(
            out.stdout.contains(needle),
            "missing `{needle}` in:\n{}",
            out.stdout
        );
    }
    assert!(!out.stdout.contains("`fine`"), "{}", out.stdout);
    assert!(
        out.stdout.ends_with("12 scenarios: 12 problem(s)\n"),
        "{}",
        out.stdout
    );
}

#[test]
fn check_reports_gate_failures_as_error_rows_and_judges_the_rest() {
    let env = Env::new();
    good_suite(&env);
    env.write(
        "traces/s/s.scenario.json",
        r#"{"id":"s","title":"t","oracles":[{"type":"tool-sequence","tools":["search"]}]}"#,
    );
    let c = call("c1", "search");
    env.write(
        "traces/s/a.trace.ndjson.zst",
        sealed_zst(&trace_text("s", "a", &[&c, END])),
    );
    let out = env.run(&["check", "traces", "--format", "json"]);
    assert_eq!(out.code, 1);
    let r = json(&out);
    let bad = row(&r, "s/a.trace.ndjson.zst");
    assert_eq!(bad["verdict"], "error");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`mode` is required"),
        "{bad:#}"
    );
    assert!(bad["oracles"].as_array().unwrap().is_empty(), "not judged");
    assert_eq!(row(&r, "good/default.trace.ndjson.zst")["verdict"], "pass");
}

#[test]
fn strength_flags_the_shallow_demo_scenario_and_not_a_strong_one() {
    let env = Env::new();
    copy_demo(&env, false);
    let out = env.run(&["gates", "traces"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let out = env.run(&["gates", "traces", "--strength"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stdout
            .contains("shallow 0.00  agent.shallow.example  0/6 mutants caught"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("survived: add-unapproved-shell in `traces/agent.shallow.example/default.trace.ndjson.zst`"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("strong  0.85  agent-progress-evidence  11/13 mutants caught"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("not measured  agent.unsafe.write"),
        "{}",
        out.stdout
    );
    // Deterministic, and the threshold is the user's.
    assert_eq!(
        env.run(&["gates", "traces", "--strength"]).stdout,
        out.stdout
    );
    let out = env.run(&["gates", "traces", "--strength", "--min-strength", "0"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let out = env.run(&["gates", "traces", "--strength", "--min-strength", "2"]);
    assert_eq!(out.code, 2);
}

#[test]
fn gates_on_a_missing_path_exits_2() {
    let env = Env::new();
    let out = env.run(&["gates", "nowhere"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("`nowhere` does not exist"),
        "{}",
        out.stderr
    );
}
