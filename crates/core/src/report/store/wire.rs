//! The encoding of a result row (`postcard`, compact and positional): whole, and its leading
//! fields ([`RowHead`]) read by themselves, fast, for the suite-level passes.
//!
//! The layout is internal: it may change between versions (the cache's context includes the
//! tool version and [`WIRE_VERSION`]). It is the [`RowHead`] fields, then the rest of the row.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::baseline::UsageRecord;
use crate::diff::{DriftCategory, DriftFinding};
use crate::oracle::{OracleResult, Verdict};
use crate::privacy::lint::Finding;
use crate::report::usage::RunUsage;
use crate::report::{ResultRow, RowError, RowErrorKind, RowVerdict, Source};
use crate::scenario::Risk;

/// The version of the encoding, part of the result cache's context.
pub(crate) const WIRE_VERSION: u32 = 8;

/// The leading fields of an encoded row: everything the suite-level passes read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowHead<'a> {
    /// Scenario id.
    #[serde(borrow)]
    pub scenario: Option<&'a str>,
    /// Case.
    #[serde(borrow)]
    pub case: Option<&'a str>,
    /// The trial.
    #[serde(borrow)]
    pub trial: Option<&'a str>,
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
    /// What the run used and cost.
    #[serde(with = "usage_wire")]
    pub usage: Option<RunUsage>,
    /// What its approved baseline used.
    #[serde(with = "approved_wire")]
    pub approved_usage: Option<UsageRecord>,
}

/// [`RunUsage`] as seven integers (its JSON form leaves some out).
mod usage_wire {
    use super::RunUsage;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// Its fields in declaration order (an array is a tuple on the wire: no length).
    type Fields = [u64; 7];

    pub(super) fn serialize<S: Serializer>(u: &Option<RunUsage>, s: S) -> Result<S::Ok, S::Error> {
        (u.map(|u| -> Fields {
            [
                u.requests,
                u.input_tokens,
                u.output_tokens,
                u.unmetered,
                u.cost_nanos,
                u.uncosted,
                u.priced,
            ]
        }))
        .serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<RunUsage>, D::Error> {
        Ok(Option::<Fields>::deserialize(d)?.map(from))
    }

    pub(super) fn from(f: Fields) -> RunUsage {
        let [
            requests,
            input_tokens,
            output_tokens,
            unmetered,
            cost_nanos,
            uncosted,
            priced,
        ] = f;
        RunUsage {
            requests,
            input_tokens,
            output_tokens,
            unmetered,
            cost_nanos,
            uncosted,
            priced,
        }
    }
}

/// [`UsageRecord`] as integers, its cost in nano-dollars.
mod approved_wire {
    use super::UsageRecord;
    use crate::report::usage::{nanos, usd};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    type Fields = (u64, u64, u64, Option<u64>);

    pub(super) fn serialize<S: Serializer>(
        u: &Option<UsageRecord>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        (u.map(|u| -> Fields {
            (
                u.input_tokens,
                u.output_tokens,
                u.requests,
                u.cost_usd.map(nanos),
            )
        }))
        .serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<UsageRecord>, D::Error> {
        Ok(Option::<Fields>::deserialize(d)?.map(from))
    }

    pub(super) fn from((input_tokens, output_tokens, requests, cost): Fields) -> UsageRecord {
        UsageRecord {
            input_tokens,
            output_tokens,
            requests,
            cost_usd: cost.map(usd),
        }
    }
}

#[derive(Serialize, Deserialize)]
struct OracleWire<'a> {
    kind: &'a str,
    index: Option<u64>,
    verdict: Verdict,
    score: f64,
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
pub(crate) fn head_of(row: &ResultRow) -> RowHead<'_> {
    RowHead {
        scenario: row.scenario.as_deref(),
        case: row.case.as_deref(),
        trial: row.trial.as_deref(),
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
        usage: row.usage,
        approved_usage: row.approved_usage,
    }
}

/// Encodes a row (every field, including the cited events and privacy findings that the JSON
/// report leaves out).
pub(crate) fn encode(row: &ResultRow) -> Box<[u8]> {
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
                score: o.score,
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
            category: e.category.as_str(),
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
pub(crate) enum DecodeError {
    /// The row does not decode.
    #[error("not an encoded result row: {0}")]
    Row(#[from] postcard::Error),
    /// Its leading fields do not decode.
    #[error("not an encoded result row: its leading fields are truncated or malformed")]
    Head,
}

/// Decodes the leading fields of an encoded row, without allocating (unless it has warnings).
///
/// Strings, options and flags by hand, as they are simple and suite-level passes decode every
/// row's head (several times faster than serde); the enum fields through serde itself
/// (`postcard`), so that a variant added to [`RowVerdict`], [`Source`] or [`Risk`] decodes like
/// any other, never as an error. It reads exactly the layout `#[derive(Serialize)]` writes for
/// [`RowHead`] in postcard (a test holds the two together, for every variant): `Option` as a
/// 0/1 byte, `bool` as a 0/1 byte, strings and sequences as a LEB128 length then their contents.
pub(crate) fn decode_head(bytes: &[u8]) -> Result<RowHead<'_>, DecodeError> {
    head_by_hand(&mut Cursor { bytes, at: 0 }).ok_or(DecodeError::Head)
}

/// The length of an encoded row's leading fields ([`RowHead`]), if they decode: the prefix that
/// [`decode_head`] and [`sort_key`] read, which may be held apart from the rest of the row.
pub(crate) fn head_len(bytes: &[u8]) -> Option<usize> {
    let mut c = Cursor { bytes, at: 0 };
    head_by_hand(&mut c)?;
    Some(c.at)
}

fn head_by_hand<'a>(c: &mut Cursor<'a>) -> Option<RowHead<'a>> {
    Some(RowHead {
        scenario: c.option(Cursor::str)?,
        case: c.option(Cursor::str)?,
        trial: c.option(Cursor::str)?,
        path: c.option(Cursor::str)?,
        baseline: c.option(Cursor::str)?,
        content_hash: c.option(Cursor::str)?,
        verdict: c.serde()?,
        source: c.serde()?,
        risk: c.option(Cursor::serde)?,
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
        usage: c.option(|c| {
            let mut f = [0u64; 7];
            for v in &mut f {
                *v = c.varint()?;
            }
            Some(usage_wire::from(f))
        })?,
        approved_usage: c.option(|c| {
            let (i, o, r) = (c.varint()?, c.varint()?, c.varint()?);
            Some(approved_wire::from((i, o, r, c.option(Cursor::varint)?)))
        })?,
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

    /// A value through its own serde `Deserialize` (the enums: exhaustive by construction).
    fn serde<T: serde::de::DeserializeOwned>(&mut self) -> Option<T> {
        let rest = self.bytes.get(self.at..)?;
        let (value, left) = postcard::take_from_bytes::<T>(rest).ok()?;
        self.at = self.bytes.len() - left.len();
        Some(value)
    }
}

/// Decodes a whole row. Every encoded byte must be used.
pub(crate) fn decode(bytes: &[u8]) -> Result<ResultRow, DecodeError> {
    let wire: Wire = postcard::from_bytes(bytes)?;
    let h = wire.head;
    Ok(ResultRow {
        scenario: h.scenario.map(str::to_owned),
        case: h.case.map(str::to_owned),
        trial: h.trial.map(str::to_owned),
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
                score: o.score,
                message: o.message.to_owned(),
                evidence: o.evidence.into_owned(),
                expected: json_value(o.expected),
                found: json_value(o.found),
                misconfigured: o.misconfigured,
                // Only compositions read it, while judging: a stored row is judged already.
                unjudged: false,
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
            // A kind this build does not know (a newer cache) reads as an internal error.
            category: RowErrorKind::parse(e.category).unwrap_or(RowErrorKind::Internal),
            message: e.message.to_owned(),
            line: e.line.map(|l| l as usize),
        }),
        warnings: h.warnings.into_owned(),
        usage: h.usage,
        approved_usage: h.approved_usage,
        cited_events: wire
            .cited
            .iter()
            .filter_map(|t| serde_json::from_str(t).ok())
            .collect(),
        privacy: wire.privacy.into_owned(),
    })
}

/// A row's place in the report: scenario id, case, trial, then path, bytewise (absent ones
/// empty, so first), read without decoding the rest; the trial as its
/// [`crate::trace::trial::sort_key`] when the row has one. Every row's head decodes (see
/// `head_unchecked`); one that did not would sort first, as its empty head does.
pub(super) fn sort_key(bytes: &[u8]) -> [Cow<'_, [u8]>; 4] {
    let none = || std::array::from_fn(|_| Cow::Borrowed(&b""[..]));
    let mut c = Cursor { bytes, at: 0 };
    let mut key: [Cow<'_, [u8]>; 4] = none();
    for (i, k) in key.iter_mut().enumerate() {
        match c.option(Cursor::bytes) {
            Some(Some(s)) if i == 2 => *k = Cow::Owned(crate::trace::trial::sort_key(Some(s))),
            Some(Some(s)) => *k = Cow::Borrowed(s),
            Some(None) => {}
            None => return none(),
        }
    }
    key
}

// Rows are only built by `encode`, or from bytes whose head decoded (the result cache, whose
// entries are also hash-checked). Should a row still not decode, it becomes
// an error row rather than a panic.
pub(super) fn head_unchecked(bytes: &[u8]) -> RowHead<'_> {
    decode_head(bytes).unwrap_or(RowHead {
        scenario: None,
        case: None,
        trial: None,
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
        usage: None,
        approved_usage: None,
    })
}

pub(super) fn decode_unchecked(bytes: &[u8]) -> ResultRow {
    decode(bytes).unwrap_or_else(|e| {
        let head = head_unchecked(bytes);
        ResultRow {
            scenario: head.scenario.map(str::to_owned),
            case: head.case.map(str::to_owned),
            trial: head.trial.map(str::to_owned),
            risk: head.risk,
            blocking: true,
            error: Some(RowError {
                category: RowErrorKind::Internal,
                message: format!(
                    "{e}; delete the result cache (`.tracereplay/cache`) and run again"
                ),
                line: None,
            }),
            ..ResultRow::blank(head.path.map(str::to_owned), head.source)
        }
    })
}
