//! `baseline pending --diff`: what approving each pending file changes, without a terminal.

use crate::util::*;

const BASIC: &str = "traces/agent.tool.basic/default.trace.ndjson.zst";
const TIMEOUT: &str = "traces/agent.tool.timeout/default.trace.ndjson.zst";

/// A changed baseline shows its drift findings with `check`'s diff; a removal shows the
/// approved behaviour as removals; a new one shows its behaviour as additions, oracles in their
/// scenario's order; without `--diff` the listing is the one-line summaries alone.
#[test]
fn pending_diff_shows_changes_removals_and_new_baselines() {
    let env = Env::new();
    copy_demo(&env, true);
    edit_trace(&env, TIMEOUT, "\"city\":\"Oslo\"", "\"city\":\"Bergen\"");
    std::fs::remove_file(env.path(BASIC)).unwrap();
    let out = env.run_with(&["check", "traces/"], &[("CI", "false")]);
    assert_eq!(out.code, 1, "{}", out.stdout);

    let plain = env.run_with(&["baseline", "pending"], &[("CI", "false")]);
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    let out = env.run_with(&["baseline", "pending", "--diff"], &[("CI", "false")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // Every summary line is there, in the same order, each followed by its changes.
    let summaries: Vec<&str> = (out.stdout.lines())
        .filter(|l| !l.starts_with(' '))
        .collect();
    assert_eq!(summaries, plain.stdout.lines().collect::<Vec<_>>());
    assert_eq!(summaries.len(), 2, "{}", out.stdout);
    let removed = out.stdout.split("changed  ").next().unwrap();
    assert!(
        removed.starts_with("removed  agent.tool.basic/default"),
        "{}",
        out.stdout
    );
    for want in [
        "          - status completed",
        "          - call#1 web_search {\"query\":\"demo information\"} ok",
        "          - oracle 0:tool-called pass",
    ] {
        assert!(removed.contains(want), "{want} in {removed}");
    }
    // Oracles in their scenario's order: 2 before 10, the synthetic one last.
    let at = |s: &str| {
        removed
            .find(s)
            .unwrap_or_else(|| panic!("{s} in {removed}"))
    };
    assert!(at("oracle 2:") < at("oracle 10:"));
    assert!(at("oracle 13:") < at("oracle run-completed"));
    let changed = &out.stdout[removed.len()..];
    for want in [
        "      drift arguments-changed: 1 call(s) changed arguments or outcome",
        "          -call#1 weather {\"city\":\"Oslo\"} -> failed error \"timeout after 30s\"",
        "          +call#1 weather {\"city\":\"Bergen\"} -> failed error \"timeout after 30s\"",
    ] {
        assert!(changed.contains(want), "{want} in {changed}");
    }
    assert!(!out.stdout.contains('\x1b'), "no colour off a terminal");
    let coloured = env.run_with(
        &["baseline", "pending", "--diff", "--color", "always"],
        &[("CI", "false")],
    );
    assert!(
        coloured.stdout.contains("\x1b[31m-call#1 weather"),
        "{}",
        coloured.stdout
    );

    // A new baseline: every fact an addition.
    std::fs::remove_dir_all(env.path("baselines/agent.tool.basic")).unwrap();
    reseal(
        &env,
        BASIC,
        &trace_body(&env, TIMEOUT).replace("agent.tool.timeout", "agent.tool.basic"),
    );
    let out = env.run_with(&["check", "traces/"], &[("CI", "false")]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let out = env.run_with(&["baseline", "pending", "--diff"], &[("CI", "false")]);
    let new = out.stdout.split("changed  ").next().unwrap();
    assert!(
        new.starts_with("new      agent.tool.basic/default"),
        "{}",
        out.stdout
    );
    assert!(
        new.contains("          + call#1 weather {\"city\":\"Bergen\"} failed"),
        "{new}"
    );
    assert!(new.contains("          + status "), "{new}");
}

/// Two drifted traces of one case without distinct trials cannot be compared: neither gets a
/// pending file, though each was written beside its `.new` while the run judged (staged); the
/// staged files go, and only the comparable case's `.new` is left.
#[test]
fn two_traces_of_one_case_leave_no_pending_or_staged_file() {
    let env = Env::new();
    copy_demo(&env, true);
    let before = files_under(&env.path("baselines"));
    edit_trace(&env, BASIC, "\"demo information\"", "\"other information\"");
    let second = "traces/agent.tool.basic/second.trace.ndjson.zst";
    std::fs::copy(env.path(BASIC), env.path(second)).unwrap();
    edit_trace(&env, TIMEOUT, "\"city\":\"Oslo\"", "\"city\":\"Bergen\"");

    let out = env.run_with(
        &["check", "traces/", "--format", "json"],
        &[("CI", "false")],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    let r = json(&out);
    for path in [BASIC, second] {
        let row = row(&r, path);
        assert_eq!(row["error"]["category"], "duplicate-trial", "{path}: {row}");
    }
    assert_eq!(r["summary"]["drifted"], 1, "{}", r["summary"]);
    let mut want = before.clone();
    want.push("agent.tool.timeout/default.baseline.json.new".to_owned());
    want.sort();
    assert_eq!(files_under(&env.path("baselines")), want);
}
