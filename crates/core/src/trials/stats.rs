//! The statistics of trials, exact where the contract says exact: Fisher's exact test (one- and
//! two-sided), the Mann–Whitney U test (exact permutation distribution up to 20 values, else
//! the tie-corrected normal approximation), Wilson bounds, the pass^k / pass@k estimators and
//! the Benjamini–Hochberg threshold. Pure functions of counts and numbers.

/// The slack of every comparison of a p-value with a threshold (`p ≤ t·(1 + 10⁻⁷)`), and of the
/// two-sided Fisher test's "as or less likely" rule.
pub(crate) const SLACK: f64 = 1e-7;

/// Whether `p` is at most `threshold`, with the contract's relative slack.
pub(crate) fn at_most(p: f64, threshold: f64) -> bool {
    p <= threshold * (1.0 + SLACK)
}

/// `ln C(n, k)`.
pub(crate) fn ln_choose(n: u64, k: u64) -> f64 {
    if k > n {
        return f64::NEG_INFINITY;
    }
    let lg = |x: u64| libm::lgamma(x as f64 + 1.0);
    lg(n) - lg(k) - lg(n - k)
}

/// `C(n, k)` as a float (exact below 2⁵³).
pub(crate) fn choose(n: u64, k: u64) -> f64 {
    if k > n {
        return 0.0;
    }
    let k = k.min(n - k);
    let mut v = 1.0f64;
    for i in 0..k {
        v = v * (n - i) as f64 / (i + 1) as f64;
    }
    v.round()
}

/// The hypergeometric probabilities of the second row's successes in a 2×2 table with these
/// margins: index x is P(X = x), for x from `lo` (returned too).
fn hypergeometric(n_a: u64, n_c: u64, successes: u64) -> (u64, Vec<f64>) {
    let total = n_a + n_c;
    let lo = successes.saturating_sub(n_a);
    let hi = successes.min(n_c);
    let denom = ln_choose(total, n_c);
    let probs = (lo..=hi)
        .map(|x| (ln_choose(successes, x) + ln_choose(total - successes, n_c - x) - denom).exp())
        .collect();
    (lo, probs)
}

/// One-sided Fisher exact test that the second sample's rate is lower: with `a` of `n_a`
/// successes in A and `c` of `n_c` in C, P(X ≤ c) given the margins.
pub(crate) fn fisher_lower(a: u64, n_a: u64, c: u64, n_c: u64) -> f64 {
    let (lo, probs) = hypergeometric(n_a, n_c, a + c);
    let upto = (c - lo) as usize;
    probs[..=upto].iter().sum::<f64>().min(1.0)
}

/// One-sided Fisher exact test that the second sample's rate is higher: P(X ≥ c).
pub(crate) fn fisher_higher(a: u64, n_a: u64, c: u64, n_c: u64) -> f64 {
    let (lo, probs) = hypergeometric(n_a, n_c, a + c);
    let from = (c - lo) as usize;
    probs[from..].iter().sum::<f64>().min(1.0)
}

/// Two-sided Fisher exact test: the probability of every table (with these margins) at most as
/// likely as the observed one, `P ≤ P_observed·(1 + 10⁻⁷)`.
pub(crate) fn fisher_two_sided(a: u64, n_a: u64, c: u64, n_c: u64) -> f64 {
    let (lo, probs) = hypergeometric(n_a, n_c, a + c);
    let observed = probs[(c - lo) as usize];
    let bound = observed * (1.0 + SLACK);
    probs.iter().filter(|&&p| p <= bound).sum::<f64>().min(1.0)
}

/// Midranks of `values` (1-based; ties share the mean of their ranks), in input order.
fn midranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // Ranks start+1 ..= end, mean (start + 1 + end) / 2.
        let rank = (start + 1 + end) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = rank;
        }
        start = end;
    }
    ranks
}

/// The two-sided Mann–Whitney U test of `a` against `c`: the exact permutation distribution of
/// midrank sums when there are at most 20 values, else the normal approximation with the
/// tie-corrected variance and no continuity correction. `None` when it cannot say anything
/// (an empty side, or every value equal).
pub(crate) fn mann_whitney(a: &[f64], c: &[f64]) -> Option<f64> {
    let (n_a, n_c) = (a.len(), c.len());
    if n_a == 0 || n_c == 0 {
        return None;
    }
    let all: Vec<f64> = a.iter().chain(c).copied().collect();
    if all.iter().all(|v| *v == all[0]) {
        return None;
    }
    let ranks = midranks(&all);
    let n = all.len();
    if n <= 20 {
        // Doubled midranks are integers: the distribution of their sums over every choice of
        // n_a of them, counted exactly.
        let doubled: Vec<usize> = ranks.iter().map(|r| (r * 2.0).round() as usize).collect();
        let max_sum: usize = doubled.iter().sum();
        let mut ways = vec![vec![0u64; max_sum + 1]; n_a + 1];
        ways[0][0] = 1;
        for &r in &doubled {
            for j in (1..=n_a).rev() {
                for s in (r..=max_sum).rev() {
                    ways[j][s] += ways[j - 1][s - r];
                }
            }
        }
        let mu2 = (n_a * (n + 1)) as i64;
        let w2: i64 = doubled[..n_a].iter().sum::<usize>() as i64;
        let observed = (w2 - mu2).abs();
        let total: u64 = ways[n_a].iter().sum();
        let extreme: u64 = (ways[n_a].iter().enumerate())
            .filter(|(s, _)| (*s as i64 - mu2).abs() >= observed)
            .map(|(_, w)| *w)
            .sum();
        return Some((extreme as f64 / total as f64).min(1.0));
    }
    let w: f64 = ranks[..n_a].iter().sum();
    let (na, nc, nf) = (n_a as f64, n_c as f64, n as f64);
    let mu = na * (nf + 1.0) / 2.0;
    let mut ties = 0.0;
    let mut sorted = all.clone();
    sorted.sort_by(f64::total_cmp);
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i + 1;
        while j < sorted.len() && sorted[j] == sorted[i] {
            j += 1;
        }
        let t = (j - i) as f64;
        ties += t * t * t - t;
        i = j;
    }
    let var = na * nc / 12.0 * ((nf + 1.0) - ties / (nf * (nf - 1.0)));
    if var <= 0.0 {
        return None;
    }
    let z = (w - mu).abs() / var.sqrt();
    Some(libm::erfc(z / std::f64::consts::SQRT_2).min(1.0))
}

/// The standard normal quantile Φ⁻¹(p), for 0 < p < 1: Acklam's rational approximation refined
/// by one Halley step on `erfc` (full double precision).
pub(crate) fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e+01,
        2.209460984245205e+02,
        -2.759285104469687e+02,
        1.383_577_518_672_69e2,
        -3.066479806614716e+01,
        2.506628277459239e+00,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e+01,
        1.615858368580409e+02,
        -1.556989798598866e+02,
        6.680131188771972e+01,
        -1.328068155288572e+01,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-03,
        -3.223964580411365e-01,
        -2.400758277161838e+00,
        -2.549732539343734e+00,
        4.374664141464968e+00,
        2.938163982698783e+00,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-03,
        3.224671290700398e-01,
        2.445134137142996e+00,
        3.754408661907416e+00,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    let x = if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    };
    // One Halley step: e = Φ(x) − p.
    let e = 0.5 * libm::erfc(-x / std::f64::consts::SQRT_2) - p;
    let u = e * (2.0 * std::f64::consts::PI).sqrt() * (x * x / 2.0).exp();
    x - u / (1.0 + x * u / 2.0)
}

/// The Wilson score bounds `(lower, upper)` of a pass rate of `c` in `n` at normal quantile `z`.
pub(crate) fn wilson(c: u64, n: u64, z: f64) -> (f64, f64) {
    let (c, n) = (c as f64, n as f64);
    let p = c / n;
    let z2 = z * z;
    let centre = p + z2 / (2.0 * n);
    let spread = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    let denom = 1.0 + z2 / n;
    (
        ((centre - spread) / denom).max(0.0),
        ((centre + spread) / denom).min(1.0),
    )
}

/// The one-sided lower Wilson bound of `c` in `n` at confidence `confidence`.
pub(crate) fn wilson_lower(c: u64, n: u64, confidence: f64) -> f64 {
    wilson(c, n, normal_quantile(confidence)).0
}

/// The two-sided 95 % Wilson interval of `c` in `n`.
pub(crate) fn wilson_95(c: u64, n: u64) -> (f64, f64) {
    wilson(c, n, normal_quantile(0.975))
}

/// `pass^k = C(c,k)/C(n,k)` for k = 1…n: the chance that k trials drawn without replacement
/// all pass (tau-bench's estimator).
pub(crate) fn pass_hat_k(c: u64, n: u64) -> Vec<f64> {
    (1..=n)
        .map(|k| {
            (0..k)
                .map(|i| (c as f64 - i as f64).max(0.0) / (n - i) as f64)
                .product()
        })
        .collect()
}

/// `pass@k = 1 − C(n−c,k)/C(n,k)` for k = 1…n: the chance that at least one of k trials drawn
/// without replacement passes (Chen et al.'s unbiased estimator).
pub(crate) fn pass_at_k(c: u64, n: u64) -> Vec<f64> {
    let fails = n - c;
    (1..=n)
        .map(|k| {
            let none: f64 = (0..k)
                .map(|i| (fails as f64 - i as f64).max(0.0) / (n - i) as f64)
                .product();
            1.0 - none
        })
        .collect()
}

/// The Benjamini–Hochberg threshold at `alpha` over `p_values`: α·k/m for the largest rank k
/// whose p-value is at most α·k/m, `None` when there is no such k (or no p-value).
pub(crate) fn benjamini_hochberg(p_values: &[f64], alpha: f64) -> Option<f64> {
    let mut sorted = p_values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let m = sorted.len() as f64;
    (1..=sorted.len())
        .rev()
        .map(|k| (sorted[k - 1], alpha * k as f64 / m))
        .find(|&(p, t)| at_most(p, t))
        .map(|(_, t)| t)
}

/// The median (the mean of the middle two of an even count).
pub(crate) fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests;
