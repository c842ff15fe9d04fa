//! `otlp-json`: OTLP/JSON trace exports — `ExportTraceServiceRequest` / `TracesData` documents,
//! one per file or one per line (the OpenTelemetry Collector's `file` exporter) — read into the
//! shared span model. Ids may be hex or base64, times numbers or numeric strings, attribute
//! values OTLP `AnyValue`s (`intValue` as a string included).

use serde_json::{Map, Value};

use super::{ReadSpans, Span, hex_id, nanos};
use crate::ingest::IngestOutcome;

/// A plain JSON value of an OTLP `AnyValue`.
fn any_value(v: &Value) -> Value {
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

fn attributes(list: Option<&Value>) -> Map<String, Value> {
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
}

impl Sink<'_> {
    /// Adds one span (its own small JSON value; the document is never held as one).
    fn span(&mut self, s: &Value) {
        self.n += 1;
        let n = self.n;
        let position = format!("{}, span {n}", self.at);
        let id = |key: &str, bytes| {
            s.get(key)
                .and_then(Value::as_str)
                .and_then(|t| hex_id(t, bytes))
        };
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
        self.read.spans.push(Span {
            trace_id,
            span_id: id("spanId", 8).unwrap_or_else(|| format!("span{n:012}")),
            parent_id: id("parentSpanId", 8),
            name: (s.get("name").and_then(Value::as_str).unwrap_or("")).to_owned(),
            start_ns: nanos(s.get("startTimeUnixNano")),
            end_ns: nanos(s.get("endTimeUnixNano")),
            attrs: attributes(s.get("attributes")),
            read: Default::default(),
            error: is_error.then(|| {
                (status
                    .and_then(|st| st.get("message"))
                    .and_then(Value::as_str))
                .unwrap_or("error")
                .to_owned()
            }),
        });
    }
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
                (Level::ResourceSpans, "scopeSpans" | "instrumentationLibrarySpans") => {
                    Some(Level::ScopeSpans)
                }
                (Level::ScopeSpans, "spans") => Some(Level::Spans),
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
    let mut sink = Sink {
        at,
        read,
        outcome,
        n: 0,
        found: false,
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
        let mut one = IngestOutcome::default();
        let before = read.spans.len();
        match collect(
            line.as_bytes(),
            &format!("line {}", i + 1),
            &mut read,
            &mut one,
        ) {
            Ok(()) => outcome.problems.extend(one.problems),
            Err(e) => {
                read.spans.truncate(before);
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
