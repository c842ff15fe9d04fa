//! The JSON report renderer.

use std::io::Write;

use super::model::Report;

/// Writes the report as pretty JSON with a final newline.
pub fn render(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    pretty(report, out)?;
    report.results.readable()
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
