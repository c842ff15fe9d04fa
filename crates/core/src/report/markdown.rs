//! Markdown for a pull-request comment or `$GITHUB_STEP_SUMMARY`.

use std::io::Write;

use super::model::{Report, RowVerdict};
use crate::oracle::Verdict;

use super::markdown_cell as cell;

/// Writes the report as Markdown.
pub fn render(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    draw(report, out)?;
    // A row lost from its temporary file fails the report rather than showing as an error.
    report.results.readable()
}

/// What [`render`] writes.
fn draw(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    let mut written = Counting { out, chars: 0 };
    let out = &mut written;
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
    if let Some(u) = &s.usage {
        for line in u.lines() {
            let (head, rest) = line.split_once(": ").unwrap_or(("", &line));
            let mut head = head.to_owned();
            head[..1].make_ascii_uppercase();
            writeln!(out, "{head}: {}  ", cell(rest))?;
        }
        writeln!(out)?;
    }
    if let Some(cases) = s.cases {
        writeln!(
            out,
            "Cases: {cases} ({} flaky, {} underpowered); passed, failed and errors count cases.\n",
            s.flaky.unwrap_or(0),
            s.underpowered.unwrap_or(0)
        )?;
    }
    let attention: Vec<_> = report
        .results
        .iter()
        .filter(|r| r.verdict != RowVerdict::Pass || !r.drift.is_empty())
        .collect();
    let cases: Vec<&super::cases::CaseRow> = (report.cases.iter())
        .filter(|c| c.is_set())
        .filter(|c| c.verdict != RowVerdict::Pass || c.blocking || c.flaky || !c.drift.is_empty())
        .collect();
    if attention.is_empty()
        && cases.is_empty()
        && report.obsolete.is_empty()
        && report.privacy.is_empty()
    {
        writeln!(out, "Every trace passed with no drift.")?;
        return Ok(());
    }
    // Rows in the order a reviewer needs them: what fails the run, then ignored failures,
    // then warnings; each group in report order. The whole stays under GitHub's comment and
    // step-summary limit (65,536 characters): what does not fit is counted, not cut mid-row.
    let mut groups: [Vec<String>; 3] = Default::default();
    // Case lines first, each in its group.
    for c in &cases {
        let group = if c.blocking {
            0
        } else if c.verdict == RowVerdict::Fail {
            1
        } else {
            2
        };
        let mut what = cell(&c.line());
        for d in &c.drift {
            what.push_str(&format!("<br>{}: {}", d.category.as_str(), cell(&d.detail)));
            if let Some(p) = d.p_adjusted {
                what.push_str(&format!(" (adjusted p = {p:.6})"));
            }
        }
        groups[group].push(format!(
            "| case | {} | {} | {} | {} | {} trials | {what} |",
            cell(&c.scenario),
            cell(&c.case),
            c.risk.map_or("-", |r| r.as_str()),
            if c.blocking { "yes" } else { "no" },
            c.trials
        ));
    }
    for r in &attention {
        let group = if r.blocking {
            0
        } else if r.verdict == RowVerdict::Fail {
            1
        } else {
            2
        };
        groups[group].push(row_line(r));
    }
    for f in &report.privacy {
        let at = f.line.map(|l| format!(":{l}")).unwrap_or_default();
        groups[if f.fails { 0 } else { 2 }].push(format!(
            "| privacy | - | - | - | {} | `{}{at}` | {} {} |",
            if f.fails { "yes" } else { "no" },
            cell(&f.file),
            cell(&f.kind),
            cell(f.fingerprint.as_deref().unwrap_or(""))
        ));
    }
    for o in &report.obsolete {
        groups[if o.finding.fails { 0 } else { 2 }].push(format!(
            "| obsolete | {} | {} | - | {} | `{}` | {} |",
            cell(&o.scenario),
            cell(&o.case),
            if o.finding.fails { "yes" } else { "no" },
            cell(&o.path),
            cell(&o.finding.detail)
        ));
    }
    let head = "| verdict | scenario | case | risk | blocking | trace | what |\n|---|---|---|---|---|---|---|\n";
    let mut budget = MAX_CHARS.saturating_sub(written.chars + head.len() + FOOTER_RESERVE);
    let mut body = String::new();
    let mut left_out = [0usize; 3];
    for (g, lines) in groups.iter().enumerate() {
        for line in lines {
            let n = line.chars().count() + 1;
            if left_out.iter().any(|&l| l > 0) || n > budget {
                left_out[g] += 1;
                continue;
            }
            budget -= n;
            body.push_str(line);
            body.push('\n');
        }
    }
    let out = written.out;
    out.write_all(head.as_bytes())?;
    out.write_all(body.as_bytes())?;
    if left_out.iter().any(|&l| l > 0) {
        writeln!(
            out,
            "\n{} blocking row(s), {} ignored failure(s) and {} warning row(s) are left out to fit a pull request; every row is in the run folder (`--artifacts`: `report.md`, `report.json`) and the HTML report (`--html`).",
            left_out[0], left_out[1], left_out[2]
        )?;
    }
    Ok(())
}

/// A writer that counts the characters written through it.
struct Counting<'w> {
    out: &'w mut dyn Write,
    chars: usize,
}

impl Write for Counting<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        // UTF-8 continuation bytes do not start a character.
        self.chars += buf[..n].iter().filter(|b| (**b & 0xC0) != 0x80).count();
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// GitHub's limit on a comment or step summary is 65,536 characters; this leaves a margin.
const MAX_CHARS: usize = 65_000;

/// Room kept for the line that counts what was left out.
const FOOTER_RESERVE: usize = 400;

/// A single row's `what` cell is cut past this many characters.
const MAX_ROW_CHARS: usize = 4_000;

fn row_line(r: &super::model::ResultRow) -> String {
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
    let what = what.join("<br>");
    let what = match what.char_indices().nth(MAX_ROW_CHARS) {
        Some((i, _)) => format!("{}…", &what[..i]),
        None => what,
    };
    format!(
        "| {} | {} | {} | {} | {} | `{}` | {} |",
        r.verdict.as_str(),
        cell(r.scenario.as_deref().unwrap_or("-")),
        cell(r.case.as_deref().unwrap_or("-")),
        r.risk.map_or("-", |x| x.as_str()),
        if r.blocking { "yes" } else { "no" },
        cell(r.path.as_deref().unwrap_or("-")),
        what,
    )
}

/// The Markdown summary as a [`super::Exporter`].
pub struct MarkdownExporter;

super::export::exporter!(
    MarkdownExporter for super::Report,
    "Markdown summary",
    Some("report.md"),
    |report, _, out| render(report, out)
);
