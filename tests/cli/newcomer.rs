//! What a new user stumbled on with trials on real recordings: hints that lead nowhere, the same
//! trace read twice after `pack`, a note printed once per case, and a chatty `ingest`.

use crate::settings::local;
use crate::trials::trial_trace;
use crate::util::*;

#[test]
fn the_next_hint_never_proposes_explaining_a_scenario_file() {
    let env = Env::new();
    // A High scenario without a trace blocks first (it sorts first).
    env.write(
        "traces/a.lonely/a.lonely.scenario.json",
        scenario("a.lonely", "High", "search"),
    );
    one_trace_suite(&env, "b.failing", "High", "fetch", "default");
    let out = env.run(&["check", "traces"]);
    assert_eq!(out.code, 1, "{out:?}");
    let next = out
        .stdout
        .lines()
        .find(|l| l.starts_with("next: "))
        .unwrap();
    assert!(!next.contains(".scenario.json"), "{next}");
    // A scenario with no trace needs a run of it, not `gates` (which finds nothing wrong).
    assert!(
        next.contains("scenario `a.lonely`, which has no trace") && next.contains("record"),
        "{next}"
    );
    assert!(!next.contains("gates"), "{next}");
}

#[test]
fn a_packed_trace_beside_its_source_is_named_as_such_and_rm_source_removes_it() {
    let env = Env::new();
    env.write("traces/s/s.scenario.json", scenario("s", "High", "search"));
    env.write(
        "traces/s/c.trace.ndjson",
        trace_text("s", "c", &[&call("c1", "search"), END]),
    );
    let out = local(&env, &["pack", "traces/s/c.trace.ndjson"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .contains("the unsealed source is still beside it"),
        "{}",
        out.stdout
    );
    let out = env.run(&["check", "traces"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stdout
            .contains("hold the same trace twice, sealed and not"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("--rm-source"), "{}", out.stdout);
    std::fs::remove_file(env.path("traces/s/c.trace.ndjson.zst")).unwrap();
    let out = local(&env, &["pack", "traces/s/c.trace.ndjson", "--rm-source"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!env.path("traces/s/c.trace.ndjson").exists());
    assert_eq!(env.run(&["check", "traces"]).code, 0);
}

#[test]
fn underpowered_cases_are_said_once_with_what_would_suffice() {
    let env = Env::new();
    for id in ["s1", "s2", "s3"] {
        env.write(
            &format!("traces/{id}/{id}.scenario.json"),
            format!(
                r#"{{"id":"{id}","title":"t","risk":"High","trials":{{"min":2}},"oracles":[{{"type":"tool-called","tool":"search"}}]}}"#
            ),
        );
        for t in 0..2 {
            env.write(
                &format!("traces/{id}/c/{t}.trace.ndjson.zst"),
                trial_trace(id, "c", &t.to_string(), "search"),
            );
        }
    }
    assert_eq!(local(&env, &["baseline", "approve", "traces"]).code, 0);
    let out = env.run(&["check", "traces"]);
    assert_eq!(out.code, 0, "{out:?}");
    let said: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.contains("underpowered:"))
        .collect();
    assert_eq!(said.len(), 1, "{}", out.stdout);
    assert!(
        said[0].starts_with("underpowered: 3 case(s)"),
        "{}",
        said[0]
    );
    assert!(
        said[0].contains("can show"),
        "what would suffice: {}",
        said[0]
    );
}

#[test]
fn ingest_quiet_prints_one_line_per_input() {
    let env = Env::new();
    let runs: Vec<String> = (0..20)
        .map(|i| format!(r#"{{"id":"run-{i}","messages":[{{"role":"user","content":"hi"}},{{"role":"assistant","content":"hello"}}]}}"#))
        .collect();
    env.write("runs.jsonl", runs.join("\n") + "\n");
    let args = ["ingest", "--unkeyed", "-o", "t", "runs.jsonl"];
    let loud = local(&env, &args);
    assert_eq!(loud.code, 0, "{loud:?}");
    assert!(loud.stdout.lines().count() > 20, "{}", loud.stdout);
    let env = Env::new();
    env.write("runs.jsonl", runs.join("\n") + "\n");
    let quiet = local(&env, &[&args[..], &["-q"]].concat());
    assert_eq!(quiet.code, 0, "{quiet:?}");
    assert_eq!(quiet.stdout.lines().count(), 1, "{}", quiet.stdout);
    assert!(
        quiet.stdout.contains("20 trace(s) written"),
        "{}",
        quiet.stdout
    );
}

/// Scenario `s` (8 trials, passing once is enough), approved at 8/8 and re-recorded at 0/8; the
/// pending set file `check` wrote.
fn pending_set(env: &Env) {
    env.write(
        "traces/s/s.scenario.json",
        r#"{"id":"s","title":"t","risk":"High","trials":{"min":8,"pass":{"at-least":1}},"oracles":[{"type":"tool-called","tool":"search"}]}"#,
    );
    let write = |tool: &str| {
        for t in 0..8 {
            env.write(
                &format!("traces/s/c/{t}.trace.ndjson.zst"),
                trial_trace("s", "c", &t.to_string(), tool),
            );
        }
    };
    write("search");
    assert_eq!(local(env, &["baseline", "approve", "traces"]).code, 0);
    write("fetch");
    assert_eq!(local(env, &["check", "traces"]).code, 1);
}

#[test]
fn a_pending_trial_set_shows_its_own_findings_first_and_its_trials_on_demand() {
    let env = Env::new();
    pending_set(&env);
    let out = local(&env, &["baseline", "pending", "--diff"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .contains("passed 8/8 approved trials, 0/8 current (p = 0.000078"),
        "the set's Fisher line: {}",
        out.stdout
    );
    assert!(
        !out.stdout.contains("trial 0:"),
        "no trial listed unasked: {}",
        out.stdout
    );
    assert!(out.stdout.lines().count() < 30, "{}", out.stdout);
    let all = local(&env, &["baseline", "pending", "--diff", "--trials"]);
    assert!(
        all.stdout.contains("trial 0:") && all.stdout.contains("trial 7:"),
        "{}",
        all.stdout
    );
    // On a terminal, `review` shows the findings, and the trials (with `i`) through the pager.
    let mut pty = crate::review::Pty::spawn(&env, &["baseline", "review"]);
    let at = pty.wait_for(0, "a accept · r reject · s skip · i details · q quit");
    let seen = pty.wait_for_any(0, &["p = 0.000078"]);
    assert!(!seen[..at.min(seen.len())].contains("trial 3:"), "{seen}");
    pty.key("i");
    pty.wait_for(at, "trial 3:");
    pty.key("q");
}
