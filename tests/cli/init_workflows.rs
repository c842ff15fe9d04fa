//! Every documented workflow, in a project made by `init` — and the same sequences without a
//! project file: the gate in CI (the workflow `init` writes, and the README's), the review of
//! drift after a runtime change (`check` + `baseline pending`/`accept`/`review`, and `diff
//! --from/--to`), the audit (`--artifacts` + `explain --last`, the HTML report, `report
//! --compare`), trials of a stochastic agent, and signed evidence. Each step is checked for its
//! documented exit code and output.

use crate::settings::{init_project, local};
use crate::util::*;

const EXAMPLE: &str = "traces/example.search/default.trace.ndjson.zst";
const APPROVED: &str = "baselines/example.search/default.baseline.json";

/// A project made by `init` in a git repository; without its project file when `with_file` is
/// false (everything the commands below name is then on their command lines or a default).
fn project(with_file: bool) -> Env {
    let env = Env::new();
    init_project(&env);
    if !with_file {
        std::fs::remove_file(env.path("tracereplay.toml")).unwrap();
    }
    env
}

/// `tracereplay ARGS` under CI (`CI=true`).
fn in_ci(env: &Env, args: &[&str]) -> Output {
    env.run(args)
}

/// Re-records the example with another search query (a runtime change): `project
/// documentation` becomes `project docs`, and back.
fn rerecord(env: &Env, rel: &str) {
    let body = trace_body(env, rel);
    let changed = if body.contains("project documentation") {
        body.replace("project documentation", "project docs")
    } else {
        body.replace("project docs", "project documentation")
    };
    assert_ne!(body, changed);
    reseal(env, rel, &changed);
}

fn gate_in_ci(with_file: bool) {
    let env = project(with_file);
    // The workflow `init` writes: `gates`, then `check --profile ci --format github …`.
    let out = in_ci(&env, &["gates"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("1 scenarios: 0 problem(s)"),
        "{}",
        out.stdout
    );
    let profile: &[&str] = if with_file { &["--profile", "ci"] } else { &[] };
    let args = [
        &["check"],
        profile,
        &["--format", "github", "--junit", "tracereplay-junit.xml"],
        &["--artifacts", ".tracereplay/runs"],
    ]
    .concat();
    let out = in_ci(&env, &args);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!out.stdout.contains("::error"), "{}", out.stdout);
    assert!(env.path("tracereplay-junit.xml").is_file());
    // The README's gate.
    let args = ["check", "traces/", "--fail-on", "any", "--require-sealed"];
    let out = in_ci(&env, &args);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("1 passed, 0 failed, 0 errors"),
        "{}",
        out.stdout
    );
    // A drifted trace fails the gate, and CI writes nothing.
    rerecord(&env, EXAMPLE);
    let out = in_ci(&env, &["check", "traces/"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stdout.contains("arguments-changed"), "{}", out.stdout);
    assert!(!env.path(&format!("{APPROVED}.new")).exists());
}

fn review_drift(with_file: bool) {
    let env = project(with_file);
    let before = env.read(APPROVED);
    rerecord(&env, EXAMPLE);
    // `check` off CI reports the drift and writes the pending file.
    let out = local(&env, &["check", "traces/"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stdout.contains("drift arguments-changed"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("-call#1 web_search {\"query\":\"project documentation\"}"),
        "{}",
        out.stdout
    );
    assert!(env.path(&format!("{APPROVED}.new")).is_file());
    // Scripts: `baseline pending --diff`, then `accept`.
    let out = local(&env, &["baseline", "pending", "--diff"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("changed  example.search/default"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("+call#1 web_search {\"query\":\"project docs\"}"),
        "{}",
        out.stdout
    );
    let out = local(&env, &["baseline", "accept"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("accepted example.search/default"),
        "{}",
        out.stdout
    );
    assert_ne!(env.read(APPROVED), before);
    let out = local(&env, &["check", "traces/"]);
    assert_eq!(out.code, 0, "{out:?}");
    // On a terminal: `baseline review`, `a` to accept.
    rerecord(&env, EXAMPLE);
    let out = local(&env, &["check", "traces/"]);
    assert_eq!(out.code, 1, "{out:?}");
    let mut pty = crate::review::Pty::spawn(&env, &["baseline", "review"]);
    let at = pty.wait_for(0, "a accept");
    pty.key("a");
    pty.wait_for(
        at,
        "review: 1 accepted, 0 rejected, 0 removed, 0 skipped; 0 still pending",
    );
    drop(pty);
    let out = local(&env, &["check", "traces/"]);
    assert_eq!(out.code, 0, "{out:?}");
    // Two recordings compared without baselines.
    for f in files_under(&env.path("traces")) {
        env.write(&format!("old-traces/{f}"), env.read(&format!("traces/{f}")));
    }
    rerecord(&env, EXAMPLE);
    let out = local(&env, &["diff", "--from", "old-traces/", "--to", "traces/"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stdout.contains("1 compared: 1 drifted"),
        "{}",
        out.stdout
    );
    let out = local(&env, &["diff", "--from", "traces/", "--to", "traces/"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("1 compared: 0 drifted"),
        "{}",
        out.stdout
    );
    // First adoption of a suite.
    std::fs::remove_dir_all(env.path("baselines")).unwrap();
    let out = local(&env, &["baseline", "approve", "traces/"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("1 written, 0 unchanged, 0 skipped"),
        "{}",
        out.stdout
    );
    assert!(env.path(APPROVED).is_file());
}

fn audit(with_file: bool) {
    let env = project(with_file);
    let out = local(&env, &["check", "traces/", "--json", "before.json"]);
    assert_eq!(out.code, 0, "{out:?}");
    // A failure, audited from the run folder and the HTML report.
    edit_trace(
        &env,
        EXAMPLE,
        "\"tool\":\"web_search\"",
        "\"tool\":\"shell\"",
    );
    let args = [
        "check",
        "traces/",
        "--artifacts",
        "--html",
        "report.html",
        "--json",
        "after.json",
    ];
    let out = in_ci(&env, &args);
    assert_eq!(out.code, 1, "{out:?}");
    let out = local(&env, &["explain", "--last"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("example.search"), "{}", out.stdout);
    assert!(out.stdout.contains("tool-called"), "{}", out.stdout);
    let out = local(&env, &["explain", "--last", "--full"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("no-unsafe-tool"), "{}", out.stdout);
    let html = String::from_utf8(env.read("report.html")).unwrap();
    assert!(
        html.contains("example.search"),
        "the HTML report names the failing scenario"
    );
    let out = local(&env, &["explain", EXAMPLE]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .contains("fail tool-called #0: `web_search` never called"),
        "{}",
        out.stdout
    );
    // Two runs side by side.
    let out = local(&env, &["report", "--compare", "before.json", "after.json"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stdout.contains("BROKE    example.search/default"),
        "{}",
        out.stdout
    );
}

fn trials(with_file: bool) {
    let env = project(with_file);
    env.write(
        "traces/refund.order/refund.order.scenario.json",
        r#"{"id":"refund.order","title":"t","risk":"High","trials":{"min":4,"pass":{"at-least":3}},"oracles":[{"type":"tool-called","tool":"refund"}]}"#,
    );
    let write = |dir: &str, tools: &[&str]| {
        for (i, tool) in tools.iter().enumerate() {
            let trace = crate::trials::trial_trace("refund.order", "gpt-4.1", &i.to_string(), tool);
            env.write(
                &format!("{dir}/refund.order/gpt-4.1/{i}.trace.ndjson.zst"),
                trace,
            );
        }
    };
    write(
        "traces",
        &["refund", "refund", "refund", "transfer_to_human"],
    );
    let out = in_ci(&env, &["check", "traces/"]);
    assert!(
        out.stdout
            .contains("FLAKY refund.order/gpt-4.1: 3/4 trials pass"),
        "{}",
        out.stdout
    );
    // The trials' first baseline, then the same agent recorded again: no drift.
    let out = local(&env, &["baseline", "approve", "traces/"]);
    assert_eq!(out.code, 0, "{out:?}");
    write(
        "traces",
        &["refund", "transfer_to_human", "refund", "refund"],
    );
    let out = in_ci(&env, &["check", "traces/"]);
    assert_eq!(out.code, 0, "{out:?}");
    // Two sets of trials compared as sets.
    env.write(
        "scenarios/refund.order.scenario.json",
        env.read("traces/refund.order/refund.order.scenario.json"),
    );
    write("before", &["refund"; 4]);
    write("after", &["transfer_to_human"; 4]);
    let args = [
        "diff",
        "--from",
        "before/",
        "--to",
        "after/",
        "--scenarios",
        "scenarios/",
    ];
    let out = local(&env, &args);
    assert!(out.stdout.contains("trial sets: 1 case(s)"), "{out:?}");
    assert!(
        out.stdout.contains("refund.order/gpt-4.1  4/4 -> 0/4"),
        "{}",
        out.stdout
    );
}

fn signing(with_file: bool) {
    let env = project(with_file);
    let out = local(&env, &["key", "new", "--sign", "-o", "keys"]);
    assert_eq!(out.code, 0, "{out:?}");
    let key = String::from_utf8(env.read("keys/tracereplay.key")).unwrap();
    std::fs::remove_file(env.path("keys/tracereplay.key")).unwrap();
    let signing = [("TRACEREPLAY_SIGNING_KEY", key.as_str())];
    let out = env.run_with(&["sign", "traces/"], &signing);
    assert_eq!(out.code, 0, "{out:?}");
    let gate = [
        "check",
        "traces/",
        "--fail-on",
        "any",
        "--require-sealed",
        "--require-signed",
        "--trusted-keys",
        "keys/tracereplay.pub",
        "--attest",
        "tracereplay.intoto.json",
        "--format",
        "github",
    ];
    let out = env.run_with(&gate, &[signing[0], ("CI", "true")]);
    assert_eq!(out.code, 0, "{out:?}");
    let verify = [
        "verify-attestation",
        "tracereplay.intoto.json",
        "--trusted-keys",
        "keys/tracereplay.pub",
        "--traces",
        "traces/",
    ];
    let out = local(&env, &verify);
    assert_eq!(out.code, 0, "{out:?}");
    // With the keys in the project file, as docs/signing.md has it: `ci` requires signatures.
    if with_file {
        let mut text = String::from_utf8(env.read("tracereplay.toml")).unwrap();
        text = text.replacen("paths = ", "trusted-keys = \"keys\"\npaths = ", 1);
        text.push_str("require-signed = true\n");
        env.write("tracereplay.toml", text);
        let out = in_ci(&env, &["check"]);
        assert_eq!(out.code, 0, "{out:?}");
        let out = in_ci(&env, &["verify-attestation", "tracereplay.intoto.json"]);
        assert_eq!(out.code, 0, "{out:?}");
        // An unsigned trace is an error row under CI, and fine off it.
        std::fs::remove_file(env.path(&format!("{EXAMPLE}.minisig"))).unwrap();
        let out = in_ci(&env, &["check"]);
        assert_eq!(out.code, 1, "{out:?}");
        assert!(out.stdout.contains("signature"), "{}", out.stdout);
        let out = local(&env, &["check", "--no-require-signed"]);
        assert_eq!(out.code, 0, "{out:?}");
    }
}

#[test]
fn the_ci_gate_as_documented_with_and_without_the_project_file() {
    gate_in_ci(true);
    gate_in_ci(false);
}

#[test]
fn the_review_of_drift_as_documented_with_and_without_the_project_file() {
    review_drift(true);
    review_drift(false);
}

#[test]
fn the_audit_as_documented_with_and_without_the_project_file() {
    audit(true);
    audit(false);
}

#[test]
fn trials_as_documented_with_and_without_the_project_file() {
    trials(true);
    trials(false);
}

#[test]
fn signed_evidence_as_documented_with_and_without_the_project_file() {
    signing(true);
    signing(false);
}
