//! The result cache keys each row by the scenario it was judged under, not by every scenario of
//! the run: editing one scenario judges again only the traces that name it, and a run over part
//! of the suite (one directory, spelled any way) recalls and keeps the rows of the rest. What
//! changed is always judged again: no stale verdict survives an edit.

use crate::util::*;

/// Scenarios `a` and `b`, each expecting a call of `search`, with three passing traces each.
fn two_scenarios(env: &Env) {
    for id in ["a", "b"] {
        env.write(
            &format!("traces/{id}/{id}.scenario.json"),
            scenario(id, "High", "search"),
        );
        for t in 1..=3 {
            let c = call("c1", "search");
            env.write(
                &format!("traces/{id}/t{t}.trace.ndjson.zst"),
                sealed_zst(&trace_text(id, &format!("t{t}"), &[&c, END])),
            );
        }
    }
}

/// `check PATHS --format json --timings` under CI: the exit code, the report and how many rows
/// came from the cache.
fn check(env: &Env, paths: &[&str]) -> (i32, serde_json::Value, usize) {
    let mut args = vec!["check"];
    args.extend(paths);
    args.extend(["--format", "json", "--timings"]);
    let out = env.run_with(&args, &[("CI", "true")]);
    assert!(out.code == 0 || out.code == 1, "{}", out.stderr);
    let timings = (out.stderr.lines())
        .find(|l| l.starts_with("timings:"))
        .unwrap_or_else(|| panic!("no timings in {}", out.stderr));
    let recalled = timings
        .split(", ")
        .find_map(|p| p.strip_suffix(" from the cache)"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {timings}"));
    (out.code, json(&out), recalled)
}

fn verdict<'a>(report: &'a serde_json::Value, suffix: &str) -> &'a str {
    row(report, suffix)["verdict"].as_str().unwrap()
}

#[test]
fn editing_one_scenario_judges_only_its_traces() {
    let env = Env::new();
    two_scenarios(&env);
    assert_eq!(check(&env, &["traces/"]).2, 0);
    assert_eq!(check(&env, &["traces/"]).2, 6);
    // `a` now expects a tool its traces never call: its three rows fail, `b`'s come back.
    let original = env.read("traces/a/a.scenario.json");
    env.write("traces/a/a.scenario.json", scenario("a", "High", "fetch"));
    let (code, edited, recalled) = check(&env, &["traces/"]);
    assert_eq!((code, recalled), (1, 3));
    for t in 1..=3 {
        assert_eq!(
            verdict(&edited, &format!("a/t{t}.trace.ndjson.zst")),
            "fail"
        );
        assert_eq!(
            verdict(&edited, &format!("b/t{t}.trace.ndjson.zst")),
            "pass"
        );
    }
    // The same report as a run without the cache, and again from the cache.
    let fresh = env.run_with(
        &["check", "traces/", "--format", "json", "--no-cache"],
        &[("CI", "true")],
    );
    assert_eq!(json(&fresh), edited);
    assert_eq!(check(&env, &["traces/"]), (1, edited, 6));
    // Put back, `a` is judged again and passes.
    env.write("traces/a/a.scenario.json", &original);
    let (code, report, recalled) = check(&env, &["traces/"]);
    assert_eq!((code, recalled), (0, 3));
    assert_eq!(verdict(&report, "a/t1.trace.ndjson.zst"), "pass");
}

/// A second file claiming scenario `a`'s id changes `a`'s rows (the duplicate is a problem of
/// the scenario): they are judged again, though `a`'s own file did not change.
#[test]
fn a_duplicate_id_elsewhere_judges_the_scenario_again() {
    let env = Env::new();
    two_scenarios(&env);
    check(&env, &["traces/"]);
    env.write("traces/c/c.scenario.json", scenario("a", "High", "search"));
    let (code, report, recalled) = check(&env, &["traces/"]);
    assert_eq!((code, recalled), (1, 3));
    let a1 = row(&report, "a/t1.trace.ndjson.zst");
    assert_ne!(a1["verdict"], "pass", "{a1:#}");
    assert!(a1.to_string().contains("defined more than once"), "{a1:#}");
    assert_eq!(verdict(&report, "b/t1.trace.ndjson.zst"), "pass");
}

#[test]
fn a_run_over_one_directory_recalls_and_keeps_the_rest() {
    let env = Env::new();
    two_scenarios(&env);
    check(&env, &["traces/"]);
    let absolute = env.path("traces/a");
    let absolute = absolute.to_str().unwrap();
    for paths in [
        &["traces/a"][..],
        &["./traces/b/"],
        &[absolute],
        &["traces/a", "traces/b"],
    ] {
        let traces = 3 * paths.len();
        assert_eq!(check(&env, paths).2, traces, "{paths:?}");
    }
    assert_eq!(check(&env, &["."]).2, 6);
    // A trace gone from the directory a run searched is dropped from the cache; the same bytes
    // back in place (a new inode and times) are judged again, while `b`'s rows, outside that
    // directory, were kept.
    let t1 = env.read("traces/a/t1.trace.ndjson.zst");
    std::fs::remove_file(env.path("traces/a/t1.trace.ndjson.zst")).unwrap();
    assert_eq!(check(&env, &["traces/a"]).2, 2);
    env.write("traces/a/t1.trace.ndjson.zst", &t1);
    assert_eq!(check(&env, &["traces/"]).2, 5);
}

/// With baselines compared, a row is recalled only while the approved baseline it matched is
/// unchanged: an edited baseline re-judges (and drifts) that case alone.
#[test]
fn a_changed_baseline_judges_only_its_case_again() {
    let env = Env::new();
    two_scenarios(&env);
    let approved = env.run_with(&["baseline", "approve", "traces/"], &[]);
    assert_eq!(approved.code, 0, "{}", approved.stderr);
    let baseline = "baselines/a/t1.baseline.json";
    let original = env.read(baseline);
    let text = String::from_utf8(original.clone()).unwrap();
    assert!(text.contains("\"search\""), "{text}");
    assert_eq!(check(&env, &["traces/"]).0, 0);
    assert_eq!(check(&env, &["traces/"]).2, 6);
    env.write(baseline, text.replace("\"search\"", "\"fetch\""));
    let (code, report, recalled) = check(&env, &["traces/"]);
    assert_eq!((code, recalled), (1, 5), "{report:#}");
    let drift = &row(&report, "a/t1.trace.ndjson.zst")["drift"];
    assert!(drift.as_array().is_some_and(|d| !d.is_empty()), "{drift}");
    assert_eq!(
        row(&report, "a/t2.trace.ndjson.zst")["drift"],
        serde_json::json!([])
    );
    // Put back, the case matches again (its drifted row was never cached).
    env.write(baseline, &original);
    assert_eq!(check(&env, &["traces/"]).0, 0);
    assert_eq!(check(&env, &["traces/"]).2, 6);
}
