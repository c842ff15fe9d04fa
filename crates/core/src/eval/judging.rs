//! The judge stage: every trace file, in parallel, judged by [`super::row`] or recalled from the
//! result cache. Workers write nothing but their own results: an encoded row, what the cache
//! needs of it, the pending baseline file its comparison calls for, and the trace's identity
//! (for a partitioned run's suite fingerprint).

use std::sync::Mutex;
use std::sync::atomic::Ordering;

use camino::Utf8PathBuf;
use rayon::prelude::*;

use super::baselines::Pending;
use super::plan::{Entries, Entry, entry_of, out_of_scope_of};
use super::store::{self as rows, Row, RowMeta, Spill};
use super::{CheckOptions, cache, row, set_blocking, verdict_blocks};
use crate::remote::Remote;
use crate::trace::TraceFile;

/// What the result cache needs to know of a row.
#[derive(Clone, Copy)]
pub(crate) struct Provenance {
    pub(crate) keys: Option<cache::Keys>,
    /// Rows with drift are never cached.
    pub(crate) cacheable: bool,
    /// The row came from the cache.
    pub(crate) recalled: bool,
    /// It came from an entry whose keys still hold (a hit by content, after a fresh checkout,
    /// brings a new stat key, which the cache file must learn).
    pub(crate) entry_current: bool,
    /// The key of what the row was judged under besides the trace, as the cache keeps it
    /// ([`cache::ResultCache::depends`]; zeros without a cache).
    pub(crate) depends: cache::RowKey,
}

/// One trace's encoded row, and how it came about.
struct Judged {
    row: Row,
    how: Provenance,
}

/// What the judge stage gives the later stages, one place per trace file (`None` where the
/// trace was outside the filters or partition).
pub(crate) struct Judgements {
    pub(crate) rows: Vec<Option<Row>>,
    pub(crate) provenance: Vec<Option<Provenance>>,
    /// Pending baseline files the comparisons call for (off CI), in no particular order.
    pub(crate) pending: Vec<Pending>,
    /// Each trace's content hash where its seal holds (only for a partitioned run).
    pub(crate) identities: Option<Vec<std::sync::OnceLock<String>>>,
    /// The behaviours of the trial traces judged, by display path.
    pub(crate) behaviours: super::trials::TrialBehaviours,
    /// By entry index: whether some row names the scenario.
    pub(crate) seen: Vec<bool>,
}

/// A window of a run over remote objects holds at most this many traces, and the stored bytes
/// of at most [`REMOTE_WINDOW_BYTES`] (or one object, if larger): one window is read while the
/// one before it is judged, so at most two windows of stored bytes are in memory.
const REMOTE_WINDOW: usize = 256;
const REMOTE_WINDOW_BYTES: u64 = 64 << 20;

/// `files` cut into windows for reading ahead ([`REMOTE_WINDOW`]).
fn remote_windows<'f>(files: &'f [Utf8PathBuf], remote: &Remote) -> Vec<&'f [Utf8PathBuf]> {
    let mut windows = Vec::new();
    let (mut start, mut bytes) = (0, 0u64);
    for (i, path) in files.iter().enumerate() {
        let size = remote.size(path).unwrap_or(0);
        if i > start && (i - start == REMOTE_WINDOW || bytes + size > REMOTE_WINDOW_BYTES) {
            windows.push(&files[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += size;
    }
    if start < files.len() {
        windows.push(&files[start..]);
    }
    windows
}

/// Judges (or recalls) every trace file of `files` (each local, or one of `remote`'s objects).
pub(crate) fn judge_stage(
    files: &[Utf8PathBuf],
    remote: Option<&Remote>,
    entries: &Entries<'_>,
    opts: &CheckOptions,
    cache: Option<&cache::ResultCache>,
    spill: &Spill,
) -> Judgements {
    // Rows and what the cache needs of them are collected apart and in place (an indexed
    // collect writes each result where it belongs), so that the rows can become the report's
    // without a copy of both at the end of a large run.
    let mut rows_found: Vec<Option<Row>> = Vec::new();
    let mut provenance: Vec<Option<Provenance>> = Vec::new();
    let pending: Mutex<Vec<Pending>> = Mutex::default();
    let behaviours: Mutex<super::trials::TrialBehaviours> = Mutex::default();
    // A share of a partitioned run records the identity of every trace of the suite, judged by
    // this share or not, so that `merge` can tell shares of one suite from others.
    let identities: Option<Vec<std::sync::OnceLock<String>>> =
        (opts.selection.partition).map(|_| files.iter().map(|_| Default::default()).collect());
    // Which scenarios have a row: the judge stage's own record, read into the plan afterwards.
    let seen: Vec<std::sync::atomic::AtomicBool> =
        entries.values().map(|_| Default::default()).collect();
    // A remote object whose key a scenario outside this run's scope claims is never read.
    let claims = remote.map(|_| KeyClaims::new(entries));
    let claim_of = |path: &Utf8PathBuf| -> Result<Option<Claim>, OutOfScope> {
        let held = remote.is_some_and(|r| r.holds(path));
        let Some(claim) = claims.as_ref().filter(|_| held).and_then(|c| c.claim(path)) else {
            return Ok(None);
        };
        let entry = entry_of(entries, &claim.scenario);
        match out_of_scope_of(&claim.scenario, entry, &opts.selection) {
            true => Err(OutOfScope),
            false => Ok(Some(claim)),
        }
    };
    // A run that writes pending files stages each pending text beside its `.new` as it is made.
    let stage_in = (opts.baselines.policy())
        .filter(|_| opts.baselines.writes_pending())
        .map(|p| &p.store);
    // Stamps taken of these very files, or none.
    let stamps = (opts.execution.stamps.as_ref()).filter(|s| s.len() == files.len());
    let judge_one = |(i, path): (usize, &Utf8PathBuf)| {
        let mut out = Outputs {
            stamp: stamps.and_then(|s| s.get(i).copied()),
            ..Outputs::default()
        };
        let judged = claim_of(path).ok().and_then(|claim| {
            out.claim = claim;
            judge_or_recall(path, remote, entries, opts, cache, spill, &mut out)
        });
        // A remote object is known to a share's fingerprint by its listing, read or not, so
        // that every share of one bucket's suite gives the same fingerprint.
        if let Some(r) = remote.filter(|r| r.holds(path)) {
            out.identity = r
                .identity(path)
                .map(|id| format!("b3:{}", blake3::hash(&id)));
        }
        if let (Some(ids), Some(id)) = (&identities, out.identity) {
            let _ = ids[i].set(id);
        }
        // Written once: workers must not keep claiming a cache line they share.
        if let Some(flag) = out.seen.and_then(|e| seen.get(e))
            && !flag.load(Ordering::Relaxed)
        {
            flag.store(true, Ordering::Relaxed);
        }
        if let Some(p) = out.pending {
            let p = p.kept(spill, stage_in);
            pending.lock().unwrap_or_else(|e| e.into_inner()).push(p);
        }
        if let Some((shown, b)) = out.behaviour {
            behaviours
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(shown, b);
        }
        if let Some(p) = &opts.execution.progress {
            (p.0)();
        }
        judged.map_or((None, None), |j| (Some(j.row), Some(j.how)))
    };
    match remote {
        None => (files.par_iter().enumerate())
            .map(judge_one)
            .unzip_into_vecs(&mut rows_found, &mut provenance),
        Some(remote) => {
            // Remote objects are read a window ahead: the next window's objects (those the
            // cache does not hold by their listing) are fetched, many at a time, while this
            // window's are judged.
            let limits = opts.judging.limits;
            let prefetch = |window: &[Utf8PathBuf]| {
                let misses: Vec<&camino::Utf8Path> = (window.iter())
                    .filter(|p| remote.holds(p) && claim_of(p).is_ok())
                    .filter(|p| {
                        let key = remote.identity(p).map(|id| cache::identity_key(&id));
                        !(cache.zip(key)).is_some_and(|(c, k)| c.has_stat(&k))
                    })
                    .map(|p| p.as_path())
                    .collect();
                remote.prefetch(&misses, limits);
            };
            let windows = remote_windows(files, remote);
            std::thread::scope(|s| {
                let mut ahead = windows.first().map(|w| s.spawn(|| prefetch(w)));
                for (at, window) in windows.iter().enumerate() {
                    if let Some(h) = ahead.take() {
                        let _ = h.join();
                    }
                    ahead = windows.get(at + 1).map(|w| s.spawn(|| prefetch(w)));
                    let (mut r, mut p) = (Vec::new(), Vec::new());
                    let first = rows_found.len();
                    (window.par_iter().enumerate())
                        .map(|(j, path)| judge_one((first + j, path)))
                        .unzip_into_vecs(&mut r, &mut p);
                    rows_found.extend(r);
                    provenance.extend(p);
                }
            });
        }
    }
    if let Some(stats) = &opts.execution.stats {
        let recalled = provenance.iter().flatten().filter(|h| h.recalled).count();
        stats.recalled.store(recalled, Ordering::Relaxed);
    }
    let mut pending = pending.into_inner().unwrap_or_else(|e| e.into_inner());
    pending.sort();
    Judgements {
        rows: rows_found,
        provenance,
        pending,
        identities,
        behaviours: behaviours.into_inner().unwrap_or_else(|e| e.into_inner()),
        seen: seen.into_iter().map(|s| s.into_inner()).collect(),
    }
}

/// What judging one trace gives besides its row.
#[derive(Default)]
pub(crate) struct Outputs {
    /// The trace's content hash, when its seal holds (in scope or not).
    pub(crate) identity: Option<String>,
    /// The pending baseline file its comparison calls for.
    pub(crate) pending: Option<Pending>,
    /// A trial trace's behaviour by its shown path, left for the case stage to compare.
    pub(crate) behaviour: Option<(String, crate::baseline::Behaviour)>,
    /// The entry (by index) of the scenario its row names.
    pub(crate) seen: Option<usize>,
    /// How the trace's signature was checked (`--require-signed`), before judging.
    pub(crate) signature: Option<Result<crate::sign::Signed, crate::sign::SignatureProblem>>,
    /// The scenario a remote object's key places it under ([`KeyClaims`]).
    pub(crate) claim: Option<Claim>,
    /// The trace file's stamp as taken before judging ([`super::Execution::stamps`]), which
    /// keys its cached row; else a `stat` is taken when it is looked up.
    pub(crate) stamp: Option<super::Stamp>,
}

/// A remote object claimed by a scenario outside the run's scope.
struct OutOfScope;

/// The scenario (its entry's id) and case a remote object's key names.
pub(crate) struct Claim {
    pub(crate) scenario: String,
    pub(crate) case: String,
}

/// Where remote objects belong by their keys alone, before they are read: the first directory
/// of a key (under its bucket) that is a loaded scenario's directory, as `ingest` writes it
/// (`<scenario>/<case>.trace.ndjson.zst`, `<scenario>/<case>/<trial>.trace.ndjson.zst`). A
/// partitioned run reads only the objects its share's scenarios claim (and those no scenario
/// claims); a claimed object that names another scenario is a `misplaced` error row.
pub(crate) struct KeyClaims<'e> {
    dirs: foldhash::HashMap<String, &'e str>,
}

impl<'e> KeyClaims<'e> {
    pub(crate) fn new(entries: &'e Entries<'_>) -> KeyClaims<'e> {
        let dirs = (entries.keys())
            .map(|id| (crate::baseline::encode_trace_segment(id), id.as_str()))
            .collect();
        KeyClaims { dirs }
    }

    /// The claim of the object at `url` (`scheme://bucket/key`), if a scenario makes one.
    pub(crate) fn claim(&self, url: &camino::Utf8Path) -> Option<Claim> {
        let (_, rest) = url.as_str().split_once("://")?;
        let segments: Vec<&str> = rest.split('/').skip(1).collect();
        let (file, dirs) = segments.split_last()?;
        let (at, scenario) = (dirs.iter().enumerate()).find_map(|(i, seg)| {
            let decoded = crate::baseline::decode_segment(seg).to_lowercase();
            let encoded = crate::baseline::encode_trace_segment(&decoded);
            (self.dirs.get(*seg).or_else(|| self.dirs.get(&encoded))).map(|id| (i, *id))
        })?;
        let stem = |f: &str| {
            let name = f.split(".trace.").next().unwrap_or(f);
            crate::baseline::decode_segment(name)
        };
        let case = match dirs.get(at + 1) {
            Some(dir) => crate::baseline::decode_segment(dir),
            None => stem(file),
        };
        Some(Claim {
            scenario: scenario.to_owned(),
            case,
        })
    }
}

/// Judges one trace file, or recalls its row from the cache. `None` when the trace is outside
/// the filters or partition.
fn judge_or_recall(
    path: &Utf8PathBuf,
    remote: Option<&Remote>,
    entries: &Entries<'_>,
    opts: &CheckOptions,
    cache: Option<&cache::ResultCache>,
    spill: &Spill,
    out: &mut Outputs,
) -> Option<Judged> {
    let limits = opts.judging.limits;
    let fresh = |opened, keys, out: &mut Outputs| {
        judge_fresh(path, opened, (keys, cache), entries, opts, spill, out)
    };
    if let Some(signatures) = &opts.signatures {
        // The signature covers the stored bytes, which are read once: checked, then
        // decompressed and judged afresh whatever the signature's outcome (a bad one still
        // gets a row that names its scenario and case). Such a run has no cache.
        let opened = crate::remote::open_with(remote, path, limits, &mut |stored| {
            out.signature = Some(signatures.check(path, stored));
            false
        });
        let opened = opened.map(|f| f.expect("read to the end when `inspect` says so"));
        return fresh(opened, None, out);
    }
    let Some(c) = cache else {
        return fresh(crate::remote::open(remote, path, limits), None, out);
    };
    // The fast path: the stat key, without reading the file.
    let stat = match remote.filter(|r| r.holds(path)) {
        Some(r) => r.identity(path).map(|id| cache::identity_key(&id)),
        None => cache::stat_key(path, out.stamp.as_ref()),
    };
    if let Some(taken) = stat.and_then(|k| c.take_by_stat(&k)) {
        if let Some(judged) = recall(&taken, taken.keys, entries, opts, c, spill, out) {
            return judged;
        }
    }
    // Then the stored bytes: their content key still hits in a fresh checkout (new inodes and
    // times, same bytes). Only on a miss are they decompressed and parsed.
    let mut content = None;
    let mut hit = None;
    let opened = crate::remote::open_with(remote, path, limits, &mut |stored| {
        let key = cache::content_key(path, stored);
        content = Some(key);
        hit = c.take_by_content(&key);
        hit.is_some()
    });
    let keys = content.map(|content| cache::Keys { stat, content });
    if let (Some(taken), Some(keys)) = (&hit, keys) {
        if let Some(judged) = recall(taken, keys, entries, opts, c, spill, out) {
            return judged;
        }
    }
    let opened = match opened {
        Ok(Some(file)) => Ok(file),
        // A hit that did not decode: read the file again and judge it.
        Ok(None) => crate::remote::open(remote, path, limits),
        Err(e) => Err(e),
    };
    fresh(opened, keys, out)
}

/// A row from the cache (`taken`, for a trace whose keys are `keys`): `Some(Some(row))` in
/// scope, `Some(None)` outside the filters or partition (the entry is put back for the next full
/// run), `None` when it does not decode or was judged under another scenario or approved
/// baseline than the ones it names now (the trace is then judged afresh, never dropped).
fn recall(
    taken: &cache::Taken,
    keys: cache::Keys,
    entries: &Entries<'_>,
    opts: &CheckOptions,
    c: &cache::ResultCache,
    spill: &Spill,
    out: &mut Outputs,
) -> Option<Option<Judged>> {
    let (bytes, stored) = (&taken.row, taken.keys);
    let loaded = bytes.head();
    let head = rows::decode_head(&loaded).ok()?;
    let entry = head.scenario.and_then(|s| entry_of(entries, s));
    let depends = c.depends(entry.map(|e| e.index), head.baseline);
    if taken.depends != depends {
        return None;
    }
    out.identity = head.content_hash.map(str::to_owned);
    let in_scope = match head.scenario {
        Some(s) => !out_of_scope_of(s, entry, &opts.selection),
        None => opts.selection.partition_holds(None),
    };
    if !in_scope {
        c.put_back(&stored);
        return Some(None);
    }
    // Cached rows have no drift, so only `--fail-on` can change whether they block.
    let fail_on = opts.counting.fail_on;
    let blocks = verdict_blocks(head.verdict, head.known_gap, head.risk, fail_on);
    let row = if blocks == head.blocking {
        Row::trusted(bytes.clone(), RowMeta::of(&head))
    } else {
        let mut row = rows::decode(&loaded).ok()?;
        row.blocking = blocks;
        spill.row(&row)
    };
    out.seen = entry.map(|e: &Entry| e.index);
    Some(Some(Judged {
        row,
        how: Provenance {
            keys: Some(keys),
            cacheable: true,
            recalled: true,
            entry_current: keys == stored,
            depends,
        },
    }))
}

/// Judges a trace read (or not) just now (`keys`: its keys in `cache`, if any).
fn judge_fresh(
    path: &Utf8PathBuf,
    opened: Result<TraceFile, crate::trace::TraceError>,
    (keys, cache): (Option<cache::Keys>, Option<&cache::ResultCache>),
    entries: &Entries<'_>,
    opts: &CheckOptions,
    spill: &Spill,
    out: &mut Outputs,
) -> Option<Judged> {
    let mut row = row::row_of_opened(path, opened, entries, opts, out)?;
    set_blocking(&mut row, opts.counting.fail_on);
    let depends = cache.map_or([0; 16], |c| c.depends(out.seen, row.baseline.as_deref()));
    Some(Judged {
        row: spill.row(&row),
        how: Provenance {
            keys,
            // A trial's row is judged with its case: its set comparison needs its behaviour.
            cacheable: row.drift.is_empty() && row.trial.is_none(),
            recalled: false,
            entry_current: false,
            depends,
        },
    })
}
