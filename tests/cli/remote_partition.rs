//! A partitioned run over a bucket reads only the objects its share's scenarios claim by their
//! keys, and a trace whose key places it under another scenario than it names is an error row
//! (against moto on loopback, as `remote.rs`).

use std::collections::BTreeSet;

use crate::s3::S3;
use crate::util::*;

/// A demo checkout in `env` and a bucket `suite` holding its traces and `extra`.
fn demo_in_s3(env: &Env, extra: &[(&str, Vec<u8>)]) -> S3 {
    copy_demo(env, false);
    let uploaded = env.path("uploaded");
    std::fs::rename(env.path("traces"), &uploaded).unwrap();
    for (rel, bytes) in extra {
        env.write(&format!("uploaded/{rel}"), bytes);
    }
    copy_demo(env, true);
    for f in files_under(&env.path("traces")) {
        if f.contains(".trace.") {
            std::fs::remove_file(env.path("traces").join(f)).unwrap();
        }
    }
    S3::start(
        &[format!("suite={}", uploaded.display())],
        &env.path("s3.log"),
    )
}

/// The trace keys of `suite` read since `from` reads, as a set (each read once at most).
fn traces_read(s3: &S3, from: usize) -> Vec<String> {
    let keys: Vec<String> = (s3.keys_read("suite").into_iter().skip(from))
        .filter(|k| k.contains(".trace."))
        .collect();
    let unique: BTreeSet<&String> = keys.iter().collect();
    assert_eq!(
        unique.len(),
        keys.len(),
        "an object was read twice: {keys:?}"
    );
    keys
}

/// Checks each of `n` shares of `s3://suite` (no cache), writing `shares/shareK.json`; the
/// trace keys each share read.
fn run_shares(env: &Env, s3: &S3, n: u64) -> Vec<Vec<String>> {
    std::fs::create_dir_all(env.path("shares")).unwrap();
    (1..=n)
        .map(|k| {
            let before = s3.keys_read("suite").len();
            let (share, out) = (format!("hash:{k}/{n}"), format!("shares/share{k}.json"));
            let args = ["check", "s3://suite", "--no-cache", "--partition", &share];
            let run = s3.run(env, &[&args[..], &["--json", &out]].concat());
            assert!(run.code <= 1, "share {k}: {}", run.stderr);
            traces_read(s3, before)
        })
        .collect()
}

/// `merge` of the three shares `run_shares` wrote, into `merged.json`.
fn merge_three(env: &Env) -> Output {
    let shares = [
        "shares/share1.json",
        "shares/share2.json",
        "shares/share3.json",
    ];
    env.run(&[&["merge"][..], &shares, &["--json", "merged.json"]].concat())
}

fn report(env: &Env, file: &str) -> serde_json::Value {
    serde_json::from_slice(&env.read(file)).unwrap()
}

fn scenarios_of(report: &serde_json::Value) -> BTreeSet<String> {
    (report["results"].as_array().unwrap().iter())
        .filter_map(|r| r["scenario"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_share_reads_only_the_objects_its_scenarios_claim() {
    let env = Env::with_remote();
    let s3 = demo_in_s3(&env, &[]);
    let whole = s3.run(
        &env,
        &["check", "s3://suite", "--no-cache", "--json", "whole.json"],
    );
    let all: BTreeSet<String> = traces_read(&s3, 0).into_iter().collect();
    assert!(all.len() >= 10, "{all:?}\n{}", whole.stderr);
    let shares = run_shares(&env, &s3, 3);
    // Every object is read by exactly one share, and by the share that judges its scenario.
    let mut union = BTreeSet::new();
    for (k, keys) in shares.iter().enumerate() {
        assert!(
            keys.len() < all.len(),
            "share {} read everything: {keys:?}",
            k + 1
        );
        let scenarios = scenarios_of(&report(&env, &format!("shares/share{}.json", k + 1)));
        for key in keys {
            let dir = key.split('/').next().unwrap();
            assert!(
                scenarios.contains(dir),
                "share {} read {key}: {scenarios:?}",
                k + 1
            );
            assert!(union.insert(key.clone()), "{key} was read by two shares");
        }
    }
    assert_eq!(union, all);
    let merged = merge_three(&env);
    assert_eq!(merged.code, whole.code, "{}", merged.stderr);
    let (merged, whole) = (report(&env, "merged.json"), report(&env, "whole.json"));
    assert_eq!(merged["results"], whole["results"]);
    assert_eq!(merged["summary"], whole["summary"]);
}

#[test]
fn a_misplaced_or_unreadable_object_belongs_to_the_scenario_its_key_names() {
    let env = Env::with_remote();
    // A run of one scenario filed under another's directory, and garbage under a third's.
    let stray = trace_text(
        "agent.tool.basic",
        "stray",
        &[&call("c1", "web_search"), END],
    );
    let extra = [
        (
            "agent.cost.budget/stray.trace.ndjson.zst",
            sealed_zst(&stray),
        ),
        (
            "agent.approval.denied/broken.trace.ndjson.zst",
            b"not zstd".to_vec(),
        ),
    ];
    let s3 = demo_in_s3(&env, &extra);
    let whole = s3.run(
        &env,
        &["check", "s3://suite", "--no-cache", "--json", "whole.json"],
    );
    assert_eq!(whole.code, 1, "{}", whole.stderr);
    let full = report(&env, "whole.json");
    let misplaced = row(&full, "agent.cost.budget/stray.trace.ndjson.zst");
    assert_eq!(misplaced["error"]["category"], "misplaced", "{misplaced:#}");
    assert_eq!(misplaced["scenario"], "agent.cost.budget");
    assert_eq!(misplaced["case"], "stray");
    let message = misplaced["error"]["message"].as_str().unwrap();
    assert!(message.contains("agent.tool.basic"), "{message}");
    assert!(
        message.contains("s3://suite/agent.cost.budget/stray"),
        "{message}"
    );
    let broken = row(&full, "agent.approval.denied/broken.trace.ndjson.zst");
    assert_eq!(broken["scenario"], "agent.approval.denied", "{broken:#}");
    assert_eq!(broken["case"], "broken");
    assert!(broken["error"]["category"].is_string(), "{broken:#}");
    // In shares: each row in the share of its key's scenario only, and the merge is the whole.
    let shares = run_shares(&env, &s3, 3);
    for (key, scenario) in [
        (
            "agent.cost.budget/stray.trace.ndjson.zst",
            "agent.cost.budget",
        ),
        (
            "agent.approval.denied/broken.trace.ndjson.zst",
            "agent.approval.denied",
        ),
    ] {
        let holders: Vec<usize> = (1..=3)
            .filter(|k| {
                let share = report(&env, &format!("shares/share{k}.json"));
                (share["results"].as_array().unwrap().iter())
                    .any(|r| r["path"].as_str().is_some_and(|p| p.ends_with(key)))
            })
            .collect();
        assert_eq!(holders.len(), 1, "{key} is in shares {holders:?}");
        let reader: Vec<usize> = (shares.iter().enumerate())
            .filter(|(_, keys)| keys.iter().any(|k| k == key))
            .map(|(k, _)| k + 1)
            .collect();
        assert_eq!(
            reader, holders,
            "{key} was read by another share than holds it"
        );
        let share = report(&env, &format!("shares/share{}.json", holders[0]));
        assert!(scenarios_of(&share).contains(scenario));
    }
    let merged = merge_three(&env);
    assert_eq!(merged.code, whole.code, "{}", merged.stderr);
    assert_eq!(report(&env, "merged.json")["results"], full["results"]);
}
