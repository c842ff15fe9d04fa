//! `otlp-json`: OTLP/JSON trace exports — `ExportTraceServiceRequest` / `TracesData` documents,
//! one per file or one per line (the OpenTelemetry Collector's `file` exporter) — read into the
//! shared span model. Ids may be hex or base64, times numbers or numeric strings, attribute
//! values OTLP `AnyValue`s (`intValue` as a string included).

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::stream::Stream;
use super::{ReadSpans, Span, hex_id, nanos_counted};
use crate::ingest::IngestOutcome;

/// A plain JSON value of an OTLP `AnyValue`.
pub(super) fn any_value(v: &Value) -> Value {
    let Some(o) = v.as_object() else {
        return v.clone();
    };
    if let Some(s) = o.get("stringValue") {
        return s.clone();
    }
    if let Some(i) = o.get("intValue") {
        return match i {
            Value::String(s) => s
                .parse::<i64>()
                .map(Value::from)
                .unwrap_or_else(|_| i.clone()),
            other => other.clone(),
        };
    }
    if let Some(d) = o.get("doubleValue").or_else(|| o.get("boolValue")) {
        return d.clone();
    }
    if let Some(a) = o.get("arrayValue") {
        return Value::Array(
            (a.get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten())
            .map(any_value)
            .collect(),
        );
    }
    if let Some(kv) = o.get("kvlistValue") {
        return Value::Object(attributes(kv.get("values")));
    }
    if let Some(b) = o.get("bytesValue") {
        return b.clone();
    }
    Value::Null
}

pub(super) fn attributes(list: Option<&Value>) -> Map<String, Value> {
    (list.and_then(Value::as_array).into_iter().flatten())
        .filter_map(|kv| {
            Some((
                kv.get("key")?.as_str()?.to_owned(),
                any_value(kv.get("value").unwrap_or(&Value::Null)),
            ))
        })
        .collect()
}

/// Whether `doc` is an OTLP trace export.
pub(crate) fn is_export(doc: &Value) -> bool {
    doc.get("resourceSpans").is_some_and(Value::is_array)
}

/// Where the spans of one export document go while it is read (`at` names it in problems).
struct Sink<'r> {
    at: &'r str,
    read: &'r mut ReadSpans,
    outcome: &'r mut IngestOutcome,
    /// Spans seen, for positions and for spans without an id.
    n: usize,
    /// Whether the document has `resourceSpans`.
    found: bool,
    /// Where spans go instead of `read` when the export is ingested as it is read.
    mode: Mode<'r>,
}

/// What is done with each span read.
enum Mode<'r> {
    /// Kept in `read.spans`.
    Collect,
    /// Only counted, by trace id (the first pass of [`ingest_streaming`]).
    Count(&'r mut HashMap<String, usize>),
    /// Handed to the trace it belongs to, which is built once its last span is read.
    Build(&'r mut Stream),
}

impl Sink<'_> {
    /// Adds one span (its own small JSON value; the document is never held as one).
    fn span(&mut self, s: &Value) {
        self.n += 1;
        let n = self.n;
        let id = |key: &str, bytes| {
            s.get(key)
                .and_then(Value::as_str)
                .and_then(|t| hex_id(t, bytes))
        };
        if let Mode::Count(counts) = &mut self.mode {
            if let Some(t) = id("traceId", 16) {
                *counts.entry(t).or_default() += 1;
            }
            return;
        }
        let position = format!("{}, span {n}", self.at);
        let Some(trace_id) = id("traceId", 16) else {
            self.outcome
                .reject(position, "a span without a readable `traceId`");
            return;
        };
        let keys = (s
            .get("attributes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten())
        .filter_map(|kv| kv.get("key")?.as_str());
        super::warn_duplicate_keys(keys, &position, self.outcome);
        let status = s.get("status");
        let code = status.and_then(|st| st.get("code"));
        let is_error = matches!(code, Some(Value::String(c)) if c == "STATUS_CODE_ERROR")
            || matches!(code, Some(Value::Number(c)) if c.as_u64() == Some(2));
        let mut span = Span {
            trace_id,
            span_id: id("spanId", 8).unwrap_or_else(|| format!("span{n:012}")),
            parent_id: id("parentSpanId", 8),
            name: (s.get("name").and_then(Value::as_str).unwrap_or("")).to_owned(),
            start_ns: nanos_counted(
                s.get("startTimeUnixNano"),
                "startTimeUnixNano",
                self.outcome,
            ),
            end_ns: nanos_counted(s.get("endTimeUnixNano"), "endTimeUnixNano", self.outcome),
            attrs: attributes(s.get("attributes")),
            read: Default::default(),
            error: is_error.then(|| {
                (status
                    .and_then(|st| st.get("message"))
                    .and_then(Value::as_str))
                .unwrap_or("error")
                .to_owned()
            }),
        };
        // Content sent as span events (older conventions) joins the span's own attributes.
        let events = (s
            .get("events")
            .and_then(Value::as_array)
            .into_iter()
            .flatten())
        .filter_map(|e| {
            let name = e.get("name").and_then(Value::as_str)?;
            super::logs::span_event(&span, name, attributes(e.get("attributes")))
        })
        .collect::<Vec<_>>();
        super::logs::fold(&mut span, &events);
        match &mut self.mode {
            Mode::Build(stream) => stream.push(span, self.outcome),
            _ => self.read.spans.push(span),
        }
    }
}

/// One document of an OTLP/JSON input: where it is (`document`, `line 3`), its bytes, and where
/// and why it stops being JSON, when it does.
type Document<'b> = (String, &'b [u8], Option<(usize, String)>);

/// Ingests OTLP/JSON — one export document, or one per line — in two passes over its bytes:
/// the first counts each trace's spans, the second builds each trace as soon as its last span
/// is read. It gives what [`read`] then [`super::ingest`] give, in the same order, with memory
/// for the open traces only. A line that is not JSON is rejected whole, as [`read`] rejects it.
pub(crate) fn ingest_streaming(
    bytes: &[u8],
    opts: &crate::ingest::IngestOptions,
    logs: &super::logs::LogIndex,
    outcome: &mut IngestOutcome,
) -> bool {
    let (mut first, mut scratch) = (ReadSpans::default(), IngestOutcome::default());
    // The documents: the whole input, else its lines (each counted alone: a line that breaks
    // off counts for nothing, as `read` drops what it read of it). Log records are kept from
    // the first pass.
    let mut counts = HashMap::new();
    let whole = walk(
        bytes,
        "document",
        &mut first,
        &mut scratch,
        Mode::Count(&mut counts),
    );
    // Each document with why it is not JSON (from the first pass), when it is not.
    let docs: Vec<Document<'_>> = if whole.is_ok() {
        vec![("document".to_owned(), bytes, None)]
    } else {
        counts.clear();
        first = ReadSpans::default();
        let mut docs = Vec::new();
        for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let (mut one, mut line_read) = (HashMap::new(), ReadSpans::default());
            let at = format!("line {}", i + 1);
            let counted = walk(
                line,
                &at,
                &mut line_read,
                &mut scratch,
                Mode::Count(&mut one),
            );
            let broken = counted.err().map(|e| {
                let why = crate::trace::json::message_without_position(&e);
                (e.column(), why)
            });
            if broken.is_none() {
                for (k, n) in one {
                    *counts.entry(k).or_insert(0) += n;
                }
                first.logs.join(&line_read.logs);
            }
            docs.push((at, line, broken));
        }
        docs
    };
    let mut built = IngestOutcome::default();
    (first.logs).warn_unmatched(&|id| counts.contains_key(id), &mut built);
    first.logs.join(logs);
    let (format, opts) = (crate::ingest::InputFormat::OtlpJson, opts.clone());
    let mut stream = Stream::new(format, opts, counts, std::mem::take(&mut first.logs));
    for (at, text, broken) in &docs {
        match broken {
            // As `read` words it: the line and column where it stops being JSON.
            Some((column, why)) => {
                built.reject(format!("{at}, column {column}"), format!("not JSON: {why}"))
            }
            None => {
                let _ = walk(text, at, &mut first, &mut built, Mode::Build(&mut stream));
            }
        }
    }
    stream.finish(&mut built, outcome);
    true
}

/// The levels of an export document the reader walks into, streaming: the document, its
/// `resourceSpans`, their `scopeSpans` (or `instrumentationLibrarySpans`), their `spans`.
/// Everything else is skipped unparsed; only one span at a time is held as a JSON value.
#[derive(Clone, Copy)]
enum Level {
    Document,
    ResourceSpans,
    ScopeSpans,
    Spans,
}

struct Walk<'s, 'r> {
    sink: &'s mut Sink<'r>,
    level: Level,
}

impl<'de> serde::de::DeserializeSeed<'de> for Walk<'_, '_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Walk<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an OTLP trace export")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let inner = match (self.level, key.as_ref()) {
                (Level::Document, "resourceSpans") => {
                    self.sink.found = true;
                    Some(Level::ResourceSpans)
                }
                // A logs document (the collector's `file` exporter writes both signals to one
                // file): its content records are kept for the spans they name.
                (Level::Document, "resourceLogs") if !matches!(self.sink.mode, Mode::Build(_)) => {
                    self.sink.found = true;
                    let logs: Value = map.next_value()?;
                    let doc = serde_json::json!({ "resourceLogs": logs });
                    let (records, _) = super::logs::records_of(&doc);
                    self.sink.read.logs.extend(records);
                    continue;
                }
                (Level::ResourceSpans, "scopeSpans" | "instrumentationLibrarySpans") => {
                    Some(Level::ScopeSpans)
                }
                (Level::ScopeSpans, "spans") => Some(Level::Spans),
                (Level::Document, "resourceLogs") => {
                    self.sink.found = true;
                    None
                }
                _ => None,
            };
            match inner {
                Some(level) => map.next_value_seed(Walk {
                    sink: &mut *self.sink,
                    level,
                })?,
                None => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        match self.level {
            // Each span alone becomes a value.
            Level::Spans => {
                while let Some(span) = seq.next_element::<Value>()? {
                    self.sink.span(&span);
                }
            }
            // The elements of a list of resource or scope spans are objects one level down.
            Level::ResourceSpans | Level::ScopeSpans => {
                let level = self.level;
                while seq
                    .next_element_seed(Walk {
                        sink: &mut *self.sink,
                        level: match level {
                            Level::ResourceSpans => Level::ResourceSpans,
                            _ => Level::ScopeSpans,
                        },
                    })?
                    .is_some()
                {}
            }
            Level::Document => while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {},
        }
        Ok(())
    }

    // Any other value where a level was expected holds no spans.
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

/// Reads one export document from `text` into `read`, streaming; `Err` when it is not JSON.
fn collect(
    text: &[u8],
    at: &str,
    read: &mut ReadSpans,
    outcome: &mut IngestOutcome,
) -> Result<(), serde_json::Error> {
    walk(text, at, read, outcome, Mode::Collect)
}

/// Walks one export document, handing each span to `mode`.
fn walk<'r>(
    text: &[u8],
    at: &'r str,
    read: &'r mut ReadSpans,
    outcome: &'r mut IngestOutcome,
    mode: Mode<'r>,
) -> Result<(), serde_json::Error> {
    let mut sink = Sink {
        at,
        read,
        outcome,
        n: 0,
        found: false,
        mode,
    };
    let mut de = serde_json::Deserializer::from_slice(text);
    serde::de::DeserializeSeed::deserialize(
        Walk {
            sink: &mut sink,
            level: Level::Document,
        },
        &mut de,
    )?;
    de.end()?;
    if !sink.found {
        sink.outcome.reject(
            at,
            "not an OTLP trace export: no `resourceSpans` (OpenTelemetry SDK span JSON reads with `--from otel-spans`)",
        );
    }
    Ok(())
}

/// Reads OTLP/JSON: one document, or one document per line. Spans are read one at a time, so
/// memory is the spans' own model, never a JSON tree of the whole export.
pub(crate) fn read(bytes: &[u8], outcome: &mut IngestOutcome) -> ReadSpans {
    let mut read = ReadSpans::default();
    let mut whole = IngestOutcome::default();
    if collect(bytes, "document", &mut read, &mut whole).is_ok() {
        outcome.problems.extend(whole.problems);
        return read;
    }
    // Not one JSON document: JSON Lines, one document per line (what was read is dropped).
    read = ReadSpans::default();
    for (i, line) in String::from_utf8_lossy(bytes).lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (mut one, mut line_read) = (IngestOutcome::default(), ReadSpans::default());
        let at = format!("line {}", i + 1);
        match collect(line.as_bytes(), &at, &mut line_read, &mut one) {
            Ok(()) => {
                outcome.problems.extend(one.problems);
                read.spans.append(&mut line_read.spans);
                read.logs.join(&line_read.logs);
            }
            Err(e) => {
                outcome.reject(
                    format!("line {}, column {}", i + 1, e.column()),
                    format!(
                        "not JSON: {}",
                        crate::trace::json::message_without_position(&e)
                    ),
                );
            }
        }
    }
    read
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::ingest::{IngestOptions, InputFormat};

    /// What an outcome holds, comparably: each run's names and content hash, then the problems.
    fn seen(o: &IngestOutcome) -> (Vec<(String, String, String)>, Vec<String>) {
        let runs = (o.runs.iter())
            .map(|r| {
                (
                    r.scenario.clone(),
                    r.case.clone(),
                    r.trace.content_hash.clone(),
                )
            })
            .collect();
        let problems = o
            .problems
            .iter()
            .map(|p| format!("{}: {}", p.position, p.message))
            .collect();
        (runs, problems)
    }

    /// An export of `n` traces whose spans are interleaved (each trace's root last, as SDKs
    /// export them), one span without a trace id, and one trace's spans spread over the export.
    pub(crate) fn interleaved(n: usize) -> Vec<u8> {
        let kv = |k: &str, v: &str| serde_json::json!({"key": k, "value": {"stringValue": v}});
        let mut spans = Vec::new();
        for step in 0..3 {
            for t in 0..n {
                let tid = format!("{:032x}", t + 1);
                let id = |i: usize| format!("{:016x}", t * 16 + i + 1);
                let mut s = match step {
                    0 => {
                        serde_json::json!({"traceId": tid, "spanId": id(1), "parentSpanId": id(0), "name": "chat",
                        "startTimeUnixNano": format!("{}", 1_000 + t * 7 % 5), "endTimeUnixNano": "2000",
                        "attributes": [kv("gen_ai.operation.name", "chat"),
                            kv("gen_ai.output.messages", r#"[{"role":"assistant","parts":[{"type":"text","content":"hi"}]}]"#)]})
                    }
                    1 => {
                        serde_json::json!({"traceId": tid, "spanId": id(2), "parentSpanId": id(0), "name": "execute_tool t",
                        "startTimeUnixNano": "1500", "endTimeUnixNano": "1600",
                        "attributes": [kv("gen_ai.operation.name", "execute_tool"), kv("gen_ai.tool.name", "t"),
                            kv("gen_ai.tool.call.id", "c1")]})
                    }
                    _ => {
                        serde_json::json!({"traceId": tid, "spanId": id(0), "name": "invoke_agent a",
                        "startTimeUnixNano": "900", "endTimeUnixNano": "3000",
                        "attributes": [kv("gen_ai.operation.name", "invoke_agent"), kv("gen_ai.agent.name", "a")]})
                    }
                };
                if step == 1 && t == 0 {
                    s["attributes"]
                        .as_array_mut()
                        .unwrap()
                        .push(kv("gen_ai.tool.name", "t"));
                }
                spans.push(s);
            }
        }
        spans.push(serde_json::json!({"spanId": "0000000000000001", "name": "orphan"}));
        serde_json::to_vec(
            &serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}),
        )
        .unwrap()
    }

    #[test]
    fn streaming_gives_what_reading_whole_gives() {
        let opts = IngestOptions::for_tests(Some("export"));
        let fixtures = [
            "openinference.otlp.json",
            "vercel.otlp.json",
            "traceloop.otlp.json",
            "http-only.otlp.json",
        ];
        let mut inputs: Vec<Vec<u8>> = (fixtures.iter())
            .map(|f| {
                let p = format!(
                    "{}/tests/fixtures/ingest/{f}",
                    concat!(env!("CARGO_MANIFEST_DIR"), "/../..")
                );
                std::fs::read(p).unwrap()
            })
            .collect();
        inputs.push(interleaved(40));
        // JSON Lines: an export per line, one line broken off, a blank line.
        let mut lines = interleaved(3);
        lines.extend_from_slice(b"\n{\"resourceSpans\": [\n\n");
        lines.extend_from_slice(&inputs[1]);
        inputs.push(lines);
        for bytes in &inputs {
            let mut whole = IngestOutcome::default();
            let read = super::read(bytes, &mut whole);
            super::super::ingest(
                InputFormat::OtlpJson,
                read,
                &opts,
                &Default::default(),
                &mut whole,
            );
            let mut streamed = IngestOutcome::default();
            assert!(ingest_streaming(
                bytes,
                &opts,
                &Default::default(),
                &mut streamed
            ));
            assert_eq!(seen(&streamed), seen(&whole));
        }
        // 40 traces, each built, in the whole export's order.
        let mut streamed = IngestOutcome::default();
        assert!(ingest_streaming(
            &interleaved(40),
            &opts,
            &Default::default(),
            &mut streamed
        ));
        assert_eq!(streamed.runs.len(), 40);
    }
}
