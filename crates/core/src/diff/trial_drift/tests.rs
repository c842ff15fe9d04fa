use super::*;

fn trial(passed: bool, tools: &[&str]) -> TrialFacts {
    TrialFacts {
        passed,
        oracles: [
            ("0:tool-called".to_owned(), passed),
            ("run-completed".to_owned(), true),
        ]
        .into(),
        tools: tools.iter().map(|t| t.to_string()).collect(),
        completed: true,
        numbers: [tools.len() as f64, 1.0, 100.0, 10.0],
        sequence: tools.iter().map(|t| t.to_string()).collect(),
        calls: tools
            .iter()
            .map(|t| (t.to_string(), "{}".to_owned()))
            .collect(),
    }
}

fn side(passing: usize, n: usize, tools: &[&str]) -> Vec<TrialFacts> {
    (0..n).map(|i| trial(i < passing, tools)).collect()
}

#[test]
fn a_regression_of_the_verdict_is_tested_once_and_bonferroni_adjusts_the_rest() {
    let got = compare_sets(&side(4, 4, &["a"]), &side(0, 4, &["a"]), 0.2, false);
    let verdict: Vec<&SetTest> = got
        .tests
        .iter()
        .filter(|t| t.family == Family::Verdict)
        .collect();
    assert_eq!(verdict.len(), 1);
    assert!((verdict[0].p - 0.014286).abs() < 1e-6);
    assert_eq!(
        verdict[0].p_adjusted, verdict[0].p,
        "one test in the family"
    );
    // The oracle's regression is the only blocking test; the two improvements are warnings,
    // each adjusted by m = 2.
    let blocking: Vec<&SetTest> = got
        .tests
        .iter()
        .filter(|t| t.family == Family::Blocking)
        .collect();
    assert_eq!(blocking.len(), 1);
    let warnings: Vec<&SetTest> = got
        .tests
        .iter()
        .filter(|t| t.family == Family::Warnings)
        .collect();
    assert_eq!(warnings.len(), 2);
    assert!(
        warnings
            .iter()
            .all(|t| t.p_adjusted == (2.0 * t.p).min(1.0))
    );
    assert_eq!(got.family_p(Family::Verdict), Some(verdict[0].p));
}

#[test]
fn identical_outcomes_everywhere_are_not_counted() {
    let got = compare_sets(&side(4, 4, &["a"]), &side(4, 4, &["a"]), 0.2, false);
    assert!(got.tests.is_empty(), "{:?}", got.tests);
    assert!(got.structural.is_empty());
    assert_eq!(got.family_p(Family::Verdict), None);
}

#[test]
fn a_tool_called_on_one_side_only_is_tested_two_sided() {
    let got = compare_sets(&side(4, 4, &[]), &side(4, 4, &["x"]), 0.2, false);
    let t = got
        .tests
        .iter()
        .find(|t| t.category == DriftCategory::ToolUsageChanged)
        .unwrap();
    assert!((t.p - 0.028571).abs() < 1e-6);
    assert_eq!(t.approved, Side::Counts { n: 4, passed: 0 });
    assert_eq!(t.current, Side::Counts { n: 4, passed: 4 });
}

#[test]
fn usage_is_tested_only_past_the_median_rule() {
    let mut a = side(4, 4, &["a"]);
    let mut c = side(4, 4, &["a"]);
    for (i, t) in a.iter_mut().enumerate() {
        t.numbers[2] = 100.0 + 10.0 * i as f64;
    }
    for (i, t) in c.iter_mut().enumerate() {
        t.numbers[2] = 110.0 + 10.0 * i as f64;
    }
    let small = compare_sets(&a, &c, 0.2, false);
    assert!(
        small
            .tests
            .iter()
            .all(|t| t.category != DriftCategory::UsageChanged)
    );
    for (i, t) in c.iter_mut().enumerate() {
        t.numbers[2] = 200.0 + 10.0 * i as f64;
    }
    let large = compare_sets(&a, &c, 0.2, false);
    let t = large
        .tests
        .iter()
        .find(|t| t.category == DriftCategory::UsageChanged)
        .unwrap();
    assert!((t.p - 0.028571).abs() < 1e-6);
    assert_eq!(
        t.approved,
        Side::Median {
            n: 4,
            median: 115.0
        }
    );
}

#[test]
fn changed_oracles_suppress_the_verdict_and_oracle_tests() {
    let a = side(4, 4, &["a"]);
    let mut c = side(0, 4, &["a"]);
    for t in &mut c {
        t.oracles.insert("1:max-tool-calls".to_owned(), true);
    }
    let got = compare_sets(&a, &c, 0.2, false);
    assert_eq!(got.structural[0].category, DriftCategory::OraclesChanged);
    assert!(
        got.tests
            .iter()
            .all(|t| t.category != DriftCategory::Regression)
    );
}

#[test]
fn unseen_behaviour_is_reported_only_when_strict() {
    let a = side(4, 4, &["a"]);
    let c = side(4, 4, &["b"]);
    assert!(compare_sets(&a, &c, 0.2, false).structural.is_empty());
    let strict = compare_sets(&a, &c, 0.2, true);
    assert_eq!(strict.structural.len(), 1);
    assert_eq!(
        strict.structural[0].category,
        DriftCategory::UnseenBehaviour
    );
    assert!(
        strict.structural[0]
            .detail
            .starts_with("4 of 4 current trials")
    );
}

#[test]
fn shuffling_trials_changes_nothing() {
    let a = side(3, 8, &["a"]);
    let mut c = side(1, 8, &["a"]);
    let before = compare_sets(&a, &c, 0.2, true);
    c.reverse();
    let mut a2 = a.clone();
    a2.rotate_left(3);
    assert_eq!(compare_sets(&a2, &c, 0.2, true), before);
}

#[test]
fn thresholds_are_benjamini_hochberg_per_family_and_power_is_judged() {
    let cases: Vec<BTreeMap<Family, f64>> = vec![
        [(Family::Verdict, 0.001)].into(),
        [(Family::Verdict, 0.2), (Family::Blocking, 0.5)].into(),
    ];
    let t = thresholds(cases.iter(), 0.05);
    assert_eq!(t[&Family::Verdict], Some(0.025));
    assert_eq!(t[&Family::Blocking], None);
    assert_eq!(t[&Family::Warnings], None);
    let under = underpowered(2, 2, 0.05).unwrap();
    assert!(
        under.starts_with("2 and 2 trials cannot show a regression at α = 0.05"),
        "{under}"
    );
    assert_eq!(underpowered(4, 4, 0.05), None);
}

#[test]
fn a_run_status_that_changes_in_every_trial_is_tested_two_sided() {
    let a = side(4, 4, &["a"]);
    let mut c = side(4, 4, &["a"]);
    for t in &mut c {
        t.completed = false;
    }
    let got = compare_sets(&a, &c, 0.2, false);
    let t = got
        .tests
        .iter()
        .find(|t| t.category == DriftCategory::StatusChanged)
        .unwrap();
    assert_eq!(t.family, Family::Blocking);
    assert!((t.p - 0.028571).abs() < 1e-6);
}
