//! The group-sequential boundaries hold α exactly (every look, every common pass rate of the
//! grid) and under seeded simulation, and lose little power against the fixed-k test.

use super::*;
use crate::trials::plan::regression_power;

const ALPHA: f64 = 0.05;

/// A small deterministic generator (xorshift64*), uniform in [0, 1).
struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn trials(&mut self, n: u64, p: f64) -> u64 {
        (0..n).filter(|_| self.uniform() < p).count() as u64
    }
}

/// Runs the design `runs` times (approved at `p_a`, current at `p_c`): the share rejected and
/// the mean current trials recorded.
fn simulate(
    d: &Design,
    nominal: &[f64],
    (p_a, p_c): (f64, f64),
    runs: u32,
    seed: u64,
) -> (f64, f64) {
    let mut rng = Rng(seed);
    let (mut rejected, mut recorded) = (0u32, 0u64);
    for _ in 0..runs {
        let a = rng.trials(d.n_a, p_a);
        let (mut c, mut before) = (0, 0);
        for (k, &n) in d.looks.iter().enumerate() {
            c += rng.trials(n - before, p_c);
            before = n;
            let stop = stats::at_most(stats::fisher_lower(a, d.n_a, c, n), nominal[k]);
            if stop || k + 1 == d.looks.len() {
                recorded += n;
                rejected += u32::from(stop);
                break;
            }
        }
    }
    (rejected as f64 / runs as f64, recorded as f64 / runs as f64)
}

#[test]
fn the_spending_functions_spend_alpha_by_the_last_look() {
    // Reference values from SciPy (norm.cdf, norm.ppf) at α = 0.05.
    for (t, obf, pocock) in [
        (0.25, 8.857543832130332e-05, 0.01786870097543942),
        (0.5, 0.005574596680784305, 0.031005725347913876),
        (0.75, 0.023625121317601305, 0.04139944696214349),
        (1.0, 0.05, 0.05),
    ] {
        let got = Spending::OBrienFleming.spent(ALPHA, t);
        assert!(
            (got - obf).abs() <= 1e-9 * obf.max(1e-3),
            "{t}: {got} {obf}"
        );
        let got = Spending::Pocock.spent(ALPHA, t);
        assert!((got - pocock).abs() <= 1e-12, "{t}: {got} {pocock}");
    }
}

#[test]
fn the_exact_type_one_error_stays_within_what_each_look_spent() {
    for spending in [Spending::OBrienFleming, Spending::Pocock] {
        for (n_a, looks) in [
            (8, vec![4, 8]),
            (12, vec![4, 8, 12]),
            (16, vec![4, 8, 12, 16]),
        ] {
            let d = Design::new(n_a, looks, ALPHA, spending).unwrap();
            let nominal = d.boundaries();
            let worst = d.type_one(&nominal);
            for ((w, s), v) in worst.iter().zip(d.spent()).zip(&nominal) {
                assert!(*w <= s, "{d:?}: {w} > {s} (levels {nominal:?})");
                assert!((0.0..=1.0).contains(v));
            }
            assert!(worst.last().unwrap() <= &ALPHA);
        }
    }
}

#[test]
fn simulation_agrees_type_one_error_holds_and_power_matches_the_fixed_test() {
    const RUNS: u32 = 20_000;
    let sigma = |p: f64| (p * (1.0 - p) / RUNS as f64).sqrt();
    for (s, spending) in [Spending::OBrienFleming, Spending::Pocock]
        .into_iter()
        .enumerate()
    {
        let d = Design::new(16, vec![4, 8, 12, 16], ALPHA, spending).unwrap();
        let nominal = d.boundaries();
        for (i, p) in [0.3, 0.6, 0.9].into_iter().enumerate() {
            let seed = 17 + (s * 8 + i) as u64;
            let (rate, _) = simulate(&d, &nominal, (p, p), RUNS, seed);
            let exact: f64 = d.rejections(&nominal, p, p).iter().sum();
            assert!(exact <= ALPHA, "{spending:?} {p}: {exact}");
            let near = (rate - exact).abs() <= 4.0 * sigma(exact) + 1e-4;
            assert!(near, "{spending:?} {p}: simulated {rate}, exact {exact}");
            assert!(
                rate <= ALPHA + 4.0 * sigma(ALPHA),
                "{spending:?} {p}: {rate}"
            );
        }
        // A drop from 0.9 to 0.5: the fixed test of all 16 trials, its level calibrated the
        // same way (one look), against the sequential one.
        let one = Design::new(16, vec![16], ALPHA, spending).unwrap();
        let (fixed, _) = one.power(&one.boundaries(), 0.9, 0.5);
        let (power, expected) = d.power(&nominal, 0.9, 0.5);
        let (simulated, mean) = simulate(&d, &nominal, (0.9, 0.5), RUNS, 99 + s as u64);
        assert!(
            (simulated - power).abs() <= 4.0 * sigma(power),
            "{simulated} {power}"
        );
        assert!((mean - expected).abs() <= 0.1, "{mean} {expected}");
        let close = (power - fixed).abs() <= 0.02;
        assert!(
            close,
            "{spending:?}: power {power} against the fixed test's {fixed}"
        );
        assert!(expected < 14.0, "{spending:?}: {expected}");
        // Fisher's test at α itself (what `check` runs on a whole set) is conservative: the
        // exact boundaries lose nothing against it.
        assert!(
            power >= regression_power(16, 16, 0.9, 0.5, ALPHA),
            "{power}"
        );
    }
}
