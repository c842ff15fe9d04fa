//! Everyday conventions: colours by flag and environment, shell completions, the man page.

use crate::util::*;

/// `check` of a suite with one failing trace, stdout captured, `NO_COLOR` cleared unless set.
fn check_output(env: &Env, args: &[&str], vars: &[(&str, &str)]) -> String {
    let mut all = vec!["check", "traces", "--fail-on", "none"];
    all.extend(args);
    let mut cmd = env.command(&all, &[("CI", "true")]);
    cmd.env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("FORCE_COLOR");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn colours_follow_the_flag_then_the_environment() {
    let env = Env::new();
    one_trace_suite(&env, "bad", "High", "fetch", "default");
    let coloured = |s: &str| s.contains("\u{1b}[");
    // Not a terminal: none by default.
    assert!(!coloured(&check_output(&env, &[], &[])));
    assert!(coloured(&check_output(&env, &["--color", "always"], &[])));
    assert!(coloured(&check_output(
        &env,
        &[],
        &[("CLICOLOR_FORCE", "1")]
    )));
    assert!(coloured(&check_output(
        &env,
        &[],
        &[("FORCE_COLOR", "true")]
    )));
    assert!(!coloured(&check_output(&env, &[], &[("FORCE_COLOR", "0")])));
    // NO_COLOR wins over forcing; `--color` wins over both.
    assert!(!coloured(&check_output(
        &env,
        &[],
        &[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")]
    )));
    assert!(!coloured(&check_output(
        &env,
        &["--color", "never"],
        &[("FORCE_COLOR", "1")]
    )));
    assert!(coloured(&check_output(
        &env,
        &["--color", "always"],
        &[("NO_COLOR", "1")]
    )));
}

#[test]
fn completion_scripts_for_every_shell() {
    let env = Env::new();
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = env.run(&["completions", shell]);
        assert_eq!(out.code, 0, "{shell}: {}", out.stderr);
        assert!(out.stdout.contains("tracereplay"), "{shell}");
        assert!(
            out.stdout.contains("ingest"),
            "{shell}: subcommands are completed"
        );
    }
    // The bash script parses.
    env.write("c.bash", env.run(&["completions", "bash"]).stdout);
    let bash = std::process::Command::new("bash")
        .args(["-n", "c.bash"])
        .current_dir(env.root())
        .output()
        .expect("bash runs the completion syntax check (install bash)");
    assert!(
        bash.status.success(),
        "{}",
        String::from_utf8_lossy(&bash.stderr)
    );
}

#[test]
fn a_man_page_that_renders() {
    let env = Env::new();
    let out = env.run(&["man"]);
    assert_eq!(out.code, 0);
    assert!(out.stdout.contains(".TH tracereplay 1"), "{}", out.stdout);
    assert!(out.stdout.contains("completions"));
    env.write("tracereplay.1", &out.stdout);
    match std::process::Command::new("groff")
        .args(["-man", "-Tascii", "-P-bcou", "tracereplay.1"])
        .current_dir(env.root())
        .output()
    {
        Ok(r) => {
            assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
            let text = String::from_utf8_lossy(&r.stdout);
            assert!(
                text.contains("NAME") && text.contains("SUBCOMMANDS"),
                "{text}"
            );
        }
        Err(_) => eprintln!("note: groff is not installed; the page was not rendered"),
    }
}

#[test]
fn a_scenario_under_another_name_is_pointed_out() {
    let env = Env::new();
    env.write(
        "traces/a/scenario.json",
        r#"{"id":"a","risk":"High","oracles":[{"type":"status-is","value":"completed"}]}"#,
    );
    let out = env.run(&["check", "traces"]);
    assert_eq!(out.code, 2);
    let hint = "found scenario-like file `traces/a/scenario.json`; rename it to `*.scenario.json` or pass its directory with `--scenarios`";
    assert!(out.stderr.contains(hint), "{}", out.stderr);
    // `gates` names the directory it searched, not `.`.
    let out = env.run(&["gates", "traces"]);
    assert_eq!(out.code, 1);
    assert!(out.stdout.contains(hint), "{}", out.stdout);
    assert!(
        out.stdout.contains(
            "error: `traces`: no scenarios found (scenario files are named `*.scenario.json`)"
        ),
        "{}",
        out.stdout
    );
    // A report or other JSON is not mistaken for one.
    env.write("traces/a/notes.json", r#"{"hello": "world"}"#);
    assert!(!env.run(&["check", "traces"]).stderr.contains("notes.json"));
}

#[test]
fn last_failed_reruns_what_failed_and_what_is_new() {
    let env = Env::new();
    one_trace_suite(&env, "good", "High", "search", "default");
    one_trace_suite(&env, "bad", "High", "fetch", "default");
    let first = env.run(&["check", "traces", "--artifacts", "--format", "json"]);
    assert_eq!(first.code, 1);
    assert_eq!(json(&first)["summary"]["traces"], 2);
    // A trace added since is judged too; the one that passed is left out, and its scenario's
    // lack of a trace is no error.
    one_trace_suite(&env, "later", "High", "search", "default");
    let out = env.run_with(
        &["check", "traces", "--last-failed", "--format", "json"],
        &[],
    );
    let report = json(&out);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let paths: Vec<&str> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "traces/bad/default.trace.ndjson.zst",
            "traces/later/default.trace.ndjson.zst"
        ]
    );
    assert!(
        out.stderr.contains("last-failed: judged 2 trace(s)")
            && out
                .stderr
                .contains("1 that passed then, unchanged, were left out"),
        "{}",
        out.stderr
    );
    // Human output says so in its summary.
    let human = env.run_with(&["check", "traces", "--last-failed"], &[]);
    assert!(
        human.stdout.contains("last-failed: judged 2 trace(s)"),
        "{}",
        human.stdout
    );
    // Without a run folder, it says how to make one.
    let empty = Env::new();
    one_trace_suite(&empty, "good", "High", "search", "default");
    let out = empty.run_with(&["check", "traces", "--last-failed"], &[]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("--artifacts"), "{}", out.stderr);
}

/// `n` scenarios `s000…` with one trace each; those below `failing` expect a tool never called.
fn many(env: &Env, n: usize, failing: usize, risk_of: impl Fn(usize) -> &'static str) {
    for i in 0..n {
        let tool = if i < failing { "fetch" } else { "search" };
        one_trace_suite(env, &format!("s{i:03}"), risk_of(i), tool, "default");
    }
}

#[test]
fn large_runs_show_what_needs_attention_and_the_next_step() {
    let env = Env::new();
    many(&env, 60, 5, |_| "High");
    let lines = |s: &str, prefix: &str| s.lines().filter(|l| l.starts_with(prefix)).count();
    let out = env.run(&["check", "traces"]);
    assert_eq!(out.code, 1);
    assert_eq!(lines(&out.stdout, "FAIL"), 5, "{}", out.stdout);
    assert_eq!(lines(&out.stdout, "PASS"), 0);
    assert!(
        out.stdout.contains("(55 row(s) not shown"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(
            "next: 5 blocking: `tracereplay explain traces/s000/default.trace.ndjson.zst` shows the first in full"
        ),
        "{}",
        out.stdout
    );
    let verbose = env.run(&["check", "traces", "-v"]);
    assert_eq!(lines(&verbose.stdout, "PASS"), 55);
    let quiet = env.run(&["check", "traces", "-q"]);
    assert_eq!(quiet.code, 1);
    assert_eq!(quiet.stdout.lines().count(), 2, "{}", quiet.stdout);
    assert!(
        quiet
            .stdout
            .starts_with("60 traces, 60 scenarios: 55 passed, 5 failed")
    );
    let none = env.run(&["check", "traces", "--status-level", "none"]);
    assert_eq!(lines(&none.stdout, "FAIL"), 0);
    // A small run still shows every row.
    let small = Env::new();
    many(&small, 3, 1, |_| "High");
    assert_eq!(lines(&small.run(&["check", "traces"]).stdout, "PASS"), 2);
}

#[test]
fn github_annotations_are_capped_riskiest_first_and_the_summary_goes_to_the_job() {
    let env = Env::new();
    // 60 failing traces: the last ten are Critical.
    many(
        &env,
        60,
        60,
        |i| if i >= 50 { "Critical" } else { "Medium" },
    );
    let summary = env.path("step-summary.md");
    let out = env.run_with(
        &["check", "traces", "--format", "github", "--fail-on", "any"],
        &[
            ("CI", "true"),
            ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
        ],
    );
    assert_eq!(out.code, 1);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 51, "{}", out.stdout);
    for l in &lines[..10] {
        assert!(l.contains("traces/s05"), "the Critical ones first: {l}");
    }
    assert!(lines[50].starts_with("::notice title=tracereplay::10 more annotation(s) not shown"));
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(md.contains("60"), "{md}");
}

#[test]
fn init_writes_gitignore_lines_once_and_a_workflow_that_works_as_written() {
    let env = Env::new();
    env.write(".gitignore", "target/\n*.baseline.json.new\n");
    let out = env.run(&["init"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let ignore = String::from_utf8(env.read(".gitignore")).unwrap();
    assert!(
        ignore.starts_with("target/\n"),
        "kept what was there: {ignore}"
    );
    for line in [
        ".tracereplay/",
        "*.baseline.json.new",
        "*.baseline.json.deleted",
        ".tracereplay-*.tmp",
    ] {
        assert_eq!(
            ignore.lines().filter(|l| *l == line).count(),
            1,
            "{line}: {ignore}"
        );
    }
    // A second `init` refuses, and leaves `.gitignore` as it is.
    assert_eq!(env.run(&["init"]).code, 1);
    assert_eq!(String::from_utf8(env.read(".gitignore")).unwrap(), ignore);

    let text = String::from_utf8(env.read(".github/workflows/tracereplay.yml")).unwrap();
    let doc = &yaml_rust2::YamlLoader::load_from_str(&text).unwrap()[0];
    // Pull requests and pushes to the default branch.
    assert!(!doc["on"]["pull_request"].is_badvalue());
    assert_eq!(doc["on"]["push"]["branches"][0].as_str(), Some("main"));
    let steps = doc["jobs"]["tracereplay"]["steps"].as_vec().unwrap();
    let named = |n: &str| -> &yaml_rust2::Yaml {
        steps
            .iter()
            .find(|s| s["name"].as_str() == Some(n))
            .unwrap_or_else(|| panic!("no step `{n}`"))
    };
    let position = |n: &str| {
        steps
            .iter()
            .position(|s| s["name"].as_str() == Some(n))
            .unwrap()
    };
    // The binary is cached, and installed only on a miss.
    assert_eq!(
        named("Restore the tracereplay binary")["uses"].as_str(),
        Some("actions/cache@v4")
    );
    assert_eq!(
        named("Install tracereplay")["if"].as_str(),
        Some("steps.bin.outputs.cache-hit != 'true'")
    );
    // The result cache is restored by prefix, so a fresh checkout still hits it by content,
    // and it is authenticated with a secret key.
    let cache = named("Restore the result cache");
    assert_eq!(cache["with"]["path"].as_str(), Some(".tracereplay/cache"));
    assert_eq!(
        cache["with"]["restore-keys"].as_str(),
        Some("tracereplay-cache-${{ env.TRACEREPLAY_VERSION }}-")
    );
    assert!(
        doc["jobs"]["tracereplay"]["env"]["TRACEREPLAY_CACHE_KEY"]
            .as_str()
            .unwrap()
            .contains("secrets.")
    );
    // Gates, then check with the ci profile.
    assert!(position("Quality gates") < position("Check"));
    assert_eq!(
        named("Quality gates")["run"].as_str(),
        Some("tracereplay gates")
    );
    let check = named("Check")["run"].as_str().unwrap();
    assert!(check.contains("tracereplay check --profile ci") && check.contains("--artifacts"));
    // Reports are uploaded and JUnit published whatever the outcome.
    let upload = named("Upload reports");
    assert_eq!(upload["if"].as_str(), Some("always()"));
    assert!(
        upload["with"]["path"]
            .as_str()
            .unwrap()
            .contains(".tracereplay/runs")
    );
    // JUnit is published by a job of its own that may write checks (skipped for forks).
    let publish = &doc["jobs"]["publish"];
    assert_eq!(publish["needs"].as_str(), Some("tracereplay"));
    assert!(publish["if"].as_str().unwrap().starts_with("always()"));
    // The commands the workflow runs work on what `init` laid out.
    assert_eq!(env.run(&["gates"]).code, 0);
    let out = env.run(&["check", "--profile", "ci", "--format", "github"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
}

/// The day-one path a new user walks, end to end.
#[test]
fn a_new_repository_from_init_to_last_failed() {
    let env = Env::new();
    // init in an empty repository.
    assert_eq!(env.run(&["init"]).code, 0);
    // Drop in traces of a scenario of their own.
    one_trace_suite(&env, "mine", "High", "search", "default");
    // check: the new trace has no approved baseline yet (off CI: a pending file is written).
    let out = env.run_with(&["check"], &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stdout.contains("next: 1 pending baseline(s)"),
        "{}",
        out.stdout
    );
    // baseline approve, then everything holds.
    assert_eq!(env.run_with(&["baseline", "approve"], &[]).code, 0);
    assert_eq!(env.run_with(&["check", "--artifacts"], &[]).code, 0);
    // Edit a trace: the run now calls another tool, so its oracle fails.
    let c = call("c1", "fetch");
    env.write(
        "traces/mine/default.trace.ndjson.zst",
        sealed_zst(&trace_text("mine", "default", &[&c, END])),
    );
    let quiet = env.run_with(&["check", "-q", "--artifacts"], &[]);
    assert_eq!(quiet.code, 1);
    assert!(
        quiet
            .stdout
            .starts_with("2 traces, 2 scenarios: 1 passed, 1 failed"),
        "{}",
        quiet.stdout
    );
    // --last-failed judges only the edited trace.
    let last = env.run_with(&["check", "--last-failed", "--format", "json"], &[]);
    assert_eq!(json(&last)["summary"]["traces"], 1, "{}", last.stderr);
    // Completions and the settings in force.
    assert_eq!(env.run(&["completions", "bash"]).code, 0);
    let config = env.run(&["config"]);
    assert!(
        config.stdout.contains("file: tracereplay.toml"),
        "{}",
        config.stdout
    );
}
