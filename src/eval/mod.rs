//! Judging a suite: load scenarios, read and verify every trace in parallel, judge it against its
//! scenario and approved baseline, and assemble one deterministically ordered report.

mod baselines;
mod cache;
pub mod explain;
mod judge;
mod row;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;

use camino::{Utf8Path, Utf8PathBuf};
use rayon::prelude::*;

pub use baselines::BaselineOptions;
pub use cache::{CACHE_KEY_ENV, CacheFile, CacheKey};
pub use judge::{JudgedTrace, judge_trace_file};
use row::set_error;

use crate::discover::{Discovered, display_path};
use crate::report::rows::{self, RowBytes, Spill};
use crate::report::{Report, ResultRow, Row, RowMeta, RowVerdict, Rows, Source, Summary, ToolInfo};
use crate::scenario::{Risk, Scenario, load_scenarios};
use crate::trace::{Limits, TraceFile};

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

/// Called once per trace file judged, from the worker threads (a progress bar's tick).
#[derive(Clone)]
pub struct Progress(pub std::sync::Arc<dyn Fn() + Send + Sync>);

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Progress(..)")
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
    /// Baseline comparison; `None` compares nothing.
    pub baselines: Option<BaselineOptions>,
    /// The sentence the report gives about baselines.
    pub baselines_note: String,
    /// Ticked once per trace judged.
    pub progress: Option<Progress>,
    /// How secrets found in traces and scenarios count.
    pub secrets: crate::privacy::lint::SecretsMode,
    /// Admit raw-prompt sidecars (`--allow-raw-prompts`).
    pub allow_raw_prompts: bool,
    /// Secret fingerprints waived by `.tracereplay-allow`.
    pub waived: HashSet<String>,
    /// Judge a scenario's `scriptedTrace` when it has no stored trace.
    pub scripted: bool,
    /// The run covers the suite's own roots ([`crate::discover::covers_suite_roots`]): only
    /// then is an approved baseline of a scenario the run did not find obsolete. Otherwise only
    /// the baselines of scenarios the run found (and selected) are looked at.
    pub whole_suite: bool,
    /// `--partition hash:K/N` as `(K, N)`: judge only the scenarios in share K.
    pub partition: Option<(u64, u64)>,
    /// Where the result cache lives (`None`: no cache).
    pub cache_dir: Option<Utf8PathBuf>,
    /// Where to count what the run did (for `--timings`; never part of the report, which is
    /// the same with and without the cache).
    pub stats: Option<std::sync::Arc<CheckStats>>,
    /// Bytes of encoded result rows held in memory (`None`: [`ROW_MEMORY`]); rows beyond go to
    /// a temporary file, and a result cache file larger than this is read from disk as needed
    /// rather than whole. The report is the same whatever the budget.
    pub row_memory: Option<usize>,
}

/// The default budget of result rows held in memory (16 MiB): the rows of ~25,000 passing
/// traces.
pub const ROW_MEMORY: usize = 16 << 20;

/// What a run did, besides its report.
#[derive(Debug, Default)]
pub struct CheckStats {
    /// Rows taken from the result cache.
    pub recalled: std::sync::atomic::AtomicUsize,
}

/// The 1-based share of `--partition hash:K/N` a scenario id falls in: the first 8 bytes of the
/// BLAKE3 digest of the lowercased id, as a little-endian u64, modulo N, plus one.
pub fn partition_share(id: &str, n: u64) -> u64 {
    let digest = blake3::hash(id.to_lowercase().as_bytes());
    let first: [u8; 8] = digest.as_bytes()[..8]
        .try_into()
        .expect("a digest has 32 bytes");
    u64::from_le_bytes(first) % n.max(1) + 1
}

impl CheckOptions {
    /// Whether a scenario id (or, for `None`, a row that names no scenario) belongs to this
    /// run's partition share. Rows without a scenario go to share 1, so merged shares hold each
    /// row exactly once.
    pub fn partition_holds(&self, scenario: Option<&str>) -> bool {
        match (self.partition, scenario) {
            (None, _) => true,
            (Some((k, _)), None) => k == 1,
            (Some((k, n)), Some(id)) => partition_share(id, n) == k,
        }
    }
}

/// Why `check` could not do its job at all.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// Nothing to judge.
    #[error(
        "no scenario and no trace found under {paths}; point the command at a directory holding `*.scenario.json` and `*.trace.ndjson.zst` files"
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

/// Scenarios by lowercased id (looked up once or twice per trace: foldhash, not SipHash; never
/// iterated into output unsorted).
pub(crate) type Entries<'s> = foldhash::HashMap<String, Entry<'s>>;

/// The entry of scenario `id`, matched case-insensitively (no allocation for the usual
/// lowercase ASCII id).
pub(crate) fn entry_of<'e, 's>(entries: &'e Entries<'s>, id: &str) -> Option<&'e Entry<'s>> {
    if id.bytes().all(|b| b.is_ascii() && !b.is_ascii_uppercase()) {
        entries.get(id)
    } else {
        entries.get(&id.to_lowercase())
    }
}

/// A scenario ready to judge, or the reasons it cannot be.
pub(crate) struct Entry<'s> {
    pub(crate) scenario: &'s Scenario,
    pub(crate) problems: Vec<String>,
    pub(crate) in_scope: bool,
    /// The scenario's file holds a secret the scan found (its rows are masked).
    pub(crate) secrets: bool,
    /// Some trace row names this scenario.
    pub(crate) seen: std::sync::atomic::AtomicBool,
}

/// Runs `check` over discovered files.
pub fn check(
    found: &Discovered,
    searched: &[Utf8PathBuf],
    opts: &CheckOptions,
) -> Result<Report, CheckError> {
    check_with_cache_file(found, searched, opts, None)
}

/// [`check`] with the result cache's file read already (by [`CacheFile::read_with`] and the
/// run's row budget, which a caller can run while it discovers files); `None` reads it from
/// `opts.cache_dir`.
pub fn check_with_cache_file(
    found: &Discovered,
    searched: &[Utf8PathBuf],
    opts: &CheckOptions,
    cache_file: Option<CacheFile>,
) -> Result<Report, CheckError> {
    // Everything parallel in the run uses `--jobs` threads.
    in_pool(opts.threads, || {
        check_in_pool(found, searched, opts, cache_file)
    })?
}

/// Runs `f` on a rayon pool of `threads` threads (`None`: the global pool), so that everything
/// parallel in it (discovery, judging) honours `--jobs`. Already on a pool of that size (as
/// `tracereplay check` runs discovery and judging in one), it runs there.
pub fn in_pool<R: Send>(
    threads: Option<usize>,
    f: impl FnOnce() -> R + Send,
) -> Result<R, CheckError> {
    let on_pool_of =
        |n| rayon::current_thread_index().is_some() && rayon::current_num_threads() == n;
    match threads {
        Some(n) if !on_pool_of(n) => Ok(rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map_err(|source| CheckError::Threads { threads: n, source })?
            .install(f)),
        _ => Ok(f()),
    }
}

fn check_in_pool(
    found: &Discovered,
    searched: &[Utf8PathBuf],
    opts: &CheckOptions,
    cache_file: Option<CacheFile>,
) -> Result<Report, CheckError> {
    let loaded = load_scenarios(&found.scenario_files, &found.suite_files, &found.roots);
    if loaded.scenarios.is_empty() && loaded.errors.is_empty() && found.trace_files.is_empty() {
        let paths: Vec<String> = searched.iter().map(|p| format!("`{p}`")).collect();
        return Err(CheckError::NothingFound {
            paths: paths.join(", "),
        });
    }
    // The scenario files' bytes as loading read them: scanned here, not read again.
    let sources: Vec<(&Utf8Path, &[u8])> = (loaded.sources.iter())
        .map(|(p, b)| (p.as_path(), b.as_slice()))
        .collect();
    let mut privacy = crate::privacy::lint::scan_scenarios_and_sidecars(
        &sources,
        &found.sidecar_files,
        opts.secrets,
        &opts.waived,
        opts.allow_raw_prompts,
    );
    let secret_files: HashSet<&str> = (privacy.iter())
        .filter(|f| f.fingerprint.is_some())
        .map(|f| f.file.as_str())
        .collect();
    let entries = index_scenarios(&loaded.scenarios, opts, &secret_files);
    // An empty partition share is fine (exit 0); an explicit filter matching nothing is a typo.
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
    let row_memory = opts.row_memory.unwrap_or(ROW_MEMORY);
    // No key, no cache: an unauthenticated cache is never trusted.
    let cache = opts.cache_dir.as_deref().and_then(|dir| {
        let key = CacheKey::resolve()?;
        let context = cache_context(&loaded.sources, &loaded.scenarios, opts);
        let file = cache_file.unwrap_or_else(|| CacheFile::read_with(dir, row_memory as u64, &key));
        Some(cache::ResultCache::from_file(dir, file, context, key))
    });
    let spill = Spill::new(row_memory);
    // Rows and what the cache needs of them are collected apart and in place (an indexed
    // collect writes each result where it belongs), so that the rows can become the report's
    // without a copy of both at the end of a large run.
    let mut rows_found: Vec<Option<Row>> = Vec::new();
    let mut provenance: Vec<Option<Provenance>> = Vec::new();
    // A share of a partitioned run records the identity of every trace of the suite, judged by
    // this share or not, so that `merge` can tell shares of one suite from others.
    let identities: Option<Vec<std::sync::OnceLock<String>>> = opts.partition.map(|_| {
        found
            .trace_files
            .iter()
            .map(|_| Default::default())
            .collect()
    });
    (found.trace_files.par_iter().enumerate())
        .map(|(i, path)| {
            let mut identity = None;
            let judged =
                judge_or_recall(path, &entries, opts, cache.as_ref(), &spill, &mut identity);
            if let (Some(ids), Some(id)) = (&identities, identity) {
                let _ = ids[i].set(id);
            }
            if let Some(p) = &opts.progress {
                (p.0)();
            }
            judged.map_or((None, None), |j| (Some(j.row), Some(j.how)))
        })
        .unzip_into_vecs(&mut rows_found, &mut provenance);
    let partition = opts.partition.map(|(share, of)| crate::report::Partition {
        share,
        of,
        suite: suite_fingerprint(found, &loaded, identities.as_deref().unwrap_or(&[]), opts),
    });
    if let Some(stats) = &opts.stats {
        let recalled = provenance.iter().flatten().filter(|h| h.recalled).count();
        stats.recalled.store(recalled, Ordering::Relaxed);
    }
    let mut cache_warning = None;
    if let Some(c) = &cache {
        let keyed = || {
            (rows_found.iter().zip(&provenance)).filter_map(|(row, how)| {
                let how = how.filter(|h| h.cacheable)?;
                Some((how.keys?, row.as_ref()?.bytes()))
            })
        };
        let hits = provenance
            .iter()
            .flatten()
            .filter(|h| h.entry_current)
            .count();
        // A filtered run keeps the rows of the traces it did not look at.
        let filtered =
            !opts.scenarios.is_empty() || !opts.tags.is_empty() || opts.partition.is_some();
        if let Err(e) = c.save(keyed, hits, filtered) {
            // The cache only saves time: a run never fails for it.
            cache_warning = Some(format!(
                "cannot write the result cache `{}`: {e}; the next run will judge every trace again",
                display_path(c.path())
            ));
        }
    }
    drop(provenance);
    let mut rows = Rows::from_rows(rows_found.into_iter().flatten().collect());
    // Traces in scope: every row read from a trace file (filtered-out traces have no row).
    let traces = rows.len();
    let unattributed = rows.metas().filter(|m| !m.has_scenario).count();
    let with_privacy: Vec<usize> = (rows.metas().enumerate())
        .filter(|(_, m)| m.has_privacy)
        .map(|(i, _)| i)
        .collect();
    let mut listed: Vec<&Entry> = entries.values().filter(|e| e.in_scope).collect();
    listed.sort_by(|a, b| a.scenario.id.cmp(&b.scenario.id));
    let scenarios_in_scope = listed.len();
    let mut push = |mut row: ResultRow| {
        set_blocking(&mut row, opts.fail_on);
        rows.push(&row);
    };
    for e in listed {
        if e.seen.load(Ordering::Relaxed) {
            continue;
        }
        if opts.scripted {
            if let Some(row) = row::judge_scripted(e, opts) {
                push(row);
                continue;
            }
        }
        let mut row = ResultRow::blank(Some(display_path(&e.scenario.file)), Source::Scenario);
        row.scenario = Some(e.scenario.id.clone());
        row.scenario_file = Some(display_path(&e.scenario.file));
        row.risk = Some(e.scenario.risk);
        row.known_gap = e.scenario.known_gap;
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
        set_error(&mut row, category, message, None);
        push(row);
    }
    // What discovery could not look at might hold a failure: an error row each (share 1).
    for (path, why) in found
        .unreachable
        .iter()
        .filter(|_| opts.partition_holds(None))
    {
        let shown = display_path(path);
        let mut row = ResultRow::blank(Some(shown.clone()), Source::Trace);
        set_error(&mut row, "unreachable", format!("`{shown}`: {why}"), None);
        push(row);
    }
    for err in loaded.errors.iter().filter(|_| opts.partition_holds(None)) {
        let mut row = ResultRow::blank(Some(display_path(err.path())), Source::Scenario);
        row.scenario_file = Some(display_path(err.path()));
        set_error(&mut row, "scenario-invalid", error_chain(err), err.line());
        push(row);
    }

    let mut warnings = found.warnings.clone();
    warnings.extend(cache_warning);
    let mut obsolete = Vec::new();
    if let Some(b) = &opts.baselines {
        baselines::mark_ambiguous(&mut rows, b, opts.fail_on, &mut warnings);
        if unattributed > 0 || !found.unreachable.is_empty() {
            warnings.push(format!(
                "{} trace(s) or path(s) could not be read or attributed to a scenario, so obsolete baselines were not looked for in this run",
                unattributed + found.unreachable.len()
            ));
        } else {
            // Always: baselines of the scenarios found and in scope. A whole-suite run (one
            // covering the suite's own roots, unfiltered): every baseline, so those of scenarios
            // that are gone too. `--partition`: baselines whose scenario id falls in this share,
            // so the shares together report every obsolete baseline once.
            let selected: HashSet<String> = entries
                .values()
                .filter(|e| e.in_scope)
                .map(|e| crate::baseline::encode_segment(&e.scenario.id))
                .collect();
            let named = !opts.scenarios.is_empty() || !opts.tags.is_empty();
            let everything = opts.whole_suite && !named;
            let in_scope = |segment: &str| {
                (everything || selected.contains(segment))
                    && opts.partition_holds(Some(&crate::baseline::decode_segment(segment)))
            };
            obsolete = baselines::find_obsolete(&rows, b, &in_scope, &mut warnings);
        }
    }

    // Secrets found in traces move from their rows to the report's list (a rare re-encode).
    for i in with_privacy {
        let mut row = rows.get(i);
        privacy.append(&mut row.privacy);
        rows.set(i, &row);
    }
    privacy.sort();

    rows.sort();
    let mut summary = Summary {
        traces,
        scenarios: scenarios_in_scope,
        ..Summary::default()
    };
    for m in rows.metas() {
        match m.verdict {
            RowVerdict::Pass => summary.passed += 1,
            RowVerdict::Fail => summary.failed += 1,
            RowVerdict::Error => summary.errors += 1,
        }
        if m.verdict == RowVerdict::Fail
            && !verdict_blocks(m.verdict, m.known_gap, m.risk, opts.fail_on)
        {
            summary.ignored_failures += 1;
        }
        summary.new += usize::from(m.drift_new);
        summary.drifted += usize::from(m.drift_other);
        summary.blocking += usize::from(m.blocking);
    }
    summary.obsolete = obsolete.len();
    summary.privacy = privacy.len();
    summary.blocking += privacy.iter().filter(|f| f.fails).count();
    summary.blocking += obsolete.iter().filter(|o| o.finding.fails).count();
    warnings.sort();
    Ok(Report {
        schema_version: crate::report::SCHEMA_VERSION,
        tool: ToolInfo::default(),
        partition,
        summary,
        baselines: opts.baselines_note.clone(),
        results: rows,
        privacy,
        obsolete,
        warnings,
    })
}

fn index_scenarios<'s>(
    scenarios: &'s [Scenario],
    opts: &CheckOptions,
    secret_files: &HashSet<&str>,
) -> Entries<'s> {
    let mut entries: Entries<'s> = Entries::default();
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
            && (opts.tags.is_empty() || opts.tags.iter().any(|t| s.has_tag(t)))
            && opts.partition_holds(Some(&s.id));
        entries.insert(
            key,
            Entry {
                scenario: s,
                problems: crate::gates::scenario_problems(s)
                    .into_iter()
                    .map(|p| format!("scenario `{}`: {p}", s.id))
                    .collect(),
                in_scope,
                secrets: secret_files.contains(display_path(&s.file).as_str()),
                seen: Default::default(),
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

/// The identity of the whole suite a partitioned run was cut from: the options that change
/// judging, every scenario id (and scenario file that failed to load), and every trace file by
/// path and content hash (`-` where its seal does not hold), whichever share judged it. Shares
/// of another commit, another suite or other flags get another fingerprint.
fn suite_fingerprint(
    found: &Discovered,
    loaded: &crate::scenario::LoadedScenarios,
    identities: &[std::sync::OnceLock<String>],
    opts: &CheckOptions,
) -> String {
    let mut h = blake3::Hasher::new();
    h.update(judging_options(opts).as_bytes());
    // What decides which rows exist and which of them count, besides what they say.
    let selection = format!(
        "fail_on={:?} scenarios={:?} tags={:?} whole_suite={}",
        opts.fail_on, opts.scenarios, opts.tags, opts.whole_suite
    );
    h.update(selection.as_bytes());
    let mut ids: Vec<String> = (loaded.scenarios.iter())
        .map(|s| s.id.to_lowercase())
        .chain(
            loaded
                .errors
                .iter()
                .map(|e| format!("!{}", display_path(e.path()))),
        )
        .collect();
    ids.sort();
    for id in ids {
        h.update(b"\nscenario ").update(id.as_bytes());
    }
    let mut traces: Vec<(String, &str)> = (found.trace_files.iter().zip(identities))
        .map(|(p, id)| (display_path(p), id.get().map_or("-", String::as_str)))
        .collect();
    traces.sort();
    for (path, id) in traces {
        h.update(b"\ntrace ").update(path.as_bytes());
        h.update(b" ").update(id.as_bytes());
    }
    format!("b3:{}", h.finalize().to_hex())
}

/// The options that change what a row says, in words (part of the cache's context and of a
/// partitioned run's suite fingerprint). `--fail-on` and the filters are not among them: they
/// decide which rows count and exist, and cached rows serve every choice of them.
fn judging_options(opts: &CheckOptions) -> String {
    format!(
        "require_sealed={} raw_prompt_opt_in={} limits={:?} secrets={:?} scripted={} baselines={:?}",
        opts.require_sealed,
        opts.allow_raw_prompts,
        opts.limits,
        opts.secrets,
        opts.scripted,
        opts.baselines
            .as_ref()
            .map(|b| (&b.store.dir, b.mode, b.tolerance, b.write_pending)),
    )
}

/// The fingerprint of everything besides a trace its cached row depends on.
fn cache_context(
    scenario_bytes: &[(Utf8PathBuf, Vec<u8>)],
    scenarios: &[Scenario],
    opts: &CheckOptions,
) -> String {
    let mut scenario_files: Vec<&(Utf8PathBuf, Vec<u8>)> = scenario_bytes.iter().collect();
    scenario_files.sort_by(|a, b| a.0.cmp(&b.0));
    let mut parts: Vec<std::borrow::Cow<[u8]>> = vec![judging_options(opts).into_bytes().into()];
    // Rows show paths relative to the working directory.
    parts.push(
        format!("{:?}", std::env::current_dir().ok())
            .into_bytes()
            .into(),
    );
    let mut waived: Vec<&String> = opts.waived.iter().collect();
    waived.sort();
    parts.push(format!("{waived:?}").into_bytes().into());
    for (f, bytes) in scenario_files {
        parts.push(f.as_str().as_bytes().into());
        parts.push(bytes.as_slice().into());
    }
    // A contract a scenario names is part of it too: as loaded with the scenario (not read
    // again), or the reason it did not load.
    for s in scenarios.iter().filter(|s| s.contract.is_some()) {
        parts.push(format!("{:?}", s.contract_loaded).into_bytes().into());
    }
    if let Some(b) = &opts.baselines {
        // Approved baselines by stat (pending files do not count: writing them must not
        // invalidate the cache).
        for stored in b.store.list(crate::baseline::APPROVED_SUFFIX) {
            let stamp = std::fs::metadata(&stored.path)
                .ok()
                .map(|m| cache::stamp(&m));
            parts.push(stored.path.as_str().as_bytes().to_vec().into());
            parts.push(stamp.unwrap_or([0; 56]).to_vec().into());
        }
    }
    let refs: Vec<&[u8]> = parts.iter().map(|p| &**p).collect();
    cache::context_fingerprint(&refs)
}

/// One trace's encoded row, and how it came about.
struct Judged {
    row: Row,
    how: Provenance,
}

/// What the result cache needs to know of a row.
#[derive(Clone, Copy)]
struct Provenance {
    keys: Option<cache::Keys>,
    /// Rows with drift are never cached.
    cacheable: bool,
    /// The row came from the cache.
    recalled: bool,
    /// It came from an entry whose keys still hold (a hit by content, after a fresh checkout,
    /// brings a new stat key, which the cache file must learn).
    entry_current: bool,
}

/// Judges one trace file, or recalls its row from the cache. `None` when the trace is outside
/// the filters or partition.
fn judge_or_recall(
    path: &Utf8PathBuf,
    entries: &Entries<'_>,
    opts: &CheckOptions,
    cache: Option<&cache::ResultCache>,
    spill: &Spill,
    identity: &mut Option<String>,
) -> Option<Judged> {
    let fresh = |opened, keys, identity: &mut Option<String>| {
        judge_fresh(path, opened, keys, entries, opts, spill, identity)
    };
    let Some(c) = cache else {
        return fresh(TraceFile::open(path, opts.limits), None, identity);
    };
    // The fast path: the stat key, without reading the file.
    let stat = cache::stat_key(path);
    if let Some((bytes, keys)) = stat.and_then(|k| c.take_by_stat(&k)) {
        if let Some(judged) = recall(&bytes, keys, keys, entries, opts, c, spill, identity) {
            return judged;
        }
    }
    // Then the stored bytes: their content key still hits in a fresh checkout (new inodes and
    // times, same bytes). Only on a miss are they decompressed and parsed.
    let mut content = None;
    let mut hit = None;
    let opened = TraceFile::open_with(path, opts.limits, &mut |stored| {
        let key = cache::content_key(path, stored);
        content = Some(key);
        hit = c.take_by_content(&key);
        hit.is_some()
    });
    let keys = content.map(|content| cache::Keys { stat, content });
    if let (Some((bytes, stored)), Some(keys)) = (&hit, keys) {
        if let Some(judged) = recall(bytes, keys, *stored, entries, opts, c, spill, identity) {
            return judged;
        }
    }
    let opened = match opened {
        Ok(Some(file)) => Ok(file),
        // A hit that did not decode: read the file again and judge it.
        Ok(None) => TraceFile::open(path, opts.limits),
        Err(e) => Err(e),
    };
    fresh(opened, keys, identity)
}

/// A row from the cache: `Some(Some(row))` in scope, `Some(None)` outside the filters or
/// partition (the entry is put back for the next full run), `None` when it does not decode
/// (the trace is then judged afresh, never dropped).
#[allow(clippy::too_many_arguments)]
fn recall(
    bytes: &RowBytes,
    keys: cache::Keys,
    stored: cache::Keys,
    entries: &Entries<'_>,
    opts: &CheckOptions,
    c: &cache::ResultCache,
    spill: &Spill,
    identity: &mut Option<String>,
) -> Option<Option<Judged>> {
    let loaded = bytes.load();
    let head = rows::decode_head(&loaded).ok()?;
    *identity = head.content_hash.map(str::to_owned);
    let entry = head.scenario.and_then(|s| entry_of(entries, s));
    let in_scope = match head.scenario {
        Some(s) => !row::out_of_scope_of(s, entry, opts),
        None => opts.partition_holds(None),
    };
    if !in_scope {
        c.put_back(&stored);
        return Some(None);
    }
    // Cached rows have no drift, so only `--fail-on` can change whether they block.
    let blocks = verdict_blocks(head.verdict, head.known_gap, head.risk, opts.fail_on);
    let row = if blocks == head.blocking {
        Row::trusted(bytes.clone(), RowMeta::of(&head))
    } else {
        let mut row = rows::decode(&loaded).ok()?;
        row.blocking = blocks;
        spill.row(&row)
    };
    mark_seen(entry);
    Some(Some(Judged {
        row,
        how: Provenance {
            keys: Some(keys),
            cacheable: true,
            recalled: true,
            entry_current: keys == stored,
        },
    }))
}

/// Judges a trace read (or not) just now.
fn judge_fresh(
    path: &Utf8PathBuf,
    opened: Result<TraceFile, crate::trace::TraceError>,
    keys: Option<cache::Keys>,
    entries: &Entries<'_>,
    opts: &CheckOptions,
    spill: &Spill,
    identity: &mut Option<String>,
) -> Option<Judged> {
    let mut row = row::judge_opened(path, opened, entries, opts, identity)?;
    mark_seen((row.scenario.as_deref()).and_then(|s| entry_of(entries, s)));
    set_blocking(&mut row, opts.fail_on);
    Some(Judged {
        row: spill.row(&row),
        how: Provenance {
            keys,
            cacheable: row.drift.is_empty(),
            recalled: false,
            entry_current: false,
        },
    })
}

/// Notes that a scenario has a trace row. Written once: workers must not keep claiming a cache
/// line they share.
fn mark_seen(entry: Option<&Entry>) {
    if let Some(e) = entry.filter(|e| !e.seen.load(Ordering::Relaxed)) {
        e.seen.store(true, Ordering::Relaxed);
    }
}

/// Whether a verdict makes the exit code 1: errors always, failures by `--fail-on` unless the
/// scenario is a known gap.
fn verdict_blocks(
    verdict: RowVerdict,
    known_gap: bool,
    risk: Option<Risk>,
    fail_on: FailOn,
) -> bool {
    match verdict {
        RowVerdict::Pass => false,
        RowVerdict::Error => true,
        RowVerdict::Fail => !known_gap && fail_on.counts(risk.unwrap_or_default()),
    }
}

/// Sets `row.blocking`: its verdict blocks, or one of its drift findings fails.
pub(crate) fn set_blocking(row: &mut ResultRow, fail_on: FailOn) {
    row.blocking = verdict_blocks(row.verdict, row.known_gap, row.risk, fail_on)
        || row.drift.iter().any(|d| d.fails);
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

#[cfg(test)]
mod tests {
    use super::in_pool;

    /// `--jobs` is honoured, and a run already on a pool of that size is not given a second one
    /// (it stays on its thread; a new pool would run it on one of its own).
    #[test]
    fn a_pool_of_the_right_size_is_reused() {
        let here = || (rayon::current_num_threads(), std::thread::current().id());
        let (outer, same, other) = in_pool(Some(2), || {
            let same = in_pool(Some(2), here).unwrap();
            let other = in_pool(Some(3), here).unwrap();
            (here(), same, other)
        })
        .unwrap();
        assert_eq!(outer.0, 2);
        assert_eq!(same, outer);
        assert_eq!(other.0, 3);
        assert_ne!(other.1, outer.1);
    }
}
