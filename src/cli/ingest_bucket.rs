//! `ingest s3://BUCKET/PREFIX/` (or `gs://…`, `az://…`, `https://…`): a collector's export
//! objects in, sealed traces out, incrementally.
//!
//! What was read is kept in `DIR/.tracereplay-ingest.json`: per source prefix, each object read
//! (its listed identity: URL, size, ETag or version) with the trace ids it held, and the traces
//! held back for want of their root span. A later ingest reads only objects that are new or
//! changed, and again those older objects that hold spans of the traces the new ones touch, so
//! a trace is always built from all its spans. An object the store fails to return stops the
//! source (nothing of it is written, the state is kept); one whose content is no export is
//! reported once and not read again until it changes.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, bail};
use camino::{Utf8Path, Utf8PathBuf};
use serde::{Deserialize, Serialize};

use tracereplay::trace::TraceError;
use tracereplay_core::ingest::IngestOptions;
use tracereplay_core::ingest::collector::{
    ExportKind, ExportSpans, MAX_EXPORT_BYTES, SpanPool, export_kind, unpack,
};
use tracereplay_core::remote::{Remote, RemoteOptions};

use super::ingest::{Ingesting, Written};

/// Where the state of incremental ingests is kept, in the output directory.
const STATE_FILE: &str = ".tracereplay-ingest.json";
/// The version of its layout.
const STATE_VERSION: u32 = 1;

#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    version: u32,
    /// By source prefix, as given.
    sources: BTreeMap<String, Source>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Source {
    /// By object URL.
    objects: BTreeMap<String, Seen>,
    /// Traces whose root span was not found yet.
    held_back: BTreeSet<String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Seen {
    /// BLAKE3 of the object's listed identity (URL, size, ETag, version).
    identity: String,
    /// The trace ids its spans belong to.
    traces: BTreeSet<String>,
}

fn load(path: &Utf8Path) -> anyhow::Result<State> {
    let bytes = match tracereplay_trace::fsutil::read_regular(path, 1 << 30, "ingest state") {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(State::default()),
        Err(e) => bail!("cannot read `{path}`: {e}"),
    };
    let state: State = serde_json::from_slice(&bytes).with_context(|| {
        format!("`{path}` is not an ingest state; remove it to read every object again")
    })?;
    if state.version != STATE_VERSION {
        bail!(
            "`{path}` is an ingest state of version {} (this tracereplay writes {STATE_VERSION}); remove it to read every object again",
            state.version
        );
    }
    Ok(state)
}

/// One object read: its URL, what it held, and whether it could not be read as an export.
struct Read {
    url: Utf8PathBuf,
    spans: ExportSpans,
    unreadable: bool,
}

impl Read {
    /// Its problems that refused something, counting an object that is no export as one.
    fn refusals(&self) -> usize {
        let problems = self.spans.problems.iter().filter(|p| p.rejected).count();
        problems + usize::from(self.unreadable)
    }
}

/// Reads `urls` (of the source `source`) and their spans. `None` when the store failed to
/// return one (said on stderr, with what that means for the source); objects whose content is
/// no export are reported and come back without spans.
fn read_objects(remote: &Remote, urls: &[&Utf8Path], source: &str) -> Option<Vec<Read>> {
    let mut out = Vec::with_capacity(urls.len());
    let mut failed = false;
    for (url, stored) in remote.read_all(urls, MAX_EXPORT_BYTES) {
        let Some(ExportKind::Traces(format)) = export_kind(url.as_str()) else {
            continue;
        };
        let stored = match stored {
            Ok(bytes) => bytes,
            Err(TraceError::TooLarge { limit, .. }) => {
                diag!("error: `{url}`: the object is over {limit} bytes; not read");
                out.push(Read {
                    url,
                    spans: ExportSpans::empty(format),
                    unreadable: true,
                });
                continue;
            }
            Err(e) => {
                diag!("error: {}", tracereplay_core::eval::error_chain(&e));
                failed = true;
                continue;
            }
        };
        let (spans, unreadable) = match unpack(url.as_str(), &stored, MAX_EXPORT_BYTES) {
            Ok(bytes) => (ExportSpans::read(format, &bytes), false),
            Err(e) => {
                diag!("error: `{url}`: {e}");
                (ExportSpans::empty(format), true)
            }
        };
        for p in &spans.problems {
            diag!(
                "{}: `{url}`, {}: {}",
                if p.rejected { "error" } else { "warning" },
                p.position,
                p.message
            );
        }
        out.push(Read {
            url,
            spans,
            unreadable,
        });
    }
    if failed {
        diag!(
            "error: `{source}`: nothing of it was written, since an object could not be read; ingest it again"
        );
        return None;
    }
    Some(out)
}

/// Ingests the collector exports under `url`; the number of runs and objects refused.
pub(super) fn ingest(
    session: &mut Ingesting<'_>,
    url: &str,
    opts: &IngestOptions,
) -> anyhow::Result<usize> {
    let (remote, listed) =
        Remote::list_exports(&[Utf8PathBuf::from(url)], &RemoteOptions::default())?;
    let state_path = session.args.out.join(STATE_FILE);
    let mut state = load(&state_path)?;
    let mut source = state.sources.remove(url).unwrap_or_default();
    let identity = |p: &Utf8Path| {
        let id = remote.identity(p).unwrap_or_default();
        blake3::hash(&id).to_hex().to_string()
    };
    let (traces, others): (Vec<&Utf8PathBuf>, Vec<&Utf8PathBuf>) = listed
        .iter()
        .partition(|p| matches!(export_kind(p.as_str()), Some(ExportKind::Traces(_))));
    let ids: BTreeMap<&Utf8Path, String> =
        traces.iter().map(|p| (p.as_path(), identity(p))).collect();
    let new: Vec<&Utf8Path> = (ids.iter())
        .filter(|(p, id)| {
            source
                .objects
                .get(p.as_str())
                .is_none_or(|s| &s.identity != *id)
        })
        .map(|(p, _)| *p)
        .collect();
    let Some(fresh) = read_objects(&remote, &new, url) else {
        return Ok(1);
    };
    // The traces to build: those the new objects touch, and those held back before.
    let mut wanted: BTreeSet<String> = source.held_back.clone();
    for r in &fresh {
        wanted.extend(r.spans.trace_ids());
    }
    let fresh_urls: BTreeSet<String> = fresh.iter().map(|r| r.url.to_string()).collect();
    let again: Vec<&Utf8Path> = (ids.keys())
        .filter(|p| !fresh_urls.contains(p.as_str()))
        .filter(|p| {
            (source.objects.get(p.as_str()))
                .is_some_and(|s| s.traces.iter().any(|t| wanted.contains(t)))
        })
        .copied()
        .collect();
    let Some(older) = read_objects(&remote, &again, url) else {
        return Ok(1);
    };
    let mut pool = SpanPool::default();
    let mut seen: Vec<(String, Seen)> = Vec::new();
    // In URL order, so that a trace's first object (its header's source) does not depend on
    // which objects were new.
    let mut all: Vec<Read> = fresh.into_iter().chain(older).collect();
    all.sort_by(|a, b| a.url.cmp(&b.url));
    let mut refused = 0;
    for r in all {
        // What an object read again has refused was said when it was new.
        if fresh_urls.contains(r.url.as_str()) {
            refused += r.refusals();
            let traces = r.spans.trace_ids();
            seen.push((
                r.url.to_string(),
                Seen {
                    identity: ids[r.url.as_path()].clone(),
                    traces,
                },
            ));
        }
        pool.add(r.spans, &|t| wanted.contains(t));
    }
    let built = pool.build(opts);
    if !built.held_back.is_empty() {
        diag!(
            "note: `{url}`: {} trace(s) held back, their root span not among the objects yet (read again by the next ingest): {}",
            built.held_back.len(),
            shortened(&built.held_back)
        );
    }
    // Nothing new to build (every trace read is held back, or nothing was read) is no error.
    let nothing = built.outcome.runs.is_empty() && built.outcome.problems.is_empty();
    let written = match nothing {
        true => Written {
            failed: 0,
            refused: false,
        },
        false => session.write(url, "otlp", &built.outcome, None)?,
    };
    writeln!(
        session.out,
        "`{url}`: {} export object(s) listed, {} read ({} new or changed, {} again for their traces), {} of other signals skipped; {} trace(s) held back",
        traces.len(),
        new.len() + again.len(),
        new.len(),
        again.len(),
        others.len(),
        built.held_back.len()
    )?;
    if written.refused {
        return Ok(written.failed + refused);
    }
    // What was read is recorded once the traces it made are durable.
    source
        .objects
        .retain(|k, _| ids.contains_key(Utf8Path::new(k)));
    source.objects.extend(seen);
    source.held_back = built.held_back.into_iter().collect();
    state.version = STATE_VERSION;
    state.sources.insert(url.to_owned(), source);
    session.sync()?;
    let mut bytes = serde_json::to_vec(&state)?;
    bytes.push(b'\n');
    (session.confined().write(&state_path, &bytes, true))
        .with_context(|| format!("cannot write `{state_path}`"))?;
    Ok(written.failed + refused)
}

/// The first few of `ids`, and how many more.
fn shortened(ids: &[String]) -> String {
    let mut s = ids.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    if ids.len() > 5 {
        s.push_str(&format!(" and {} more", ids.len() - 5));
    }
    s
}
