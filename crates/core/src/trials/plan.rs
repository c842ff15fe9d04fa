//! Planning trials before they are paid for: what a `trials` policy does to a case of true
//! pass rate p (its operating characteristic), how many trials per side let a drift check see a
//! drop from p₀ to p₁, and the smallest drop a number of trials can see. Exact binomial and
//! Fisher computations throughout (no normal approximation): every probability is a finite sum
//! over the outcomes a case can have.

use super::policy::{PassRule, TrialsPolicy};
use super::stats;

/// The largest trial count the planner searches or tabulates (far beyond what a team records:
/// keeps every question bounded).
pub const MAX_PLANNED: u64 = 1000;

/// `P(X = k)` for `X ~ Binomial(n, p)`, k = 0…n.
pub fn binomial_pmf(n: u64, p: f64) -> Vec<f64> {
    let mut out = vec![0.0; n as usize + 1];
    if p <= 0.0 {
        out[0] = 1.0;
    } else if p >= 1.0 {
        out[n as usize] = 1.0;
    } else {
        let (lp, lq) = (p.ln(), (-p).ln_1p());
        for (k, v) in out.iter_mut().enumerate() {
            let k = k as u64;
            *v = (stats::ln_choose(n, k) + k as f64 * lp + (n - k) as f64 * lq).exp();
        }
    }
    out
}

/// The policy as it judges a case of exactly `n` trials: its `min` taken as `n` (an
/// `at-least` beyond `n` is then no policy: `None`).
pub fn at_trials(policy: &TrialsPolicy, n: u64) -> Option<TrialsPolicy> {
    match policy.pass {
        PassRule::AtLeast(k) if k > n => None,
        _ if n == 0 => None,
        _ => Some(TrialsPolicy {
            min: n,
            pass: policy.pass,
            ..TrialsPolicy::default()
        }),
    }
}

/// The fewest passing trials of `n` with which the policy (at `n` trials, [`at_trials`])
/// passes a case; `None` when not even `n` of `n` do. Every rule passes from a count on (the
/// lower Wilson bound grows with the passes), so a case of `n` trials passes exactly when at
/// least this many pass.
pub fn passes_needed(policy: &TrialsPolicy, n: u64) -> Option<u64> {
    let at = at_trials(policy, n)?;
    (0..=n).find(|&c| at.verdict(c, n) == super::policy::PolicyVerdict::Pass)
}

/// The probability that a case of `n` trials, each passing with probability `p` independently,
/// passes under the policy ([`at_trials`]): its operating characteristic at `p`. `None` when
/// the policy cannot judge `n` trials.
pub fn pass_probability(policy: &TrialsPolicy, n: u64, p: f64) -> Option<f64> {
    at_trials(policy, n)?;
    let needed = match passes_needed(policy, n) {
        Some(c) => c,
        None => return Some(0.0),
    };
    let pmf = binomial_pmf(n, p);
    Some(pmf[needed as usize..].iter().sum::<f64>().min(1.0))
}

/// The mean number of trials a case of a sequential policy records before it is settled, each
/// trial passing with probability `p` (`None` for a policy that is not sequential): exact, a sum
/// over the counts at which it can settle.
pub fn expected_sequential_trials(policy: &TrialsPolicy, p: f64) -> Option<f64> {
    let max = policy.sequential?;
    // The probability of each pass count among the trials recorded, on paths not yet settled.
    let mut open = vec![1.0f64];
    let mut expected = 0.0;
    for n in 0..=max {
        for (c, w) in open.iter_mut().enumerate() {
            if *w > 0.0 && super::sequential::settled(policy, c as u64, n) == Some(true) {
                expected += n as f64 * *w;
                *w = 0.0;
            }
        }
        if n == max {
            break;
        }
        let mut next = vec![0.0; open.len() + 1];
        for (c, w) in open.iter().enumerate() {
            next[c] += w * (1.0 - p);
            next[c + 1] += w * p;
        }
        open = next;
    }
    Some(expected)
}

/// The power of the trial-verdict `regression` test (one-sided Fisher, `check`'s test) at
/// `level`: the probability that `n_a` approved trials passing with probability `p0` and `n_c`
/// current ones passing with probability `p1` give p ≤ `level` (with the contract's slack).
/// Exact: the sum over every pair of outcomes.
pub fn regression_power(n_a: u64, n_c: u64, p0: f64, p1: f64, level: f64) -> f64 {
    let (pa, pc) = (binomial_pmf(n_a, p0), binomial_pmf(n_c, p1));
    let mut power = 0.0;
    for (a, weight) in pa.iter().enumerate() {
        // The test rejects for c up to a critical count (fewer passes in C is more extreme).
        let rejected: f64 = (0..=n_c)
            .take_while(|&c| stats::at_most(stats::fisher_lower(a as u64, n_a, c, n_c), level))
            .map(|c| pc[c as usize])
            .sum();
        power += weight * rejected;
    }
    power.min(1.0)
}

/// The level each case's regression test must reach so that a run over `cases` cases reports
/// it under Benjamini–Hochberg at `alpha`: `alpha / cases`. A case whose p is at most that is
/// reported whatever the other cases' p-values (the threshold is never below it), so a power
/// computed at this level is a lower bound of the power under Benjamini–Hochberg: conservative.
pub fn per_case_level(alpha: f64, cases: u64) -> f64 {
    alpha / cases.max(1) as f64
}

/// The fewest trials per side (the same on both) whose regression test has power at least
/// `power` to see a drop from `p0` to `p1` at `level`; `None` when even [`MAX_PLANNED`] do not
/// (or the drop is none).
pub fn trials_for_power(p0: f64, p1: f64, level: f64, power: f64) -> Option<u64> {
    if p1 >= p0 {
        return None;
    }
    // The power grows with n (not strictly: the exact test's lattice makes it saw-toothed), so
    // the first n that reaches it is found by a scan from the smallest n that can reject at all.
    let first =
        (1..=MAX_PLANNED).find(|&k| stats::at_most(1.0 / stats::choose(2 * k, k), level))?;
    (first..=MAX_PLANNED).find(|&n| regression_power(n, n, p0, p1, level) >= power)
}

/// The grid [`smallest_detectable_drop`] answers on: pass rates in hundredths.
pub const RATE_STEP: f64 = 0.01;

/// The highest current pass rate p₁ < `p0`, on a grid of hundredths, at which `n_a` approved and
/// `n_c` current trials see the drop with at least `power` at `level` (every lower p₁ is seen
/// at least as often); `None` when not even p₁ = 0 is.
pub fn smallest_detectable_drop(
    n_a: u64,
    n_c: u64,
    p0: f64,
    level: f64,
    power: f64,
) -> Option<f64> {
    let top = (p0 / RATE_STEP).round() as i64;
    (0..top)
        .rev()
        .map(|i| i as f64 * RATE_STEP)
        .find(|&p1| regression_power(n_a, n_c, p0, p1, level) >= power)
}

/// The trial-verdict `regression` test's p-value: `a` of `n_a` approved trials passing, `c` of
/// `n_c` current ones (one-sided Fisher, lower in the current set).
pub fn fisher_regression(a: u64, n_a: u64, c: u64, n_c: u64) -> f64 {
    stats::fisher_lower(a, n_a, c, n_c)
}

/// The smallest p-value the regression test can give with `n_a` and `n_c` trials (all pass
/// before, none after): `1 / C(n_a + n_c, n_a)`.
pub fn smallest_p(n_a: u64, n_c: u64) -> f64 {
    1.0 / stats::choose(n_a + n_c, n_a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12
    }

    #[test]
    fn operating_characteristics_by_hand() {
        let all = TrialsPolicy::default();
        // "all" of 4: p⁴.
        assert!(close(
            pass_probability(&all, 4, 0.9).unwrap(),
            0.9f64.powi(4)
        ));
        let at_least = TrialsPolicy {
            min: 8,
            pass: PassRule::AtLeast(6),
            sequential: None,
            drift: None,
        };
        assert_eq!(passes_needed(&at_least, 8), Some(6));
        assert_eq!(passes_needed(&at_least, 5), None);
        assert_eq!(pass_probability(&at_least, 5, 0.9), None);
        // 6, 7 or 8 of 8 at p = 0.5: (28 + 8 + 1) / 256.
        assert!(close(
            pass_probability(&at_least, 8, 0.5).unwrap(),
            37.0 / 256.0
        ));
        // The spec's reference: 8/8 meets rate 0.70 at 0.95 (0.747276), 7/8 does not.
        let rate = TrialsPolicy {
            min: 8,
            pass: PassRule::Rate {
                rate: 0.70,
                confidence: 0.95,
            },
            sequential: None,
            drift: None,
        };
        assert_eq!(passes_needed(&rate, 8), Some(8));
        let rate_75 = TrialsPolicy {
            pass: PassRule::Rate {
                rate: 0.75,
                confidence: 0.95,
            },
            ..rate
        };
        assert_eq!(passes_needed(&rate_75, 8), None);
        assert_eq!(pass_probability(&rate_75, 8, 1.0), Some(0.0));
        assert_eq!(pass_probability(&all, 3, 1.0), Some(1.0));
        assert_eq!(pass_probability(&all, 3, 0.0), Some(0.0));
    }

    #[test]
    fn power_is_the_rejection_probability_and_grows_with_the_drop() {
        // 4 and 4 trials at α = 0.05: only 4/4 → 0/4 rejects (p = 0.014286).
        let p = regression_power(4, 4, 0.9, 0.1, 0.05);
        assert!(close(p, 0.9f64.powi(4) * 0.9f64.powi(4)), "{p}");
        assert_eq!(regression_power(2, 2, 1.0, 0.0, 0.05), 0.0);
        let (weak, strong) = (
            regression_power(10, 10, 0.9, 0.6, 0.05),
            regression_power(10, 10, 0.9, 0.2, 0.05),
        );
        assert!(weak < strong, "{weak} {strong}");
        let n = trials_for_power(0.9, 0.5, 0.05, 0.8).unwrap();
        assert!(regression_power(n, n, 0.9, 0.5, 0.05) >= 0.8);
        assert!(regression_power(n - 1, n - 1, 0.9, 0.5, 0.05) < 0.8);
        assert_eq!(trials_for_power(0.5, 0.5, 0.05, 0.8), None);
        let drop = smallest_detectable_drop(n, n, 0.9, 0.05, 0.8).unwrap();
        assert!(drop >= 0.5 - 1e-9, "{drop}");
        assert!(regression_power(n, n, 0.9, drop + RATE_STEP, 0.05) < 0.8);
        assert_eq!(smallest_detectable_drop(2, 2, 0.9, 0.05, 0.8), None);
        assert!(close(smallest_p(4, 4), 1.0 / 70.0));
    }

    #[test]
    fn a_sequential_case_records_fewer_trials_on_average() {
        let all = TrialsPolicy {
            min: 1,
            pass: PassRule::All,
            sequential: Some(3),
            drift: None,
        };
        // "all" of 3 stops at the first failure: 1 + p + p².
        let p: f64 = 0.6;
        let e = expected_sequential_trials(&all, p).unwrap();
        assert!(close(e, 1.0 + p + p * p), "{e}");
        assert_eq!(
            expected_sequential_trials(&TrialsPolicy::default(), p),
            None
        );
        assert!(close(expected_sequential_trials(&all, 1.0).unwrap(), 3.0));
    }
}
