//! Sequential recording on real recordings: how many trials a case needs before its verdict is
//! settled, per policy, against recording every trial — and that the verdicts are the same.
//!
//! The tau-bench airline recordings (50 tasks × 4 trials of one gpt-4o agent, in
//! `../shared/corpora/real/`, or `TRACEREPLAY_REAL_CORPUS`) are ingested and checked by the
//! binary; each task's trials, in their recorded order, are then recorded "one at a time" under
//! each sequential policy with `max` 4 (the real order), and with `max` 8 and 16 (trials drawn
//! with replacement from the task's four, seeded, 200 draws per task). For each policy it prints
//! the mean trials recorded per case, the share saved, and that every settled verdict is the
//! verdict of all `max` trials.
//!
//! The same for the tau2-bench telecom simulations recorded as 4 trials of each of 5 tasks
//! (`max` 4, recorded order).
//!
//! Then the group-sequential drift check (looks after 4, 8, 12 and 16 current trials against 16
//! approved, each case at α / 50 — the Benjamini–Hochberg bound over the 50 tasks — with
//! α = 0.05): over 20 seeds, approved and current sets drawn from each task's four trials (an
//! unchanged agent: A/A false alarms), and with a regression injected into the tasks that pass
//! at least 3 of 4 (each current trial's pass kept with probability 1/2): how often each is
//! caught, against the fixed test of all 16 trials, and how many trials the sequential check
//! recorded.
//!
//! `cargo bench --bench sequential`. CI only compiles it (clippy `--all-targets`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;
use tracereplay_core::trials::TrialId;
use tracereplay_core::trials::policy::{PassRule, TrialsPolicy};
use tracereplay_core::trials::sequential::{Step, next_step};

/// Draws per task for the resampled `max`.
const DRAWS: usize = 200;

fn main() {
    let corpus = std::env::var_os("TRACEREPLAY_REAL_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpora/real")
        });
    let input = corpus.join("tau-bench/historical_trajectories/gpt-4o-airline.json");
    assert!(
        input.exists(),
        "{} is absent: set TRACEREPLAY_REAL_CORPUS to the real corpora",
        input.display()
    );
    let outcomes = trial_outcomes(&input);
    let (cases, trials): (usize, usize) = (outcomes.len(), outcomes.values().map(Vec::len).sum());
    let passes: usize = outcomes.values().flatten().filter(|p| **p).count();
    println!(
        "tau-bench airline, gpt-4o: {cases} tasks, {trials} trials, {passes} passing ({:.1} %)\n",
        100.0 * passes as f64 / trials as f64
    );
    let mut rng = Rng(0x7365_7175_656e_7469);
    sequential_table(&outcomes, &[4, 8, 16], &mut rng);
    drift(&outcomes, &mut rng);
    // tau2-bench: the telecom simulations recorded as 4 trials of each of 5 tasks.
    let tau2 = corpus.join(
        "tau2-bench/feature-gym-5ff9a6cd/gpt-4.1-2025-04-14_telecom_no-user_gpt-4.1-2025-04-14_4trials_5tasks.json",
    );
    let outcomes = trial_outcomes(&tau2);
    let passes: usize = outcomes.values().flatten().filter(|p| **p).count();
    let trials: usize = outcomes.values().map(Vec::len).sum();
    println!(
        "\ntau2-bench telecom, gpt-4.1: {} tasks, {trials} trials, {passes} passing\n",
        outcomes.len()
    );
    sequential_table(&outcomes, &[4], &mut rng);
}

/// Each policy's mean trials recorded per case when recorded until settled: `max` 4 in the
/// recorded order, larger `max` drawn with replacement from each case's trials.
fn sequential_table(outcomes: &BTreeMap<String, Vec<bool>>, maxes: &[u64], rng: &mut Rng) {
    println!("| policy | max | trials per case, sequential | saved | verdicts as all max trials |");
    println!("|---|---|---|---|---|");
    for &max in maxes {
        for (name, pass) in policies(max) {
            let policy = TrialsPolicy {
                min: 1,
                pass,
                sequential: Some(max),
                drift: None,
            };
            let (mut recorded, mut runs, mut agree) = (0u64, 0u64, 0u64);
            for recorded_trials in outcomes.values() {
                let draws = match max {
                    4 => vec![recorded_trials.clone()],
                    _ => (0..DRAWS)
                        .map(|_| {
                            (0..max)
                                .map(|_| recorded_trials[rng.below(recorded_trials.len())])
                                .collect()
                        })
                        .collect(),
                };
                for seq in draws {
                    let (n, same) = settle(&policy, &seq);
                    recorded += n;
                    runs += 1;
                    agree += u64::from(same);
                }
            }
            let mean = recorded as f64 / runs as f64;
            println!(
                "| {name} | {max} | {mean:.2} | {:.0} % | {agree} of {runs} |",
                100.0 * (1.0 - mean / max as f64)
            );
            assert_eq!(
                agree, runs,
                "a settled verdict differs from all {max} trials'"
            );
        }
    }
}

/// The group-sequential drift check against the fixed one, A/A and with an injected regression.
fn drift(outcomes: &BTreeMap<String, Vec<bool>>, rng: &mut Rng) {
    use tracereplay_core::trials::group::{Design, Spending};
    use tracereplay_core::trials::plan::fisher_regression;
    const SEEDS: usize = 20;
    let level = 0.05 / outcomes.len() as f64;
    let looks = vec![4u64, 8, 12, 16];
    println!(
        "\nGroup-sequential drift, looks 4, 8, 12, 16 against 16 approved, each case at α/{} = {level:.4}:\n",
        outcomes.len()
    );
    println!(
        "| spending | A/A false alarms (of 50 × {SEEDS}) | regressions caught, sequential | fixed test of 16 | current trials, sequential (regressed) |"
    );
    println!("|---|---|---|---|---|");
    for spending in [Spending::OBrienFleming, Spending::Pocock] {
        let d = Design::new(16, looks.clone(), level, spending).unwrap();
        let nominal = d.boundaries();
        let one = Design::new(16, vec![16], level, spending).unwrap();
        let fixed_level = one.boundaries()[0];
        let (mut alarms, mut caught, mut fixed_caught) = (0, 0, 0);
        let (mut regressed, mut recorded) = (0, 0u64);
        for _ in 0..SEEDS {
            for trials in outcomes.values() {
                // `n` trials drawn from the task's, each pass kept with probability `keep`.
                let mut draw = |n: u64, keep: bool| -> Vec<bool> {
                    (0..n)
                        .map(|_| trials[rng.below(trials.len())] && (!keep || rng.below(2) == 0))
                        .collect()
                };
                let approved = draw(16, false);
                let a = approved.iter().filter(|p| **p).count() as u64;
                // Stops at the first look that shows a regression: the trials it recorded.
                let sequential = |current: &[bool]| -> (bool, u64) {
                    for (k, &n) in looks.iter().enumerate() {
                        let c = current[..n as usize].iter().filter(|p| **p).count() as u64;
                        if fisher_regression(a, 16, c, n) <= nominal[k] * (1.0 + 1e-7) {
                            return (true, n);
                        }
                    }
                    (false, 16)
                };
                let same = draw(16, false);
                alarms += usize::from(sequential(&same).0);
                let passes = trials.iter().filter(|p| **p).count();
                if passes * 4 >= 3 * trials.len() {
                    let worse = draw(16, true);
                    let (stopped, n) = sequential(&worse);
                    let c = worse.iter().filter(|p| **p).count() as u64;
                    regressed += 1;
                    caught += usize::from(stopped);
                    let p = fisher_regression(a, 16, c, 16);
                    fixed_caught += usize::from(p <= fixed_level * (1.0 + 1e-7));
                    recorded += n;
                }
            }
        }
        println!(
            "| {} | {alarms} ({:.1} %) | {caught} of {regressed} ({:.1} %) | {fixed_caught} ({:.1} %) | {:.2} |",
            spending.name(),
            100.0 * alarms as f64 / (SEEDS * outcomes.len()) as f64,
            100.0 * caught as f64 / regressed as f64,
            100.0 * fixed_caught as f64 / regressed as f64,
            recorded as f64 / regressed as f64
        );
    }
}

/// The pass rules measured at `max` trials.
fn policies(max: u64) -> Vec<(String, PassRule)> {
    let mut out = vec![("`all`".to_owned(), PassRule::All)];
    for k in [max / 2, (3 * max).div_ceil(4)] {
        out.push((format!("`at-least` {k}"), PassRule::AtLeast(k)));
    }
    out.push((
        "`rate` 0.5, confidence 0.8".to_owned(),
        PassRule::Rate {
            rate: 0.5,
            confidence: 0.8,
        },
    ));
    out
}

/// Records `outcomes` one at a time under `policy` until `trials next` would say settled;
/// returns the trials recorded and whether the settled verdict is that of all of them.
fn settle(policy: &TrialsPolicy, outcomes: &[bool]) -> (u64, bool) {
    let max = outcomes.len() as u64;
    let fixed = TrialsPolicy {
        min: max,
        pass: policy.pass,
        sequential: None,
        drift: None,
    };
    let all = outcomes.iter().filter(|p| **p).count() as u64;
    let full = fixed.verdict(all, max) == tracereplay_core::trials::policy::PolicyVerdict::Pass;
    let mut ids = Vec::new();
    let mut passed = 0;
    for n in 0..=max {
        if let Step::Settled { passed: verdict } = next_step(policy, passed, n, &ids) {
            return (n, verdict == full);
        }
        let i = n as usize;
        passed += u64::from(outcomes[i]);
        ids.push(TrialId::parse(&(i + 1).to_string()).unwrap());
    }
    unreachable!("a sequential case settles by max")
}

/// Each task's trial verdicts in trial order, as `check` judges the ingested recordings
/// against their emitted scenarios.
fn trial_outcomes(input: &std::path::Path) -> BTreeMap<String, Vec<bool>> {
    let bin = env!("CARGO_BIN_EXE_tracereplay");
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(bin)
            .args(args)
            .current_dir(dir.path())
            .env("CI", "true")
            .output()
            .unwrap();
        assert!(
            out.status.code().unwrap_or(2) <= 1,
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let input = input.to_str().unwrap();
    run(&["ingest", "--unkeyed", "-o", "t", "--emit-scenarios", input]);
    let report: Value = serde_json::from_slice(&run(&[
        "check",
        "t",
        "--format",
        "json",
        "--fail-on",
        "none",
        "--no-cache",
    ]))
    .unwrap();
    let mut by_case: BTreeMap<String, Vec<(u64, bool)>> = BTreeMap::new();
    for row in report["results"].as_array().unwrap() {
        let case = format!(
            "{}/{}",
            row["scenario"].as_str().unwrap(),
            row["case"].as_str().unwrap()
        );
        let trial: u64 = row["trial"]
            .as_str()
            .and_then(|t| t.parse().ok())
            .unwrap_or(0);
        by_case
            .entry(case)
            .or_default()
            .push((trial, row["verdict"] == "pass"));
    }
    (by_case.into_iter())
        .map(|(case, mut trials)| {
            trials.sort();
            (case, trials.into_iter().map(|(_, p)| p).collect())
        })
        .collect()
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % n
    }
}
