//! The group-sequential regression test of a case whose scenario's `trials.drift` names looks:
//! the trial-verdict regression of its current set against its approved set, judged at each look
//! the current set has reached with the exact boundaries of [`crate::trials::group`], so that a
//! regression stops the recording early and the overall type-I error stays at α.
//!
//! The run's family 1 (one regression test per case) is split in two. With m the cases that
//! have a family-1 test — every group-sequential case counting as one — each group-sequential
//! case's design runs at α/m (Bonferroni), and Benjamini–Hochberg runs over the m′ other cases at
//! α·m′/m. The false discovery rate of the family stays at most α: the expected share of false
//! findings is at most the chance of any false group-sequential finding, g·α/m, plus the
//! Benjamini–Hochberg share, α·m′/m.
//!
//! What the trials showed at each look is recorded on the case ([`GroupDrift`]); what it comes to
//! depends on m, so it is decided with the whole run in view — by `check`, and again by `merge`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::trial_drift::{CaseFinding, Side};
use super::{DriftCategory, DriftMode};
use crate::trials::group::{Design, Spending};
use crate::trials::policy::{DriftLooks, MAX_LOOK};
use crate::trials::stats;

/// A case's group-sequential regression test: what its trials showed at each look reached, and
/// what the run decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupDrift {
    /// Current trials at each look of the design.
    pub looks: Vec<u64>,
    /// How α is spent: `obrien-fleming` or `pocock`.
    pub spending: String,
    /// The approved set: trials and passing trials.
    pub approved: Side,
    /// At each look reached, the first n_k current trials (in trial order) and how many passed.
    pub current: Vec<Side>,
    /// The one-sided Fisher p of a regression at each look reached.
    pub p: Vec<f64>,
    /// Decided with the run in view: the design's α (the run's α over the cases with a
    /// regression test of the trial verdict).
    pub alpha: f64,
    /// Decided: each reached look's boundary (a regression when p is at most it).
    pub levels: Vec<f64>,
    /// Decided: the look (from 1) that showed a regression.
    pub regression_at: Option<usize>,
    /// Decided: more current trials could not change the outcome (a regression shown, or the
    /// last look reached).
    pub settled: bool,
}

/// The counts of a side.
fn counts(side: &Side) -> (u64, u64) {
    match *side {
        Side::Counts { n, passed } => (n, passed),
        Side::Median { n, .. } => (n, 0),
    }
}

impl GroupDrift {
    /// What the trials show at each look of `design`: `approved` and `current` are the trial
    /// verdicts (pass or not), in trial order. Undecided until the run decides it.
    pub fn record(design: &DriftLooks, approved: &[bool], current: &[bool]) -> GroupDrift {
        let passed = |s: &[bool]| s.iter().filter(|p| **p).count() as u64;
        let n_a = approved.len() as u64;
        let a = passed(approved);
        let reached: Vec<u64> = (design.looks.iter())
            .copied()
            .take_while(|&n| n as usize <= current.len())
            .collect();
        let c: Vec<u64> = reached
            .iter()
            .map(|&n| passed(&current[..n as usize]))
            .collect();
        GroupDrift {
            looks: design.looks.clone(),
            spending: design.spending.name().to_owned(),
            approved: Side::Counts { n: n_a, passed: a },
            current: (reached.iter().zip(&c))
                .map(|(&n, &passed)| Side::Counts { n, passed })
                .collect(),
            p: (reached.iter().zip(&c))
                .map(|(&n, &c)| stats::fisher_lower(a, n_a, c, n))
                .collect(),
            alpha: 0.0,
            levels: Vec::new(),
            regression_at: None,
            settled: false,
        }
    }

    /// Decides the test with `levels`, the boundaries of its design at the run's α (`Err`: the
    /// design cannot be judged), and the finding it reports, if any.
    fn decide(
        &mut self,
        alpha: f64,
        levels: &Result<Vec<f64>, String>,
        mode: DriftMode,
    ) -> Option<CaseFinding> {
        self.alpha = alpha;
        let (n_a, a) = counts(&self.approved);
        let levels = match levels {
            Ok(l) => l,
            Err(why) => {
                self.levels.clear();
                self.regression_at = None;
                self.settled = false;
                return Some(CaseFinding::plain(
                    DriftCategory::DriftUndecided,
                    why.clone(),
                    mode,
                ));
            }
        };
        self.levels = levels[..self.p.len()].to_vec();
        self.regression_at = (self.p.iter().zip(&self.levels))
            .position(|(&p, &level)| level > 0.0 && stats::at_most(p, level))
            .map(|k| k + 1);
        self.settled = self.regression_at.is_some() || self.p.len() == self.looks.len();
        let total = self.looks.len();
        let at = |k: usize| -> (Side, String) {
            let (n, c) = counts(&self.current[k]);
            let said = format!(
                "the trial verdict at look {} of {total} ({n} current trials): passed {a}/{n_a} approved trials, {c}/{n} current (group-sequential boundary p ≤ {:.6})",
                k + 1,
                self.levels[k]
            );
            (self.current[k], said)
        };
        if let Some(k) = self.regression_at.map(|k| k - 1) {
            let (current, detail) = at(k);
            return Some(CaseFinding {
                category: DriftCategory::Regression,
                detail,
                p: Some(self.p[k]),
                p_adjusted: Some(self.p[k]),
                approved: Some(self.approved),
                current: Some(current),
                fails: DriftCategory::Regression.fails(mode),
            });
        }
        if self.settled {
            return None;
        }
        let next = self.looks[self.p.len()];
        let detail = match self.p.len().checked_sub(1) {
            None => format!(
                "the regression of the trial verdict is judged at looks after {} current trials: record {next} before it can be judged",
                self.looks
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Some(k) => {
                let (_, said) = at(k);
                format!(
                    "{said}: no regression shown yet at p = {:.6}; record {next} current trials for the next look",
                    self.p[k]
                )
            }
        };
        let mut finding = CaseFinding::plain(DriftCategory::DriftUndecided, detail, mode);
        finding.p = self.p.last().copied();
        finding.p_adjusted = finding.p;
        finding.approved = Some(self.approved);
        finding.current = self.current.last().copied();
        Some(finding)
    }
}

/// The group-sequential cases of a run, each with its record and where its findings go.
pub(crate) struct Case<'a> {
    /// Its record.
    pub(crate) group: &'a mut GroupDrift,
    /// Its drift findings (the group-sequential finding is added to them).
    pub(crate) drift: &'a mut Vec<CaseFinding>,
}

/// The design of `n_a` approved trials, `looks` and `spending` at `alpha`, or why there is none.
fn design_of(n_a: u64, looks: &[u64], spending: &str, alpha: f64) -> Result<Design, String> {
    if n_a > MAX_LOOK {
        return Err(format!(
            "the approved set has {n_a} trials, more than the {MAX_LOOK} a group-sequential design is judged against; approve at most {MAX_LOOK} trials"
        ));
    }
    Design::new(n_a, looks.to_vec(), alpha, Spending::parse(spending)?)
}

/// Decides every group-sequential case of a run at `alpha` (α/m): the boundaries of each
/// distinct design computed once, in parallel, and each case's finding added.
pub(crate) fn decide(cases: Vec<Case<'_>>, alpha: f64, mode: DriftMode) {
    use rayon::prelude::*;
    type Key = (u64, Vec<u64>, String);
    let key =
        |g: &GroupDrift| -> Key { (counts(&g.approved).0, g.looks.clone(), g.spending.clone()) };
    let keys: std::collections::BTreeSet<Key> = cases.iter().map(|c| key(c.group)).collect();
    let levels: BTreeMap<Key, Result<Vec<f64>, String>> = (keys.into_iter().collect::<Vec<_>>())
        .into_par_iter()
        .map(|k| {
            let levels = design_of(k.0, &k.1, &k.2, alpha).map(|d| d.boundaries());
            (k, levels)
        })
        .collect();
    for c in cases {
        let found = c.group.decide(alpha, &levels[&key(c.group)], mode);
        c.drift.extend(found);
    }
}

#[cfg(test)]
mod tests;
