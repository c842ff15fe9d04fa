//! The `diff` report: drift per (scenario, case), what only one side has, and what could not be
//! read; with human and JSON renderers.

use std::io::Write;

use serde::Serialize;

use super::{DriftCategory, DriftFinding};

/// One compared (scenario, case).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiffEntry {
    /// Scenario id.
    pub scenario: String,
    /// Case.
    pub case: String,
    /// The approved baseline or the older trace (`null` when there is none).
    pub old: Option<String>,
    /// The current or newer trace (`null` for an obsolete baseline).
    pub new: Option<String>,
    /// What moved.
    pub drift: Vec<DriftFinding>,
}

/// A trace only one side has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unpaired {
    /// Scenario id.
    pub scenario: String,
    /// Case.
    pub case: String,
    /// The trace.
    pub path: String,
}

/// Counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DiffSummary {
    /// (scenario, case) pairs compared.
    pub compared: usize,
    /// Entries with at least one finding.
    pub drifted: usize,
    /// Traces only in the old recording.
    pub only_old: usize,
    /// Traces only in the new recording.
    pub only_new: usize,
    /// Inputs that could not be read.
    pub errors: usize,
}

/// Writes one finding, its diff indented below it, in colour when asked.
pub fn write_finding(d: &DriftFinding, color: bool, out: &mut dyn Write) -> std::io::Result<()> {
    let paint = |code: &str, t: &str| {
        if color {
            format!("\x1b[{code}m{t}\x1b[0m")
        } else {
            t.to_owned()
        }
    };
    let tag = if d.fails {
        paint("31", "drift")
    } else {
        paint("33", "warning")
    };
    let detail = crate::common::text::escape_controls(&d.detail);
    writeln!(out, "      {tag} {}: {detail}", d.category.as_str())?;
    for line in d.diff.iter().flat_map(|t| t.lines()) {
        let line = &*crate::common::text::escape_controls(line);
        let text = match line.as_bytes().first() {
            Some(b'+') => paint("32", line),
            Some(b'-') => paint("31", line),
            Some(b'@') => paint("36", line),
            _ => line.to_owned(),
        };
        writeln!(out, "          {text}")?;
    }
    Ok(())
}

/// The whole `diff` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DiffReport {
    /// Always 1.
    pub schema_version: u32,
    /// Counts.
    pub summary: DiffSummary,
    /// Compared entries, sorted by scenario, case; only entries with drift are listed.
    pub entries: Vec<DiffEntry>,
    /// Only in the old recording.
    pub only_old: Vec<Unpaired>,
    /// Only in the new recording.
    pub only_new: Vec<Unpaired>,
    /// Inputs that could not be read, each naming its file.
    pub errors: Vec<String>,
    /// The cases compared as sets of trials (`diff --from --to` where a side has several
    /// trials of a case): absent when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sets: Option<super::sets::SetSummary>,
}

impl DiffReport {
    /// Fills the summary from the lists and sorts them.
    pub fn finish(mut self, compared: usize) -> Self {
        self.schema_version = 1;
        self.entries.retain(|e| !e.drift.is_empty());
        self.entries.sort_by(|a, b| {
            (&a.scenario, &a.case, &a.new, &a.old).cmp(&(&b.scenario, &b.case, &b.new, &b.old))
        });
        self.only_old
            .sort_by(|a, b| (&a.scenario, &a.case, &a.path).cmp(&(&b.scenario, &b.case, &b.path)));
        self.only_new
            .sort_by(|a, b| (&a.scenario, &a.case, &a.path).cmp(&(&b.scenario, &b.case, &b.path)));
        self.errors.sort();
        self.summary = DiffSummary {
            compared,
            drifted: self.entries.len(),
            only_old: self.only_old.len(),
            only_new: self.only_new.len(),
            errors: self.errors.len(),
        };
        self
    }

    /// Whether anything drifted or is unpaired.
    pub fn has_drift(&self) -> bool {
        !self.entries.is_empty() || !self.only_old.is_empty() || !self.only_new.is_empty()
    }

    /// Writes the report for a person.
    pub fn render_human(&self, color: bool, out: &mut dyn Write) -> std::io::Result<()> {
        let paint = |code: &str, t: &str| {
            if color {
                format!("\x1b[{code}m{t}\x1b[0m")
            } else {
                t.to_owned()
            }
        };
        for e in &self.entries {
            let label = match e.drift.first().map(|d| d.category) {
                Some(DriftCategory::New) => paint("33", "NEW     "),
                Some(DriftCategory::Obsolete) => paint("33", "OBSOLETE"),
                _ => paint("31", "DRIFT   "),
            };
            let paths = match (&e.old, &e.new) {
                (Some(o), Some(n)) => format!("{o} -> {n}"),
                (Some(o), None) => o.clone(),
                (None, Some(n)) => n.clone(),
                (None, None) => String::new(),
            };
            writeln!(out, "{label} {}/{}  {paths}", e.scenario, e.case)?;
            for d in &e.drift {
                write_finding(d, color, out)?;
            }
        }
        for u in &self.only_old {
            writeln!(out, "only in OLD  {}/{}  {}", u.scenario, u.case, u.path)?;
        }
        for u in &self.only_new {
            writeln!(out, "only in NEW  {}/{}  {}", u.scenario, u.case, u.path)?;
        }
        for e in &self.errors {
            writeln!(out, "{} {e}", paint("31", "error:"))?;
        }
        if let Some(sets) = &self.sets {
            writeln!(
                out,
                "trial sets: {} case(s), mean pass rate {:.3} -> {:.3} ({:+.3}); {} drifted, {} underpowered at α = {}",
                sets.cases,
                sets.mean_pass_rate_old,
                sets.mean_pass_rate_new,
                sets.change,
                sets.drifted,
                sets.underpowered,
                sets.alpha
            )?;
            for e in &sets.cases_by_effect {
                let counts = |s: &crate::diff::trial_drift::Side| match s {
                    crate::diff::trial_drift::Side::Counts { n, passed } => format!("{passed}/{n}"),
                    crate::diff::trial_drift::Side::Median { n, median } => {
                        format!("{median} of {n}")
                    }
                };
                writeln!(
                    out,
                    "  {:+.3}  {}/{}  {} -> {}{}",
                    e.delta,
                    e.scenario,
                    e.case,
                    counts(&e.old),
                    counts(&e.new),
                    if e.underpowered.is_some() {
                        "  (underpowered)"
                    } else {
                        ""
                    }
                )?;
            }
        }
        let s = &self.summary;
        writeln!(
            out,
            "{} compared: {} drifted, {} only in old, {} only in new, {} errors",
            s.compared, s.drifted, s.only_old, s.only_new, s.errors
        )
    }
}
