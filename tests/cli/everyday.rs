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
    let out = env.run(&["check", "traces", "--last-failed", "--format", "json"]);
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
            && out.stderr.contains("1 that passed then were left out"),
        "{}",
        out.stderr
    );
    // Human output says so in its summary.
    let human = env.run(&["check", "traces", "--last-failed"]);
    assert!(
        human.stdout.contains("last-failed: judged 2 trace(s)"),
        "{}",
        human.stdout
    );
    // Without a run folder, it says how to make one.
    let empty = Env::new();
    one_trace_suite(&empty, "good", "High", "search", "default");
    let out = empty.run(&["check", "traces", "--last-failed"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("--artifacts"), "{}", out.stderr);
}
