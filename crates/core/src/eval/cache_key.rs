//! The secret key the result cache is authenticated with — from `TRACEREPLAY_CACHE_KEY` (a CI
//! secret), else a random key kept in the user's own cache directory, never beside the cache —
//! and the MAC made with it.

/// The environment variable whose value is the cache key's material (a CI secret).
pub const CACHE_KEY_ENV: &str = "TRACEREPLAY_CACHE_KEY";

/// The secret key the cache is authenticated with (see the module documentation).
#[derive(Clone)]
pub(crate) struct CacheKey(pub(super) [u8; 32]);

impl std::fmt::Debug for CacheKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CacheKey(..)")
    }
}

impl CacheKey {
    /// The key derived from secret material.
    pub(crate) fn from_material(material: &[u8]) -> CacheKey {
        CacheKey(blake3::derive_key(
            "tracereplay 2026-12 result-cache mac v1",
            material,
        ))
    }

    /// The key of this process: from `TRACEREPLAY_CACHE_KEY` when set, else from the user's key
    /// file (made on first use); `None` when neither can be had. Resolved once per process.
    /// A key for `context` derived from this one (another file kept under the user's key).
    pub(crate) fn derive(&self, context: &str) -> [u8; 32] {
        blake3::derive_key(context, &self.0)
    }

    pub(crate) fn resolve() -> Option<CacheKey> {
        static KEY: std::sync::OnceLock<Option<CacheKey>> = std::sync::OnceLock::new();
        KEY.get_or_init(|| match std::env::var_os(CACHE_KEY_ENV) {
            Some(v) if !v.is_empty() => Some(CacheKey::from_material(v.as_encoded_bytes())),
            _ => user_key_file().and_then(|p| read_or_make_key_file(&p)),
        })
        .clone()
    }
}

/// Where the user's cache key lives: `$XDG_CACHE_HOME/tracereplay/cache-key`, else
/// `$HOME/.cache/tracereplay/cache-key` (`%LOCALAPPDATA%\tracereplay\cache-key` on Windows).
fn user_key_file() -> Option<std::path::PathBuf> {
    let var = |name| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
    };
    let base = var("XDG_CACHE_HOME")
        .or_else(|| var("HOME").map(|h| h.join(".cache")))
        .or_else(|| var("LOCALAPPDATA"))?;
    Some(base.join("tracereplay").join("cache-key"))
}

/// The key in `path`, made (32 random bytes as hex, mode 0600) when there is none yet. Only a
/// regular file of 64 hex digits is taken.
fn read_or_make_key_file(path: &std::path::Path) -> Option<CacheKey> {
    use std::io::Write;
    let read = || -> Option<CacheKey> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        if !meta.is_file() || meta.len() > 1024 {
            return None;
        }
        let text = std::fs::read_to_string(path).ok()?;
        let hex = text.trim();
        (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| CacheKey::from_material(hex.as_bytes()))
    };
    if let Some(key) = read() {
        return Some(key);
    }
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).ok()?;
    let hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
    std::fs::create_dir_all(path.parent()?).ok()?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    // Another process may have made it meanwhile: then its key is the one.
    if let Ok(mut f) = options.open(path) {
        f.write_all(hex.as_bytes()).ok()?;
        f.sync_all().ok()?;
    }
    read()
}

/// The cache's MAC: keyed BLAKE3 of the context (length first) and then the entries, which
/// arrive a frame and a row (~650 bytes) at a time. BLAKE3 hashes several 1 KiB chunks at once
/// only when it is handed them together, so the pieces are gathered and passed on in whole
/// chunks, 64 KiB at a time: about 4 times faster than updating with each piece (3.8 ms against
/// 15 ms for the small corpus's 13 MB of entries). The MAC is the same either way.
pub(super) struct EntryHasher {
    hasher: blake3::Hasher,
    pending: Vec<u8>,
}

impl EntryHasher {
    /// A MAC under `key` over `context`, then the entries given to [`EntryHasher::update`].
    pub(super) fn new(key: &CacheKey, context: &str) -> Self {
        let mut hasher = blake3::Hasher::new_keyed(&key.0);
        hasher.update(&(context.len() as u64).to_le_bytes());
        hasher.update(context.as_bytes());
        EntryHasher {
            hasher,
            pending: Vec::with_capacity(Self::BATCH + 4096),
        }
    }

    const BATCH: usize = 64 << 10;
    const CHUNK: usize = 1024;

    pub(super) fn update(&mut self, mut bytes: &[u8]) {
        // A large piece with nothing pending (a cache file read whole) goes straight through,
        // in whole chunks, rather than being copied.
        if self.pending.is_empty() && bytes.len() >= Self::BATCH {
            let whole = bytes.len() / Self::CHUNK * Self::CHUNK;
            self.hasher.update(&bytes[..whole]);
            bytes = &bytes[whole..];
        }
        self.pending.extend_from_slice(bytes);
        if self.pending.len() >= Self::BATCH {
            let whole = self.pending.len() / Self::CHUNK * Self::CHUNK;
            self.hasher.update(&self.pending[..whole]);
            self.pending.drain(..whole);
        }
    }

    pub(super) fn finalize(mut self) -> blake3::Hash {
        self.hasher.update(&self.pending);
        self.pending.clear();
        self.hasher.finalize()
    }
}

/// Whether `mac` (hex, from a header) is the MAC `computed`, compared in constant time.
pub(super) fn mac_holds(mac: &str, computed: blake3::Hash) -> bool {
    blake3::Hash::from_hex(mac).is_ok_and(|m| m == computed)
}
