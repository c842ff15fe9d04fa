use std::collections::BTreeMap;

use super::*;
use crate::report::RowVerdict;
use crate::report::cases::{CaseRow, Family, Thresholds, decide};

/// The record of a design of `looks` and `spending` with `approved` and `current` as (passed,
/// trials), the passing trials first.
fn record(
    looks: &[u64],
    spending: Spending,
    approved: (usize, usize),
    current: (usize, usize),
) -> GroupDrift {
    let design = DriftLooks {
        looks: looks.to_vec(),
        spending,
    };
    let verdicts =
        |(passed, n): (usize, usize)| -> Vec<bool> { (0..n).map(|i| i < passed).collect() };
    GroupDrift::record(&design, &verdicts(approved), &verdicts(current))
}

fn case(name: &str) -> CaseRow {
    CaseRow {
        scenario: "s".to_owned(),
        case: name.to_owned(),
        risk: None,
        trials: 4,
        passed: 4,
        verdict: RowVerdict::Pass,
        reason: None,
        policy: true,
        known_gap: false,
        blocking: false,
        flaky: false,
        flaky_oracles: Vec::new(),
        pass_rate: None,
        wilson: None,
        pass_hat_k: None,
        pass_at_k: None,
        underpowered: false,
        underpowered_detail: None,
        family_p: BTreeMap::new(),
        drift: Vec::new(),
        tests: Vec::new(),
        baseline: None,
        usage_against_approved: None,
        sequential: None,
        group_drift: None,
    }
}

fn grouped(name: &str, group: GroupDrift) -> CaseRow {
    let mut c = case(name);
    c.group_drift = Some(group);
    c
}

fn thresholds(alpha: f64) -> Thresholds {
    Thresholds {
        alpha,
        mode: "default".to_owned(),
        families: BTreeMap::new(),
        group_alpha: None,
    }
}

#[test]
fn a_record_counts_the_first_trials_of_each_look_reached() {
    // Fails come last among the current trials: the first 4 all pass, 2 of the first 8 fail.
    let g = record(&[4, 8, 12], Spending::Pocock, (8, 8), (6, 9));
    assert_eq!(g.approved, Side::Counts { n: 8, passed: 8 });
    assert_eq!(
        g.current,
        vec![
            Side::Counts { n: 4, passed: 4 },
            Side::Counts { n: 8, passed: 6 }
        ]
    );
    assert_eq!(g.p[0], 1.0);
    assert_eq!(g.p[1], stats::fisher_lower(8, 8, 6, 8));
    assert_eq!(g.spending, "pocock");
}

#[test]
fn pocock_stops_at_the_first_look_where_obrien_fleming_waits() {
    // 8/8 approved, the first 4 current trials fail: p = 1/C(12, 4) = 0.00202. Pocock spends
    // 0.0179 of α = 0.05 at the first of four looks (boundary 0.0303), O'Brien–Fleming 0.00009,
    // which no p-value of 8 and 4 trials fits (boundary 0).
    let run = |spending| {
        let g = record(&[4, 8, 12, 16], spending, (8, 8), (0, 4));
        let mut cases = vec![grouped("a", g)];
        let mut t = thresholds(0.05);
        decide(&mut cases, &mut t);
        assert_eq!(t.group_alpha, Some(0.05));
        cases.remove(0)
    };
    let pocock = run(Spending::Pocock);
    let g = pocock.group_drift.as_ref().unwrap();
    assert_eq!(g.regression_at, Some(1));
    assert!(g.settled);
    assert_eq!(pocock.drift.len(), 1);
    let f = &pocock.drift[0];
    assert_eq!(f.category, DriftCategory::Regression);
    assert!(f.fails);
    assert!((f.p.unwrap() - 1.0 / 495.0).abs() < 1e-12);
    assert!(
        f.detail.contains("look 1 of 4 (4 current trials)"),
        "{}",
        f.detail
    );
    // The boundary is the design's own at α/m.
    let design = Design::new(8, vec![4, 8, 12, 16], 0.05, Spending::Pocock).unwrap();
    assert_eq!(g.levels, design.boundaries()[..1].to_vec());

    let obf = run(Spending::OBrienFleming);
    let g = obf.group_drift.as_ref().unwrap();
    assert_eq!(g.regression_at, None);
    assert_eq!(g.levels, vec![0.0]);
    assert!(!g.settled);
    assert_eq!(obf.drift.len(), 1);
    assert_eq!(obf.drift[0].category, DriftCategory::DriftUndecided);
    assert!(
        obf.drift[0].fails,
        "an undecided test must not pass the run"
    );
    assert!(
        obf.drift[0].detail.contains("record 8 current trials"),
        "{}",
        obf.drift[0].detail
    );
}

#[test]
fn the_last_look_without_a_regression_settles_the_case_clear() {
    let g = record(&[4, 8], Spending::OBrienFleming, (7, 8), (6, 8));
    let mut cases = vec![grouped("a", g)];
    decide(&mut cases, &mut thresholds(0.05));
    let g = cases[0].group_drift.as_ref().unwrap();
    assert!(g.settled);
    assert_eq!(g.regression_at, None);
    assert!(cases[0].drift.is_empty(), "{:?}", cases[0].drift);
}

#[test]
fn before_the_first_look_the_case_is_undecided() {
    let g = record(&[4, 8], Spending::OBrienFleming, (8, 8), (3, 3));
    assert!(g.p.is_empty());
    let mut cases = vec![grouped("a", g)];
    decide(&mut cases, &mut thresholds(0.05));
    assert_eq!(cases[0].drift.len(), 1);
    let f = &cases[0].drift[0];
    assert_eq!(f.category, DriftCategory::DriftUndecided);
    assert!(f.detail.contains("record 4 before"), "{}", f.detail);
}

#[test]
fn family_one_is_split_between_the_designs_and_benjamini_hochberg() {
    // One group-sequential case and three fixed ones: m = 4. The designs run at α/4; the fixed
    // cases' Benjamini–Hochberg at α·3/4 = 0.0375, whose threshold over [0.001, 0.02, 0.5] is
    // 0.0375·2/3 = 0.025 (at α it would have been 0.0333).
    let g = record(&[4, 8], Spending::Pocock, (8, 8), (8, 8));
    let mut cases = vec![grouped("g", g)];
    for (name, p) in [("x", 0.001), ("y", 0.02), ("z", 0.5)] {
        let mut c = case(name);
        c.family_p.insert(Family::Verdict, p);
        cases.push(c);
    }
    // A case with only a family-2 test is not among family 1's m.
    let mut other = case("w");
    other.family_p.insert(Family::Blocking, 0.01);
    cases.push(other);
    let mut t = thresholds(0.05);
    decide(&mut cases, &mut t);
    assert_eq!(t.group_alpha, Some(0.0125));
    let verdict = t.families[&Family::Verdict].unwrap();
    assert!((verdict - 0.025).abs() < 1e-12, "{verdict}");
    assert_eq!(cases[0].group_drift.as_ref().unwrap().alpha, 0.0125);
    // Without a group-sequential case, family 1 is as before.
    let mut plain: Vec<CaseRow> = cases[1..].to_vec();
    let mut t = thresholds(0.05);
    decide(&mut plain, &mut t);
    assert_eq!(t.group_alpha, None);
    assert!((t.families[&Family::Verdict].unwrap() - 0.05 * 2.0 / 3.0).abs() < 1e-12);
}

#[test]
fn deciding_again_gives_the_same_findings() {
    let mut cases = vec![
        grouped(
            "a",
            record(&[4, 8, 12, 16], Spending::Pocock, (16, 16), (1, 8)),
        ),
        grouped(
            "b",
            record(&[4, 8, 12, 16], Spending::OBrienFleming, (16, 16), (4, 4)),
        ),
    ];
    let mut t = thresholds(0.05);
    decide(&mut cases, &mut t);
    let once = (cases.clone(), t.clone());
    decide(&mut cases, &mut t);
    assert_eq!((cases, t), once);
}

#[test]
fn an_approved_set_beyond_the_largest_design_is_undecided_with_why() {
    let g = record(&[4, 8], Spending::Pocock, (70, 70), (0, 4));
    let mut cases = vec![grouped("a", g)];
    decide(&mut cases, &mut thresholds(0.05));
    assert_eq!(cases[0].drift[0].category, DriftCategory::DriftUndecided);
    assert!(
        cases[0].drift[0].detail.contains("approve at most 64"),
        "{}",
        cases[0].drift[0].detail
    );
}
