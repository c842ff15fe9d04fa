//! The result cache: one file (`<cache-dir>/check-v2.bin`) holding the encoded result row of
//! every trace judged, so an unchanged trace is neither read, decompressed nor parsed again, and
//! its row is not even decoded unless a report shows it.
//!
//! - **Context.** The file starts with a fingerprint of everything a row depends on besides the
//!   trace itself: the tool version, the row encoding's version, the working directory, the
//!   options that change judging, the bytes of every scenario and contract file, and the state
//!   of the approved baselines. A different fingerprint discards the whole cache.
//! - **Entries.** One per trace, keyed by 128 bits of BLAKE3 over its path (as given; the
//!   working directory is part of the context) and stat fingerprint (size, mtime and ctime in
//!   nanoseconds, inode, device). Any write to a file changes its ctime, which no tool can set
//!   back, so an edited trace always misses. (Without ctime — not Unix — there is no stat fast
//!   path and nothing is cached.)
//! - **Trust.** The header carries the BLAKE3 hash of the entries; anything that does not match
//!   or does not decode — a torn write, a flipped bit, a foreign file, another version — is
//!   ignored and the cache rebuilt, never trusted in part. Rows with drift are not cached, so
//!   pending baseline files are always written by a real comparison.
//! - **Format.** A JSON header line, then entries framed as a 16-byte key, a 4-byte
//!   little-endian length and the row as [`crate::report::rows`] encodes it.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use camino::{Utf8Path, Utf8PathBuf};
use serde::{Deserialize, Serialize};

use crate::fsutil::write_creating_dirs;
use crate::report::rows::{self, RowBytes};

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

/// Where each cached row lies in the file, by key; each is taken (once) by the worker that
/// needs it.
type Entries = HashMap<Key, Slot, KeyHasher>;

struct Slot {
    range: std::ops::Range<usize>,
    taken: AtomicBool,
}

/// Keys are BLAKE3 output, uniformly random already: their first 8 bytes are the hash.
#[derive(Default, Clone, Copy)]
struct KeyHasher;

impl std::hash::BuildHasher for KeyHasher {
    type Hasher = FirstBytes;
    fn build_hasher(&self) -> FirstBytes {
        FirstBytes(0)
    }
}

struct FirstBytes(u64);

impl std::hash::Hasher for FirstBytes {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // `[u8; 16]` hashes as its length, then its bytes: keep the first 8 bytes of the data.
        if bytes.len() >= 8 && self.0 == 0 {
            self.0 = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
        }
    }
    fn write_usize(&mut self, _: usize) {}
}

/// A cache file, read and checked against its own hash but not yet against a run's context,
/// so reading it can overlap discovery. Empty when there is none or it cannot be trusted.
#[derive(Default)]
pub struct CacheFile {
    context: String,
    buf: Arc<Vec<u8>>,
    entries: Entries,
}

impl std::fmt::Debug for CacheFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CacheFile({} entries)", self.entries.len())
    }
}

/// A cache file larger than this is not read (1 GiB holds the rows of well over a million
/// traces); the cache is then rebuilt.
const MAX_FILE: u64 = 1 << 30;

impl CacheFile {
    /// Reads the cache file under `dir`.
    pub fn read(dir: &Utf8Path) -> CacheFile {
        let path = dir.join(FILE);
        if std::fs::metadata(&path).is_ok_and(|m| m.len() > MAX_FILE) {
            return CacheFile::default();
        }
        std::fs::read(&path)
            .ok()
            .and_then(decode)
            .unwrap_or_default()
    }
}

/// A loaded cache; entries are taken out as they are used.
pub struct ResultCache {
    path: Utf8PathBuf,
    context: String,
    file: CacheFile,
}

/// The stat fingerprint of a trace file, or `None` when it cannot be had (then no caching). The
/// path is taken as given: the working directory, which decides how it is shown, is part of the
/// cache's context.
pub fn file_key(path: &Utf8Path) -> Option<Key> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).ok()?;
        let mut h = blake3::Hasher::new();
        h.update(path.as_str().as_bytes());
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
        let _ = path;
        None
    }
}

impl ResultCache {
    /// The cache under `dir` from its file read already; empty unless its context matches.
    pub fn from_file(dir: &Utf8Path, file: CacheFile, context: String) -> ResultCache {
        ResultCache {
            path: dir.join(FILE),
            file: if file.context == context {
                file
            } else {
                CacheFile::default()
            },
            context,
        }
    }

    /// The cache file.
    pub fn path(&self) -> &Utf8Path {
        &self.path
    }

    /// Takes the encoded row cached for `key`, if any.
    pub fn take(&self, key: &Key) -> Option<RowBytes> {
        let slot = self.file.entries.get(key)?;
        if slot.taken.swap(true, Ordering::Relaxed) {
            return None;
        }
        Some(RowBytes::shared(self.file.buf.clone(), slot.range.clone()))
    }

    /// Puts back an entry taken for a trace this run then left out (filters, partition), so a
    /// filtered run keeps it.
    pub fn put_back(&self, key: &Key) {
        if let Some(slot) = self.file.entries.get(key) {
            slot.taken.store(false, Ordering::Relaxed);
        }
    }

    /// Writes the cache for this run's rows (`(key, encoded row)` pairs, rows with drift already
    /// left out; `hits` of them came from the cache). With `keep_unused` (a run filtered by
    /// scenario, tag or partition) the entries this run did not look at are kept for the next
    /// full run; otherwise they are dropped. Nothing is written when the file would not change.
    pub fn save(
        &self,
        rows: &[(Key, &[u8])],
        hits: usize,
        keep_unused: bool,
    ) -> std::io::Result<()> {
        let mut unused: Vec<(&Key, &[u8])> = Vec::new();
        if keep_unused {
            unused = (self.file.entries.iter())
                .filter(|(_, slot)| !slot.taken.load(Ordering::Relaxed))
                .map(|(key, slot)| (key, &self.file.buf[slot.range.clone()]))
                .collect();
            unused.sort_unstable_by_key(|(key, _)| **key);
        }
        if hits == rows.len() && hits + unused.len() == self.file.entries.len() {
            return Ok(());
        }
        let all = rows.iter().map(|(k, r)| (k, *r)).chain(unused);
        let mut body = Vec::with_capacity(rows.iter().map(|(_, r)| r.len() + 20).sum());
        for (key, row) in all {
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

fn decode(bytes: Vec<u8>) -> Option<CacheFile> {
    let nl = memchr::memchr(b'\n', &bytes)?;
    let header: Header = serde_json::from_slice(&bytes[..nl]).ok()?;
    if header.format != FORMAT || header.version != VERSION {
        return None;
    }
    if header.entries_hash != blake3::hash(&bytes[nl + 1..]).to_hex().as_str() {
        return None;
    }
    // Frame the entries; the rows stay in the one buffer the file was read into. The hash
    // vouches for the bytes: they are rows this tool encoded, so they are not decoded here
    // (should one still not decode, it becomes an error row, not a panic).
    let body: &[u8] = &bytes;
    let frames = |mut at: usize| {
        std::iter::from_fn(move || {
            let key: Key = bytes_at(body, at, 16)?.try_into().ok()?;
            let len = u32::from_le_bytes(bytes_at(body, at + 16, 4)?.try_into().ok()?);
            let range = at + 20..(at + 20).checked_add(len as usize)?;
            bytes_at(body, range.start, len as usize)?;
            at = range.end;
            Some((key, range))
        })
    };
    let mut end = nl + 1;
    let mut count = 0;
    for (_, range) in frames(nl + 1) {
        end = range.end;
        count += 1;
    }
    if end != bytes.len() {
        return None;
    }
    let mut entries = Entries::with_capacity_and_hasher(count, KeyHasher);
    for (key, range) in frames(nl + 1) {
        let taken = AtomicBool::new(false);
        entries.insert(key, Slot { range, taken });
    }
    Some(CacheFile {
        context: header.context,
        buf: Arc::new(bytes),
        entries,
    })
}

fn bytes_at(bytes: &[u8], at: usize, len: usize) -> Option<&[u8]> {
    bytes.get(at..at.checked_add(len)?)
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

    fn load(dir: &Utf8Path, context: &str) -> ResultCache {
        ResultCache::from_file(dir, CacheFile::read(dir), context.into())
    }

    #[test]
    fn a_saved_cache_loads_and_a_damaged_one_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let dir = Utf8Path::from_path(dir.path()).unwrap();
        let cache = load(dir, "ctx");
        let (a, b) = (row("a"), row("b"));
        cache
            .save(&[([1; 16], &a), ([2; 16], &b)], 0, false)
            .unwrap();

        let loaded = load(dir, "ctx");
        assert_eq!(loaded.take(&[2; 16]).as_deref(), Some(&*b));
        assert_eq!(loaded.take(&[1; 16]).as_deref(), Some(&*a));
        assert_eq!(loaded.take(&[2; 16]), None, "an entry is taken once");
        assert_eq!(load(dir, "other").file.entries.len(), 0);

        let file = dir.join(FILE);
        let good = std::fs::read(&file).unwrap();
        let mut flipped = good.clone();
        *flipped.last_mut().unwrap() ^= 1;
        for damaged in [&good[..good.len() - 3], &flipped[..], b"garbage\n"] {
            std::fs::write(&file, damaged).unwrap();
            assert_eq!(load(dir, "ctx").file.entries.len(), 0);
        }
        // A huge file is not even read (sparse here: no disk used).
        std::fs::write(&file, &good).unwrap();
        assert_eq!(load(dir, "ctx").file.entries.len(), 2);
        let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
        f.set_len(MAX_FILE + 1).unwrap();
        assert_eq!(load(dir, "ctx").file.entries.len(), 0);
    }
}
