//! Result rows held encoded, so a suite's report costs memory in proportion to its encoded size
//! (a few hundred bytes per passing trace) rather than to tens of allocations per row, and past a
//! budget not even that: further rows go to a temporary file ([`Spill`]) and are read back one
//! at a time.
//!
//! A row is encoded once, by the worker that judged it, in `postcard` (compact, positional
//! serde). The same bytes are what the result cache stores, so a cache hit shares the bytes the
//! cache file was read into and decodes nothing. Counting and blocking read a few flags kept
//! decoded beside each row ([`RowMeta`]); sorting, the human report and the baseline passes read
//! only the leading fields ([`RowHead`], decoded by hand without allocating); the other renderers
//! decode one row at a time ([`Rows::iter`]) while they write.
//!
//! The wire layout is internal: it may change between versions (the cache's context includes
//! the tool version and [`WIRE_VERSION`]). It is the [`RowHead`] fields, then the rest of the
//! row.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};

use super::model::{ResultRow, RowError, RowVerdict, Source};
use crate::diff::{DriftCategory, DriftFinding};
use crate::oracle::{OracleResult, Verdict};
use crate::privacy::lint::Finding;
use crate::scenario::Risk;

/// The version of the encoding, part of the result cache's context.
pub const WIRE_VERSION: u32 = 2;

/// The leading fields of an encoded row: everything the suite-level passes read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowHead<'a> {
    /// Scenario id.
    #[serde(borrow)]
    pub scenario: Option<&'a str>,
    /// Case.
    #[serde(borrow)]
    pub case: Option<&'a str>,
    /// The trace (or scenario) file.
    #[serde(borrow)]
    pub path: Option<&'a str>,
    /// The approved baseline compared with.
    #[serde(borrow)]
    pub baseline: Option<&'a str>,
    /// The trace's verified content hash (what a partitioned run fingerprints its suite by).
    #[serde(borrow)]
    pub content_hash: Option<&'a str>,
    /// The verdict.
    pub verdict: RowVerdict,
    /// Where the evidence came from.
    pub source: Source,
    /// The scenario's risk.
    pub risk: Option<Risk>,
    /// Whether the scenario is a known gap.
    pub known_gap: bool,
    /// Whether the row makes the exit code 1.
    pub blocking: bool,
    /// Whether the trace was sealed.
    pub sealed: Option<bool>,
    /// Whether a drift finding is `new`.
    pub drift_new: bool,
    /// Whether a drift finding is anything but `new`.
    pub drift_other: bool,
    /// Whether the row carries privacy findings.
    pub has_privacy: bool,
    /// The row's warnings.
    #[serde(borrow)]
    pub warnings: Cow<'a, [String]>,
}

#[derive(Serialize, Deserialize)]
struct OracleWire<'a> {
    kind: &'a str,
    index: Option<u64>,
    verdict: Verdict,
    message: &'a str,
    evidence: Cow<'a, [u64]>,
    expected: Option<Cow<'a, str>>,
    found: Option<Cow<'a, str>>,
    misconfigured: bool,
}

#[derive(Serialize, Deserialize)]
struct DriftWire<'a> {
    category: DriftCategory,
    detail: &'a str,
    diff: Option<&'a str>,
    fails: bool,
}

#[derive(Serialize, Deserialize)]
struct ErrorWire<'a> {
    category: &'a str,
    message: &'a str,
    line: Option<u64>,
}

/// A whole row on the wire. JSON values (a failure's expected and found, cited events) travel as
/// JSON text: postcard has no self-describing values.
#[derive(Serialize, Deserialize)]
struct Wire<'a> {
    #[serde(borrow)]
    head: RowHead<'a>,
    scenario_file: Option<&'a str>,
    #[serde(borrow)]
    oracles: Vec<OracleWire<'a>>,
    #[serde(borrow)]
    drift: Vec<DriftWire<'a>>,
    #[serde(borrow)]
    error: Option<ErrorWire<'a>>,
    #[serde(borrow)]
    cited: Vec<Cow<'a, str>>,
    privacy: Cow<'a, [Finding]>,
}

fn json_text(v: &Option<Box<serde_json::Value>>) -> Option<Cow<'static, str>> {
    v.as_ref().map(|v| Cow::Owned(v.to_string()))
}

fn json_value(t: Option<Cow<'_, str>>) -> Option<Box<serde_json::Value>> {
    t.and_then(|t| serde_json::from_str(&t).ok())
}

/// The head of a row as it will be encoded.
pub fn head_of(row: &ResultRow) -> RowHead<'_> {
    RowHead {
        scenario: row.scenario.as_deref(),
        case: row.case.as_deref(),
        path: row.path.as_deref(),
        baseline: row.baseline.as_deref(),
        content_hash: row.content_hash.as_deref(),
        verdict: row.verdict,
        source: row.source,
        risk: row.risk,
        known_gap: row.known_gap,
        blocking: row.blocking,
        sealed: row.sealed,
        drift_new: row.drift.iter().any(|d| d.category == DriftCategory::New),
        drift_other: row.drift.iter().any(|d| d.category != DriftCategory::New),
        has_privacy: !row.privacy.is_empty(),
        warnings: Cow::Borrowed(&row.warnings),
    }
}

/// Encodes a row (every field, including the cited events and privacy findings that the JSON
/// report leaves out).
pub fn encode(row: &ResultRow) -> Box<[u8]> {
    let wire = Wire {
        head: head_of(row),
        scenario_file: row.scenario_file.as_deref(),
        oracles: row
            .oracles
            .iter()
            .map(|o| OracleWire {
                kind: &o.kind,
                index: o.index.map(|i| i as u64),
                verdict: o.verdict,
                message: &o.message,
                evidence: Cow::Borrowed(&o.evidence),
                expected: json_text(&o.expected),
                found: json_text(&o.found),
                misconfigured: o.misconfigured,
            })
            .collect(),
        drift: row
            .drift
            .iter()
            .map(|d| DriftWire {
                category: d.category,
                detail: &d.detail,
                diff: d.diff.as_deref(),
                fails: d.fails,
            })
            .collect(),
        error: row.error.as_ref().map(|e| ErrorWire {
            category: &e.category,
            message: &e.message,
            line: e.line.map(|l| l as u64),
        }),
        cited: row
            .cited_events
            .iter()
            .map(|v| Cow::Owned(v.to_string()))
            .collect(),
        privacy: Cow::Borrowed(&row.privacy),
    };
    postcard::to_allocvec(&wire)
        .expect("encoding into memory cannot fail")
        .into_boxed_slice()
}

/// Why bytes are not an encoded row (a corrupt or foreign cache entry).
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The row does not decode.
    #[error("not an encoded result row: {0}")]
    Row(#[from] postcard::Error),
    /// Its leading fields do not decode.
    #[error("not an encoded result row: its leading fields are truncated or malformed")]
    Head,
}

/// Decodes the leading fields of an encoded row, without allocating (unless it has warnings).
///
/// By hand, not through serde: suite-level passes decode every row's head, and this is several
/// times faster. It reads exactly the layout `#[derive(Serialize)]` writes for [`RowHead`] in
/// postcard (a test holds the two together): `Option` as a 0/1 byte, `bool` as a 0/1 byte,
/// strings and sequences as a LEB128 length then their contents, enum variants as a LEB128
/// index in declaration order.
pub fn decode_head(bytes: &[u8]) -> Result<RowHead<'_>, DecodeError> {
    head_by_hand(&mut Cursor { bytes, at: 0 }).ok_or(DecodeError::Head)
}

fn head_by_hand<'a>(c: &mut Cursor<'a>) -> Option<RowHead<'a>> {
    const VERDICTS: [RowVerdict; 3] = [RowVerdict::Pass, RowVerdict::Fail, RowVerdict::Error];
    const SOURCES: [Source; 3] = [Source::Trace, Source::Scenario, Source::Scripted];
    const RISKS: [Risk; 4] = [Risk::Low, Risk::Medium, Risk::High, Risk::Critical];
    Some(RowHead {
        scenario: c.option(Cursor::str)?,
        case: c.option(Cursor::str)?,
        path: c.option(Cursor::str)?,
        baseline: c.option(Cursor::str)?,
        content_hash: c.option(Cursor::str)?,
        verdict: c.variant(&VERDICTS)?,
        source: c.variant(&SOURCES)?,
        risk: c.option(|c| c.variant(&RISKS))?,
        known_gap: c.bool()?,
        blocking: c.bool()?,
        sealed: c.option(Cursor::bool)?,
        drift_new: c.bool()?,
        drift_other: c.bool()?,
        has_privacy: c.bool()?,
        warnings: match c.varint()? {
            0 => Cow::Borrowed(&[]),
            n => {
                let mut all = Vec::new();
                for _ in 0..n {
                    all.push(c.str()?.to_owned());
                }
                Cow::Owned(all)
            }
        },
    })
}

/// Reads postcard's primitives from the front of a buffer.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f).checked_shl(shift)?;
            if b & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }

    fn bool(&mut self) -> Option<bool> {
        match self.byte()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }

    fn option<T>(&mut self, read: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        match self.byte()? {
            0 => Some(None),
            1 => read(self).map(Some),
            _ => None,
        }
    }

    fn str(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.bytes()?).ok()
    }

    /// A string's bytes, not checked for UTF-8.
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let len = usize::try_from(self.varint()?).ok()?;
        let end = self.at.checked_add(len)?;
        let s = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(s)
    }

    fn variant<T: Copy>(&mut self, all: &[T]) -> Option<T> {
        all.get(usize::try_from(self.varint()?).ok()?).copied()
    }
}

/// Decodes a whole row. Every encoded byte must be used.
pub fn decode(bytes: &[u8]) -> Result<ResultRow, DecodeError> {
    let wire: Wire = postcard::from_bytes(bytes)?;
    let h = wire.head;
    Ok(ResultRow {
        scenario: h.scenario.map(str::to_owned),
        case: h.case.map(str::to_owned),
        path: h.path.map(str::to_owned),
        scenario_file: wire.scenario_file.map(str::to_owned),
        content_hash: h.content_hash.map(str::to_owned),
        risk: h.risk,
        verdict: h.verdict,
        source: h.source,
        sealed: h.sealed,
        known_gap: h.known_gap,
        blocking: h.blocking,
        oracles: wire
            .oracles
            .into_iter()
            .map(|o| OracleResult {
                kind: crate::oracle::canonical_type(o.kind)
                    .map_or_else(|| Cow::Owned(o.kind.to_owned()), Cow::Borrowed),
                index: o.index.map(|i| i as usize),
                verdict: o.verdict,
                message: o.message.to_owned(),
                evidence: o.evidence.into_owned(),
                expected: json_value(o.expected),
                found: json_value(o.found),
                misconfigured: o.misconfigured,
            })
            .collect(),
        baseline: h.baseline.map(str::to_owned),
        drift: wire
            .drift
            .into_iter()
            .map(|d| DriftFinding {
                category: d.category,
                detail: d.detail.to_owned(),
                diff: d.diff.map(str::to_owned),
                fails: d.fails,
            })
            .collect(),
        error: wire.error.map(|e| RowError {
            category: e.category.to_owned(),
            message: e.message.to_owned(),
            line: e.line.map(|l| l as usize),
        }),
        warnings: h.warnings.into_owned(),
        cited_events: wire
            .cited
            .iter()
            .filter_map(|t| serde_json::from_str(t).ok())
            .collect(),
        privacy: wire.privacy.into_owned(),
    })
}

/// One encoded row: its own allocation, a range of a buffer shared with other rows (the result
/// cache's file, read once, is never copied row by row), or a range of a file (rows beyond the
/// run's memory budget, see [`Spill`], and the rows of a result cache too large to read whole).
#[derive(Clone)]
pub struct RowBytes(Repr);

#[derive(Clone)]
enum Repr {
    Own(Box<[u8]>),
    Shared(Arc<Vec<u8>>, std::ops::Range<usize>),
    InFile(Arc<RowFile>, u64, u32),
}

impl RowBytes {
    /// `range` of a shared buffer (panics if it is out of bounds, which callers check).
    pub fn shared(buf: Arc<Vec<u8>>, range: std::ops::Range<usize>) -> RowBytes {
        assert!(range.end <= buf.len() && range.start <= range.end);
        RowBytes(Repr::Shared(buf, range))
    }

    /// `len` bytes of `file` at offset `at`, read when needed.
    pub fn in_file(file: Arc<RowFile>, at: u64, len: u32) -> RowBytes {
        RowBytes(Repr::InFile(file, at, len))
    }

    /// The bytes: borrowed when held in memory, read back when in a file. A file that can no
    /// longer be read gives no bytes, which decode as an error row, and marks itself
    /// ([`Rows::unreadable`]) so the run can fail rather than report from rows it lost.
    pub fn load(&self) -> Cow<'_, [u8]> {
        match &self.0 {
            Repr::Own(b) => Cow::Borrowed(b),
            Repr::Shared(buf, range) => Cow::Borrowed(&buf[range.clone()]),
            Repr::InFile(file, at, len) => Cow::Owned(file.read(*at, *len).unwrap_or_else(|_| {
                file.failed.store(true, Ordering::Relaxed);
                Vec::new()
            })),
        }
    }

    /// The length in bytes.
    fn len(&self) -> usize {
        match &self.0 {
            Repr::Own(b) => b.len(),
            Repr::Shared(_, range) => range.len(),
            Repr::InFile(_, _, len) => *len as usize,
        }
    }
}

impl From<Box<[u8]>> for RowBytes {
    fn from(b: Box<[u8]>) -> RowBytes {
        RowBytes(Repr::Own(b))
    }
}

impl PartialEq for RowBytes {
    fn eq(&self, other: &RowBytes) -> bool {
        self.load() == other.load()
    }
}

impl Eq for RowBytes {}

impl std::fmt::Debug for RowBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RowBytes({} bytes)", self.len())
    }
}

/// A file that holds encoded rows at known offsets, read (and, for the run's spill file,
/// appended to) from any thread.
#[derive(Debug)]
pub struct RowFile {
    file: std::fs::File,
    /// Where the next appended row goes.
    end: AtomicU64,
    /// A read failed.
    failed: std::sync::atomic::AtomicBool,
    /// Reads and writes that move the file position take turns (positioned I/O on Unix needs
    /// none).
    #[cfg(not(unix))]
    turn: std::sync::Mutex<()>,
}

impl RowFile {
    /// `file`, whose first `len` bytes are taken (appends go after them).
    pub fn new(file: std::fs::File, len: u64) -> RowFile {
        RowFile {
            file,
            end: AtomicU64::new(len),
            failed: std::sync::atomic::AtomicBool::new(false),
            #[cfg(not(unix))]
            turn: std::sync::Mutex::new(()),
        }
    }

    /// `len` bytes at offset `at`.
    pub fn read(&self, at: u64, len: u32) -> std::io::Result<Vec<u8>> {
        let mut buf = vec![0; len as usize];
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileExt;
            self.file.read_exact_at(&mut buf, at)?;
        }
        #[cfg(not(unix))]
        {
            use std::io::{Read, Seek, SeekFrom};
            let _turn = self.turn.lock().unwrap_or_else(|e| e.into_inner());
            (&self.file).seek(SeekFrom::Start(at))?;
            (&self.file).read_exact(&mut buf)?;
        }
        Ok(buf)
    }

    /// Appends `bytes`, returning their offset.
    fn append(&self, bytes: &[u8]) -> std::io::Result<u64> {
        let at = self.end.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileExt;
            self.file.write_all_at(bytes, at)?;
        }
        #[cfg(not(unix))]
        {
            use std::io::{Seek, SeekFrom, Write};
            let _turn = self.turn.lock().unwrap_or_else(|e| e.into_inner());
            (&self.file).seek(SeekFrom::Start(at))?;
            (&self.file).write_all(bytes)?;
        }
        Ok(at)
    }
}

/// Where a run's rows go: memory, up to a budget of encoded bytes, then an anonymous temporary
/// file (removed when the run ends), so memory stops growing with the suite. Which rows are
/// kept in memory depends on scheduling, but a row reads back as the same bytes wherever it is
/// held, so the report does not. Should the temporary file fail, rows stay in memory.
#[derive(Debug)]
pub struct Spill {
    budget: usize,
    held: AtomicUsize,
    file: std::sync::OnceLock<Option<Arc<RowFile>>>,
}

impl Spill {
    /// Rows held in memory until their encodings total `budget` bytes.
    pub fn new(budget: usize) -> Spill {
        Spill {
            budget,
            held: AtomicUsize::new(0),
            file: std::sync::OnceLock::new(),
        }
    }

    /// Encodes `row` and keeps it in memory or in the file.
    pub fn row(&self, row: &ResultRow) -> Row {
        Row {
            meta: RowMeta::of(&head_of(row)),
            bytes: self.keep(encode(row)),
        }
    }

    fn keep(&self, bytes: Box<[u8]>) -> RowBytes {
        let len = bytes.len();
        if self.held.fetch_add(len, Ordering::Relaxed) + len <= self.budget {
            return bytes.into();
        }
        self.held.fetch_sub(len, Ordering::Relaxed);
        let file = self.file.get_or_init(|| {
            let file = tempfile::tempfile().ok()?;
            Some(Arc::new(RowFile::new(file, 0)))
        });
        match (file, u32::try_from(len)) {
            (Some(file), Ok(len32)) => match file.append(&bytes) {
                Ok(at) => RowBytes::in_file(file.clone(), at, len32),
                Err(_) => bytes.into(),
            },
            _ => bytes.into(),
        }
    }
}

/// What the suite-level passes read of a row (counts, blocking, which rows need more), kept
/// decoded beside its bytes so those passes decode nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowMeta {
    /// The verdict.
    pub verdict: RowVerdict,
    /// Where the evidence came from.
    pub source: Source,
    /// The scenario's risk.
    pub risk: Option<Risk>,
    /// Whether the scenario is a known gap.
    pub known_gap: bool,
    /// Whether the row makes the exit code 1.
    pub blocking: bool,
    /// Whether the row names a scenario.
    pub has_scenario: bool,
    /// Whether a drift finding is `new`.
    pub drift_new: bool,
    /// Whether a drift finding is anything but `new`.
    pub drift_other: bool,
    /// Whether the row carries privacy findings.
    pub has_privacy: bool,
    /// Whether the row carries warnings.
    pub has_warnings: bool,
}

impl RowMeta {
    /// The meta of a row with this head.
    pub fn of(h: &RowHead<'_>) -> RowMeta {
        RowMeta {
            verdict: h.verdict,
            source: h.source,
            risk: h.risk,
            known_gap: h.known_gap,
            blocking: h.blocking,
            has_scenario: h.scenario.is_some(),
            drift_new: h.drift_new,
            drift_other: h.drift_other,
            has_privacy: h.has_privacy,
            has_warnings: !h.warnings.is_empty(),
        }
    }
}

/// One row: its encoding and its meta.
#[derive(Debug, Clone)]
pub struct Row {
    bytes: RowBytes,
    meta: RowMeta,
}

impl Row {
    /// Encodes `row`.
    pub fn new(row: &ResultRow) -> Row {
        Row {
            bytes: encode(row).into(),
            meta: RowMeta::of(&head_of(row)),
        }
    }

    /// An encoding this tool made, with its meta (taken on trust: a row that does not decode
    /// shows as an error row).
    pub(crate) fn trusted(bytes: RowBytes, meta: RowMeta) -> Row {
        Row { bytes, meta }
    }

    /// The encoding.
    pub fn bytes(&self) -> &RowBytes {
        &self.bytes
    }

    fn head<R>(&self, f: impl FnOnce(RowHead<'_>) -> R) -> R {
        f(head_unchecked(&self.bytes.load()))
    }

    fn decode(&self) -> ResultRow {
        decode_unchecked(&self.bytes.load())
    }
}

/// Result rows, each held encoded. Equality compares the encodings, which are deterministic.
#[derive(Clone, Default)]
pub struct Rows(Vec<Row>);

impl PartialEq for Rows {
    fn eq(&self, other: &Rows) -> bool {
        self.0.len() == other.0.len()
            && self.0.iter().zip(&other.0).all(|(a, b)| a.bytes == b.bytes)
    }
}

impl Eq for Rows {}

impl Rows {
    /// Rows built by [`Row::new`] or [`Row::trusted`].
    pub(crate) fn from_rows(rows: Vec<Row>) -> Rows {
        Rows(rows)
    }

    /// Appends a row.
    pub fn push(&mut self, row: &ResultRow) {
        self.0.push(Row::new(row));
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Each row's meta, in order.
    pub fn metas(&self) -> impl Iterator<Item = RowMeta> + '_ {
        self.0.iter().map(|r| r.meta)
    }

    /// Whether a row held in a file could not be read back (so a report rendered from these
    /// rows showed it as an error it was not).
    pub fn unreadable(&self) -> bool {
        (self.0.iter())
            .any(|r| matches!(&r.bytes.0, Repr::InFile(f, ..) if f.failed.load(Ordering::Relaxed)))
    }

    /// The longest scenario id and case, in bytes (at least 1, the width of `-`), read without
    /// decoding the rows.
    pub fn key_widths(&self) -> (usize, usize) {
        let mut widths = (1, 1);
        for r in &self.0 {
            let [scenario, case, _] = sort_key(&r.bytes.load()).map(<[u8]>::len);
            widths = (widths.0.max(scenario), widths.1.max(case));
        }
        widths
    }

    /// Calls `f` with each row's index and head, in order (decoded without allocating; a row
    /// held in a file is read back, one at a time).
    pub fn for_each_head(&self, mut f: impl FnMut(usize, RowHead<'_>)) {
        for (i, r) in self.0.iter().enumerate() {
            r.head(|h| f(i, h));
        }
    }

    /// Calls `f` with the head of row `i`.
    pub fn with_head<R>(&self, i: usize, f: impl FnOnce(RowHead<'_>) -> R) -> R {
        self.0[i].head(f)
    }

    /// Row `i`, decoded.
    pub fn get(&self, i: usize) -> ResultRow {
        self.0[i].decode()
    }

    /// Replaces row `i`.
    pub fn set(&mut self, i: usize, row: &ResultRow) {
        self.0[i] = Row::new(row);
    }

    /// Each row, decoded one at a time.
    pub fn iter(&self) -> impl Iterator<Item = ResultRow> + '_ {
        self.0.iter().map(Row::decode)
    }

    /// Sorts by scenario id, case, then path (bytewise); stable.
    pub fn sort(&mut self) {
        // Only the three leading strings are read, as bytes (their order is `str`'s order), and
        // the rows usually arrive in order already (a suite laid out as `SCENARIO/CASE.trace…`
        // is discovered in it), which one pass tells.
        // Checked pair by pair, so rows held in a file are never all read into memory for it.
        use rayon::prelude::*;
        let in_order = (self.0.par_windows(2))
            .all(|pair| sort_key(&pair[0].bytes.load()) <= sort_key(&pair[1].bytes.load()));
        if in_order {
            return;
        }
        let keys: Vec<[Cow<'_, [u8]>; 3]> = (self.0.par_iter())
            .map(|r| match r.bytes.load() {
                Cow::Borrowed(bytes) => sort_key(bytes).map(Cow::Borrowed),
                Cow::Owned(bytes) => sort_key(&bytes).map(|k| Cow::Owned(k.to_vec())),
            })
            .collect();
        let mut order: Vec<usize> = (0..self.0.len()).collect();
        order.sort_by(|&a, &b| keys[a].cmp(&keys[b]));
        drop(keys);
        let mut slots: Vec<Option<Row>> =
            std::mem::take(&mut self.0).into_iter().map(Some).collect();
        self.0 = order.into_iter().filter_map(|i| slots[i].take()).collect();
    }

    /// Appends every row of `other`.
    pub fn append(&mut self, other: Rows) {
        self.0.extend(other.0);
    }
}

/// A row's place in the report: scenario id, case, then path, bytewise (absent ones empty, so
/// first), read without decoding the rest. Every row's head decodes (see `head_unchecked`); one
/// that did not would sort first, as its empty head does.
fn sort_key(bytes: &[u8]) -> [&[u8]; 3] {
    const NONE: [&[u8]; 3] = [b"", b"", b""];
    let mut c = Cursor { bytes, at: 0 };
    let mut key = NONE;
    for k in &mut key {
        match c.option(Cursor::bytes) {
            Some(Some(s)) => *k = s,
            Some(None) => {}
            None => return NONE,
        }
    }
    key
}

// Rows are only built by `encode`, or from bytes whose head decoded (the result cache, whose
// entries are also hash-checked). Should a row still not decode, it becomes
// an error row rather than a panic.
fn head_unchecked(bytes: &[u8]) -> RowHead<'_> {
    decode_head(bytes).unwrap_or(RowHead {
        scenario: None,
        case: None,
        path: None,
        baseline: None,
        content_hash: None,
        verdict: RowVerdict::Error,
        source: Source::Trace,
        risk: None,
        known_gap: false,
        blocking: true,
        sealed: None,
        drift_new: false,
        drift_other: false,
        has_privacy: false,
        warnings: Cow::Borrowed(&[]),
    })
}

fn decode_unchecked(bytes: &[u8]) -> ResultRow {
    decode(bytes).unwrap_or_else(|e| {
        let head = head_unchecked(bytes);
        ResultRow {
            scenario: head.scenario.map(str::to_owned),
            case: head.case.map(str::to_owned),
            risk: head.risk,
            blocking: true,
            error: Some(RowError {
                category: "internal".into(),
                message: format!(
                    "{e}; delete the result cache (`.tracereplay/cache`) and run again"
                ),
                line: None,
            }),
            ..ResultRow::blank(head.path.map(str::to_owned), head.source)
        }
    })
}

impl FromIterator<ResultRow> for Rows {
    fn from_iter<I: IntoIterator<Item = ResultRow>>(iter: I) -> Rows {
        Rows(iter.into_iter().map(|r| Row::new(&r)).collect())
    }
}

impl std::fmt::Debug for Rows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for Rows {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

/// Each row is encoded as soon as it is read, so a report read back (by `merge`) never holds its
/// rows decoded all at once.
impl<'de> Deserialize<'de> for Rows {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Rows, D::Error> {
        struct Encoding;
        impl<'de> serde::de::Visitor<'de> for Encoding {
            type Value = Rows;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of result rows")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Rows, A::Error> {
                let mut rows = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 12));
                while let Some(row) = seq.next_element::<ResultRow>()? {
                    rows.push(Row::new(&row));
                }
                Ok(Rows(rows))
            }
        }
        deserializer.deserialize_seq(Encoding)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn full_row() -> ResultRow {
        let mut fail = OracleResult::fail(
            "called `x` 2 times",
            vec![3, 9],
            json!({"tool": "x", "at_most": 1}),
            json!([1, 2]),
        )
        .typed("max-tool-calls", Some(0));
        fail.misconfigured = true;
        ResultRow {
            scenario: Some("s.one".into()),
            case: Some("c1".into()),
            path: Some("traces/a.trace.ndjson.zst".into()),
            scenario_file: Some("traces/s.scenario.json".into()),
            content_hash: Some("b3:00".into()),
            risk: Some(Risk::Critical),
            verdict: RowVerdict::Fail,
            source: Source::Trace,
            sealed: Some(true),
            known_gap: true,
            blocking: true,
            oracles: vec![
                fail,
                OracleResult::pass("ok", vec![1]).typed("unknown:Odd", Some(1)),
                OracleResult::pass("the run completed", vec![]).typed("run-completed", None),
            ],
            baseline: Some("baselines/s.one/c1.baseline.json".into()),
            drift: vec![
                DriftFinding {
                    category: DriftCategory::New,
                    detail: "new".into(),
                    diff: None,
                    fails: false,
                },
                DriftFinding {
                    category: DriftCategory::ToolCallsChanged,
                    detail: "moved".into(),
                    diff: Some("-a\n+b\n".into()),
                    fails: true,
                },
            ],
            error: Some(RowError {
                category: "malformed".into(),
                message: "line 3".into(),
                line: Some(3),
            }),
            warnings: vec!["w1".into(), "w2".into()],
            cited_events: vec![json!({"seq": 3, "kind": "tool_call"})],
            privacy: vec![Finding {
                file: "a".into(),
                line: Some(2),
                kind: "openai-key".into(),
                fingerprint: Some("b3:abc".into()),
                prefix: Some("sk-p".into()),
                message: "m".into(),
                fails: true,
            }],
        }
    }

    #[test]
    fn a_row_survives_encoding_whole() {
        let row = full_row();
        let bytes = encode(&row);
        assert_eq!(decode(&bytes).unwrap(), row);
        let head = decode_head(&bytes).unwrap();
        assert_eq!(head, head_of(&row));
        assert!(head.drift_new && head.drift_other && head.has_privacy);
        // Canonical oracle types come back borrowed, others owned, as the oracles make them.
        let back = decode(&bytes).unwrap();
        assert!(matches!(back.oracles[0].kind, Cow::Borrowed(_)));
        assert_eq!(back.oracles[1].kind, "unknown:Odd");
    }

    #[test]
    fn a_blank_row_survives_too() {
        let row = ResultRow::blank(None, Source::Trace);
        assert_eq!(decode(&encode(&row)).unwrap(), row);
        assert_eq!(sort_key(&encode(&row)), [b"", b"", b""]);
    }

    /// The hand-written head decoder reads exactly what serde writes, for every variant.
    #[test]
    fn the_head_decoder_agrees_with_serde() {
        use crate::scenario::Risk;
        let mut rows = Vec::new();
        for (i, verdict) in [RowVerdict::Pass, RowVerdict::Fail, RowVerdict::Error]
            .into_iter()
            .enumerate()
        {
            for (j, source) in [Source::Trace, Source::Scenario, Source::Scripted]
                .into_iter()
                .enumerate()
            {
                let risks = [None, Some(Risk::Low), Some(Risk::Medium), Some(Risk::High)];
                let mut row = full_row();
                row.verdict = verdict;
                row.source = source;
                row.risk = if i + j == 0 {
                    Some(Risk::Critical)
                } else {
                    risks[(i + j) % 4]
                };
                row.sealed = [None, Some(false), Some(true)][j];
                row.known_gap = i % 2 == 0;
                row.blocking = j % 2 == 0;
                row.scenario = (i != 1).then(|| "é".repeat(70 * (j + 1)));
                row.case = (j != 2).then(|| format!("case-{i}{j}"));
                row.path = None;
                row.warnings = (0..i).map(|k| format!("w{k}")).collect();
                rows.push(row);
            }
        }
        for row in &rows {
            let bytes = encode(row);
            let by_serde = postcard::take_from_bytes::<RowHead>(&bytes).unwrap().0;
            assert_eq!(decode_head(&bytes).unwrap(), by_serde);
            assert_eq!(by_serde, head_of(row));
            let field = |f: Option<&str>| f.unwrap_or("").as_bytes().to_vec();
            assert_eq!(
                sort_key(&bytes).map(<[u8]>::to_vec),
                [
                    field(by_serde.scenario),
                    field(by_serde.case),
                    field(by_serde.path)
                ]
            );
            // Any truncation of the head is refused, never misread.
            let head_len = bytes.len()
                - postcard::take_from_bytes::<RowHead>(&bytes)
                    .unwrap()
                    .1
                    .len();
            for cut in 0..head_len {
                assert!(decode_head(&bytes[..cut]).is_err(), "cut at {cut}");
            }
        }
    }

    #[test]
    fn truncated_or_foreign_bytes_are_refused() {
        let bytes = encode(&full_row());
        assert!(decode(&bytes[..bytes.len() - 1]).is_err());
        assert!(decode(&[0xff; 7]).is_err());
        assert!(decode_head(&[0xff, 0xff]).is_err());
        // A row whose head decodes but whose body does not is an error row, never a panic.
        let cut = RowBytes::shared(bytes.to_vec().into(), 0..bytes.len() - 4);
        let meta = RowMeta::of(&decode_head(&cut.load()).unwrap());
        let rows = Rows::from_rows(vec![Row::trusted(cut, meta)]);
        let row = rows.get(0);
        assert_eq!(row.verdict, RowVerdict::Error);
        assert_eq!(row.scenario.as_deref(), Some("s.one"));
        assert_eq!(row.error.unwrap().category, "internal");
    }

    /// Past the budget, rows go to the spill file, and read back (heads, sort, whole) exactly
    /// as rows held in memory.
    #[test]
    fn rows_beyond_the_budget_go_to_a_file_and_read_back_the_same() {
        let rows = || {
            (0..5).map(|i| {
                let mut r = full_row();
                r.case = Some(format!("c{}", 4 - i));
                r
            })
        };
        let spill = Spill::new(encode(&full_row()).len());
        let spilled: Vec<Row> = rows().map(|r| spill.row(&r)).collect();
        assert!(matches!(spilled[0].bytes.0, Repr::Own(_)), "room for one");
        assert!(
            (spilled[1..].iter()).all(|r| matches!(r.bytes.0, Repr::InFile(..))),
            "{spilled:?}"
        );
        let mut on_disk = Rows::from_rows(spilled);
        let mut in_memory: Rows = rows().collect();
        on_disk.sort();
        in_memory.sort();
        assert!(on_disk == in_memory);
        assert_eq!(
            serde_json::to_string(&on_disk).unwrap(),
            serde_json::to_string(&in_memory).unwrap()
        );
        on_disk.with_head(0, |h| assert_eq!(h.case, Some("c0")));
        assert_eq!(on_disk.get(4).case.as_deref(), Some("c4"));
    }

    /// A row that cannot be read back shows as an error row and marks the rows unreadable, so
    /// the run fails instead of reporting from what it lost.
    #[test]
    fn a_row_lost_from_its_file_is_never_a_pass() {
        let file = Arc::new(RowFile::new(tempfile::tempfile().unwrap(), 0));
        let mut row = full_row();
        row.verdict = RowVerdict::Pass;
        let meta = RowMeta::of(&head_of(&row));
        let len = encode(&row).len() as u32;
        let rows = Rows::from_rows(vec![Row::trusted(RowBytes::in_file(file, 0, len), meta)]);
        assert!(!rows.unreadable());
        assert_eq!(rows.get(0).verdict, RowVerdict::Error);
        assert!(rows.unreadable());
    }

    #[test]
    fn rows_sort_by_scenario_case_path_and_serialize_as_a_list() {
        let mut a = full_row();
        a.scenario = Some("b".into());
        let mut b = full_row();
        b.scenario = Some("a".into());
        b.case = Some("z".into());
        let mut c = full_row();
        c.scenario = Some("a".into());
        c.case = Some("y".into());
        let mut d = c.clone();
        d.path = Some("a.trace.ndjson".into());
        let mut e = full_row();
        e.scenario = None;
        e.case = Some("zz".into());
        let mut rows: Rows = vec![a, b, c, d, e].into_iter().collect();
        rows.sort();
        assert_eq!(rows.key_widths(), (1, 2), "`-` for no scenario, `zz`");
        let mut keys: Vec<(Option<String>, Option<String>, Option<String>)> = Vec::new();
        rows.for_each_head(|_, h| {
            let own = |s: Option<&str>| s.map(str::to_owned);
            keys.push((own(h.scenario), own(h.case), own(h.path)));
        });
        let path = full_row().path;
        let keys: Vec<_> = (keys.iter())
            .map(|(s, c, p)| (s.as_deref(), c.as_deref(), p.as_deref()))
            .collect();
        assert_eq!(
            keys,
            [
                (None, Some("zz"), path.as_deref()),
                (Some("a"), Some("y"), Some("a.trace.ndjson")),
                (Some("a"), Some("y"), path.as_deref()),
                (Some("a"), Some("z"), path.as_deref()),
                (Some("b"), Some("c1"), path.as_deref()),
            ]
        );
        let json = serde_json::to_value(&rows).unwrap();
        assert_eq!(json.as_array().unwrap().len(), 5);
        assert_eq!(json[1]["case"], "y");
        let back: Rows = serde_json::from_value(json).unwrap();
        assert_eq!(back.len(), 5);
        assert_eq!(back.get(1).case.as_deref(), Some("y"));
    }
}
