//! The result cache: one file (`<cache-dir>/check-v1.bin`) holding the result row of every trace
//! judged, so an unchanged trace is neither read, decompressed nor parsed again.
//!
//! - **Context.** The file starts with a fingerprint of everything a row depends on besides the
//!   trace itself: the tool version, the options that change judging, the bytes of every
//!   scenario and contract file, and the state of the approved baselines. A different
//!   fingerprint discards the whole cache.
//! - **Entries.** One per trace, keyed by 128 bits of BLAKE3 over its path and stat fingerprint
//!   (size, mtime and ctime in nanoseconds, inode, device). Any write to a file changes its
//!   ctime, which no tool can set back, so an edited trace always misses. (Without ctime — not
//!   Unix — there is no stat fast path and nothing is cached.)
//! - **Trust.** Anything that does not decode — a torn write, a foreign file, another version —
//!   is ignored and the cache rebuilt, never trusted in part. Rows with drift are not cached, so
//!   pending baseline files are always written by a real comparison.
//! - **Format.** A JSON header line, then the entries in `postcard` (compact binary serde):
//!   decoding 20,000 rows takes a few tens of milliseconds, which is what makes a cached re-run
//!   cheap.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use camino::{Utf8Path, Utf8PathBuf};
use serde::{Deserialize, Serialize};

use crate::fsutil::write_creating_dirs;
use crate::oracle::{OracleResult, Verdict};
use crate::privacy::lint::Finding;
use crate::report::{ResultRow, RowError, RowVerdict, Source};
use crate::scenario::Risk;

const FORMAT: &str = "tracereplay.cache";
const VERSION: u32 = 1;
const FILE: &str = "check-v1.bin";

#[derive(Serialize, Deserialize)]
struct Header {
    format: String,
    version: u32,
    context: String,
}

/// An oracle result with its JSON values as text (postcard has no self-describing values).
#[derive(Serialize, Deserialize)]
struct CachedOracle {
    kind: String,
    index: Option<u64>,
    verdict: Verdict,
    message: String,
    evidence: Vec<u64>,
    expected: Option<String>,
    found: Option<String>,
}

/// A row as stored (drift is never cached).
#[derive(Serialize, Deserialize)]
struct CachedRow {
    scenario: Option<String>,
    case: Option<String>,
    path: Option<String>,
    scenario_file: Option<String>,
    content_hash: Option<String>,
    risk: Option<Risk>,
    verdict: RowVerdict,
    source: Source,
    sealed: Option<bool>,
    known_gap: bool,
    oracles: Vec<CachedOracle>,
    baseline: Option<String>,
    error: Option<(String, String, Option<u64>)>,
    warnings: Vec<String>,
    privacy: Vec<Finding>,
    cited: Vec<String>,
}

fn json_text(v: &Option<Box<serde_json::Value>>) -> Option<String> {
    v.as_ref().map(|v| v.to_string())
}

fn json_value(t: Option<String>) -> Option<Box<serde_json::Value>> {
    t.and_then(|t| serde_json::from_str(&t).ok())
}

impl CachedRow {
    fn from_row(r: &ResultRow) -> CachedRow {
        CachedRow {
            scenario: r.scenario.clone(),
            case: r.case.clone(),
            path: r.path.clone(),
            scenario_file: r.scenario_file.clone(),
            content_hash: r.content_hash.clone(),
            risk: r.risk,
            verdict: r.verdict,
            source: r.source,
            sealed: r.sealed,
            known_gap: r.known_gap,
            oracles: r
                .oracles
                .iter()
                .map(|o| CachedOracle {
                    kind: o.kind.to_string(),
                    index: o.index.map(|i| i as u64),
                    verdict: o.verdict,
                    message: o.message.clone(),
                    evidence: o.evidence.clone(),
                    expected: json_text(&o.expected),
                    found: json_text(&o.found),
                })
                .collect(),
            baseline: r.baseline.clone(),
            error: r.error.as_ref().map(|e| {
                (
                    e.category.clone(),
                    e.message.clone(),
                    e.line.map(|l| l as u64),
                )
            }),
            warnings: r.warnings.clone(),
            privacy: r.privacy.clone(),
            cited: r.cited_events.iter().map(|v| v.to_string()).collect(),
        }
    }

    fn into_row(self) -> ResultRow {
        ResultRow {
            scenario: self.scenario,
            case: self.case,
            path: self.path,
            scenario_file: self.scenario_file,
            content_hash: self.content_hash,
            risk: self.risk,
            verdict: self.verdict,
            source: self.source,
            sealed: self.sealed,
            known_gap: self.known_gap,
            // Recomputed by `check` from `--fail-on` on every run.
            blocking: false,
            oracles: self
                .oracles
                .into_iter()
                .map(|o| OracleResult {
                    kind: crate::oracle::canonical_type(&o.kind)
                        .map_or(std::borrow::Cow::Owned(o.kind), std::borrow::Cow::Borrowed),
                    index: o.index.map(|i| i as usize),
                    verdict: o.verdict,
                    message: o.message,
                    evidence: o.evidence,
                    expected: json_value(o.expected),
                    found: json_value(o.found),
                    misconfigured: false,
                })
                .collect(),
            baseline: self.baseline,
            drift: Vec::new(),
            error: self.error.map(|(category, message, line)| RowError {
                category,
                message,
                line: line.map(|l| l as usize),
            }),
            warnings: self.warnings,
            cited_events: self
                .cited
                .iter()
                .filter_map(|t| serde_json::from_str(t).ok())
                .collect(),
            privacy: self.privacy,
        }
    }
}

/// A loaded cache; entries are taken out as they are used.
pub struct ResultCache {
    path: Utf8PathBuf,
    context: String,
    entries: HashMap<String, Mutex<Option<CachedRow>>>,
    hits: AtomicUsize,
}

/// The stat fingerprint of a trace file, or `None` when it cannot be had (then no caching).
pub fn file_key(path: &Utf8Path, shown: &str) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).ok()?;
        let stamp = format!(
            "{shown}\u{0}{}\u{0}{}.{}\u{0}{}.{}\u{0}{}\u{0}{}",
            meta.len(),
            meta.mtime(),
            meta.mtime_nsec(),
            meta.ctime(),
            meta.ctime_nsec(),
            meta.ino(),
            meta.dev()
        );
        Some(blake3::hash(stamp.as_bytes()).to_hex()[..32].to_owned())
    }
    #[cfg(not(unix))]
    {
        let _ = (path, shown);
        None
    }
}

impl ResultCache {
    /// Loads the cache under `dir` if its context matches; otherwise an empty cache.
    pub fn load(dir: &Utf8Path, context: String) -> ResultCache {
        let path = dir.join(FILE);
        let entries = std::fs::read(&path)
            .ok()
            .and_then(|bytes| decode(&bytes, &context))
            .unwrap_or_default();
        ResultCache {
            path,
            context,
            entries,
            hits: AtomicUsize::new(0),
        }
    }

    /// Takes the cached row for `key`, if any.
    pub fn take(&self, key: &str) -> Option<ResultRow> {
        let row = self.entries.get(key)?.lock().ok()?.take()?;
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(row.into_row())
    }

    /// Writes the cache for this run's rows (`(key, row)` pairs; rows with drift are skipped),
    /// unless every row came from the cache and the cache held nothing else.
    pub fn save(&self, rows: &[(String, &ResultRow)]) -> std::io::Result<()> {
        let hits = self.hits.load(Ordering::Relaxed);
        if hits == rows.len() && hits == self.entries.len() {
            return Ok(());
        }
        let entries: Vec<(&str, CachedRow)> = rows
            .iter()
            .filter(|(_, r)| r.drift.is_empty())
            .map(|(k, r)| (k.as_str(), CachedRow::from_row(r)))
            .collect();
        let mut out = serde_json::to_vec(&Header {
            format: FORMAT.into(),
            version: VERSION,
            context: self.context.clone(),
        })?;
        out.push(b'\n');
        out.extend(postcard::to_stdvec(&entries).map_err(std::io::Error::other)?);
        // A cache needs no fsync: a torn file fails to decode and is rebuilt.
        write_creating_dirs(&self.path, &out, false)
    }
}

fn decode(bytes: &[u8], context: &str) -> Option<HashMap<String, Mutex<Option<CachedRow>>>> {
    let nl = memchr::memchr(b'\n', bytes)?;
    let header: Header = serde_json::from_slice(&bytes[..nl]).ok()?;
    if header.format != FORMAT || header.version != VERSION || header.context != context {
        return None;
    }
    let entries: Vec<(String, CachedRow)> = postcard::from_bytes(&bytes[nl + 1..]).ok()?;
    Some(
        entries
            .into_iter()
            .map(|(k, r)| (k, Mutex::new(Some(r))))
            .collect(),
    )
}

/// Fingerprints everything besides a trace that its row depends on.
pub fn context_fingerprint(parts: &[&[u8]]) -> String {
    let mut h = blake3::Hasher::new();
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    for p in parts {
        h.update(&(p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize().to_hex().to_string()
}
