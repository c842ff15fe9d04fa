//! The case lines of a report: one per (scenario, case), listed when some case of the run was
//! recorded as several trials (or judged under a `trials` policy). A case with one trace is its
//! trace; a case with several gets one verdict from its trials, its estimates, the flaky mark and
//! the statistical drift of its set.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::RowVerdict;
pub(crate) use crate::diff::trial_drift::{CaseFinding, Family, SetTest};
use crate::scenario::Risk;

/// One case of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseRow {
    /// Scenario id.
    pub scenario: String,
    /// Case.
    pub case: String,
    /// The scenario's risk (`null` when it is unknown).
    pub risk: Option<Risk>,
    /// Trace files of the case (its trials).
    pub trials: usize,
    /// Trials whose verdict is `pass`.
    pub passed: usize,
    /// The case's verdict under the scenario's `trials` policy.
    pub verdict: RowVerdict,
    /// Why the verdict is not `pass`, when the policy (not one trial) decided it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The scenario states a `trials` policy (so even a single trace is judged as a case).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub policy: bool,
    /// Whether the scenario is a known gap.
    pub known_gap: bool,
    /// Whether the case makes the exit code 1.
    pub blocking: bool,
    /// At least two pass/fail trials disagree (a mark: never changes the exit code).
    pub flaky: bool,
    /// The oracles whose outcome differs across trials.
    pub flaky_oracles: Vec<FlakyOracle>,
    /// passed / pass-or-fail trials (`null` below two pass/fail trials).
    pub pass_rate: Option<f64>,
    /// The two-sided 95 % Wilson interval of the pass rate.
    pub wilson: Option<[f64; 2]>,
    /// pass^k for k = 1…n.
    pub pass_hat_k: Option<Vec<f64>>,
    /// pass@k for k = 1…n.
    pub pass_at_k: Option<Vec<f64>>,
    /// The trial-verdict regression test of this comparison cannot reach α.
    pub underpowered: bool,
    /// Why, in a sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub underpowered_detail: Option<String>,
    /// The case's p-value of each family with a counted test (the smallest adjusted p).
    pub family_p: BTreeMap<Family, f64>,
    /// The findings of the set comparison (or of the one trace's, for a single-trial case).
    pub drift: Vec<CaseFinding>,
    /// Every counted test of the set comparison, reported or not: what `merge` recomputes the
    /// findings from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tests: Vec<SetTest>,
    /// The approved baseline compared with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// The set's usage totals beside its approved set's (when compared with one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_against_approved: Option<crate::report::usage::UsageChange>,
    /// Under a sequential policy: the most trials the case records, and whether its verdict is
    /// settled (more trials could not change it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<Sequential>,
    /// Under a `trials.drift` design: the group-sequential regression test of the trial
    /// verdict (its family-1 test, in place of the fixed one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_drift: Option<crate::diff::group_drift::GroupDrift>,
}

/// A case of a sequential `trials` policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sequential {
    /// The most trials the case records.
    pub max: u64,
    /// Its verdict is settled: the trials it has decide it, whatever the rest would do.
    pub settled: bool,
}

/// An oracle that passed in some trials and not in others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlakyOracle {
    /// Its baseline key (`<index>:<type>`).
    pub oracle: String,
    /// Trials it passed.
    pub passed: usize,
    /// Trials that ran it.
    pub of: usize,
}

/// The run's threshold of each family of set tests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    /// `--alpha`.
    pub alpha: f64,
    /// The `--drift` mode the findings were judged under (`default`, `strict`, `warn`), so
    /// that `merge` can decide them again.
    pub mode: String,
    /// Each family's Benjamini–Hochberg threshold (`null`: no case reaches it). Family 1's is
    /// over the cases without a group-sequential design, at α·m′/m.
    pub families: BTreeMap<Family, Option<f64>>,
    /// The α of each group-sequential design (α/m), when a case has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_alpha: Option<f64>,
}

impl Thresholds {
    /// The `--drift` mode the findings are judged under.
    pub(crate) fn drift_mode(&self) -> crate::diff::DriftMode {
        match self.mode.as_str() {
            "strict" => crate::diff::DriftMode::Strict,
            "warn" => crate::diff::DriftMode::Warn,
            _ => crate::diff::DriftMode::Default,
        }
    }
}

impl CaseRow {
    /// Whether this case is more than its one trace: several trials, or a policy judged it.
    pub fn is_set(&self) -> bool {
        self.trials >= 2 || self.policy
    }

    /// The case line of the human-facing reports: `FLAKY … 2/4 trials pass …`.
    pub fn line(&self) -> String {
        let mark = match (self.verdict, self.flaky) {
            (RowVerdict::Pass, true) => "FLAKY",
            (RowVerdict::Pass, false) => "PASS",
            (RowVerdict::Fail, _) => "FAIL",
            (RowVerdict::Error, _) => "ERROR",
        };
        let mut s = format!(
            "{mark} {}/{}: {}/{} trials pass",
            self.scenario, self.case, self.passed, self.trials
        );
        if self.flaky && self.verdict != RowVerdict::Pass {
            s.push_str(" (flaky)");
        }
        if let (Some(rate), Some([lo, hi])) = (self.pass_rate, self.wilson) {
            s.push_str(&format!(", pass rate {rate:.2} (95% {lo:.2}–{hi:.2})"));
        }
        if let Some(q) = self.sequential.filter(|q| q.settled) {
            s.push_str(&format!(
                "; settled after {} of up to {} trials",
                self.trials, q.max
            ));
        }
        if let Some(r) = &self.reason {
            s.push_str(&format!("; {r}"));
        }
        for f in &self.flaky_oracles {
            s.push_str(&format!(
                "; `{}` passed {} of {} trials",
                f.oracle, f.passed, f.of
            ));
        }
        if self.underpowered {
            s.push_str("; underpowered");
        }
        s
    }
}

/// The set cases of a report by (scenario, case), for renderers that list rows and put each
/// case's line before its trials.
pub(crate) struct CaseIndex<'r>(std::collections::HashMap<(&'r str, &'r str), &'r CaseRow>);

impl<'r> CaseIndex<'r> {
    /// The cases of `report` that are more than their one trace.
    pub(crate) fn of(report: &'r super::Report) -> CaseIndex<'r> {
        CaseIndex(
            (report.cases.iter())
                .filter(|c| c.is_set())
                .map(|c| ((c.scenario.as_str(), c.case.as_str()), c))
                .collect(),
        )
    }

    /// Whether the report has no set cases.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The set case a row belongs to.
    pub(crate) fn get(&self, scenario: Option<&str>, case: Option<&str>) -> Option<&'r CaseRow> {
        self.0.get(&(scenario?, case?)).copied()
    }
}

/// Decides, with every case of the run in view, each family's threshold, each set case's test
/// findings from its counted tests, and each group-sequential case's test (findings without a
/// test are kept). What `check` decides, and `merge` again for recombined shares.
pub(crate) fn decide(cases: &mut [CaseRow], thresholds: &mut Thresholds) {
    use crate::diff::group_drift;
    use crate::diff::trial_drift as drift;
    let mode = thresholds.drift_mode();
    let alpha = thresholds.alpha;
    // A group-sequential case's family 1 is its own test: out of Benjamini–Hochberg.
    let fixed_ps: Vec<BTreeMap<Family, f64>> = (cases.iter())
        .map(|c| {
            let mut ps = c.family_p.clone();
            if c.group_drift.is_some() {
                ps.remove(&Family::Verdict);
            }
            ps
        })
        .collect();
    thresholds.families = drift::thresholds(fixed_ps.iter(), alpha);
    let groups = cases.iter().filter(|c| c.group_drift.is_some()).count();
    thresholds.group_alpha = None;
    if groups > 0 {
        let others = (fixed_ps.iter())
            .filter(|ps| ps.contains_key(&Family::Verdict))
            .count();
        let m = (groups + others) as f64;
        let verdict_ps: Vec<f64> = (fixed_ps.iter())
            .filter_map(|ps| ps.get(&Family::Verdict).copied())
            .collect();
        let verdict =
            crate::trials::stats::benjamini_hochberg(&verdict_ps, alpha * others as f64 / m);
        thresholds.families.insert(Family::Verdict, verdict);
        thresholds.group_alpha = Some(alpha / m);
    }
    let mut without_verdict = thresholds.families.clone();
    without_verdict.insert(Family::Verdict, None);
    let mut grouped = Vec::new();
    for c in cases.iter_mut() {
        if c.tests.is_empty() && c.group_drift.is_none() {
            continue;
        }
        c.drift
            .retain(|d| d.p.is_none() && d.category != crate::diff::DriftCategory::DriftUndecided);
        let families = match c.group_drift {
            Some(_) => &without_verdict,
            None => &thresholds.families,
        };
        c.drift
            .extend(drift::reported(&[], &c.tests, families, mode));
        if let Some(group) = c.group_drift.as_mut() {
            grouped.push(group_drift::Case {
                group,
                drift: &mut c.drift,
            });
        }
    }
    if let Some(alpha) = thresholds.group_alpha {
        group_drift::decide(grouped, alpha, mode);
    }
}

/// Decides again, with every case of a merged run in view ([`decide`]), then whether each set
/// case blocks. What `check` decided for the whole run, shares recombined.
pub(crate) fn decide_again(
    cases: &mut [CaseRow],
    thresholds: &mut Thresholds,
    fail_on: super::FailOn,
) {
    decide(cases, thresholds);
    for c in cases.iter_mut().filter(|c| c.is_set()) {
        c.blocking = super::verdict_blocks(c.verdict, c.known_gap, c.risk, fail_on)
            || c.drift.iter().any(|d| d.fails);
    }
}
