//! One `check`, stage by stage (see the module's overview): each stage a named step, the run
//! the sequence of them.

use std::collections::HashSet;

use camino::{Utf8Path, Utf8PathBuf};

use super::cache_key::CacheKey;
use super::{
    CheckError, CheckOptions, ROW_MEMORY, baselines, cache, cache_baselines, judging, persist,
    plan, save_cache, set_blocking, shares, summary, trials,
};
use crate::baseline::StoredCase;
use crate::discover::Discovered;
use crate::privacy::lint::Finding;
use crate::report::store::Spill;
use crate::report::{ObsoleteBaseline, Report, Rows, ToolInfo};
use crate::scenario::{LoadedScenarios, load_scenarios};

/// Runs the stages — plan, judge, persist the cache, cases, compare, persist the pending
/// baselines, summarise — on the thread pool it is called in.
pub(super) fn check_in_pool(
    found: &Discovered,
    searched: &[Utf8PathBuf],
    opts: &CheckOptions,
    cache_file: Option<super::CacheFile>,
) -> Result<Report, CheckError> {
    // Plan.
    let loaded = load_run_scenarios(found, searched)?;
    if let Some(stats) = &opts.execution.stats {
        *stats.also_read.lock().unwrap_or_else(|e| e.into_inner()) = contract_files(&loaded);
    }
    let mut privacy = scan_scenarios(found, &loaded, opts);
    let secret_files: HashSet<&str> = (privacy.iter())
        .filter(|f| f.fingerprint.is_some())
        .map(|f| f.file.as_str())
        .collect();
    let mut entries = plan::index_scenarios(
        &loaded.scenarios,
        &opts.selection,
        &secret_files,
        &found.lookup_files,
    );
    plan::check_filters(&opts.selection, &entries)?;
    let row_memory = opts.execution.row_memory.unwrap_or(ROW_MEMORY);
    // The approved baselines, listed once for the cache's keys and the obsolete ones.
    let approved =
        (opts.baselines.policy()).map(|p| p.store.list(crate::baseline::APPROVED_SUFFIX));
    let approved = approved.as_deref();
    let cache = open_cache(&loaded, &entries, opts, cache_file, row_memory, approved);

    // Judge.
    let spill = Spill::new(row_memory);
    let judged = judging::judge_stage(
        &found.trace_files,
        found.remote.as_deref(),
        &entries,
        opts,
        cache.as_ref(),
        &spill,
    );
    plan::note_seen(&mut entries, &judged.seen);
    let mut partition = opts.selection.partition.map(|(share, of)| {
        let identities = judged.identities.as_deref().unwrap_or(&[]);
        crate::report::Partition {
            share,
            of,
            suite: plan::suite_fingerprint(found, &loaded, identities, opts),
            fail_on: Some(opts.counting.fail_on.as_str().to_owned()),
            rows: None,
        }
    });
    let mut warnings = found.warnings.clone();
    // Persist (the cache): what was judged, before the rows become the report's.
    let mut failed_writes = Vec::new();
    if let Some(c) = &cache {
        if let Some(failed) = save_cache(c, &judged, &opts.selection, searched) {
            warnings.push(failed.message.clone());
            failed_writes.push(failed);
        }
    }
    let mut pending = judged.pending;
    let mut rows = Rows::from_rows(judged.rows.into_iter().flatten().collect());
    // Traces in scope: every row read from a trace file (filtered-out traces have no row).
    let traces = rows.len();
    let unattributed = rows.metas().filter(|m| !m.has_scenario).count();
    let scenarios_in_scope = entries.values().filter(|e| e.in_run()).count();
    // Remote traces have their scenarios in the checkout by design: nothing to note.
    let told: Vec<String> = match found.remote {
        None => plan::looked_up(&entries).into_iter().collect(),
        Some(_) => Vec::new(),
    };
    let fail_on = opts.counting.fail_on;
    for (mut row, p) in summary::other_rows(found, &loaded, &entries, opts) {
        set_blocking(&mut row, fail_on);
        rows.push(&row);
        pending.extend(p);
    }
    rows.sort();

    // Cases: the trials of each (scenario, case) judged together.
    let mut behaviours = judged.behaviours;
    let cases = trials::case_stage(&mut rows, &entries, opts, &mut behaviours, &mut pending);

    // Compare, with the whole run in view; then persist the pending baseline files.
    let unattributed = unattributed + found.unreachable.len();
    let notes = (&mut warnings, &mut failed_writes);
    let (obsolete, pending_written, pending_failed) = compare_stage(
        &mut rows,
        (&entries, approved.unwrap_or_default()),
        &cases,
        unattributed,
        opts,
        &mut pending,
        notes,
    );
    summary::name_where_unknown_scenarios_were_looked_for(&mut rows, &found.roots);

    // Summarise.
    gather_row_privacy(&mut rows, &mut privacy);
    let mut summary = summary::summarise(
        &rows,
        &privacy,
        &obsolete,
        traces,
        scenarios_in_scope,
        fail_on,
    );
    let trials::Cases {
        cases, thresholds, ..
    } = cases;
    summary::count_cases(&mut summary, &rows, &cases, fail_on);
    summary::apply_budget(&mut summary, &opts.counting.budget);
    warnings.sort();
    if let Some(p) = partition.as_mut() {
        let findings = (&privacy[..], &obsolete[..], &cases[..]);
        p.rows = Some(shares::digest(p, &rows, findings, opts.share_key.as_ref()));
    }
    Ok(Report {
        schema_version: crate::report::SCHEMA_VERSION,
        tool: ToolInfo::default(),
        partition,
        summary,
        baselines: opts.baselines.describe(pending_written, pending_failed),
        results: rows,
        cases,
        thresholds,
        privacy,
        obsolete,
        warnings,
        notes: told,
        failed_writes,
        fail_on: Some(fail_on.as_str()),
    })
}

/// Loads the run's scenario files and those it looks scenarios up in; the look-up files'
/// problems are their own suite's, not the run's. Nothing at all found is an error naming the
/// paths searched.
fn load_run_scenarios(
    found: &Discovered,
    searched: &[Utf8PathBuf],
) -> Result<LoadedScenarios, CheckError> {
    let files = found.every_scenario_file();
    let mut loaded = load_scenarios(&files, &found.suite_files, &found.roots);
    let looked_up: HashSet<&Utf8Path> = found.lookup_files.iter().map(|p| p.as_path()).collect();
    loaded.errors.retain(|e| !looked_up.contains(e.path()));
    if loaded.scenarios.is_empty() && loaded.errors.is_empty() && found.trace_files.is_empty() {
        let paths: Vec<String> = searched.iter().map(|p| format!("`{p}`")).collect();
        let hint = (found.warnings.iter())
            .filter(|w| w.starts_with("found scenario-like file"))
            .map(|w| format!("; {w}"))
            .collect();
        return Err(CheckError::NothingFound {
            paths: paths.join(", "),
            hint,
        });
    }
    Ok(loaded)
}

/// The Harness Contract files the loaded scenarios name (read or not: one that is missing now
/// may appear), each once.
fn contract_files(loaded: &LoadedScenarios) -> Vec<Utf8PathBuf> {
    let mut files: Vec<Utf8PathBuf> = (loaded.scenarios.iter())
        .filter_map(|s| {
            Some(crate::scenario::load::contract_file(
                &s.file,
                s.contract.as_deref()?,
            ))
        })
        .collect();
    files.sort_unstable();
    files.dedup();
    files
}

/// The secrets (and raw prompts) in the run's scenario files — their bytes as loading read
/// them, not read again — and in the traces' sidecars.
fn scan_scenarios(
    found: &Discovered,
    loaded: &LoadedScenarios,
    opts: &CheckOptions,
) -> Vec<Finding> {
    let looked_up: HashSet<&Utf8Path> = found.lookup_files.iter().map(|p| p.as_path()).collect();
    let sources: Vec<(&Utf8Path, &[u8])> = (loaded.sources.iter())
        .filter(|(p, _)| !looked_up.contains(p.as_path()))
        .map(|(p, b)| (p.as_path(), b.as_slice()))
        .collect();
    crate::privacy::lint::scan_scenarios_and_sidecars(
        &sources,
        &found.sidecar_files,
        opts.counting.secrets,
        &opts.counting.waived,
        opts.judging.allow_raw_prompts,
    )
}

/// The result cache, when the run has a cache directory and a key: an unauthenticated cache is
/// never trusted, and a run that checks signatures neither reads nor writes it (it holds
/// verdicts, not signatures).
fn open_cache(
    loaded: &LoadedScenarios,
    entries: &plan::Entries<'_>,
    opts: &CheckOptions,
    cache_file: Option<super::CacheFile>,
    row_memory: usize,
    approved: Option<&[StoredCase]>,
) -> Option<cache::ResultCache> {
    let dir = opts.execution.cache_dir.as_deref()?;
    if opts.signatures.is_some() {
        return None;
    }
    let key = CacheKey::resolve()?;
    let file =
        cache_file.unwrap_or_else(|| super::CacheFile::read_with(dir, row_memory as u64, &key));
    let known = cache_baselines::Known::parse(file.context());
    let (fingerprint, record, baselines) = plan::cache_context(opts, &known, approved);
    drop(known);
    // `None`: the approved baselines are as the file recorded them.
    let record = record.unwrap_or_else(|| cache_baselines::record_in(file.context()).to_owned());
    let cache = cache::ResultCache::from_file(dir, file, &fingerprint, record, key);
    let scenarios = plan::ScenarioKeys::new(entries, loaded);
    Some(cache.with_dependencies(scenarios, baselines))
}

/// The compare stage: rows sharing a baseline file, obsolete baselines (unless `unattributed`
/// traces or paths could hide a baseline's use), then the pending baseline files written —
/// never under CI. Returns the obsolete baselines and how many pending files were written and
/// could not be; warnings and failed writes go to `notes`.
fn compare_stage(
    rows: &mut Rows,
    (entries, approved): (&plan::Entries<'_>, &[StoredCase]),
    cases: &trials::Cases,
    unattributed: usize,
    opts: &CheckOptions,
    pending: &mut Vec<baselines::Pending>,
    (warnings, failed_writes): (&mut Vec<String>, &mut Vec<crate::report::FailedWrite>),
) -> (Vec<ObsoleteBaseline>, usize, usize) {
    let Some(policy) = opts.baselines.policy() else {
        return (Vec::new(), 0, 0);
    };
    let fail_on = opts.counting.fail_on;
    baselines::mark_ambiguous(rows, policy, fail_on, pending, &cases.grouped);
    let mut obsolete = Vec::new();
    if unattributed > 0 {
        warnings.push(format!(
            "{unattributed} trace(s) or path(s) could not be read or attributed to a scenario, so obsolete baselines were not looked for in this run"
        ));
    } else {
        obsolete = obsolete_baselines(rows, (entries, approved), policy, opts, pending);
    }
    let (mut pending_written, mut pending_failed) = (0, 0);
    if opts.baselines.writes_pending() {
        let (w, failed, written) = persist::write_pending(&policy.store, pending);
        warnings.extend(w);
        pending_failed = failed.len();
        failed_writes.extend(failed);
        pending_written = written;
        if let Some(stats) = &opts.execution.stats {
            stats
                .pending_written
                .store(written, std::sync::atomic::Ordering::Relaxed);
        }
    }
    (obsolete, pending_written, pending_failed)
}

/// The approved baselines no row of the run uses, among those the run judges obsolescence for:
/// the scenarios found and in scope always; every baseline on a whole-suite run (so those of
/// scenarios that are gone too); under `--partition`, those whose scenario falls in this share,
/// so the shares together report each once. A run that selects traces rather than scenarios
/// (paths that do not cover the suite's roots, `--last-failed`) judges none.
fn obsolete_baselines(
    rows: &Rows,
    (entries, approved): (&plan::Entries<'_>, &[StoredCase]),
    policy: &super::BaselinePolicy,
    opts: &CheckOptions,
    pending: &mut Vec<baselines::Pending>,
) -> Vec<ObsoleteBaseline> {
    let selected: HashSet<String> = (entries.values())
        .filter(|e| e.in_run())
        .map(|e| crate::baseline::encode_segment(&e.scenario.id))
        .collect();
    let s = &opts.selection;
    let judges = s.whole_suite && s.rerun.is_none();
    let everything = judges && !s.filtered();
    let in_scope = |segment: &str| {
        judges
            && (everything || selected.contains(segment))
            && s.partition_holds(Some(&crate::baseline::decode_segment(segment)))
    };
    baselines::find_obsolete(rows, approved, policy, &in_scope, pending)
}

/// Moves the secrets found in traces from their rows to the report's list, sorted (a rare
/// re-encode of those rows).
fn gather_row_privacy(rows: &mut Rows, privacy: &mut Vec<Finding>) {
    let with_privacy: Vec<usize> = (rows.metas().enumerate())
        .filter(|(_, m)| m.has_privacy)
        .map(|(i, _)| i)
        .collect();
    for i in with_privacy {
        let mut row = rows.get(i);
        privacy.append(&mut row.privacy);
        rows.set(i, &row);
    }
    privacy.sort();
}
