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

/// The spans of one export document (`at` names it in problems).
fn collect(doc: &Value, at: &str, read: &mut ReadSpans, outcome: &mut IngestOutcome) {
    let Some(resource_spans) = doc.get("resourceSpans").and_then(Value::as_array) else {
        outcome.reject(
            at,
            "not an OTLP trace export: no `resourceSpans` (OpenTelemetry SDK span JSON reads with `--from otel-spans`)",
        );
        return;
    };
    let mut n = 0;
    for rs in resource_spans {
        let scopes = (rs.get("scopeSpans"))
            .or_else(|| rs.get("instrumentationLibrarySpans"))
            .and_then(Value::as_array);
        for ss in scopes.into_iter().flatten() {
            for s in (ss.get("spans").and_then(Value::as_array).into_iter()).flatten() {
                n += 1;
                let position = format!("{at}, span {n}");
                let id = |key: &str, bytes| {
                    s.get(key)
                        .and_then(Value::as_str)
                        .and_then(|t| hex_id(t, bytes))
                };
                let Some(trace_id) = id("traceId", 16) else {
                    outcome.reject(position, "a span without a readable `traceId`");
                    continue;
                };
                let status = s.get("status");
                let code = status.and_then(|st| st.get("code"));
                let is_error = matches!(code, Some(Value::String(c)) if c == "STATUS_CODE_ERROR")
                    || matches!(code, Some(Value::Number(c)) if c.as_u64() == Some(2));
                read.spans.push(Span {
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
    }
}

/// Reads OTLP/JSON: one document, or one document per line.
pub(crate) fn read(bytes: &[u8], outcome: &mut IngestOutcome) -> ReadSpans {
    let mut read = ReadSpans::default();
    match serde_json::from_slice::<Value>(bytes) {
        Ok(doc) => collect(&doc, "document", &mut read, outcome),
        Err(_) => {
            for (i, line) in String::from_utf8_lossy(bytes).lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                match serde_json::from_str::<Value>(line) {
                    Ok(doc) => collect(&doc, &format!("line {}", i + 1), &mut read, outcome),
                    Err(e) => outcome.reject(
                        format!("line {}, column {}", i + 1, e.column()),
                        format!(
                            "not JSON: {}",
                            crate::trace::json::message_without_position(&e)
                        ),
                    ),
                }
            }
        }
    }
    read
}
