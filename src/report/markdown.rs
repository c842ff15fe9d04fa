//! Markdown for a pull-request comment or `$GITHUB_STEP_SUMMARY`.

use std::io::Write;

use super::model::{Report, RowVerdict};
use crate::oracle::Verdict;

use super::markdown_cell as cell;

/// Writes the report as Markdown.
pub fn render(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    let s = &report.summary;
    let status = if report.is_failure() {
        "❌ failing"
    } else {
        "✅ passing"
    };
    writeln!(out, "## tracereplay: {status}\n")?;
    writeln!(
        out,
        "| traces | scenarios | passed | failed | errors | ignored failures | drifted | new | obsolete | blocking |"
    )?;
    writeln!(out, "|---|---|---|---|---|---|---|---|---|---|")?;
    writeln!(
        out,
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
        s.traces,
        s.scenarios,
        s.passed,
        s.failed,
        s.errors,
        s.ignored_failures,
        s.drifted,
        s.new,
        s.obsolete,
        s.blocking
    )?;
    writeln!(out, "Baselines: {}\n", cell(&report.baselines))?;
    let attention: Vec<_> = report
        .results
        .iter()
        .filter(|r| r.verdict != RowVerdict::Pass || !r.drift.is_empty())
        .collect();
    if attention.is_empty() && report.obsolete.is_empty() && report.privacy.is_empty() {
        writeln!(out, "Every trace passed with no drift.")?;
        return Ok(());
    }
    writeln!(
        out,
        "| verdict | scenario | case | risk | blocking | trace | what |"
    )?;
    writeln!(out, "|---|---|---|---|---|---|---|")?;
    for r in &attention {
        let mut what: Vec<String> = Vec::new();
        if let Some(e) = &r.error {
            what.push(cell(&format!("{}: {}", e.category, e.message)));
        }
        for o in &r.oracles {
            if o.verdict == Verdict::Pass && !o.partial_score() {
                continue;
            }
            let ev = if o.evidence.is_empty() {
                String::new()
            } else {
                format!(" ({})", o.evidence_text())
            };
            what.push(cell(&format!(
                "`{}`{} {}{ev}",
                o.kind,
                o.score_note(),
                o.message
            )));
        }
        for d in &r.drift {
            what.push(cell(&format!(
                "drift `{}`{}: {}",
                d.category.as_str(),
                if d.fails { "" } else { " (warning)" },
                d.detail
            )));
        }
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | `{}` | {} |",
            r.verdict.as_str(),
            cell(r.scenario.as_deref().unwrap_or("-")),
            cell(r.case.as_deref().unwrap_or("-")),
            r.risk.map_or("-", |x| x.as_str()),
            if r.blocking { "yes" } else { "no" },
            cell(r.path.as_deref().unwrap_or("-")),
            what.join("<br>"),
        )?;
    }
    for f in &report.privacy {
        let at = f.line.map(|l| format!(":{l}")).unwrap_or_default();
        writeln!(
            out,
            "| privacy | - | - | - | {} | `{}{at}` | {} {} |",
            if f.fails { "yes" } else { "no" },
            cell(&f.file),
            cell(&f.kind),
            cell(f.fingerprint.as_deref().unwrap_or(""))
        )?;
    }
    for o in &report.obsolete {
        writeln!(
            out,
            "| obsolete | {} | {} | - | {} | `{}` | {} |",
            cell(&o.scenario),
            cell(&o.case),
            if o.finding.fails { "yes" } else { "no" },
            cell(&o.path),
            cell(&o.finding.detail)
        )?;
    }
    Ok(())
}
