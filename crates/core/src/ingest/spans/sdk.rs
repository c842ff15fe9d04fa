//! `otel-spans`: OpenTelemetry SDK span JSON (`ReadableSpan.to_json()`, as the Python
//! `ConsoleSpanExporter` prints it and as tools such as any-agent save it): one span object, a
//! list of them, a `{"spans": [...]}` envelope, or several of these one after another. Ids are
//! decimal integers (128-bit trace ids kept exact) or `0x` hex; kinds `SpanKind.X` or plain;
//! times nanoseconds or ISO-8601.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{ReadSpans, Span, hex_id, nanos_counted};
use crate::ingest::IngestOutcome;

#[derive(Deserialize)]
struct Context {
    trace_id: Box<RawValue>,
    span_id: Box<RawValue>,
}

#[derive(Deserialize)]
struct SdkSpan {
    #[serde(default)]
    name: String,
    context: Option<Context>,
    parent: Option<Context>,
    parent_id: Option<Box<RawValue>>,
    start_time: Option<Value>,
    end_time: Option<Value>,
    status: Option<Value>,
    #[serde(default)]
    attributes: Map<String, Value>,
}

/// An id written as a JSON string (hex, `0x` hex) or an exact JSON integer.
fn id_of(raw: &RawValue, bytes: usize) -> Option<String> {
    let text = raw.get().trim();
    if text.starts_with('"') {
        hex_id(&serde_json::from_str::<String>(text).ok()?, bytes)
    } else if text.bytes().all(|b| b.is_ascii_digit()) {
        hex_id(text, bytes)
    } else {
        None
    }
}

/// Whether a top-level JSON value looks like SDK span JSON.
pub(crate) fn looks_like(v: &Value) -> bool {
    let span = |s: &Value| s.get("context").is_some_and(|c| c.get("span_id").is_some());
    match v {
        Value::Array(items) => items.first().is_some_and(span),
        Value::Object(o) => {
            span(v)
                || (o.get("spans").and_then(Value::as_array))
                    .is_some_and(|s| s.first().is_some_and(span))
        }
        _ => false,
    }
}

fn error_of(status: Option<&Value>) -> Option<String> {
    let status = status?;
    let code = (status.get("status_code").or_else(|| status.get("code")))
        .and_then(Value::as_str)
        .unwrap_or("");
    let code = code.rsplit('.').next().unwrap_or(code);
    code.eq_ignore_ascii_case("error").then(|| {
        (status.get("description").and_then(Value::as_str))
            .filter(|d| !d.is_empty())
            .unwrap_or("error")
            .to_owned()
    })
}

fn push_span(raw: &RawValue, position: String, read: &mut ReadSpans, outcome: &mut IngestOutcome) {
    let span: SdkSpan = match serde_json::from_str(raw.get()) {
        Ok(s) => s,
        Err(e) => {
            outcome.reject(
                position,
                format!(
                    "not an OpenTelemetry SDK span: {}",
                    crate::trace::json::message_without_position(&e)
                ),
            );
            return;
        }
    };
    let Some(context) = &span.context else {
        outcome.reject(
            position,
            "a span without `context` (its trace and span ids)",
        );
        return;
    };
    let Some(trace_id) = id_of(&context.trace_id, 16) else {
        outcome.reject(position, "a span whose `context.trace_id` is not an id");
        return;
    };
    let Some(span_id) = id_of(&context.span_id, 8) else {
        outcome.reject(position, "a span whose `context.span_id` is not an id");
        return;
    };
    let parent_id = (span.parent.as_ref().and_then(|p| id_of(&p.span_id, 8)))
        .or_else(|| span.parent_id.as_deref().and_then(|p| id_of(p, 8)));
    read.spans.push(Span {
        trace_id,
        span_id,
        parent_id,
        name: span.name,
        start_ns: nanos_counted(span.start_time.as_ref(), "start_time", outcome),
        end_ns: nanos_counted(span.end_time.as_ref(), "end_time", outcome),
        error: error_of(span.status.as_ref()),
        read: Default::default(),
        attrs: span.attributes,
    });
}

/// Reads SDK span JSON.
pub(crate) fn read(bytes: &[u8], outcome: &mut IngestOutcome) -> ReadSpans {
    let mut read = ReadSpans::default();
    let stream = serde_json::Deserializer::from_slice(bytes).into_iter::<Box<RawValue>>();
    let mut n = 0;
    for (d, doc) in stream.enumerate() {
        let at = format!("document {}", d + 1);
        let doc = match doc {
            Ok(doc) => doc,
            Err(e) => {
                outcome.reject(
                    format!("line {}, column {}", e.line(), e.column()),
                    format!(
                        "not JSON: {}",
                        crate::trace::json::message_without_position(&e)
                    ),
                );
                break;
            }
        };
        let mut span = |raw: &RawValue, read: &mut ReadSpans, outcome: &mut IngestOutcome| {
            n += 1;
            push_span(raw, format!("{at}, span {n}"), read, outcome);
        };
        let text = doc.get().trim_start();
        if text.starts_with('[') {
            match serde_json::from_str::<Vec<Box<RawValue>>>(doc.get()) {
                Ok(items) => items.iter().for_each(|s| span(s, &mut read, outcome)),
                Err(e) => outcome.reject(&at, format!("not a list of spans: {e}")),
            }
            continue;
        }
        match serde_json::from_str::<BTreeMap<String, Box<RawValue>>>(doc.get()) {
            Ok(o) if o.contains_key("spans") => {
                match serde_json::from_str::<Vec<Box<RawValue>>>(o["spans"].get()) {
                    Ok(items) => items.iter().for_each(|s| span(s, &mut read, outcome)),
                    Err(e) => outcome.reject(&at, format!("`spans` is not a list of spans: {e}")),
                }
                if let Some(f) = o.get("final_output") {
                    read.final_output = serde_json::from_str(f.get()).ok();
                }
            }
            Ok(_) => span(&doc, &mut read, outcome),
            Err(_) => outcome.reject(
                &at,
                "not a span, a list of spans or a `{\"spans\": [...]}` envelope",
            ),
        }
    }
    read
}
