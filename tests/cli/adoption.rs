//! What adopting tracereplay on real recordings broke (#26): approved baselines lost by a
//! selective run and a bulk accept, a diverged replay passing, a recording of a run that never
//! happened, the replay workflow (docs/replay.md) failing at its last step, and reports that disagree
//! with the exit code or do not fit a pull request.

use super::replay::{Server, agent_loop};
use crate::util::*;

/// A suite of two scenarios (`alpha` with tag `red`, `beta`), two cases each, all passing, with
/// their approved baselines.
fn approved_suite(env: &Env) {
    for (id, tag) in [("alpha", "red"), ("beta", "blue")] {
        env.write(
            &format!("traces/{id}/{id}.scenario.json"),
            format!(
                r#"{{"id":"{id}","title":"t","risk":"High","tags":["{tag}"],"oracles":[{{"type":"tool-called","tool":"search"}}]}}"#
            ),
        );
        for case in ["one", "two"] {
            let c = call("c1", "search");
            env.write(
                &format!("traces/{id}/{case}.trace.ndjson.zst"),
                sealed_zst(&trace_text(id, case, &[&c, END])),
            );
        }
    }
    let out = env.run_with(&["baseline", "approve"], &[]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
}

fn deleted_files(env: &Env) -> Vec<String> {
    files_under(&env.path("baselines"))
        .into_iter()
        .filter(|f| f.ends_with(".deleted"))
        .collect()
}

#[test]
fn no_selective_run_marks_the_baselines_of_what_it_did_not_select_obsolete() {
    let env = Env::new();
    approved_suite(&env);
    // One failing trace, so `--last-failed` has something to re-judge.
    let bad = trace_text("alpha", "two", &[&call("c1", "fetch"), END]);
    env.write("traces/alpha/two.trace.ndjson.zst", sealed_zst(&bad));
    let first = env.run(&["check", "--artifacts"]);
    assert_eq!(first.code, 1, "{}", first.stdout);
    let selectors: [&[&str]; 6] = [
        &["check", "--last-failed"],
        &["check", "--scenario", "alpha"],
        &["check", "--tag", "blue"],
        &["check", "--partition", "hash:1/2"],
        &["check", "--partition", "hash:2/2"],
        &["check", "traces/alpha/two.trace.ndjson.zst"],
    ];
    for args in selectors {
        let out = env.run_with(args, &[]);
        let report = env.run_with(&[args, &["--format", "json"]].concat(), &[]);
        assert_eq!(
            json(&report)["summary"]["obsolete"],
            0,
            "{args:?}: {}",
            report.stdout
        );
        assert_eq!(
            deleted_files(&env),
            Vec::<String>::new(),
            "{args:?}: {out:?}"
        );
    }
    // A whole-suite run still finds a baseline whose trace is gone.
    std::fs::remove_file(env.path("traces/beta/one.trace.ndjson.zst")).unwrap();
    let out = env.run_with(&["check"], &[]);
    assert_eq!(out.code, 1);
    assert_eq!(deleted_files(&env), vec!["beta/one.baseline.json.deleted"]);
}

#[test]
fn a_bulk_accept_never_removes_an_approved_baseline() {
    let env = Env::new();
    approved_suite(&env);
    std::fs::remove_file(env.path("traces/beta/one.trace.ndjson.zst")).unwrap();
    // A changed case too, so the bulk accept has something to apply.
    let changed = trace_text(
        "alpha",
        "one",
        &[&call("c1", "search"), &call("c2", "search"), END],
    );
    env.write("traces/alpha/one.trace.ndjson.zst", sealed_zst(&changed));
    assert_eq!(env.run_with(&["check"], &[]).code, 1);
    let out = env.run_with(&["baseline", "accept"], &[]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("accepted alpha/one"), "{}", out.stdout);
    assert!(
        out.stdout.contains("kept     beta/one")
            && out.stdout.contains("baseline accept --removals"),
        "{}",
        out.stdout
    );
    assert!(env.path("baselines/beta/one.baseline.json").exists());
    // A scenario filter does not name the case; `SCENARIO/CASE` or `--removals` does.
    assert_eq!(env.run_with(&["baseline", "accept", "beta"], &[]).code, 1);
    assert!(env.path("baselines/beta/one.baseline.json").exists());
    let out = env.run_with(&["baseline", "accept", "--removals"], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!env.path("baselines/beta/one.baseline.json").exists());
    assert!(env.path("baselines/beta/two.baseline.json").exists());
}

/// The whole adoption journey on a git repository: nothing approved is lost.
#[test]
fn the_adoption_journey_loses_no_approved_baseline() {
    let env = Env::new();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(env.root())
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
            .output()
            .unwrap();
        assert!(ok.status.success(), "git {args:?}: {ok:?}");
    };
    git(&["init", "-q"]);
    assert_eq!(env.run_with(&["init"], &[]).code, 0);
    approved_suite(&env);
    let approved_before = files_under(&env.path("baselines"));
    assert_eq!(env.run_with(&["check", "--artifacts"], &[]).code, 0);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "adopt"]);
    // A change breaks one case.
    let bad = trace_text("beta", "two", &[&call("c1", "fetch"), END]);
    env.write("traces/beta/two.trace.ndjson.zst", sealed_zst(&bad));
    assert_eq!(env.run_with(&["check", "--artifacts"], &[]).code, 1);
    assert_eq!(env.run_with(&["check", "--last-failed"], &[]).code, 1);
    let out = env.run_with(&["baseline", "accept"], &[]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(files_under(&env.path("baselines")), approved_before);
    let out = env.run(&["check", "--format", "json"]);
    assert_eq!(json(&out)["summary"]["new"], 0, "{}", out.stdout);
    assert_eq!(json(&out)["summary"]["obsolete"], 0, "{}", out.stdout);
}

/// A recorded run that says it diverged from its recording, whatever its `run_end`.
#[test]
fn a_recording_that_holds_a_replay_divergence_fails_check() {
    let env = Env::new();
    one_trace_suite(&env, "w", "High", "search", "default");
    let diverged = trace_text(
        "w",
        "default",
        &[
            &call("c1", "search"),
            r#"{"kind":"error","message":"request 2: input_h differs: recorded b3:aa, now b3:bb","code":"replay-divergence"}"#,
            END,
        ],
    );
    env.write("traces/w/default.trace.ndjson.zst", sealed_zst(&diverged));
    let out = env.run(&["check", "--format", "json"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let report = json(&out);
    let r = row(&report, "w/default.trace.ndjson.zst");
    let o = (r["oracles"].as_array().unwrap().iter())
        .find(|o| o["type"] == "replay-divergence")
        .unwrap_or_else(|| panic!("{r:#}"));
    assert_eq!(o["verdict"], "fail");
    let message = o["message"].as_str().unwrap();
    assert!(
        message.contains("request 2") && message.contains("recorded b3:aa, now b3:bb"),
        "{message}"
    );
}

/// The replay workflow of docs/replay.md, as written, ending with `check` and `diff`; both fail when a
/// tool's result changed.
#[test]
fn the_readme_replay_journey_works_and_fails_on_a_changed_tool_result() {
    let env = Env::new();
    copy_demo(&env, true);
    let serve = |dir: &str| {
        Server::start(
            &env,
            &[
                "traces/agent.replay.weather",
                "--record",
                dir,
                "--exit-when-finished",
            ],
        )
    };
    let session = "agent.replay.weather/paris";
    let server = serve("replayed/");
    agent_loop(&server, session, "sunny, 21 C", true);
    let (code, rest) = server.finish(&[session]);
    assert_eq!(code, 0, "{rest}");
    let check = env.run(&["check", "replayed/"]);
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
    assert!(
        check.stderr.contains(
            "used from the suite's roots: `agent.replay.weather` (traces/agent.replay.weather/agent.replay.weather.scenario.json)"
        ),
        "{}",
        check.stderr
    );
    let diff = env.run(&[
        "diff",
        "--from",
        "traces/agent.replay.weather",
        "--to",
        "replayed/",
    ]);
    assert_eq!(diff.code, 0, "{}{}", diff.stdout, diff.stderr);

    // The tool now answers something else: serve exits 1, and so do check and diff.
    let server = serve("rainy/");
    agent_loop(&server, session, "rainy, 12 C", true);
    let (code, rest) = server.finish(&[session]);
    assert_eq!(code, 1, "{rest}");
    let check = env.run(&["check", "rainy/", "--format", "json"]);
    assert_eq!(check.code, 1, "{}{}", check.stdout, check.stderr);
    let report = json(&check);
    let r = row(&report, "rainy/agent.replay.weather/paris.trace.ndjson.zst");
    assert!(
        (r["oracles"].as_array().unwrap().iter())
            .any(|o| o["type"] == "replay-divergence" && o["verdict"] == "fail"),
        "{r:#}"
    );
    assert!(
        (r["drift"].as_array().unwrap().iter())
            .any(|d| d["category"] == "tool-results-changed" && d["fails"] == true),
        "{r:#}"
    );
    let diff = env.run(&[
        "diff",
        "--from",
        "traces/agent.replay.weather",
        "--to",
        "rainy/",
    ]);
    assert_eq!(diff.code, 1, "{}", diff.stdout);
    assert!(
        diff.stdout.contains("tool-results-changed"),
        "{}",
        diff.stdout
    );
}

#[test]
fn a_replay_session_that_never_ran_records_nothing() {
    let env = Env::new();
    copy_demo(&env, false);
    let server = Server::start(&env, &["traces/agent.replay.weather", "--record", "out/"]);
    let (code, rest) = server.finish(&[]);
    assert_eq!(code, 0, "{rest}");
    assert!(!env.path("out/agent.replay.weather").exists(), "{rest}");
    assert!(
        rest.contains("agent.replay.weather/paris: not recorded: no request was made"),
        "{rest}"
    );
    // Asked something, but never told how the run ended: recorded as `failed`, never
    // `completed`.
    let server = Server::start(&env, &["traces/agent.replay.weather", "--record", "out/"]);
    let (status, _) = server.post(
        "/v1/chat/completions",
        &[],
        r#"{"model":"m","messages":[{"role":"system","content":"You answer weather questions."},{"role":"user","content":"What is the weather in Paris?"}]}"#,
    );
    assert_eq!(status, 200);
    let (_, rest) = server.finish(&[]);
    assert!(!rest.contains("diverged"), "{rest}");
    let text = env
        .run(&["cat", "out/agent.replay.weather/paris.trace.ndjson.zst"])
        .stdout;
    let end = text
        .lines()
        .find(|l| l.contains(r#""kind":"run_end""#))
        .unwrap_or_default();
    assert!(end.contains(r#""status":"failed""#), "{rest}{text}");
}

#[test]
fn an_unknown_scenario_says_where_it_looked_and_what_was_meant() {
    let env = Env::new();
    one_trace_suite(&env, "example.search", "High", "search", "default");
    let typo = trace_text("example.serch", "x", &[&call("c1", "search"), END]);
    env.write(
        "traces/example.search/x.trace.ndjson.zst",
        sealed_zst(&typo),
    );
    let out = env.run(&["check", "--format", "json"]);
    assert_eq!(out.code, 1);
    let report = json(&out);
    let message = row(&report, "x.trace.ndjson.zst")["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.contains("did you mean `example.search`?")
            && message.contains("--scenarios DIR")
            && message.contains("(looked in `traces/`)"),
        "{message}"
    );
}

#[test]
fn junit_agrees_with_the_exit_code() {
    let env = Env::new();
    one_trace_suite(&env, "low", "Low", "deploy", "default");
    let out = env.run(&["check", "--format", "junit"]);
    assert_eq!(out.code, 0, "an ignored failure: {}", out.stdout);
    let doc = roxmltree::Document::parse(&out.stdout).unwrap();
    assert_eq!(
        doc.descendants()
            .filter(|n| n.has_tag_name("failure"))
            .count(),
        0
    );
    let skipped = (doc.descendants())
        .find(|n| n.has_tag_name("skipped"))
        .expect("the ignored failure is skipped");
    assert_eq!(
        skipped.attribute("message"),
        Some("ignored failure: Low risk under --fail-on high")
    );
    let out_text = (doc.descendants())
        .find(|n| n.has_tag_name("system-out"))
        .and_then(|n| n.text())
        .unwrap_or_default();
    assert!(out_text.contains("`deploy` never called"), "{out_text}");
    // Under `--fail-on any` the same failure counts, and is a `<failure>`.
    let out = env.run(&["check", "--format", "junit", "--fail-on", "any"]);
    assert_eq!(out.code, 1);
    assert!(out.stdout.contains("<failure "), "{}", out.stdout);
}

#[test]
fn markdown_fits_a_pull_request_with_blocking_rows_first() {
    let env = Env::new();
    // 1,500 ignored failures (Low), then 30 that count (High), with long messages.
    for (id, risk, n) in [("aaa.low", "Low", 1500), ("zzz.high", "High", 30)] {
        env.write(
            &format!("traces/{id}/{id}.scenario.json"),
            scenario(id, risk, "deploy_to_production_with_a_long_tool_name"),
        );
        for i in 0..n {
            let case = format!("case-{i:05}");
            env.write(
                &format!("traces/{id}/{case}.trace.ndjson.zst"),
                sealed_zst(&trace_text(id, &case, &[&call("c1", "search"), END])),
            );
        }
    }
    let out = env.run(&["check", "--format", "markdown"]);
    assert_eq!(out.code, 1);
    let md = &out.stdout;
    assert!(
        md.chars().count() < 65_000,
        "{} characters",
        md.chars().count()
    );
    let first_low = md.find("| aaa.low |").expect("some ignored failures shown");
    let last_high = md.rfind("| zzz.high |").expect("the blocking rows shown");
    assert!(last_high < first_low, "blocking rows first");
    assert_eq!(md.matches("| zzz.high |").count(), 30);
    assert!(
        md.contains("0 blocking row(s), ")
            && md.contains("ignored failure(s) and 0 warning row(s) are left out"),
        "{}",
        &md[md.len().saturating_sub(600)..]
    );
    assert!(md.contains("`--artifacts`"));
}

fn usage_trace(input_tokens: u64) -> String {
    let inference = format!(
        r#"{{"kind":"inference","usage":{{"input_tokens":{input_tokens},"output_tokens":10}}}}"#
    );
    trace_text("u", "default", &[&inference, &call("c1", "search"), END])
}

/// Every command that judges or compares reads `tracereplay.toml` the same way: `check` and
/// `explain` agree on each setting given only through the file.
#[test]
fn check_and_explain_agree_on_every_setting_of_the_project_file() {
    let env = Env::new();
    env.write("suite/u/u.scenario.json", scenario("u", "High", "search"));
    env.write(
        "suite/u/default.trace.ndjson.zst",
        sealed_zst(&usage_trace(100)),
    );
    env.write(
        "tracereplay.toml",
        "paths = [\"suite\"]\nbaselines = \"approved\"\n",
    );
    let out = env.run_with(&["baseline", "approve"], &[]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(env.path("approved/u/default.baseline.json").exists());
    // Usage moves by 30 %: outside the default tolerance, inside the file's 50 %.
    env.write(
        "suite/u/default.trace.ndjson.zst",
        sealed_zst(&usage_trace(130)),
    );
    let trace = "suite/u/default.trace.ndjson.zst";
    let drifts = |env: &Env| {
        let check = env.run(&["check", "--format", "json", "--drift", "strict"]);
        let report = json(&check);
        let in_check = row(&report, "u/default.trace.ndjson.zst")["drift"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["category"] == "usage-outside-tolerance");
        let explain = env.run(&["explain", trace, "--drift", "strict"]);
        assert_eq!(explain.code, 0, "{}{}", explain.stdout, explain.stderr);
        (in_check, explain.stdout.contains("usage-outside-tolerance"))
    };
    assert_eq!(drifts(&env), (true, true));
    env.write(
        "tracereplay.toml",
        "paths = [\"suite\"]\nbaselines = \"approved\"\n[profile.default]\nusage-tolerance = 50\n",
    );
    assert_eq!(drifts(&env), (false, false));
    // `drift` through the file: `ignore` compares nothing, in both.
    env.write(
        "tracereplay.toml",
        "paths = [\"suite\"]\nbaselines = \"approved\"\n[profile.default]\ndrift = \"ignore\"\n",
    );
    let check = env.run(&["check", "--format", "json"]);
    assert_eq!(json(&check)["summary"]["drifted"], 0, "{}", check.stdout);
    let explain = env.run(&["explain", trace]);
    assert!(
        !explain.stdout.contains("usage-outside-tolerance"),
        "{}",
        explain.stdout
    );
    // `require-sealed` through the file: an unsealed trace is an error in both.
    env.write(
        "suite/u/raw.trace.ndjson",
        usage_trace(100).replace("\"default\"", "\"raw\""),
    );
    env.write(
        "tracereplay.toml",
        "paths = [\"suite\"]\nbaselines = \"approved\"\n[profile.default]\nrequire-sealed = true\n",
    );
    let check = env.run(&["check", "--format", "json"]);
    assert_eq!(row(&json(&check), "raw.trace.ndjson")["verdict"], "error");
    let explain = env.run(&["explain", "suite/u/raw.trace.ndjson"]);
    assert!(explain.stdout.contains("not sealed"), "{}", explain.stdout);
    // `scenarios` and `paths` through the file: `explain SCENARIO` finds it in the suite.
    env.write("harness/h.json", scenario("h", "High", "search"));
    env.write(
        "suite/h/default.trace.ndjson.zst",
        sealed_zst(&trace_text("h", "default", &[&call("c1", "search"), END])),
    );
    env.write(
        "tracereplay.toml",
        "paths = [\"suite\"]\nbaselines = \"approved\"\nscenarios = [\"harness\"]\n",
    );
    let check = env.run(&["check", "--format", "json"]);
    assert_eq!(
        row(&json(&check), "h/default.trace.ndjson.zst")["verdict"],
        "pass"
    );
    let explain = env.run(&["explain", "h"]);
    assert_eq!(explain.code, 0, "{}{}", explain.stdout, explain.stderr);
}

#[test]
fn explain_without_a_target_explains_the_last_run_and_an_unknown_scenario_is_an_error() {
    let env = Env::new();
    one_trace_suite(&env, "bad", "High", "deploy", "default");
    assert_eq!(env.run(&["check", "--artifacts"]).code, 1);
    let out = env.run(&["explain"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.starts_with("run "), "{}", out.stdout);
    let stray = trace_text("nowhere", "x", &[&call("c1", "search"), END]);
    env.write("stray/x.trace.ndjson.zst", sealed_zst(&stray));
    let out = env.run(&["explain", "stray/x.trace.ndjson.zst"]);
    assert_ne!(out.code, 0, "{}", out.stdout);
}

#[test]
fn a_passing_run_off_ci_writes_and_warns_about_nothing() {
    let env = Env::new();
    approved_suite(&env);
    // A scenario with no approved baseline directory of its own yet, and a passing run.
    let out = env.run_with(&["check", "--format", "json"], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("cannot remove"), "{}", out.stderr);
    let report = json(&out);
    assert!(
        report["baselines"]
            .as_str()
            .unwrap()
            .ends_with("no pending file needed"),
        "{}",
        report["baselines"]
    );
    std::fs::remove_dir_all(env.path("baselines/beta")).unwrap();
    let out = env.run_with(&["check", "--format", "json"], &[]);
    assert!(!out.stderr.contains("cannot remove"), "{}", out.stderr);
    assert!(
        json(&out)["baselines"]
            .as_str()
            .unwrap()
            .ends_with("2 pending file(s) written beside the approved ones"),
        "{}",
        out.stdout
    );
}

#[test]
fn pack_says_how_to_seal_an_edited_trace_and_never_replaces_a_different_one() {
    let env = Env::new();
    let text = trace_text("p", "default", &[&call("c1", "search"), END]);
    let sealed = String::from_utf8(sealed_bytes(&text)).unwrap();
    env.write(
        "edited.trace.ndjson",
        sealed.replace("\"q\":\"x\"", "\"q\":\"y\""),
    );
    let out = env.run(&["pack", "edited.trace.ndjson", "-o", "out"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("content hash mismatch") && out.stderr.contains("pack --reseal"),
        "{}",
        out.stderr
    );
    let out = env.run(&["pack", "--reseal", "edited.trace.ndjson", "-o", "out"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with("resealed  edited.trace.ndjson"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("validated and sealed again"),
        "{}",
        out.stdout
    );
    let verify = env.run(&["verify", "out/edited.trace.ndjson.zst"]);
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
    // `--reseal` still validates: a malformed edit is refused.
    env.write(
        "broken.trace.ndjson",
        sealed.replace("\"call_id\":\"c1\",", ""),
    );
    assert_eq!(
        env.run(&["pack", "--reseal", "broken.trace.ndjson"]).code,
        1
    );
    // Another trace of the same name in `-o DIR` is not replaced without `--force`.
    env.write("other/edited.trace.ndjson", &text);
    let before = env.read("out/edited.trace.ndjson.zst");
    let out = env.run(&["pack", "other/edited.trace.ndjson", "-o", "out"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("holds a different trace"),
        "{}",
        out.stderr
    );
    assert_eq!(env.read("out/edited.trace.ndjson.zst"), before);
    let out = env.run(&["pack", "--force", "other/edited.trace.ndjson", "-o", "out"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_ne!(env.read("out/edited.trace.ndjson.zst"), before);
    let out = env.run(&["pack", "other/edited.trace.ndjson", "-o", "out"]);
    assert!(out.stdout.starts_with("unchanged"), "{}", out.stdout);
}
