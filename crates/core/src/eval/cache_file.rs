//! The result cache's file as read ([`super::cache`] has its format and what it holds): checked
//! against its MAC, its entries framed and indexed by key, and its rows held in one buffer or
//! left in the file (with their heads, as far as the row budget holds them).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use camino::Utf8Path;
use serde::{Deserialize, Serialize};

use super::cache::{CacheKey, FORMAT, FRAME, Keys, RowKey, VERSION, file_name, unframe};
use super::cache_key::{EntryHasher, mac_holds};
use super::store::{self as rows, RowBytes, RowFile};
use super::trace_keys::KeyHasher;

/// The file's first line.
#[derive(Serialize, Deserialize)]
pub(super) struct Header {
    pub(super) format: String,
    pub(super) version: u32,
    pub(super) context: String,
    /// Keyed BLAKE3 of the context and everything after the header line ([`EntryHasher`]).
    pub(super) mac: String,
}

impl Header {
    /// The header line, if it is one of this format and version.
    fn read(line: &[u8]) -> Option<Header> {
        let header: Header = serde_json::from_slice(line).ok()?;
        (header.format == FORMAT && header.version == VERSION).then_some(header)
    }
}

/// Where each cached row lies in the file; each is taken (once) by the worker that needs it.
pub(super) struct Slot {
    pub(super) keys: Keys,
    /// The key of what the row was judged under besides the trace ([`super::cache::ResultCache::depends`]).
    pub(super) depends: RowKey,
    pub(super) range: std::ops::Range<usize>,
    /// Where the row's head lies in the file's heads, as offset and length (a streamed file's
    /// rows only, as far as the budget holds them; a length of 0: not held).
    pub(super) head: (u32, u32),
    pub(super) taken: AtomicBool,
}

/// Slots by key.
pub(super) type Index = HashMap<RowKey, usize, KeyHasher>;

/// Where the entries' rows are: the file read whole, or the file itself (which holds the rows'
/// heads, their leading fields, as far as the row budget holds them).
pub(super) enum Held {
    Memory(Arc<Vec<u8>>),
    File(Arc<RowFile>),
}

impl Default for Held {
    fn default() -> Held {
        Held::Memory(Arc::default())
    }
}

/// A cache file, read and checked against its own hash but not yet against a run's context,
/// so reading it can overlap discovery. Empty when there is none or it cannot be trusted.
#[derive(Default)]
pub(crate) struct CacheFile {
    pub(super) context: String,
    pub(super) held: Held,
    /// The entries, their rows' ranges being offsets in the file.
    pub(super) slots: Vec<Slot>,
    pub(super) by_stat: Index,
    pub(super) by_content: Index,
}

impl std::fmt::Debug for CacheFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CacheFile({} entries)", self.slots.len())
    }
}

/// A cache file larger than this is not read (1 GiB holds the rows of well over a million
/// traces); the cache is then rebuilt.
pub(super) const MAX_FILE: u64 = 1 << 30;

impl CacheFile {
    /// Reads the cache file under `dir`, whole if it is at most `read_whole` bytes (else
    /// streamed, keeping rows' heads up to that many bytes); empty unless its MAC verifies
    /// under `key`.
    /// Where the cache file under `dir` is.
    pub(crate) fn path_in(dir: &Utf8Path) -> camino::Utf8PathBuf {
        dir.join(file_name(VERSION))
    }

    pub(crate) fn read_with(dir: &Utf8Path, read_whole: u64, key: &CacheKey) -> CacheFile {
        // Only a regular file: a FIFO would block the open, a device never end.
        let path = CacheFile::path_in(dir);
        let Ok(mut file) = crate::fsutil::open_nonblocking(&path) else {
            return CacheFile::default();
        };
        if !file.metadata().is_ok_and(|m| m.is_file()) {
            return CacheFile::default();
        }
        let len = file.metadata().map_or(u64::MAX, |m| m.len());
        if len > MAX_FILE {
            return CacheFile::default();
        }
        let decoded = if len <= read_whole || cfg!(not(unix)) {
            let mut bytes = Vec::with_capacity(len as usize);
            std::io::Read::read_to_end(&mut file, &mut bytes)
                .ok()
                .and_then(|_| decode(bytes, key))
        } else {
            stream(file, len, read_whole, key).ok().flatten()
        };
        decoded.unwrap_or_default()
    }

    /// The context the file was saved with (empty when there is no file).
    pub(crate) fn context(&self) -> &str {
        &self.context
    }

    pub(super) fn row(&self, slot: &Slot) -> RowBytes {
        match &self.held {
            Held::Memory(buf) => RowBytes::shared(buf.clone(), slot.range.clone()),
            Held::File(file) => {
                // Ranges were checked against the file's length when it was framed, and
                // heads against their buffer when it was filled.
                let (at, len) = (slot.range.start as u64, slot.range.len() as u32);
                match slot.head {
                    (_, 0) => RowBytes::in_file(file.clone(), at, len),
                    head => RowBytes::in_file_headed(file.clone(), at, len, head),
                }
            }
        }
    }
}

fn decode(bytes: Vec<u8>, key: &CacheKey) -> Option<CacheFile> {
    let nl = memchr::memchr(b'\n', &bytes)?;
    let header = Header::read(&bytes[..nl])?;
    let mut hasher = EntryHasher::new(key, &header.context);
    hasher.update(&bytes[nl + 1..]);
    if !mac_holds(&header.mac, hasher.finalize()) {
        return None;
    }
    // Frame the entries; the rows stay in the one buffer the file was read into. The hash
    // vouches for the bytes: they are rows this tool encoded, so they are not decoded here
    // (should one still not decode, it is judged afresh).
    let mut slots = Vec::new();
    let mut at = nl + 1;
    while at < bytes.len() {
        let (keys, depends, len) = unframe(bytes_at(&bytes, at, FRAME)?.try_into().ok()?);
        let range = at + FRAME..(at + FRAME).checked_add(len as usize)?;
        bytes_at(&bytes, range.start, range.len())?;
        at = range.end;
        let taken = AtomicBool::new(false);
        slots.push(Slot {
            keys,
            depends,
            range,
            head: (0, 0),
            taken,
        });
    }
    Some(CacheFile::indexed(
        header.context,
        Held::Memory(Arc::new(bytes)),
        slots,
    ))
}

/// Reads a cache file too large to hold: its header, then its entries once, in order, hashing
/// them and keeping each one's keys and place, and a copy of each row's head (the leading
/// fields every recalled row is read for: its scenario, baseline and sort key) while those
/// copies fit in `heads_budget` bytes, so that recalling rows reads no file. `Ok(None)` when it
/// cannot be trusted.
fn stream(
    file: std::fs::File,
    len: u64,
    heads_budget: u64,
    key: &CacheKey,
) -> std::io::Result<Option<CacheFile>> {
    use std::io::{BufRead, BufReader, Read};
    // The header holds the approved baselines' record (a line of about 100 bytes each).
    const HEADER_MAX: u64 = 256 << 20;
    let mut reader = BufReader::with_capacity(1 << 20, &file);
    let mut line = Vec::new();
    (&mut reader)
        .take(HEADER_MAX)
        .read_until(b'\n', &mut line)?;
    if line.pop() != Some(b'\n') {
        return Ok(None);
    }
    let Some(header) = Header::read(&line) else {
        return Ok(None);
    };
    let mut hasher = EntryHasher::new(key, &header.context);
    let mut slots = Vec::new();
    let mut at = line.len() as u64 + 1;
    let mut row = Vec::new();
    let mut heads = Vec::new();
    while at < len {
        let mut frame = [0; FRAME];
        if reader.read_exact(&mut frame).is_err() {
            return Ok(None);
        }
        let (keys, depends, row_len) = unframe(&frame);
        if at + FRAME as u64 + u64::from(row_len) > len {
            return Ok(None);
        }
        row.resize(row_len as usize, 0);
        if reader.read_exact(&mut row).is_err() {
            return Ok(None);
        }
        hasher.update(&frame);
        hasher.update(&row);
        let start = usize::try_from(at + FRAME as u64).map_err(std::io::Error::other)?;
        // A head that does not decode is not kept: the row is read back, and judged afresh.
        // (A file of at most `MAX_FILE` bytes keeps offsets and lengths within `u32`.)
        let head = (rows::head_len(&row))
            .filter(|n| (heads.len() + n) as u64 <= heads_budget.min(MAX_FILE))
            .map_or((0, 0), |n| {
                heads.extend_from_slice(&row[..n]);
                ((heads.len() - n) as u32, n as u32)
            });
        slots.push(Slot {
            keys,
            depends,
            range: start..start + row_len as usize,
            head,
            taken: AtomicBool::new(false),
        });
        at += FRAME as u64 + u64::from(row_len);
    }
    if at != len || !mac_holds(&header.mac, hasher.finalize()) {
        return Ok(None);
    }
    drop(reader);
    let file = Arc::new(RowFile::with_heads(file, len, heads));
    Ok(Some(CacheFile::indexed(
        header.context,
        Held::File(file),
        slots,
    )))
}

impl CacheFile {
    fn indexed(context: String, held: Held, slots: Vec<Slot>) -> CacheFile {
        let mut by_stat = Index::with_capacity_and_hasher(slots.len(), KeyHasher);
        let mut by_content = Index::with_capacity_and_hasher(slots.len(), KeyHasher);
        for (i, slot) in slots.iter().enumerate() {
            if let Some(stat) = slot.keys.stat {
                by_stat.insert(stat, i);
            }
            by_content.insert(slot.keys.content, i);
        }
        CacheFile {
            context,
            held,
            slots,
            by_stat,
            by_content,
        }
    }
}

fn bytes_at(bytes: &[u8], at: usize, len: usize) -> Option<&[u8]> {
    bytes.get(at..at.checked_add(len)?)
}

/// The fuzz target's view of the cache reader: `bytes` as a whole cache file, read with a fixed
/// key (so almost always refused by its MAC), and `bytes` as the entries of a file whose MAC
/// holds, so the framing and the rows behind it are exercised too. Every row the reader frames is
/// decoded; a row that does not decode is judged afresh by a real run, so only a panic is a
/// finding.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn fuzz_read(bytes: &[u8]) -> usize {
    let key = CacheKey::from_material(b"fuzz");
    let whole = decode(bytes.to_vec(), &key);
    let context = "fuzz-context";
    let mut hasher = EntryHasher::new(&key, context);
    hasher.update(bytes);
    let header = Header {
        format: FORMAT.to_owned(),
        version: VERSION,
        context: context.to_owned(),
        mac: hasher.finalize().to_hex().to_string(),
    };
    let mut file = serde_json::to_vec(&header).expect("a header serialises");
    file.push(b'\n');
    file.extend_from_slice(bytes);
    let authentic = decode(file, &key);
    let mut decoded = 0;
    for cache in whole.iter().chain(authentic.iter()) {
        for slot in &cache.slots {
            let row = cache.row(slot);
            let bytes = row.load();
            if rows::decode_head(&bytes).is_ok() {
                decoded += 1;
            }
            if let Ok(row) = rows::decode(&bytes) {
                // What decodes re-encodes to bytes that decode to the same row (compared
                // encoded: a float field may hold NaN).
                let again = rows::encode(&row);
                let back = rows::decode(&again).expect("an encoded row decodes");
                assert_eq!(rows::encode(&back), again);
            }
        }
    }
    decoded
}
