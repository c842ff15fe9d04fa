//! OTLP log records that carry what an inference span was asked and answered: the
//! `gen_ai.client.inference.operation.details` event (the GenAI conventions' way to send content
//! apart from the span, which the openai-v2 instrumentation does by default). Its attributes —
//! `gen_ai.input.messages`, `gen_ai.output.messages`, `gen_ai.system_instructions`… — belong to
//! the span the record names, and are read as if the span carried them (the span's own
//! attributes win), so content is hashed exactly as span content is.

use serde_json::{Map, Value};

use super::Span;

/// The event whose record carries an inference's content.
pub(crate) const DETAILS: &str = "gen_ai.client.inference.operation.details";

/// A log record of the details event: the span it belongs to and its attributes.
#[derive(Debug, Clone)]
pub(crate) struct LogRecord {
    pub(crate) trace_id: String,
    pub(crate) span_id: String,
    pub(crate) attrs: Map<String, Value>,
}

/// The event name of a record: its `eventName`, else its `event.name` attribute.
fn event_of(event_name: Option<&str>, attrs: &Map<String, Value>) -> String {
    (event_name.filter(|e| !e.is_empty()))
        .or_else(|| attrs.get("event.name").and_then(Value::as_str))
        .unwrap_or("")
        .to_owned()
}

/// The records of an OTLP/JSON logs export: (details records, other records).
pub(crate) fn read_json(bytes: &[u8]) -> Result<(Vec<LogRecord>, usize), String> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let resources = (doc.get("resourceLogs").and_then(Value::as_array))
        .ok_or("not an OTLP logs export: it has no `resourceLogs` list")?;
    let (mut kept, mut other) = (Vec::new(), 0);
    for r in resources {
        for scope in (r.get("scopeLogs").and_then(Value::as_array))
            .into_iter()
            .flatten()
        {
            for rec in (scope.get("logRecords").and_then(Value::as_array))
                .into_iter()
                .flatten()
            {
                let attrs = super::otlp::attributes(rec.get("attributes"));
                let event = event_of(rec.get("eventName").and_then(Value::as_str), &attrs);
                let id = |k: &str, n| {
                    rec.get(k)
                        .and_then(Value::as_str)
                        .and_then(|s| super::hex_id(s, n))
                };
                match (event == DETAILS, id("traceId", 16), id("spanId", 8)) {
                    (true, Some(trace_id), Some(span_id)) => kept.push(LogRecord {
                        trace_id,
                        span_id,
                        attrs,
                    }),
                    _ => other += 1,
                }
            }
        }
    }
    Ok((kept, other))
}

/// The records of an OTLP protobuf logs export (`ExportLogsServiceRequest`).
#[cfg(feature = "otlp-proto")]
pub(crate) fn read_proto(bytes: &[u8]) -> Result<(Vec<LogRecord>, usize), String> {
    use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
    use prost::Message as _;
    let request = ExportLogsServiceRequest::decode(bytes).map_err(|e| {
        format!("not an OTLP protobuf logs export (`ExportLogsServiceRequest`): {e}")
    })?;
    let (mut kept, mut other) = (Vec::new(), 0);
    for r in &request.resource_logs {
        for scope in &r.scope_logs {
            for rec in &scope.log_records {
                let attrs = super::proto::attributes(&rec.attributes);
                let event = event_of(Some(rec.event_name.as_str()), &attrs);
                let ids = (
                    super::proto::hex_id(&rec.trace_id, 16),
                    super::proto::hex_id(&rec.span_id, 8),
                );
                match (event == DETAILS, ids) {
                    (true, (Some(trace_id), Some(span_id))) => kept.push(LogRecord {
                        trace_id,
                        span_id,
                        attrs,
                    }),
                    _ => other += 1,
                }
            }
        }
    }
    Ok((kept, other))
}

/// Gives each span the attributes of the details records that name it, where it has none of
/// its own under that key.
pub(crate) fn merge(spans: &mut [Span], logs: &[LogRecord]) {
    for log in logs {
        if let Some(span) = spans
            .iter_mut()
            .find(|s| s.span_id == log.span_id && s.trace_id == log.trace_id)
        {
            for (k, v) in &log.attrs {
                if k != "event.name" {
                    span.attrs.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        }
    }
}
