//! The result cache: one file (`<cache-dir>/check-v2.bin`) holding the encoded result row of
//! every trace judged, so an unchanged trace is neither read, decompressed nor parsed again, and
//! its row is not even decoded unless a report shows it.
//!
//! - **Context.** The file starts with a fingerprint of everything a row depends on besides the
//!   trace itself: the tool version, the row encoding's version, the options that change
//!   judging, the bytes of every scenario and contract file, and the state of the approved
//!   baselines. A different fingerprint discards the whole cache.
//! - **Entries.** One per trace, keyed by 128 bits of BLAKE3 over its path and stat fingerprint
//!   (size, mtime and ctime in nanoseconds, inode, device). Any write to a file changes its
//!   ctime, which no tool can set back, so an edited trace always misses. (Without ctime — not
//!   Unix — there is no stat fast path and nothing is cached.)
//! - **Trust.** The header carries the BLAKE3 hash of the entries; anything that does not match
//!   or does not decode — a torn write, a flipped bit, a foreign file, another version — is
//!   ignored and the cache rebuilt, never trusted in part. Rows with drift are not cached, so
//!   pending baseline files are always written by a real comparison.
//! - **Format.** A JSON header line, then entries framed as a 16-byte key, a 4-byte
//!   little-endian length and the row as [`crate::report::rows`] encodes it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use camino::{Utf8Path, Utf8PathBuf};
use serde::{Deserialize, Serialize};

use crate::fsutil::write_creating_dirs;
use crate::report::rows;

const FORMAT: &str = "tracereplay.cache";
const VERSION: u32 = 2;
const FILE: &str = "check-v2.bin";

/// A cache entry's key: 128 bits of BLAKE3 over the trace's path and stat fingerprint.
pub type Key = [u8; 16];

#[derive(Serialize, Deserialize)]
struct Header {
    format: String,
    version: u32,
    context: String,
    /// BLAKE3 of everything after the header line.
    entries_hash: String,
}

/// Encoded rows by key, each taken out (once) by the worker that needs it.
type Entries = HashMap<Key, Mutex<Option<Box<[u8]>>>>;

/// A loaded cache; entries are taken out as they are used.
pub struct ResultCache {
    path: Utf8PathBuf,
    context: String,
    entries: Entries,
    hits: AtomicUsize,
}

/// The stat fingerprint of a trace file, or `None` when it cannot be had (then no caching).
pub fn file_key(path: &Utf8Path, shown: &str) -> Option<Key> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).ok()?;
        let mut h = blake3::Hasher::new();
        h.update(shown.as_bytes());
        h.update(&[0]);
        for n in [
            meta.len(),
            meta.mtime() as u64,
            meta.mtime_nsec() as u64,
            meta.ctime() as u64,
            meta.ctime_nsec() as u64,
            meta.ino(),
            meta.dev(),
        ] {
            h.update(&n.to_le_bytes());
        }
        let mut key = [0; 16];
        key.copy_from_slice(&h.finalize().as_bytes()[..16]);
        Some(key)
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

    /// Takes the encoded row cached for `key`, if any.
    pub fn take(&self, key: &Key) -> Option<Box<[u8]>> {
        let row = self.entries.get(key)?.lock().ok()?.take()?;
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(row)
    }

    /// Writes the cache for this run's rows (`(key, encoded row)` pairs, rows with drift already
    /// left out), unless every row came from the cache and the cache held nothing else.
    pub fn save(&self, rows: &[(Key, &[u8])]) -> std::io::Result<()> {
        let hits = self.hits.load(Ordering::Relaxed);
        if hits == rows.len() && hits == self.entries.len() {
            return Ok(());
        }
        let mut body = Vec::with_capacity(rows.iter().map(|(_, r)| r.len() + 20).sum());
        for (key, row) in rows {
            let len = u32::try_from(row.len()).map_err(std::io::Error::other)?;
            body.extend_from_slice(key);
            body.extend_from_slice(&len.to_le_bytes());
            body.extend_from_slice(row);
        }
        let mut out = serde_json::to_vec(&Header {
            format: FORMAT.into(),
            version: VERSION,
            context: self.context.clone(),
            entries_hash: blake3::hash(&body).to_hex().to_string(),
        })?;
        out.push(b'\n');
        out.extend_from_slice(&body);
        // A cache needs no fsync: a torn file fails its hash and is rebuilt.
        write_creating_dirs(&self.path, &out, false)
    }
}

fn decode(bytes: &[u8], context: &str) -> Option<Entries> {
    let nl = memchr::memchr(b'\n', bytes)?;
    let header: Header = serde_json::from_slice(&bytes[..nl]).ok()?;
    let mut body = &bytes[nl + 1..];
    if header.format != FORMAT
        || header.version != VERSION
        || header.context != context
        || header.entries_hash != blake3::hash(body).to_hex().as_str()
    {
        return None;
    }
    let mut entries = HashMap::new();
    while !body.is_empty() {
        let key: Key = body.get(..16)?.try_into().ok()?;
        let len = u32::from_le_bytes(body.get(16..20)?.try_into().ok()?) as usize;
        let row = body.get(20..20 + len)?;
        // Only rows whose leading fields decode are kept (the rest is covered by the hash).
        rows::decode_head(row).ok()?;
        entries.insert(key, Mutex::new(Some(row.into())));
        body = &body[20 + len..];
    }
    Some(entries)
}

/// Fingerprints everything besides a trace that its row depends on.
pub fn context_fingerprint(parts: &[&[u8]]) -> String {
    let mut h = blake3::Hasher::new();
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    h.update(&rows::WIRE_VERSION.to_le_bytes());
    for p in parts {
        h.update(&(p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize().to_hex().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{ResultRow, RowVerdict, Source};

    fn row(path: &str) -> Box<[u8]> {
        let r: ResultRow = serde_json::from_value(serde_json::json!({
            "scenario": "s", "case": "c", "path": path, "scenario_file": null,
            "content_hash": null, "risk": null, "verdict": "pass", "source": "trace",
            "sealed": true, "known_gap": false, "blocking": false, "oracles": [],
            "baseline": null, "drift": [], "warnings": []
        }))
        .unwrap();
        assert_eq!((r.verdict, r.source), (RowVerdict::Pass, Source::Trace));
        rows::encode(&r)
    }

    #[test]
    fn a_saved_cache_loads_and_a_damaged_one_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let dir = Utf8Path::from_path(dir.path()).unwrap();
        let cache = ResultCache::load(dir, "ctx".into());
        let (a, b) = (row("a"), row("b"));
        cache.save(&[([1; 16], &a), ([2; 16], &b)]).unwrap();

        let loaded = ResultCache::load(dir, "ctx".into());
        assert_eq!(loaded.take(&[2; 16]).as_deref(), Some(&*b));
        assert_eq!(loaded.take(&[2; 16]), None, "an entry is taken once");
        assert_eq!(ResultCache::load(dir, "other".into()).entries.len(), 0);

        let file = dir.join(FILE);
        let good = std::fs::read(&file).unwrap();
        let mut flipped = good.clone();
        *flipped.last_mut().unwrap() ^= 1;
        for damaged in [&good[..good.len() - 3], &flipped[..], b"garbage\n"] {
            std::fs::write(&file, damaged).unwrap();
            assert_eq!(ResultCache::load(dir, "ctx".into()).entries.len(), 0);
        }
    }
}
