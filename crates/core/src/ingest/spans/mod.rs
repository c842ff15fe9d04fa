//! OpenTelemetry spans, however they were dumped: OTLP/JSON exports (`otlp`, `--from
//! otlp-json`), OTLP protobuf exports (`proto`, `--from otlp-proto`) and OpenTelemetry SDK span JSON (`sdk`, `--from otel-spans`) read into one span
//! model, grouped into one run per trace id, ordered, and mapped to trace events by `map`,
//! which understands the GenAI semantic conventions, OpenInference, the Vercel AI SDK and
//! Traceloop/OpenLLMetry.
//!
//! Order: by start time, a parent before its children when they start together, then by span
//! id. Runs are ordered by their first span's start, then trace id.

mod dialects;
pub mod logs;
mod map;
mod messages;
pub(crate) mod otlp;
#[cfg(feature = "otlp-proto")]
pub(crate) mod proto;
pub(crate) mod sdk;
mod stream;

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value};

use super::{IngestOptions, IngestOutcome, InputFormat};

/// A span in the shared model: ids as lowercase hex, times in nanoseconds since the epoch,
/// attributes flattened to plain JSON values.
#[derive(Debug, Clone)]
pub struct Span {
    /// The trace id, lowercase hex.
    pub trace_id: String,
    /// The span id, lowercase hex.
    pub span_id: String,
    /// The parent span's id, when it has one.
    pub parent_id: Option<String>,
    /// The span's name.
    pub name: String,
    /// When it started, in nanoseconds since the epoch.
    pub start_ns: u128,
    /// When it ended, in nanoseconds since the epoch.
    pub end_ns: u128,
    /// Its attributes, flattened to plain JSON values.
    pub attrs: Map<String, Value>,
    /// The status message when the span's status is an error.
    pub error: Option<String>,
    /// The attributes the mapping looked at (the others are reported as ignored).
    pub read: std::cell::RefCell<std::collections::BTreeSet<String>>,
}

impl Span {
    /// An attribute, noted as read.
    pub(crate) fn get(&self, name: &str) -> Option<&Value> {
        let v = self.attrs.get(name);
        if v.is_some() {
            self.read.borrow_mut().insert(name.to_owned());
        }
        v
    }

    /// Whether an attribute is present (noted as read).
    pub(crate) fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Notes every attribute under `prefix.` as read.
    pub(crate) fn read_prefix(&self, prefix: &str) {
        let mut read = self.read.borrow_mut();
        for k in self.attrs.keys() {
            if k.strip_prefix(prefix).is_some_and(|r| r.starts_with('.')) {
                read.insert(k.clone());
            }
        }
    }

    /// The attributes nobody read.
    pub(crate) fn unread(&self) -> Vec<&str> {
        let read = self.read.borrow();
        (self.attrs.keys())
            .filter(|k| !read.contains(k.as_str()))
            .map(String::as_str)
            .collect()
    }

    /// A string attribute, the first of `names` present.
    pub(crate) fn str_attr(&self, names: &[&str]) -> Option<&str> {
        names
            .iter()
            .find_map(|n| self.get(n).and_then(Value::as_str))
            .filter(|s| !s.is_empty())
    }

    /// A count attribute (a number, or a string holding one).
    pub(crate) fn u64_attr(&self, names: &[&str]) -> Option<u64> {
        names.iter().find_map(|n| {
            self.get(n).and_then(|v| {
                v.as_u64()
                    .or_else(|| v.as_str().and_then(|t| t.trim().parse().ok()))
            })
        })
    }

    /// A non-negative amount attribute (a number, or a string holding one), the first present.
    pub(crate) fn amount_attr(&self, names: &[&str]) -> Option<f64> {
        names.iter().find_map(|n| {
            self.get(n).and_then(|v| {
                v.as_f64()
                    .or_else(|| v.as_str().and_then(|t| t.trim().parse().ok()))
                    .filter(|f: &f64| *f >= 0.0 && f.is_finite())
            })
        })
    }

    /// A JSON attribute that may be recorded as JSON text (decoded once; twice when the text
    /// holds JSON text, as Traceloop writes it).
    pub(crate) fn json_attr(&self, name: &str) -> Option<Value> {
        match self.get(name)? {
            Value::String(t) => match serde_json::from_str::<Value>(t).ok()? {
                Value::String(inner) => serde_json::from_str(&inner).ok(),
                v => Some(v),
            },
            other => Some(other.clone()),
        }
    }
}

/// Lowercase hex of an id written as hex (with or without `0x`), as a decimal integer, or as
/// base64 (OTLP's protobuf JSON mapping); `None` when it is none of these.
/// Warns at `position` of every attribute key a span gives more than once (OTLP requires them
/// unique): the last value is kept, as collectors keep it — and said, never silently.
pub(crate) fn warn_duplicate_keys<'k>(
    keys: impl Iterator<Item = &'k str>,
    position: &str,
    outcome: &mut IngestOutcome,
) {
    let mut seen: std::collections::BTreeSet<&str> = Default::default();
    let mut twice: std::collections::BTreeSet<&str> = Default::default();
    for k in keys {
        if !seen.insert(k) {
            twice.insert(k);
        }
    }
    if !twice.is_empty() {
        let names: Vec<String> = twice.iter().map(|k| format!("`{k}`")).collect();
        outcome.warn(
            position,
            format!(
                "attribute(s) {} given more than once; the last value of each is kept",
                names.join(", ")
            ),
        );
    }
}

pub(crate) fn hex_id(raw: &str, bytes: usize) -> Option<String> {
    let t = raw.trim();
    let t = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    if t.is_empty() {
        return None;
    }
    if t.len() == bytes * 2 && t.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Some(t.to_ascii_lowercase());
    }
    if raw.trim().starts_with("0x") && t.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Some(format!(
            "{:0>width$}",
            t.to_ascii_lowercase(),
            width = bytes * 2
        ));
    }
    if t.bytes().all(|b| b.is_ascii_digit()) {
        let n: u128 = t.parse().ok()?;
        return Some(format!("{n:0width$x}", width = bytes * 2));
    }
    base64_hex(t, bytes)
}

/// Hex of standard base64 text decoding to exactly `bytes` bytes.
fn base64_hex(t: &str, bytes: usize) -> Option<String> {
    let mut bits: u32 = 0;
    let mut n = 0;
    let mut out = Vec::new();
    for c in t.trim_end_matches('=').bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        bits = (bits << 6) | u32::from(v);
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push((bits >> n) as u8);
        }
    }
    (out.len() == bytes).then(|| out.iter().map(|b| format!("{b:02x}")).collect())
}

/// Nanoseconds from a number or a numeric string (OTLP), or an ISO-8601 timestamp (SDK JSON).
pub(crate) fn nanos(v: Option<&Value>) -> u128 {
    match v {
        Some(Value::Number(n)) => n
            .as_u64()
            .map(u128::from)
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u128))
            .unwrap_or(0),
        Some(Value::String(s)) => s.trim().parse::<u128>().unwrap_or_else(|_| iso_nanos(s)),
        _ => 0,
    }
}

/// [`nanos`] of a span's time field `field`, counting under `skipped:` a value that is there
/// but is no time (neither a number of nanoseconds nor a timestamp [`super::stamp`] reads):
/// never dropped silently.
pub(crate) fn nanos_counted(v: Option<&Value>, field: &str, outcome: &mut IngestOutcome) -> u128 {
    let read = nanos(v);
    let given = match v {
        Some(Value::String(s)) => !s.trim().is_empty(),
        Some(Value::Null) | None => false,
        Some(_) => true,
    };
    let numeric = matches!(v, Some(Value::String(s)) if s.trim().parse::<u128>().is_ok());
    if read == 0 && given && !numeric && !matches!(v, Some(Value::Number(_))) {
        *outcome
            .skipped
            .entry(format!("span `{field}` (not a time: refused)"))
            .or_default() += 1;
    }
    read
}

/// Nanoseconds of an ISO-8601 timestamp, keeping the sub-millisecond digits ([`super::stamp`]);
/// 0 (no time) for one refused or before 1970.
fn iso_nanos(s: &str) -> u128 {
    let Ok(t) = super::stamp::parse(s) else {
        return 0;
    };
    u128::try_from(t.ms).unwrap_or(0) * 1_000_000 + u128::from(t.sub_ms_ns)
}

/// Spans read from one input, with what could not be read.
#[derive(Debug, Default)]
pub struct ReadSpans {
    /// The spans, in the order read.
    pub spans: Vec<Span>,
    /// A run-level final output the dump carries beside its spans (any-agent's `final_output`).
    pub final_output: Option<Value>,
    /// Log records carrying its inferences' content (an OTLP/JSON input's logs documents).
    pub logs: logs::LogIndex,
}

/// Reads the spans of one input of a span format (OTLP/JSON, OTLP protobuf, SDK span JSON).
pub fn read(format: InputFormat, bytes: &[u8], outcome: &mut IngestOutcome) -> ReadSpans {
    match format {
        InputFormat::OtlpJson => otlp::read(bytes, outcome),
        #[cfg(feature = "otlp-proto")]
        InputFormat::OtlpProto => proto::read(bytes, outcome),
        #[cfg(not(feature = "otlp-proto"))]
        InputFormat::OtlpProto => {
            outcome.reject(
                "input",
                "this library was built without the `otlp-proto` feature (part of the command-line build) that reads OTLP protobuf",
            );
            ReadSpans::default()
        }
        _ => sdk::read(bytes, outcome),
    }
}

/// Ingests an OTLP export (JSON or protobuf) as it is read, trace by trace ([`stream`]);
/// `false`, with nothing done, for a format read whole first.
pub(crate) fn ingest_streaming(
    format: InputFormat,
    bytes: &[u8],
    opts: &IngestOptions,
    logs: &logs::LogIndex,
    outcome: &mut IngestOutcome,
) -> bool {
    match format {
        InputFormat::OtlpJson => otlp::ingest_streaming(bytes, opts, logs, outcome),
        #[cfg(feature = "otlp-proto")]
        InputFormat::OtlpProto => {
            proto::ingest_streaming(bytes, opts, logs, outcome);
            true
        }
        _ => false,
    }
}

/// Groups `read` spans by trace and builds one run per trace, each span given the content its
/// log records carry (`read`'s own, and `logs` from other inputs).
pub(crate) fn ingest(
    format: InputFormat,
    mut read: ReadSpans,
    opts: &IngestOptions,
    logs: &logs::LogIndex,
    outcome: &mut IngestOutcome,
) {
    let mut by_trace: BTreeMap<String, Vec<Span>> = BTreeMap::new();
    for s in read.spans {
        by_trace.entry(s.trace_id.clone()).or_default().push(s);
    }
    (read.logs).warn_unmatched(&|id| by_trace.contains_key(id), outcome);
    read.logs.join(logs);
    for spans in by_trace.values_mut() {
        read.logs.apply(spans);
    }
    let traces = (by_trace.into_iter())
        .map(|(id, spans)| (id, format, spans))
        .collect();
    build_traces(traces, read.final_output.as_ref(), opts, outcome);
}

/// Builds one run per trace (its id, the format it was read from, its spans), in order of their
/// first span's start, then trace id. `final_output` is a dump's own run-level output: it
/// belongs to its run only when the dump holds one.
pub fn build_traces(
    mut traces: Vec<(String, InputFormat, Vec<Span>)>,
    final_output: Option<&Value>,
    opts: &IngestOptions,
    outcome: &mut IngestOutcome,
) {
    for (_, _, spans) in &mut traces {
        order(spans);
    }
    traces.sort_by(|a, b| (a.2[0].start_ns, &a.0).cmp(&(b.2[0].start_ns, &b.0)));
    let single = traces.len() == 1;
    for (trace_id, format, spans) in &traces {
        let final_output = single.then_some(final_output).flatten();
        map::build_run(*format, trace_id, spans, final_output, opts, outcome);
    }
}

/// Orders a trace's spans: by start time, parents before children that start with them, then
/// by span id.
fn order(spans: &mut [Span]) {
    let parent: HashMap<String, Option<String>> = (spans.iter())
        .map(|s| (s.span_id.clone(), s.parent_id.clone()))
        .collect();
    let depth = |s: &Span| {
        let mut d = 0usize;
        let mut at = s.parent_id.clone();
        while let Some(p) = at {
            d += 1;
            if d > parent.len() {
                break; // a cycle, in hostile input
            }
            at = parent.get(&p).cloned().flatten();
        }
        d
    };
    let depths: HashMap<String, usize> = spans
        .iter()
        .map(|s| (s.span_id.clone(), depth(s)))
        .collect();
    spans.sort_by(|a, b| {
        (a.start_ns, depths[&a.span_id], &a.span_id).cmp(&(
            b.start_ns,
            depths[&b.span_id],
            &b.span_id,
        ))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_in_every_spelling() {
        assert_eq!(hex_id("0x895834072b15e659", 8).unwrap(), "895834072b15e659");
        assert_eq!(hex_id("895834072B15E659", 8).unwrap(), "895834072b15e659");
        assert_eq!(
            hex_id("12324293800750531911", 8).unwrap(),
            format!("{:016x}", 12_324_293_800_750_531_911u64)
        );
        assert_eq!(
            hex_id("100927429609276267646756448943279827607", 16).unwrap(),
            format!(
                "{:032x}",
                100_927_429_609_276_267_646_756_448_943_279_827_607u128
            )
        );
        // base64 of 8 bytes 01..08
        assert_eq!(hex_id("AQIDBAUGBwg=", 8).unwrap(), "0102030405060708");
        assert_eq!(hex_id("", 8), None);
        assert_eq!(hex_id("not an id!", 8), None);
    }

    #[test]
    fn times_as_numbers_strings_and_iso() {
        assert_eq!(
            nanos(Some(&Value::from(1_758_026_593_210_770_000u64))),
            1_758_026_593_210_770_000
        );
        assert_eq!(
            nanos(Some(&Value::from("1788792074027616000"))),
            1_788_792_074_027_616_000
        );
        assert_eq!(
            nanos(Some(&Value::from("2025-04-29T15:21:17.158552Z"))),
            1_745_940_077_158_552_000
        );
        // An offset without a colon is hours and minutes.
        assert_eq!(
            nanos(Some(&Value::from("2025-04-29T20:51:17.158552+0530"))),
            1_745_940_077_158_552_000
        );
    }

    #[test]
    fn a_time_that_is_no_time_is_counted_never_dropped_silently() {
        let mut outcome = IngestOutcome::default();
        let bad = Value::from("2026-02-31T00:00:00Z");
        assert_eq!(nanos_counted(Some(&bad), "start_time", &mut outcome), 0);
        let good = Value::from("2026-02-28T00:00:00Z");
        assert!(nanos_counted(Some(&good), "end_time", &mut outcome) > 0);
        assert_eq!(nanos_counted(None, "end_time", &mut outcome), 0);
        assert_eq!(
            outcome
                .skipped
                .get("span `start_time` (not a time: refused)"),
            Some(&1)
        );
        assert_eq!(outcome.skipped.len(), 1, "{:?}", outcome.skipped);
    }
}
