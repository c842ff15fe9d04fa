//! The JSON report renderer.

use std::io::Write;

use serde::Serialize;

use super::model::Report;

/// Writes the report as pretty JSON with a final newline: the text `serde_json` writes for the
/// whole [`Report`], with the rows drawn in parallel (each decoded and written by a worker, in
/// order) instead of one after another through `out`.
pub fn render(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    // The fields before `results`, then the rows, then the fields after, in the order and with
    // the omissions `Report`'s derived `Serialize` has (a test holds the two equal).
    let head = pretty_text(&Head {
        schema_version: report.schema_version,
        tool: &report.tool,
        partition: report.partition.as_ref(),
        summary: &report.summary,
        baselines: &report.baselines,
    })?;
    let tail = pretty_text(&Tail {
        cases: &report.cases,
        thresholds: report.thresholds.as_ref(),
        privacy: &report.privacy,
        obsolete: &report.obsolete,
        warnings: &report.warnings,
    })?;
    // `{…\n}` without its closing brace, and `{\n…}` without its opening one.
    out.write_all(&head[..head.len() - 2])?;
    out.write_all(b",\n  \"results\": [")?;
    report.results.draw_in_order(out, |i, row, text| {
        text.extend_from_slice(if i == 0 { b"\n" } else { b",\n" });
        // A row is an element of an array two levels down: its pretty text, drawn at the top
        // level, indented by four spaces after every line break (JSON strings hold none).
        let drawn = pretty_text(row)?;
        text.extend_from_slice(b"    ");
        let mut rest = &drawn[..];
        while let Some(at) = memchr::memchr(b'\n', rest) {
            text.extend_from_slice(&rest[..=at]);
            text.extend_from_slice(b"    ");
            rest = &rest[at + 1..];
        }
        text.extend_from_slice(rest);
        Ok(())
    })?;
    out.write_all(if report.results.is_empty() {
        b"],"
    } else {
        b"\n  ],"
    })?;
    out.write_all(&tail[1..])?;
    out.write_all(b"\n")?;
    report.results.readable()
}

/// The fields of a [`Report`] before its rows, as its JSON holds them.
#[derive(Serialize)]
struct Head<'a> {
    schema_version: u32,
    tool: &'a super::model::ToolInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    partition: Option<&'a super::model::Partition>,
    summary: &'a super::model::Summary,
    baselines: &'a str,
}

/// The fields of a [`Report`] after its rows, as its JSON holds them.
#[derive(Serialize)]
struct Tail<'a> {
    #[serde(skip_serializing_if = "no_cases")]
    cases: &'a [super::cases::CaseRow],
    #[serde(skip_serializing_if = "Option::is_none")]
    thresholds: Option<&'a super::cases::Thresholds>,
    privacy: &'a [crate::privacy::lint::Finding],
    obsolete: &'a [super::model::ObsoleteBaseline],
    warnings: &'a [String],
}

fn no_cases(cases: &&[super::cases::CaseRow]) -> bool {
    cases.is_empty()
}

/// `value` as pretty JSON text (two spaces a level, no final newline).
fn pretty_text(value: &impl Serialize) -> std::io::Result<Vec<u8>> {
    let mut text = Vec::with_capacity(1024);
    serde_json::to_writer_pretty(&mut text, value)?;
    Ok(text)
}

/// The JSON report as a [`super::Exporter`].
pub struct JsonExporter;

super::export::exporter!(
    JsonExporter for super::Report,
    "JSON report",
    Some("report.json"),
    |report, _, out| render(report, out)
);

super::export::exporter!(
    JsonExporter for crate::diff::report::DiffReport,
    "JSON drift report",
    None,
    |report, _, out| pretty(report, out)
);

super::export::exporter!(
    JsonExporter for crate::privacy::lint::LintReport,
    "JSON lint findings",
    None,
    |lint, _, out| pretty(lint, out)
);

super::export::exporter!(
    JsonExporter for super::compare::RunComparison,
    "JSON comparison",
    None,
    |comparison, _, out| pretty(comparison, out)
);

/// Writes `value` as pretty JSON with a final newline.
fn pretty(value: &impl serde::Serialize, out: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value)?;
    out.write_all(b"\n")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::report::cases::{CaseRow, Thresholds};
    use crate::report::model::Partition;
    use crate::report::{ResultRow, RowVerdict, Rows};

    /// The text `Report`'s derived `Serialize` gives, which `render` must write byte for byte.
    fn derived(report: &Report) -> String {
        let mut text = serde_json::to_string_pretty(report).unwrap();
        text.push('\n');
        text
    }

    fn rendered(report: &Report) -> String {
        let mut text = Vec::new();
        render(report, &mut text).unwrap();
        String::from_utf8(text).unwrap()
    }

    fn demo() -> Report {
        let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/../../traces");
        let suite = crate::Suite::discover([demo]).unwrap();
        suite.check(&crate::CheckOptions::default()).unwrap()
    }

    fn case_row() -> CaseRow {
        CaseRow {
            scenario: "s".to_owned(),
            case: "c\n\"two\"".to_owned(),
            risk: None,
            trials: 4,
            passed: 3,
            verdict: RowVerdict::Fail,
            reason: Some("3 of 4".to_owned()),
            policy: true,
            known_gap: false,
            blocking: true,
            flaky: true,
            flaky_oracles: Vec::new(),
            pass_rate: Some(0.75),
            wilson: Some([0.3, 0.95]),
            pass_hat_k: None,
            pass_at_k: None,
            underpowered: false,
            underpowered_detail: None,
            family_p: BTreeMap::new(),
            drift: Vec::new(),
            tests: Vec::new(),
            baseline: None,
            usage_against_approved: None,
            sequential: None,
            group_drift: None,
        }
    }

    /// Rows drawn by the workers, the fields around them and the omitted ones: the demo suite's
    /// report, with and without the optional fields, with no rows, and with enough rows to span
    /// several windows of workers (each window's first row follows the last one's comma).
    #[test]
    fn the_parallel_report_is_the_text_serde_writes_for_it() {
        let mut report = demo();
        assert!(report.results.len() > 1 && report.partition.is_none() && report.cases.is_empty());
        assert_eq!(rendered(&report), derived(&report));

        report.partition = Some(Partition {
            share: 1,
            of: 2,
            suite: "b3:00".to_owned(),
            fail_on: None,
            rows: Some("b3:11".to_owned()),
        });
        report.cases = vec![case_row(), case_row()];
        report.thresholds = Some(Thresholds {
            alpha: 0.05,
            mode: "default".to_owned(),
            families: BTreeMap::new(),
            group_alpha: Some(0.01),
        });
        report.warnings = vec!["one\ttab".to_owned(), "two".to_owned()];
        assert_eq!(rendered(&report), derived(&report));

        let rows: Vec<ResultRow> = report.results.iter().collect();
        report.results = Rows::default();
        assert!(rendered(&report).contains("\"results\": [],\n"));
        assert_eq!(rendered(&report), derived(&report));

        let many = 9_000;
        report.results = (0..many)
            .map(|i| {
                let mut row = rows[i % rows.len()].clone();
                row.case = Some(format!("case-{i:05}"));
                row
            })
            .collect();
        let text = rendered(&report);
        assert_eq!(text, derived(&report));
        assert!(
            text.contains("\"case\": \"case-04095\"") && text.contains("\"case\": \"case-08999\"")
        );
    }

    /// A write of the rows that fails ends the report with its error.
    #[test]
    fn drawing_stops_at_the_first_failed_write() {
        /// Takes two writes (the fields before the rows, and the rows' key), then is full.
        struct Full(usize);
        impl Write for Full {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0 += 1;
                match self.0 {
                    ..=2 => Ok(bytes.len()),
                    _ => Err(std::io::Error::from(std::io::ErrorKind::StorageFull)),
                }
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut full = Full(0);
        let e = render(&demo(), &mut full).unwrap_err();
        assert_eq!((e.kind(), full.0), (std::io::ErrorKind::StorageFull, 3));
    }
}
