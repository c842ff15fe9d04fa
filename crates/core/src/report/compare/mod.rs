//! Two runs side by side (`tracereplay report --compare OLD.json NEW.json`): each case's
//! verdict, pass count and drift in both, and what changed — the page a team reads after
//! switching model. Computed from two JSON reports alone.

pub mod html;

use std::collections::BTreeMap;
use std::io::Write;

use serde::Serialize;

use super::model::{Report, ResultRow, RowErrorKind, RowVerdict};
use crate::oracle::Verdict;

/// How a case moved from the old run to the new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Change {
    /// It passed and now fails or errs.
    Broke,
    /// It failed or erred and now passes.
    Fixed,
    /// Same side of pass, but its verdict, pass count, flaky mark or drift differ.
    Changed,
    /// Only the new run has it.
    Added,
    /// Only the old run has it.
    Removed,
    /// Nothing of the above differs.
    Same,
}

impl Change {
    /// Every change, in the order they are listed.
    pub const ALL: [Change; 6] = [
        Change::Broke,
        Change::Fixed,
        Change::Changed,
        Change::Added,
        Change::Removed,
        Change::Same,
    ];

    /// `broke`, `fixed`, `changed`, `added`, `removed` or `same`.
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Broke => "broke",
            Change::Fixed => "fixed",
            Change::Changed => "changed",
            Change::Added => "added",
            Change::Removed => "removed",
            Change::Same => "same",
        }
    }
}

/// One case in one run: its trials taken together.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Side {
    /// The case's verdict: its case line's with trials, else its worst trace's.
    pub verdict: RowVerdict,
    /// Traces (trials) of the case.
    pub trials: usize,
    /// Of them, passing.
    pub passed: usize,
    /// Marked flaky by its trials.
    pub flaky: bool,
    /// Drift categories found, sorted, once each.
    pub drift: Vec<String>,
    /// Why it does not pass, in a line (the first error or failing oracle); `None` when it does.
    pub why: Option<String>,
}

/// One case of either run.
#[derive(Debug, Clone, Serialize)]
pub struct CaseChange {
    /// Scenario id (empty for a trace that names none).
    pub scenario: String,
    /// Case (a trace that names none is listed by its path).
    pub case: String,
    /// How it moved.
    pub change: Change,
    /// In the old run.
    pub old: Option<Side>,
    /// In the new run.
    pub new: Option<Side>,
}

/// The two runs compared.
#[derive(Debug, Clone, Serialize)]
pub struct RunComparison {
    /// The old run's name (its report's path).
    pub old: String,
    /// The new run's name.
    pub new: String,
    /// Cases by change.
    pub counts: BTreeMap<Change, usize>,
    /// Every case of either run, by scenario and case.
    pub cases: Vec<CaseChange>,
    /// How many result rows the new run has (none: it judged nothing).
    pub new_rows: usize,
    /// Result rows of the new run that repeat another (the same scenario, case, trial and
    /// trace): a report no single run wrote.
    #[serde(skip)]
    pub new_duplicates: usize,
}

/// Why a row does not pass, in a line.
fn why_row(r: &ResultRow) -> Option<String> {
    if let Some(e) = &r.error {
        return Some(format!(
            "{}: {}",
            e.category.as_str(),
            first_line(&e.message)
        ));
    }
    (r.oracles.iter())
        .find(|o| o.verdict != Verdict::Pass)
        .map(|o| {
            format!(
                "{} {}: {}",
                o.kind,
                o.verdict.as_str(),
                first_line(&o.message)
            )
        })
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// What a row that names no case is listed as: a scenario with no trace as `(no trace)` (so
/// it lines up with the same scenario's no-trace row in the other run), any other by its path.
fn case_key(r: &ResultRow) -> String {
    if let Some(c) = &r.case {
        return c.clone();
    }
    let no_trace = (r.error.as_ref()).is_some_and(|e| e.category == RowErrorKind::NoTrace);
    match (&r.path, no_trace) {
        (Some(p), false) => p.clone(),
        _ => NO_TRACE.to_owned(),
    }
}

/// The case column of a scenario that has no trace in a run.
const NO_TRACE: &str = "(no trace)";

/// A case's key: scenario ids and cases are matched without regard to letter case, as `check`
/// matches them, so a case renamed by letter case is the same case (and its verdict compared).
type CaseId = (String, String);

fn key_of(scenario: &str, case: &str) -> CaseId {
    (scenario.to_lowercase(), case.to_lowercase())
}

/// Each case of a report, keyed by (scenario, case) ([`key_of`]), with the names it is shown by
/// (the first row's).
fn sides(report: &Report) -> BTreeMap<CaseId, ((String, String), Side)> {
    let mut out: BTreeMap<CaseId, ((String, String), Side)> = BTreeMap::new();
    for r in report.results.iter() {
        let names = (r.scenario.clone().unwrap_or_default(), case_key(&r));
        let key = key_of(&names.0, &names.1);
        let (_, side) = out.entry(key).or_insert((
            names,
            Side {
                verdict: RowVerdict::Pass,
                trials: 0,
                passed: 0,
                flaky: false,
                drift: Vec::new(),
                why: None,
            },
        ));
        side.trials += 1;
        if r.verdict == RowVerdict::Pass {
            side.passed += 1;
        } else if side.why.is_none() {
            side.why = why_row(&r);
        }
        // The worse verdict: error over fail over pass.
        side.verdict = side.verdict.max(r.verdict);
        side.drift
            .extend(r.drift.iter().map(|d| d.category.as_str().to_owned()));
    }
    // A case of several trials is what its case line says (its policy decides the verdict).
    for c in &report.cases {
        if let Some((_, side)) = out.get_mut(&key_of(&c.scenario, &c.case)) {
            side.verdict = c.verdict;
            side.flaky = c.flaky;
            if c.verdict == RowVerdict::Pass {
                side.why = None;
            } else if let Some(reason) = &c.reason {
                side.why = Some(first_line(reason).to_owned());
            }
            side.drift
                .extend(c.drift.iter().map(|d| d.category.as_str().to_owned()));
        }
    }
    for (_, side) in out.values_mut() {
        side.drift.sort();
        side.drift.dedup();
    }
    out
}

fn change_of(old: Option<&Side>, new: Option<&Side>) -> Change {
    let pass = |s: &Side| s.verdict == RowVerdict::Pass;
    match (old, new) {
        (None, _) => Change::Added,
        (_, None) => Change::Removed,
        (Some(o), Some(n)) if pass(o) && !pass(n) => Change::Broke,
        (Some(o), Some(n)) if !pass(o) && pass(n) => Change::Fixed,
        (Some(o), Some(n))
            if (o.verdict, o.trials, o.passed, o.flaky, &o.drift)
                != (n.verdict, n.trials, n.passed, n.flaky, &n.drift) =>
        {
            Change::Changed
        }
        _ => Change::Same,
    }
}

/// Compares the run `old` (named `old_name`) with the run `new`.
pub fn compare_runs(old_name: &str, old: &Report, new_name: &str, new: &Report) -> RunComparison {
    let (mut olds, news) = (sides(old), sides(new));
    let mut cases = Vec::new();
    for (key, (names, n)) in news {
        let o = olds.remove(&key).map(|(_, o)| o);
        cases.push(CaseChange {
            scenario: names.0,
            case: names.1,
            change: change_of(o.as_ref(), Some(&n)),
            old: o,
            new: Some(n),
        });
    }
    for (_, (names, o)) in olds {
        cases.push(CaseChange {
            scenario: names.0,
            case: names.1,
            change: Change::Removed,
            old: Some(o),
            new: None,
        });
    }
    cases.sort_by(|a, b| (&a.scenario, &a.case).cmp(&(&b.scenario, &b.case)));
    let mut counts: BTreeMap<Change, usize> = Change::ALL.iter().map(|&c| (c, 0)).collect();
    for c in &cases {
        *counts.entry(c.change).or_default() += 1;
    }
    RunComparison {
        old: old_name.to_owned(),
        new: new_name.to_owned(),
        counts,
        cases,
        new_rows: new.results.len(),
        new_duplicates: duplicated_rows(new),
    }
}

/// How many result rows of `report` repeat an earlier one: the same scenario, case and trial of
/// the same trace (by path and content hash).
fn duplicated_rows(report: &Report) -> usize {
    let mut seen = std::collections::HashSet::new();
    (report.results.iter())
        .filter(|r| {
            let key = (
                r.scenario.as_ref().map(|s| s.to_lowercase()),
                r.case.as_ref().map(|c| c.to_lowercase()),
                r.trial.clone(),
                r.path.clone(),
                r.content_hash.clone(),
            );
            !seen.insert(key)
        })
        .count()
}

impl RunComparison {
    /// Cases that broke.
    pub fn broke(&self) -> usize {
        self.counts.get(&Change::Broke).copied().unwrap_or(0)
    }

    /// Cases only the old run has: gone from the new one.
    pub fn removed(&self) -> usize {
        self.counts.get(&Change::Removed).copied().unwrap_or(0)
    }

    /// Why the comparison fails, if it does: a case broke; a case added by the new run fails;
    /// a case is gone (a case gone is a case broken, unless `allow_removed`); the new run
    /// judged nothing at all; or its report repeats result rows (no single run wrote it).
    pub fn failure(&self, allow_removed: bool) -> Option<String> {
        if self.new_rows == 0 && !self.cases.is_empty() {
            return Some("the new run has no result rows: it judged nothing".to_owned());
        }
        let mut why = Vec::new();
        if self.new_duplicates > 0 {
            why.push(format!(
                "the new report repeats {} result row(s) (the same scenario, case, trial and trace): no single run wrote it",
                self.new_duplicates
            ));
        }
        if self.broke() > 0 {
            why.push(format!("{} case(s) broke", self.broke()));
        }
        let added_failing = (self.cases.iter())
            .filter(|c| c.change == Change::Added)
            .filter(|c| {
                c.new
                    .as_ref()
                    .is_some_and(|n| n.verdict != RowVerdict::Pass)
            })
            .count();
        if added_failing > 0 {
            why.push(format!("{added_failing} new case(s) fail"));
        }
        if self.removed() > 0 && !allow_removed {
            why.push(format!(
                "{} case(s) of the old run are missing from the new one (pass `--allow-removed` if they were removed on purpose)",
                self.removed()
            ));
        }
        (!why.is_empty()).then(|| why.join("; "))
    }

    /// The count line: `20 cases: 1 broke, 2 fixed, …`.
    pub fn count_line(&self) -> String {
        let parts: Vec<String> = (Change::ALL.iter())
            .map(|c| {
                format!(
                    "{} {}",
                    self.counts.get(c).copied().unwrap_or(0),
                    c.as_str()
                )
            })
            .collect();
        format!("{} cases: {}", self.cases.len(), parts.join(", "))
    }
}

/// A side in a cell: `pass, 3/3 passed`, `fail, 1/3 passed, flaky`, `-` when absent.
fn side_cell(s: Option<&Side>) -> String {
    match s {
        None => "-".into(),
        Some(s) => format!(
            "{}, {}/{} passed{}",
            s.verdict.as_str(),
            s.passed,
            s.trials,
            if s.flaky { ", flaky" } else { "" }
        ),
    }
}

/// The comparison for a terminal: the count line, then a line per case that is not the same.
pub fn render_text(c: &RunComparison, out: &mut dyn Write) -> std::io::Result<()> {
    use super::escape_controls as esc;
    writeln!(out, "compare {} -> {}", esc(&c.old), esc(&c.new))?;
    for case in c.cases.iter().filter(|x| x.change != Change::Same) {
        let mut line = format!(
            "{:<8} {}/{}  {} -> {}",
            case.change.as_str().to_uppercase(),
            case.scenario,
            case.case,
            side_cell(case.old.as_ref()),
            side_cell(case.new.as_ref())
        );
        let drift = |s: Option<&Side>| s.map(|s| s.drift.join(",")).unwrap_or_default();
        let (od, nd) = (drift(case.old.as_ref()), drift(case.new.as_ref()));
        if od != nd {
            line.push_str(&format!("  drift [{od}] -> [{nd}]"));
        }
        if let Some(why) = case.new.as_ref().and_then(|s| s.why.as_deref()) {
            line.push_str(&format!("  ({why})"));
        }
        writeln!(out, "{}", esc(&line))?;
    }
    writeln!(out, "{}", c.count_line())
}
