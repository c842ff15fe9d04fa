//! Drift between two sets of trials of one case: statistical tests over what each trial did,
//! never a comparison of trials one to one.
//!
//! Per trial, from its normalised behaviour: its verdict and each oracle's outcome (pass / not
//! pass); for each tool, whether it was called; whether the run completed; and four numbers
//! (tool calls, inference requests, input and output tokens). The tests fall in three families
//! ([`Family`]); within a case each test's p is multiplied by the number of counted tests of its
//! family (Bonferroni), and across cases [`thresholds`] applies Benjamini–Hochberg per family.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{DriftCategory, DriftFinding, DriftMode};
use crate::baseline::Behaviour;
use crate::trials::stats;

/// The family a test belongs to, for multiple comparisons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// The regression of the trial verdict: one test per case.
    Verdict,
    /// The other blocking tests of the case.
    Blocking,
    /// The warnings (improvements, usage).
    Warnings,
}

impl Family {
    /// Every family, in order.
    pub const ALL: [Family; 3] = [Family::Verdict, Family::Blocking, Family::Warnings];
}

/// What one side of a test saw.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Side {
    /// Trials, and how many of them had the property (passed, called the tool, completed).
    Counts {
        /// Trials.
        n: u64,
        /// With the property.
        passed: u64,
    },
    /// Trials, and the median of a number.
    Median {
        /// Trials.
        n: u64,
        /// The median.
        median: f64,
    },
}

/// One counted test of a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetTest {
    /// Its family.
    pub family: Family,
    /// The finding it reports when significant.
    pub category: DriftCategory,
    /// What was tested, in a sentence.
    pub detail: String,
    /// The test's p-value.
    pub p: f64,
    /// `min(1, m·p)`, m the counted tests of its family in the case.
    pub p_adjusted: f64,
    /// The approved set.
    pub approved: Side,
    /// The current set.
    pub current: Side,
}

/// What a trial did, as the set tests see it.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialFacts {
    /// Every oracle passed.
    pub passed: bool,
    /// Each oracle's outcome by its baseline key (`<index>:<type>`, `run-completed`).
    pub oracles: BTreeMap<String, bool>,
    /// The tools it called.
    pub tools: BTreeSet<String>,
    /// Its run status is `completed`.
    pub completed: bool,
    /// Tool calls, inference requests, input tokens, output tokens.
    pub numbers: [f64; 4],
    /// Tool names in order (sorted within a batch, as behaviours keep them).
    pub sequence: Vec<String>,
    /// (tool, canonical arguments) of each call.
    pub calls: BTreeSet<(String, String)>,
}

const NUMBER_NAMES: [&str; 4] = [
    "tool calls",
    "inference requests",
    "input tokens",
    "output tokens",
];

impl TrialFacts {
    /// The facts of one normalised behaviour.
    pub fn of(b: &Behaviour) -> TrialFacts {
        let oracles: BTreeMap<String, bool> = (b.oracles.iter())
            .map(|(k, v)| (k.clone(), v == "pass"))
            .collect();
        TrialFacts {
            passed: oracles.values().all(|p| *p),
            oracles,
            tools: b.tool_calls.iter().map(|c| c.tool.clone()).collect(),
            completed: b.status == "completed",
            numbers: [
                b.tool_calls.len() as f64,
                b.usage.requests as f64,
                b.usage.input_tokens as f64,
                b.usage.output_tokens as f64,
            ],
            sequence: b.tool_calls.iter().map(|c| c.tool.clone()).collect(),
            calls: (b.tool_calls.iter())
                .map(|c| (c.tool.clone(), c.args.to_string()))
                .collect(),
        }
    }
}

/// A finding without a p-value: `oracles-changed` and `unseen-behaviour`.
#[derive(Debug, Clone, PartialEq)]
pub struct Structural {
    /// `oracles-changed` or `unseen-behaviour`.
    pub category: DriftCategory,
    /// What changed.
    pub detail: String,
}

/// The set tests of one case, before the run's thresholds are known.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SetComparison {
    /// Every counted test, with its within-case adjusted p.
    pub tests: Vec<SetTest>,
    /// Findings that need no test.
    pub structural: Vec<Structural>,
}

impl SetComparison {
    /// The case's p-value of `family`: its smallest adjusted p (`None`: no counted test).
    pub fn family_p(&self, family: Family) -> Option<f64> {
        (self.tests.iter())
            .filter(|t| t.family == family)
            .map(|t| t.p_adjusted)
            .min_by(f64::total_cmp)
    }
}

fn counts(n: usize, passed: usize) -> Side {
    Side::Counts {
        n: n as u64,
        passed: passed as u64,
    }
}

/// Compares the approved trials `a` with the current trials `c` (each at least one).
/// `tolerance` is the usage tolerance (0.2 = 20 %); `strict` adds `unseen-behaviour`.
pub fn compare_sets(
    a: &[TrialFacts],
    c: &[TrialFacts],
    tolerance: f64,
    strict: bool,
) -> SetComparison {
    let mut raw: Vec<(Family, DriftCategory, String, f64, Side, Side)> = Vec::new();
    let mut structural = Vec::new();
    let (na, nc) = (a.len(), c.len());
    // A pass-rate test pair (regression, improvement) over a property of each trial.
    let rate_tests =
        |raw: &mut Vec<_>, what: &str, family: Family, of: &dyn Fn(&TrialFacts) -> bool| {
            let pa = a.iter().filter(|t| of(t)).count();
            let pc = c.iter().filter(|t| of(t)).count();
            // The same outcome in every trial of both sides: not counted.
            if (pa == na && pc == nc) || (pa == 0 && pc == 0) {
                return;
            }
            let (sa, sc) = (counts(na, pa), counts(nc, pc));
            let (pa, pc, na, nc) = (pa as u64, pc as u64, na as u64, nc as u64);
            raw.push((
                family,
                DriftCategory::Regression,
                format!("{what}: passed {pa}/{na} approved trials, {pc}/{nc} current"),
                stats::fisher_lower(pa, na, pc, nc),
                sa,
                sc,
            ));
            raw.push((
                Family::Warnings,
                DriftCategory::Improvement,
                format!("{what}: passed {pa}/{na} approved trials, {pc}/{nc} current"),
                stats::fisher_higher(pa, na, pc, nc),
                sa,
                sc,
            ));
        };
    let keys = |side: &[TrialFacts]| -> BTreeSet<String> {
        side.iter()
            .flat_map(|t| t.oracles.keys().cloned())
            .collect()
    };
    let (keys_a, keys_c) = (keys(a), keys(c));
    if keys_a != keys_c {
        let list = |k: &BTreeSet<String>| k.iter().cloned().collect::<Vec<_>>().join(", ");
        structural.push(Structural {
            category: DriftCategory::OraclesChanged,
            detail: format!(
                "the scenario's oracles changed: approved [{}], current [{}]; the verdict and oracle tests are not run",
                list(&keys_a),
                list(&keys_c)
            ),
        });
    } else {
        rate_tests(&mut raw, "the trial verdict", Family::Verdict, &|t| {
            t.passed
        });
        for key in keys_a.iter().filter(|k| k.as_str() != "run-completed") {
            let what = format!("oracle `{key}`");
            rate_tests(&mut raw, &what, Family::Blocking, &|t| {
                t.oracles.get(key).copied().unwrap_or(false)
            });
        }
    }
    let two_sided = |raw: &mut Vec<_>, category, what: String, of: &dyn Fn(&TrialFacts) -> bool| {
        let pa = a.iter().filter(|t| of(t)).count();
        let pc = c.iter().filter(|t| of(t)).count();
        if (pa == na && pc == nc) || (pa == 0 && pc == 0) {
            return;
        }
        let p = stats::fisher_two_sided(pa as u64, na as u64, pc as u64, nc as u64);
        raw.push((
            Family::Blocking,
            category,
            what,
            p,
            counts(na, pa),
            counts(nc, pc),
        ));
    };
    let tools: BTreeSet<&String> = a.iter().chain(c).flat_map(|t| &t.tools).collect();
    for tool in tools {
        let what = format!("tool `{tool}` called");
        two_sided(&mut raw, DriftCategory::ToolUsageChanged, what, &|t| {
            t.tools.contains(tool)
        });
    }
    two_sided(
        &mut raw,
        DriftCategory::StatusChanged,
        "run status `completed`".to_owned(),
        &|t| t.completed,
    );
    for (i, name) in NUMBER_NAMES.iter().enumerate() {
        let va: Vec<f64> = a.iter().map(|t| t.numbers[i]).collect();
        let vc: Vec<f64> = c.iter().map(|t| t.numbers[i]).collect();
        let (ma, mc) = (stats::median(&va), stats::median(&vc));
        if (mc - ma).abs() <= f64::max(1.0, tolerance * ma) {
            continue;
        }
        let Some(p) = stats::mann_whitney(&va, &vc) else {
            continue;
        };
        raw.push((
            Family::Warnings,
            DriftCategory::UsageChanged,
            format!("median {name}: {ma} approved, {mc} current"),
            p,
            Side::Median {
                n: na as u64,
                median: ma,
            },
            Side::Median {
                n: nc as u64,
                median: mc,
            },
        ));
    }
    if strict {
        let seen_sequences: BTreeSet<&Vec<String>> = a.iter().map(|t| &t.sequence).collect();
        let seen_calls: BTreeSet<&(String, String)> = a.iter().flat_map(|t| &t.calls).collect();
        let new_sequences = c
            .iter()
            .filter(|t| !seen_sequences.contains(&t.sequence))
            .count();
        let new_calls: BTreeSet<&(String, String)> = (c.iter().flat_map(|t| &t.calls))
            .filter(|k| !seen_calls.contains(k))
            .collect();
        if new_sequences > 0 || !new_calls.is_empty() {
            let mut detail = format!(
                "{new_sequences} of {nc} current trials follow a tool sequence no approved trial followed"
            );
            if let Some((tool, args)) = new_calls.iter().next() {
                detail.push_str(&format!(
                    "; {} (tool, arguments) pair(s) no approved trial used, such as `{tool}` with {}",
                    new_calls.len(),
                    short(args)
                ));
            }
            structural.push(Structural {
                category: DriftCategory::UnseenBehaviour,
                detail,
            });
        }
    }
    let in_family = |f: Family| raw.iter().filter(|t| t.0 == f).count() as f64;
    let m: BTreeMap<Family, f64> = Family::ALL.iter().map(|&f| (f, in_family(f))).collect();
    let tests = raw
        .into_iter()
        .map(|(family, category, detail, p, approved, current)| SetTest {
            family,
            category,
            detail,
            p,
            p_adjusted: (m[&family] * p).min(1.0),
            approved,
            current,
        })
        .collect();
    SetComparison { tests, structural }
}

/// At most 120 characters of `s`, `…` marking a cut.
fn short(s: &str) -> String {
    match s.char_indices().nth(120) {
        None => s.to_owned(),
        Some((at, _)) => format!("{}…", &s[..at]),
    }
}

/// A drift finding of a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseFinding {
    /// Category id.
    pub category: DriftCategory,
    /// What moved.
    pub detail: String,
    /// The test's p-value (`null` for findings without a test).
    pub p: Option<f64>,
    /// Its within-case adjusted p.
    pub p_adjusted: Option<f64>,
    /// The approved set.
    pub approved: Option<Side>,
    /// The current set.
    pub current: Option<Side>,
    /// Whether it fails the run under the `--drift` mode in force.
    pub fails: bool,
}

impl CaseFinding {
    /// A finding without a test (`new`, `trials-changed`, `oracles-changed`…), its `fails` set
    /// from `mode`.
    pub fn plain(category: DriftCategory, detail: String, mode: DriftMode) -> CaseFinding {
        CaseFinding {
            category,
            detail,
            p: None,
            p_adjusted: None,
            approved: None,
            current: None,
            fails: category.fails(mode),
        }
    }

    /// A single trace's per-trace finding, as its case line shows it.
    pub fn of_trace(d: &DriftFinding) -> CaseFinding {
        CaseFinding {
            category: d.category,
            detail: d.detail.clone(),
            p: None,
            p_adjusted: None,
            approved: None,
            current: None,
            fails: d.fails,
        }
    }

    /// The finding as a per-trace drift finding (for `diff`'s list): its p-values in the
    /// detail.
    pub fn to_drift(&self) -> DriftFinding {
        // The detail names both sides' counts or medians already.
        let mut detail = self.detail.clone();
        if let (Some(p), Some(a)) = (self.p, self.p_adjusted) {
            detail.push_str(&format!(" (p = {p:.6}, adjusted {a:.6})"));
        }
        DriftFinding {
            category: self.category,
            detail,
            diff: None,
            fails: self.fails,
        }
    }

    /// A significant test.
    fn of_test(t: &SetTest, mode: DriftMode) -> CaseFinding {
        CaseFinding {
            category: t.category,
            detail: t.detail.clone(),
            p: Some(t.p),
            p_adjusted: Some(t.p_adjusted),
            approved: Some(t.approved),
            current: Some(t.current),
            fails: t.category.fails(mode),
        }
    }
}

/// The findings a comparison reports at the run's `thresholds`: its structural findings, then
/// each counted test whose adjusted p is at most its family's threshold (what `check`, `diff
/// --from --to` and `merge` all report).
pub fn reported(
    structural: &[Structural],
    tests: &[SetTest],
    thresholds: &BTreeMap<Family, Option<f64>>,
    mode: DriftMode,
) -> Vec<CaseFinding> {
    let significant = |t: &&SetTest| matches!(thresholds.get(&t.family), Some(Some(th)) if stats::at_most(t.p_adjusted, *th));
    (structural.iter())
        .map(|s| CaseFinding::plain(s.category, s.detail.clone(), mode))
        .chain(
            tests
                .iter()
                .filter(significant)
                .map(|t| CaseFinding::of_test(t, mode)),
        )
        .collect()
}

/// The run's threshold of each family: Benjamini–Hochberg at `alpha` over the family p-values
/// of the cases that have one.
pub fn thresholds<'a>(
    family_ps: impl Iterator<Item = &'a BTreeMap<Family, f64>> + Clone,
    alpha: f64,
) -> BTreeMap<Family, Option<f64>> {
    Family::ALL
        .iter()
        .map(|&f| {
            let ps: Vec<f64> = family_ps
                .clone()
                .filter_map(|m| m.get(&f).copied())
                .collect();
            (f, stats::benjamini_hochberg(&ps, alpha))
        })
        .collect()
}

/// Whether the trial-verdict regression test of `n_a` and `n_c` trials is underpowered at
/// `alpha` (its smallest possible p, `1/C(n_a + n_c, n_a)`, exceeds α), with why.
pub fn underpowered(n_a: u64, n_c: u64, alpha: f64) -> Option<String> {
    let smallest = 1.0 / stats::choose(n_a + n_c, n_a);
    (!stats::at_most(smallest, alpha)).then(|| {
        format!(
            "{n_a} and {n_c} trials cannot show a regression at α = {alpha} (the smallest possible p is {smallest:.6}); {}",
            crate::trials::policy::smallest_power(alpha)
        )
    })
}

#[cfg(test)]
mod tests;
