//! The human-readable report: one line per result, failures with their evidence, a summary.

use std::io::Write;

use super::escape_controls as esc;
use super::model::{Report, ResultRow, RowErrorKind, RowVerdict};
use crate::oracle::Verdict;

/// Which result rows print (nextest's status levels): each level adds to the one before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum StatusLevel {
    /// No result row (findings, the summary and the next step still print).
    None,
    /// Rows that fail or error, and rows that block.
    Fail,
    /// Also rows with drift (or new).
    Drift,
    /// Also passing rows: every row.
    #[default]
    Pass,
    /// Every row.
    All,
}

impl StatusLevel {
    /// The default: every row for a run of at most [`SMALL_RUN`] traces; failures, errors and
    /// drift only for a larger one (its summary counts the rest).
    pub fn for_run(traces: usize) -> StatusLevel {
        if traces <= SMALL_RUN {
            StatusLevel::Pass
        } else {
            StatusLevel::Drift
        }
    }
}

/// The largest run whose passing rows print by default.
pub const SMALL_RUN: usize = 50;

/// Rendering options.
#[derive(Debug, Clone, Copy, Default)]
pub struct HumanOptions {
    /// ANSI colours (only on a terminal, never with `NO_COLOR`; the caller decides).
    pub color: bool,
    /// Which rows print.
    pub rows: StatusLevel,
    /// The summary line (and the next step) only.
    pub quiet: bool,
}

fn paint<'a>(on: bool, code: &str, text: &'a str) -> std::borrow::Cow<'a, str> {
    if on {
        format!("\x1b[{code}m{text}\x1b[0m").into()
    } else {
        text.into()
    }
}

/// Writes the report for a person.
pub fn render(report: &Report, opts: HumanOptions, out: &mut dyn Write) -> std::io::Result<()> {
    draw(report, opts, out)?;
    // A row lost from its temporary file fails the report rather than showing as an error.
    report.results.readable()
}

/// What [`render`] writes.
fn draw(report: &Report, opts: HumanOptions, out: &mut dyn Write) -> std::io::Result<()> {
    // Each line comes from its row's summary; only rows with details are taken whole.
    if opts.quiet {
        return summary(report, opts, out);
    }
    // The widths are read (from every row) only once a row is shown.
    let mut widths = None;
    let mut line = String::new();
    let mut shown = 0;
    let cases = super::cases::CaseIndex::of(report);
    let mut last_case: Option<(String, String)> = None;
    for (i, meta) in report.results.metas().enumerate() {
        // A row's kept flags tell whether it is shown. Without set cases (whose lines need the
        // row's scenario and case) a hidden row is not read at all.
        let hidden = level_of(
            meta.verdict,
            meta.blocking,
            meta.drift_new || meta.drift_other,
        ) > opts.rows;
        if hidden && cases.is_empty() {
            continue;
        }
        let row = report.results.summary(i);
        let case = cases.get(row.scenario.as_deref(), row.case.as_deref());
        if let Some(c) = case {
            let key = (c.scenario.clone(), c.case.clone());
            if last_case.as_ref() != Some(&key) {
                last_case = Some(key);
                if case_level(c) <= opts.rows {
                    case_line(c, opts, out)?;
                }
            }
        }
        if hidden {
            continue;
        }
        shown += 1;
        let (w_scenario, w_case) = *widths.get_or_insert_with(|| report.results.key_widths());
        let (label, code) = match row.verdict {
            RowVerdict::Pass => ("PASS ", "32"),
            RowVerdict::Fail => ("FAIL ", "31"),
            RowVerdict::Error => ("ERROR", "1;31"),
        };
        let risk = row.risk.map_or("-", |r| r.as_str());
        let mut notes: Vec<&str> = Vec::new();
        let line_trial: String;
        if row.sealed == Some(false) {
            notes.push("unsealed");
        }
        if row.verdict == RowVerdict::Pass && row.blocking {
            notes.push("blocked by drift");
        }
        if let (Some(t), Some(_)) = (&row.trial, case) {
            line_trial = format!("trial {}", esc(t));
            notes.push(&line_trial);
        } else if row.verdict != RowVerdict::Pass && !row.blocking {
            notes.push(if row.known_gap {
                "known gap, not blocking"
            } else {
                "not blocking under --fail-on"
            });
        }
        // `{label} {scenario:<w}  {case:<w}  {risk:<8}  {path}{notes}`, built by hand: this
        // runs once per trace.
        line.clear();
        line.push_str(&paint(opts.color, code, label));
        line.push(' ');
        push_padded(
            &mut line,
            &esc(row.scenario.as_deref().unwrap_or("-")),
            w_scenario,
        );
        line.push_str("  ");
        push_padded(&mut line, &esc(row.case.as_deref().unwrap_or("-")), w_case);
        line.push_str("  ");
        push_padded(&mut line, risk, 8);
        line.push_str("  ");
        line.push_str(&esc(row.path.as_deref().unwrap_or("-")));
        if !notes.is_empty() {
            line.push_str("  (");
            line.push_str(&notes.join("; "));
            line.push(')');
        }
        line.push('\n');
        out.write_all(line.as_bytes())?;
        if row.verdict != RowVerdict::Pass || row.drift_new || row.drift_other {
            details(&report.results.get(i), opts, out)?;
        }
    }
    for f in &report.privacy {
        let label = if f.fails {
            paint(opts.color, "1;31", "PRIVACY ")
        } else {
            paint(opts.color, "33", "PRIVACY ")
        };
        writeln!(out, "{label} {}", esc(&f.located()))?;
        writeln!(out, "      {}", esc(&f.message))?;
    }
    for o in &report.obsolete {
        let label = if o.finding.fails {
            paint(opts.color, "31", "OBSOLETE")
        } else {
            paint(opts.color, "33", "OBSOLETE")
        };
        let (scenario, case, path) = (esc(&o.scenario), esc(&o.case), esc(&o.path));
        writeln!(out, "{label} {scenario}  {case}  {path}")?;
        writeln!(out, "      {}", esc(&o.finding.detail))?;
    }
    if shown > 0 || !report.obsolete.is_empty() || !report.privacy.is_empty() {
        writeln!(out)?;
    }
    let hidden = report.results.len() - shown;
    if hidden > 0 && opts.rows != StatusLevel::None {
        writeln!(
            out,
            "({hidden} row(s) not shown: {}; `-v` or `--status-level pass` shows every row)",
            match opts.rows {
                StatusLevel::Fail => "passing or drifted",
                _ => "passing without drift",
            }
        )?;
    }
    summary(report, opts, out)
}

/// How much a row needs showing.
fn level_of(verdict: RowVerdict, blocking: bool, drifted: bool) -> StatusLevel {
    if verdict != RowVerdict::Pass || blocking {
        StatusLevel::Fail
    } else if drifted {
        StatusLevel::Drift
    } else {
        StatusLevel::Pass
    }
}

/// How much a case line needs showing (as rows do).
fn case_level(c: &super::cases::CaseRow) -> StatusLevel {
    level_of(c.verdict, c.blocking, c.flaky || !c.drift.is_empty())
}

/// A case line (`FLAKY s/c: 2/4 trials pass …`) and its set drift.
fn case_line(
    c: &super::cases::CaseRow,
    opts: HumanOptions,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let code = match (c.verdict, c.flaky) {
        (RowVerdict::Pass, false) => "32",
        (RowVerdict::Pass, true) => "33",
        (RowVerdict::Fail, _) => "31",
        (RowVerdict::Error, _) => "1;31",
    };
    let mut text = esc(&c.line()).into_owned();
    if c.verdict != RowVerdict::Pass && !c.blocking {
        text.push_str(if c.known_gap {
            " (known gap, not blocking)"
        } else {
            " (not blocking under --fail-on)"
        });
    } else if c.verdict == RowVerdict::Pass && c.blocking {
        text.push_str(" (blocked by drift)");
    }
    writeln!(out, "{}", paint(opts.color, code, &text))?;
    for d in &c.drift {
        let mark = if d.fails { "drift" } else { "warn" };
        let p = match (d.p, d.p_adjusted) {
            (Some(p), Some(a)) => format!(" (p = {p:.6}, adjusted {a:.6})"),
            _ => String::new(),
        };
        writeln!(
            out,
            "      {} {}: {}{p}",
            paint(opts.color, if d.fails { "31" } else { "33" }, mark),
            d.category.as_str(),
            esc(&d.detail)
        )?;
    }
    // Underpowered cases are said once, in the summary (a suite of 50 cases printed it 50
    // times); each case's own detail stays in the JSON report.
    Ok(())
}

/// The summary lines and the next step.
fn summary(report: &Report, opts: HumanOptions, out: &mut dyn Write) -> std::io::Result<()> {
    let s = &report.summary;
    writeln!(
        out,
        "{} traces, {} scenarios: {} passed, {} failed, {} errors; {} drifted, {} new, {} obsolete; {} blocking, {} ignored failures",
        s.traces,
        s.scenarios,
        s.passed,
        s.failed,
        s.errors,
        s.drifted,
        s.new,
        s.obsolete,
        s.blocking,
        s.ignored_failures
    )?;
    if let Some(cases) = s.cases {
        writeln!(
            out,
            "cases: {cases} ({} flaky, {} underpowered); passed, failed and errors count cases",
            s.flaky.unwrap_or(0),
            s.underpowered.unwrap_or(0)
        )?;
    }
    let mut weak = report
        .cases
        .iter()
        .filter(|c| c.underpowered_detail.is_some());
    if let Some(first) = weak.next() {
        writeln!(
            out,
            "underpowered: {} case(s), the first `{}/{}`: {}",
            1 + weak.count(),
            esc(&first.scenario),
            esc(&first.case),
            esc(first.underpowered_detail.as_deref().unwrap_or_default())
        )?;
    }
    if s.privacy > 0 {
        writeln!(out, "privacy: {} finding(s)", s.privacy)?;
    }
    // Quiet keeps only what decides the exit code: the budgets.
    for line in s.usage.iter().flat_map(|u| u.lines()) {
        if !opts.quiet || line.starts_with("budget: ") {
            writeln!(out, "{line}")?;
        }
    }
    if !opts.quiet {
        writeln!(out, "baselines: {}", esc(&report.baselines))?;
    }
    if let Some(next) = next_step(report) {
        writeln!(out, "next: {}", esc(&next))?;
    }
    Ok(())
}

/// The one thing a person should do next, if anything.
pub fn next_step(report: &Report) -> Option<String> {
    let s = &report.summary;
    if report.privacy.iter().any(|f| f.fails) {
        return Some(
            "remove what the privacy finding(s) above point at (`tracereplay lint` lists them)"
                .into(),
        );
    }
    // A failure or error first; a row blocked by drift alone is a baseline to review. Only a
    // trace's row is explained by its path; a scenario's own row (no trace, a scripted trace)
    // names a scenario file, which `explain` would try to read as a trace.
    let first = (report.results.metas().enumerate())
        .filter(|(_, m)| m.blocking && m.verdict != RowVerdict::Pass)
        .map(|(i, _)| (i, report.results.summary(i)))
        .find(|(_, r)| r.path.is_some());
    // A scenario with no trace needs a run of it, not a look at its file.
    if let Some((i, r)) = &first {
        let row = report.results.get(*i);
        if r.source == super::Source::Scenario
            && row
                .error
                .as_ref()
                .is_some_and(|e| e.category == RowErrorKind::NoTrace)
        {
            return Some(format!(
                "{} blocking: the first is scenario `{}`, which has no trace under the checked paths: record a run of it into the suite (`tracereplay record` writes there by default) or check the directory that holds its traces",
                s.blocking,
                r.scenario.clone().unwrap_or_default()
            ));
        }
    }
    match first.map(|(_, r)| r) {
        Some(r) if r.source == super::Source::Trace => {
            return Some(format!(
                "{} blocking: `tracereplay explain {}` shows the first in full",
                s.blocking,
                r.path.unwrap_or_default()
            ));
        }
        Some(r) => {
            return Some(format!(
                "{} blocking: the first is scenario `{}` itself (its row above says why; `tracereplay gates` checks scenario files)",
                s.blocking,
                r.scenario.unwrap_or_default()
            ));
        }
        None => {}
    }
    if let Some(c) = report.cases.iter().find(|c| c.blocking && c.is_set()) {
        return Some(format!(
            "{} blocking: case `{}/{}` ({}/{} trials pass) is the first; its trials are listed under its line",
            s.blocking, c.scenario, c.case, c.passed, c.trials
        ));
    }
    let pending = s.new + s.drifted + s.obsolete;
    if pending > 0 {
        return Some(if report.baselines.contains("pending file(s) written") {
            format!(
                "{pending} pending baseline(s): review with `tracereplay baseline pending`, then `tracereplay baseline accept`"
            )
        } else if report.baselines.contains("could not be written") {
            format!(
                "{pending} trace(s) drifted, new or obsolete, but their pending baselines could not be written (see the warnings): mend that, then run `tracereplay check` again"
            )
        } else {
            format!(
                "{pending} trace(s) drifted, new or obsolete: run `tracereplay check` off CI and review the pending baselines"
            )
        });
    }
    if s.blocking > 0 {
        return Some(format!("{} blocking: see the rows above", s.blocking));
    }
    None
}

/// `text` left-aligned in `width` characters, as `{:<width$}` pads it.
fn push_padded(line: &mut String, text: &str, width: usize) {
    line.push_str(text);
    let chars = text.chars().count();
    line.extend(std::iter::repeat_n(' ', width.saturating_sub(chars)));
}

fn details(row: &ResultRow, opts: HumanOptions, out: &mut dyn Write) -> std::io::Result<()> {
    if let Some(e) = &row.error {
        writeln!(
            out,
            "      {}: {}",
            paint(opts.color, "31", e.category.as_str()),
            esc(&e.message)
        )?;
    }
    for r in &row.oracles {
        let (mark, colour) = match r.verdict {
            // A pass is shown only when it passed on a partial score (a threshold below 1).
            Verdict::Pass if r.partial_score() => ("pass", "33"),
            Verdict::Pass => continue,
            Verdict::Fail => ("fail", "31"),
            Verdict::NotEvaluable => ("not-evaluable", "31"),
        };
        let index = r.index.map(|i| format!(" #{i}")).unwrap_or_default();
        writeln!(
            out,
            "      {} {}{}{}: {}",
            paint(opts.color, colour, mark),
            esc(&r.kind),
            index,
            r.score_note(),
            esc(&r.message)
        )?;
        if !r.evidence.is_empty() {
            writeln!(out, "          evidence: {}", r.evidence_text())?;
        }
        if let Some(e) = r.expected.as_ref().filter(|v| !v.is_null()) {
            writeln!(out, "          expected: {}", esc(&e.to_string()))?;
        }
        if let Some(f) = r.found.as_ref().filter(|v| !v.is_null()) {
            writeln!(out, "          found:    {}", esc(&f.to_string()))?;
        }
    }
    for d in &row.drift {
        crate::diff::report::write_finding(d, opts.color, out)?;
    }
    Ok(())
}

/// The human report as a [`super::Exporter`].
pub struct HumanExporter;

super::export::exporter!(
HumanExporter for super::Report, "human report", None, |report, ctx, out| render(
    report, ctx.human, out
));

super::export::exporter!(
    HumanExporter for crate::diff::report::DiffReport,
    "drift report",
    None,
    |report, ctx, out| report.render_human(ctx.human.color, out)
);

super::export::exporter!(
    HumanExporter for crate::privacy::lint::LintReport,
    "lint findings",
    None,
    |lint, _, out| {
        for f in &lint.0 {
            let level = if f.fails { "error  " } else { "warning" };
            let at = f.located();
            writeln!(out, "{level}  {}\n      {}", esc(&at), esc(&f.message))?;
        }
        writeln!(out, "{} finding(s), {} failing", lint.0.len(), lint.failing())
    }
);

super::export::exporter!(
    HumanExporter for super::compare::RunComparison,
    "comparison",
    None,
    |comparison, _, out| super::compare::render_text(comparison, out)
);

#[cfg(test)]
mod tests {
    use super::push_padded;

    #[test]
    fn padding_counts_characters_as_format_does() {
        for (text, width) in [("abc", 5), ("é-ü", 5), ("toolong", 3), ("", 2)] {
            let mut line = String::new();
            push_padded(&mut line, text, width);
            assert_eq!(line, format!("{text:<width$}"));
        }
    }
}
