//! The store of result rows: rows held encoded, so a suite's report costs memory in proportion to its encoded size
//! (a few hundred bytes per passing trace) rather than to tens of allocations per row, and past a
//! budget not even that: further rows go to a temporary file ([`Spill`]) and are read back one
//! at a time.
//!
//! A row is encoded once, by the worker that judged it, in `postcard` (compact, positional
//! serde). The same bytes are what the result cache stores, so a cache hit shares the bytes the
//! cache file was read into and decodes nothing. Counting and blocking read a few flags kept
//! decoded beside each row ([`RowMeta`]); sorting, the human report and the baseline passes read
//! only the leading fields ([`RowHead`]; the human report takes them as [`RowSummary`]s); the other renderers
//! decode one row at a time ([`Rows::iter`]) while they write.
//!
//! The report owns this store: the report holds [`Rows`], and renderers take plain
//! [`ResultRow`]s and [`RowSummary`]s from it, never bytes. The judging layer fills it (and the
//! result cache shares its bytes); nothing here knows judging.

mod spill;
mod wire;

use std::borrow::Cow;
use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};

pub(crate) use spill::{RowBytes, RowFile, Spill};
pub(crate) use wire::{RowHead, WIRE_VERSION, decode, decode_head, encode, head_len, head_of};
use wire::{decode_unchecked, head_unchecked, sort_key};

use crate::report::{ResultRow, RowSummary, RowVerdict, Source};
use crate::scenario::Risk;

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
pub(crate) struct Row {
    bytes: RowBytes,
    meta: RowMeta,
}

impl Row {
    /// Encodes `row`.
    pub(crate) fn new(row: &ResultRow) -> Row {
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
    pub(crate) fn bytes(&self) -> &RowBytes {
        &self.bytes
    }

    fn head<R>(&self, f: impl FnOnce(RowHead<'_>) -> R) -> R {
        f(head_unchecked(&self.bytes.head()))
    }

    fn decode(&self) -> ResultRow {
        decode_unchecked(&self.bytes.load())
    }

    /// The row's [`sort_key`], owned only when its head had to be read back from a file.
    fn sort_key(&self) -> SortKey<'_> {
        match self.bytes.head() {
            Cow::Borrowed(bytes) => sort_key(bytes),
            Cow::Owned(bytes) => sort_key(&bytes).map(|k| Cow::Owned(k.into_owned())),
        }
    }
}

/// Where a row sorts: scenario id, case, trial and path, as bytes ([`sort_key`]).
type SortKey<'r> = [Cow<'r, [u8]>; 4];

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
    pub(crate) fn unreadable(&self) -> bool {
        (self.0.iter()).any(|r| (r.bytes.file()).is_some_and(|f| f.failed.load(Ordering::Relaxed)))
    }

    /// `Err` when a row held in a file could not be read back: every renderer ends with this,
    /// so a report drawn from rows it lost fails as an I/O error (and a report file written
    /// atomically is left as it was) instead of showing those rows as errors they were not.
    pub(crate) fn readable(&self) -> std::io::Result<()> {
        if self.unreadable() {
            return Err(std::io::Error::other(
                "result rows kept in a temporary file could not be read back, so the report is incomplete; run again with a working temporary directory (or more `--row-memory`)",
            ));
        }
        Ok(())
    }

    /// The longest scenario id and case, in bytes (at least 1, the width of `-`), read without
    /// decoding the rows.
    pub fn key_widths(&self) -> (usize, usize) {
        let mut widths = (1, 1);
        for r in &self.0 {
            let bytes = r.bytes.head();
            let [scenario, case, ..] = sort_key(&bytes);
            widths = (widths.0.max(scenario.len()), widths.1.max(case.len()));
        }
        widths
    }

    /// Whether two neighbouring rows share their scenario and case (a case of several traces, or
    /// rows naming neither), read from the encodings without decoding them.
    pub(crate) fn repeats_a_case(&self) -> bool {
        !self.all_neighbours(|a, b| a[0] != b[0] || a[1] != b[1])
    }

    /// Whether `holds` holds for the sort keys of every two neighbouring rows. Each row is
    /// loaded (a row held in a file read back) and its key read once; chunks of rows in
    /// parallel, each also reading the key of the row after it.
    fn all_neighbours(&self, holds: impl Fn(&SortKey<'_>, &SortKey<'_>) -> bool + Sync) -> bool {
        use rayon::prelude::*;
        const CHUNK: usize = 4096;
        (self.0.par_chunks(CHUNK).enumerate()).all(|(at, chunk)| {
            let after = self.0.get((at + 1) * CHUNK);
            let mut keys = chunk.iter().chain(after).map(Row::sort_key);
            let Some(mut last) = keys.next() else {
                return true;
            };
            for key in keys {
                if !holds(&last, &key) {
                    return false;
                }
                last = key;
            }
            true
        })
    }

    /// Calls `f` with each row's index and head, in order (decoded without allocating; a row
    /// held in a file is read back, one at a time): for the suite-level passes.
    pub(crate) fn for_each_head(&self, mut f: impl FnMut(usize, RowHead<'_>)) {
        for (i, r) in self.0.iter().enumerate() {
            r.head(|h| f(i, h));
        }
    }

    /// Each row's leading fields as plain data, in order (a row held in a file is read back,
    /// one at a time).
    pub fn summaries(&self) -> impl Iterator<Item = RowSummary> + '_ {
        self.0.iter().map(|r| r.head(|h| RowSummary::from(h)))
    }

    /// Row `i`'s leading fields as plain data.
    pub fn summary(&self, i: usize) -> RowSummary {
        self.0[i].head(|h| RowSummary::from(h))
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

    /// Writes each row as `draw` draws it (given its index, decoded), in order. The rows are
    /// decoded and drawn in parallel, a window of rows at a time, so a report of any size is
    /// never held drawn whole; `out` gets one write per chunk of rows. The first error ends it.
    pub(crate) fn draw_in_order(
        &self,
        out: &mut dyn std::io::Write,
        draw: impl Fn(usize, &ResultRow, &mut Vec<u8>) -> std::io::Result<()> + Sync,
    ) -> std::io::Result<()> {
        use rayon::prelude::*;
        const CHUNK: usize = 256;
        const WINDOW: usize = 16 * CHUNK;
        for (w, window) in self.0.chunks(WINDOW).enumerate() {
            let drawn = (window.par_chunks(CHUNK).enumerate())
                .map(|(c, chunk)| {
                    let mut text = Vec::new();
                    for (k, row) in chunk.iter().enumerate() {
                        draw(w * WINDOW + c * CHUNK + k, &row.decode(), &mut text)?;
                    }
                    Ok(text)
                })
                .collect::<std::io::Result<Vec<Vec<u8>>>>()?;
            for text in drawn {
                out.write_all(&text)?;
            }
        }
        Ok(())
    }

    /// Sorts by scenario id, case, trial (in trial order), then path (bytewise); stable.
    pub fn sort(&mut self) {
        // Only the three leading strings are read, as bytes (their order is `str`'s order), and
        // the rows usually arrive in order already (a suite laid out as `SCENARIO/CASE.trace…`
        // is discovered in it), which one pass tells.
        // Checked pair by pair, so rows held in a file are never all read into memory for it.
        use rayon::prelude::*;
        if self.all_neighbours(|a, b| a <= b) {
            return;
        }
        let keys: Vec<SortKey<'_>> = self.0.par_iter().map(Row::sort_key).collect();
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

impl From<RowHead<'_>> for RowSummary {
    fn from(h: RowHead<'_>) -> RowSummary {
        RowSummary {
            scenario: h.scenario.map(str::to_owned),
            case: h.case.map(str::to_owned),
            trial: h.trial.map(str::to_owned),
            path: h.path.map(str::to_owned),
            baseline: h.baseline.map(str::to_owned),
            content_hash: h.content_hash.map(str::to_owned),
            verdict: h.verdict,
            source: h.source,
            risk: h.risk,
            known_gap: h.known_gap,
            blocking: h.blocking,
            sealed: h.sealed,
            drift_new: h.drift_new,
            drift_other: h.drift_other,
            warnings: h.warnings.into_owned(),
        }
    }
}

#[cfg(test)]
mod tests;
