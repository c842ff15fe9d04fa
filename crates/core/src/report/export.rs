//! Report formats behind one trait: each format implements [`Exporter`] once per document it
//! writes, in its own file, and is one variant of [`Format`]. The documents are the run's
//! [`Report`], `diff`'s [`DiffReport`], `lint`'s [`LintReport`] and `report --compare`'s
//! [`RunComparison`], each an [`Exportable`] that says which formats write it. `check` (its
//! `--format` and the files it also writes), `diff`, `lint`, `merge`, `report --compare` and the
//! run folder write every format through it, so a new format is one file, one variant and its
//! arm in each document's [`Exportable::exporter`].

use std::io::Write;

use super::Report;
use super::compare::RunComparison;
use super::html::HtmlContext;
use super::human::HumanOptions;
use crate::diff::report::DiffReport;
use crate::privacy::lint::LintReport;
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

/// One report format, for one kind of document (`D`, by default the run's [`Report`]).
pub trait Exporter<D: ?Sized = Report>: Sync {
    /// What it writes, in words (`JSON report`): messages name it so.
    fn what(&self) -> &'static str;
    /// Its file's name in a run folder (`report.json`), when a run folder keeps it.
    fn file_name(&self) -> Option<&'static str>;
    /// Writes `doc` to `out`.
    fn export(&self, doc: &D, ctx: &ExportContext<'_>, out: &mut dyn Write) -> std::io::Result<()>;
}

/// Implements [`Exporter`] of a document for a format's unit struct: `exporter!(JsonExporter for
/// Report, "JSON report", Some("report.json"), |report, ctx, out| render(report, out));` —
/// what it writes, its run-folder file and the writing — in the format's own file.
macro_rules! exporter {
    ($name:ident for $doc:ty, $what:literal, $file:expr,
     |$report:ident, $ctx:pat_param, $out:ident| $body:expr) => {
        impl $crate::report::Exporter<$doc> for $name {
            fn what(&self) -> &'static str {
                $what
            }

            fn file_name(&self) -> Option<&'static str> {
                $file
            }

            fn export(
                &self,
                $report: &$doc,
                $ctx: &$crate::report::ExportContext<'_>,
                $out: &mut dyn std::io::Write,
            ) -> std::io::Result<()> {
                $body
            }
        }
    };
}
pub(crate) use exporter;

/// Declares [`Format`] and the lists derived from it — [`Format::ALL`], [`Format::name`],
/// [`Format::about`] — from one list, so a format cannot be left out of any of them.
macro_rules! formats {
    ($($(#[doc = $about:literal])+ $variant:ident = $name:literal,)+) => {
        /// Every report format.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Format {
            $($(#[doc = $about])+ $variant,)+
        }

        impl Format {
            /// Every format, in declaration order.
            pub const ALL: [Format; [$(Format::$variant),+].len()] = [$(Format::$variant),+];

            /// The format's name, as the command line spells it (`human`, `json`, …).
            pub fn name(self) -> &'static str {
                match self {
                    $(Format::$variant => $name,)+
                }
            }

            /// What the format is, in a line.
            pub fn about(self) -> &'static str {
                match self {
                    $(Format::$variant => concat!($($about),+).trim_ascii().trim_end_matches('.'),)+
                }
            }
        }
    };
}

formats! {
    /// One line per result, failures with evidence, a summary.
    Human = "human",
    /// The JSON report (`schema_version` 1).
    Json = "json",
    /// JUnit XML.
    Junit = "junit",
    /// Markdown for a pull request or `$GITHUB_STEP_SUMMARY`.
    Markdown = "markdown",
    /// GitHub Actions annotations (`::error` / `::warning`).
    Github = "github",
    /// The HTML report: one self-contained page.
    Html = "html",
    /// The verdicts as OTLP/JSON logs (GenAI evaluation events).
    Otlp = "otlp",
}

impl Format {
    /// The format named `name` ([`Format::name`]).
    pub fn named(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The format's exporter of the run's report.
    pub fn exporter(self) -> &'static dyn Exporter {
        match self {
            Format::Human => &super::human::HumanExporter,
            Format::Json => &super::json::JsonExporter,
            Format::Junit => &super::junit::JunitExporter,
            Format::Markdown => &super::markdown::MarkdownExporter,
            Format::Github => &super::github::GithubExporter,
            Format::Html => &super::html::HtmlExporter,
            Format::Otlp => &super::otlp::OtlpExporter,
        }
    }

    /// Writes `doc` in this format (its exporter's [`Exporter::export`]); a format that does
    /// not write such documents is an [`std::io::ErrorKind::Unsupported`] error naming both.
    pub fn export<D: Exportable>(
        self,
        doc: &D,
        ctx: &ExportContext<'_>,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        match D::exporter(self) {
            Some(exporter) => exporter.export(doc, ctx, out),
            None => Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                format!("{} is not written as {self:?}", D::WHAT),
            )),
        }
    }
}

/// A document the formats write, and which of them do.
pub trait Exportable: Sized + 'static {
    /// What it is, in words (`drift report`).
    const WHAT: &'static str;
    /// Its exporter in `format`, if that format writes it.
    fn exporter(format: Format) -> Option<&'static dyn Exporter<Self>>;
    /// The formats that write it, in [`Format::ALL`]'s order.
    fn formats() -> Vec<Format> {
        Format::ALL
            .into_iter()
            .filter(|f| Self::exporter(*f).is_some())
            .collect()
    }
}

impl Exportable for Report {
    const WHAT: &'static str = "a run's report";
    fn exporter(format: Format) -> Option<&'static dyn Exporter<Self>> {
        Some(format.exporter())
    }
}

/// The two formats every document is written in: for a person, and JSON.
fn human_or_json<D>(format: Format) -> Option<&'static dyn Exporter<D>>
where
    super::human::HumanExporter: Exporter<D>,
    super::json::JsonExporter: Exporter<D>,
{
    match format {
        Format::Human => Some(&super::human::HumanExporter),
        Format::Json => Some(&super::json::JsonExporter),
        Format::Junit | Format::Markdown | Format::Github | Format::Html | Format::Otlp => None,
    }
}

impl Exportable for DiffReport {
    const WHAT: &'static str = "a drift report";
    fn exporter(format: Format) -> Option<&'static dyn Exporter<Self>> {
        human_or_json(format)
    }
}

impl Exportable for LintReport {
    const WHAT: &'static str = "lint findings";
    fn exporter(format: Format) -> Option<&'static dyn Exporter<Self>> {
        human_or_json(format)
    }
}

impl Exportable for RunComparison {
    const WHAT: &'static str = "a comparison of two runs";
    fn exporter(format: Format) -> Option<&'static dyn Exporter<Self>> {
        match format {
            Format::Html => Some(&super::html::HtmlExporter),
            Format::Human | Format::Json => human_or_json(format),
            Format::Junit | Format::Markdown | Format::Github | Format::Otlp => None,
        }
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

    #[test]
    fn each_document_says_which_formats_write_it_and_the_others_are_refused() {
        assert_eq!(Report::formats(), Format::ALL);
        assert_eq!(DiffReport::formats(), [Format::Human, Format::Json]);
        assert_eq!(LintReport::formats(), [Format::Human, Format::Json]);
        assert_eq!(
            RunComparison::formats(),
            [Format::Human, Format::Json, Format::Html]
        );
        let err = Format::Junit
            .export(
                &DiffReport::default(),
                &ExportContext::default(),
                &mut Vec::new(),
            )
            .unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::Unsupported);
        assert_eq!(err.to_string(), "a drift report is not written as Junit");
    }
}
