//! The keys a trace's cached row is found by ([`super::cache`]): its stat key (path and stat
//! fingerprint; for a remote object, its listing), read without opening the file, and its content
//! key (path and stored bytes).

use std::sync::Arc;

use camino::Utf8Path;

use super::cache::RowKey;

/// The stat key of a trace file, or `None` when it cannot be had (then only the content key is
/// used): from its stamp `taken` before judging, else from a `stat` now. The path is taken as
/// given, less a leading `./` ([`key_path`]): the working directory, which decides how it is
/// shown, is part of the cache's context.
pub(super) fn stat_key(path: &Utf8Path, taken: Option<&[u8; 56]>) -> Option<RowKey> {
    if cfg!(not(unix)) {
        return None;
    }
    let now;
    let stamp = match taken {
        Some(s) => s,
        None => {
            now = stamp(&std::fs::metadata(path).ok()?);
            &now
        }
    };
    let mut h = blake3::Hasher::new();
    h.update(key_path(path).as_bytes());
    h.update(&[0]);
    h.update(stamp);
    Some(first_16(h.finalize()))
}

/// The stat key of a remote object: its [`crate::remote::Remote::identity`] (URL, size, ETag,
/// version), which a fresh runner's listing gives again without reading the object.
pub(super) fn identity_key(identity: &[u8]) -> RowKey {
    let mut h = blake3::Hasher::new();
    h.update(b"remote\0");
    h.update(identity);
    first_16(h.finalize())
}

/// A file's stat fingerprint: size, modification and change times in nanoseconds, inode and
/// device, little-endian. Any write changes the change time. (Off Unix only size and
/// modification time, which an edit need not change: there it keys nothing but the state of
/// the approved baselines.)
pub(crate) fn stamp(meta: &std::fs::Metadata) -> [u8; 56] {
    #[cfg(unix)]
    let numbers = {
        use std::os::unix::fs::MetadataExt;
        [
            meta.len(),
            meta.mtime() as u64,
            meta.mtime_nsec() as u64,
            meta.ctime() as u64,
            meta.ctime_nsec() as u64,
            meta.ino(),
            meta.dev(),
        ]
    };
    #[cfg(not(unix))]
    let numbers = {
        let modified = meta.modified().ok();
        let since = modified.and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
        let since = since.unwrap_or_default();
        [
            meta.len(),
            since.as_secs(),
            u64::from(since.subsec_nanos()),
            0,
            0,
            0,
            0,
        ]
    };
    let mut stamp = [0; 56];
    for (n, at) in numbers.iter().zip(stamp.chunks_exact_mut(8)) {
        at.copy_from_slice(&n.to_le_bytes());
    }
    stamp
}

/// The content key of a trace file from its stored bytes (compressed or not).
pub(super) fn content_key(path: &Utf8Path, stored: &[u8]) -> RowKey {
    // The stored bytes come first, so that BLAKE3 takes them from offset 0 in whole 1 KiB
    // chunks, several at a time. Behind the path, their first chunk was compressed a block at a
    // time; with the entries' hash (see `EntryHasher`) that was a quarter of the CPU of a run
    // that finds every row by content. The path's length, last, keeps the split between bytes
    // and path unambiguous.
    let path = key_path(path).as_bytes();
    let mut h = blake3::Hasher::new();
    h.update(stored);
    h.update(path);
    h.update(&(path.len() as u64).to_le_bytes());
    first_16(h.finalize())
}

/// A path as the keys take it: as it is shown ([`crate::paths::relative_to_cwd`], the part of
/// [`crate::paths::display_path`] that borrows): relative to the working directory (which is part
/// of the cache's context) and less any leading `./`, so that `check .`, `check DIR` and `check
/// $PWD/DIR` key the traces under `DIR` alike (all show them as `DIR/…`). Never allocates.
pub(crate) fn key_path(path: &Utf8Path) -> &str {
    crate::paths::relative_to_cwd(path)
}

/// The first 16 bytes of a BLAKE3 hash: a key.
pub(super) fn first_16(hash: blake3::Hash) -> RowKey {
    let mut key = [0; 16];
    key.copy_from_slice(&hash.as_bytes()[..16]);
    key
}

/// Whether a cached row's trace lies under one of the `searched` paths (as shown,
/// [`crate::paths::display_path`], once per run), so that a run over them would have found it:
/// the row's path is shown as discovered under the path it was searched from, relative to the
/// working directory. A row whose head does not decode or names no path counts as found (it is
/// dropped); with a remote path searched, every row does (remote objects are not kept past the
/// runs that list them).
pub(super) fn searched_holds(searched: &[String], row: &crate::report::store::RowBytes) -> bool {
    let loaded = row.head();
    let Some(path) = (crate::report::store::decode_head(&loaded).ok()).and_then(|h| h.path) else {
        return true;
    };
    searched.iter().any(|root| {
        if root.contains("://") {
            return true;
        }
        match root.trim_end_matches('/') {
            "" if root.starts_with('/') => true,
            "" | "." => !(path.starts_with('/') || path == ".." || path.starts_with("../")),
            // A directory holds what lies under it; a trace file given as a path, itself.
            root => path
                .strip_prefix(root)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/')),
        }
    })
}

/// Keys are BLAKE3 output, uniformly random already: their first 8 bytes are the hash.
#[derive(Default, Clone, Copy)]
pub(super) struct KeyHasher;

impl std::hash::BuildHasher for KeyHasher {
    type Hasher = FirstBytes;
    fn build_hasher(&self) -> FirstBytes {
        FirstBytes(0)
    }
}

pub(super) struct FirstBytes(u64);

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

/// A file's stamp: its size, modification and change times in nanoseconds, inode and device,
/// little-endian (56 bytes). What the result cache keys a trace by without reading it, and what
/// [`crate::run_record`] knows each file by.
pub type Stamp = [u8; 56];

/// The stamps of a suite's trace files, in the order they are judged (`None`: the file could
/// not be `stat`ed).
#[derive(Clone, Default)]
pub struct Stamps(Arc<[Option<Stamp>]>);

impl Stamps {
    pub(crate) fn new(stamps: Arc<[Option<Stamp>]>) -> Stamps {
        Stamps(stamps)
    }

    /// The stamp of the `i`-th trace file, if it was taken.
    pub(crate) fn get(&self, i: usize) -> Option<&Stamp> {
        self.0.get(i).and_then(Option::as_ref)
    }

    /// How many trace files they cover.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether they cover no trace file.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for Stamps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Stamps({} files)", self.0.len())
    }
}
