//! Approved baselines and drift: `check` against baselines, pending files, `baseline`, `diff`.

use crate::util::*;

const BASIC: &str = "traces/agent.tool.basic/default.trace.ndjson.zst";
const TIMEOUT: &str = "traces/agent.tool.timeout/default.trace.ndjson.zst";
const SHELL: &str = "traces/agent.shell.approved/default.trace.ndjson.zst";

fn drift_categories(row: &serde_json::Value) -> Vec<String> {
    row["drift"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["category"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_shipped_demo_matches_its_approved_baselines() {
    let env = Env::new();
    copy_demo(&env, true);
    let out = env.run(&["check", "traces/", "--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let r = json(&out);
    assert_eq!(
        (
            r["summary"]["drifted"].as_u64(),
            r["summary"]["new"].as_u64(),
            r["summary"]["obsolete"].as_u64()
        ),
        (Some(0), Some(0), Some(0))
    );
    assert_eq!(
        row(&r, BASIC)["baseline"],
        "baselines/agent.tool.basic/default.baseline.json"
    );
}

#[test]
fn changed_arguments_fail_until_accepted_and_ci_writes_nothing() {
    let env = Env::new();
    copy_demo(&env, true);
    let before = files_under(&env.path("baselines"));
    edit_trace(&env, TIMEOUT, "\"city\":\"Oslo\"", "\"city\":\"Bergen\"");

    let out = env.run(&["check", "traces/"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stdout
            .contains("drift arguments-changed: 1 call(s) changed arguments or outcome"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("-call#1 weather {\"city\":\"Oslo\"} -> failed error \"timeout after 30s\""),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(
            "+call#1 weather {\"city\":\"Bergen\"} -> failed error \"timeout after 30s\""
        ),
        "{}",
        out.stdout
    );
    assert_eq!(
        files_under(&env.path("baselines")),
        before,
        "CI writes nothing"
    );

    // `--ci` wins over an environment that says otherwise.
    let out = env.run_with(&["check", "traces/", "--ci"], &[]);
    assert_eq!(out.code, 1);
    assert_eq!(files_under(&env.path("baselines")), before);

    let out = env.run_with(&["check", "traces/"], &[("CI", "false")]);
    assert_eq!(out.code, 1);
    assert!(
        env.path("baselines/agent.tool.timeout/default.baseline.json.new")
            .exists()
    );

    let out = env.run_with(&["baseline", "pending"], &[]);
    assert_eq!(out.code, 0);
    assert_eq!(
        out.stdout,
        "changed  agent.tool.timeout/default  baselines/agent.tool.timeout/default.baseline.json  (arguments-changed)\n"
    );

    let out = env.run(&["baseline", "accept"]);
    assert_eq!(out.code, 1, "accept refuses under CI");
    assert!(
        out.stderr.contains("refuses to run under CI"),
        "{}",
        out.stderr
    );
    assert!(
        env.path("baselines/agent.tool.timeout/default.baseline.json.new")
            .exists()
    );

    let out = env.run_with(&["baseline", "accept"], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "accepted agent.tool.timeout/default -> baselines/agent.tool.timeout/default.baseline.json\n"
    );
    assert_eq!(
        files_under(&env.path("baselines")),
        before,
        "the pending file became the approved one"
    );
    let out = env.run(&["check", "traces/"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
}

#[test]
fn timestamps_and_call_ids_alone_are_not_drift() {
    let env = Env::new();
    copy_demo(&env, true);
    let text = trace_body(&env, SHELL)
        .replace("\"c1\"", "\"call_XYZ_9\"")
        .replace("\"a1\"", "\"approval-77\"")
        .replace("\"r1\"", "\"req-a\"")
        .replace("\"ts_ms\":17644176", "\"ts_ms\":17999999")
        .replace(
            "\"recorded_at\":\"2026-11-29T12:00:00Z\"",
            "\"recorded_at\":\"2027-01-01T00:00:00Z\"",
        );
    let original = trace_body(&env, SHELL);
    assert_ne!(text, original);
    reseal(&env, SHELL, &text);
    let out = env.run(&["check", "traces/", "--format", "json", "--drift", "strict"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let r = json(&out);
    assert_eq!(r["summary"]["drifted"], 0);
    assert_ne!(
        row(&r, SHELL)["content_hash"],
        "b3:a963b333a4eee41bc30eecba7576b5f7fe94b110c3ddef48c1e26d7cfb11f669",
        "the trace did change"
    );
}

#[test]
fn a_changed_final_answer_warns_by_default_and_fails_when_strict() {
    let env = Env::new();
    copy_demo(&env, true);
    edit_trace(&env, SHELL, "removed 14 files.\"}", "14 files removed.\"}");
    let out = env.run(&["check", "traces/", "--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let r = json(&out);
    assert_eq!(
        drift_categories(row(&r, SHELL)),
        vec!["final-answer-changed"]
    );
    assert_eq!(row(&r, SHELL)["drift"][0]["fails"], false);
    let human = env.run(&["check", "traces/"]);
    assert!(
        human.stdout.contains("warning final-answer-changed"),
        "{}",
        human.stdout
    );
    assert!(
        human
            .stdout
            .contains("+The build directory is clean: 14 files removed."),
        "{}",
        human.stdout
    );
    let out = env.run(&["check", "traces/", "--drift", "strict"]);
    assert_eq!(out.code, 1);
    let out = env.run(&["check", "traces/", "--drift", "warn"]);
    assert_eq!(out.code, 0);
}

#[test]
fn regressions_are_named_and_fail() {
    let env = Env::new();
    copy_demo(&env, true);
    // The approved run passed `final-answer-not-contains error`; the new one says "error".
    edit_trace(
        &env,
        SHELL,
        "The build directory is clean: removed 14 files.",
        "Removed 14 files, one error ignored.",
    );
    let out = env.run(&["check", "traces/", "--format", "json", "--fail-on", "none"]);
    assert_eq!(
        out.code, 1,
        "the regression fails even when the verdict does not count"
    );
    let cats = drift_categories(row(&json(&out), SHELL));
    assert!(
        cats.contains(&"regression".to_owned())
            && cats.contains(&"final-answer-changed".to_owned()),
        "{cats:?}"
    );
}

#[test]
fn new_and_obsolete_baselines_with_scope() {
    let env = Env::new();
    copy_demo(&env, true);
    // The shell scenario is gone entirely: its baseline is obsolete.
    std::fs::remove_dir_all(env.path("traces/agent.shell.approved")).unwrap();
    std::fs::rename(
        env.path("baselines/agent.tool.basic/default.baseline.json"),
        env.path("baselines/agent.tool.basic/other.baseline.json"),
    )
    .unwrap();
    let out = env.run(&["check", "traces/", "--format", "json"]);
    assert_eq!(out.code, 1);
    let r = json(&out);
    assert_eq!(drift_categories(row(&r, BASIC)), vec!["new"]);
    let obsolete: Vec<&str> = r["obsolete"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        obsolete,
        vec![
            "baselines/agent.shell.approved/default.baseline.json",
            "baselines/agent.tool.basic/other.baseline.json"
        ]
    );
    assert_eq!(
        (
            r["summary"]["new"].as_u64(),
            r["summary"]["obsolete"].as_u64()
        ),
        (Some(1), Some(2))
    );

    // In scope only: with --scenario, other scenarios' baselines are not obsolete.
    let out = env.run(&[
        "check",
        "traces/",
        "--format",
        "json",
        "--scenario",
        "agent-progress-evidence",
    ]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(json(&out)["summary"]["obsolete"], 0);
    let out = env.run(&["check", "traces/", "--format", "json", "--drift", "warn"]);
    assert_eq!(out.code, 0);

    // Off CI: `.new` and `.deleted` pending files; accept applies both.
    let out = env.run_with(&["check", "traces/"], &[]);
    assert_eq!(out.code, 1);
    assert!(
        env.path("baselines/agent.tool.basic/default.baseline.json.new")
            .exists()
    );
    assert!(
        env.path("baselines/agent.shell.approved/default.baseline.json.deleted")
            .exists()
    );
    // A scenario filter does not name the case: the removal is kept, and said so.
    let out = env.run_with(&["baseline", "accept", "agent.shell.approved"], &[]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stdout.contains("kept     agent.shell.approved/default"),
        "{}",
        out.stdout
    );
    assert!(
        env.path("baselines/agent.shell.approved/default.baseline.json")
            .exists()
    );
    let out = env.run_with(&["baseline", "accept", "agent.shell.approved/default"], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        !env.path("baselines/agent.shell.approved/default.baseline.json")
            .exists()
    );
    let out = env.run_with(&["baseline", "reject", "AGENT.TOOL.BASIC/DEFAULT"], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        !env.path("baselines/agent.tool.basic/default.baseline.json.new")
            .exists()
    );
    let out = env.run_with(&["baseline", "reject", "nothing-matches"], &[]);
    assert_eq!(out.code, 1);
}

#[test]
fn stale_pending_files_are_removed_when_the_case_matches_again() {
    let env = Env::new();
    copy_demo(&env, true);
    let original = env.read(BASIC);
    edit_trace(&env, BASIC, "demo information\"}", "demo informations\"}");
    assert_eq!(env.run_with(&["check", "traces/"], &[]).code, 1);
    let pending = env.path("baselines/agent.tool.basic/default.baseline.json.new");
    assert!(pending.exists());
    env.write(BASIC, original);
    assert_eq!(env.run_with(&["check", "traces/"], &[]).code, 0);
    assert!(!pending.exists(), "a stale pending file is removed");
}

#[test]
fn a_bad_baseline_is_an_error_naming_it_and_the_rest_is_still_compared() {
    let env = Env::new();
    copy_demo(&env, true);
    env.write(
        "baselines/agent.tool.basic/default.baseline.json",
        "{ not json",
    );
    let v2 = String::from_utf8(env.read("baselines/agent.shell.approved/default.baseline.json"))
        .unwrap()
        .replace("\"version\": 1", "\"version\": 2");
    env.write("baselines/agent.shell.approved/default.baseline.json", v2);
    let out = env.run_with(&["check", "traces/", "--format", "json"], &[]);
    assert_eq!(out.code, 1);
    let r = json(&out);
    let basic = &row(&r, BASIC)["drift"][0];
    assert_eq!(basic["category"], "baseline-invalid");
    assert!(
        basic["detail"]
            .as_str()
            .unwrap()
            .contains("baselines/agent.tool.basic/default.baseline.json")
            && basic["detail"].as_str().unwrap().contains("line 1"),
        "{basic}"
    );
    let shell = &row(&r, SHELL)["drift"][0];
    assert!(
        shell["detail"]
            .as_str()
            .unwrap()
            .contains("unknown baseline version 2"),
        "{shell}"
    );
    assert_eq!(
        row(&r, "agent-progress-evidence/default.trace.ndjson.zst")["drift"],
        serde_json::json!([])
    );
    assert!(
        !env.path("baselines/agent.tool.basic/default.baseline.json.new")
            .exists(),
        "no pending file over an unreadable baseline"
    );
    assert_eq!(
        env.read("baselines/agent.tool.basic/default.baseline.json"),
        b"{ not json",
        "the file is left alone"
    );
}

#[test]
fn two_traces_for_one_case_without_distinct_trials_are_error_rows_naming_both() {
    let env = Env::new();
    copy_demo(&env, true);
    let copy = "traces/agent.tool.basic/copy.trace.ndjson.zst";
    std::fs::copy(env.path(BASIC), env.path(copy)).unwrap();
    let out = env.run_with(&["check", "traces/", "--format", "json"], &[]);
    assert_eq!(out.code, 1);
    let r = json(&out);
    for path in [BASIC, copy] {
        let row = row(&r, path);
        assert_eq!(row["verdict"], "error");
        assert_eq!(row["error"]["category"], "duplicate-trial");
        let message = row["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(BASIC) && message.contains(copy),
            "{message}"
        );
        assert!(drift_categories(row).is_empty());
    }
    let case = (r["cases"].as_array().unwrap().iter())
        .find(|c| c["scenario"] == "agent.tool.basic")
        .unwrap();
    assert_eq!(case["verdict"], "error");
    assert_eq!(case["trials"], 2);
    assert!(
        !env.path("baselines/agent.tool.basic/default.baseline.json.new")
            .exists()
    );
}

#[test]
fn approve_adopts_current_traces_and_refuses_under_ci() {
    let env = Env::new();
    copy_demo(&env, false);
    let out = env.run(&["baseline", "approve"]);
    assert_eq!(out.code, 1);
    assert!(!env.path("baselines").exists());
    let out = env.run_with(&["baseline", "approve"], &[("CI", "0")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.ends_with("20 written, 0 unchanged, 0 skipped\n"),
        "{}",
        out.stdout
    );
    let shipped = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("baselines/agent.tool.basic/default.baseline.json");
    assert_eq!(
        env.read("baselines/agent.tool.basic/default.baseline.json"),
        std::fs::read(shipped).unwrap(),
        "same bytes as the shipped baseline"
    );
    let out = env.run_with(&["baseline", "approve"], &[]);
    assert!(
        out.stdout.ends_with("0 written, 20 unchanged, 0 skipped\n"),
        "{}",
        out.stdout
    );
    assert_eq!(env.run(&["check", "traces/"]).code, 0);
}

#[test]
fn hostile_scenario_ids_stay_inside_the_baselines_directory() {
    let env = Env::new();
    std::fs::create_dir_all(env.path("baselines")).unwrap();
    let id = "../../escape/..";
    env.write(
        "traces/x.scenario.json",
        format!(r#"{{"id":"{id}","title":"t","risk":"Low","oracles":[{{"type":"approval-not-required"}}]}}"#),
    );
    let text = trace_text(id, "../../case", &[END]);
    env.write("traces/x.trace.ndjson.zst", sealed_zst(&text));
    let out = env.run_with(&["check", "traces"], &[]);
    assert_eq!(out.code, 1, "new");
    let all = files_under(env.root());
    let outside: Vec<&String> = all
        .iter()
        .filter(|f| {
            !f.starts_with("baselines/")
                && !f.starts_with("traces/")
                && !f.starts_with(".tracereplay/cache/")
        })
        .collect();
    assert!(outside.is_empty(), "{outside:?}");
    assert!(
        all.contains(
            &"baselines/..%2F..%2Fescape%2F../..%2F..%2Fcase.baseline.json.new".to_owned()
        ),
        "{all:?}"
    );
}

#[test]
fn no_default_baselines_directory_means_no_comparison_and_explicit_must_exist() {
    let env = Env::new();
    copy_demo(&env, false);
    let out = env.run(&["check", "traces/", "--format", "json"]);
    assert_eq!(out.code, 0);
    let r = json(&out);
    assert!(
        r["baselines"]
            .as_str()
            .unwrap()
            .contains("no `baselines/` directory")
    );
    assert!(row(&r, BASIC)["baseline"].is_null());
    let out = env.run(&["check", "traces/", "--baselines", "approved"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("`approved` given with `--baselines` does not exist"),
        "{}",
        out.stderr
    );
}

#[test]
fn diff_against_baselines_and_between_recordings() {
    let env = Env::new();
    copy_demo(&env, true);
    let out = env.run(&["diff"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stdout
            .ends_with("20 compared: 0 drifted, 0 only in old, 0 only in new, 0 errors\n"),
        "{}",
        out.stdout
    );

    // NEW: the basic scenario gains a tool call; the shell scenario loses its approval.
    copy_dir_for_diff(&env);
    let basic = trace_body(&env, "new/agent.tool.basic/default.trace.ndjson.zst");
    // Replace the second inference (seq 5) by one more search.
    let extra: String = basic
        .lines()
        .map(|l| if l.contains("\"seq\":5,") { r#"{"kind":"tool_call","seq":5,"call_id":"c9","tool":"web_search","args":{"query":"more"}}"#.to_owned() } else { l.to_owned() })
        .map(|l| format!("{l}\n"))
        .collect();
    reseal(
        &env,
        "new/agent.tool.basic/default.trace.ndjson.zst",
        &extra,
    );
    let shell = trace_body(&env, "new/agent.shell.approved/default.trace.ndjson.zst");
    let no_approval: String = shell
        .lines()
        .filter(|l| !l.contains("\"kind\":\"approval_"))
        .map(|l| format!("{l}\n"))
        .collect();
    reseal(
        &env,
        "new/agent.shell.approved/default.trace.ndjson.zst",
        &no_approval,
    );
    std::fs::remove_file(env.path("new/agent.tool.timeout/default.trace.ndjson.zst")).unwrap();

    let out = env.run(&[
        "diff", "--from", "traces", "--to", "new", "--format", "json",
    ]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let r = json(&out);
    let cats = |scenario: &str| -> Vec<String> {
        let e = r["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["scenario"] == scenario)
            .unwrap_or_else(|| panic!("{scenario} in {r:#}"));
        e["drift"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["category"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(
        cats("agent.tool.basic").contains(&"tool-calls-changed".to_owned()),
        "{r:#}"
    );
    assert!(
        cats("agent.shell.approved").contains(&"approvals-changed".to_owned()),
        "{r:#}"
    );
    assert_eq!(r["only_old"][0]["scenario"], "agent.tool.timeout");
    let human = env.run(&["diff", "--from", "traces", "--to", "new"]);
    // The sides are labelled with the two recordings' paths.
    assert!(
        human.stdout.contains("--- traces\n") && human.stdout.contains("+++ new\n"),
        "{}",
        human.stdout
    );
    assert!(!human.stdout.contains("--- approved"), "{}", human.stdout);
    assert!(
        human.stdout.contains(
            "drift tool-calls-changed: tool calls were [web_search], now [web_search, web_search]"
        ),
        "{}",
        human.stdout
    );
    assert!(
        human.stdout.contains("drift approvals-changed"),
        "{}",
        human.stdout
    );
    assert!(
        human
            .stdout
            .contains("only in OLD  agent.tool.timeout/default"),
        "{}",
        human.stdout
    );

    // Two single files.
    let out = env.run(&[
        "diff",
        "--from",
        BASIC,
        "--to",
        "new/agent.tool.basic/default.trace.ndjson.zst",
    ]);
    assert_eq!(out.code, 1);
    assert!(
        out.stdout.contains("1 compared: 1 drifted"),
        "{}",
        out.stdout
    );
    let out = env.run(&["diff", "--from", "traces"]);
    assert_eq!(out.code, 2, "--from needs --to");
}

fn copy_dir_for_diff(env: &Env) {
    for f in files_under(&env.path("traces")) {
        let from = env.path(&format!("traces/{f}"));
        env.write(&format!("new/{f}"), std::fs::read(from).unwrap());
    }
}

use std::path::PathBuf;
