//! Each setting has an effect: for every (key, command) pair of the table in
//! `docs/configuration.md` — generated from the code, so this covers every pair the code says
//! it reads — a project file sets the key to a value that changes what the command does, and
//! the command line overrides it. The test that would have caught every setting the argv
//! injection dropped without a word.

use crate::settings::local;
use crate::settings_fixtures as fx;
use crate::util::*;

/// One (key, command) pair and how to see its effect.
struct Case {
    key: &'static str,
    cmd: &'static str,
    /// Lays out the project (before the project file is written).
    setup: fn(&Env),
    /// The project file without the key (top-level keys only).
    base: &'static str,
    /// The key, appended to `base`.
    set: &'static str,
    args: &'static [&'static str],
    /// Command-line flags that override the key.
    over: &'static [&'static str],
    /// Whether the override gives back the outcome without the key (else it only differs from
    /// the outcome with it).
    restores: bool,
    observe: fn(&Env, &Output) -> String,
}

/// The exit code and standard output.
fn printed(_: &Env, out: &Output) -> String {
    format!("exit {}\n{}", out.code, out.stdout)
}

/// The exit code only (for outputs that name random key ids).
fn code(_: &Env, out: &Output) -> String {
    format!("exit {}", out.code)
}

/// The exit code and how many traces were found signed by a trusted key.
fn signed_by(_: &Env, out: &Output) -> String {
    format!(
        "exit {}, {} signed",
        out.code,
        out.stdout.matches("signed by").count()
    )
}

/// The exit code and the JSON report's counts.
fn summary(_: &Env, out: &Output) -> String {
    let counts = serde_json::from_str::<serde_json::Value>(&out.stdout).map(|r| {
        let s = &r["summary"];
        let keys = [
            "traces",
            "scenarios",
            "passed",
            "failed",
            "errors",
            "drifted",
            "new",
        ];
        let mut line: Vec<String> = keys.iter().map(|k| format!("{k} {}", s[*k])).collect();
        line.push(format!("blocking {}", s["blocking"]));
        line.push(format!("ignored {}", s["ignored_failures"]));
        line.join(", ")
    });
    format!("exit {} {}", out.code, counts.unwrap_or_default())
}

/// Which result-cache directory a run wrote.
fn cache_dirs(env: &Env, out: &Output) -> String {
    format!(
        "exit {}, mycache {}, default {}",
        out.code,
        env.path("mycache").is_dir(),
        env.path(".tracereplay/cache").is_dir()
    )
}

/// The exit code, standard output and every baseline file written, with its content.
fn approved(env: &Env, out: &Output) -> String {
    let mut seen = printed(env, out);
    for dir in ["baselines", "approved"] {
        for f in files_under(&env.path(dir)) {
            let text = String::from_utf8(env.read(&format!("{dir}/{f}"))).unwrap();
            seen.push_str(&format!("\n{dir}/{f}: {text}"));
        }
    }
    seen
}

const SUITE: &str = "paths = [\"suite\"]\n";
const CHECK: &[&str] = &["check", "--format", "json"];

fn cases() -> Vec<Case> {
    let c = |key, cmd, setup: fn(&Env), base, set, args, over, restores, observe| Case {
        key,
        cmd,
        setup,
        base,
        set,
        args,
        over,
        restores,
        observe,
    };
    let keys_a = "trusted-keys = \"keys_a/tracereplay.pub\"\n";
    vec![
        // check
        c(
            "paths",
            "check",
            fx::suite,
            "",
            SUITE,
            CHECK,
            &["nowhere"],
            true,
            summary,
        ),
        c(
            "baselines",
            "check",
            fx::drifted_approved,
            SUITE,
            "baselines = \"approved\"\n",
            CHECK,
            &["--baselines", "empty"],
            false,
            summary,
        ),
        c(
            "scenarios",
            "check",
            fx::harness,
            SUITE,
            "scenarios = [\"harness\"]\n",
            CHECK,
            &["--scenarios", "empty"],
            true,
            summary,
        ),
        c(
            "cache-dir",
            "check",
            fx::suite,
            SUITE,
            "cache-dir = \"mycache\"\n",
            CHECK,
            &["--cache-dir", ".tracereplay/cache"],
            true,
            cache_dirs,
        ),
        c(
            "trusted-keys",
            "check",
            fx::signed,
            "paths = [\"suite\"]\nrequire-signed = true\n",
            keys_a,
            CHECK,
            &["--trusted-keys", "keys_b/tracereplay.pub"],
            false,
            summary,
        ),
        c(
            "prices",
            "check",
            fx::priced,
            SUITE,
            "prices = \"tables/prices.toml\"\n",
            CHECK,
            &["--prices", "tables/other.toml"],
            true,
            summary,
        ),
        c(
            "budget.tokens",
            "check",
            fx::priced,
            "paths = [\"suite\"]\nprices = \"tables/prices.toml\"\n",
            "[budget]\ntokens = 10\n",
            CHECK,
            &["--budget-tokens", "1000000"],
            true,
            summary,
        ),
        c(
            "budget.cost",
            "check",
            fx::priced,
            "paths = [\"suite\"]\nprices = \"tables/prices.toml\"\n",
            "[budget]\ncost = 0.000001\n",
            CHECK,
            &["--budget-cost", "100"],
            true,
            summary,
        ),
        c(
            "fail-on",
            "check",
            fx::suite,
            SUITE,
            "fail-on = \"any\"\n",
            CHECK,
            &["--fail-on", "high"],
            true,
            summary,
        ),
        c(
            "drift",
            "check",
            fx::drifted,
            SUITE,
            "drift = \"warn\"\n",
            CHECK,
            &["--drift", "default"],
            true,
            summary,
        ),
        c(
            "usage-tolerance",
            "check",
            fx::usage_moved,
            "paths = [\"suite\"]\nprices = \"tables/prices.toml\"\n",
            "usage-tolerance = 50\n",
            CHECK,
            &["--usage-tolerance", "20"],
            true,
            summary,
        ),
        c(
            "alpha",
            "check",
            fx::trials,
            SUITE,
            "alpha = 0.01\n",
            CHECK,
            &["--alpha", "0.05"],
            true,
            summary,
        ),
        c(
            "require-sealed",
            "check",
            fx::unsealed,
            SUITE,
            "require-sealed = true\n",
            CHECK,
            &["--no-require-sealed"],
            true,
            summary,
        ),
        c(
            "require-signed",
            "check",
            fx::signed,
            "paths = [\"suite\"]\ntrusted-keys = \"keys_b/tracereplay.pub\"\n",
            "require-signed = true\n",
            CHECK,
            &["--no-require-signed"],
            true,
            summary,
        ),
        c(
            "run-id",
            "check",
            fx::signed,
            "paths = [\"suite\"]\nrequire-signed = true\ntrusted-keys = \"keys_a/tracereplay.pub\"\n",
            "run-id = \"r2\"\n",
            CHECK,
            &["--run-id", "r1"],
            true,
            summary,
        ),
        // diff, against the approved baselines
        c(
            "paths",
            "diff",
            fx::drifted,
            "",
            SUITE,
            &["diff"],
            &["nowhere"],
            true,
            code,
        ),
        c(
            "baselines",
            "diff",
            fx::drifted_approved,
            SUITE,
            "baselines = \"approved\"\n",
            &["diff"],
            &["--baselines", "nowhere"],
            true,
            code,
        ),
        c(
            "scenarios",
            "diff",
            fx::harness,
            SUITE,
            "scenarios = [\"harness\"]\n",
            &["diff"],
            &["--scenarios", "empty"],
            true,
            code,
        ),
        c(
            "prices",
            "diff",
            fx::priced_approved,
            SUITE,
            "prices = \"tables/prices.toml\"\n",
            &["diff"],
            &["--prices", "tables/other.toml"],
            true,
            printed,
        ),
        c(
            "drift",
            "diff",
            fx::drifted,
            SUITE,
            "drift = \"ignore\"\n",
            &["diff"],
            &["--drift", "default"],
            true,
            printed,
        ),
        c(
            "usage-tolerance",
            "diff",
            fx::usage_moved,
            "paths = [\"suite\"]\nprices = \"tables/prices.toml\"\n",
            "usage-tolerance = 50\n",
            &["diff"],
            &["--usage-tolerance", "20"],
            true,
            printed,
        ),
        c(
            "alpha",
            "diff",
            fx::trials,
            SUITE,
            "alpha = 0.01\n",
            &["diff"],
            &["--alpha", "0.05"],
            true,
            printed,
        ),
        c(
            "require-sealed",
            "diff",
            fx::unsealed,
            SUITE,
            "require-sealed = true\n",
            &["diff"],
            &["--no-require-sealed"],
            true,
            printed,
        ),
        // explain
        c(
            "paths",
            "explain",
            fx::suite,
            "",
            SUITE,
            &["explain", "ok"],
            &["--in", "nowhere"],
            true,
            code,
        ),
        c(
            "baselines",
            "explain",
            fx::drifted_approved,
            SUITE,
            "baselines = \"approved\"\n",
            &["explain", "ok"],
            &["--baselines", "nowhere"],
            false,
            printed,
        ),
        c(
            "scenarios",
            "explain",
            fx::harness,
            SUITE,
            "scenarios = [\"harness\"]\n",
            &["explain", "suite/extra/default.trace.ndjson.zst"],
            &["--scenarios", "empty"],
            true,
            code,
        ),
        c(
            "prices",
            "explain",
            fx::priced,
            SUITE,
            "prices = \"tables/prices.toml\"\n",
            &["explain", "priced"],
            &["--prices", "tables/other.toml"],
            true,
            printed,
        ),
        c(
            "drift",
            "explain",
            fx::drifted,
            SUITE,
            "drift = \"ignore\"\n",
            &["explain", "ok"],
            &["--drift", "default"],
            true,
            printed,
        ),
        c(
            "usage-tolerance",
            "explain",
            fx::usage_moved,
            "paths = [\"suite\"]\nprices = \"tables/prices.toml\"\n",
            "usage-tolerance = 50\n",
            &["explain", "priced"],
            &["--usage-tolerance", "20"],
            true,
            printed,
        ),
        c(
            "require-sealed",
            "explain",
            fx::unsealed,
            SUITE,
            "require-sealed = true\n",
            &["explain", "ok"],
            &["--no-require-sealed"],
            true,
            printed,
        ),
        // verify, verify-attestation
        c(
            "paths",
            "verify",
            fx::suite,
            "",
            SUITE,
            &["verify"],
            &["nowhere"],
            true,
            code,
        ),
        c(
            "trusted-keys",
            "verify",
            fx::signed,
            SUITE,
            keys_a,
            &["verify"],
            &["--trusted-keys", "keys_b/tracereplay.pub"],
            false,
            signed_by,
        ),
        c(
            "trusted-keys",
            "verify-attestation",
            fx::signed,
            "",
            keys_a,
            &["verify-attestation", "run.intoto.json"],
            &["--trusted-keys", "keys_b/tracereplay.pub"],
            false,
            code,
        ),
        // lint
        c(
            "paths",
            "lint",
            fx::suite,
            "",
            SUITE,
            &["lint"],
            &["nowhere"],
            true,
            code,
        ),
        c(
            "scenarios",
            "lint",
            fx::harness_with_secret,
            SUITE,
            "scenarios = [\"harness\"]\n",
            &["lint"],
            &["--scenarios", "empty"],
            true,
            code,
        ),
        c(
            "prices",
            "lint",
            fx::priced,
            SUITE,
            "prices = \"tables/other.toml\"\n",
            &["lint"],
            &["--prices", "tables/prices.toml"],
            true,
            printed,
        ),
        // gates
        c(
            "paths",
            "gates",
            fx::suite,
            "",
            SUITE,
            &["gates"],
            &["nowhere"],
            true,
            code,
        ),
        c(
            "scenarios",
            "gates",
            fx::harness,
            SUITE,
            "scenarios = [\"harness\"]\n",
            &["gates"],
            &["--scenarios", "empty"],
            false,
            printed,
        ),
        c(
            "prices",
            "gates",
            fx::priced,
            SUITE,
            "prices = \"tables/prices.toml\"\n",
            &["gates", "--strength"],
            &["--prices", "tables/other.toml"],
            true,
            printed,
        ),
        c(
            "alpha",
            "gates",
            fx::three_trials,
            SUITE,
            "alpha = 0.01\n",
            &["gates"],
            &["--alpha", "0.05"],
            true,
            printed,
        ),
        // baseline approve
        c(
            "paths",
            "baseline approve",
            fx::suite,
            "",
            SUITE,
            &["baseline", "approve"],
            &["nowhere"],
            true,
            code,
        ),
        c(
            "baselines",
            "baseline approve",
            fx::suite,
            SUITE,
            "baselines = \"approved\"\n",
            &["baseline", "approve"],
            &["--baselines", "baselines"],
            true,
            approved,
        ),
        c(
            "scenarios",
            "baseline approve",
            fx::harness,
            SUITE,
            "scenarios = [\"harness\"]\n",
            &["baseline", "approve", "--baselines", "fresh"],
            &["--scenarios", "empty"],
            true,
            code,
        ),
        c(
            "prices",
            "baseline approve",
            fx::priced,
            SUITE,
            "prices = \"tables/prices.toml\"\n",
            &["baseline", "approve"],
            &["--prices", "tables/other.toml"],
            true,
            approved,
        ),
        c(
            "require-sealed",
            "baseline approve",
            fx::unsealed,
            SUITE,
            "require-sealed = true\n",
            &["baseline", "approve", "--baselines", "fresh"],
            &["--no-require-sealed"],
            true,
            code,
        ),
        // trials plan and trials next
        c(
            "paths",
            "trials plan",
            fx::trials,
            "",
            SUITE,
            &["trials", "plan"],
            &["nowhere"],
            true,
            code,
        ),
        c(
            "baselines",
            "trials plan",
            fx::trials,
            SUITE,
            "baselines = \"approved\"\n",
            &["trials", "plan"],
            &["--baselines", "baselines"],
            true,
            printed,
        ),
        c(
            "scenarios",
            "trials plan",
            fx::harness_policy,
            SUITE,
            "scenarios = [\"harness\"]\n",
            &["trials", "plan"],
            &["--scenarios", "empty"],
            true,
            printed,
        ),
        c(
            "prices",
            "trials plan",
            fx::priced_policy,
            SUITE,
            "prices = \"tables/prices.toml\"\n",
            &["trials", "plan"],
            &["--prices", "tables/other.toml"],
            true,
            printed,
        ),
        c(
            "alpha",
            "trials plan",
            fx::trials,
            SUITE,
            "alpha = 0.01\n",
            &["trials", "plan"],
            &["--alpha", "0.05"],
            true,
            printed,
        ),
        c(
            "require-sealed",
            "trials plan",
            fx::unsealed_policy,
            SUITE,
            "require-sealed = true\n",
            &["trials", "plan"],
            &["--no-require-sealed"],
            true,
            printed,
        ),
        c(
            "paths",
            "trials next",
            fx::trials,
            "",
            SUITE,
            &["trials", "next", "s/c"],
            &["nowhere"],
            true,
            code,
        ),
        c(
            "baselines",
            "trials next",
            fx::group_drift,
            SUITE,
            "baselines = \"approved\"\n",
            &["trials", "next", "s/c"],
            &["--baselines", "baselines"],
            true,
            printed,
        ),
        c(
            "drift",
            "trials next",
            fx::group_drift,
            SUITE,
            "drift = \"ignore\"\n",
            &["trials", "next", "s/c"],
            &["--drift", "default"],
            true,
            printed,
        ),
        c(
            "alpha",
            "trials next",
            fx::group_drift,
            SUITE,
            "alpha = 0.01\n",
            &["trials", "next", "s/c"],
            &["--alpha", "0.05"],
            true,
            printed,
        ),
        c(
            "scenarios",
            "trials next",
            fx::harness_policy,
            SUITE,
            "scenarios = [\"harness\"]\n",
            &["trials", "next", "extra/default"],
            &["--scenarios", "empty"],
            true,
            printed,
        ),
        c(
            "prices",
            "trials next",
            fx::priced_policy,
            SUITE,
            "prices = \"tables/prices.toml\"\n",
            &["trials", "next", "priced/default"],
            &["--prices", "tables/other.toml"],
            true,
            printed,
        ),
        c(
            "require-sealed",
            "trials next",
            fx::unsealed_policy,
            SUITE,
            "require-sealed = true\n",
            &["trials", "next", "ok/default"],
            &["--no-require-sealed"],
            true,
            code,
        ),
        // the review of pending baselines
        c(
            "baselines",
            "baseline pending",
            fx::pending,
            SUITE,
            "baselines = \"approved\"\n",
            &["baseline", "pending"],
            &["--baselines", "baselines"],
            true,
            printed,
        ),
        c(
            "baselines",
            "baseline review",
            fx::pending,
            SUITE,
            "baselines = \"approved\"\n",
            &["baseline", "review"],
            &["--baselines", "baselines"],
            true,
            printed,
        ),
        c(
            "baselines",
            "baseline accept",
            fx::pending,
            SUITE,
            "baselines = \"approved\"\n",
            &["baseline", "accept"],
            &["--baselines", "baselines"],
            true,
            approved,
        ),
        c(
            "baselines",
            "baseline reject",
            fx::pending,
            SUITE,
            "baselines = \"approved\"\n",
            &["baseline", "reject"],
            &["--baselines", "baselines"],
            true,
            approved,
        ),
    ]
}

/// What `case` gives in a fresh project whose file is `file`, run with `extra` flags.
fn outcome(case: &Case, file: &str, extra: &[&str]) -> String {
    let env = Env::new();
    (case.setup)(&env);
    env.write("tracereplay.toml", file);
    let args = [case.args, extra].concat();
    // `review` needs a terminal.
    if case.cmd == "baseline review" {
        return reviewed(&env, &args);
    }
    let out = local(&env, &args);
    (case.observe)(&env, &out)
}

/// `baseline review ARGS` on a pseudo-terminal: what it showed before it asked for a key (or
/// said there was nothing to review).
fn reviewed(env: &Env, args: &[&str]) -> String {
    let mut pty = crate::review::Pty::spawn(env, args);
    let screen = pty.wait_for_any(0, &["no pending baseline", "a accept"]);
    if screen.contains("a accept") {
        pty.key("q");
    }
    screen
}

/// The (key, command) pairs of the generated table in `docs/configuration.md`.
fn documented_pairs() -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("docs/configuration.md")).unwrap();
    let mut pairs = Vec::new();
    for line in text.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split(" | ").collect();
        let key = cells[0].trim_start_matches("| ").trim_matches('`');
        let readers = cells.last().unwrap().trim_end_matches(" |").trim();
        for cmd in readers.split(", ").filter(|c| !c.is_empty()) {
            pairs.push((key.to_owned(), cmd.trim_matches('`').to_owned()));
        }
    }
    pairs
}

#[test]
fn every_documented_pair_has_a_case_and_every_case_is_documented() {
    let documented = documented_pairs();
    assert!(documented.len() >= 40, "{documented:?}");
    let covered: Vec<(String, String)> = (cases().iter())
        .map(|c| (c.key.to_owned(), c.cmd.to_owned()))
        .collect();
    for pair in &documented {
        assert!(
            covered.contains(pair),
            "`{}` is read by `{}` (docs/configuration.md) but no case shows its effect",
            pair.0,
            pair.1
        );
    }
    for pair in &covered {
        assert!(
            documented.contains(pair),
            "a case sets `{}` for `{}`, which docs/configuration.md does not list",
            pair.0,
            pair.1
        );
    }
}

/// Runs the cases whose index is `i mod of`, so the pairs are spread over test threads.
fn run_share(i: usize, of: usize) {
    for case in cases().iter().skip(i).step_by(of) {
        let file_without = case.base.to_owned();
        let file_with = format!("{}{}", case.base, case.set);
        let without = outcome(case, &file_without, &[]);
        let with = outcome(case, &file_with, &[]);
        let what = format!("`{}` in the project file, for `{}`", case.key, case.cmd);
        assert_ne!(without, with, "{what} changed nothing:\n{with}");
        let overridden = outcome(case, &file_with, case.over);
        assert_ne!(
            overridden, with,
            "{what}: the command line ({:?}) did not override it:\n{with}",
            case.over
        );
        if case.restores {
            assert_eq!(
                overridden, without,
                "{what}: the command line ({:?}) did not give back the outcome without it",
                case.over
            );
        }
    }
}

#[test]
fn each_setting_has_an_effect_share_1() {
    run_share(0, 4);
}

#[test]
fn each_setting_has_an_effect_share_2() {
    run_share(1, 4);
}

#[test]
fn each_setting_has_an_effect_share_3() {
    run_share(2, 4);
}

#[test]
fn each_setting_has_an_effect_share_4() {
    run_share(3, 4);
}
