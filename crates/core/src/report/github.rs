//! GitHub Actions workflow commands: `::error` per failure, `::warning` per warning, with the
//! workflow-command escaping rules.

use std::io::Write;

use super::model::{Report, RowVerdict};
use crate::oracle::Verdict;

/// Escapes a command's message: `%`, `\r`, `\n`.
pub fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a property value: as data, plus `:` and `,`.
pub fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// GitHub shows only the first few annotations of a step: at most this many are written, the
/// riskiest first, then one notice saying how many were left out.
pub const MAX_ANNOTATIONS: usize = 50;

/// One annotation, with what orders it.
struct Annotation {
    /// Risk rank: 0 Critical … 3 Low, 4 none.
    rank: u8,
    /// The workflow command line.
    line: String,
}

/// Collects annotations in report order.
struct Annotations(Vec<Annotation>);

impl Annotations {
    fn command(&mut self, rank: u8, level: &str, file: Option<&str>, title: &str, message: &str) {
        let mut props = Vec::new();
        if let Some(f) = file {
            props.push(format!("file={}", escape_property(f)));
        }
        props.push(format!("title={}", escape_property(title)));
        let line = format!("::{level} {}::{}", props.join(","), escape_data(message));
        self.0.push(Annotation { rank, line });
    }
}

fn rank(risk: Option<crate::scenario::Risk>) -> u8 {
    use crate::scenario::Risk;
    match risk {
        Some(Risk::Critical) => 0,
        Some(Risk::High) => 1,
        Some(Risk::Medium) => 2,
        Some(Risk::Low) => 3,
        None => 4,
    }
}

/// Writes one annotation per failure (and per warning), anchored on the scenario file: at most
/// [`MAX_ANNOTATIONS`], the riskiest first (errors before warnings at equal risk, otherwise in
/// report order), then a notice counting the rest.
pub fn render(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    let mut a = Annotations(Vec::new());
    collect(report, &mut a);
    let mut all = a.0;
    all.sort_by_key(|x| (x.rank, !x.line.starts_with("::error")));
    for x in all.iter().take(MAX_ANNOTATIONS) {
        writeln!(out, "{}", x.line)?;
    }
    if all.len() > MAX_ANNOTATIONS {
        writeln!(
            out,
            "::notice title={}::{}",
            escape_property("tracereplay"),
            escape_data(&format!(
                "{} more annotation(s) not shown (GitHub shows only the first of a step); the full list is in the job summary and in the JSON report (`--json FILE`)",
                all.len() - MAX_ANNOTATIONS
            ))
        )?;
    }
    report.results.readable()
}

fn collect(report: &Report, a: &mut Annotations) {
    // Case lines first: a case of several trials is judged as a whole.
    for c in report.cases.iter().filter(|c| c.is_set()) {
        if c.verdict == RowVerdict::Pass && !c.blocking && !c.flaky && c.drift.is_empty() {
            continue;
        }
        let mut msg = c.line();
        for d in &c.drift {
            msg.push_str(&format!("\ndrift {}: {}", d.category.as_str(), d.detail));
            if let Some(p) = d.p_adjusted {
                msg.push_str(&format!(" (adjusted p = {p:.6})"));
            }
        }
        a.command(
            rank(c.risk),
            if c.blocking { "error" } else { "warning" },
            None,
            &format!("case {} / {} ({} trials)", c.scenario, c.case, c.trials),
            &msg,
        );
    }
    for r in report.results.iter() {
        let k = rank(r.risk);
        let file = r.scenario_file.as_deref().or(r.path.as_deref());
        let who = format!(
            "{} / {}",
            r.scenario.as_deref().unwrap_or("-"),
            r.case.as_deref().unwrap_or("-")
        );
        let level = if r.blocking { "error" } else { "warning" };
        match r.verdict {
            RowVerdict::Pass => {}
            RowVerdict::Error => {
                let e = r.error.as_ref();
                a.command(
                    k,
                    "error",
                    file,
                    &format!("tracereplay error: {who}"),
                    &e.map_or(String::new(), |e| e.message.clone()),
                );
            }
            RowVerdict::Fail => {
                for o in r.oracles.iter().filter(|o| o.verdict != Verdict::Pass) {
                    let mut msg = format!("{}{}", o.message, o.score_note());
                    if !o.evidence.is_empty() {
                        msg.push_str(&format!(
                            "\nevidence: {} in {} ({})",
                            o.evidence_text(),
                            r.path.as_deref().unwrap_or("-"),
                            r.content_hash.as_deref().unwrap_or("-")
                        ));
                    }
                    a.command(k, level, file, &format!("{} failed: {who}", o.kind), &msg);
                }
            }
        }
        for d in &r.drift {
            let mut msg = d.detail.clone();
            if let Some(diff) = &d.diff {
                msg.push('\n');
                msg.push_str(diff);
            }
            a.command(
                k,
                if d.fails { "error" } else { "warning" },
                file,
                &format!("drift {}: {who}", d.category.as_str()),
                &msg,
            );
        }
    }
    for o in &report.obsolete {
        a.command(
            4,
            if o.finding.fails { "error" } else { "warning" },
            Some(&o.path),
            &format!("obsolete baseline: {} / {}", o.scenario, o.case),
            &o.finding.detail,
        );
    }
    for f in &report.privacy {
        let title = format!(
            "privacy {}{}",
            f.kind,
            f.fingerprint
                .as_deref()
                .map(|fp| format!(" {fp}"))
                .unwrap_or_default()
        );
        let file = match f.line {
            Some(l) => format!("{},line={l}", escape_property(&f.file)),
            None => escape_property(&f.file),
        };
        // Privacy findings rank first: they fail whatever the risk.
        a.0.push(Annotation {
            rank: 0,
            line: format!(
                "::{} file={file},title={}::{}",
                if f.fails { "error" } else { "warning" },
                escape_property(&title),
                escape_data(&f.message)
            ),
        });
    }
    for b in report.summary.usage.iter().flat_map(|u| &u.budgets) {
        if b.exceeded {
            a.command(0, "error", None, &format!("budget {}", b.budget), &b.detail);
        }
    }
    for w in &report.warnings {
        a.command(4, "warning", None, "tracereplay", w);
    }
}

/// The GitHub annotations as a [`super::Exporter`].
pub struct GithubExporter;

super::export::exporter!(
GithubExporter for super::Report, "GitHub annotations", None, |report, _, out| render(
    report, out
));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_follows_the_workflow_command_rules() {
        assert_eq!(escape_data("50% done\r\nnext"), "50%25 done%0D%0Anext");
        assert_eq!(escape_property("a:b,c%\n"), "a%3Ab%2Cc%25%0A");
    }
}
