//! Judging a suite: load scenarios, read and verify every trace in parallel, judge it against its
//! scenario, and assemble one deterministically ordered report.

use std::collections::HashMap;

use camino::Utf8PathBuf;
use rayon::prelude::*;

use crate::discover::{Discovered, display_path};
use crate::oracle::{self, Verdict};
use crate::report::{Report, ResultRow, RowError, RowVerdict, Source, Summary, ToolInfo};
use crate::scenario::{Risk, Scenario, ScenarioError, load_scenarios};
use crate::trace::{Limits, TraceError, TraceFile, parse_trace};

/// Which failing traces make the exit code 1, by their scenario's risk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailOn {
    /// Every failure.
    Any,
    /// High and Critical (the harness's default).
    #[default]
    High,
    /// Critical only.
    Critical,
    /// No failure (errors still count).
    None,
}

impl FailOn {
    /// Whether a failure at `risk` counts.
    pub fn counts(self, risk: Risk) -> bool {
        match self {
            FailOn::Any => true,
            FailOn::High => risk >= Risk::High,
            FailOn::Critical => risk >= Risk::Critical,
            FailOn::None => false,
        }
    }
}

/// What `check` needs besides the discovered files.
#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    /// Size limits.
    pub limits: Limits,
    /// Unsealed traces are integrity failures.
    pub require_sealed: bool,
    /// Which failures count.
    pub fail_on: FailOn,
    /// Only these scenario ids (case-insensitive); empty means all.
    pub scenarios: Vec<String>,
    /// Only scenarios with one of these tags (or `type`); empty means all.
    pub tags: Vec<String>,
    /// Worker threads; `None` means all cores.
    pub threads: Option<usize>,
    /// The sentence the report gives about baselines.
    pub baselines_note: String,
}

/// Why `check` could not do its job at all.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// Nothing to judge.
    #[error(
        "no scenario and no trace found under {paths}; point `check` at a directory holding `*.scenario.json` and `*.trace.ndjson.zst` files"
    )]
    NothingFound {
        /// The paths searched.
        paths: String,
    },
    /// A filter matched no scenario.
    #[error("no scenario matches {filter}")]
    NoMatch {
        /// The filter, described.
        filter: String,
    },
    /// The worker pool could not start.
    #[error("cannot start {threads} worker threads")]
    Threads {
        /// Requested threads.
        threads: usize,
        /// The cause.
        #[source]
        source: rayon::ThreadPoolBuildError,
    },
}

/// A scenario ready to judge, or the reason it cannot be.
struct Entry<'s> {
    scenario: &'s Scenario,
    problems: Vec<String>,
    in_scope: bool,
}

/// Runs `check` over discovered files.
pub fn check(
    found: &Discovered,
    searched: &[Utf8PathBuf],
    opts: &CheckOptions,
) -> Result<Report, CheckError> {
    let loaded = load_scenarios(&found.scenario_files, &found.suite_files);
    if loaded.scenarios.is_empty() && loaded.errors.is_empty() && found.trace_files.is_empty() {
        let paths: Vec<String> = searched.iter().map(|p| format!("`{p}`")).collect();
        return Err(CheckError::NothingFound {
            paths: paths.join(", "),
        });
    }
    let entries = index_scenarios(&loaded.scenarios, opts);
    if (!opts.scenarios.is_empty() || !opts.tags.is_empty())
        && !entries.values().any(|e| e.in_scope)
    {
        let mut parts: Vec<String> = opts
            .scenarios
            .iter()
            .map(|s| format!("--scenario `{s}`"))
            .collect();
        parts.extend(opts.tags.iter().map(|t| format!("--tag `{t}`")));
        return Err(CheckError::NoMatch {
            filter: parts.join(" and "),
        });
    }
    let judge_all = || -> Vec<Option<ResultRow>> {
        found
            .trace_files
            .par_iter()
            .map(|path| judge_file(path, &entries, opts))
            .collect()
    };
    let trace_rows = match opts.threads {
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map_err(|source| CheckError::Threads { threads: n, source })?
            .install(judge_all),
        None => judge_all(),
    };
    let traces = trace_rows.len();
    let mut rows: Vec<ResultRow> = trace_rows.into_iter().flatten().collect();

    let mut seen: HashMap<String, ()> = HashMap::new();
    for r in &rows {
        if let Some(s) = &r.scenario {
            seen.insert(s.to_lowercase(), ());
        }
    }
    let mut scenarios_in_scope = 0;
    let mut listed: Vec<&Entry> = entries.values().filter(|e| e.in_scope).collect();
    listed.sort_by(|a, b| a.scenario.id.cmp(&b.scenario.id));
    for e in listed {
        scenarios_in_scope += 1;
        if seen.contains_key(&e.scenario.id.to_lowercase()) {
            continue;
        }
        let (category, message) = if e.problems.is_empty() {
            (
                "no-trace",
                format!(
                    "no trace found for scenario `{}` (defined in `{}`)",
                    e.scenario.id,
                    display_path(&e.scenario.file)
                ),
            )
        } else {
            (
                "scenario-invalid",
                format!(
                    "`{}`: {}",
                    display_path(&e.scenario.file),
                    e.problems.join("; ")
                ),
            )
        };
        rows.push(error_row(
            Some(e.scenario),
            None,
            Some(display_path(&e.scenario.file)),
            Source::Scenario,
            category,
            message,
            None,
        ));
    }
    for err in &loaded.errors {
        rows.push(scenario_error_row(err));
    }
    rows.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    let mut summary = Summary {
        traces,
        scenarios: scenarios_in_scope,
        ..Summary::default()
    };
    for row in &mut rows {
        match row.verdict {
            RowVerdict::Pass => summary.passed += 1,
            RowVerdict::Fail => summary.failed += 1,
            RowVerdict::Error => summary.errors += 1,
        }
        row.blocking = match row.verdict {
            RowVerdict::Pass => false,
            RowVerdict::Error => true,
            RowVerdict::Fail => !row.known_gap && opts.fail_on.counts(row.risk.unwrap_or_default()),
        };
        if row.verdict == RowVerdict::Fail && !row.blocking {
            summary.ignored_failures += 1;
        }
        if row.blocking {
            summary.blocking += 1;
        }
    }
    let mut warnings = found.warnings.clone();
    warnings.sort();
    Ok(Report {
        schema_version: crate::report::SCHEMA_VERSION,
        tool: ToolInfo::default(),
        summary,
        baselines: opts.baselines_note.clone(),
        results: rows,
        warnings,
    })
}

fn index_scenarios<'s>(
    scenarios: &'s [Scenario],
    opts: &CheckOptions,
) -> HashMap<String, Entry<'s>> {
    let mut entries: HashMap<String, Entry<'s>> = HashMap::new();
    let mut duplicates: HashMap<String, Vec<String>> = HashMap::new();
    for s in scenarios {
        let key = s.id.to_lowercase();
        if let Some(first) = entries.get(&key) {
            duplicates
                .entry(key)
                .or_insert_with(|| vec![display_path(&first.scenario.file)])
                .push(display_path(&s.file));
            continue;
        }
        let in_scope = (opts.scenarios.is_empty()
            || opts
                .scenarios
                .iter()
                .any(|f| f.trim().to_lowercase() == key))
            && (opts.tags.is_empty() || opts.tags.iter().any(|t| s.has_tag(t)));
        entries.insert(
            key,
            Entry {
                scenario: s,
                problems: basic_problems(s),
                in_scope,
            },
        );
    }
    for (key, files) in duplicates {
        if let Some(e) = entries.get_mut(&key) {
            e.problems.push(format!(
                "scenario id `{}` is defined more than once (in {})",
                e.scenario.id,
                files.join(", ")
            ));
        }
    }
    entries
}

/// Problems that make a scenario unjudgeable: a scenario without oracles proves nothing.
fn basic_problems(s: &Scenario) -> Vec<String> {
    let mut problems = Vec::new();
    if s.title.trim().is_empty() {
        problems.push(format!("scenario `{}` has a blank `title`", s.id));
    }
    if s.oracles.is_empty() {
        problems.push(format!(
            "scenario `{}` has no oracles, so it proves nothing; add at least one to `oracles`",
            s.id
        ));
    }
    problems
}

fn judge_file(
    path: &Utf8PathBuf,
    entries: &HashMap<String, Entry<'_>>,
    opts: &CheckOptions,
) -> Option<ResultRow> {
    let shown = display_path(path);
    let file = match TraceFile::open(path, opts.limits) {
        Ok(f) => f,
        Err(e) => return Some(trace_error_row(&shown, None, &e)),
    };
    let seal = match file.verify_seal(opts.require_sealed) {
        Ok(s) => s,
        Err(e) => return Some(trace_error_row(&shown, None, &e)),
    };
    let parsed = match parse_trace(&file, &seal, opts.limits) {
        Ok(p) => p,
        Err(e) => {
            let mut row = trace_error_row(&shown, None, &e);
            row.content_hash = Some(seal.content_hash.clone());
            row.sealed = Some(seal.sealed);
            return Some(row);
        }
    };
    let header = &parsed.trace.header;
    let key = header.scenario.to_lowercase();
    let entry = entries.get(&key);
    let filtered = !opts.scenarios.is_empty() || !opts.tags.is_empty();
    match entry {
        Some(e) if !e.in_scope => return None,
        None if filtered
            && !opts
                .scenarios
                .iter()
                .any(|f| f.trim().to_lowercase() == key) =>
        {
            return None;
        }
        _ => {}
    }
    let mut row = ResultRow {
        scenario: Some(
            entry.map_or_else(|| header.scenario.to_string(), |e| e.scenario.id.clone()),
        ),
        case: Some(header.case.to_string()),
        path: Some(shown.clone()),
        content_hash: Some(seal.content_hash.clone()),
        risk: entry.map(|e| e.scenario.risk),
        verdict: RowVerdict::Error,
        source: Source::Trace,
        sealed: Some(seal.sealed),
        known_gap: entry.is_some_and(|e| e.scenario.known_gap),
        blocking: false,
        oracles: Vec::new(),
        drift: Vec::new(),
        error: None,
        warnings: parsed.warnings.clone(),
    };
    match entry {
        None => {
            row.error = Some(RowError {
                category: "unknown-scenario".into(),
                message: format!(
                    "`{shown}` names scenario `{}`, which no loaded scenario file defines",
                    header.scenario
                ),
                line: Some(1),
            });
        }
        Some(e) if !e.problems.is_empty() => {
            row.error = Some(RowError {
                category: "scenario-invalid".into(),
                message: format!(
                    "`{}`: {}",
                    display_path(&e.scenario.file),
                    e.problems.join("; ")
                ),
                line: None,
            });
        }
        Some(e) => {
            row.oracles = oracle::judge(e.scenario, &parsed.trace);
            row.verdict = match oracle::overall(&row.oracles) {
                Verdict::Pass => RowVerdict::Pass,
                Verdict::Fail | Verdict::NotEvaluable => RowVerdict::Fail,
            };
        }
    }
    Some(row)
}

fn error_row(
    scenario: Option<&Scenario>,
    case: Option<String>,
    path: Option<String>,
    source: Source,
    category: &str,
    message: String,
    line: Option<usize>,
) -> ResultRow {
    ResultRow {
        scenario: scenario.map(|s| s.id.clone()),
        case,
        path,
        content_hash: None,
        risk: scenario.map(|s| s.risk),
        verdict: RowVerdict::Error,
        source,
        sealed: None,
        known_gap: scenario.is_some_and(|s| s.known_gap),
        blocking: true,
        oracles: Vec::new(),
        drift: Vec::new(),
        error: Some(RowError {
            category: category.into(),
            message,
            line,
        }),
        warnings: Vec::new(),
    }
}

fn trace_error_row(shown: &str, scenario: Option<&Scenario>, e: &TraceError) -> ResultRow {
    // The error names the path as discovered; print it as the report prints paths.
    let message = error_chain(e);
    error_row(
        scenario,
        None,
        Some(shown.to_owned()),
        Source::Trace,
        e.category(),
        message,
        e.line(),
    )
}

fn scenario_error_row(e: &ScenarioError) -> ResultRow {
    error_row(
        None,
        None,
        Some(display_path(e.path())),
        Source::Scenario,
        "scenario-invalid",
        error_chain(e),
        e.line(),
    )
}

/// The error and its sources, joined with `: `.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}
