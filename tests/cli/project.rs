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
    // Under CI the `ci` profile adds `require-sealed`: the unsealed trace is refused.
    let out = run_in(
        &env,
        ".",
        &["check", "--fail-on", "none", "--format", "json"],
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
