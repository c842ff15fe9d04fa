//! JUnit XML through `quick-junit`: one test suite per scenario, one test case per result row,
//! failures with message and evidence; `new` and `obsolete` baselines as test cases of their own.

use std::collections::BTreeMap;
use std::io::Write;

use quick_junit::{NonSuccessKind, Report as JunitReport, TestCase, TestCaseStatus, TestSuite};

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

/// Writes the report as JUnit XML.
pub fn render(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    let mut suites: BTreeMap<String, Vec<TestCase>> = BTreeMap::new();
    for row in report.results.iter() {
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
    let mut junit = JunitReport::new("tracereplay");
    for (name, cases) in suites {
        let mut suite = TestSuite::new(name);
        suite.add_test_cases(cases);
        junit.add_test_suite(suite);
    }
    junit.serialize(&mut *out).map_err(std::io::Error::other)?;
    out.write_all(b"\n")
}
