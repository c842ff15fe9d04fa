//! `check`: the demo suite, exit codes, filters, determinism, the JSON report.

use crate::util::*;

#[test]
fn the_demo_passes_by_default_and_fails_with_fail_on_any() {
    let env = Env::new();
    copy_demo(&env, false);
    let out = env.run(&["check", "traces/"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("PASS  agent.tool.basic"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("no `baselines/` directory"),
        "{}",
        out.stdout
    );
    let out = env.run(&["check", "traces/", "--fail-on", "any"]);
    assert_eq!(out.code, 1);
    for failing in [
        "agent.unsafe.write",
        "agent.search.budget",
        "agent.tool.timeout",
        "agent.approval.denied",
    ] {
        assert!(
            out.stdout.contains(&format!("FAIL  {failing}")),
            "{failing} in {}",
            out.stdout
        );
    }
    assert!(out.stdout.contains("fail no-unsafe-tool #2: unsafe call(s) without a covering approval: `write_file` at seq 3"), "{}", out.stdout);
    assert!(out.stdout.contains("evidence: seq 3"), "{}", out.stdout);
}

#[test]
fn the_demo_report_is_identical_whatever_the_thread_count() {
    let env = Env::new();
    copy_demo(&env, false);
    let one = env.run(&["check", "traces", "--format", "json", "-j", "1"]);
    let two = env.run(&["check", "traces", "--format", "json", "-j", "2"]);
    assert_eq!(one.code, 0);
    assert_eq!(one.stdout, two.stdout);
    let human1 = env.run(&["check", "traces", "-j", "1"]);
    let human2 = env.run(&["check", "traces", "-j", "2"]);
    assert_eq!(human1.stdout, human2.stdout);
    let report = json(&one);
    let rows = report["results"].as_array().unwrap();
    let keys: Vec<(String, String)> = rows
        .iter()
        .map(|r| {
            (
                r["scenario"].as_str().unwrap().to_owned(),
                r["case"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "rows sorted by scenario then case");
}

#[test]
fn the_spec_example_is_judged_as_the_spec_says() {
    let env = Env::new();
    copy_demo(&env, false);
    let out = env.run(&[
        "check",
        "traces",
        "--scenario",
        "AGENT-PROGRESS-EVIDENCE",
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let report = json(&out);
    let r = &report["results"][0];
    assert_eq!(r["verdict"], "pass", "{r:#}");
    assert_eq!(
        r["content_hash"],
        "b3:ca0d08e593bbdeb8077541e648f89f11358a0bfbeb9c700d81e1acb70a30727e"
    );
    assert_eq!(report["summary"]["scenarios"], 1);
    let types: Vec<&str> = r["oracles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["type"].as_str().unwrap())
        .collect();
    assert_eq!(types.last(), Some(&"run-completed"));
}

#[test]
fn fail_on_thresholds_and_ignored_failures() {
    let env = Env::new();
    one_trace_suite(&env, "s", "High", "never_called", "a");
    for (fail_on, code, ignored) in [
        ("any", 1, 0),
        ("high", 1, 0),
        ("critical", 0, 1),
        ("none", 0, 1),
    ] {
        let out = env.run(&["check", "traces", "--format", "json", "--fail-on", fail_on]);
        assert_eq!(out.code, code, "--fail-on {fail_on}");
        assert_eq!(
            json(&out)["summary"]["ignored_failures"],
            ignored,
            "--fail-on {fail_on}"
        );
    }
}

#[test]
fn known_gaps_never_block() {
    let env = Env::new();
    env.write(
        "traces/s/s.scenario.json",
        r#"{"id":"s","title":"t","risk":"Critical","knownGap":true,"oracles":[{"type":"tool-called","tool":"nope"}]}"#,
    );
    let c = call("c1", "search");
    env.write(
        "traces/s/a.trace.ndjson.zst",
        sealed_zst(&trace_text("s", "a", &[&c, END])),
    );
    let out = env.run(&["check", "traces", "--format", "json", "--fail-on", "any"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let r = json(&out);
    assert_eq!(
        (
            r["results"][0]["verdict"].as_str(),
            r["results"][0]["known_gap"].as_bool()
        ),
        (Some("fail"), Some(true))
    );
}

#[test]
fn unknown_scenarios_and_scenarios_without_traces_are_error_rows() {
    let env = Env::new();
    good_suite(&env);
    env.write(
        "traces/lonely/lonely.scenario.json",
        scenario("lonely", "Low", "x"),
    );
    let c = call("c1", "search");
    env.write(
        "traces/orphan.trace.ndjson.zst",
        sealed_zst(&trace_text("ghost", "default", &[&c, END])),
    );
    let out = env.run(&["check", "traces", "--format", "json"]);
    assert_eq!(out.code, 1);
    let r = json(&out);
    let orphan = row(&r, "orphan.trace.ndjson.zst");
    assert_eq!(
        (
            orphan["verdict"].as_str(),
            orphan["error"]["category"].as_str()
        ),
        (Some("error"), Some("unknown-scenario"))
    );
    assert_eq!(orphan["scenario"], "ghost");
    let lonely = r["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["scenario"] == "lonely")
        .unwrap();
    assert_eq!(
        (
            lonely["error"]["category"].as_str(),
            lonely["content_hash"].is_null()
        ),
        (Some("no-trace"), true)
    );
    assert_eq!(r["summary"]["errors"], 2);
}

#[test]
fn scenarios_without_oracles_are_errors_not_passes() {
    let env = Env::new();
    env.write("traces/s/s.scenario.json", r#"{"id":"s","title":"t"}"#);
    env.write(
        "traces/s/a.trace.ndjson.zst",
        sealed_zst(&trace_text("s", "a", &[END])),
    );
    let out = env.run(&["check", "traces", "--format", "json"]);
    assert_eq!(out.code, 1);
    let r = json(&out);
    assert_eq!(r["results"][0]["error"]["category"], "scenario-invalid");
    assert!(
        r["results"][0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no oracles, so it proves nothing")
    );
}

#[test]
fn filters_by_scenario_and_tag() {
    let env = Env::new();
    good_suite(&env);
    env.write(
        "traces/t/t.scenario.json",
        r#"{"id":"t","title":"t","risk":"Low","tags":["Safety"],"oracles":[{"type":"approval-not-required"}]}"#,
    );
    env.write(
        "traces/t/a.trace.ndjson.zst",
        sealed_zst(&trace_text("t", "a", &[END])),
    );
    let out = env.run(&["check", "traces", "--format", "json", "--tag", "safety"]);
    assert_eq!(out.code, 0);
    let r = json(&out);
    assert_eq!(
        (
            r["summary"]["traces"].as_u64(),
            r["results"].as_array().unwrap().len()
        ),
        (Some(1), 1)
    );
    assert_eq!(r["results"][0]["scenario"], "t");
    let out = env.run(&["check", "traces", "--format", "json", "--scenario", "GOOD"]);
    assert_eq!(json(&out)["results"][0]["scenario"], "good");
    let out = env.run(&["check", "traces", "--scenario", "nope"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("no scenario matches --scenario `nope`"),
        "{}",
        out.stderr
    );
}

#[test]
fn harness_suites_load_with_scenarios_dir() {
    let env = Env::new();
    env.write("suite/basic.json", r#"[{"id":"h1","title":"t","risk":"Low","contract":"plan.json","oracles":[{"type":"approval-not-required"}]}]"#);
    env.write("suite/plan.json", r#"{"goal":"not a scenario"}"#);
    env.write("suite/x.baseline.json", "{}");
    env.write(
        "traces/h1.trace.ndjson.zst",
        sealed_zst(&trace_text("h1", "default", &[END])),
    );
    let out = env.run(&[
        "check",
        "traces",
        "--scenarios",
        "suite",
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(json(&out)["summary"]["passed"], 1);
}

#[test]
fn json_report_fields_and_json_file() {
    let env = Env::new();
    good_suite(&env);
    let out = env.run(&["check", "traces", "--json", "out/report.json"]);
    assert_eq!(out.code, 2, "the directory of --json must exist");
    std::fs::create_dir_all(env.path("out")).unwrap();
    let out = env.run(&["check", "traces", "--json", "out/report.json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r: serde_json::Value = serde_json::from_slice(&env.read("out/report.json")).unwrap();
    assert_eq!(r["schema_version"], 1);
    assert_eq!(r["tool"]["name"], "tracereplay");
    for k in [
        "traces",
        "scenarios",
        "passed",
        "failed",
        "errors",
        "ignored_failures",
        "drifted",
        "new",
        "obsolete",
    ] {
        assert!(r["summary"][k].is_u64(), "summary.{k}");
    }
    let row = &r["results"][0];
    for k in [
        "scenario",
        "case",
        "path",
        "content_hash",
        "risk",
        "verdict",
        "source",
        "oracles",
        "drift",
    ] {
        assert!(row.get(k).is_some(), "result.{k}");
    }
    assert_eq!(row["path"], "traces/good/default.trace.ndjson.zst");
    let oracle = &row["oracles"][0];
    for k in ["type", "verdict", "message", "evidence"] {
        assert!(oracle.get(k).is_some(), "oracle.{k}");
    }
    assert_eq!(oracle["evidence"], serde_json::json!([1]));
}

#[test]
fn scenario_input_never_reaches_the_report() {
    let env = Env::new();
    env.write(
        "traces/s/s.scenario.json",
        r#"{"id":"s","title":"t","risk":"Low","input":{"userMessage":"TOP-SECRET-INPUT-TEXT"},"oracles":[{"type":"tool-called","tool":"x"}]}"#,
    );
    env.write(
        "traces/s/a.trace.ndjson.zst",
        sealed_zst(&trace_text("s", "a", &[END])),
    );
    for format in ["json", "human"] {
        let out = env.run(&["check", "traces", "--format", format]);
        assert!(
            !out.stdout.contains("TOP-SECRET") && !out.stderr.contains("TOP-SECRET"),
            "{format}"
        );
    }
}

#[test]
fn could_not_do_its_job_exits_2() {
    let env = Env::new();
    let out = env.run(&["check", "missing/"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("`missing/` does not exist"),
        "{}",
        out.stderr
    );
    std::fs::create_dir_all(env.path("empty")).unwrap();
    let out = env.run(&["check", "empty"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("no scenario and no trace found"),
        "{}",
        out.stderr
    );
    good_suite(&env);
    let out = env.run(&["check", "traces", "--baselines", "nowhere"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("`nowhere`"), "{}", out.stderr);
    let out = env.run(&["check", "traces", "--fail-on", "sometimes"]);
    assert_eq!(out.code, 2);
    let out = env.run(&["check", "traces", "-j", "0"]);
    assert_eq!(out.code, 2);
}

#[test]
fn the_default_path_is_traces() {
    let env = Env::new();
    good_suite(&env);
    let out = env.run_with(&["check"], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("PASS  good"), "{}", out.stdout);
}

#[test]
fn init_lays_out_a_passing_suite_and_never_overwrites() {
    let env = Env::new();
    let out = env.run(&["init"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = env.run(&["check", "traces/", "--fail-on", "any", "--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let r = json(&out);
    assert_eq!(
        (
            r["summary"]["passed"].as_u64(),
            r["summary"]["new"].as_u64()
        ),
        (Some(1), Some(0))
    );
    assert!(env.path(".github/workflows/tracereplay.yml").exists());
    assert!(env.path("tracereplay.toml").exists());
    // The project file it writes loads.
    assert_eq!(env.run(&["config"]).code, 0);
    let before = env.read("baselines/example.search/default.baseline.json");
    let out = env.run(&["init"]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("never overwrites"), "{}", out.stderr);
    assert_eq!(
        env.read("baselines/example.search/default.baseline.json"),
        before
    );
    assert_eq!(env.run(&["verify"]).code, 0);
}
