//! The pure-data report every renderer works from. It is also the JSON wire format
//! (`schema_version` 1): fields may be added, never renamed.

use serde::{Deserialize, Serialize};

pub use crate::diff::{DriftCategory, DriftFinding};
use crate::oracle::OracleResult;
use crate::scenario::Risk;

/// The JSON report's schema version.
pub const SCHEMA_VERSION: u32 = 1;

/// A whole `check` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Always [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Which tool wrote it.
    pub tool: ToolInfo,
    /// The share of a partitioned run this report holds (`null`, and absent from the JSON,
    /// for a whole-suite or merged report).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<Partition>,
    /// Counts.
    pub summary: Summary,
    /// How baselines were handled in this run, in a sentence.
    pub baselines: String,
    /// One row per (scenario, case, path), one per scenario without a trace, one per scenario
    /// file that failed to load; sorted by scenario id, case, trial (in trial order), then path (bytewise).
    pub results: super::Rows,
    /// One line per (scenario, case), in (scenario, case) order: present only when some case of
    /// the run has several trials or was judged under a `trials` policy (a suite of single
    /// traces reports as it always did).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cases: Vec<super::cases::CaseRow>,
    /// The thresholds of the set drift tests, when trial sets were compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thresholds: Option<super::cases::Thresholds>,
    /// Privacy and secret findings, sorted by file and line.
    pub privacy: Vec<crate::privacy::lint::Finding>,
    /// Approved baselines without a trace, sorted by path.
    pub obsolete: Vec<ObsoleteBaseline>,
    /// Run-level diagnostics (skipped symlink loops…), sorted.
    pub warnings: Vec<String>,
    /// What the run tells whoever runs it without anything being wrong (where scenarios
    /// defined outside the checked paths were found): on stderr unless `--quiet`. Not in the
    /// JSON.
    #[serde(skip)]
    pub notes: Vec<String>,
    /// Files the run could not write (the result cache, pending baseline files); each is also
    /// among `warnings`. Not part of the JSON report: it decides the exit code (a full disk
    /// makes it 2).
    #[serde(skip)]
    pub failed_writes: Vec<FailedWrite>,
    /// The `--fail-on` value the run was judged under (`any`, `high`…), for reports that say
    /// why a failure was ignored; `None` for a merged or read-back report. Not in the JSON.
    #[serde(skip)]
    pub fail_on: Option<&'static str>,
}

/// A file a run could not write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedWrite {
    /// What could not be written, and why.
    pub message: String,
    /// Whether the disk (or quota) was full.
    pub disk_full: bool,
}

impl FailedWrite {
    /// A failure to write, described by `message`, caused by `e`.
    pub fn new(message: String, e: &std::io::Error) -> FailedWrite {
        FailedWrite {
            message,
            disk_full: crate::fsutil::is_disk_full(e),
        }
    }
}

/// Which share of which suite a partitioned run's report holds (`check --partition hash:K/N`):
/// `merge` takes the shares of one suite, each exactly once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partition {
    /// K, from 1.
    pub share: u64,
    /// N.
    pub of: u64,
    /// The fingerprint of the whole suite the share was cut from (`b3:` + hex): the options
    /// that change judging, every scenario id, and every trace file by path and content hash.
    pub suite: String,
    /// The `--fail-on` the share was judged under (part of `suite`), so that `merge` can
    /// recompute which rows block.
    #[serde(default)]
    pub fail_on: Option<String>,
    /// `b3:` over the suite, the label (share, of, fail-on) and every row and finding the share
    /// holds (`digest` in `eval/shares.rs`): a share whose rows, counts or label were
    /// changed after it was written no longer matches it.
    #[serde(default)]
    pub rows: Option<String>,
}

/// An approved baseline with no trace in this run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObsoleteBaseline {
    /// Scenario id, as the baseline records it.
    pub scenario: String,
    /// Case, as the baseline records it.
    pub case: String,
    /// The baseline file.
    pub path: String,
    /// The `obsolete` finding.
    pub finding: DriftFinding,
}

/// `{name, version}` of the tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    /// `tracereplay`.
    pub name: String,
    /// The crate version.
    pub version: String,
}

impl Default for ToolInfo {
    fn default() -> Self {
        ToolInfo {
            name: "tracereplay".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }
}

/// Counts over the rows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Trace files in scope (judged or not).
    pub traces: usize,
    /// Scenarios in scope.
    pub scenarios: usize,
    /// Rows with verdict `pass`.
    pub passed: usize,
    /// Rows with verdict `fail`.
    pub failed: usize,
    /// Rows with verdict `error`.
    pub errors: usize,
    /// Failing rows left out of the exit code by `--fail-on` or `knownGap`.
    pub ignored_failures: usize,
    /// Rows with drift from their approved baseline.
    pub drifted: usize,
    /// Traces without an approved baseline.
    pub new: usize,
    /// Approved baselines without a trace.
    pub obsolete: usize,
    /// Privacy and secret findings.
    pub privacy: usize,
    /// Rows (and findings) that make the exit code 1.
    pub blocking: usize,
    /// Cases (present with the `cases` list; `passed`, `failed` and `errors` then count
    /// cases, `traces` trace files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cases: Option<usize>,
    /// Cases marked flaky.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flaky: Option<usize>,
    /// Cases whose set comparison is underpowered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub underpowered: Option<usize>,
    /// What the judged traces used and cost, the budgets, and the change against the approved
    /// baselines (present when some trace was judged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::report::usage::SuiteUsage>,
}

/// A row's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RowVerdict {
    /// Every oracle passed.
    Pass,
    /// Some oracle failed or was not evaluable.
    Fail,
    /// Could not be judged at all.
    Error,
}

impl RowVerdict {
    /// `pass`, `fail` or `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            RowVerdict::Pass => "pass",
            RowVerdict::Fail => "fail",
            RowVerdict::Error => "error",
        }
    }
}

/// Where a row's evidence came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// A stored trace file.
    Trace,
    /// A scenario file (load errors, scenarios without a trace).
    Scenario,
    /// A scenario's `scriptedTrace`, judged with `check --scripted`.
    Scripted,
}

pub use crate::common::RowErrorKind;

/// Why a row could not be judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowError {
    /// What kind of problem.
    pub category: RowErrorKind,
    /// A plain message naming the file (and line).
    pub message: String,
    /// The line, where there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
}

/// The leading fields of a result row, as plain data: what a renderer needs to list the rows
/// (and decide which to show whole) without taking each one whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowSummary {
    /// Scenario id.
    pub scenario: Option<String>,
    /// Case.
    pub case: Option<String>,
    /// The trial.
    pub trial: Option<String>,
    /// The trace (or scenario) file.
    pub path: Option<String>,
    /// The approved baseline compared with.
    pub baseline: Option<String>,
    /// The trace's verified content hash.
    pub content_hash: Option<String>,
    /// The verdict.
    pub verdict: RowVerdict,
    /// Where the evidence came from.
    pub source: Source,
    /// The scenario's risk.
    pub risk: Option<Risk>,
    /// Whether the scenario is a known gap.
    pub known_gap: bool,
    /// Whether the row makes the exit code 1.
    pub blocking: bool,
    /// Whether the trace was sealed.
    pub sealed: Option<bool>,
    /// Whether a drift finding is `new`.
    pub drift_new: bool,
    /// Whether a drift finding is anything but `new`.
    pub drift_other: bool,
    /// The row's warnings.
    pub warnings: Vec<String>,
}

/// One result row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultRow {
    /// Scenario id (the scenario's spelling, or the trace header's when unknown; `null` when
    /// neither is known).
    pub scenario: Option<String>,
    /// Case (`null` when not known).
    pub case: Option<String>,
    /// The trial of the case this trace records (absent when its header names none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial: Option<String>,
    /// The trace file, or the scenario file for rows without a trace.
    pub path: Option<String>,
    /// The file defining the scenario (`null` when unknown).
    pub scenario_file: Option<String>,
    /// The trace's verified content hash.
    pub content_hash: Option<String>,
    /// The scenario's risk (`null` when the scenario is unknown).
    pub risk: Option<Risk>,
    /// The verdict.
    pub verdict: RowVerdict,
    /// Where the evidence came from.
    pub source: Source,
    /// Whether the trace was sealed (`null` when it was not read).
    pub sealed: Option<bool>,
    /// Whether the scenario is a known gap.
    pub known_gap: bool,
    /// Whether this row makes the exit code 1.
    pub blocking: bool,
    /// Every oracle result, in declaration order, then `run-completed`.
    pub oracles: Vec<OracleResult>,
    /// The approved baseline this row is compared with (`null` when baselines are not compared).
    pub baseline: Option<String>,
    /// Drift findings.
    pub drift: Vec<DriftFinding>,
    /// What the run's inferences used and cost (rows judged from a trace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::report::usage::RunUsage>,
    /// What its approved baseline's run used (rows compared with one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_usage: Option<crate::baseline::UsageRecord>,
    /// Why the row could not be judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RowError>,
    /// What the reader noticed without refusing the trace.
    pub warnings: Vec<String>,
    /// Copies of the events the oracles cite, kept for failing rows only (for the run folder's
    /// evidence files); not part of the JSON report.
    #[serde(skip)]
    pub cited_events: Vec<serde_json::Value>,
    /// Secrets found in the trace's bytes; moved to the report's `privacy` list.
    #[serde(skip)]
    pub privacy: Vec<crate::privacy::lint::Finding>,
}

impl ResultRow {
    /// Makes the row an `error` row of `category`, with its message and (where known) line.
    pub fn set_error(&mut self, category: RowErrorKind, message: String, line: Option<usize>) {
        self.verdict = RowVerdict::Error;
        self.error = Some(RowError {
            category,
            message,
            line,
        });
    }

    /// Masks every secret the scan recognises (and `waived` does not list) in what a renderer
    /// shows of the row: oracle messages, expected and found values, drift details and diffs,
    /// the error message, warnings and cited events.
    pub fn mask_secrets(&mut self, waived: &std::collections::HashSet<String>) {
        use crate::privacy::mask::{mask_string, mask_value};
        (self.oracles.iter_mut()).for_each(|o| o.mask_secrets(waived));
        (self.drift.iter_mut()).for_each(|d| d.mask_secrets(waived));
        if let Some(e) = &mut self.error {
            mask_string(&mut e.message, waived);
        }
        (self.warnings.iter_mut()).for_each(|w| mask_string(w, waived));
        (self.cited_events.iter_mut()).for_each(|e| mask_value(e, waived));
    }

    /// A row that knows only its file and where it came from: an `error` row until judged.
    pub fn blank(path: Option<String>, source: Source) -> ResultRow {
        ResultRow {
            scenario: None,
            case: None,
            trial: None,
            path,
            scenario_file: None,
            content_hash: None,
            risk: None,
            verdict: RowVerdict::Error,
            source,
            sealed: None,
            known_gap: false,
            blocking: false,
            oracles: Vec::new(),
            baseline: None,
            drift: Vec::new(),
            usage: None,
            approved_usage: None,
            error: None,
            warnings: Vec::new(),
            cited_events: Vec::new(),
            privacy: Vec::new(),
        }
    }
}

impl Report {
    /// Whether the run should exit 1.
    pub fn is_failure(&self) -> bool {
        self.summary.blocking > 0
    }
}
