//! The run record: what the last `check` of an unchanged suite wrote, kept beside the result
//! cache so that the same check of the same files gives it again without reading the cache.
//!
//! A record holds a run's standard output and error and its exit code, under two digests:
//! - the **invocation** ([`Invocation::new`]): what the caller says the run was asked (the
//!   command line, environment, working directory, the binary itself), the tool's version, and
//!   the result cache file's stamp — a record is only written by a run that found every row in
//!   that very file and left it as it was. This digest is keyed (the environment may hold
//!   secrets, and a record may be shared with a restored cache);
//! - the **inputs** ([`Inputs::take`]): every file the run discovered (traces, scenario, suite,
//!   sidecar and look-up files) by path and stamp, what discovery warned of, the options that
//!   decide judging and counting, and every file of the baselines directory. Their **head**
//!   ([`Inputs::head`]: all but the stamps of the traces and baselines) is cheap to take, so a
//!   run learns early that a record cannot serve it;
//! - the files the recording run read besides those (the Harness Contracts its scenarios name),
//!   listed in the record and stamped by a run that could be given it.
//!
//! A stamp is what the result cache keys a trace by without reading it: size, modification and
//! change times (nanoseconds), inode and device. Any write changes the change time.
//!
//! The record is authenticated with a key derived from the result cache's (a record the user's
//! key did not make is ignored, as a forged cache is), and read whole; a record that does not
//! verify, or was made for another invocation or other inputs, is not used and the run judges
//! as it would have. The stamps of the traces, taken before judging, are what the judge stage
//! keys the cache with ([`crate::eval::Execution::stamps`]), so a record never describes files
//! newer than the rows it was made from.

use std::sync::Arc;

use camino::{Utf8Path, Utf8PathBuf};
use rayon::prelude::*;

use crate::eval::{CacheKey, CheckOptions};
use crate::suite::Suite;

pub use crate::eval::{Stamp, Stamps};

/// The record's file name in the cache directory.
const FILE: &str = "run-v1.bin";
const MAGIC: &[u8] = b"tracereplay run record v1\n";
/// A record holds at most this much output; a larger report is not recorded.
pub const MAX_OUTPUT: usize = 8 << 20;

/// The stamp of `path` (following symlinks), if it can be had (see the module's overview).
pub fn stamp_of(path: &Utf8Path) -> Option<Stamp> {
    std::fs::metadata(path).ok().map(|m| crate::eval::stamp(&m))
}

/// Parts to hash, each with its length so that parts cannot run together; gathered, then hashed
/// at once (BLAKE3 takes a long input many chunks at a time, and tens of thousands of small
/// updates one by one).
struct Parts(Vec<u8>);

impl Parts {
    fn new(domain: &str) -> Parts {
        let mut p = Parts(Vec::with_capacity(1 << 16));
        p.part(domain.as_bytes());
        p
    }

    fn part(&mut self, bytes: &[u8]) -> &mut Parts {
        self.0
            .extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        self.0.extend_from_slice(bytes);
        self
    }

    fn stamp(&mut self, stamp: Option<&Stamp>) -> &mut Parts {
        match stamp {
            Some(s) => self.part(s),
            None => self.part(b"-"),
        }
    }

    fn finish(&self) -> [u8; 32] {
        *blake3::hash(&self.0).as_bytes()
    }

    fn finish_keyed(&self, key: &[u8; 32]) -> [u8; 32] {
        *blake3::keyed_hash(key, &self.0).as_bytes()
    }
}

/// What a run was asked, and of which result cache file: a record is used only by a run of
/// the same invocation.
pub struct Invocation {
    key: [u8; 32],
    path: Utf8PathBuf,
    cache_file: Utf8PathBuf,
    cache_stamp: Option<Stamp>,
    digest: [u8; 32],
}

impl Invocation {
    /// The invocation `described` (everything besides the discovered files and the options
    /// that can change the run's output, as bytes), recorded under `cache_dir`. `None` without
    /// a cache key (then nothing is cached either).
    pub fn new(cache_dir: &Utf8Path, described: &[u8]) -> Option<Invocation> {
        Some(Invocation::with_key(
            cache_dir,
            described,
            &CacheKey::resolve()?,
        ))
    }

    /// [`Invocation::new`] under `key`.
    pub(crate) fn with_key(cache_dir: &Utf8Path, described: &[u8], key: &CacheKey) -> Invocation {
        let cache_file = crate::eval::CacheFile::path_in(cache_dir);
        let cache_stamp = stamp_of(&cache_file);
        let key = key.derive("tracereplay 2026-12 run-record mac v1");
        // Keyed: the environment it covers may hold secrets, and the record may be shared (a
        // CI cache), so its digest tells nothing to whoever lacks the key.
        let digest = Parts::new("tracereplay run record: invocation")
            .part(env!("CARGO_PKG_VERSION").as_bytes())
            .part(described)
            .part(cache_file.as_str().as_bytes())
            .stamp(cache_stamp.as_ref())
            .finish_keyed(&key);
        Invocation {
            key,
            path: cache_dir.join(FILE),
            cache_file,
            cache_stamp,
            digest,
        }
    }

    /// The record of this invocation, if one is kept and verifies.
    pub fn recorded(&self) -> Option<Recorded> {
        let limit = (2 * MAX_OUTPUT + 4096) as u64;
        let bytes = crate::fsutil::read_regular(&self.path, limit, "run record").ok()?;
        let recorded = Recorded::decode(&bytes, &self.key)?;
        (recorded.invocation == self.digest).then_some(recorded)
    }

    /// Whether the result cache file is the one this invocation began with (no run, this one
    /// or another, has replaced it since).
    pub fn cache_unchanged(&self) -> bool {
        stamp_of(&self.cache_file) == self.cache_stamp
    }

    /// Records what a run of this invocation with `inputs` wrote: its exit `code`, `stdout` and
    /// `stderr`, and the files it read besides its inputs (`also_read`: the Harness Contracts
    /// its scenarios name, [`crate::eval::CheckStats::also_read`]), which a run given the record
    /// stamps too. Nothing is recorded unless the inputs are [settled](Inputs::settled) and none
    /// of `also_read` changed in the [`SETTLE`] before the inputs were taken, or since. Not
    /// durable (a lost or torn record only costs the next run its shortcut).
    pub fn record(
        &self,
        inputs: &Inputs,
        also_read: &[Utf8PathBuf],
        code: i32,
        (stdout, stderr): (&[u8], &[u8]),
    ) -> std::io::Result<()> {
        let (digest, newest) = with_also_read(&inputs.digest, also_read);
        let settled = inputs.settled && inputs.started.is_some_and(|at| newest + SETTLE < at);
        if !settled {
            return Ok(());
        }
        let mut bytes = Vec::with_capacity(MAGIC.len() + 128 + stdout.len() + stderr.len());
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&self.digest);
        bytes.extend_from_slice(&inputs.head);
        bytes.extend_from_slice(&digest);
        bytes.extend_from_slice(&(also_read.len() as u64).to_le_bytes());
        for path in also_read {
            bytes.extend_from_slice(&(path.as_str().len() as u64).to_le_bytes());
            bytes.extend_from_slice(path.as_str().as_bytes());
        }
        bytes.extend_from_slice(&code.to_le_bytes());
        for out in [stdout, stderr] {
            bytes.extend_from_slice(&(out.len() as u64).to_le_bytes());
            bytes.extend_from_slice(out);
        }
        let mac = blake3::keyed_hash(&self.key, &bytes);
        bytes.extend_from_slice(mac.as_bytes());
        crate::fsutil::write_streaming_creating_dirs(&self.path, false, &mut |w| {
            w.write_all(&bytes)
        })
    }
}

/// A kept record: the run's exit code and output, and the inputs it was made from.
pub struct Recorded {
    invocation: [u8; 32],
    head: [u8; 32],
    /// The digest of the inputs and of the files in `also_read`.
    inputs: [u8; 32],
    also_read: Vec<Utf8PathBuf>,
    /// The run's exit code.
    pub code: i32,
    /// What it wrote to standard output.
    pub stdout: Vec<u8>,
    /// What it wrote to standard error.
    pub stderr: Vec<u8>,
}

impl Recorded {
    /// Whether the record was made from `inputs`.
    pub fn matches(&self, inputs: &Inputs) -> bool {
        self.head == inputs.head && self.inputs == with_also_read(&inputs.digest, &self.also_read).0
    }

    /// Whether the record may have been made from inputs with this `head` (if not, it was not).
    pub fn head_matches(&self, head: &InputsHead) -> bool {
        self.head == head.digest
    }

    /// The record in `bytes`, if its MAC verifies under `key` and it parses.
    fn decode(bytes: &[u8], key: &[u8; 32]) -> Option<Recorded> {
        let (body, mac) = bytes.split_at_checked(bytes.len().checked_sub(32)?)?;
        let mac: [u8; 32] = mac.try_into().ok()?;
        // `Hash`'s equality takes constant time.
        if blake3::keyed_hash(key, body) != blake3::Hash::from(mac) {
            return None;
        }
        let mut rest = body.strip_prefix(MAGIC)?;
        let mut take = |n: usize| -> Option<&[u8]> {
            let (taken, after) = rest.split_at_checked(n)?;
            rest = after;
            Some(taken)
        };
        let invocation = take(32)?.try_into().ok()?;
        let head = take(32)?.try_into().ok()?;
        let inputs = take(32)?.try_into().ok()?;
        let count = u64::from_le_bytes(take(8)?.try_into().ok()?);
        let mut also_read = Vec::new();
        for _ in 0..count {
            let len = u64::from_le_bytes(take(8)?.try_into().ok()?);
            let path = std::str::from_utf8(take(usize::try_from(len).ok()?)?).ok()?;
            also_read.push(Utf8PathBuf::from(path));
        }
        let code = i32::from_le_bytes(take(4)?.try_into().ok()?);
        let mut output = || -> Option<Vec<u8>> {
            let len = u64::from_le_bytes(take(8)?.try_into().ok()?);
            Some(take(usize::try_from(len).ok()?)?.to_vec())
        };
        let (stdout, stderr) = (output()?, output()?);
        rest.is_empty().then_some(Recorded {
            invocation,
            head,
            inputs,
            also_read,
            code,
            stdout,
            stderr,
        })
    }
}

/// The digest of what a run of a suite reads (see the module's overview), with the stamps of
/// its trace files.
pub struct Inputs {
    /// The digest of the head ([`InputsHead`]) and of the whole.
    head: [u8; 32],
    digest: [u8; 32],
    /// When the stamps began to be taken (since the epoch).
    started: Option<std::time::Duration>,
    traces: Stamps,
    /// No file was changed in the [`SETTLE`] before the stamps were taken.
    settled: bool,
}

/// How long before a run's stamps were taken its files must have last changed for the run to
/// be recorded: a file's times are only as fine as its filesystem keeps them (a second, on
/// some), and a file written twice within one such tick, at one size, would keep its stamp.
pub const SETTLE: std::time::Duration = std::time::Duration::from_secs(1);

/// When the file of `stamp` last changed (the later of its modification and change times).
fn changed_at(stamp: &Stamp) -> std::time::Duration {
    let n = |i: usize| u64::from_le_bytes(stamp[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    let at = |s: u64, ns: u64| std::time::Duration::new(s, (ns % 1_000_000_000) as u32);
    at(n(1), n(2)).max(at(n(3), n(4)))
}

/// The part of a run's inputs that is cheap to take ([`Inputs::head`]): the options, the files
/// discovered (the trace files by path only), the stamps of all but the trace files, and what
/// discovery warned of. A run whose head differs from a record's cannot be given it, which a run
/// learns before stamping every trace (and then reads the result cache meanwhile).
pub struct InputsHead {
    digest: [u8; 32],
    /// When the stamps began to be taken (since the epoch), and the latest change they show.
    started: Option<std::time::Duration>,
    newest: std::time::Duration,
}

impl Inputs {
    /// [`Inputs::head`], then [`InputsHead::finish`].
    pub fn take(suite: &Suite, options: &CheckOptions) -> Inputs {
        Inputs::head(suite, options).finish(suite, options)
    }

    /// The head of the inputs of a run of `suite` with `options`.
    pub fn head(suite: &Suite, options: &CheckOptions) -> InputsHead {
        let started = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        let mut newest = std::time::Duration::ZERO;
        let found = suite.found();
        let mut h = Parts::new("tracereplay run record: inputs' head");
        h.part(options_text(options).as_bytes());
        h.part(b"traces");
        for path in &found.trace_files {
            h.part(path.as_str().as_bytes());
        }
        for (name, files) in [
            ("scenarios", &found.scenario_files),
            ("suites", &found.suite_files),
            ("sidecars", &found.sidecar_files),
            ("look-ups", &found.lookup_files),
            ("roots", &found.roots),
        ] {
            h.part(name.as_bytes());
            for path in files {
                let stamp = stamp_of(path);
                newest = newest.max(stamp.as_ref().map_or(Default::default(), changed_at));
                h.part(path.as_str().as_bytes()).stamp(stamp.as_ref());
            }
        }
        h.part(b"unreachable");
        for (path, why) in &found.unreachable {
            h.part(path.as_str().as_bytes()).part(why.as_bytes());
        }
        h.part(b"warnings");
        for w in &found.warnings {
            h.part(w.as_bytes());
        }
        InputsHead {
            digest: h.finish(),
            started: started.ok(),
            newest,
        }
    }

    /// Whether every file had last changed at least [`SETTLE`] before the stamps were taken:
    /// only then is a run of these inputs recorded.
    pub fn settled(&self) -> bool {
        self.settled
    }

    /// The stamps of the suite's trace files, for the judge stage to key the cache by.
    pub fn trace_stamps(&self) -> Stamps {
        self.traces.clone()
    }
}

impl InputsHead {
    /// The whole inputs: the head, the trace files' stamps (taken in parallel, on the current
    /// pool) and every entry of the baselines directory `options` compare with.
    pub fn finish(self, suite: &Suite, options: &CheckOptions) -> Inputs {
        let traces: Arc<[Option<Stamp>]> = (suite.found().trace_files.par_iter())
            .map(|p| stamp_of(p))
            .collect();
        let baselines =
            (options.baselines.policy()).map_or(Vec::new(), |p| tree_stamps(&p.store.dir));
        let mut h = Parts::new("tracereplay run record: inputs");
        h.part(&self.digest).part(b"traces");
        for stamp in traces.iter() {
            h.stamp(stamp.as_ref());
        }
        h.part(b"baselines");
        for (path, stamp) in &baselines {
            h.part(path.as_str().as_bytes()).stamp(stamp.as_ref());
        }
        let stamps = traces.iter().chain(baselines.iter().map(|(_, s)| s));
        let newest = (stamps.flatten().map(changed_at)).fold(self.newest, std::cmp::Ord::max);
        Inputs {
            head: self.digest,
            digest: h.finish(),
            traces: Stamps::new(traces),
            settled: self.started.is_some_and(|at| newest + SETTLE < at),
            started: self.started,
        }
    }
}

/// The digest of `inputs` with the paths and stamps of `also_read`, and the latest change among
/// those.
fn with_also_read(inputs: &[u8; 32], also_read: &[Utf8PathBuf]) -> ([u8; 32], std::time::Duration) {
    let mut h = Parts::new("tracereplay run record: inputs and what else was read");
    h.part(inputs);
    let mut newest = std::time::Duration::ZERO;
    for path in also_read {
        let stamp = stamp_of(path);
        newest = newest.max(stamp.as_ref().map_or(Default::default(), changed_at));
        h.part(path.as_str().as_bytes()).stamp(stamp.as_ref());
    }
    (h.finish(), newest)
}

/// The options that decide a run's rows and counts, as text (sets sorted).
fn options_text(o: &CheckOptions) -> String {
    let mut waived: Vec<&String> = o.counting.waived.iter().collect();
    waived.sort();
    format!(
        "{:?}\n{:?}\n{:?} {:?} {waived:?} {:?}\n{:?}\nsigned {}\nshare key {}",
        o.selection,
        o.judging,
        o.counting.fail_on,
        o.counting.secrets,
        o.counting.budget,
        o.baselines,
        o.signatures.is_some(),
        o.share_key.is_some(),
    )
}

/// Every entry under `dir` (hidden ones too), sorted, with its stamp (directories' too: a
/// file removed changes its directory's). `dir` itself first (without a stamp when missing).
fn tree_stamps(dir: &Utf8Path) -> Vec<(Utf8PathBuf, Option<Stamp>)> {
    let mut paths = vec![dir.to_owned()];
    let mut dirs = vec![dir.to_owned()];
    while let Some(d) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(path) = Utf8PathBuf::from_path_buf(e.path()) else {
                // A name that is not UTF-8 is still an entry: kept by what can be shown.
                paths.push(Utf8PathBuf::from(e.path().to_string_lossy().as_ref()));
                continue;
            };
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push(path.clone());
            }
            paths.push(path);
        }
    }
    // By text: comparing paths component by component was most of a re-check's time with
    // 20,000 baselines.
    paths.sort_unstable_by(|a, b| a.as_str().cmp(b.as_str()));
    let stamps: Vec<Option<Stamp>> = paths.par_iter().map(|p| stamp_of(p)).collect();
    paths.into_iter().zip(stamps).collect()
}

#[cfg(test)]
#[path = "run_record_tests.rs"]
mod tests;
