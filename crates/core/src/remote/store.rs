//! The `object_store` side of [`super::Remote`]: one store per bucket named, a small tokio
//! runtime of its own, and the objects listed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use camino::{Utf8Path, Utf8PathBuf};
use futures::StreamExt;
use object_store::path::Path as Key;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt, ObjectStoreScheme};

use super::{DEFAULT_CONCURRENCY, RemoteError, RemoteOptions, without_secrets};
use crate::trace::{Limits, TraceError, is_trace_path};

/// One object listed: where it is, and what its listing said of it.
struct Object {
    store: Arc<dyn ObjectStore>,
    key: Key,
    size: u64,
    e_tag: Option<String>,
    version: Option<String>,
    modified: i64,
}

/// How large an object may be, and what to say when it is larger.
#[derive(Clone, Copy)]
pub(super) struct Cap {
    pub(super) bytes: u64,
    pub(super) what: &'static str,
    pub(super) flag: &'static str,
}

impl Cap {
    /// A stored trace's: what a file of it may be.
    pub(super) fn trace(path: &Utf8Path, limits: Limits) -> Cap {
        Cap {
            bytes: limits.stored_cap(path.as_str().ends_with(".zst")),
            what: "the stored trace",
            flag: "--max-trace-bytes",
        }
    }
}

/// Every object listed, and what was read ahead of them.
pub(super) struct Stores {
    runtime: tokio::runtime::Runtime,
    objects: HashMap<Utf8PathBuf, Object>,
    /// Stored bytes read ahead ([`Stores::prefetch`]), each taken once.
    ahead: Mutex<HashMap<Utf8PathBuf, Result<Vec<u8>, TraceError>>>,
    concurrency: usize,
}

/// The store for `url`, and the key (prefix or object) it names under it. Credentials are read
/// from the environment, as each cloud's tools read them.
fn open_store(
    url: &str,
    options: &RemoteOptions,
) -> Result<(Arc<dyn ObjectStore>, Key, String), RemoteError> {
    let unsupported = |why: String| RemoteError::Unsupported {
        url: url.to_owned(),
        why: without_secrets(&why),
    };
    let parsed = url::Url::parse(url).map_err(|e| unsupported(format!("not a URL: {e}")))?;
    let (scheme, key) =
        ObjectStoreScheme::parse(&parsed).map_err(|e| unsupported(e.to_string()))?;
    // `az://CONTAINER/PREFIX`: the builder takes the host for the container, so the key is the
    // whole path (the scheme parser would drop its first segment, as if it named the container).
    let key = match parsed.scheme() {
        "az" => Key::from_url_path(parsed.path()).map_err(|e| unsupported(e.to_string()))?,
        _ => key,
    };
    let host = parsed.host_str().unwrap_or_default();
    let loopback = matches!(host, "127.0.0.1" | "localhost" | "[::1]" | "::1");
    let built: Result<Arc<dyn ObjectStore>, object_store::Error> = match scheme {
        ObjectStoreScheme::AmazonS3 => object_store::aws::AmazonS3Builder::from_env()
            .with_url(url)
            .with_skip_signature(options.anonymous)
            .build()
            .map(|s| Arc::new(s) as _),
        ObjectStoreScheme::GoogleCloudStorage => {
            object_store::gcp::GoogleCloudStorageBuilder::from_env()
                .with_url(url)
                .with_skip_signature(options.anonymous)
                .build()
                .map(|s| Arc::new(s) as _)
        }
        ObjectStoreScheme::MicrosoftAzure => object_store::azure::MicrosoftAzureBuilder::from_env()
            .with_url(url)
            .with_skip_signature(options.anonymous)
            .build()
            .map(|s| Arc::new(s) as _),
        ObjectStoreScheme::Http if parsed.scheme() == "http" && !loopback => {
            return Err(unsupported(
                "plain HTTP is read only from a loopback address; use https://".into(),
            ));
        }
        ObjectStoreScheme::Http => {
            let origin = &parsed[..url::Position::BeforePath];
            let client = object_store::ClientOptions::new().with_allow_http(loopback);
            object_store::http::HttpBuilder::new()
                .with_url(origin)
                .with_client_options(client)
                .build()
                .map(|s| Arc::new(s) as _)
        }
        _ => return Err(unsupported("not an object store URL".into())),
    };
    let store = built.map_err(|e| unsupported(e.to_string()))?;
    // What an object's URL starts with: the bucket (or origin), then its key.
    let base = match scheme {
        ObjectStoreScheme::Http => parsed[..url::Position::BeforePath].to_owned(),
        _ => {
            let full = url.trim_end_matches('/');
            let key_part = key.as_ref();
            match full.strip_suffix(key_part) {
                Some(b) if !key_part.is_empty() => b.trim_end_matches('/').to_owned(),
                _ => full.to_owned(),
            }
        }
    };
    Ok((store, key, base))
}

/// Which objects a listing takes: those whose name `named` accepts (a trace file's, say), with
/// no hidden (`.`) segment on the way.
pub(super) type Named = fn(&str) -> bool;

fn wanted(key: &Key, named: Named) -> bool {
    named(key.filename().unwrap_or("")) && !key.parts().any(|p| p.as_ref().starts_with('.'))
}

/// A trace file's name.
pub(super) fn trace_named(name: &str) -> bool {
    is_trace_path(Utf8Path::new(name))
}

impl Stores {
    pub(super) fn list(
        urls: &[Utf8PathBuf],
        options: &RemoteOptions,
        named: Named,
    ) -> Result<(Stores, Vec<Utf8PathBuf>), RemoteError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("tracereplay-remote")
            .enable_all()
            .build()
            .map_err(|e| RemoteError::Unsupported {
                url: urls.first().map(|u| u.to_string()).unwrap_or_default(),
                why: format!("cannot start the runtime that reads object storage: {e}"),
            })?;
        let mut objects = HashMap::new();
        for url in urls {
            let (store, key, base) = open_store(url.as_str(), options)?;
            let listed = runtime.block_on(list_under(&store, &key, named));
            let metas = listed.map_err(|e| RemoteError::List {
                url: url.to_string(),
                message: without_secrets(&e.to_string()),
            })?;
            for meta in metas {
                let shown = Utf8PathBuf::from(format!("{base}/{}", meta.location));
                objects.entry(shown).or_insert_with(|| Object {
                    store: store.clone(),
                    key: meta.location,
                    size: meta.size,
                    e_tag: meta.e_tag,
                    version: meta.version,
                    modified: meta.last_modified.timestamp_nanos_opt().unwrap_or(0),
                });
            }
        }
        let mut found: Vec<Utf8PathBuf> = objects.keys().cloned().collect();
        found.sort();
        let concurrency = options.concurrency.unwrap_or(DEFAULT_CONCURRENCY).max(1);
        let ahead = Mutex::default();
        Ok((
            Stores {
                runtime,
                objects,
                ahead,
                concurrency,
            },
            found,
        ))
    }

    pub(super) fn holds(&self, path: &Utf8Path) -> bool {
        self.objects.contains_key(path)
    }

    pub(super) fn size(&self, path: &Utf8Path) -> Option<u64> {
        self.objects.get(path).map(|o| o.size)
    }

    pub(super) fn identity(&self, path: &Utf8Path) -> Option<Vec<u8>> {
        let o = self.objects.get(path)?;
        let mut id = Vec::new();
        for part in [
            path.as_str(),
            &o.size.to_string(),
            o.e_tag.as_deref().unwrap_or(""),
            o.version.as_deref().unwrap_or(""),
        ] {
            id.extend_from_slice(part.as_bytes());
            id.push(0);
        }
        // Without an ETag or a version, the modification time stands in for the content.
        if o.e_tag.is_none() && o.version.is_none() {
            id.extend_from_slice(&o.modified.to_le_bytes());
        }
        Some(id)
    }

    pub(super) fn prefetch(&self, paths: &[&Utf8Path], limits: Limits) {
        let read = self.read_many(paths, &|p| Cap::trace(p, limits));
        let mut ahead = self.ahead.lock().unwrap_or_else(|e| e.into_inner());
        ahead.extend(read);
    }

    /// Reads the listed ones of `paths`, [`Stores::concurrency`] at a time, each within its
    /// `cap`; in the order of `paths`.
    pub(super) fn read_many(
        &self,
        paths: &[&Utf8Path],
        cap: &(dyn Fn(&Utf8Path) -> Cap + Sync),
    ) -> Vec<(Utf8PathBuf, Result<Vec<u8>, TraceError>)> {
        let wanted: Vec<(usize, &Utf8Path, &Object)> = (paths.iter().enumerate())
            .filter_map(|(i, p)| Some((i, *p, self.objects.get(*p)?)))
            .collect();
        let mut read = self.runtime.block_on(
            futures::stream::iter(wanted)
                .map(|(i, p, o)| async move { (i, p.to_owned(), fetch(p, o, cap(p)).await) })
                .buffer_unordered(self.concurrency)
                .collect::<Vec<_>>(),
        );
        // Read as they come, returned in the order asked.
        read.sort_unstable_by_key(|(i, ..)| *i);
        read.into_iter().map(|(_, p, r)| (p, r)).collect()
    }

    pub(super) fn read(&self, path: &Utf8Path, cap: Cap) -> Result<Vec<u8>, TraceError> {
        let taken = (self.ahead.lock().unwrap_or_else(|e| e.into_inner())).remove(path);
        if let Some(read) = taken {
            return read;
        }
        let object = self
            .objects
            .get(path)
            .ok_or_else(|| TraceError::Unreadable {
                path: path.to_owned(),
                detail: "not among the objects listed".into(),
            })?;
        self.runtime.block_on(fetch(path, object, cap))
    }
}

/// Every wanted object under `key`: the object itself when `key` names one, else the
/// listing under it (streamed, a page at a time).
async fn list_under(
    store: &Arc<dyn ObjectStore>,
    key: &Key,
    named: Named,
) -> Result<Vec<ObjectMeta>, object_store::Error> {
    if key.filename().is_some_and(named) {
        return Ok(vec![store.head(key).await?]);
    }
    let prefix = (!key.as_ref().is_empty()).then_some(key);
    let mut listing = store.list(prefix);
    let mut found = Vec::new();
    while let Some(meta) = listing.next().await {
        let meta = meta?;
        if wanted(&meta.location, named) {
            found.push(meta);
        }
    }
    Ok(found)
}

/// The stored bytes of `object`, within the file limits: refused by its listed size before any
/// byte is read, and cut off if it grows past the limit meanwhile. The read is conditional on
/// the listed ETag, so what is judged is what the listing (and the cache's key) described.
async fn fetch(path: &Utf8Path, object: &Object, cap: Cap) -> Result<Vec<u8>, TraceError> {
    let Cap {
        bytes: cap,
        what,
        flag,
    } = cap;
    let too_large = || TraceError::TooLarge {
        path: path.to_owned(),
        line: None,
        what,
        limit: cap,
        flag,
    };
    if object.size > cap {
        return Err(too_large());
    }
    let io = |e: object_store::Error| TraceError::Io {
        path: path.to_owned(),
        source: std::io::Error::other(without_secrets(&e.to_string())),
    };
    let options = object_store::GetOptions {
        if_match: object.e_tag.clone(),
        ..Default::default()
    };
    let got = object
        .store
        .get_opts(&object.key, options)
        .await
        .map_err(io)?;
    let mut bytes = Vec::with_capacity(object.size as usize);
    let mut body = got.into_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(io)?;
        if (bytes.len() + chunk.len()) as u64 > cap {
            return Err(too_large());
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}
