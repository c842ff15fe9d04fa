//! JUnit XML through `quick-junit`: one test suite per scenario, one test case per result row,
//! failures with message and evidence; `new` and `obsolete` baselines as test cases of their own.

use std::collections::BTreeMap;
use std::io::Write;

use quick_junit::{
    NonSuccessKind, Report as JunitReport, TestCase, TestCaseStatus, TestRerun, TestSuite,
};

use super::cases::CaseRow;
use super::model::{Report, ResultRow, RowVerdict};
use crate::diff::DriftCategory;
use crate::oracle::Verdict;

fn evidence_text(row: &ResultRow) -> String {
    let mut out = String::new();
    if let Some(h) = &row.content_hash {
        out.push_str(&format!(
            "trace: {} ({h})\n",
            row.path.as_deref().unwrap_or("-")
        ));
    }
    if let Some(e) = &row.error {
        out.push_str(&format!("{}: {}\n", e.category, e.message));
    }
    for o in &row.oracles {
        match o.verdict {
            Verdict::Pass => continue,
            Verdict::Fail | Verdict::NotEvaluable => {}
        }
        out.push_str(&format!(
            "{} {}{}: {}\n",
            o.verdict.as_str(),
            o.kind,
            o.score_note(),
            o.message
        ));
        if !o.evidence.is_empty() {
            out.push_str(&format!("  evidence: {}\n", o.evidence_text()));
        }
        if let Some(e) = o.expected.as_ref().filter(|v| !v.is_null()) {
            out.push_str(&format!("  expected: {e}\n"));
        }
        if let Some(f) = o.found.as_ref().filter(|v| !v.is_null()) {
            out.push_str(&format!("  found: {f}\n"));
        }
    }
    for d in &row.drift {
        out.push_str(&format!("drift {}: {}\n", d.category.as_str(), d.detail));
        if let Some(diff) = &d.diff {
            out.push_str(diff);
        }
    }
    out
}

/// Why a failing row does not fail the run: its scenario is a known gap, or its risk is below
/// `--fail-on`.
fn ignored_because(row: &ResultRow, fail_on: Option<&str>) -> String {
    if row.known_gap {
        return "ignored failure: a known gap".to_owned();
    }
    let risk = row.risk.map_or("unrated", |r| r.as_str());
    match fail_on {
        Some(f) => format!("ignored failure: {risk} risk under --fail-on {f}"),
        None => format!("ignored failure: {risk} risk, below --fail-on"),
    }
}

fn row_case(row: &ResultRow, fail_on: Option<&str>) -> TestCase {
    let failing_drift = row
        .drift
        .iter()
        .filter(|d| d.fails && d.category != DriftCategory::New)
        .count();
    let status = match row.verdict {
        RowVerdict::Pass if failing_drift == 0 => TestCaseStatus::success(),
        RowVerdict::Pass => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(format!(
                "{failing_drift} drift finding(s) from the approved baseline"
            ))
            .set_type("drift");
            s
        }
        // A failure that does not count is no red check on a green job: skipped, with the
        // evidence kept in `system-out`.
        RowVerdict::Fail if !row.blocking => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(ignored_because(row, fail_on))
                .set_type("ignored-failure");
            let mut case = TestCase::new(test_name(row), s);
            case.set_classname(row.scenario.as_deref().unwrap_or("(scenario files)"));
            case.set_system_out(evidence_text(row));
            return case;
        }
        RowVerdict::Fail => {
            let failed: Vec<&str> = row
                .oracles
                .iter()
                .filter(|o| o.verdict != Verdict::Pass)
                .map(|o| o.kind.as_ref())
                .collect();
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(format!("failed: {}", failed.join(", ")))
                .set_type("oracle");
            s
        }
        RowVerdict::Error => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
            let e = row.error.as_ref();
            s.set_message(e.map_or("error", |e| e.message.as_str()))
                .set_type(e.map_or("error", |e| e.category.as_str()));
            s
        }
    };
    let mut status = status;
    if !matches!(status, TestCaseStatus::Success { .. }) {
        status.set_description(evidence_text(row));
    }
    let mut case = TestCase::new(test_name(row), status);
    case.set_classname(row.scenario.as_deref().unwrap_or("(scenario files)"));
    case
}

fn test_name(row: &ResultRow) -> String {
    format!(
        "{} ({})",
        row.case.as_deref().unwrap_or("-"),
        row.path.as_deref().unwrap_or("-")
    )
}

/// One test case for a case of several trials, in nextest's shapes: a passing case with a
/// `<flakyFailure>` per failing trial, a failing one with a `<failure>` (its first failing
/// trial) and a `<rerunFailure>` per further failing trial.
fn set_case(c: &CaseRow, trials: &[ResultRow], fail_on: Option<&str>) -> TestCase {
    let failing: Vec<&ResultRow> = trials
        .iter()
        .filter(|r| r.verdict != RowVerdict::Pass)
        .collect();
    let rerun = |r: &ResultRow| {
        let kind = match r.verdict {
            RowVerdict::Error => NonSuccessKind::Error,
            _ => NonSuccessKind::Failure,
        };
        let mut run = TestRerun::new(kind);
        run.set_message(format!("trial {}", r.trial.as_deref().unwrap_or("-")))
            .set_description(evidence_text(r));
        run
    };
    let mut drift = String::new();
    for d in &c.drift {
        drift.push_str(&format!("drift {}: {}", d.category.as_str(), d.detail));
        if let (Some(p), Some(a)) = (d.p, d.p_adjusted) {
            drift.push_str(&format!(" (p = {p}, adjusted {a})"));
        }
        drift.push('\n');
    }
    let status = match c.verdict {
        RowVerdict::Pass if !c.blocking => {
            let mut s = TestCaseStatus::success();
            s.add_reruns(failing.iter().map(|r| rerun(r)));
            s
        }
        RowVerdict::Pass => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(c.line())
                .set_type("drift")
                .set_description(drift.clone());
            s
        }
        RowVerdict::Fail if !c.blocking => {
            let mut s = TestCaseStatus::skipped();
            let why = if c.known_gap {
                "ignored failure: a known gap".to_owned()
            } else {
                let risk = c.risk.map_or("unrated", |r| r.as_str());
                format!(
                    "ignored failure: {risk} risk under --fail-on {}",
                    fail_on.unwrap_or("-")
                )
            };
            s.set_message(why).set_type("ignored-failure");
            s
        }
        RowVerdict::Fail | RowVerdict::Error => {
            let kind = match c.verdict {
                RowVerdict::Error => NonSuccessKind::Error,
                _ => NonSuccessKind::Failure,
            };
            let mut s = TestCaseStatus::non_success(kind);
            let first = failing
                .first()
                .map(|r| evidence_text(r))
                .unwrap_or_default();
            s.set_message(c.line())
                .set_type(if kind == NonSuccessKind::Error {
                    "error"
                } else {
                    "trials"
                })
                .set_description(format!("{drift}{first}"));
            s.add_reruns(failing.iter().skip(1).map(|r| rerun(r)));
            s
        }
    };
    let mut case = TestCase::new(format!("{} ({} trials)", c.case, c.trials), status);
    case.set_classname(c.scenario.as_str());
    case
}

/// Writes the report as JUnit XML.
pub fn render(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    let mut suites: BTreeMap<String, Vec<TestCase>> = BTreeMap::new();
    let index = super::cases::CaseIndex::of(report);
    let mut held: Option<(&CaseRow, Vec<ResultRow>)> = None;
    let flush = |held: &mut Option<(&CaseRow, Vec<ResultRow>)>,
                 suites: &mut BTreeMap<String, Vec<TestCase>>| {
        if let Some((c, trials)) = held.take() {
            let case = set_case(c, &trials, report.fail_on);
            suites.entry(c.scenario.clone()).or_default().push(case);
        }
    };
    for row in report.results.iter() {
        if let Some(c) = index.get(row.scenario.as_deref(), row.case.as_deref()) {
            match &mut held {
                Some((h, trials)) if std::ptr::eq(*h, c) => trials.push(row),
                _ => {
                    flush(&mut held, &mut suites);
                    held = Some((c, vec![row]));
                }
            }
            continue;
        }
        flush(&mut held, &mut suites);
        let suite = row
            .scenario
            .clone()
            .unwrap_or_else(|| "(scenario files)".to_owned());
        let cases = suites.entry(suite).or_default();
        cases.push(row_case(&row, report.fail_on));
        if let Some(new) = row.drift.iter().find(|d| d.category == DriftCategory::New) {
            let status = if new.fails {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message(new.detail.clone()).set_type("new");
                s
            } else {
                TestCaseStatus::success()
            };
            let mut case = TestCase::new(
                format!("baseline new: {}", row.case.as_deref().unwrap_or("-")),
                status,
            );
            case.set_classname(row.scenario.as_deref().unwrap_or("-"));
            cases.push(case);
        }
    }
    flush(&mut held, &mut suites);
    for o in &report.obsolete {
        let status = if o.finding.fails {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(o.finding.detail.clone()).set_type("obsolete");
            s
        } else {
            TestCaseStatus::success()
        };
        let mut case = TestCase::new(
            format!("baseline obsolete: {} ({})", o.case, o.path),
            status,
        );
        case.set_classname(o.scenario.as_str());
        suites.entry(o.scenario.clone()).or_default().push(case);
    }
    // Each suite budget is a test case of its own, failing when exceeded.
    for b in report.summary.usage.iter().flat_map(|u| &u.budgets) {
        let status = if b.exceeded {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(b.detail.clone()).set_type("budget");
            s
        } else {
            TestCaseStatus::success()
        };
        let mut case = TestCase::new(format!("budget {}", b.budget), status);
        case.set_classname("(suite)");
        suites
            .entry("(suite budgets)".into())
            .or_default()
            .push(case);
    }
    let mut junit = JunitReport::new("tracereplay");
    let usage = report.summary.usage.as_ref();
    for (name, cases) in suites {
        let mut suite = TestSuite::new(name);
        suite.add_test_cases(cases);
        junit.add_test_suite(suite);
    }
    // The suite's totals, as properties of a suite of their own (with the budgets' cases).
    if let Some(u) = usage {
        let mut suite = TestSuite::new("(suite usage)");
        let t = &u.totals;
        let mut props = vec![
            ("requests", t.requests.to_string()),
            ("input_tokens", t.input_tokens.to_string()),
            ("output_tokens", t.output_tokens.to_string()),
        ];
        if let Some(c) = t.known_cost_usd() {
            props.push(("cost_usd", c.to_string()));
        }
        for (k, v) in props {
            suite.add_property(quick_junit::Property::new(k, v));
        }
        junit.add_test_suite(suite);
    }
    junit.serialize(&mut *out).map_err(std::io::Error::other)?;
    out.write_all(b"\n")?;
    report.results.readable()
}

/// The JUnit report as a [`super::Exporter`].
pub struct JunitExporter;

super::export::exporter!(
    JunitExporter for super::Report,
    "JUnit report",
    Some("junit.xml"),
    |report, _, out| render(report, out)
);
