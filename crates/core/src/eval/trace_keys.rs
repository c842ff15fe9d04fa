//! The keys a trace's cached row is found by ([`super::cache`]): its stat key (path and stat
//! fingerprint; for a remote object, its listing), read without opening the file, and its content
//! key (path and stored bytes).

use camino::Utf8Path;

use super::cache::RowKey;

/// The stat key of a trace file, or `None` when it cannot be had (then only the content key is
/// used). The path is taken as given: the working directory, which decides how it is shown, is
/// part of the cache's context.
pub(super) fn stat_key(path: &Utf8Path) -> Option<RowKey> {
    if cfg!(not(unix)) {
        return None;
    }
    let meta = std::fs::metadata(path).ok()?;
    let mut h = blake3::Hasher::new();
    h.update(path.as_str().as_bytes());
    h.update(&[0]);
    h.update(&stamp(&meta));
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
    let path = path.as_str().as_bytes();
    let mut h = blake3::Hasher::new();
    h.update(stored);
    h.update(path);
    h.update(&(path.len() as u64).to_le_bytes());
    first_16(h.finalize())
}

fn first_16(hash: blake3::Hash) -> RowKey {
    let mut key = [0; 16];
    key.copy_from_slice(&hash.as_bytes()[..16]);
    key
}
