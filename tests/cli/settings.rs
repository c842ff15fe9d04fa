//! Every command honours the project file the same way: the defects the argv injection had,
//! each turned into a test (`diff --from/--to` in a project `init` made, `baseline approve` and
//! `lint` with the file's price table, `diff` of one directory with itself, a usage line that
//! showed a file setting as a required flag).

use crate::util::*;

/// `tracereplay ARGS` in `env`, off CI (`CI` cleared), so pending files may be written.
pub(crate) fn local(env: &Env, args: &[&str]) -> Output {
    env.run_with(args, &[])
}

/// A git repository in `env` with what `init` lays out.
pub(crate) fn init_project(env: &Env) {
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(env.root())
        .status()
        .expect("git is installed");
    assert!(git.success());
    let out = local(env, &["init"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(env.path("tracereplay.toml").is_file());
}

/// `traces/` copied to `to/`, with the example's search changed (a re-recorded run that drifts).
fn rerecorded(env: &Env, to: &str) {
    let from = env.path("traces");
    for f in files_under(&from) {
        let bytes = std::fs::read(from.join(&f)).unwrap();
        env.write(&format!("{to}/{f}"), bytes);
    }
    let rel = format!("{to}/example.search/default.trace.ndjson.zst");
    let body = trace_body(env, &rel);
    assert!(body.contains("web_search"), "{body}");
    let changed = body.replace(
        "\"args\":{\"query\":",
        "\"args\":{\"query\":\"changed \",\"was\":",
    );
    assert_ne!(changed, body);
    reseal(env, &rel, &changed);
}

#[test]
fn diff_from_to_in_a_project_init_made_compares_the_two_sides() {
    let env = Env::new();
    init_project(&env);
    rerecorded(&env, "new");
    // The file's `paths` are not the sides: no conflict with `--from/--to`.
    let out = local(&env, &["diff", "--from", "traces", "--to", "new"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stdout.contains("arguments-changed") && out.stdout.contains("1 drifted"),
        "{}",
        out.stdout
    );
    // An explicit path replaces the file's `paths`; it never conflicts with them.
    let out = local(&env, &["diff", "new"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stdout.contains("arguments-changed"), "{}", out.stdout);
    let out = local(&env, &["diff"]);
    assert_eq!(out.code, 0, "{out:?}");
    // Paths and `--from/--to` given together on the command line still conflict.
    let out = local(&env, &["diff", "traces", "--from", "traces", "--to", "new"]);
    assert_eq!(out.code, 2, "{out:?}");
}

#[test]
fn a_setting_from_the_file_never_shows_as_a_required_flag() {
    let env = Env::new();
    init_project(&env);
    // The argv injection made `init`'s `drift` a flag of the command line, so the usage line of
    // the error showed `--drift <DRIFT>` as if it were required. Now no setting of the file
    // becomes an argument: the run compares, with no usage text at all.
    let out = local(&env, &["diff", "--from", "traces", "--to", "traces"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!out.stderr.contains("Usage:"), "{}", out.stderr);
    // A real usage error names only what the command line lacks.
    let out = local(&env, &["diff", "--from", "traces"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--to <NEW>"), "{}", out.stderr);
    assert!(!out.stderr.contains("--drift"), "{}", out.stderr);
}

#[test]
fn diff_of_one_directory_with_itself_or_an_overlapping_one_reports_no_drift() {
    let env = Env::new();
    copy_demo(&env, false);
    let out = local(&env, &["diff", "--from", "traces", "--to", "traces"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!out.stderr.contains("more than once"), "{}", out.stderr);
    let summary = out.stdout.lines().last().unwrap_or_default().to_owned();
    assert!(
        summary.contains(" compared: 0 drifted, 0 only in old, 0 only in new, 0 errors"),
        "{summary}"
    );
    let compared: usize = summary.split(' ').next().unwrap().parse().unwrap();
    assert!(compared >= 15, "{summary}");
    // One side inside the other: the scenarios they share are one set, and what only the
    // larger side holds is only in one side.
    let out = local(
        &env,
        &[
            "diff",
            "--from",
            "traces",
            "--to",
            "traces/agent.tool.basic",
        ],
    );
    assert!(!out.stderr.contains("more than once"), "{}", out.stderr);
    assert!(
        out.stdout.contains("1 compared: 0 drifted"),
        "{}",
        out.stdout
    );
    // The JSON form says the same.
    let out = local(
        &env,
        &[
            "diff", "--from", "traces/", "--to", "./traces", "--format", "json",
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
}

const PRICES: &str = "[models.\"gpt-4.1\"]\ninput = 2\noutput = 8\n";

/// A suite in `suite/` whose one scenario holds the run to a cost, and whose trace records
/// token usage of `gpt-4.1` but no cost.
pub(crate) fn priced_suite(env: &Env, dir: &str, input_tokens: u64) {
    env.write(
        &format!("{dir}/priced/priced.scenario.json"),
        r#"{"id":"priced","title":"t","risk":"High","oracles":[{"type":"max-cost","limit":0.5}]}"#,
    );
    let inference = format!(
        r#"{{"kind":"inference","model":"gpt-4.1","output":{{"text":"ok"}},"usage":{{"input_tokens":{input_tokens},"output_tokens":100}}}}"#
    );
    let answer = r#"{"kind":"final_answer","text":"ok"}"#;
    env.write(
        &format!("{dir}/priced/default.trace.ndjson.zst"),
        sealed_zst(&trace_text("priced", "default", &[&inference, answer, END])),
    );
}

#[test]
fn baseline_approve_prices_as_check_does_so_the_next_check_is_clean() {
    let env = Env::new();
    priced_suite(&env, "suite", 1000);
    env.write("tables/prices.toml", PRICES);
    env.write(
        "tracereplay.toml",
        "paths = [\"suite\"]\nprices = \"tables/prices.toml\"\n",
    );
    let out = local(&env, &["baseline", "approve"]);
    assert_eq!(out.code, 0, "{out:?}");
    let approved = String::from_utf8(env.read("baselines/priced/default.baseline.json")).unwrap();
    assert!(approved.contains("cost_usd"), "{approved}");
    assert!(!approved.contains("not-evaluable"), "{approved}");
    // The next `check` compares like with like: no drift, no pending file.
    let out = local(&env, &["check", "--format", "json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let r = json(&out);
    assert_eq!(r["summary"]["drifted"], 0, "{r:#}");
    assert!(!out.stdout.contains("improvement"), "{}", out.stdout);
    assert!(
        !files_under(&env.path("baselines"))
            .iter()
            .any(|f| f.ends_with(".new")),
        "{:?}",
        files_under(&env.path("baselines"))
    );
    // `--prices` on the command line is accepted by `approve` too.
    let out = local(
        &env,
        &["baseline", "approve", "--prices", "tables/prices.toml"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("0 written, 1 unchanged"),
        "{}",
        out.stdout
    );
}

#[test]
fn lint_warns_of_a_model_the_files_price_table_cannot_price() {
    let env = Env::new();
    priced_suite(&env, "suite", 1000);
    env.write(
        "tables/prices.toml",
        "[models.\"other-model\"]\ninput = 1\noutput = 1\n",
    );
    env.write(
        "tracereplay.toml",
        "paths = [\"suite\"]\nprices = \"tables/prices.toml\"\n",
    );
    let out = local(&env, &["lint"]);
    assert_eq!(out.code, 0, "a warning never fails the lint: {out:?}");
    assert!(
        out.stdout.contains("unpriced-model") && out.stdout.contains("model `gpt-4.1`"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("suite/priced/default.trace.ndjson.zst:2"),
        "{}",
        out.stdout
    );
    // A table that prices it: no warning; and the command line's table wins over the file's.
    env.write("tables/full.toml", PRICES);
    let out = local(&env, &["lint", "--prices", "tables/full.toml"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!out.stdout.contains("unpriced-model"), "{}", out.stdout);
    // Without any table, nothing is said of prices.
    std::fs::remove_file(env.path("tracereplay.toml")).unwrap();
    let out = local(&env, &["lint", "suite"]);
    assert!(!out.stdout.contains("unpriced-model"), "{}", out.stdout);
}
