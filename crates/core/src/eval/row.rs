//! Judging one trace file into one result row, through the one [`super::pipeline`]: scope and
//! attribution, the error rows of what cannot be judged, secrets and their masking, and the
//! pending baseline file the comparison calls for.

use camino::Utf8PathBuf;

use super::baselines::Pending;
use super::judging::Outputs;
use super::pipeline::{self, BaselinePolicy, FileOutcome, Lookup};
use super::plan::{Entries, Entry, entry_of, out_of_scope_of, unknown_scenario_message};
use super::{CheckOptions, error_chain};
use crate::paths::display_path;
use crate::report::{ResultRow, RowErrorKind, RowVerdict, Source};
use crate::scenario::Scenario;
use crate::trace::{TraceError, TraceFile, probe_header};

fn attribute(
    row: &mut ResultRow,
    scenario: Option<&Scenario>,
    claimed: (String, String),
    baselines: Option<&BaselinePolicy>,
) {
    let id = scenario.map_or(claimed.0, |s| s.id.clone());
    row.baseline = baselines.map(|b| display_path(&b.store.approved_path(&id, &claimed.1)));
    row.risk = scenario.map(|s| s.risk);
    row.scenario_file = scenario.map(|s| display_path(&s.file));
    row.known_gap = scenario.is_some_and(|s| s.known_gap);
    row.scenario = Some(id);
    row.case = Some(claimed.1);
}

/// Judges one trace file, opened (or not) already, by mapping the one sequencer's
/// [`FileOutcome`] to a row. `None` when the trace belongs to a scenario outside the filters. `out`
/// receives the trace's content hash whenever its seal holds, in scope or not (a partitioned
/// run fingerprints its whole suite by them), the entry of the scenario its row names, and the
/// pending baseline file its comparison calls for.
pub(crate) fn row_of_opened(
    path: &Utf8PathBuf,
    opened: Result<TraceFile, TraceError>,
    entries: &Entries<'_>,
    opts: &CheckOptions,
    out: &mut Outputs,
) -> Option<ResultRow> {
    let policy = opts.baselines.policy();
    let shown = display_path(path);
    let mut row = ResultRow::blank(Some(shown.clone()), Source::Trace);
    let fail = |mut row: ResultRow, e: &TraceError| {
        row.set_error(e.kind(), error_chain(e), e.line());
        row
    };
    // The scenario's entry, looked up once, or `None` when the trace is out of scope.
    let in_scope = |scenario: &str| {
        let entry = entry_of(entries, scenario);
        (!out_of_scope_of(scenario, entry, &opts.selection)).then_some(entry)
    };
    // A remote object under a scenario's directory is that scenario's, whatever it holds.
    let claim = out.claim.take();
    let file = match opened {
        Ok(f) => f,
        Err(e) => {
            let Some(claim) = claim else {
                // Unattributable rows belong to the first partition share only.
                return opts.selection.partition_holds(None).then(|| fail(row, &e));
            };
            let entry = in_scope(&claim.scenario)?;
            out.seen = entry.map(|e| e.index);
            let name = (claim.scenario.to_owned(), claim.case);
            attribute(&mut row, entry.map(|e| e.scenario), name, policy);
            return Some(fail(row, &e));
        }
    };
    // Secrets are looked for in every readable trace in scope, judged or not.
    let (secrets_mode, waived) = (opts.counting.secrets, &opts.counting.waived);
    let secrets = || crate::privacy::lint::scan_secrets(&shown, &file.bytes, secrets_mode, waived);
    // What the first line claims, read only where it is used (an object in storage, a trace
    // that cannot be judged): a judged trace's header is read by the parse.
    let claimed = || probe_header(&file.bytes);
    if let Some(claim) = &claim {
        let entry = in_scope(&claim.scenario)?;
        out.seen = entry.map(|e| e.index);
        if let Some((named, case)) = claimed().filter(|c| c.0.to_lowercase() != claim.scenario) {
            let name = (claim.scenario.to_owned(), case);
            attribute(&mut row, entry.map(|e| e.scenario), name, policy);
            row.privacy = secrets();
            let message = format!(
                "`{shown}` names scenario `{named}` but sits under the directory of scenario `{}`: a trace in object storage is placed by the scenario directory of its key (which decides the share of `--partition` that reads it); move it under `{}/`",
                claim.scenario,
                crate::baseline::encode_trace_segment(&named),
            );
            row.set_error(RowErrorKind::Misplaced, message, Some(1));
            return Some(row);
        }
    }
    let mut found = None;
    let lookup = |id: &str| match in_scope(id) {
        None => Lookup::OutOfScope,
        Some(None) => Lookup::Unknown,
        Some(Some(entry)) => {
            found = Some(entry);
            Lookup::Found {
                scenario: entry.scenario,
                problems: &entry.problems,
            }
        }
    };
    let outcome = pipeline::judge_file(&file, &opts.judging, policy.is_some(), lookup);
    let read = match &outcome {
        FileOutcome::OutOfScope { seal } => {
            out.identity = Some(seal.content_hash.clone());
            return None;
        }
        FileOutcome::Unreadable { error, seal } => {
            // The seal's hash is the trace's identity even when the body does not parse.
            out.identity = seal.as_ref().map(|s| s.content_hash.clone());
            // Attribute what the first line claims, so the row names its scenario and its
            // approved baseline is not mistaken for obsolete.
            if let Some(claimed) = claimed() {
                let entry = in_scope(&claimed.0)?;
                out.seen = entry.map(|e| e.index);
                attribute(&mut row, entry.map(|e| e.scenario), claimed, policy);
            } else if let Some(claim) = claim {
                let entry = in_scope(&claim.scenario)?;
                let name = (claim.scenario.to_owned(), claim.case);
                attribute(&mut row, entry.map(|e| e.scenario), name, policy);
            } else if !opts.selection.partition_holds(None) {
                return None;
            }
            row.privacy = secrets();
            return Some(fail(row, error));
        }
        FileOutcome::UnknownScenario(read)
        | FileOutcome::ScenarioInvalid { read, .. }
        | FileOutcome::Judged { read, .. } => read,
    };
    let (seal, header) = (&read.seal, &read.parsed.trace.header);
    out.identity = Some(seal.content_hash.clone());
    row.privacy = secrets();
    out.seen = found.map(|e| e.index);
    attribute(
        &mut row,
        found.map(|e| e.scenario),
        (header.scenario.to_string(), header.case.to_string()),
        policy,
    );
    row.trial = header.trial.as_ref().map(|t| t.as_str().to_owned());
    row.content_hash = Some(seal.content_hash.clone());
    row.sealed = Some(seal.sealed);
    row.warnings = read.parsed.warnings.clone();
    if let Some(problem) = (out.signature.take()).and_then(|s| signature_problem(s, header, seal)) {
        let message = format!("`{shown}` {problem}");
        row.set_error(RowErrorKind::Signature, message, None);
        return Some(row);
    }
    let (scenario, read, judgement) = match outcome {
        FileOutcome::Unreadable { .. } | FileOutcome::OutOfScope { .. } => {
            unreachable!("mapped above")
        }
        FileOutcome::UnknownScenario(read) => {
            let id = &read.parsed.trace.header.scenario;
            let message = unknown_scenario_message(&shown, id, entries);
            row.set_error(RowErrorKind::UnknownScenario, message, Some(1));
            return Some(row);
        }
        FileOutcome::ScenarioInvalid {
            scenario, problems, ..
        } => {
            let message = pipeline::scenario_invalid_message(scenario, problems);
            row.set_error(RowErrorKind::ScenarioInvalid, message, None);
            return Some(row);
        }
        FileOutcome::Judged {
            scenario,
            read,
            judgement,
        } => (scenario, read, judgement),
    };
    let header = &read.parsed.trace.header;
    let (pending, behaviour) = judged_row(
        &mut row,
        (scenario, judgement),
        &read.parsed.trace,
        &header.case,
        &read.seal.content_hash,
        opts,
        header.trial.is_some(),
    );
    out.pending = pending;
    out.behaviour = behaviour.map(|b| (shown.clone(), b));
    // A secret the scan found is never shown in full, wherever the row is rendered.
    if !row.privacy.is_empty() || found.is_some_and(|e| e.secrets) {
        row.mask_secrets(waived);
    }
    Some(row)
}

/// What is wrong with a judged trace's signature, if anything: the check's own finding, or a
/// trusted comment that names another trace than the row's.
fn signature_problem(
    checked: Result<crate::sign::Signed, crate::sign::SignatureProblem>,
    header: &crate::trace::Header<'_>,
    seal: &crate::trace::Seal,
) -> Option<crate::sign::SignatureProblem> {
    let signed = match checked {
        Ok(signed) => signed,
        Err(problem) => return Some(problem),
    };
    let claims = crate::sign::Claims::of_comment(&signed.comment)?;
    let detail = claims.mismatch(
        &seal.content_hash,
        &header.scenario,
        &header.case,
        header.trial.as_ref().map(|t| t.as_str()),
    )?;
    Some(crate::sign::SignatureProblem::OtherTrace {
        key_id: signed.key_id,
        detail,
    })
}

/// Judges a scenario's `scriptedTrace` directly (`check --scripted`), as case `scripted`, with
/// the pending baseline file its comparison calls for.
pub(crate) fn row_of_scripted(
    entry: &Entry<'_>,
    opts: &CheckOptions,
) -> Option<(ResultRow, Option<Pending>)> {
    let scenario = entry.scenario;
    let script = scenario.scripted_trace.as_ref()?.as_object()?;
    let shown = display_path(&scenario.file);
    let mut row = ResultRow::blank(Some(shown.clone()), Source::Scripted);
    attribute(
        &mut row,
        Some(scenario),
        (scenario.id.clone(), "scripted".to_owned()),
        opts.baselines.policy(),
    );
    let ingest_opts = crate::ingest::IngestOptions {
        hasher: crate::trace::PromptHasher::unkeyed(),
        raw_opt_in: false,
        scenario: None,
        case: None,
        name: None,
        file_stem: None,
        allow_empty: true,
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
            row.set_error(
                RowErrorKind::ScriptedInvalid,
                format!("`{shown}`: `scriptedTrace` step {step}: {message}"),
                None,
            );
            return Some((row, None));
        }
    };
    let file = TraceFile::from_bytes(shown.clone(), sealed.bytes, false);
    // The script was sealed just now: judged like any sealed trace.
    let judging = pipeline::JudgeOptions {
        require_sealed: true,
        ..opts.judging.clone()
    };
    let lookup = |_: &str| Lookup::Found {
        scenario,
        problems: &entry.problems,
    };
    let outcome = pipeline::judge_file(&file, &judging, opts.baselines.policy().is_some(), lookup);
    if let Some(read) = outcome.read() {
        row.content_hash = Some(read.seal.content_hash.clone());
        row.sealed = Some(true);
    }
    let (read, judgement) = match outcome {
        FileOutcome::Unreadable { error, .. } => {
            row.set_error(error.kind(), error_chain(&error), error.line());
            return Some((row, None));
        }
        FileOutcome::UnknownScenario(_) | FileOutcome::OutOfScope { .. } => {
            unreachable!("the script's scenario is its own")
        }
        FileOutcome::ScenarioInvalid { problems, .. } => {
            let message = pipeline::scenario_invalid_message(scenario, problems);
            row.set_error(RowErrorKind::ScenarioInvalid, message, None);
            return Some((row, None));
        }
        FileOutcome::Judged {
            read, judgement, ..
        } => (read, judgement),
    };
    let (pending, _) = judged_row(
        &mut row,
        (scenario, judgement),
        &read.parsed.trace,
        "scripted",
        &read.seal.content_hash,
        opts,
        false,
    );
    if entry.secrets {
        row.mask_secrets(&opts.counting.waived);
    }
    Some((row, pending))
}

/// Maps a parsed trace's judgement into `row`: oracle results and verdict, the
/// cited events of a failure, and drift from the approved baseline of (scenario, `case`).
/// Returns the pending baseline file the comparison calls for (off CI). A `trial` trace is not
/// compared: its behaviour is returned for the case stage, which knows whether the case is a
/// set.
fn judged_row(
    row: &mut ResultRow,
    (scenario, judged): (&Scenario, pipeline::Judgement),
    trace: &crate::trace::Trace<'_>,
    case: &str,
    content_hash: &str,
    opts: &CheckOptions,
    trial: bool,
) -> (Option<Pending>, Option<crate::baseline::Behaviour>) {
    let policy = opts.baselines.policy();
    row.oracles = judged.results;
    row.verdict = judged.verdict;
    row.usage = Some(crate::report::usage::RunUsage::of(trace));
    keep_cited_events(row, trace);
    let (Some(policy), Some(behaviour)) = (policy, judged.behaviour) else {
        return (None, None);
    };
    if trial {
        return (None, Some(behaviour));
    }
    let compared = pipeline::compare(policy, &scenario.id, case, content_hash, behaviour);
    let pending = pending_of(&compared, policy, opts, &scenario.id, case);
    row.approved_usage = compared.approved_usage;
    row.drift = compared.findings;
    (pending, None)
}

/// The pending baseline file a comparison calls for (off CI): its `.new` when it found drift
/// (or, refreshing, a stale file), else the clearing of stale pending files. Over an approved
/// baseline that does not read, nothing is written: it is left to be fixed.
pub(crate) fn pending_of(
    compared: &pipeline::Comparison,
    policy: &BaselinePolicy,
    opts: &CheckOptions,
    scenario: &str,
    case: &str,
) -> Option<Pending> {
    let invalid = (compared.findings.iter())
        .any(|f| f.category == crate::diff::DriftCategory::BaselineInvalid);
    (opts.baselines.writes_pending() && !invalid).then(|| {
        let (scenario, case) = (scenario.to_owned(), case.to_owned());
        if compared.findings.is_empty() && !(policy.refresh && compared.stale) {
            Pending::Clear { scenario, case }
        } else {
            let text = super::baselines::PendingText::new(compared.current.to_text());
            Pending::Write {
                scenario,
                case,
                text,
            }
        }
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
        .map(crate::trace::json::event_value)
        .collect();
}
