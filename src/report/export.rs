//! Report formats behind one trait: each format implements [`Exporter`] once, in its own file,
//! and is one variant of [`Format`]. `check` (its `--format` and the files it also writes),
//! `merge` and the run folder write every format through it, so a new format is one file, one
//! variant and its arm in [`Format::exporter`].

use std::io::Write;

use super::Report;
use super::html::HtmlContext;
use super::human::HumanOptions;
use crate::trace::Limits;

/// What a format may need beyond the report: how the run was made and shown.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExportContext<'a> {
    /// How the human format prints (colour, rows, quiet).
    pub human: HumanOptions,
    /// How the run was made, for the HTML report; without it, what the report alone says.
    pub html: Option<&'a HtmlContext>,
    /// Limits for reading the traces again (the HTML report's pages, the OTLP ids).
    pub limits: Limits,
    /// The run's time, in nanoseconds since the Unix epoch, for formats that stamp what they
    /// write (the OTLP records); `None`: [`super::html::report_time_nanos`] when written.
    pub time_unix_nano: Option<u64>,
}

/// One report format.
pub trait Exporter: Sync {
    /// What it writes, in words (`JSON report`): messages name it so.
    fn what(&self) -> &'static str;
    /// Its file's name in a run folder (`report.json`), when a run folder keeps it.
    fn file_name(&self) -> Option<&'static str>;
    /// Writes `report` to `out`.
    fn export(
        &self,
        report: &Report,
        ctx: &ExportContext<'_>,
        out: &mut dyn Write,
    ) -> std::io::Result<()>;
}

/// Implements [`Exporter`] for a format's unit struct: `exporter!(Json, "JSON report",
/// Some("report.json"), |report, ctx, out| render(report, out));` — what it writes, its
/// run-folder file and the writing — in the format's own file.
macro_rules! exporter {
    ($name:ident, $what:literal, $file:expr,
     |$report:ident, $ctx:pat_param, $out:ident| $body:expr) => {
        impl $crate::report::Exporter for $name {
            fn what(&self) -> &'static str {
                $what
            }

            fn file_name(&self) -> Option<&'static str> {
                $file
            }

            fn export(
                &self,
                $report: &$crate::report::Report,
                $ctx: &$crate::report::ExportContext<'_>,
                $out: &mut dyn std::io::Write,
            ) -> std::io::Result<()> {
                $body
            }
        }
    };
}
pub(crate) use exporter;

/// Every report format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Format {
    /// One line per result, failures with evidence, a summary.
    Human,
    /// The JSON report (`schema_version` 1).
    Json,
    /// JUnit XML.
    Junit,
    /// Markdown for a pull request or `$GITHUB_STEP_SUMMARY`.
    Markdown,
    /// GitHub Actions annotations (`::error` / `::warning`).
    Github,
    /// The HTML report: one self-contained page.
    Html,
    /// The verdicts as OTLP/JSON logs (GenAI evaluation events).
    Otlp,
}

impl Format {
    /// Every format, in this order.
    pub const ALL: [Format; 7] = [
        Format::Human,
        Format::Json,
        Format::Junit,
        Format::Markdown,
        Format::Github,
        Format::Html,
        Format::Otlp,
    ];

    /// The format's exporter.
    pub fn exporter(self) -> &'static dyn Exporter {
        match self {
            Format::Human => &super::human::Human,
            Format::Json => &super::json::Json,
            Format::Junit => &super::junit::Junit,
            Format::Markdown => &super::markdown::Markdown,
            Format::Github => &super::github::Github,
            Format::Html => &super::html::Html,
            Format::Otlp => &super::otlp::Otlp,
        }
    }

    /// Writes `report` in this format (its exporter's [`Exporter::export`]).
    pub fn export(
        self,
        report: &Report,
        ctx: &ExportContext<'_>,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        self.exporter().export(report, ctx, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_has_its_own_exporter_and_the_run_folder_files_are_distinct() {
        let whats: std::collections::BTreeSet<&str> =
            Format::ALL.iter().map(|f| f.exporter().what()).collect();
        assert_eq!(whats.len(), Format::ALL.len());
        let files: Vec<&str> = Format::ALL
            .iter()
            .filter_map(|f| f.exporter().file_name())
            .collect();
        assert_eq!(
            files,
            ["report.json", "junit.xml", "report.md", "report.html"]
        );
    }
}
