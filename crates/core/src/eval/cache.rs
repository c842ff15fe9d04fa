//! The result cache: one file (`<cache-dir>/check-v4.bin`) holding the encoded result row of
//! every trace judged, so an unchanged trace is neither decompressed nor parsed again, and its
//! row is not even decoded unless a report shows it.
//!
//! - **Context.** The file starts with a fingerprint of everything a row depends on besides the
//!   trace, its scenario and its approved baseline: the tool version, the row encoding's
//!   version, the working directory and the options that change judging. A different
//!   fingerprint discards the whole cache.
//! - **Dependencies.** Each entry carries the key of what its row was judged under
//!   ([`ResultCache::depends`]): the scenario it names ([`super::plan::ScenarioKeys`]: the
//!   scenario's file, its Harness Contract as loaded, its problems) and, when baselines are
//!   compared, the content of the approved baseline it was compared with (read only where a
//!   baseline's stat fingerprint changed since the file recorded it, see
//!   [`super::cache_baselines`], so a fresh checkout keeps its rows). A row is recalled only if
//!   that key holds now. An edit of one scenario, or an approval of one case, judges those
//!   traces again and no others, and a run over part of the suite (one directory) recalls and
//!   keeps the rows of the rest.
//! - **Entries.** One per trace, under two keys of 128 bits of BLAKE3, both over its path (as
//!   shown, [`super::trace_keys::key_path`]; the working directory is part of the context):
//!   one with its stat fingerprint (size,
//!   mtime and ctime in nanoseconds, inode, device), one with its stored bytes. The stat key is
//!   the fast path: an unchanged trace is not even read. When it misses (an edit, or a fresh
//!   checkout where every file has new times and inodes) the file is read and hashed, and the
//!   content key decides; only then is the trace decompressed and parsed, and only if that
//!   misses too. Any write to a file changes its ctime, which no tool can set back, so an edit
//!   never hits the stat key. (Without ctime — not Unix — only the content key is used.)
//! - **Trust.** The header carries a keyed BLAKE3 MAC of the context and the entries, made with
//!   a secret [`CacheKey`] that never lies beside the cache: `TRACEREPLAY_CACHE_KEY` (a CI
//!   secret, so jobs that share a restored cache share the key) or else a random key kept in the
//!   user's own cache directory (`$XDG_CACHE_HOME/tracereplay/cache-key`, by default
//!   `~/.cache/...`, created 0600). Whoever can write the cache file but not read the key cannot
//!   put a forged row in it: a restored or edited cache whose MAC does not verify — forged, torn,
//!   flipped, foreign, another version or another key — is ignored and rebuilt, never trusted in
//!   part. Without a key (no variable, no user cache directory) there is no cache. Rows with
//!   drift are not cached, so pending baseline files are always written by a real comparison.
//! - **Format.** A JSON header line, then entries framed as the 16-byte stat key, the 16-byte
//!   content key, the 16-byte dependency key, a 4-byte little-endian length and the row as
//!   [`crate::eval::store`] encodes it.
//! - **Memory.** A file up to the run's row budget ([`super::ROW_MEMORY`] by default) is read whole and
//!   its hits share that buffer. A larger one is streamed once (hashed and framed, keeping keys
//!   and offsets, and each row's head — the leading fields every recalled row is read for — as
//!   long as those heads fit the same budget) and the rest of its hits' rows are read back from
//!   it when a report needs them. So a large suite's cache costs at most the budget plus tens of
//!   bytes per entry in memory, not the size of its rows, and recalling a row reads no file
//!   while the heads fit (about 200 bytes each: some 80,000 rows in 16 MiB). (Off Unix
//!   the file is always read whole: a file still open there cannot be replaced by the next
//!   save.)

use std::sync::atomic::Ordering;

use camino::{Utf8Path, Utf8PathBuf};

pub(crate) use super::cache_file::CacheFile;
use super::cache_file::Header;
pub(crate) use super::cache_key::CacheKey;
use super::cache_key::EntryHasher;
use super::store::{self as rows, RowBytes};
pub(crate) use super::trace_keys::stamp;
pub(super) use super::trace_keys::{content_key, identity_key, stat_key};
use crate::fsutil::write_streaming_creating_dirs;

pub(super) const FORMAT: &str = "tracereplay.cache";
pub(super) const VERSION: u32 = 8;

/// The cache file's name for a format version: `check-v<VERSION>.bin`.
pub(super) fn file_name(version: u32) -> String {
    format!("check-v{version}.bin")
}

/// The bytes of an entry's frame: two keys, the dependency key and a row length.
pub(super) const FRAME: usize = 52;

/// 128 bits of BLAKE3.
pub(super) type RowKey = [u8; 16];

/// A trace's keys: by stat fingerprint (`None` off Unix) and by stored bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Keys {
    /// Path and stat fingerprint.
    pub stat: Option<RowKey>,
    /// Path and stored bytes.
    pub content: RowKey,
}

/// An entry taken for a trace: its row, its keys as stored, and the key of what it was judged
/// under besides the trace (the row holds only if that is unchanged, [`ResultCache::depends`]).
pub(super) struct Taken {
    pub(super) row: RowBytes,
    pub(super) keys: Keys,
    pub(super) depends: RowKey,
}

/// A loaded cache; entries are taken out as they are used.
pub(super) struct ResultCache {
    path: Utf8PathBuf,
    context: String,
    key: CacheKey,
    file: CacheFile,
    /// The key of each scenario a row may name.
    scenarios: super::plan::ScenarioKeys,
    /// The key of each approved baseline by its path as shown (`None`: baselines are not
    /// compared).
    baselines: Option<super::cache_baselines::ByPath>,
}

impl ResultCache {
    /// The cache under `dir` from its file read already (with `key`); empty unless its context
    /// matches. Saved with `key`.
    pub(super) fn from_file(
        dir: &Utf8Path,
        file: CacheFile,
        fingerprint: &str,
        baselines: String,
        key: CacheKey,
    ) -> ResultCache {
        // The context is the fingerprint, then the approved baselines' record
        // ([`super::cache_baselines`]); only the fingerprint must match.
        let recorded = super::cache_baselines::split_context(&file.context).0;
        ResultCache {
            path: dir.join(file_name(VERSION)),
            file: if recorded == fingerprint {
                file
            } else {
                CacheFile::default()
            },
            context: format!("{fingerprint}\n{baselines}"),
            key,
            scenarios: Default::default(),
            baselines: None,
        }
    }

    /// The cache with the keys of this run's scenarios and approved baselines (by path as
    /// shown; `None` when baselines are not compared).
    pub(super) fn with_dependencies(
        self,
        scenarios: super::plan::ScenarioKeys,
        baselines: Option<super::cache_baselines::ByPath>,
    ) -> ResultCache {
        ResultCache {
            scenarios,
            baselines,
            ..self
        }
    }

    /// The key of what a row depends on besides its trace: the scenario it names (by its
    /// entry's index, or none) and, when baselines are compared, the approved baseline it was
    /// compared with (by the path the row shows; absent is a key too). An entry is recalled only
    /// when this is the key it was saved with.
    pub(super) fn depends(&self, entry: Option<usize>, baseline: Option<&str>) -> RowKey {
        let scenario = self.scenarios.of(entry);
        let (Some(baselines), Some(path)) = (&self.baselines, baseline) else {
            return scenario;
        };
        let approved = baselines.get(path).copied().unwrap_or([0; 16]);
        let mut h = blake3::Hasher::new();
        h.update(b"baseline\0").update(&scenario).update(&approved);
        super::trace_keys::first_16(h.finalize())
    }

    /// The cache file.
    pub(super) fn path(&self) -> &Utf8Path {
        &self.path
    }

    /// Takes the row cached under a stat key, with the entry's keys.
    pub(super) fn take_by_stat(&self, key: &RowKey) -> Option<Taken> {
        self.take(*self.file.by_stat.get(key)?)
    }

    /// Whether a row is cached under a stat key and not taken yet (nothing is taken).
    pub(super) fn has_stat(&self, key: &RowKey) -> bool {
        (self.file.by_stat.get(key))
            .is_some_and(|&at| !self.file.slots[at].taken.load(Ordering::Relaxed))
    }

    /// Takes the row cached under a content key, with the entry's keys.
    pub(super) fn take_by_content(&self, key: &RowKey) -> Option<Taken> {
        self.take(*self.file.by_content.get(key)?)
    }

    fn take(&self, at: usize) -> Option<Taken> {
        let slot = &self.file.slots[at];
        if slot.taken.swap(true, Ordering::Relaxed) {
            return None;
        }
        Some(Taken {
            row: self.file.row(slot),
            keys: slot.keys,
            depends: slot.depends,
        })
    }

    /// Puts back an entry taken for a trace this run then left out (filters, partition), so a
    /// filtered run keeps it.
    pub(super) fn put_back(&self, keys: &Keys) {
        if let Some(&at) = self.file.by_content.get(&keys.content) {
            self.file.slots[at].taken.store(false, Ordering::Relaxed);
        }
    }

    /// Writes the cache for this run's rows (`rows` gives the `(keys, dependency key, encoded
    /// row)` of each, rows with drift already left out, each time it is called; `hits` of them
    /// came from current entries). Of the entries this run did not take, those `keep` says of
    /// (by their row) are kept for a later run: rows of traces outside this run's paths or
    /// filters. The others are dropped. Nothing is written when the file would not change; the
    /// rows are never gathered in a list.
    pub(super) fn save<'r, I>(
        &self,
        rows: impl Fn() -> I,
        hits: usize,
        keep: &(dyn Fn(&RowBytes) -> bool + Sync),
    ) -> std::io::Result<()>
    where
        I: Iterator<Item = (Keys, RowKey, &'r RowBytes)>,
    {
        use rayon::prelude::*;
        // Which untaken entries stay, decided once (a row's head is read for it).
        let kept: Vec<bool> = (self.file.slots.par_iter())
            .map(|slot| !slot.taken.load(Ordering::Relaxed) && keep(&self.file.row(slot)))
            .collect();
        let unused_slots = || {
            (self.file.slots.iter().zip(&kept))
                .filter(|(_, kept)| **kept)
                .map(|(slot, _)| slot)
        };
        let same_context = self.file.context == self.context;
        if same_context
            && hits == rows().count()
            && hits + unused_slots().count() == self.file.slots.len()
        {
            return Ok(());
        }
        let unused: Vec<(Keys, RowKey, RowBytes)> = unused_slots()
            .map(|slot| (slot.keys, slot.depends, self.file.row(slot)))
            .collect();
        // Each entry, framed: this run's rows, then the ones kept.
        let each = |f: &mut EntrySink| {
            let mut emit = |keys: Keys, depends: RowKey, row: &RowBytes| {
                let row = row.load();
                f(&frame(&keys, &depends, &row)?, &row)
            };
            for (keys, depends, row) in rows() {
                emit(keys, depends, row)?;
            }
            for (keys, depends, row) in &unused {
                emit(*keys, *depends, row)?;
            }
            std::io::Result::Ok(())
        };
        // Two passes over the rows, one to hash them and one to write them: the file is never
        // built in memory. (Rows held in a file are read in each; should a read fail between
        // the two, the hash no longer matches and the next run ignores the file.)
        let mut hasher = EntryHasher::new(&self.key, &self.context);
        each(&mut |frame, row| {
            hasher.update(frame);
            hasher.update(row);
            Ok(())
        })?;
        let mut header = serde_json::to_vec(&Header {
            format: FORMAT.into(),
            version: VERSION,
            context: self.context.clone(),
            mac: hasher.finalize().to_hex().to_string(),
        })?;
        header.push(b'\n');
        // A cache needs no fsync: a torn file fails its hash and is rebuilt.
        write_streaming_creating_dirs(&self.path, false, &mut |out| {
            out.write_all(&header)?;
            each(&mut |frame, row| {
                out.write_all(frame)?;
                out.write_all(row)
            })
        })?;
        // The files of earlier cache versions can never be read again: they only take space.
        if let Some(dir) = self.path.parent() {
            for version in 1..VERSION {
                let _ = std::fs::remove_file(dir.join(file_name(version)));
            }
        }
        Ok(())
    }
}

/// What receives each cache entry as it is written: its frame, then its row.
type EntrySink<'a> = dyn FnMut(&[u8; FRAME], &[u8]) -> std::io::Result<()> + 'a;

/// An entry's frame: the stat key (zeros when there is none, never looked up), the content key,
/// the dependency key and the row's length.
fn frame(keys: &Keys, depends: &RowKey, row: &[u8]) -> std::io::Result<[u8; FRAME]> {
    let len = u32::try_from(row.len()).map_err(std::io::Error::other)?;
    let mut frame = [0; FRAME];
    frame[..16].copy_from_slice(&keys.stat.unwrap_or([0; 16]));
    frame[16..32].copy_from_slice(&keys.content);
    frame[32..48].copy_from_slice(depends);
    frame[48..].copy_from_slice(&len.to_le_bytes());
    Ok(frame)
}

/// The keys, dependency key and row length a frame holds ([`frame`] read back).
pub(super) fn unframe(frame: &[u8; FRAME]) -> (Keys, RowKey, u32) {
    let key = |at: usize| -> RowKey { frame[at..at + 16].try_into().expect("16 bytes") };
    let (stat, content, depends) = (key(0), key(16), key(32));
    let len = u32::from_le_bytes(frame[48..].try_into().expect("4 bytes"));
    let keys = Keys {
        stat: (stat != [0; 16]).then_some(stat),
        content,
    };
    (keys, depends, len)
}

/// Fingerprints everything besides a trace that its row depends on.
pub(super) fn context_fingerprint(parts: &[&[u8]]) -> String {
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
#[path = "cache_tests.rs"]
mod tests;
