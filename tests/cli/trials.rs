//! Trials: several recordings of one case judged as a set (case verdicts, flaky marks,
//! estimates, trial-set baselines and their statistical drift).

use crate::util::*;
use serde_json::Value;

/// A trace of trial `trial` of `scenario`/`case` that calls `tool` and completes.
pub(crate) fn trial_trace(scenario: &str, case: &str, trial: &str, tool: &str) -> Vec<u8> {
    let text = trace_text(scenario, case, &[&call("c1", tool), END]);
    let text = text.replacen(
        &format!("\"case\":\"{case}\""),
        &format!("\"case\":\"{case}\",\"trial\":{trial}"),
        1,
    );
    sealed_zst(&text)
}

/// Scenario `s` (risk `risk`, extra JSON members `extra`) expecting a call of `search`, and
/// one trace per entry of `tools`: trial i calls `tools[i]`.
pub(crate) fn suite(env: &Env, risk: &str, extra: &str, tools: &[&str]) {
    env.write(
        "traces/s/s.scenario.json",
        format!(
            r#"{{"id":"s","title":"t","risk":"{risk}"{extra},"oracles":[{{"type":"tool-called","tool":"search"}}]}}"#
        ),
    );
    write_trials(env, "traces/s/c", tools);
}

pub(crate) fn write_trials(env: &Env, dir: &str, tools: &[&str]) {
    let _ = std::fs::remove_dir_all(env.path(dir));
    for (i, tool) in tools.iter().enumerate() {
        env.write(
            &format!("{dir}/{i}.trace.ndjson.zst"),
            trial_trace("s", "c", &i.to_string(), tool),
        );
    }
}

fn check_json(env: &Env, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["check", "traces/", "--format", "json"];
    args.extend_from_slice(extra);
    let out = env.run_with(&args, &[("CI", "true")]);
    assert!(out.code <= 1, "{}", out.stderr);
    (out.code, json(&out))
}

fn the_case(r: &Value) -> &Value {
    let cases = r["cases"].as_array().expect("a cases list");
    assert_eq!(cases.len(), 1, "{cases:?}");
    &cases[0]
}

fn close(v: &Value, want: f64) {
    let got = v.as_f64().unwrap_or_else(|| panic!("{v} is not a number"));
    assert!((got - want).abs() < 5e-7, "{got} is not {want}");
}

#[test]
fn a_case_of_four_trials_gets_one_verdict_estimates_and_a_flaky_mark() {
    let env = Env::new();
    suite(&env, "High", "", &["search", "search", "other", "search"]);
    let (code, r) = check_json(&env, &[]);
    assert_eq!(code, 1, "3/4 under the default \"all\" fails a High case");
    let c = the_case(&r);
    assert_eq!(c["verdict"], "fail");
    assert_eq!(
        (c["trials"].as_u64(), c["passed"].as_u64()),
        (Some(4), Some(3))
    );
    assert_eq!(c["flaky"], true);
    assert_eq!(
        c["flaky_oracles"],
        serde_json::json!([{"oracle": "0:tool-called", "passed": 3, "of": 4}])
    );
    close(&c["pass_rate"], 0.75);
    for (v, want) in c["pass_hat_k"]
        .as_array()
        .unwrap()
        .iter()
        .zip([0.75, 0.5, 0.25, 0.0])
    {
        close(v, want);
    }
    for (v, want) in c["pass_at_k"]
        .as_array()
        .unwrap()
        .iter()
        .zip([0.75, 1.0, 1.0, 1.0])
    {
        close(v, want);
    }
    let [lo, hi] = [&c["wilson"][0], &c["wilson"][1]].map(|v| v.as_f64().unwrap());
    assert!(lo < 0.75 && 0.75 < hi);
    // Counts are of cases; traces of files.
    let s = &r["summary"];
    assert_eq!(
        (s["traces"].as_u64(), s["cases"].as_u64()),
        (Some(4), Some(1))
    );
    assert_eq!(
        (s["failed"].as_u64(), s["passed"].as_u64()),
        (Some(1), Some(0))
    );
    assert_eq!(
        (s["flaky"].as_u64(), s["blocking"].as_u64()),
        (Some(1), Some(1))
    );
    // Each trial keeps its row, in trial order, and no row blocks by itself.
    let rows = r["results"].as_array().unwrap();
    let trials: Vec<&str> = rows.iter().map(|r| r["trial"].as_str().unwrap()).collect();
    assert_eq!(trials, ["0", "1", "2", "3"]);
    assert!(rows.iter().all(|r| r["blocking"] == false));
    assert_eq!(rows[2]["verdict"], "fail");
}

#[test]
fn a_policy_decides_the_verdict_and_flaky_never_changes_the_exit_code() {
    let env = Env::new();
    let policy = r#","trials":{"min":4,"pass":{"at-least":3}}"#;
    suite(
        &env,
        "High",
        policy,
        &["search", "search", "other", "search"],
    );
    let (code, r) = check_json(&env, &[]);
    assert_eq!(code, 0, "{r}");
    let c = the_case(&r);
    assert_eq!(
        (c["verdict"].as_str(), c["flaky"].as_bool()),
        (Some("pass"), Some(true))
    );
    let human = env.run_with(&["check", "traces/"], &[("CI", "true")]);
    assert!(
        human.stdout.contains("FLAKY s/c: 3/4 trials pass"),
        "{}",
        human.stdout
    );
}

#[test]
fn too_few_trials_make_the_case_an_error_never_a_pass() {
    let env = Env::new();
    suite(&env, "Low", r#","trials":{"min":5}"#, &["search"; 4]);
    let (code, r) = check_json(&env, &[]);
    assert_eq!(code, 1);
    let c = the_case(&r);
    assert_eq!(c["verdict"], "error");
    assert_eq!(c["reason"], "4 trial(s) recorded, the scenario needs 5");
    assert_eq!(r["summary"]["errors"], 1);
}

#[test]
fn a_rate_policy_uses_the_lower_wilson_bound() {
    let env = Env::new();
    suite(
        &env,
        "High",
        r#","trials":{"min":8,"pass":{"rate":0.70}}"#,
        &["search"; 8],
    );
    assert_eq!(check_json(&env, &[]).0, 0, "8/8: 0.747276 meets 0.70");
    suite(
        &env,
        "High",
        r#","trials":{"min":8,"pass":{"rate":0.75}}"#,
        &["search"; 8],
    );
    let (code, r) = check_json(&env, &[]);
    assert_eq!(code, 1, "8/8: 0.747276 misses 0.75");
    assert!(
        the_case(&r)["reason"]
            .as_str()
            .unwrap()
            .contains("0.747276")
    );
}

#[test]
fn a_malformed_policy_or_trial_is_refused_with_a_clear_error() {
    let env = Env::new();
    suite(
        &env,
        "High",
        r#","trials":{"min":4,"pass":"most"}"#,
        &["search"; 4],
    );
    let (code, r) = check_json(&env, &[]);
    assert_eq!(code, 1);
    let row = &r["results"][0];
    assert_eq!(row["error"]["category"], "scenario-invalid");
    assert!(
        row["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`trials.pass` is `most`")
    );
    let gates = env.run_with(&["gates", "traces/"], &[("CI", "true")]);
    assert_eq!(gates.code, 1, "{}", gates.stdout);

    let env = Env::new();
    suite(&env, "High", "", &["search"]);
    let text = trace_text("s", "c", &[&call("c1", "search"), END]).replacen(
        "\"case\":\"c\"",
        "\"case\":\"c\",\"trial\":1.5",
        1,
    );
    env.write("traces/s/c/0.trace.ndjson.zst", sealed_zst_unchecked(&text));
    let (_, r) = check_json(&env, &[]);
    let row = &r["results"][0];
    assert_eq!(row["error"]["category"], "malformed");
    assert_eq!(row["error"]["line"], 1);
    assert!(
        row["error"]["message"]
            .as_str()
            .unwrap()
            .contains("header `trial`")
    );
}

#[test]
fn single_trial_suites_list_no_cases() {
    let env = Env::new();
    copy_demo(&env, true);
    let (_, r) = check_json(&env, &[]);
    assert!(r.get("cases").is_none());
    assert!(r["summary"].get("cases").is_none());
    assert!(r.get("thresholds").is_none());
}

/// Scenario `id` (`policy` in its JSON after the risk, such as `,"trials":{…}`) expecting a call
/// of `search`, and its case `c` recorded as `n` trials; with `regressed`, the trials from the
/// third on call `other`.
pub(crate) fn lay_out_case(env: &Env, id: &str, policy: &str, n: usize, regressed: bool) {
    env.write(
        &format!("traces/{id}/{id}.scenario.json"),
        format!(
            r#"{{"id":"{id}","title":"t","risk":"High"{policy},"oracles":[{{"type":"tool-called","tool":"search"}}]}}"#
        ),
    );
    let _ = std::fs::remove_dir_all(env.path(&format!("traces/{id}/c")));
    for t in 0..n {
        let tool = if regressed && t > 1 {
            "other"
        } else {
            "search"
        };
        env.write(
            &format!("traces/{id}/c/{t}.trace.ndjson.zst"),
            trial_trace(id, "c", &t.to_string(), tool),
        );
    }
}

/// `check` of `traces/` (under CI, no cache) as `n` partition shares, each written to
/// `share<K>.json`: their file names.
pub(crate) fn check_shares(env: &Env, n: usize) -> Vec<String> {
    (1..=n)
        .map(|k| {
            let file = format!("share{k}.json");
            let part = format!("hash:{k}/{n}");
            let args = ["check", "traces/", "--partition", &part, "--json", &file];
            let out = env.run(&[&args[..], &["--no-cache"]].concat());
            assert!(out.code <= 1, "{}", out.stderr);
            file
        })
        .collect()
}

/// Approves the current trials off CI.
pub(crate) fn approve(env: &Env) {
    let out = env.run_with(&["baseline", "approve"], &[("CI", "0")]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
}

#[test]
fn trial_sets_are_approved_whole_and_a_regression_between_sets_is_found() {
    let env = Env::new();
    suite(
        &env,
        "High",
        r#","trials":{"min":8,"pass":{"at-least":1}}"#,
        &["search"; 8],
    );
    approve(&env);
    let approved = String::from_utf8(env.read("baselines/s/c.baseline.json")).unwrap();
    let set: Value = serde_json::from_str(&approved).unwrap();
    assert_eq!(set["format"], "tracereplay.baseline-set");
    let ids: Vec<u64> = (set["trials"].as_array().unwrap().iter())
        .map(|t| t["trial"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, [0, 1, 2, 3, 4, 5, 6, 7]);
    // The same agent recorded again (same behaviour): no drift.
    write_trials(&env, "traces/s/c", &["search"; 8]);
    let (code, r) = check_json(&env, &[]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(the_case(&r)["drift"], serde_json::json!([]));
    assert!(r["thresholds"]["alpha"].as_f64() == Some(0.05));
    // 8/8 → 2/8 passing: the verdict regression (one-sided Fisher, 45/12870).
    let mut now = ["other"; 8];
    now[1] = "search";
    now[5] = "search";
    write_trials(&env, "traces/s/c", &now);
    let out = env.run_with(&["check", "traces/", "--format", "json"], &[("CI", "0")]);
    assert_eq!(out.code, 1);
    let r = json(&out);
    let c = the_case(&r);
    assert_eq!(c["verdict"], "pass", "at least 1 passes");
    let drift = c["drift"].as_array().unwrap();
    let cats: Vec<&str> = drift
        .iter()
        .map(|d| d["category"].as_str().unwrap())
        .collect();
    assert!(cats.contains(&"regression"), "{cats:?}");
    let regression = drift
        .iter()
        .find(|d| d["category"] == "regression")
        .unwrap();
    close(&regression["p"], 45.0 / 12870.0);
    assert_eq!(
        regression["approved"],
        serde_json::json!({"n": 8, "passed": 8})
    );
    assert_eq!(
        regression["current"],
        serde_json::json!({"n": 8, "passed": 2})
    );
    assert!(c["family_p"]["verdict"].as_f64().is_some());
    assert_eq!(c["blocking"], true);
    // The pending file is the new set; accepting it makes the run pass again.
    let pending: Value =
        serde_json::from_slice(&env.read("baselines/s/c.baseline.json.new")).unwrap();
    assert_eq!(pending["format"], "tracereplay.baseline-set");
    let out = env.run_with(&["baseline", "accept"], &[("CI", "0")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(check_json(&env, &[]).0, 0);
}

#[test]
fn a_single_trace_against_an_approved_set_is_trials_changed() {
    let env = Env::new();
    suite(&env, "Low", "", &["search"; 4]);
    approve(&env);
    write_trials(&env, "traces/s/c", &["search"]);
    let (code, r) = check_json(&env, &[]);
    assert_eq!(code, 1);
    let row = &r["results"][0];
    assert_eq!(row["drift"][0]["category"], "trials-changed");
    // And the other way round.
    let env = Env::new();
    suite(&env, "Low", "", &["search"]);
    approve(&env);
    write_trials(&env, "traces/s/c", &["search"; 3]);
    let (code, r) = check_json(&env, &[]);
    assert_eq!(code, 1);
    assert_eq!(the_case(&r)["drift"][0]["category"], "trials-changed");
}

#[test]
fn two_and_two_trials_are_underpowered_and_say_what_would_do() {
    let env = Env::new();
    suite(&env, "Low", "", &["search"; 2]);
    approve(&env);
    write_trials(&env, "traces/s/c", &["other"; 2]);
    let (_, r) = check_json(&env, &["--fail-on", "none"]);
    let c = the_case(&r);
    assert_eq!(c["underpowered"], true);
    let why = c["underpowered_detail"].as_str().unwrap();
    assert!(
        why.starts_with("2 and 2 trials cannot show a regression at α = 0.05"),
        "{why}"
    );
    assert_eq!(r["summary"]["underpowered"], 1);
    assert!(
        !c["drift"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["category"] == "regression"),
        "2/2 → 0/2 cannot reach α"
    );
}

fn junit_case(env: &Env) -> (String, Vec<String>) {
    let out = env.run_with(
        &["check", "traces/", "--format", "junit"],
        &[("CI", "true")],
    );
    let doc = roxmltree::Document::parse(&out.stdout).unwrap();
    let cases: Vec<roxmltree::Node> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), 1, "one testcase per case: {}", out.stdout);
    let name = cases[0].attribute("name").unwrap().to_owned();
    let children = (cases[0].children())
        .filter(|n| n.is_element())
        .map(|n| n.tag_name().name().to_owned())
        .collect();
    (name, children)
}

#[test]
fn junit_marks_flaky_and_rerun_failures_as_nextest_does() {
    let env = Env::new();
    let policy = r#","trials":{"min":4,"pass":{"at-least":3}}"#;
    suite(
        &env,
        "High",
        policy,
        &["search", "search", "other", "search"],
    );
    assert_eq!(
        junit_case(&env),
        ("c (4 trials)".into(), vec!["flakyFailure".into()])
    );
    suite(&env, "High", "", &["search", "other", "other", "search"]);
    assert_eq!(
        junit_case(&env),
        (
            "c (4 trials)".into(),
            vec!["failure".into(), "rerunFailure".into()]
        )
    );
}

#[test]
fn markdown_and_github_output_put_the_case_line_first() {
    let env = Env::new();
    suite(&env, "High", "", &["search", "other", "search", "search"]);
    let md = env.run_with(
        &["check", "traces/", "--format", "markdown"],
        &[("CI", "true")],
    );
    let case = md.stdout.find("| case | s | c |").expect(&md.stdout);
    let trial = md
        .stdout
        .find("traces/s/c/1.trace.ndjson.zst")
        .expect(&md.stdout);
    assert!(case < trial, "{}", md.stdout);
    assert!(
        md.stdout.contains("FAIL s/c: 3/4 trials pass (flaky)"),
        "{}",
        md.stdout
    );
    let gh = env.run_with(
        &["check", "traces/", "--format", "github"],
        &[("CI", "true")],
    );
    let first = gh.stdout.lines().next().unwrap();
    assert!(
        first.starts_with("::error title=case s / c (4 trials)::FAIL s/c"),
        "{}",
        gh.stdout
    );
}

#[test]
fn reports_are_byte_identical_at_any_thread_count() {
    let env = Env::new();
    suite(
        &env,
        "High",
        "",
        &["search", "other", "search", "search", "other", "search"],
    );
    approve(&env);
    write_trials(
        &env,
        "traces/s/c",
        &["other", "other", "search", "other", "other", "other"],
    );
    let run = |j: &str| {
        env.run_with(
            &["check", "traces/", "--format", "json", "-j", j],
            &[("CI", "true")],
        )
        .stdout
    };
    let one = run("1");
    assert!(one.contains("\"cases\""));
    assert_eq!(one, run("2"));
    assert_eq!(one, run("4"));
}

#[test]
fn gates_warns_of_powerless_minimums_unreachable_rates_and_missing_trials() {
    let env = Env::new();
    suite(&env, "High", r#","trials":{"min":2}"#, &["search"]);
    let out = env.run_with(&["gates", "traces/"], &[("CI", "true")]);
    assert_eq!(out.code, 0, "warnings only: {}", out.stdout);
    assert!(
        out.stdout
            .contains("`trials.min` 2: 2 and 2 trials cannot show a regression at α = 0.05"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("case `c` has 1 recorded trial(s), fewer than `trials.min` 2"),
        "{}",
        out.stdout
    );
    suite(
        &env,
        "High",
        r#","trials":{"min":8,"pass":{"rate":0.75}}"#,
        &["search"; 8],
    );
    let out = env.run_with(&["gates", "traces/", "--alpha", "0.01"], &[("CI", "true")]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stdout
            .contains("even 8/8 passing trials give a lower Wilson bound of 0.747276"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("recorded trial(s)"), "{}", out.stdout);
}

#[test]
fn diff_from_to_compares_trial_sets_and_summarises_the_suite() {
    let env = Env::new();
    suite(&env, "High", "", &["search"; 8]);
    write_trials(&env, "old/s/c", &["search"; 8]);
    let mut now = ["other"; 8];
    now[0] = "search";
    write_trials(&env, "new/s/c", &now);
    // A second case that did not change.
    for (i, dir) in ["old/s/d", "new/s/d"].iter().enumerate() {
        for t in 0..4 {
            env.write(
                &format!("{dir}/{t}.trace.ndjson.zst"),
                trial_trace("s", "d", &(t + 10 * i).to_string(), "search"),
            );
        }
    }
    let run = |args: &[&str]| env.run_with(args, &[("CI", "true")]);
    let out = run(&[
        "diff",
        "--from",
        "old/",
        "--to",
        "new/",
        "--scenarios",
        "traces/",
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let r = json(&out);
    let sets = &r["sets"];
    assert_eq!(sets["cases"], 2);
    close(&sets["mean_pass_rate_old"], 1.0);
    close(&sets["mean_pass_rate_new"], (1.0 / 8.0 + 1.0) / 2.0);
    close(&sets["change"], (1.0 / 8.0 + 1.0) / 2.0 - 1.0);
    let order: Vec<&str> = (sets["cases_by_effect"].as_array().unwrap().iter())
        .map(|e| e["case"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["c", "d"], "largest drop first");
    let c = &sets["cases_by_effect"][0];
    let regression = (c["findings"].as_array().unwrap().iter())
        .find(|f| f["category"] == "regression")
        .expect("the regression is found");
    close(&regression["p"], 9.0 / 12870.0); // 8/8 → 1/8, one-sided Fisher
    let entries = r["entries"].as_array().unwrap();
    assert_eq!(
        entries.len(),
        1,
        "only the changed case drifted: {entries:?}"
    );
    let human = run(&[
        "diff",
        "--from",
        "old/",
        "--to",
        "new/",
        "--scenarios",
        "traces/",
    ]);
    assert!(
        human
            .stdout
            .contains("trial sets: 2 case(s), mean pass rate 1.000 -> 0.562 (-0.438)"),
        "{}",
        human.stdout
    );
    // The same trials on both sides: nothing.
    let same = run(&[
        "diff",
        "--from",
        "old/",
        "--to",
        "old/",
        "--scenarios",
        "traces/",
    ]);
    assert_eq!(same.code, 0, "{}", same.stdout);
}

#[test]
fn merged_shares_equal_the_whole_run_with_thresholds_decided_again() {
    let env = Env::new();
    // Six scenarios: four recorded as 8 trials, two as single traces.
    let ids = ["a", "b", "c", "d", "e", "f"];
    let lay_out = |regressed: bool| {
        for (k, id) in ids.iter().enumerate() {
            // The single traces' scenarios state no policy: a share may list no case at all.
            let (policy, n) = match k < 4 {
                true => (r#","trials":{"min":1,"pass":{"at-least":1}}"#, 8),
                false => ("", 1),
            };
            lay_out_case(&env, id, policy, n, regressed && k % 2 == 0);
        }
    };
    lay_out(false);
    approve(&env);
    lay_out(true);
    let run = |args: &[&str]| env.run_with(args, &[("CI", "true")]);
    let whole = run(&["check", "traces/", "--format", "json", "--no-cache"]);
    assert_eq!(whole.code, 1, "{}", whole.stdout);
    let shares = check_shares(&env, 2);
    let one: Value = serde_json::from_slice(&env.read("share1.json")).unwrap();
    let two: Value = serde_json::from_slice(&env.read("share2.json")).unwrap();
    assert!(
        !one["results"].as_array().unwrap().is_empty()
            && !two["results"].as_array().unwrap().is_empty(),
        "both shares hold rows"
    );
    let merged = run(&["merge", "--format", "json", &shares[0], &shares[1]]);
    assert_eq!(merged.code, whole.code, "{}", merged.stderr);
    assert_eq!(
        merged.stdout, whole.stdout,
        "merged shares equal the whole run"
    );
    let r = json(&whole);
    let regressed: Vec<&str> = (r["cases"].as_array().unwrap().iter())
        .filter(|c| {
            c["drift"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| d["category"] == "regression")
        })
        .map(|c| c["scenario"].as_str().unwrap())
        .collect();
    assert_eq!(regressed, ["a", "c"], "8/8 → 2/8 on a and c only");
}

#[test]
fn a_failing_trial_leaves_its_evidence_under_its_case() {
    let env = Env::new();
    suite(&env, "High", "", &["search", "other", "search", "other"]);
    let out = env.run_with(&["check", "traces/", "--artifacts"], &[("CI", "true")]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let runs: Vec<String> = std::fs::read_dir(env.path(".tracereplay/runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let files = files_under(&env.path(&format!(".tracereplay/runs/{}/evidence", runs[0])));
    assert_eq!(files, ["s/c/1.json", "s/c/3.json"]);
}

#[test]
fn last_failed_brings_back_every_trial_of_a_failing_case() {
    let env = Env::new();
    suite(&env, "High", "", &["search", "other", "search", "search"]);
    env.write(
        "traces/t/t.scenario.json",
        r#"{"id":"t","title":"t","risk":"High","oracles":[{"type":"tool-called","tool":"search"}]}"#,
    );
    env.write(
        "traces/t/ok.trace.ndjson.zst",
        sealed_zst(&trace_text("t", "ok", &[&call("c1", "search"), END])),
    );
    let off = [("CI", "0")];
    let first = env.run_with(
        &["check", "traces/", "--artifacts", "--drift", "ignore"],
        &off,
    );
    assert_eq!(first.code, 1, "{}", first.stderr);
    let again = env.run_with(
        &[
            "check",
            "traces/",
            "--last-failed",
            "--drift",
            "ignore",
            "--format",
            "json",
        ],
        &off,
    );
    assert_eq!(again.code, 1, "{}", again.stderr);
    let r = json(&again);
    // All four trials are judged again (one failed), the passing scenario is left out.
    let c = the_case(&r);
    assert_eq!(
        (c["trials"].as_u64(), c["passed"].as_u64()),
        (Some(4), Some(3))
    );
    assert_eq!(r["results"].as_array().unwrap().len(), 4);
}

#[test]
fn strict_drift_reports_unseen_behaviour_without_failing_on_it() {
    let env = Env::new();
    suite(
        &env,
        "High",
        r#","trials":{"min":4,"pass":{"at-least":1}}"#,
        &["search"; 4],
    );
    approve(&env);
    // Every current trial also calls a tool no approved trial called, once: not enough for a
    // significant change at 4 and 4 (p = 0.029 · 2 tests), but new behaviour.
    for i in 0..4 {
        let text = trace_text(
            "s",
            "c",
            &[&call("c1", "search"), &call("c2", "lookup"), END],
        );
        let text = text.replacen(
            "\"case\":\"c\"",
            &format!("\"case\":\"c\",\"trial\":{i}"),
            1,
        );
        env.write(
            &format!("traces/s/c/{i}.trace.ndjson.zst"),
            sealed_zst(&text),
        );
    }
    let (_, r) = check_json(&env, &["--drift", "strict"]);
    let drift = the_case(&r)["drift"].as_array().unwrap().clone();
    let unseen = drift
        .iter()
        .find(|d| d["category"] == "unseen-behaviour")
        .expect("reported");
    assert_eq!(unseen["fails"], false, "never blocks");
    assert!(
        unseen["detail"]
            .as_str()
            .unwrap()
            .starts_with("4 of 4 current trials follow a tool sequence")
    );
    let (_, plain) = check_json(&env, &[]);
    assert!(
        !the_case(&plain)["drift"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["category"] == "unseen-behaviour"),
        "only under --drift strict"
    );
    // Off CI the changed set is pending; its status line counts the trials.
    let off = env.run_with(&["check", "traces/", "--drift", "strict"], &[("CI", "0")]);
    assert!(off.code <= 1, "{}", off.stderr);
    let pending = env.run_with(&["baseline", "pending"], &[("CI", "0")]);
    assert!(
        pending.stdout.contains(
            "changed  s/c  baselines/s/c.baseline.json  (set: 4/4 trials pass; approved 4/4)"
        ),
        "{}",
        pending.stdout
    );
    // `--diff` shows the set's own findings (trials are never paired one to one)…
    let diff = env.run_with(&["baseline", "pending", "--diff"], &[("CI", "0")]);
    assert!(
        diff.stdout
            .contains("tool-usage-changed: tool `lookup` called (p = 0.028571"),
        "{}",
        diff.stdout
    );
    assert!(!diff.stdout.contains("      trial 0:\n"), "{}", diff.stdout);
    // …and `--trials` lists the pending trials, each calling `lookup`.
    let diff = env.run_with(
        &["baseline", "pending", "--diff", "--trials"],
        &[("CI", "0")],
    );
    for i in 0..4 {
        assert!(
            diff.stdout.contains(&format!("      trial {i}:\n")),
            "{}",
            diff.stdout
        );
    }
    assert_eq!(
        diff.stdout.matches("+ call#2 lookup").count(),
        4,
        "{}",
        diff.stdout
    );
}

#[test]
fn a_null_trial_is_malformed_not_absent() {
    let env = Env::new();
    suite(&env, "High", "", &["search"]);
    let text = trace_text("s", "c", &[&call("c1", "search"), END]).replacen(
        "\"case\":\"c\"",
        "\"case\":\"c\",\"trial\":null",
        1,
    );
    env.write("traces/s/c/0.trace.ndjson.zst", sealed_zst_unchecked(&text));
    let (_, r) = check_json(&env, &[]);
    let e = &r["results"][0]["error"];
    assert_eq!(e["category"], "malformed");
    assert!(e["message"].as_str().unwrap().contains("found null"), "{e}");
}

#[test]
fn trials_are_listed_integers_first_numerically_then_bytewise() {
    let env = Env::new();
    suite(&env, "Low", "", &[]);
    for (file, trial) in [("x", "\"b\""), ("y", "10"), ("z", "2"), ("w", "\"A\"")] {
        env.write(
            &format!("traces/s/c/{file}.trace.ndjson.zst"),
            trial_trace("s", "c", trial, "search"),
        );
    }
    let (_, r) = check_json(&env, &[]);
    let trials: Vec<&str> = (r["results"].as_array().unwrap().iter())
        .map(|r| r["trial"].as_str().unwrap())
        .collect();
    assert_eq!(trials, ["2", "10", "A", "b"]);
}
