//! The contract's reference values, and properties of the tests.

use super::*;
use proptest::prelude::*;

fn close(actual: f64, expected: f64, digits: i32) {
    let tolerance = 0.5 * 10f64.powi(-digits);
    assert!(
        (actual - expected).abs() <= tolerance,
        "{actual} is not {expected} to {digits} decimals"
    );
}

#[test]
fn one_sided_fisher_matches_the_reference_values() {
    for (a, na, c, nc, p, digits) in [
        (4, 4, 0, 4, 0.014286, 6),
        (6, 6, 0, 6, 0.001082, 6),
        (8, 8, 0, 8, 0.0000777, 7),
        (8, 8, 4, 8, 0.038462, 6),
        (7, 8, 2, 8, 0.020280, 6),
        (4, 4, 2, 4, 0.214286, 6),
    ] {
        close(fisher_lower(a, na, c, nc), p, digits);
    }
}

#[test]
fn two_sided_fisher_matches_the_reference_values() {
    close(fisher_two_sided(0, 4, 4, 4), 0.028571, 6);
    close(fisher_two_sided(0, 8, 8, 8), 0.000155, 6);
    close(fisher_two_sided(1, 4, 7, 8), 0.066667, 6);
}

#[test]
fn mann_whitney_matches_the_reference_values() {
    let p = mann_whitney(&[100.0, 110.0, 120.0, 130.0], &[200.0, 210.0, 220.0, 230.0]);
    close(p.unwrap(), 0.028571, 6);
    let p = mann_whitney(&[3.0, 3.0, 4.0, 5.0], &[5.0, 6.0, 6.0, 7.0]);
    close(p.unwrap(), 0.057143, 6);
    assert_eq!(mann_whitney(&[1.0, 1.0], &[1.0, 1.0]), None, "all tied");
}

#[test]
fn the_normal_approximation_takes_over_past_twenty_values() {
    // 11 vs 11 fully separated: z = 3.94, p ≈ 8.1e-5 (the exact value, 2/C(22,11), is 2.9e-6).
    let a: Vec<f64> = (0..11).map(f64::from).collect();
    let c: Vec<f64> = (100..111).map(f64::from).collect();
    let p = mann_whitney(&a, &c).unwrap();
    let var = 11.0 * 11.0 / 12.0 * 23.0;
    let z = (66.0 - 11.0 * 23.0 / 2.0f64).abs() / f64::sqrt(var);
    close(p, libm::erfc(z / std::f64::consts::SQRT_2), 12);
    assert!(p > 2.0 / choose(22, 11));
}

#[test]
fn wilson_bounds_match_the_reference_values() {
    close(wilson_lower(8, 8, 0.95), 0.747276, 6);
    close(wilson_lower(6, 8, 0.95), 0.460153, 6);
    assert!(wilson_lower(8, 8, 0.95) >= 0.70);
    assert!(wilson_lower(8, 8, 0.95) < 0.75);
    let (lo, hi) = wilson_95(3, 4);
    assert!(lo < 0.75 && 0.75 < hi);
}

#[test]
fn the_normal_quantile_is_exact() {
    close(normal_quantile(0.975), 1.959963984540054, 12);
    close(normal_quantile(0.95), 1.6448536269514722, 12);
    close(normal_quantile(0.5), 0.0, 12);
    close(normal_quantile(0.001), -3.090232306167813, 10);
}

#[test]
fn pass_k_estimators_match_the_reference_values() {
    let all = |got: Vec<f64>, want: &[f64]| {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.into_iter().zip(want) {
            close(g, *w, 6);
        }
    };
    all(pass_hat_k(3, 4), &[0.75, 0.5, 0.25, 0.0]);
    all(pass_at_k(3, 4), &[0.75, 1.0, 1.0, 1.0]);
    all(pass_hat_k(2, 4), &[0.5, 0.166667, 0.0, 0.0]);
    all(pass_at_k(2, 4), &[0.5, 0.833333, 1.0, 1.0]);
}

#[test]
fn benjamini_hochberg_takes_the_largest_rank_under_its_line() {
    // m = 4, α = 0.05: lines 0.0125, 0.025, 0.0375, 0.05.
    assert_eq!(
        benjamini_hochberg(&[0.04, 0.001, 0.03, 0.2], 0.05),
        Some(0.0125)
    );
    close(
        benjamini_hochberg(&[0.03, 0.01, 0.02, 0.2], 0.05).unwrap(),
        0.0375,
        12,
    );
    assert_eq!(benjamini_hochberg(&[0.5, 0.2], 0.05), None);
    assert_eq!(benjamini_hochberg(&[], 0.05), None);
    assert_eq!(benjamini_hochberg(&[0.05], 0.05), Some(0.05));
}

#[test]
fn medians_of_even_counts_are_the_mean_of_the_middle_two() {
    assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    assert_eq!(median(&[5.0, 1.0, 3.0]), 3.0);
}

proptest! {
    #[test]
    fn fisher_p_values_lie_in_the_unit_interval_and_mirror(
        n_a in 1u64..14, n_c in 1u64..14, a_frac in 0.0f64..=1.0, c_frac in 0.0f64..=1.0,
    ) {
        let a = (a_frac * n_a as f64).round() as u64;
        let c = (c_frac * n_c as f64).round() as u64;
        for p in [
            fisher_lower(a, n_a, c, n_c),
            fisher_higher(a, n_a, c, n_c),
            fisher_two_sided(a, n_a, c, n_c),
        ] {
            prop_assert!(p > 0.0 && p <= 1.0, "{p}");
        }
        // Swapping the samples mirrors the one-sided tests and keeps the two-sided one.
        let close = |x: f64, y: f64| (x - y).abs() < 1e-9;
        prop_assert!(close(fisher_lower(a, n_a, c, n_c), fisher_higher(c, n_c, a, n_a)));
        prop_assert!(close(fisher_two_sided(a, n_a, c, n_c), fisher_two_sided(c, n_c, a, n_a)));
        // Swapping pass and fail mirrors the one-sided tests too.
        prop_assert!(close(
            fisher_lower(a, n_a, c, n_c),
            fisher_higher(n_a - a, n_a, n_c - c, n_c)
        ));
    }

    #[test]
    fn mann_whitney_is_symmetric_and_ignores_order(
        a in proptest::collection::vec(0u8..6, 1..9),
        c in proptest::collection::vec(0u8..6, 1..9),
        big in any::<bool>(),
    ) {
        let scale = if big { 3.0 } else { 1.0 };
        let a: Vec<f64> = a.iter().map(|&v| f64::from(v) * scale).collect();
        let mut c: Vec<f64> = c.iter().map(|&v| f64::from(v) * scale).collect();
        let p = mann_whitney(&a, &c);
        if let Some(p) = p {
            prop_assert!(p > 0.0 && p <= 1.0 + 1e-12, "{p}");
        }
        let swapped = mann_whitney(&c, &a);
        prop_assert_eq!(p.map(|p| (p * 1e9).round()), swapped.map(|p| (p * 1e9).round()));
        c.reverse();
        let shuffled = mann_whitney(&a, &c);
        prop_assert_eq!(p, shuffled);
    }

    #[test]
    fn pass_estimators_are_probabilities_and_meet_at_k_1(c in 0u64..12, extra in 0u64..12) {
        let n = (c + extra).max(1);
        let c = c.min(n);
        let hat = pass_hat_k(c, n);
        let at = pass_at_k(c, n);
        prop_assert!((hat[0] - c as f64 / n as f64).abs() < 1e-12);
        prop_assert!((at[0] - c as f64 / n as f64).abs() < 1e-12);
        for (h, a) in hat.iter().zip(&at) {
            prop_assert!((0.0..=1.0 + 1e-12).contains(h) && (0.0..=1.0 + 1e-12).contains(a));
            prop_assert!(h <= &(a + 1e-12));
        }
    }
}
