//! The run record: a re-check of an unchanged suite gives the last run's output and exit code,
//! byte for byte, without reading the result cache; a change to anything the run reads (a
//! trace, a scenario, a baseline, a flag) is judged as usual, and so is a run whose output is
//! more than what it prints.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::util::*;

const RECORD: &str = ".tracereplay/cache/run-v1.bin";

/// Scenarios `a` (its second trace calls the wrong tool: a failure) and `b`, approved, then left
/// to settle: a run is recorded only when no file it read changed in the second before it.
fn suite(env: &Env) {
    for id in ["a", "b"] {
        env.write(
            &format!("traces/{id}/{id}.scenario.json"),
            scenario(id, "High", "search"),
        );
        for t in 1..=2 {
            let tool = if (id, t) == ("a", 2) {
                "fetch"
            } else {
                "search"
            };
            let c = call("c1", tool);
            env.write(
                &format!("traces/{id}/t{t}.trace.ndjson.zst"),
                sealed_zst(&trace_text(id, &format!("t{t}"), &[&c, END])),
            );
        }
    }
    let approved = env.run_with(&["baseline", "approve"], &[]);
    assert_eq!(approved.code, 0, "{}", approved.stderr);
    settle();
}

fn settle() {
    std::thread::sleep(Duration::from_millis(1100));
}

fn record(env: &Env) -> PathBuf {
    env.path(RECORD)
}

fn made(env: &Env) -> Option<SystemTime> {
    std::fs::metadata(record(env)).ok()?.modified().ok()
}

/// `check ARGS` under CI.
fn check(env: &Env, args: &[&str]) -> Output {
    let mut all = vec!["check"];
    all.extend(args);
    let out = env.run_with(&all, &[("CI", "true")]);
    assert!(out.code == 0 || out.code == 1, "{}", out.stderr);
    out
}

fn same(a: &Output, b: &Output) {
    assert_eq!(
        (a.code, &a.stdout, &a.stderr),
        (b.code, &b.stdout, &b.stderr)
    );
}

#[test]
fn an_unchanged_suite_is_given_its_last_output_byte_for_byte() {
    let env = Env::new();
    suite(&env);
    // Judged: no record (not every row came from the cache).
    let judged = check(&env, &[]);
    assert_eq!(judged.code, 1, "{}", judged.stdout);
    assert!(made(&env).is_none());
    // Every row from the cache: recorded.
    let recalled = check(&env, &[]);
    same(&recalled, &judged);
    let at = made(&env).expect("a run that recalled every row is recorded");
    // The same run again is given the record; a given record is not written again.
    for _ in 0..2 {
        same(&check(&env, &[]), &judged);
        assert_eq!(made(&env), Some(at));
    }
    // Another invocation (JSON) is judged and recorded in its stead, then given it.
    let json_judged = check(&env, &["--format", "json"]);
    assert_eq!(json(&json_judged)["summary"]["failed"], 1);
    let json_recorded = made(&env);
    assert_ne!(json_recorded, Some(at));
    same(&check(&env, &["--format", "json"]), &json_judged);
    assert_eq!(made(&env), json_recorded);
    // And the human run, judged again from the cache, gives what it gave.
    same(&check(&env, &[]), &judged);
}

/// Approves the suite as it is (so no row drifts: a drifting row is never cached), lets it
/// settle, and runs `check ARGS` until it is recorded; returns the recorded run.
fn recorded(env: &Env, args: &[&str]) -> Output {
    let approved = env.run_with(&["baseline", "approve"], &[]);
    assert_eq!(approved.code, 0, "{}", approved.stderr);
    settle();
    let _ = std::fs::remove_file(record(env));
    check(env, args);
    let out = check(env, args);
    assert!(made(env).is_some(), "not recorded: {}", out.stderr);
    out
}

#[test]
fn a_change_to_what_the_run_reads_is_judged_again() {
    let env = Env::new();
    suite(&env);
    let as_json = &["--format", "json"][..];
    let verdict =
        |r: &serde_json::Value, t: &str| row(r, t)["verdict"].as_str().unwrap().to_owned();
    let before = json(&recorded(&env, as_json));
    assert_eq!(verdict(&before, "a/t2.trace.ndjson.zst"), "fail");

    // A trace rewritten: `a/t2` now calls `search` and passes.
    let c = call("c1", "search");
    env.write(
        "traces/a/t2.trace.ndjson.zst",
        sealed_zst(&trace_text("a", "t2", &[&c, END])),
    );
    let fixed = json(&check(&env, as_json));
    assert_eq!(verdict(&fixed, "a/t2.trace.ndjson.zst"), "pass");

    // A scenario edited: `b` now expects `fetch`, so its traces fail.
    recorded(&env, as_json);
    env.write("traces/b/b.scenario.json", scenario("b", "High", "fetch"));
    let edited = json(&check(&env, as_json));
    assert_eq!(verdict(&edited, "b/t1.trace.ndjson.zst"), "fail");

    // A trace added, then one removed.
    recorded(&env, as_json);
    env.write(
        "traces/a/t3.trace.ndjson.zst",
        sealed_zst(&trace_text("a", "t3", &[&c, END])),
    );
    let added = json(&check(&env, as_json));
    assert_eq!(added["summary"]["traces"], 5, "{added:#}");
    recorded(&env, as_json);
    std::fs::remove_file(env.path("traces/a/t1.trace.ndjson.zst")).unwrap();
    let removed = json(&check(&env, as_json));
    assert_eq!(removed["summary"]["traces"], 4, "{removed:#}");

    // An approved baseline removed: its case is new. (`a/t1`'s, obsolete now, goes first.)
    std::fs::remove_file(env.path("baselines/a/t1.baseline.json")).unwrap();
    let approved = json(&recorded(&env, as_json));
    std::fs::remove_file(env.path("baselines/b/t1.baseline.json")).unwrap();
    let unapproved = json(&check(&env, as_json));
    let new = |r: &serde_json::Value| r["summary"]["new"].as_u64().unwrap();
    assert_eq!(new(&unapproved), new(&approved) + 1, "{unapproved:#}");

    // A flag: `--fail-on none` exits 0 where the recorded run exited 1 (`b` fails).
    assert_eq!(recorded(&env, &[]).code, 1);
    let lenient = check(&env, &["--fail-on", "none"]);
    assert_eq!(lenient.code, 0, "{}\n{}", lenient.stdout, lenient.stderr);
}

#[test]
fn a_damaged_record_is_judged_as_usual_and_made_again() {
    let env = Env::new();
    suite(&env);
    check(&env, &[]);
    let good = check(&env, &[]);
    let bytes = std::fs::read(record(&env)).unwrap();
    let mut forged = bytes.clone();
    // The recorded exit code and output, changed without the key.
    let at = forged.len() - 40;
    forged[at] ^= 0x20;
    std::fs::write(record(&env), &forged).unwrap();
    same(&check(&env, &[]), &good);
    assert_eq!(std::fs::read(record(&env)).unwrap(), bytes, "made again");
    std::fs::write(record(&env), b"").unwrap();
    same(&check(&env, &[]), &good);
    assert_eq!(std::fs::read(record(&env)).unwrap(), bytes);
}

#[test]
fn a_run_that_writes_more_than_its_output_keeps_no_record() {
    let env = Env::new();
    suite(&env);
    for args in [
        &["--format", "html"][..],
        &["--format", "otlp"],
        &["--format", "github"],
        &["--junit", "junit.xml"],
        &["--partition", "hash:1/1"],
        &["--timings"],
        &["--no-cache"],
    ] {
        for _ in 0..3 {
            check(&env, args);
        }
        assert!(made(&env).is_none(), "{args:?} was recorded");
    }
}

/// A Harness Contract is no file discovery finds, but its scenario reads it: the record keeps
/// which contracts the run read and stamps them too.
#[test]
fn a_harness_contract_edited_is_judged_again() {
    let env = Env::new();
    copy_demo(&env, true);
    settle();
    check(&env, &[]);
    let recorded = check(&env, &[]);
    assert!(
        made(&env).is_some(),
        "the demo is recorded: {}",
        recorded.stderr
    );
    same(&check(&env, &[]), &recorded);
    let contract = "traces/agent.contract.release-notes/release-notes.contract.json";
    env.write(contract, "{");
    let broken = check(&env, &[]);
    assert_ne!(broken.stdout, recorded.stdout);
    assert!(broken.stdout.contains("contract"), "{}", broken.stdout);
    assert_eq!(
        broken.stdout,
        check(&env, &["--no-cache"]).stdout,
        "judged as without a cache"
    );
}
