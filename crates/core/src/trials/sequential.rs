//! Sequential trials: a case recorded one trial at a time, until its verdict is settled.
//!
//! A sequential policy (`"sequential": true`, `max`) judges a case as if all `max` trials were
//! recorded. Every pass rule passes a case of `max` trials exactly when at least some number t
//! of them pass ([`super::plan::passes_needed`]: the lower Wilson bound grows with the passes).
//! So after n trials with c passing, the verdict is already known when c ≥ t (it passes, whatever
//! the rest do) or when n − c > max − t (it fails: even if every remaining trial passed, fewer
//! than t would). That is curtailment, and it is exact: a settled case has the verdict recording
//! all `max` trials would give, for every way the remaining trials could turn out — and it
//! settles at the first trial after which that is so. Between the two, the case is not settled
//! and cannot be judged yet (`error`, asking for more trials).

use super::plan;
use super::policy::{PolicyVerdict, TrialsPolicy};

/// The verdict of `passed` passing trials of `n` under a sequential `policy` of `max` trials.
pub(crate) fn verdict(policy: &TrialsPolicy, max: u64, passed: u64, n: u64) -> PolicyVerdict {
    if n > max {
        return PolicyVerdict::CannotJudge(format!(
            "{n} trials recorded, and the scenario's sequential policy records at most {max}"
        ));
    }
    if n < policy.min {
        return PolicyVerdict::CannotJudge(format!(
            "{n} trial(s) recorded, the scenario needs {}",
            policy.min
        ));
    }
    let failed = n - passed;
    match needed(policy, max) {
        Some(t) if passed >= t => PolicyVerdict::Pass,
        Some(t) if failed > max - t => PolicyVerdict::Fail(format!(
            "{failed} of {n} trials fail, and the scenario needs {t} of {max} to pass"
        )),
        None => PolicyVerdict::Fail(format!(
            "not even {max} of {max} passing trials meet the scenario's `trials.pass`"
        )),
        Some(t) => PolicyVerdict::CannotJudge(format!(
            "not settled after {n} trial(s): {passed} pass and {failed} fail, and the scenario needs {t} of up to {max} to pass; record more (`tracereplay trials next` names the next trial)"
        )),
    }
}

/// The passing trials of `max` that pass a sequential policy's case (`None`: no count does).
fn needed(policy: &TrialsPolicy, max: u64) -> Option<u64> {
    let fixed = TrialsPolicy {
        min: max,
        pass: policy.pass,
        ..TrialsPolicy::default()
    };
    plan::passes_needed(&fixed, max)
}

/// Whether a case of a sequential policy is settled with `passed` of `n` trials passing:
/// `None` for a policy that is not sequential.
pub fn settled(policy: &TrialsPolicy, passed: u64, n: u64) -> Option<bool> {
    let max = policy.sequential?;
    Some(matches!(
        verdict(policy, max, passed, n),
        PolicyVerdict::Pass | PolicyVerdict::Fail(_)
    ))
}

/// What a recording loop does next for a case (`tracereplay trials next`, the recorder's
/// `GET …/tracereplay/v1/next`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Its verdict is known: more trials could not change it (a sequential policy), or it has
    /// the trials its policy needs (a fixed one). `passed`: the verdict is `pass`.
    Settled {
        /// Whether the case passes.
        passed: bool,
    },
    /// Record this trial next.
    Record(crate::trace::TrialId),
}

/// The next step for a case of `policy` whose `n` judged trials (ids `trials`) have `passed`
/// passing. A fixed policy is settled once the case has `min` trials; a sequential one when
/// [`settled`]. The next trial is the one after the highest integer trial id (1 when there is
/// none: string ids never equal an integer's).
pub fn next_step(
    policy: &TrialsPolicy,
    passed: u64,
    n: u64,
    trials: &[crate::trace::TrialId],
) -> Step {
    let done = match policy.sequential {
        Some(_) => settled(policy, passed, n) == Some(true),
        None => n >= policy.min,
    };
    if done {
        return Step::Settled {
            passed: policy.verdict(passed, n) == PolicyVerdict::Pass,
        };
    }
    Step::Record(next_trial(trials))
}

/// The trial after the highest integer trial id of `trials` (1 when there is none: string ids
/// never equal an integer's).
pub fn next_trial(trials: &[crate::trace::TrialId]) -> crate::trace::TrialId {
    let highest = (trials.iter())
        .filter_map(|t| t.as_str().parse::<u64>().ok().filter(|_| t.is_integer()))
        .max();
    let next = highest.map_or(1, |h| h + 1);
    crate::trace::TrialId::parse(&next.to_string()).expect("an integer is a trial id")
}

#[cfg(test)]
mod tests {
    use super::super::policy::PassRule;
    use super::*;

    fn rules(max: u64) -> Vec<PassRule> {
        let mut out = vec![PassRule::All];
        out.extend((1..=max).map(PassRule::AtLeast));
        for rate in [0.3, 0.5, 0.7, 0.8, 0.95] {
            for confidence in [0.5, 0.8, 0.95] {
                out.push(PassRule::Rate { rate, confidence });
            }
        }
        out
    }

    fn decided(v: &PolicyVerdict) -> Option<bool> {
        match v {
            PolicyVerdict::Pass => Some(true),
            PolicyVerdict::Fail(_) => Some(false),
            PolicyVerdict::CannotJudge(_) => None,
        }
    }

    /// For every `max` up to 10, every rule, every `min`, and every sequence of trial outcomes:
    /// a settled prefix has the verdict of all `max` trials, the case settles by `max`, and an
    /// unsettled prefix has continuations whose verdicts differ (it settles as early as it can).
    #[test]
    fn curtailment_is_exact_and_as_early_as_possible() {
        let mut checked = 0u64;
        for max in 1..=10u64 {
            for pass in rules(max) {
                for min in [1, max.div_ceil(2), max] {
                    let policy = TrialsPolicy {
                        min,
                        pass,
                        sequential: Some(max),
                        drift: None,
                    };
                    let fixed = TrialsPolicy {
                        min: max,
                        pass,
                        sequential: None,
                        drift: None,
                    };
                    for outcomes in 0u32..(1 << max) {
                        let passes_upto =
                            |n: u64| u64::from((outcomes & ((1 << n) - 1)).count_ones());
                        let full = decided(&fixed.verdict(passes_upto(max), max));
                        assert!(full.is_some());
                        for n in 0..=max {
                            let c = passes_upto(n);
                            let got = decided(&policy.verdict(c, n));
                            if n < min {
                                assert_eq!(got, None);
                                continue;
                            }
                            match got {
                                Some(v) => {
                                    assert_eq!(Some(v), full, "{policy:?} {outcomes:b} at {n}")
                                }
                                None => {
                                    assert!(n < max, "{policy:?} unsettled at max");
                                    // All the rest pass, or all fail: the verdicts differ.
                                    let rest = max - n;
                                    let best = decided(&fixed.verdict(c + rest, max));
                                    let worst = decided(&fixed.verdict(c, max));
                                    assert_ne!(best, worst, "{policy:?} {outcomes:b} at {n}");
                                }
                            }
                            assert_eq!(settled(&policy, c, n), Some(got.is_some()));
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert!(checked > 750_000, "{checked}");
    }

    #[test]
    fn the_next_step_records_until_settled() {
        let id = |s: &str| crate::trace::TrialId::parse(s).unwrap();
        let sequential = TrialsPolicy {
            min: 1,
            pass: PassRule::AtLeast(3),
            sequential: Some(4),
            drift: None,
        };
        assert_eq!(next_step(&sequential, 0, 0, &[]), Step::Record(id("1")));
        let ids = [id("1"), id("2"), id("b")];
        assert_eq!(next_step(&sequential, 2, 3, &ids), Step::Record(id("3")));
        assert_eq!(
            next_step(&sequential, 3, 3, &ids),
            Step::Settled { passed: true }
        );
        assert_eq!(
            next_step(&sequential, 1, 3, &ids),
            Step::Settled { passed: false }
        );
        let fixed = TrialsPolicy {
            min: 2,
            ..TrialsPolicy::default()
        };
        assert_eq!(next_step(&fixed, 1, 1, &[id("0")]), Step::Record(id("1")));
        assert_eq!(
            next_step(&fixed, 1, 2, &[id("0"), id("1")]),
            Step::Settled { passed: false }
        );
    }

    #[test]
    fn too_many_trials_and_fixed_policies() {
        let policy = TrialsPolicy {
            min: 1,
            pass: PassRule::All,
            sequential: Some(4),
            drift: None,
        };
        assert!(
            matches!(policy.verdict(5, 5), PolicyVerdict::CannotJudge(m) if m.contains("at most 4"))
        );
        assert_eq!(settled(&TrialsPolicy::default(), 1, 1), None);
        assert_eq!(settled(&policy, 0, 1), Some(true));
    }
}
