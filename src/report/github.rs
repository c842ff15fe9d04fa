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

fn command(
    out: &mut dyn Write,
    level: &str,
    file: Option<&str>,
    title: &str,
    message: &str,
) -> std::io::Result<()> {
    let mut props = Vec::new();
    if let Some(f) = file {
        props.push(format!("file={}", escape_property(f)));
    }
    props.push(format!("title={}", escape_property(title)));
    writeln!(
        out,
        "::{level} {}::{}",
        props.join(","),
        escape_data(message)
    )
}

/// Writes one annotation per failure (and per warning), anchored on the scenario file.
pub fn render(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    for r in report.results.iter() {
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
                command(
                    out,
                    "error",
                    file,
                    &format!("tracereplay error: {who}"),
                    &e.map_or(String::new(), |e| e.message.clone()),
                )?;
            }
            RowVerdict::Fail => {
                for o in r.oracles.iter().filter(|o| o.verdict != Verdict::Pass) {
                    let mut msg = o.message.clone();
                    if !o.evidence.is_empty() {
                        msg.push_str(&format!(
                            "\nevidence: {} in {} ({})",
                            o.evidence_text(),
                            r.path.as_deref().unwrap_or("-"),
                            r.content_hash.as_deref().unwrap_or("-")
                        ));
                    }
                    command(out, level, file, &format!("{} failed: {who}", o.kind), &msg)?;
                }
            }
        }
        for d in &r.drift {
            let mut msg = d.detail.clone();
            if let Some(diff) = &d.diff {
                msg.push('\n');
                msg.push_str(diff);
            }
            command(
                out,
                if d.fails { "error" } else { "warning" },
                file,
                &format!("drift {}: {who}", d.category.as_str()),
                &msg,
            )?;
        }
    }
    for o in &report.obsolete {
        command(
            out,
            if o.finding.fails { "error" } else { "warning" },
            Some(&o.path),
            &format!("obsolete baseline: {} / {}", o.scenario, o.case),
            &o.finding.detail,
        )?;
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
        writeln!(
            out,
            "::{} file={file},title={}::{}",
            if f.fails { "error" } else { "warning" },
            escape_property(&title),
            escape_data(&f.message)
        )?;
    }
    for w in &report.warnings {
        command(out, "warning", None, "tracereplay", w)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_follows_the_workflow_command_rules() {
        assert_eq!(escape_data("50% done\r\nnext"), "50%25 done%0D%0Anext");
        assert_eq!(escape_property("a:b,c%\n"), "a%3Ab%2Cc%25%0A");
    }
}
