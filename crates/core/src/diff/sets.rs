//! `diff --from OLD --to NEW` for cases recorded as several trials: the set tests of
//! [`crate::diff::trial_drift`] between the two recordings, the run's thresholds over every case
//! compared as a set, and the suite-level summary a team reads after switching model or
//! runtime (the mean pass rate on each side, the change, and the cases by effect size).

use std::collections::BTreeMap;

use serde::Serialize;

use super::{DriftFinding, DriftMode};
use crate::baseline::Behaviour;
use crate::diff::trial_drift::{
    self as drift, CaseFinding, Family, SetComparison, Side, TrialFacts,
};

/// One case compared as a set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SetEntry {
    /// Scenario id.
    pub scenario: String,
    /// Case.
    pub case: String,
    /// Trials and passing trials in the old recording.
    pub old: Side,
    /// Trials and passing trials in the new recording.
    pub new: Side,
    /// c/n_new − a/n_old.
    pub delta: f64,
    /// The case's family p-values.
    pub family_p: BTreeMap<Family, f64>,
    /// The reported findings.
    pub findings: Vec<CaseFinding>,
    /// Why the verdict test cannot reach α, when it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub underpowered: Option<String>,
}

/// The suite-level view of the cases compared as sets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SetSummary {
    /// Cases compared as sets.
    pub cases: usize,
    /// The mean pass rate over them in the old recording.
    pub mean_pass_rate_old: f64,
    /// In the new recording.
    pub mean_pass_rate_new: f64,
    /// new − old.
    pub change: f64,
    /// `--alpha`.
    pub alpha: f64,
    /// Each family's Benjamini–Hochberg threshold.
    pub thresholds: BTreeMap<Family, Option<f64>>,
    /// Cases with a reported finding.
    pub drifted: usize,
    /// Cases whose verdict test is underpowered.
    pub underpowered: usize,
    /// Every case compared as a set, by Δ ascending (ties by scenario, case).
    pub cases_by_effect: Vec<SetEntry>,
}

/// The trials of one case on each side.
pub struct SetInput {
    /// Scenario id.
    pub scenario: String,
    /// Case.
    pub case: String,
    /// Old trials' behaviours.
    pub old: Vec<Behaviour>,
    /// New trials' behaviours.
    pub new: Vec<Behaviour>,
}

/// Compares every case as a set and summarises the suite.
pub fn compare_sets(
    inputs: Vec<SetInput>,
    tolerance: f64,
    mode: DriftMode,
    alpha: f64,
) -> SetSummary {
    let strict = mode == DriftMode::Strict;
    let compared: Vec<(SetInput, Vec<TrialFacts>, Vec<TrialFacts>, SetComparison)> = inputs
        .into_iter()
        .map(|i| {
            let a: Vec<TrialFacts> = i.old.iter().map(TrialFacts::of).collect();
            let c: Vec<TrialFacts> = i.new.iter().map(TrialFacts::of).collect();
            let cmp = drift::compare_sets(&a, &c, tolerance, strict);
            (i, a, c, cmp)
        })
        .collect();
    let family_ps: Vec<BTreeMap<Family, f64>> = (compared.iter())
        .map(|(_, _, _, c)| {
            (Family::ALL.iter())
                .filter_map(|&f| c.family_p(f).map(|p| (f, p)))
                .collect()
        })
        .collect();
    let thresholds = drift::thresholds(family_ps.iter(), alpha);
    let mut entries: Vec<SetEntry> = Vec::new();
    for ((input, a, c, cmp), family_p) in compared.into_iter().zip(family_ps) {
        let passed = |s: &[TrialFacts]| s.iter().filter(|t| t.passed).count() as u64;
        let (pa, pc) = (passed(&a), passed(&c));
        let (na, nc) = (a.len() as u64, c.len() as u64);
        let findings = drift::reported(&cmp.structural, &cmp.tests, &thresholds, mode);
        entries.push(SetEntry {
            scenario: input.scenario,
            case: input.case,
            old: Side::Counts { n: na, passed: pa },
            new: Side::Counts { n: nc, passed: pc },
            delta: pc as f64 / nc as f64 - pa as f64 / na as f64,
            family_p,
            findings,
            underpowered: drift::underpowered(na, nc, alpha),
        });
    }
    entries.sort_by(|x, y| {
        (x.delta.total_cmp(&y.delta))
            .then_with(|| (&x.scenario, &x.case).cmp(&(&y.scenario, &y.case)))
    });
    let rate = |s: &Side| match s {
        Side::Counts { n, passed } => *passed as f64 / (*n).max(1) as f64,
        Side::Median { .. } => 0.0,
    };
    let n = entries.len().max(1) as f64;
    let old = entries.iter().map(|e| rate(&e.old)).sum::<f64>() / n;
    let new = entries.iter().map(|e| rate(&e.new)).sum::<f64>() / n;
    SetSummary {
        cases: entries.len(),
        mean_pass_rate_old: old,
        mean_pass_rate_new: new,
        change: new - old,
        alpha,
        thresholds,
        drifted: entries.iter().filter(|e| !e.findings.is_empty()).count(),
        underpowered: entries.iter().filter(|e| e.underpowered.is_some()).count(),
        cases_by_effect: entries,
    }
}

impl SetEntry {
    /// The findings as per-trace drift findings (for the entry list).
    pub fn drift(&self) -> Vec<DriftFinding> {
        self.findings.iter().map(CaseFinding::to_drift).collect()
    }
}
