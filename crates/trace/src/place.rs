//! Where a sealed trace goes, and putting it there: the one placement step every writer of
//! traces shares — `ingest`, `record`, `replay serve --record` and `collect`, and any recorder
//! to come. It owns the trace's path under a traces directory, the secret rule (what would be
//! written holding a secret is refused, whole), what may stand where it goes, atomic writes
//! confined to the directory, and the raw-prompt sidecar only under the developer's opt-in.
//! What is written is built by [`super::TraceWriter`] (header, event order, sealing, prompt
//! hashes); this is the rest of writing a trace.

use std::collections::HashSet;

use camino::{Utf8Path, Utf8PathBuf};

use super::{Limits, SealedTrace, TraceFile, sidecar_path};
use crate::common::segment::encode_trace_segment;
use crate::fsutil::Confined;
use crate::privacy::lint::{SecretsMode, scan_secrets};

/// The run a trace records: what names its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunName<'a> {
    /// The scenario id.
    pub scenario: &'a str,
    /// The case.
    pub case: &'a str,
    /// The trial, when the case is recorded several times.
    pub trial: Option<&'a str>,
}

impl RunName<'_> {
    /// Its trace's path under a traces directory: `<scenario>/<case>.trace.ndjson.zst`, or
    /// `<scenario>/<case>/<trial>.trace.ndjson.zst` for a trial (lowercased path segments, as
    /// baselines have them; see [`encode_trace_segment`]).
    pub fn path(&self) -> Utf8PathBuf {
        let (scenario, case) = (
            encode_trace_segment(self.scenario),
            encode_trace_segment(self.case),
        );
        match self.trial {
            None => format!("{scenario}/{case}.trace.ndjson.zst").into(),
            Some(t) => format!(
                "{scenario}/{case}/{}.trace.ndjson.zst",
                encode_trace_segment(t)
            )
            .into(),
        }
    }

    /// The run recorded at `path`, in words, when it is another run than this one (its
    /// scenario, case or trial spelt otherwise: two ids that differ only in letter case share a
    /// file name); `None` when nothing is there, it is this run, or it cannot be read.
    fn other_at(&self, path: &Utf8Path, limits: Limits) -> Option<String> {
        let file = TraceFile::open(path, limits).ok()?;
        let (scenario, case, trial) = super::probe_run(&file.bytes)?;
        let trial = trial.as_ref().map(super::TrialId::as_str);
        (scenario != self.scenario || case != self.case || trial != self.trial).then(|| {
            let trial = trial.map_or_else(String::new, |t| format!(" trial `{t}`"));
            format!("scenario `{scenario}` case `{case}`{trial}")
        })
    }
}

/// What stands where a trace is to go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AtDestination {
    /// Nothing.
    Free,
    /// A sealed trace of the same content.
    Same,
    /// Something else: a sealed trace of another content (its hash), or what is not one.
    Different(Option<String>),
}

/// What stands at `dest`, for a trace of `content_hash`.
pub fn at_destination(dest: &Utf8Path, content_hash: &str, limits: Limits) -> AtDestination {
    if std::fs::symlink_metadata(dest).is_err() {
        return AtDestination::Free;
    }
    let existing = TraceFile::open(dest, limits)
        .ok()
        .and_then(|f| f.verify_seal(true).ok())
        .map(|s| s.content_hash);
    match existing {
        Some(h) if h == content_hash => AtDestination::Same,
        other => AtDestination::Different(other),
    }
}

/// What [`Existing::KeepSame`] makes of what stands at `dest` for a trace of `content_hash`:
/// nothing or the same trace (to write, or to leave as it is), a different file only under
/// `force`; else the refusal.
pub fn keep_same(
    dest: &Utf8Path,
    content_hash: &str,
    force: bool,
    limits: Limits,
) -> Result<AtDestination, PlaceError> {
    match at_destination(dest, content_hash, limits) {
        AtDestination::Different(existing) if !force => Err(PlaceError::Different {
            path: dest.to_owned(),
            existing,
            new: content_hash.to_owned(),
        }),
        there => Ok(there),
    }
}

/// What a trace may go over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Nothing: a recording never replaces a file (`record`, `collect`).
    Refuse,
    /// An earlier recording of this very run (`replay serve --record` records its session
    /// again); another run's file is refused.
    SameRun,
    /// The same trace is left as it is; a different one is refused unless `force`
    /// (`ingest`, `ingest --force`).
    KeepSame {
        /// Replace a different file.
        force: bool,
    },
}

/// How a trace is placed.
#[derive(Debug, Clone, Copy)]
pub struct Placement<'a> {
    /// The traces directory: nothing is written outside it, nor through a symlink under it.
    pub dir: &'a Confined,
    /// Whether the developer opted in to raw prompt text: only then is the sidecar written.
    pub raw_prompts: bool,
    /// What it may go over.
    pub existing: Existing,
    /// Whether each file is synced before its rename (otherwise the caller syncs what it wrote
    /// at its end).
    pub durable: bool,
    /// Limits for reading what stands there.
    pub limits: Limits,
    /// Secret fingerprints waived (`.tracereplay-allow`).
    pub waived: &'a HashSet<String>,
}

/// Where a trace was placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placed {
    /// Written: its path and the bytes stored there (compressed), to sign.
    Written {
        /// The trace's path.
        path: Utf8PathBuf,
        /// Its stored bytes.
        stored: Vec<u8>,
    },
    /// The same trace was there already.
    Unchanged {
        /// The trace's path.
        path: Utf8PathBuf,
    },
}

/// Why a trace was not placed; nothing of it was written.
#[derive(Debug, thiserror::Error)]
pub enum PlaceError {
    /// What would be written holds a secret: named by kind and fingerprint, never shown.
    #[error(
        "not written: what would be written holds a secret ({kind} {fingerprint}, in the {part}{at}); nothing of this run was written — remove the secret from the tool output or prompt that carried it, or waive a false positive by adding `{fingerprint}` to `.tracereplay-allow`",
        at = line.map(|l| format!(" line {l}")).unwrap_or_default()
    )]
    Secret {
        /// The secret's kind (`openai-key`).
        kind: String,
        /// `b3:` and 12 hex digits.
        fingerprint: String,
        /// `trace` or `sidecar`.
        part: &'static str,
        /// The line it is on.
        line: Option<usize>,
    },
    /// Another run's trace is there (ids that differ only in letter case share a file).
    #[error(
        "`{path}` holds the recording of {other}, which differs only in letter case from this run's; not replaced — give this run another trial (or case)"
    )]
    OtherRun {
        /// Where.
        path: Utf8PathBuf,
        /// The other run, in words.
        other: String,
    },
    /// A file is there, and a recording never replaces one.
    #[error(
        "`{path}` exists; a recording never replaces one — give this run a trial (`--trial`, or the X-Tracereplay-Trial header), or record into another directory"
    )]
    Exists {
        /// Where.
        path: Utf8PathBuf,
    },
    /// A different file is there, kept without `--force`.
    #[error("`{}` holds {}; not replaced — pass `--force` to replace it", crate::paths::display_path(path), match existing {
        Some(h) => format!("a different trace ({h}, the new one is {new})"),
        None => "something that is not a readable sealed trace".to_owned(),
    })]
    Different {
        /// Where.
        path: Utf8PathBuf,
        /// The content hash there, when it is a sealed trace.
        existing: Option<String>,
        /// The new trace's content hash.
        new: String,
    },
    /// Writing failed.
    #[error("cannot write `{path}`: {source}")]
    Io {
        /// What was being written.
        path: Utf8PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl SealedTrace {
    /// The first secret in what would be written (the trace, and the sidecar when
    /// `raw_prompts`), unless waived.
    pub fn refuse_secrets(
        &self,
        raw_prompts: bool,
        waived: &HashSet<String>,
    ) -> Result<(), PlaceError> {
        let mode = SecretsMode::Fail;
        let sidecar = self.sidecar.as_deref().filter(|_| raw_prompts);
        let parts = [("trace", Some(&self.bytes[..])), ("sidecar", sidecar)];
        for (part, bytes) in parts {
            let Some(bytes) = bytes else { continue };
            if let Some(f) = scan_secrets(part, bytes, mode, waived).into_iter().next() {
                return Err(PlaceError::Secret {
                    kind: f.kind,
                    fingerprint: f.fingerprint.unwrap_or_default(),
                    part,
                    line: f.line,
                });
            }
        }
        Ok(())
    }

    /// Writes the trace at `path` under `dir` (atomically: a reader sees the old file or the
    /// new one), and its raw-prompt sidecar beside it when `raw_prompts`; the stored bytes.
    /// No rule is checked: only [`Checked::write`] calls it, once the rules passed.
    fn store(
        &self,
        dir: &Confined,
        path: &Utf8Path,
        raw_prompts: bool,
        durable: bool,
    ) -> Result<Vec<u8>, PlaceError> {
        let io = |path: &Utf8Path| {
            let path = path.to_owned();
            move |source| PlaceError::Io { path, source }
        };
        let stored = self.compress().map_err(io(path))?;
        dir.write(path, &stored, durable).map_err(io(path))?;
        if let Some(sidecar) = self.sidecar.as_deref().filter(|_| raw_prompts) {
            let side = sidecar_path(path);
            dir.write(&side, sidecar, durable).map_err(io(&side))?;
        }
        Ok(stored)
    }

    /// Places the trace of `run` under `how.dir`: refused whole when what would be written
    /// holds a secret or what stands there may not be replaced, else written. What a recorder
    /// does with a run, from the first event to the file:
    ///
    /// ```
    /// use tracereplay_trace::{
    ///     Confined, EventBody, Existing, Header, Limits, Placed, Placement, RunName, RunStatus,
    ///     TraceWriter,
    /// };
    ///
    /// let dir = std::env::temp_dir().join(format!("tracereplay-doc-{}", std::process::id()));
    /// let dir = camino::Utf8PathBuf::from_path_buf(dir).unwrap();
    /// let mut w = TraceWriter::new(Header::new("demo.search", "default"));
    /// let end = EventBody::RunEnd { status: RunStatus::Completed, error: None };
    /// w.push(None, end);
    /// let sealed = w.finish()?;
    /// let how = Placement {
    ///     dir: &Confined::new(dir.clone()),
    ///     raw_prompts: false,
    ///     existing: Existing::Refuse,
    ///     durable: false,
    ///     limits: Limits::default(),
    ///     waived: &Default::default(),
    /// };
    /// let run = RunName { scenario: "demo.search", case: "default", trial: None };
    /// let placed = sealed.place(run, &how)?;
    /// assert!(matches!(placed, Placed::Written { ref path, .. }
    ///     if path.ends_with("demo.search/default.trace.ndjson.zst")));
    /// // A recorder never replaces a file.
    /// assert!(sealed.place(run, &how).is_err());
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn place(&self, run: RunName<'_>, how: &Placement<'_>) -> Result<Placed, PlaceError> {
        let path = how.dir.root().join(run.path());
        self.check(run, path, how)?.write()
    }

    /// Checks that the trace of `run` may be written at `path` (under `how.dir`; its
    /// [`RunName::path`], or a name of the caller's own): the secret rule over what would be
    /// written, and what stands there. Nothing is written: a caller placing many traces checks
    /// them all first (as `ingest` does, to write all of an input or none of it), then writes
    /// each [`Checked`] — the only way a trace reaches the disk.
    pub fn check<'t>(
        &'t self,
        run: RunName<'_>,
        path: Utf8PathBuf,
        how: &Placement<'t>,
    ) -> Result<Checked<'t>, PlaceError> {
        self.refuse_secrets(how.raw_prompts, how.waived)?;
        let mut unchanged = false;
        match how.existing {
            Existing::Refuse | Existing::SameRun => {
                if let Some(other) = run.other_at(&path, how.limits) {
                    return Err(PlaceError::OtherRun { path, other });
                }
                if how.existing == Existing::Refuse && std::fs::symlink_metadata(&path).is_ok() {
                    return Err(PlaceError::Exists { path });
                }
            }
            Existing::KeepSame { force } => {
                let there = keep_same(&path, &self.content_hash, force, how.limits)?;
                unchanged = there == AtDestination::Same;
            }
        }
        Ok(Checked {
            trace: self,
            path,
            dir: how.dir,
            raw_prompts: how.raw_prompts,
            durable: how.durable,
            unchanged,
        })
    }
}

/// A trace whose placement was checked ([`SealedTrace::check`]): the secret rule passed and
/// what stands at its path may be replaced (or is this very trace).
#[must_use = "a checked trace is written with `write`"]
#[derive(Debug)]
pub struct Checked<'t> {
    trace: &'t SealedTrace,
    path: Utf8PathBuf,
    dir: &'t Confined,
    raw_prompts: bool,
    durable: bool,
    unchanged: bool,
}

impl Checked<'_> {
    /// Where it goes.
    pub fn path(&self) -> &Utf8Path {
        &self.path
    }

    /// Writes it (with its sidecar under the developer's opt-in), unless the same trace is
    /// there already.
    pub fn write(self) -> Result<Placed, PlaceError> {
        if self.unchanged {
            return Ok(Placed::Unchanged { path: self.path });
        }
        let (dir, raw, durable) = (self.dir, self.raw_prompts, self.durable);
        let stored = self.trace.store(dir, &self.path, raw, durable)?;
        Ok(Placed::Written {
            path: self.path,
            stored,
        })
    }
}

#[cfg(test)]
#[path = "place_tests.rs"]
mod tests;
