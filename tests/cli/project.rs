//! The project file, `tracereplay.toml`: found from any subdirectory, paths relative to it,
//! profiles (`ci` under CI), flags winning, unknown keys refused, `config` saying where each
//! setting came from.

use crate::util::*;

const PROJECT: &str = r#"
paths = ["suite"]
baselines = "approved"

[profile.default]
fail-on = "any"

[profile.ci]
require-sealed = true
"#;

/// `tracereplay ARGS` from `dir` (relative to the env's root).
fn run_in(env: &Env, dir: &str, args: &[&str], ci: bool) -> Output {
    let mut cmd = env.command(args, &[]);
    cmd.current_dir(env.path(dir));
    if ci {
        cmd.env("CI", "true");
    }
    let out = cmd.output().unwrap();
    Output {
        code: out.status.code().unwrap(),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// A project: `suite/` holds a failing Low-risk scenario (counted only by `fail-on = "any"`)
/// and an unsealed passing trace (refused only with `require-sealed`).
fn project(env: &Env) {
    env.write("tracereplay.toml", PROJECT);
    env.write(
        "suite/low/low.scenario.json",
        scenario("low", "Low", "fetch"),
    );
    env.write(
        "suite/low/default.trace.ndjson.zst",
        sealed_zst(&trace_text("low", "default", &[&call("c1", "search"), END])),
    );
    env.write(
        "suite/ok/ok.scenario.json",
        scenario("ok", "High", "search"),
    );
    env.write(
        "suite/ok/default.trace.ndjson",
        trace_text("ok", "default", &[&call("c1", "search"), END]),
    );
    std::fs::create_dir_all(env.path("deep/er")).unwrap();
}

#[test]
fn the_project_file_is_found_from_any_subdirectory_and_flags_win() {
    let env = Env::new();
    project(&env);
    // From a subdirectory: the suite is the file's `suite/`, and `fail-on = "any"` counts the
    // Low-risk failure.
    let out = run_in(&env, "deep/er", &["check", "--format", "json"], false);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let r = json(&out);
    assert_eq!(r["summary"]["traces"], 2);
    assert_eq!(r["summary"]["failed"], 1);
    // A flag wins over the file.
    let out = run_in(
        &env,
        "deep/er",
        &["check", "--fail-on", "none", "-q"],
        false,
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    // Under CI the `ci` profile adds `require-sealed`: the unsealed trace is refused. (The
    // project's `approved/` does not exist: under CI that is an error unless drift is ignored.)
    let out = run_in(
        &env,
        ".",
        &[
            "check",
            "--fail-on",
            "none",
            "--drift",
            "ignore",
            "--format",
            "json",
        ],
        true,
    );
    assert_eq!(out.code, 1);
    assert_eq!(json(&out)["summary"]["errors"], 1);
    // `--profile` picks one explicitly; an unknown one is refused with a suggestion.
    let out = run_in(
        &env,
        ".",
        &["check", "--fail-on", "none", "--profile", "ci", "-q"],
        false,
    );
    assert_eq!(out.code, 1);
    let out = run_in(&env, ".", &["check", "--profile", "cii"], false);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("did you mean `ci`?"), "{}", out.stderr);
}

#[test]
fn config_says_where_each_setting_came_from() {
    let env = Env::new();
    project(&env);
    let out = run_in(&env, "deep/er", &["config"], true);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let line = |key: &str| {
        out.stdout
            .lines()
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("no `{key}` in {}", out.stdout))
            .to_owned()
    };
    assert!(
        out.stdout.contains("profile: ci (under CI)"),
        "{}",
        out.stdout
    );
    assert!(line("paths").contains("suite") && line("paths").contains("tracereplay.toml (paths)"));
    assert!(line("fail-on").contains("any") && line("fail-on").contains("[profile.default]"));
    assert!(
        line("require-sealed").contains("true") && line("require-sealed").contains("[profile.ci]")
    );
    assert!(line("drift").ends_with("default"));
    // No project file: every setting is a default.
    let bare = Env::new();
    let out = run_in(&bare, ".", &["config"], false);
    assert!(out.stdout.contains("file: none"), "{}", out.stdout);
}

#[test]
fn unknown_keys_and_bad_values_are_refused_with_a_suggestion() {
    for (text, want) in [
        (
            "pahts = [\"suite\"]\n",
            "unknown key `pahts`; did you mean `paths`?",
        ),
        (
            "[profile.default]\nfail_on = \"any\"\n",
            "unknown key `profile.default.fail_on`; did you mean `fail-on`?",
        ),
        (
            "[profile.ci]\ndrift = \"sometimes\"\n",
            "`profile.ci.drift` is `sometimes`",
        ),
        (
            "paths = 3\n",
            "`paths` must be a string or a list of strings",
        ),
    ] {
        let env = Env::new();
        good_suite(&env);
        env.write("tracereplay.toml", text);
        let out = env.run(&["check", "traces"]);
        assert_eq!(out.code, 2, "{text}");
        assert!(out.stderr.contains(want), "{text}: {}", out.stderr);
    }
    // `--config` names a file anywhere.
    let env = Env::new();
    good_suite(&env);
    env.write(
        "conf/alt.toml",
        "paths = [\"../traces\"]\n[profile.default]\nfail-on = \"none\"\n",
    );
    let out = env.run(&["check", "--config", "conf/alt.toml", "--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(json(&out)["summary"]["traces"], 1);
}

/// A key set at the top level where `[profile.default]` sets it too never takes effect: every
/// command warns, and `config` shows it under the winner. `init` writes its keys at the top
/// level, where the docs put them, so adding one there is not silently ignored.
#[test]
fn a_key_shadowed_by_the_default_profile_is_warned_about() {
    let env = Env::new();
    assert_eq!(env.run(&["init"]).code, 0);
    let init = String::from_utf8(env.read("tracereplay.toml")).unwrap();
    assert!(!init.contains("[profile.default]"), "{init}");
    env.write(
        "tracereplay.toml",
        "paths = [\"traces\"]\nfail-on = \"any\"\n[profile.default]\nfail-on = \"high\"\n",
    );
    let check = env.run_with(&["check"], &[]);
    assert!(
        check.stderr.contains(
            "`fail-on` at the top level (any) never takes effect: `[profile.default]` sets it too (high)"
        ),
        "{}",
        check.stderr
    );
    let config = env.run_with(&["config"], &[]);
    let lines: Vec<&str> = config.stdout.lines().collect();
    let at = lines.iter().position(|l| l.starts_with("fail-on")).unwrap();
    assert!(
        lines[at].contains("high") && lines[at].contains("[profile.default]"),
        "{}",
        config.stdout
    );
    assert!(lines[at + 1].contains("shadows `any`"), "{}", config.stdout);
}

/// A baselines directory the project file names but which does not exist is named (not the
/// default's name); under CI it is an error, as a missing scenario path is: a typo must not turn
/// drift gating off where it gates.
#[test]
fn a_named_baselines_directory_that_is_missing_is_named_and_refused_under_ci() {
    let env = Env::new();
    good_suite(&env);
    env.write(
        "tracereplay.toml",
        "paths = [\"traces\"]\nbaselines = \"approved\"\n",
    );
    let off_ci = env.run_with(&["check"], &[]);
    assert_eq!(off_ci.code, 0, "{}{}", off_ci.stdout, off_ci.stderr);
    assert!(
        off_ci
            .stdout
            .contains("no `approved` directory (the project file's `baselines`)"),
        "{}",
        off_ci.stdout
    );
    let ci = env.run(&["check"]);
    assert_eq!(ci.code, 2, "{}{}", ci.stdout, ci.stderr);
    assert!(
        ci.stderr
            .contains("the baselines directory `approved` that the project file names"),
        "{}",
        ci.stderr
    );
}
