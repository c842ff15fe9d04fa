//! Judging a suite, in stages that run one way:
//!
//! 1. **plan** (`plan`): load the scenarios, decide which the run covers (filters, partition
//!    share) and what keeps one from being judged;
//! 2. **judge** (`judging`, through the one [`pipeline`]): every trace file in parallel —
//!    verify, parse, judge, compare with its approved baseline — or its row recalled from the
//!    result cache; pure: workers write nothing but their own results;
//! 3. **compare** (`baselines`): with the whole run in view, the ambiguous (scenario, case)
//!    pairs and the obsolete baselines;
//! 4. **persist** (`persist` and the cache): the only stage that writes — pending baseline
//!    files (never under CI) and the result cache;
//! 5. **summarise**: counts, in one deterministically ordered report.
//!
//! `diff --from/--to` and `explain` use the same pipeline with the same options.

mod baselines;
mod cache;
mod cache_baselines;
mod cache_file;
mod cache_key;
pub mod explain;
mod judge;
mod judging;
mod merge;
mod persist;
pub mod pipeline;
mod plan;
mod row;
mod run;
mod shares;
mod summary;
mod trace_keys;
mod trials;
pub use crate::report::FailOn;
pub(crate) use crate::report::verdict_blocks;
pub use merge::{MergeError, merge, merge_with};
pub use shares::{SHARE_KEY_ENV, ShareKey};
pub(crate) use summary::{apply_budget, count_cases, summarise};
pub(crate) use trials::single_trace_case;

use std::collections::HashSet;

use camino::Utf8PathBuf;

pub use crate::report::{RowMeta, Rows};
pub(crate) use cache_file::CacheFile;
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use cache_file::fuzz_read as fuzz_read_cache;
pub use cache_key::CACHE_KEY_ENV;
pub(crate) use cache_key::CacheKey;
pub use judge::{JudgedTrace, NotJudged, judge_opened_file, judge_trace_file};
pub use pipeline::{BaselinePolicy, JudgeOptions};
pub use plan::ScenarioIndex;
pub(crate) use trace_keys::stamp;
pub use trace_keys::{Stamp, Stamps};

use crate::discover::Discovered;
use crate::paths::display_path;
use crate::report::store;
use crate::report::{Report, ResultRow};

/// Called once per trace file judged, from the worker threads (a progress bar's tick).
#[derive(Clone)]
pub struct Progress(pub std::sync::Arc<dyn Fn() + Send + Sync>);

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Progress(..)")
    }
}

/// Which scenarios and traces a run covers.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Only these scenario ids (case-insensitive); empty means all.
    pub scenarios: Vec<String>,
    /// Only scenarios with one of these tags (or `type`); empty means all.
    pub tags: Vec<String>,
    /// `--partition hash:K/N` as `(K, N)`: judge only the scenarios in share K.
    pub partition: Option<(u64, u64)>,
    /// The run covers the suite's own roots ([`crate::discover::covers_suite_roots`]): only
    /// then is an approved baseline of a scenario the run did not find obsolete.
    pub whole_suite: bool,
    /// Judge a scenario's `scriptedTrace` when it has no stored trace.
    pub scripted: bool,
    /// `--last-failed`: the run judges only some traces; these scenarios (lowercase ids) had
    /// every trace left out, so their lack of a trace is no error.
    pub rerun: Option<HashSet<String>>,
}

impl Selection {
    /// Whether `--scenario`, `--tag` or `--last-failed` narrows the run.
    pub fn filtered(&self) -> bool {
        !self.scenarios.is_empty() || !self.tags.is_empty() || self.rerun.is_some()
    }

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

/// What counts against the run besides verdicts.
#[derive(Debug, Clone, Default)]
pub struct Counting {
    /// Which failures count.
    pub fail_on: FailOn,
    /// How secrets found in traces and scenarios count.
    pub secrets: crate::privacy::lint::SecretsMode,
    /// Secret fingerprints waived by `.tracereplay-allow`.
    pub waived: HashSet<String>,
    /// The suite budgets (`[budget]`, `--budget-tokens`, `--budget-cost`): each one exceeded
    /// blocks the run.
    pub budget: crate::report::usage::Budget,
}

/// Whether and how approved baselines take part in a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Baselines {
    /// There is no baselines directory.
    #[default]
    Absent,
    /// The project file names a baselines directory that does not exist (off CI; under CI it
    /// is an error): no comparison, and the report names the directory.
    Missing(camino::Utf8PathBuf),
    /// Comparison was turned off (`--drift ignore`).
    Ignored,
    /// Traces are compared with their approved baselines.
    Compared {
        /// How.
        policy: BaselinePolicy,
        /// Write `.new`/`.deleted` pending files and remove stale ones (never under CI).
        write_pending: bool,
    },
}

impl Baselines {
    /// The comparison policy, when baselines are compared.
    pub fn policy(&self) -> Option<&BaselinePolicy> {
        match self {
            Baselines::Compared { policy, .. } => Some(policy),
            Baselines::Absent | Baselines::Missing(_) | Baselines::Ignored => None,
        }
    }

    /// Whether pending files are written.
    pub fn writes_pending(&self) -> bool {
        matches!(
            self,
            Baselines::Compared {
                write_pending: true,
                ..
            }
        )
    }

    /// What the report says about baselines, in a sentence (with how many pending files the
    /// run wrote, and how many it could not).
    fn describe(&self, written: usize, failed: usize) -> String {
        match self {
            Baselines::Ignored => "not compared (`--drift ignore`)".to_owned(),
            Baselines::Absent => "no `baselines/` directory, so no baseline comparison happened; create approved baselines with `tracereplay baseline approve`".to_owned(),
            Baselines::Missing(dir) => format!("no `{dir}` directory (the project file's `baselines`), so no baseline comparison happened; create approved baselines with `tracereplay baseline approve`, or correct `baselines`"),
            Baselines::Compared { policy, write_pending } => format!(
                "compared with `{}`; {}",
                policy.store.dir,
                match (*write_pending, written, failed) {
                    (false, ..) => "no pending file written (under CI, or for paths outside the suite's)".to_owned(),
                    (true, 0, 0) => "no pending file needed".to_owned(),
                    (true, n, 0) => format!("{n} pending file(s) written beside the approved ones"),
                    (true, 0, f) => format!("{f} pending file(s) could not be written (see the warnings)"),
                    (true, n, f) => format!("{n} pending file(s) written beside the approved ones, {f} could not be (see the warnings)"),
                }
            ),
        }
    }
}

/// How a run is carried out: nothing here changes its report.
#[derive(Debug, Clone, Default)]
pub struct Execution {
    /// Worker threads; `None` means all cores.
    pub threads: Option<usize>,
    /// Ticked once per trace judged.
    pub progress: Option<Progress>,
    /// Where the result cache lives (`None`: no cache).
    pub cache_dir: Option<Utf8PathBuf>,
    /// Where to count what the run did (for `--timings`).
    pub stats: Option<std::sync::Arc<CheckStats>>,
    /// Bytes of encoded result rows held in memory (`None`: [`ROW_MEMORY`]); rows beyond go to
    /// a temporary file, and a result cache file larger than this is read from disk as needed
    /// rather than whole. The report is the same whatever the budget.
    pub row_memory: Option<usize>,
    /// The trace files' stamps, taken before judging ([`crate::run_record::Inputs::take`]):
    /// the result cache keys each trace by its stamp here instead of taking it again.
    pub stamps: Option<Stamps>,
}

/// What `check` needs besides the discovered files, by concern.
#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    /// Which scenarios and traces the run covers.
    pub selection: Selection,
    /// How each trace is judged (the same for `check`, `diff` and `explain`).
    pub judging: JudgeOptions,
    /// What counts against the run.
    pub counting: Counting,
    /// Whether and how approved baselines take part.
    pub baselines: Baselines,
    /// How the run is carried out.
    pub execution: Execution,
    /// Check every trace file's detached signature (`--require-signed`): an unsigned trace, a
    /// bad signature or an untrusted key makes an `error` row. With it, the result cache is
    /// neither read nor written (it holds verdicts, not signatures).
    pub signatures: Option<std::sync::Arc<dyn crate::sign::SignatureCheck>>,
    /// Key a share's digest (`partition.rows`) with this: only its holder makes shares to merge.
    pub share_key: Option<ShareKey>,
}

/// The default budget of result rows held in memory (16 MiB): the rows of ~25,000 passing
/// traces.
pub const ROW_MEMORY: usize = 16 << 20;

/// What a run did, besides its report.
#[derive(Debug, Default)]
pub struct CheckStats {
    /// Rows taken from the result cache.
    pub recalled: std::sync::atomic::AtomicUsize,
    /// Pending baseline files written.
    pub pending_written: std::sync::atomic::AtomicUsize,
    /// The files the run read besides those it discovered and the baselines: the Harness
    /// Contracts its scenarios name (for [`crate::run_record`]), in load order.
    pub also_read: std::sync::Mutex<Vec<Utf8PathBuf>>,
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

/// Why `check` could not do its job at all.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// Nothing to judge.
    #[error(
        "no scenario and no trace found under {paths}; point the command at a directory holding `*.scenario.json` and `*.trace.ndjson.zst` files{hint}"
    )]
    NothingFound {
        /// The paths searched.
        paths: String,
        /// Files that look like scenarios under other names (`; found scenario-like file …`).
        hint: String,
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
/// the cache directory.
pub(crate) fn check_with_cache_file(
    found: &Discovered,
    searched: &[Utf8PathBuf],
    opts: &CheckOptions,
    cache_file: Option<CacheFile>,
) -> Result<Report, CheckError> {
    // Everything parallel in the run uses `--jobs` threads.
    in_pool(opts.execution.threads, || {
        run::check_in_pool(found, searched, opts, cache_file)
    })?
}

/// Runs `f` on a rayon pool of `threads` threads (`None`: the global pool), so that everything
/// parallel in it (discovery, judging) honours `--jobs`. Already on a pool of that size (as
/// `tracereplay check` runs discovery and judging in one), it runs there.
pub(crate) fn in_pool<R: Send>(
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

/// Saves the rows judged this run into the result cache; what could not be written, if it
/// could not (a warning: the cache only saves time, so a run fails for it only when the disk is
/// full).
fn save_cache(
    c: &cache::ResultCache,
    judged: &judging::Judgements,
    selection: &Selection,
    searched: &[Utf8PathBuf],
) -> Option<crate::report::FailedWrite> {
    let keyed = || {
        (judged.rows.iter().zip(&judged.provenance)).filter_map(|(row, how)| {
            let how = how.filter(|h| h.cacheable)?;
            Some((how.keys?, how.depends, row.as_ref()?.bytes()))
        })
    };
    let hits = (judged.provenance.iter().flatten())
        .filter(|h| h.entry_current)
        .count();
    // A filtered run keeps the rows of the traces it did not look at; any run keeps those of
    // traces outside the paths it searched (a run over one scenario's directory keeps the rest
    // of the suite's). What lies inside them and was not found is gone.
    let filtered = selection.filtered() || selection.partition.is_some();
    let searched: Vec<String> = searched.iter().map(|p| display_path(p)).collect();
    let keep = |row: &store::RowBytes| filtered || !trace_keys::searched_holds(&searched, row);
    c.save(keyed, hits, &keep).err().map(|e| {
        let message = format!(
            "cannot write the result cache `{}`: {e}; the next run will judge every trace again",
            display_path(c.path())
        );
        crate::report::FailedWrite::new(message, &e)
    })
}

/// Sets `row.blocking`: its verdict blocks, or one of its drift findings fails.
pub(crate) fn set_blocking(row: &mut ResultRow, fail_on: FailOn) {
    row.blocking = blocks(row, fail_on);
}

/// Whether a row makes the exit code 1 under `fail_on`: its verdict counts, or some drift
/// finding fails (what `check` sets and `merge` checks).
pub(crate) fn blocks(row: &ResultRow, fail_on: FailOn) -> bool {
    verdict_blocks(row.verdict, row.known_gap, row.risk, fail_on)
        || row.drift.iter().any(|d| d.fails)
}

pub use crate::common::error_chain;

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

#[cfg(test)]
mod properties_tests;
