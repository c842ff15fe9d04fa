//! The JSON report renderer.

use std::io::Write;

use super::model::Report;

/// Writes the report as pretty JSON with a final newline.
pub fn render(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, report)?;
    out.write_all(b"\n")?;
    report.results.readable()
}

/// The JSON report as a [`super::Exporter`].
pub struct Json;

super::export::exporter!(
    Json,
    "JSON report",
    Some("report.json"),
    |report, _, out| render(report, out)
);
