//! Traces in object storage (`s3://bucket/prefix`, `gs://…`, `az://…`, `https://…`): listed once
//! (streamed, page by page), read with bounded concurrency and the size limits of files, and
//! named by their URL in reports and messages. Scenarios and baselines stay in the repository;
//! only traces may be remote.
//!
//! Credentials come from the environment as each cloud's own tools take them (`AWS_*`,
//! `GOOGLE_*`, `AZURE_*`); they are never printed or stored, and messages have their values
//! taken out. Built with the `remote` feature (part of the command-line tool); without it a
//! remote path is a clear error, never a path that does not exist.

use camino::{Utf8Path, Utf8PathBuf};

use crate::trace::{Limits, TraceError, TraceFile};

#[cfg(feature = "remote")]
mod store;

/// Whether `path` names a place in object storage rather than a local path.
pub fn is_remote(path: &str) -> bool {
    scheme_of(path).is_some()
}

/// The store scheme `path` starts with (lowercased), if any.
fn scheme_of(path: &str) -> Option<&'static str> {
    let head = path.get(..8).unwrap_or(path).to_ascii_lowercase();
    ["s3://", "gs://", "az://", "https://", "http://"]
        .into_iter()
        .find(|s| head.starts_with(s))
}

/// Why a build without the `remote` feature refuses a remote path.
#[cfg(not(feature = "remote"))]
const NOT_BUILT: &str = "this tracereplay was built without the `remote` feature; rebuild it with `--features remote` to read object storage";

/// What a build without the `remote` feature says when given `urls`.
#[cfg(not(feature = "remote"))]
fn not_built(urls: &[Utf8PathBuf]) -> RemoteError {
    RemoteError::Unsupported {
        url: urls.first().map(|u| u.to_string()).unwrap_or_default(),
        why: NOT_BUILT.into(),
    }
}

/// How remote paths are read.
#[derive(Debug, Clone, Default)]
pub struct RemoteOptions {
    /// Read without credentials (a public bucket): requests are not signed.
    pub anonymous: bool,
    /// Objects read at once (`None`: [`DEFAULT_CONCURRENCY`]).
    pub concurrency: Option<usize>,
}

/// Objects read at once by default: enough to hide a store's latency (tens of milliseconds a
/// request) behind the judging of what was read before.
pub const DEFAULT_CONCURRENCY: usize = 32;

/// A remote path that cannot be listed.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The URL is not one this build can read.
    #[error("`{url}`: {why}")]
    Unsupported {
        /// The URL as given.
        url: String,
        /// Why not.
        why: String,
    },
    /// The store refused or failed the listing.
    #[error("cannot list `{url}`: {message}")]
    List {
        /// The URL as given.
        url: String,
        /// The store's message, credentials taken out.
        message: String,
    },
}

/// The traces found under remote paths, and how to read them.
pub struct Remote {
    #[cfg(feature = "remote")]
    inner: store::Stores,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Remote(..)")
    }
}

impl Remote {
    /// Lists every trace (`*.trace.ndjson.zst`, `*.trace.ndjson`) under `urls` (a prefix, or one
    /// object), skipping keys with a hidden (`.`) segment as discovery skips hidden directories.
    /// Returns the traces' URLs in order (by URL).
    pub fn list(
        urls: &[Utf8PathBuf],
        options: &RemoteOptions,
    ) -> Result<(Remote, Vec<Utf8PathBuf>), RemoteError> {
        #[cfg(feature = "remote")]
        {
            let (inner, found) = store::Stores::list(urls, options, store::trace_named)?;
            Ok((Remote { inner }, found))
        }
        #[cfg(not(feature = "remote"))]
        {
            let _ = options;
            Err(not_built(urls))
        }
    }

    /// Whether `path` is one of the objects listed.
    pub fn holds(&self, path: &Utf8Path) -> bool {
        #[cfg(feature = "remote")]
        return self.inner.holds(path);
        #[cfg(not(feature = "remote"))]
        {
            let _ = path;
            false
        }
    }

    /// The listed object's size in bytes (as stored).
    pub fn size(&self, path: &Utf8Path) -> Option<u64> {
        #[cfg(feature = "remote")]
        return self.inner.size(path);
        #[cfg(not(feature = "remote"))]
        {
            let _ = path;
            None
        }
    }

    /// What identifies the listed object's current content without reading it: its URL, size,
    /// ETag and version (or its modification time where the store gives neither). The result
    /// cache keys remote traces by it, so a runner with a restored cache reads nothing it has
    /// judged.
    pub fn identity(&self, path: &Utf8Path) -> Option<Vec<u8>> {
        #[cfg(feature = "remote")]
        return self.inner.identity(path);
        #[cfg(not(feature = "remote"))]
        {
            let _ = path;
            None
        }
    }

    /// Reads `paths` (listed objects) ahead, [`RemoteOptions::concurrency`] at a time, for
    /// [`Remote::read`] to take; returns once they are read.
    pub fn prefetch(&self, paths: &[&Utf8Path], limits: Limits) {
        #[cfg(feature = "remote")]
        self.inner.prefetch(paths, limits);
        #[cfg(not(feature = "remote"))]
        let _ = (paths, limits);
    }

    /// The stored bytes of a listed object (taken from what was read ahead, else read now),
    /// within `limits`: an object larger than a file may be is refused before it is read.
    pub fn read(&self, path: &Utf8Path, limits: Limits) -> Result<Vec<u8>, TraceError> {
        #[cfg(feature = "remote")]
        return self.inner.read(path, store::Cap::trace(path, limits));
        #[cfg(not(feature = "remote"))]
        {
            let _ = limits;
            Err(TraceError::Unreadable {
                path: path.to_owned(),
                detail: "a remote trace, and this build reads no object storage".into(),
            })
        }
    }
}

impl Remote {
    /// Lists the objects of a collector's export layout under `urls` (see
    /// [`crate::ingest::collector::export_kind`]: `*.json`, `*.jsonl`, `*.binpb`, `*.pb`, each
    /// also `.gz`), skipping hidden keys as [`Remote::list`] does; in URL order.
    pub fn list_exports(
        urls: &[Utf8PathBuf],
        options: &RemoteOptions,
    ) -> Result<(Remote, Vec<Utf8PathBuf>), RemoteError> {
        #[cfg(feature = "remote")]
        {
            let named: store::Named = |name| crate::ingest::collector::export_kind(name).is_some();
            let (inner, found) = store::Stores::list(urls, options, named)?;
            Ok((Remote { inner }, found))
        }
        #[cfg(not(feature = "remote"))]
        {
            let _ = options;
            Err(not_built(urls))
        }
    }

    /// Reads the listed ones of `paths` ([`RemoteOptions::concurrency`] at a time), each
    /// within `max_bytes` as stored; in the order of `paths`.
    pub fn read_all(
        &self,
        paths: &[&Utf8Path],
        max_bytes: u64,
    ) -> Vec<(Utf8PathBuf, Result<Vec<u8>, TraceError>)> {
        #[cfg(feature = "remote")]
        {
            let cap = |_: &Utf8Path| store::Cap {
                bytes: max_bytes,
                what: "the object",
                flag: "",
            };
            self.inner.read_many(paths, &cap)
        }
        #[cfg(not(feature = "remote"))]
        {
            let _ = (paths, max_bytes);
            Vec::new()
        }
    }
}

/// The largest JSON report read from a store (`merge`), in bytes.
pub const MAX_REPORT_BYTES: u64 = 4 << 30;

/// The JSON reports (`*.json`) under each of `urls` (a prefix, or one object), in URL order,
/// each with its bytes: how `merge` reads shares kept in a bucket.
pub fn read_reports(
    urls: &[Utf8PathBuf],
    options: &RemoteOptions,
) -> Result<Vec<(Utf8PathBuf, Vec<u8>)>, RemoteError> {
    #[cfg(feature = "remote")]
    {
        let named: store::Named = |name| name.ends_with(".json");
        let (stores, found) = store::Stores::list(urls, options, named)?;
        let cap = store::Cap {
            bytes: MAX_REPORT_BYTES,
            what: "the report",
            flag: "",
        };
        (found.into_iter())
            .map(|url| {
                let bytes = stores.read(&url, cap).map_err(|e| RemoteError::List {
                    message: match e {
                        // No flag raises this limit.
                        TraceError::TooLarge { limit, .. } => {
                            format!("the report is over {limit} bytes; merge a local copy")
                        }
                        e => crate::common::error_chain(&e),
                    },
                    url: url.to_string(),
                })?;
                Ok((url, bytes))
            })
            .collect()
    }
    #[cfg(not(feature = "remote"))]
    {
        let _ = options;
        Err(not_built(urls))
    }
}

/// [`TraceFile::open_with`] wherever the trace is: through `remote` when it holds `path`, else
/// from disk.
pub fn open_with(
    remote: Option<&Remote>,
    path: &Utf8Path,
    limits: Limits,
    inspect: &mut dyn FnMut(&[u8]) -> bool,
) -> Result<Option<TraceFile>, TraceError> {
    match remote.filter(|r| r.holds(path)) {
        Some(r) => {
            let stored = r.read(path, limits)?;
            if inspect(&stored) {
                return Ok(None);
            }
            let compressed = path.as_str().ends_with(".zst");
            TraceFile::from_stored(path, &stored, compressed, limits).map(Some)
        }
        None => TraceFile::open_with(path, limits, inspect),
    }
}

/// [`TraceFile::open`] wherever the trace is (see [`open_with`]).
pub fn open(
    remote: Option<&Remote>,
    path: &Utf8Path,
    limits: Limits,
) -> Result<TraceFile, TraceError> {
    open_with(remote, path, limits, &mut |_| false)
        .map(|file| file.expect("an inspector that never stops reading gives a file"))
}

/// `message` with the values of the credential variables in the environment taken out, and the
/// query of every URL in it (where a shared-access signature travels) cut: what the store said,
/// safe to print.
pub fn without_secrets(message: &str) -> String {
    const SECRET_VARS: [&str; 9] = [
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_ACCESS_KEY_ID",
        "GOOGLE_SERVICE_ACCOUNT_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS_JSON",
        "AZURE_STORAGE_ACCOUNT_KEY",
        "AZURE_STORAGE_ACCESS_KEY",
        "AZURE_STORAGE_SAS_KEY",
        "AZURE_CLIENT_SECRET",
    ];
    let mut out = message.to_owned();
    for var in SECRET_VARS {
        if let Some(value) = std::env::var(var).ok().filter(|v| v.len() >= 4) {
            out = out.replace(&value, "[redacted]");
        }
    }
    // A URL's query: from `?` to the next space, quote or bracket.
    let mut cut = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(at) = rest.find("://") {
        let (before, url) = rest.split_at(at);
        cut.push_str(before);
        let end = url
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ')' | '>' | ']' | '`'))
            .unwrap_or(url.len());
        let (url, after) = url.split_at(end);
        match url.find('?') {
            Some(q) => {
                cut.push_str(&url[..q]);
                cut.push_str("?[query removed]");
            }
            None => cut.push_str(url),
        }
        rest = after;
    }
    cut.push_str(rest);
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_paths_are_told_from_local_ones() {
        for p in [
            "s3://b/p",
            "S3://b",
            "gs://b/x",
            "az://c/p",
            "https://h/p",
            "http://127.0.0.1:9/b",
        ] {
            assert!(is_remote(p), "{p}");
        }
        for p in [
            "traces",
            "./s3:/x",
            "s3:/x",
            "/abs/path",
            "C:\\x",
            "ftp://h/x",
        ] {
            assert!(!is_remote(p), "{p}");
        }
    }

    #[test]
    fn messages_lose_url_queries() {
        let m = "GET https://acct.blob.core.windows.net/c/k?sv=2024&sig=SECRET failed (403)";
        let clean = without_secrets(m);
        assert_eq!(
            clean,
            "GET https://acct.blob.core.windows.net/c/k?[query removed] failed (403)"
        );
        assert!(!clean.contains("SECRET"));
        assert_eq!(without_secrets("no url here"), "no url here");
    }
}
