//! `otlp-proto`: OTLP protobuf trace exports — an `ExportTraceServiceRequest` (the same bytes as
//! a `TracesData`), as an OpenTelemetry Collector's `otlp_proto` marshaler writes each object —
//! read into the shared span model exactly as their OTLP/JSON form is read by [`super::otlp`]:
//! ids as lowercase hex, attribute values as the same plain JSON values (`bytesValue` as Base64,
//! as OTLP/JSON spells it), the error status with its message.

use base64::Engine as _;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use prost::Message as _;
use serde_json::{Map, Value};

use super::{ReadSpans, Span};
use crate::ingest::IngestOutcome;

/// The status code of an error (`STATUS_CODE_ERROR`).
const STATUS_ERROR: i32 = 2;

/// A plain JSON value of an OTLP `AnyValue`, as [`super::otlp`] makes of its JSON form.
pub(super) fn any_value(v: &AnyValue) -> Value {
    use any_value::Value as V;
    match &v.value {
        Some(V::StringValue(s)) => Value::String(s.clone()),
        Some(V::BoolValue(b)) => Value::Bool(*b),
        Some(V::IntValue(i)) => Value::from(*i),
        Some(V::DoubleValue(d)) => Value::from(*d),
        Some(V::ArrayValue(a)) => Value::Array(a.values.iter().map(any_value).collect()),
        Some(V::KvlistValue(kv)) => Value::Object(attributes(&kv.values)),
        Some(V::BytesValue(b)) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        _ => Value::Null,
    }
}

pub(super) fn attributes(list: &[KeyValue]) -> Map<String, Value> {
    (list.iter())
        .map(|kv| {
            let value = kv.value.as_ref().map(any_value).unwrap_or(Value::Null);
            (kv.key.clone(), value)
        })
        .collect()
}

/// An id of `bytes` bytes as lowercase hex; `None` when absent (empty) or of another length.
pub(super) fn hex_id(raw: &[u8], bytes: usize) -> Option<String> {
    (raw.len() == bytes).then(|| {
        use std::fmt::Write as _;
        raw.iter()
            .fold(String::with_capacity(bytes * 2), |mut s, b| {
                let _ = write!(s, "{b:02x}");
                s
            })
    })
}

/// Calls `each` with the number and bytes of every length-delimited field of the message in
/// `buf` (other fields skipped); `Err` when `buf` is no protobuf message.
fn fields<'b>(
    mut buf: &'b [u8],
    each: &mut dyn FnMut(u32, &'b [u8]) -> Result<(), String>,
) -> Result<(), String> {
    use prost::encoding::{DecodeContext, WireType, decode_key, decode_varint, skip_field};
    while !buf.is_empty() {
        let (tag, wire) = decode_key(&mut buf).map_err(|e| e.to_string())?;
        if wire != WireType::LengthDelimited {
            skip_field(wire, tag, &mut buf, DecodeContext::default()).map_err(|e| e.to_string())?;
            continue;
        }
        let len = decode_varint(&mut buf).map_err(|e| e.to_string())?;
        let len = usize::try_from(len).ok().filter(|l| *l <= buf.len());
        let len = len.ok_or_else(|| "a field runs past the end of the message".to_owned())?;
        let (value, rest) = buf.split_at(len);
        each(tag, value)?;
        buf = rest;
    }
    Ok(())
}

/// Calls `each` with every span of a protobuf export (`ExportTraceServiceRequest`: its
/// `resource_spans`, their `scope_spans`, their `spans`), decoding one span at a time — the
/// request is never decoded whole, so memory holds one span, not the export's model.
fn for_each_span(
    bytes: &[u8],
    each: &mut dyn FnMut(opentelemetry_proto::tonic::trace::v1::Span),
) -> Result<(), String> {
    use opentelemetry_proto::tonic::trace::v1::Span as ProtoSpan;
    fields(bytes, &mut |field, resource_spans| {
        if field != 1 {
            return Ok(());
        }
        fields(resource_spans, &mut |field, scope_spans| {
            if field != 2 {
                return Ok(());
            }
            fields(scope_spans, &mut |field, span| {
                if field == 2 {
                    each(ProtoSpan::decode(span).map_err(|e| e.to_string())?);
                }
                Ok(())
            })
        })
    })
}

/// Whether `bytes` are a protobuf trace export holding a span.
pub(crate) fn is_trace_export(bytes: &[u8]) -> bool {
    let mut n = 0usize;
    for_each_span(bytes, &mut |_| n += 1).is_ok() && n > 0
}

/// The span model of protobuf span `s`, the `n`th of its message; `None` (rejected in
/// `outcome`) without a readable trace id.
fn span_of(
    s: opentelemetry_proto::tonic::trace::v1::Span,
    n: usize,
    outcome: &mut IngestOutcome,
) -> Option<Span> {
    let Some(trace_id) = hex_id(&s.trace_id, 16) else {
        outcome.reject(
            format!("message, span {n}"),
            "a span without a readable `traceId`",
        );
        return None;
    };
    let keys = s.attributes.iter().map(|kv| kv.key.as_str());
    super::warn_duplicate_keys(keys, &format!("message, span {n}"), outcome);
    let error = (s.status.as_ref())
        .filter(|st| st.code == STATUS_ERROR)
        .map(|st| match st.message.as_str() {
            "" => "error".to_owned(),
            m => m.to_owned(),
        });
    let mut span = Span {
        trace_id,
        span_id: hex_id(&s.span_id, 8).unwrap_or_else(|| format!("span{n:012}")),
        parent_id: hex_id(&s.parent_span_id, 8),
        name: s.name,
        start_ns: u128::from(s.start_time_unix_nano),
        end_ns: u128::from(s.end_time_unix_nano),
        attrs: attributes(&s.attributes),
        read: Default::default(),
        error,
    };
    // Content sent as span events (older conventions) joins the span's own attributes.
    let events: Vec<_> = (s.events.iter())
        .filter_map(|e| super::logs::span_event(&span, &e.name, attributes(&e.attributes)))
        .collect();
    super::logs::fold(&mut span, &events);
    Some(span)
}

/// Why bytes are not an export, as a rejection.
fn not_an_export(e: &str, outcome: &mut IngestOutcome) {
    outcome.reject(
        "message",
        format!("not an OTLP protobuf trace export (`ExportTraceServiceRequest`): {e}"),
    );
}

/// Reads one protobuf export. Bytes that do not decode as one are rejected as a whole.
pub(crate) fn read(bytes: &[u8], outcome: &mut IngestOutcome) -> ReadSpans {
    let mut read = ReadSpans::default();
    let mut found = IngestOutcome::default();
    let mut n = 0usize;
    let walked = for_each_span(bytes, &mut |s| {
        n += 1;
        read.spans.extend(span_of(s, n, &mut found));
    });
    match walked {
        Ok(()) => outcome.problems.append(&mut found.problems),
        Err(e) => {
            not_an_export(&e, outcome);
            read.spans.clear();
        }
    }
    read
}

/// Ingests one protobuf export as it is read ([`super::stream`]): a pass counting each trace's
/// spans, then one building each trace when its last span is read. What [`read`] then
/// [`super::ingest`] give, with memory for the open traces only.
pub(crate) fn ingest_streaming(
    bytes: &[u8],
    opts: &crate::ingest::IngestOptions,
    logs: &super::logs::LogIndex,
    outcome: &mut IngestOutcome,
) {
    let mut counts: std::collections::HashMap<String, usize> = Default::default();
    let counted = for_each_span(bytes, &mut |s| {
        if let Some(id) = hex_id(&s.trace_id, 16) {
            *counts.entry(id).or_default() += 1;
        }
    });
    if let Err(e) = counted {
        return not_an_export(&e, outcome);
    }
    let format = crate::ingest::InputFormat::OtlpProto;
    let mut stream = super::stream::Stream::new(format, opts.clone(), counts, logs.clone());
    let (mut built, mut n) = (IngestOutcome::default(), 0usize);
    let _ = for_each_span(bytes, &mut |s| {
        n += 1;
        let mut problems = IngestOutcome::default();
        if let Some(span) = span_of(s, n, &mut problems) {
            stream.push(span, &mut built);
        }
        built.problems.append(&mut problems.problems);
    });
    stream.finish(&mut built, outcome);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::{IngestOptions, InputFormat, ingest};
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;

    fn opts() -> IngestOptions {
        IngestOptions::for_tests(Some("export"))
    }

    /// The runs of an input as text, with the importer's name taken out of the header (the
    /// one thing the two encodings of one export are meant to differ in).
    fn runs(format: InputFormat, bytes: &[u8]) -> (Vec<String>, Vec<crate::ingest::IngestProblem>) {
        let outcome = ingest(format, bytes, &opts());
        let runs = (outcome.runs.iter())
            .map(|r| {
                let text = String::from_utf8(r.trace.bytes.clone()).unwrap();
                let (header, events) = text.split_once('\n').unwrap();
                let source = format!("\"source\":\"{}\"", format.name());
                assert!(header.contains(&source), "{header}");
                let footer_start = events.rfind("{\"kind\":\"footer\"").unwrap_or(events.len());
                format!(
                    "{}\n{}",
                    header.replace(&source, ""),
                    &events[..footer_start]
                )
            })
            .collect();
        (runs, outcome.problems)
    }

    /// `"kind": "SPAN_KIND_CLIENT"` and `"code": "STATUS_CODE_ERROR"` as their numbers.
    fn enums_as_numbers(v: &mut Value) {
        const NAMES: [(&str, i64); 9] = [
            ("SPAN_KIND_UNSPECIFIED", 0),
            ("SPAN_KIND_INTERNAL", 1),
            ("SPAN_KIND_SERVER", 2),
            ("SPAN_KIND_CLIENT", 3),
            ("SPAN_KIND_PRODUCER", 4),
            ("SPAN_KIND_CONSUMER", 5),
            ("STATUS_CODE_UNSET", 0),
            ("STATUS_CODE_OK", 1),
            ("STATUS_CODE_ERROR", 2),
        ];
        match v {
            Value::Object(o) => {
                for (k, inner) in o.iter_mut() {
                    let named = (matches!(k.as_str(), "kind" | "code"))
                        .then(|| inner.as_str())
                        .flatten()
                        .and_then(|s| NAMES.iter().find(|(n, _)| *n == s));
                    match named {
                        Some((_, n)) => *inner = Value::from(*n),
                        None => enums_as_numbers(inner),
                    }
                }
            }
            Value::Array(a) => a.iter_mut().for_each(enums_as_numbers),
            _ => {}
        }
    }

    #[test]
    fn protobuf_exports_read_as_their_json_form() {
        for (name, json) in [
            (
                "openinference",
                &include_bytes!("../../../../../tests/fixtures/ingest/openinference.otlp.json")[..],
            ),
            (
                "traceloop",
                include_bytes!("../../../../../tests/fixtures/ingest/traceloop.otlp.json"),
            ),
            (
                "vercel",
                include_bytes!("../../../../../tests/fixtures/ingest/vercel.otlp.json"),
            ),
            (
                "http-only",
                include_bytes!("../../../../../tests/fixtures/ingest/http-only.otlp.json"),
            ),
        ] {
            // The crate's serde mapping takes enums as numbers only.
            let mut doc: Value = serde_json::from_slice(json).unwrap();
            enums_as_numbers(&mut doc);
            let request: ExportTraceServiceRequest = serde_json::from_value(doc)
                .unwrap_or_else(|e| panic!("{name}: the OTLP/JSON mapping refuses it: {e}"));
            let proto = request.encode_to_vec();
            let (from_json, from_proto) = (
                runs(InputFormat::OtlpJson, json),
                runs(InputFormat::OtlpProto, &proto),
            );
            // Runs, or (`http-only`) the refusal of a trace with no agent event.
            assert!(!from_json.0.is_empty() || !from_json.1.is_empty(), "{name}");
            assert_eq!(from_json, from_proto, "{name}");
        }
    }

    #[test]
    fn streaming_a_protobuf_export_gives_what_reading_it_whole_gives() {
        let mut doc: Value =
            serde_json::from_slice(&super::super::otlp::tests::interleaved(30)).unwrap();
        enums_as_numbers(&mut doc);
        let request: ExportTraceServiceRequest = serde_json::from_value(doc).unwrap();
        let proto = request.encode_to_vec();
        let seen = |o: &IngestOutcome| -> Vec<(String, String, String)> {
            (o.runs.iter())
                .map(|r| {
                    (
                        r.scenario.clone(),
                        r.case.clone(),
                        r.trace.content_hash.clone(),
                    )
                })
                .collect()
        };
        let mut whole = IngestOutcome::default();
        let read = super::read(&proto, &mut whole);
        assert_eq!(
            read.spans.len(),
            90,
            "one span without a trace id is refused"
        );
        super::super::ingest(
            InputFormat::OtlpProto,
            read,
            &opts(),
            &Default::default(),
            &mut whole,
        );
        let mut streamed = IngestOutcome::default();
        super::ingest_streaming(&proto, &opts(), &Default::default(), &mut streamed);
        assert_eq!(seen(&streamed), seen(&whole));
        assert_eq!(streamed.runs.len(), 30);
        let problems = |o: &IngestOutcome| o.problems.len();
        assert_eq!(problems(&streamed), problems(&whole));
    }

    #[test]
    fn what_is_no_protobuf_export_is_refused_whole() {
        let outcome = ingest(
            InputFormat::OtlpProto,
            b"\xff\xff\xff not protobuf",
            &opts(),
        );
        assert!(outcome.runs.is_empty());
        let [p] = &outcome.problems[..] else {
            panic!("{:?}", outcome.problems)
        };
        assert!(
            p.rejected && p.message.contains("not an OTLP protobuf"),
            "{p:?}"
        );
        // A span with no trace id is refused alone, at its position.
        let mut request = ExportTraceServiceRequest::default();
        let span = opentelemetry_proto::tonic::trace::v1::Span {
            trace_id: vec![1; 16],
            span_id: vec![2; 8],
            name: "agent".into(),
            ..Default::default()
        };
        let lost = opentelemetry_proto::tonic::trace::v1::Span {
            trace_id: vec![],
            ..span.clone()
        };
        request
            .resource_spans
            .push(opentelemetry_proto::tonic::trace::v1::ResourceSpans {
                scope_spans: vec![opentelemetry_proto::tonic::trace::v1::ScopeSpans {
                    spans: vec![lost, span],
                    ..Default::default()
                }],
                ..Default::default()
            });
        let mut outcome = IngestOutcome::default();
        let read = read(&request.encode_to_vec(), &mut outcome);
        assert_eq!(read.spans.len(), 1);
        assert_eq!(read.spans[0].trace_id, "01".repeat(16));
        assert_eq!(outcome.problems[0].position, "message, span 1");
    }
}
