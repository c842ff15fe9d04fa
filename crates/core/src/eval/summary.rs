//! The rows that are not judged traces (scenarios without a trace, what discovery could not
//! look at, scenario files that failed to load), and the report's counts.

use super::row;
use super::{CheckOptions, FailOn, baselines, error_chain, plan, verdict_blocks};
use crate::discover::Discovered;
use crate::paths::display_path;
use crate::report::usage::{Budget, SuiteUsage, UsageChange};
use crate::report::{ResultRow, RowErrorKind, RowVerdict, Rows, Source, Summary};

/// Rows that are not judged traces: a scenario in scope without a trace (its scripted trace
/// judged instead, with `--scripted`), each thing discovery could not look at, each scenario
/// file that failed to load. With the pending baseline file a scripted row's comparison calls
/// for.
pub(super) fn other_rows(
    found: &Discovered,
    loaded: &crate::scenario::LoadedScenarios,
    entries: &plan::Entries<'_>,
    opts: &CheckOptions,
) -> Vec<(ResultRow, Option<baselines::Pending>)> {
    let mut out = Vec::new();
    let mut listed: Vec<&plan::Entry> = entries.values().filter(|e| e.in_run()).collect();
    listed.sort_by(|a, b| a.scenario.id.cmp(&b.scenario.id));
    let left_out =
        |id: &str| (opts.selection.rerun.as_ref()).is_some_and(|l| l.contains(&id.to_lowercase()));
    for e in listed
        .into_iter()
        .filter(|e| !e.seen && !left_out(&e.scenario.id))
    {
        if opts.selection.scripted {
            if let Some(judged) = row::row_of_scripted(e, opts) {
                out.push(judged);
                continue;
            }
        }
        let file = display_path(&e.scenario.file);
        let mut row = ResultRow::blank(Some(file.clone()), Source::Scenario);
        row.scenario = Some(e.scenario.id.clone());
        row.scenario_file = Some(file.clone());
        row.risk = Some(e.scenario.risk);
        row.known_gap = e.scenario.known_gap;
        let (category, message) = if e.problems.is_empty() {
            let id = &e.scenario.id;
            let why = format!("no trace found for scenario `{id}` (defined in `{file}`)");
            (RowErrorKind::NoTrace, why)
        } else {
            (
                RowErrorKind::ScenarioInvalid,
                format!("`{file}`: {}", e.problems.join("; ")),
            )
        };
        row.set_error(category, message, None);
        out.push((row, None));
    }
    // Rows naming no scenario belong to the first partition share.
    if !opts.selection.partition_holds(None) {
        return out;
    }
    // What discovery could not look at might hold a failure: an error row each.
    for (path, why) in &found.unreachable {
        let shown = display_path(path);
        let mut row = ResultRow::blank(Some(shown.clone()), Source::Trace);
        row.set_error(RowErrorKind::Unreachable, format!("`{shown}`: {why}"), None);
        out.push((row, None));
    }
    for err in &loaded.errors {
        let mut row = ResultRow::blank(Some(display_path(err.path())), Source::Scenario);
        row.scenario_file = Some(display_path(err.path()));
        row.set_error(RowErrorKind::ScenarioInvalid, error_chain(err), err.line());
        out.push((row, None));
    }
    out
}

/// The report's counts.
pub(crate) fn summarise(
    rows: &Rows,
    privacy: &[crate::privacy::lint::Finding],
    obsolete: &[crate::report::ObsoleteBaseline],
    traces: usize,
    scenarios: usize,
    fail_on: FailOn,
) -> Summary {
    let mut summary = Summary {
        traces,
        scenarios,
        ..Summary::default()
    };
    // The totals come from the rows' heads (not kept in memory beside every row, as the
    // counts' flags are).
    let mut usage: Option<SuiteUsage> = None;
    let mut change = UsageChange::default();
    rows.for_each_head(|_, h| {
        if let Some(u) = &h.usage {
            usage.get_or_insert_with(SuiteUsage::default).totals.add(u);
            if let Some(a) = &h.approved_usage {
                change.add(a, &u.record());
            }
        }
    });
    for m in rows.metas() {
        match m.verdict {
            RowVerdict::Pass => summary.passed += 1,
            RowVerdict::Fail => summary.failed += 1,
            RowVerdict::Error => summary.errors += 1,
        }
        if m.verdict == RowVerdict::Fail && !verdict_blocks(m.verdict, m.known_gap, m.risk, fail_on)
        {
            summary.ignored_failures += 1;
        }
        summary.new += usize::from(m.drift_new);
        summary.drifted += usize::from(m.drift_other);
        summary.blocking += usize::from(m.blocking);
    }
    summary.obsolete = obsolete.len();
    summary.privacy = privacy.len();
    summary.blocking += privacy.iter().filter(|f| f.fails).count();
    summary.blocking += obsolete.iter().filter(|o| o.finding.fails).count();
    if let Some(u) = usage.as_mut() {
        u.against_approved = (change.traces > 0).then_some(change);
    }
    summary.usage = usage;
    summary
}

/// Holds the suite's totals to `budget`: each budget exceeded (or that cannot be checked)
/// blocks the run. Without totals (no trace judged) a budget is not checked.
pub(crate) fn apply_budget(summary: &mut Summary, budget: &Budget) {
    let Some(u) = summary.usage.as_mut() else {
        return;
    };
    u.budgets = budget.check(&u.totals);
    summary.blocking += u.budgets.iter().filter(|b| b.exceeded).count();
}

/// With case lines listed, `passed`, `failed`, `errors`, `ignored_failures`, `new`, `drifted`
/// and `blocking` count cases: each row of a listed case is taken out and its case put in.
pub(crate) fn count_cases(
    summary: &mut Summary,
    rows: &Rows,
    cases: &[crate::report::cases::CaseRow],
    fail_on: FailOn,
) {
    if cases.is_empty() {
        return;
    }
    // A listed case counts its rows: every judged row of its (scenario, case).
    let listed: std::collections::HashSet<(&str, &str)> = (cases.iter())
        .map(|c| (c.scenario.as_str(), c.case.as_str()))
        .collect();
    let mut in_case = Vec::with_capacity(rows.len());
    rows.for_each_head(|_, h| {
        let judged = matches!(h.source, Source::Trace | Source::Scripted);
        let key = h.scenario.zip(h.case);
        in_case.push(judged && key.is_some_and(|k| listed.contains(&k)));
    });
    for (m, _) in rows.metas().zip(&in_case).filter(|(_, c)| **c) {
        match m.verdict {
            RowVerdict::Pass => summary.passed -= 1,
            RowVerdict::Fail => summary.failed -= 1,
            RowVerdict::Error => summary.errors -= 1,
        }
        if m.verdict == RowVerdict::Fail && !verdict_blocks(m.verdict, m.known_gap, m.risk, fail_on)
        {
            summary.ignored_failures -= 1;
        }
        summary.new -= usize::from(m.drift_new);
        summary.drifted -= usize::from(m.drift_other);
        summary.blocking -= usize::from(m.blocking);
    }
    use crate::diff::DriftCategory;
    for c in cases {
        match c.verdict {
            RowVerdict::Pass => summary.passed += 1,
            RowVerdict::Fail => summary.failed += 1,
            RowVerdict::Error => summary.errors += 1,
        }
        if c.verdict == RowVerdict::Fail && !verdict_blocks(c.verdict, c.known_gap, c.risk, fail_on)
        {
            summary.ignored_failures += 1;
        }
        summary.new += usize::from(c.drift.iter().any(|d| d.category == DriftCategory::New));
        summary.drifted += usize::from(c.drift.iter().any(|d| d.category != DriftCategory::New));
        summary.blocking += usize::from(c.blocking);
    }
    // Trial sets compared with an approved set add their totals to the suite's change.
    let sets = cases
        .iter()
        .filter_map(|c| c.usage_against_approved.as_ref());
    for change in sets {
        if let Some(u) = summary.usage.as_mut() {
            (u.against_approved.get_or_insert_with(UsageChange::default)).merge(change);
        }
    }
    summary.cases = Some(cases.len());
    summary.flaky = Some(cases.iter().filter(|c| c.flaky).count());
    summary.underpowered = Some(cases.iter().filter(|c| c.underpowered).count());
}

/// Appends where the run looked to every `unknown-scenario` error (rare rows: decoded and
/// encoded again).
pub(super) fn name_where_unknown_scenarios_were_looked_for(
    rows: &mut Rows,
    roots: &[camino::Utf8PathBuf],
) {
    let looked_in = plan::looked_in(roots);
    let error_rows: Vec<usize> = (rows.metas().enumerate())
        .filter(|(_, m)| m.verdict == RowVerdict::Error && m.source == Source::Trace)
        .map(|(i, _)| i)
        .collect();
    for i in error_rows {
        let mut row = rows.get(i);
        if let Some(e) =
            (row.error.as_mut()).filter(|e| e.category == RowErrorKind::UnknownScenario)
        {
            e.message.push_str(&looked_in);
            rows.set(i, &row);
        }
    }
}
