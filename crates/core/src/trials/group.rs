//! Group-sequential drift: a current set of trials compared with its approved set at fixed
//! looks (after n₁ < n₂ < … < n_K current trials), stopping at the first look whose one-sided
//! Fisher test shows a regression — with the overall type-I error held at α.
//!
//! Each look k spends part of α by an alpha-spending function of the information fraction
//! t_k = n_k / n_K (Lan–DeMets): O'Brien–Fleming-type, α(t) = 2 − 2Φ(z_{1−α/2} / √t), which
//! spends almost nothing early and keeps nearly all of α for the last look, or Pocock-type,
//! α(t) = α·ln(1 + (e − 1)t), which spends evenly. The boundaries are exact for the binomial
//! case: look k rejects when Fisher's p is at most a nominal level ν_k, the largest p-value the
//! test can take at that look such that the probability of rejecting by look k, computed exactly
//! (a sum over every approved count and every path of current counts), is at most α(t_k) for
//! every common pass rate p on a grid of hundredths (0.01…0.99). The pass rate the two sets share
//! under no change is unknown, so the bound is taken over it.

use super::plan::binomial_pmf;
use super::stats;

/// How α is spent over the looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spending {
    /// Lan–DeMets O'Brien–Fleming-type: little early, nearly all of α at the last look.
    OBrienFleming,
    /// Lan–DeMets Pocock-type: about evenly.
    Pocock,
}

impl Spending {
    /// α spent by information fraction `t` (0 < t ≤ 1).
    pub fn spent(self, alpha: f64, t: f64) -> f64 {
        let t = t.clamp(0.0, 1.0);
        if t <= 0.0 {
            return 0.0;
        }
        match self {
            Spending::OBrienFleming => {
                let z = stats::normal_quantile(1.0 - alpha / 2.0);
                2.0 * (1.0 - normal_cdf(z / t.sqrt()))
            }
            Spending::Pocock => alpha * (1.0 + (std::f64::consts::E - 1.0) * t).ln(),
        }
    }

    /// Reads a user's name of it.
    pub fn parse(name: &str) -> Result<Spending, String> {
        match name {
            "obrien-fleming" => Ok(Spending::OBrienFleming),
            "pocock" => Ok(Spending::Pocock),
            _ => Err(format!(
                "unknown spending `{name}`; give \"obrien-fleming\" or \"pocock\""
            )),
        }
    }

    /// How a user names it.
    pub fn name(self) -> &'static str {
        match self {
            Spending::OBrienFleming => "obrien-fleming",
            Spending::Pocock => "pocock",
        }
    }
}

/// Φ, the standard normal distribution function.
fn normal_cdf(x: f64) -> f64 {
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
}

/// A group-sequential comparison: `n_a` approved trials, the current set's trial counts at each
/// look (increasing), α, and how it is spent.
#[derive(Debug, Clone, PartialEq)]
pub struct Design {
    /// Approved trials.
    pub n_a: u64,
    /// Current trials at each look.
    pub looks: Vec<u64>,
    /// The overall type-I error.
    pub alpha: f64,
    /// How it is spent.
    pub spending: Spending,
}

/// The common pass rates the type-I error is bounded over.
pub fn nuisance_grid() -> impl Iterator<Item = f64> {
    (1..100).map(|i| i as f64 / 100.0)
}

impl Design {
    /// Checks the looks: at least one, increasing, none above [`super::plan::MAX_PLANNED`].
    pub fn new(
        n_a: u64,
        looks: Vec<u64>,
        alpha: f64,
        spending: Spending,
    ) -> Result<Design, String> {
        let max = super::plan::MAX_PLANNED;
        if looks.is_empty() || looks.windows(2).any(|w| w[0] >= w[1]) || looks[0] == 0 {
            return Err("the looks must be increasing trial counts, from 1".to_owned());
        }
        if n_a == 0 || n_a > max || *looks.last().unwrap_or(&0) > max {
            return Err(format!("trial counts must be from 1 to {max}"));
        }
        if !(alpha > 0.0 && alpha < 1.0) {
            return Err(format!("α must be between 0 and 1, got {alpha}"));
        }
        Ok(Design {
            n_a,
            looks,
            alpha,
            spending,
        })
    }

    /// The α spent by each look.
    pub fn spent(&self) -> Vec<f64> {
        let last = *self.looks.last().expect("a design has a look") as f64;
        (self.looks.iter())
            .map(|&n| self.spending.spent(self.alpha, n as f64 / last))
            .collect()
    }

    /// The probability of rejecting at each look (and not before), with approved pass rate
    /// `p_a` and current `p_c`, given the nominal levels of the first looks: exact.
    pub fn rejections(&self, nominal: &[f64], p_a: f64, p_c: f64) -> Vec<f64> {
        let mut per_look = vec![0.0; nominal.len()];
        let weights = binomial_pmf(self.n_a, p_a);
        for (a, w) in weights.iter().enumerate() {
            if *w == 0.0 {
                continue;
            }
            let mut dist = vec![1.0f64];
            let mut before = 0u64;
            for (k, (&n, &level)) in self.looks.iter().zip(nominal).enumerate() {
                let step = binomial_pmf(n - before, p_c);
                let mut next = vec![0.0; n as usize + 1];
                for (c, d) in dist.iter().enumerate().filter(|(_, d)| **d > 0.0) {
                    for (x, s) in step.iter().enumerate() {
                        next[c + x] += d * s;
                    }
                }
                // Fewer current passes is more extreme: the test rejects up to a count.
                for c in 0..=n {
                    let p = stats::fisher_lower(a as u64, self.n_a, c, n);
                    if !stats::at_most(p, level) {
                        break;
                    }
                    per_look[k] += w * next[c as usize];
                    next[c as usize] = 0.0;
                }
                dist = next;
                before = n;
            }
        }
        per_look
    }

    /// The largest type-I error of rejecting by each look, over the common pass rates of
    /// [`nuisance_grid`].
    pub fn type_one(&self, nominal: &[f64]) -> Vec<f64> {
        let mut worst = vec![0.0f64; nominal.len()];
        for p in nuisance_grid() {
            let mut total = 0.0;
            for (k, r) in self.rejections(nominal, p, p).iter().enumerate() {
                total += r;
                worst[k] = worst[k].max(total);
            }
        }
        worst
    }

    /// The exact boundaries: each look's nominal level, the largest p-value the Fisher test
    /// can take there that keeps the type-I error of rejecting by that look within the α spent
    /// ([`Design::spent`]), the earlier looks' levels fixed. 0 where no p-value fits.
    pub fn boundaries(&self) -> Vec<f64> {
        let spent = self.spent();
        let mut nominal = vec![0.0; self.looks.len()];
        for (k, &n) in self.looks.iter().enumerate() {
            let mut candidates: Vec<f64> = (0..=self.n_a)
                .flat_map(|a| (0..=n).map(move |c| (a, c)))
                .map(|(a, c)| stats::fisher_lower(a, self.n_a, c, n))
                .collect();
            candidates.sort_by(f64::total_cmp);
            candidates.dedup_by(|x, y| (*x - *y).abs() <= *y * stats::SLACK);
            // The largest candidate that fits (fitting is monotone in the level).
            let (mut lo, mut hi) = (0usize, candidates.len());
            while lo < hi {
                let mid = (lo + hi) / 2;
                nominal[k] = candidates[mid];
                if self.type_one(&nominal[..=k])[k] <= spent[k] {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            nominal[k] = if lo == 0 { 0.0 } else { candidates[lo - 1] };
        }
        nominal
    }

    /// The power (rejecting at some look) and the expected number of current trials recorded,
    /// with approved pass rate `p_a` and current `p_c`.
    pub fn power(&self, nominal: &[f64], p_a: f64, p_c: f64) -> (f64, f64) {
        let r = self.rejections(nominal, p_a, p_c);
        let power: f64 = r.iter().sum();
        let last = *self.looks.last().expect("a design has a look") as f64;
        let stopped: f64 = (self.looks.iter().zip(&r))
            .map(|(&n, p)| n as f64 * p)
            .sum();
        (power, stopped + last * (1.0 - power))
    }
}

#[cfg(test)]
#[path = "group/tests.rs"]
mod tests;
