//! Comparing a case's trials with its approved baseline: a set with an approved set by the
//! statistical tests of [`crate::diff::trial_drift`], a set with a single baseline (or a single
//! trace with a set) as `trials-changed`; and the pending set file each comparison calls for.

use super::super::baselines::Pending;
use super::super::pipeline::{self, BaselinePolicy};
use super::super::{CheckOptions, error_chain};
use crate::baseline::{Approved, BaselineError, BaselineSet, Behaviour, SetTrial};
use crate::diff::group_drift::GroupDrift;
use crate::diff::trial_drift::{self as drift, SetComparison, TrialFacts};
use crate::diff::{DriftCategory, DriftMode};
use crate::paths::display_path;
use crate::report::ResultRow;
use crate::report::cases::{CaseFinding, CaseRow, Family, Thresholds};
use crate::trace::TrialId;
use crate::trials::policy::DriftLooks;

/// Compares one trace's behaviour with its approved baseline, as the judge stage does for a
/// trace without a trial (it left trial traces to this stage, which knows the case has one).
pub(super) fn compare_single(
    row: &mut ResultRow,
    behaviour: Behaviour,
    opts: &CheckOptions,
) -> Option<Pending> {
    let (Some(policy), Some(scenario), Some(case), Some(hash)) = (
        opts.baselines.policy(),
        row.scenario.clone(),
        row.case.clone(),
        row.content_hash.clone(),
    ) else {
        return None;
    };
    let compared = pipeline::compare(policy, &scenario, &case, &hash, behaviour);
    let pending = super::super::row::pending_of(&compared, policy, opts, &scenario, &case);
    row.approved_usage = compared.approved_usage;
    row.drift = compared.findings;
    pending
}

/// One case's set comparison, waiting for the run's thresholds.
pub(super) struct Item {
    /// Its place in the case list.
    pub(super) at: usize,
    scenario: String,
    case: String,
    /// The text of the set this run would approve (made only when pending files are written).
    current: Option<String>,
    /// What the approved baseline said, as findings and tests.
    outcome: Result<SetComparison, CaseFinding>,
    /// Trials on each side, for `underpowered`.
    sides: Option<(u64, u64)>,
    /// The approved set records other trials or traces than this run's (what `baseline
    /// approve` refreshes even without drift).
    stale: bool,
    /// The approved set's usage totals beside this run's.
    usage: Option<crate::report::usage::UsageChange>,
    /// The group-sequential regression test, under a `trials.drift` design.
    group: Option<GroupDrift>,
}

/// The set comparisons of a run.
pub(super) struct Comparisons(pub(super) Vec<Item>);

fn finding(category: DriftCategory, detail: String, mode: DriftMode) -> CaseFinding {
    CaseFinding::plain(category, detail, mode)
}

/// A current trial: its id, content hash and behaviour.
pub(super) type Current<'a> = (Option<&'a str>, Option<&'a str>, Option<Behaviour>);

/// Compares the trials `current` (each row with its behaviour) of (scenario, case) with its
/// approved baseline, the trial verdict group-sequentially under a `design`; `None` when a trial
/// was not judged afresh (nothing to compare).
pub(super) fn compare(
    scenario: &str,
    case: &str,
    current: Vec<Current<'_>>,
    (policy, design): (&BaselinePolicy, Option<&DriftLooks>),
    writes_pending: bool,
) -> Option<Item> {
    {
        let mut trials = Vec::with_capacity(current.len());
        for (trial, hash, b) in current {
            let (Some(b), Some(t), Some(hash)) = (b, trial, hash) else {
                return None;
            };
            trials.push(SetTrial {
                trial: TrialId::parse(t).ok()?,
                content_hash: hash.to_owned(),
                behaviour: b,
            });
        }
        let current = BaselineSet::new(scenario, case, trials);
        let path = policy.store.approved_path(scenario, case);
        let shown = display_path(&path);
        let mode = policy.mode;
        let mut sides = None;
        let mut stale = false;
        let mut usage = None;
        let mut group = None;
        let outcome = match policy.store.read_approved(scenario, case) {
            Ok(Approved::Set(approved)) => {
                let ids = |s: &BaselineSet| -> Vec<(String, String)> {
                    (s.trials.iter())
                        .map(|t| (t.trial.to_string(), t.content_hash.clone()))
                        .collect()
                };
                stale = ids(&approved) != ids(&current) || approved.trials != current.trials;
                let facts = |s: &BaselineSet| -> Vec<TrialFacts> {
                    s.trials
                        .iter()
                        .map(|t| TrialFacts::of(&t.behaviour))
                        .collect()
                };
                let records = |s: &BaselineSet| -> Vec<crate::baseline::UsageRecord> {
                    s.trials.iter().map(|t| t.behaviour.usage).collect()
                };
                usage = Some(crate::report::usage::UsageChange::of_sets(
                    &records(&approved),
                    &records(&current),
                ));
                let (a, c) = (facts(&approved), facts(&current));
                sides = Some((a.len() as u64, c.len() as u64));
                let strict = mode == DriftMode::Strict;
                let compared = drift::compare_sets(&a, &c, policy.tolerance, strict);
                let changed = (compared.structural.iter())
                    .any(|s| s.category == DriftCategory::OraclesChanged);
                if let (Some(design), false) = (design, changed) {
                    let verdicts =
                        |s: &[TrialFacts]| s.iter().map(|t| t.passed).collect::<Vec<_>>();
                    group = Some(GroupDrift::record(design, &verdicts(&a), &verdicts(&c)));
                }
                Ok(compared)
            }
            Ok(Approved::Single(_)) => Err(finding(
                DriftCategory::TrialsChanged,
                format!(
                    "the approved baseline `{shown}` is a single trace and this run has {} trials of the case; review and accept the set with `tracereplay baseline accept`",
                    current.trials.len()
                ),
                mode,
            )),
            Err(BaselineError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                Err(finding(
                    DriftCategory::New,
                    format!(
                        "no approved baseline at `{shown}`; review and accept the set of {} trials with `tracereplay baseline accept`",
                        current.trials.len()
                    ),
                    mode,
                ))
            }
            Err(e) => Err(finding(
                DriftCategory::BaselineInvalid,
                error_chain(&e),
                mode,
            )),
        };
        // The behaviours are dropped here, in parallel, unless a pending file needs their text.
        let current = writes_pending.then(|| current.to_text());
        Some(Item {
            at: 0,
            scenario: scenario.to_owned(),
            case: case.to_owned(),
            current,
            outcome,
            sides,
            stale,
            usage,
            group,
        })
    }
}

impl Comparisons {
    /// With every case's tests in view: the run's thresholds, each case's findings, its
    /// `underpowered` mark, and the pending set files.
    pub(super) fn finish(
        mut self,
        cases: &mut [CaseRow],
        opts: &CheckOptions,
        pending: &mut Vec<Pending>,
    ) -> Option<Thresholds> {
        let policy = opts.baselines.policy()?;
        if self.0.is_empty() {
            return None;
        }
        for item in &mut self.0 {
            let case = &mut cases[item.at];
            match &item.outcome {
                Ok(c) => {
                    case.tests = c.tests.clone();
                    case.family_p = Family::ALL
                        .iter()
                        .filter_map(|&f| c.family_p(f).map(|p| (f, p)))
                        .collect();
                    case.drift =
                        drift::reported(&c.structural, &[], &Default::default(), policy.mode);
                    case.group_drift = item.group.take();
                }
                Err(f) => case.drift = vec![f.clone()],
            }
        }
        let mut thresholds = Thresholds {
            alpha: policy.alpha,
            mode: match policy.mode {
                DriftMode::Strict => "strict",
                DriftMode::Warn => "warn",
                DriftMode::Default | DriftMode::Ignore => "default",
            }
            .to_owned(),
            families: Default::default(),
            group_alpha: None,
        };
        crate::report::cases::decide(cases, &mut thresholds);
        for item in self.0 {
            let case = &mut cases[item.at];
            case.usage_against_approved = item.usage;
            if let Some((na, nc)) = item.sides {
                case.underpowered_detail = drift::underpowered(na, nc, policy.alpha);
                case.underpowered = case.underpowered_detail.is_some();
            }
            let invalid = case
                .drift
                .iter()
                .any(|d| d.category == DriftCategory::BaselineInvalid);
            if let (Some(text), false) = (item.current, invalid) {
                let matches = case.drift.is_empty() && !(policy.refresh && item.stale);
                pending.push(if matches {
                    Pending::Clear {
                        scenario: item.scenario,
                        case: item.case,
                    }
                } else {
                    Pending::Write {
                        text: crate::eval::baselines::PendingText::new(text),
                        scenario: item.scenario,
                        case: item.case,
                    }
                });
            }
        }
        Some(thresholds)
    }
}
