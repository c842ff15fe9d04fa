//! Judging one trace file into one result row: read, verify, parse, judge, compare.

use camino::Utf8PathBuf;

use super::baselines::{BaselineOptions, compare_trace};
use super::{CheckOptions, Entries, Entry, error_chain};
use crate::baseline::Behaviour;
use crate::discover::display_path;
use crate::oracle::{self, Verdict};
use crate::report::{ResultRow, RowError, RowVerdict, Source};
use crate::scenario::Scenario;
use crate::trace::{TraceError, TraceFile, parse_trace, parse_trace_with, probe_header};

pub(crate) fn set_error(row: &mut ResultRow, category: &str, message: String, line: Option<usize>) {
    row.verdict = RowVerdict::Error;
    row.error = Some(RowError {
        category: category.into(),
        message,
        line,
    });
}

fn attribute(
    row: &mut ResultRow,
    scenario: Option<&Scenario>,
    claimed: (String, String),
    baselines: Option<&BaselineOptions>,
) {
    let id = scenario.map_or(claimed.0, |s| s.id.clone());
    row.baseline = baselines.map(|b| display_path(&b.store.approved_path(&id, &claimed.1)));
    row.risk = scenario.map(|s| s.risk);
    row.scenario_file = scenario.map(|s| display_path(&s.file));
    row.known_gap = scenario.is_some_and(|s| s.known_gap);
    row.scenario = Some(id);
    row.case = Some(claimed.1);
}

/// Whether a trace naming `scenario`, whose entry is `entry` (`None`: no such scenario), is
/// outside this run's filters and partition share.
pub(crate) fn out_of_scope_of(scenario: &str, entry: Option<&Entry>, opts: &CheckOptions) -> bool {
    match entry {
        Some(e) => !e.in_scope,
        None => {
            let filtered = !opts.scenarios.is_empty() || !opts.tags.is_empty();
            (filtered
                && !opts
                    .scenarios
                    .iter()
                    .any(|f| f.trim().eq_ignore_ascii_case(scenario)))
                || !opts.partition_holds(Some(scenario))
        }
    }
}

/// Judges one trace file, opened (or not) already. `None` when the trace belongs to a scenario
/// outside the filters. `identity` receives the trace's content hash whenever its seal holds,
/// in scope or not (a partitioned run fingerprints its whole suite by them).
pub(crate) fn judge_opened(
    path: &Utf8PathBuf,
    opened: Result<TraceFile, TraceError>,
    entries: &Entries<'_>,
    opts: &CheckOptions,
    identity: &mut Option<String>,
) -> Option<ResultRow> {
    let shown = display_path(path);
    let mut row = ResultRow::blank(Some(shown.clone()), Source::Trace);
    let fail = |mut row: ResultRow, e: &TraceError| {
        set_error(&mut row, e.category(), error_chain(e), e.line());
        row
    };
    let file = match opened {
        Ok(f) => f,
        // Unattributable rows belong to the first partition share only.
        Err(e) => return opts.partition_holds(None).then(|| fail(row, &e)),
    };
    // Secrets are looked for in every readable trace in scope, judged or not.
    let secrets =
        || crate::privacy::lint::scan_secrets(&shown, &file.bytes, opts.secrets, &opts.waived);
    // The scenario's entry, looked up once, or `None` when the trace is out of scope.
    let in_scope = |scenario: &str| {
        let entry = super::entry_of(entries, scenario);
        (!out_of_scope_of(scenario, entry, opts)).then_some(entry)
    };
    let judged = file.verify_seal(opts.require_sealed).map(|seal| {
        *identity = Some(seal.content_hash.clone());
        let parsed = parse_trace_with(&file, &seal, opts.limits, opts.allow_raw_prompts);
        (seal, parsed)
    });
    let (seal, parsed) = match judged {
        Ok((seal, Ok(parsed))) => (seal, parsed),
        Ok((_, Err(e))) | Err(e) => {
            // Attribute what the first line claims, so the row names its scenario and its
            // approved baseline is not mistaken for obsolete.
            if let Some(claimed) = probe_header(&file.bytes) {
                let scenario = in_scope(&claimed.0)?.map(|e| e.scenario);
                attribute(&mut row, scenario, claimed, opts.baselines.as_ref());
            } else if !opts.partition_holds(None) {
                return None;
            }
            row.privacy = secrets();
            return Some(fail(row, &e));
        }
    };
    let header = &parsed.trace.header;
    let entry = in_scope(&header.scenario)?;
    row.privacy = secrets();
    attribute(
        &mut row,
        entry.map(|e| e.scenario),
        (header.scenario.to_string(), header.case.to_string()),
        opts.baselines.as_ref(),
    );
    row.content_hash = Some(seal.content_hash.clone());
    row.sealed = Some(seal.sealed);
    row.warnings = parsed.warnings.clone();
    let Some(entry) = entry else {
        let message = format!(
            "`{shown}` names scenario `{}`, which no loaded scenario file defines",
            header.scenario
        );
        set_error(&mut row, "unknown-scenario", message, Some(1));
        return Some(row);
    };
    if !entry.problems.is_empty() {
        let message = format!(
            "`{}`: {}",
            display_path(&entry.scenario.file),
            entry.problems.join("; ")
        );
        set_error(&mut row, "scenario-invalid", message, None);
        return Some(row);
    }
    judge_into(
        &mut row,
        entry.scenario,
        &parsed.trace,
        &header.case,
        &seal.content_hash,
        opts,
    );
    // A secret the scan found is never shown in full, wherever the row is rendered.
    if !row.privacy.is_empty() || entry.secrets {
        crate::privacy::mask::mask_row(&mut row, &opts.waived);
    }
    Some(row)
}

/// Judges a scenario's `scriptedTrace` directly (`check --scripted`), as case `scripted`.
pub(crate) fn judge_scripted(entry: &Entry<'_>, opts: &CheckOptions) -> Option<ResultRow> {
    let scenario = entry.scenario;
    let script = scenario.scripted_trace.as_ref()?.as_object()?;
    let shown = display_path(&scenario.file);
    let mut row = ResultRow::blank(Some(shown.clone()), Source::Scripted);
    attribute(
        &mut row,
        Some(scenario),
        (scenario.id.clone(), "scripted".to_owned()),
        opts.baselines.as_ref(),
    );
    let ingest_opts = crate::ingest::IngestOptions {
        hasher: crate::privacy::PromptHasher::unkeyed(),
        raw_opt_in: false,
        scenario: None,
        case: None,
    };
    // The scenario's input is never judged or copied: only the steps become events.
    let sealed = match crate::ingest::openclaw::scripted_trace(
        &scenario.id,
        "scripted",
        None,
        script,
        &ingest_opts,
    ) {
        Ok(s) => s,
        Err((step, message)) => {
            set_error(
                &mut row,
                "scripted-invalid",
                format!("`{shown}`: `scriptedTrace` step {step}: {message}"),
                None,
            );
            return Some(row);
        }
    };
    let file = TraceFile::from_bytes(shown.clone(), sealed.bytes, false);
    let parsed = file
        .verify_seal(true)
        .and_then(|seal| parse_trace(&file, &seal, opts.limits).map(|p| (seal, p)));
    let (seal, parsed) = match parsed {
        Ok(x) => x,
        Err(e) => {
            set_error(&mut row, e.category(), error_chain(&e), e.line());
            return Some(row);
        }
    };
    row.content_hash = Some(seal.content_hash.clone());
    row.sealed = Some(true);
    if !entry.problems.is_empty() {
        set_error(
            &mut row,
            "scenario-invalid",
            format!("`{shown}`: {}", entry.problems.join("; ")),
            None,
        );
        return Some(row);
    }
    judge_into(
        &mut row,
        scenario,
        &parsed.trace,
        "scripted",
        &seal.content_hash,
        opts,
    );
    if entry.secrets {
        crate::privacy::mask::mask_row(&mut row, &opts.waived);
    }
    Some(row)
}

/// Judges a parsed trace into `row`: oracle results and verdict, the cited events of a failure,
/// and drift from the approved baseline of (scenario, `case`).
fn judge_into(
    row: &mut ResultRow,
    scenario: &Scenario,
    trace: &crate::trace::Trace<'_>,
    case: &str,
    content_hash: &str,
    opts: &CheckOptions,
) {
    // One set of facts serves the oracles and the normalised behaviour.
    let facts = oracle::Facts::new(trace);
    row.oracles = oracle::judge_facts(scenario, &facts);
    row.verdict = match oracle::overall(&row.oracles) {
        Verdict::Pass => RowVerdict::Pass,
        Verdict::Fail | Verdict::NotEvaluable => RowVerdict::Fail,
    };
    keep_cited_events(row, trace);
    if let Some(b) = &opts.baselines {
        let behaviour = Behaviour::from_facts(&facts, &row.oracles);
        row.drift = compare_trace(
            b,
            &scenario.id,
            case,
            content_hash,
            behaviour,
            &mut row.warnings,
        );
    }
}

/// An event as a JSON value, large values summarised ([`crate::trace::json::bounded_value`]).
pub(crate) fn event_value(e: &crate::trace::Event<'_>) -> serde_json::Value {
    serde_json::to_string(e).map_or(serde_json::Value::Null, |text| {
        crate::trace::json::bounded_value(&text)
    })
}

/// For a failing row, keeps copies of the events its oracles cite while the trace is in memory,
/// so a run folder can hold the evidence without the trace.
fn keep_cited_events(row: &mut ResultRow, trace: &crate::trace::Trace<'_>) {
    if row.verdict != RowVerdict::Fail {
        return;
    }
    let cited: std::collections::BTreeSet<u64> = row
        .oracles
        .iter()
        .flat_map(|o| o.evidence.iter().copied())
        .collect();
    row.cited_events = trace
        .events
        .iter()
        .filter(|e| cited.contains(&e.seq))
        .map(event_value)
        .collect();
}
