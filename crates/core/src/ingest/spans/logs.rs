//! What an inference span was asked and answered when it is sent apart from the span's
//! attributes, in each generation of the GenAI conventions:
//!
//! - the `gen_ai.client.inference.operation.details` event (the current conventions; the
//!   openai-v2 instrumentation's default since late 2025), sent as a **log record** or a span
//!   event: its attributes — `gen_ai.input.messages`, `gen_ai.output.messages`,
//!   `gen_ai.system_instructions`… — are read as the span's own;
//! - the older **per-message events** `gen_ai.system.message`, `gen_ai.user.message`,
//!   `gen_ai.assistant.message`, `gen_ai.tool.message` (the input, one message each, in the order
//!   sent) and `gen_ai.choice` (the output), as log records with the message in their body (what
//!   the instrumentations emit without `OTEL_SEMCONV_STABILITY_OPT_IN`) or as span events with
//!   it in their attributes (or JSON text in `gen_ai.event.content`): they become the span's
//!   `gen_ai.input.messages` / `gen_ai.output.messages` (OpenAI-shaped messages, compact JSON)
//!   and `gen_ai.response.finish_reasons`;
//! - the first conventions' span events `gen_ai.content.prompt` / `gen_ai.content.completion`,
//!   whose `gen_ai.prompt` / `gen_ai.completion` attributes hold the messages as JSON text.
//!
//! The span's own attributes always win; a record adds only what the span lacks. Everything is
//! then mapped, and its content hashed, by the one span mapping, so a conversation sent as log
//! records is hashed exactly as one sent as span attributes — by `ingest` (log records in the
//! same file or another input of the command) and by `collect` alike.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::Span;

/// The event whose record carries an inference's content.
pub const DETAILS: &str = "gen_ai.client.inference.operation.details";

/// The older per-message events, with the role each stands for (`gen_ai.choice`: the output).
const PER_MESSAGE: [(&str, &str); 5] = [
    ("gen_ai.system.message", "system"),
    ("gen_ai.user.message", "user"),
    ("gen_ai.assistant.message", "assistant"),
    ("gen_ai.tool.message", "tool"),
    (CHOICE, "assistant"),
];

/// The per-message event of one output choice.
const CHOICE: &str = "gen_ai.choice";

/// The first conventions' events: event, the attribute holding the messages, the attribute it
/// stands for.
const WHOLE: [(&str, &str, &str); 2] = [
    (
        "gen_ai.content.prompt",
        "gen_ai.prompt",
        "gen_ai.input.messages",
    ),
    (
        "gen_ai.content.completion",
        "gen_ai.completion",
        "gen_ai.output.messages",
    ),
];

/// A record (or span event) of one of the events above: the span it belongs to, its event, its
/// attributes and its body.
#[derive(Debug, Clone)]
pub struct LogRecord {
    /// The trace id of the span it belongs to, lowercase hex.
    pub trace_id: String,
    /// The span id of the span it belongs to, lowercase hex.
    pub span_id: String,
    /// The event's name (`gen_ai.choice`, …).
    pub event: String,
    /// Its attributes, flattened to plain JSON values.
    pub attrs: Map<String, Value>,
    /// Its body.
    pub body: Value,
}

/// Whether records of `event` carry an inference's content.
fn carries_content(event: &str) -> bool {
    event == DETAILS
        || PER_MESSAGE.iter().any(|(e, _)| *e == event)
        || WHOLE.iter().any(|(e, _, _)| *e == event)
}

/// The event name of a record: its `eventName`, else its `event.name` attribute.
fn event_of(event_name: Option<&str>, attrs: &Map<String, Value>) -> String {
    (event_name.filter(|e| !e.is_empty()))
        .or_else(|| attrs.get("event.name").and_then(Value::as_str))
        .unwrap_or("")
        .to_owned()
}

/// A record of the span `(trace_id, span_id)`, when `event` carries content and the span is
/// named; `None` (an other record) otherwise.
fn record(
    ids: (Option<String>, Option<String>),
    event_name: Option<&str>,
    attrs: Map<String, Value>,
    body: Value,
) -> Option<LogRecord> {
    let event = event_of(event_name, &attrs);
    match ids {
        (Some(trace_id), Some(span_id)) if carries_content(&event) => Some(LogRecord {
            trace_id,
            span_id,
            event,
            attrs,
            body,
        }),
        _ => None,
    }
}

/// The records of one OTLP/JSON logs document (its `resourceLogs`): (records kept, others).
pub(crate) fn records_of(doc: &Value) -> (Vec<LogRecord>, usize) {
    let (mut kept, mut other) = (Vec::new(), 0);
    fn list<'v>(v: &'v Value, key: &str) -> &'v [Value] {
        v.get(key)
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }
    for r in list(doc, "resourceLogs") {
        for scope in list(r, "scopeLogs") {
            for rec in list(scope, "logRecords") {
                let id = |k: &str, n| {
                    (rec.get(k).and_then(Value::as_str)).and_then(|s| super::hex_id(s, n))
                };
                let attrs = super::otlp::attributes(rec.get("attributes"));
                let body = rec.get("body").map_or(Value::Null, super::otlp::any_value);
                let ids = (id("traceId", 16), id("spanId", 8));
                match record(
                    ids,
                    rec.get("eventName").and_then(Value::as_str),
                    attrs,
                    body,
                ) {
                    Some(r) => kept.push(r),
                    None => other += 1,
                }
            }
        }
    }
    (kept, other)
}

/// The records of an OTLP/JSON logs export: (records kept, other records).
pub fn read_json(bytes: &[u8]) -> Result<(Vec<LogRecord>, usize), String> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    if !doc.get("resourceLogs").is_some_and(Value::is_array) {
        return Err("not an OTLP logs export: it has no `resourceLogs` list".into());
    }
    Ok(records_of(&doc))
}

/// The records of an OTLP protobuf logs export (`ExportLogsServiceRequest`).
#[cfg(feature = "otlp-proto")]
pub fn read_proto(bytes: &[u8]) -> Result<(Vec<LogRecord>, usize), String> {
    use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
    use prost::Message as _;
    let request = ExportLogsServiceRequest::decode(bytes).map_err(|e| {
        format!("not an OTLP protobuf logs export (`ExportLogsServiceRequest`): {e}")
    })?;
    let (mut kept, mut other) = (Vec::new(), 0);
    for r in &request.resource_logs {
        for scope in &r.scope_logs {
            for rec in &scope.log_records {
                let ids = (
                    super::proto::hex_id(&rec.trace_id, 16),
                    super::proto::hex_id(&rec.span_id, 8),
                );
                let attrs = super::proto::attributes(&rec.attributes);
                let body = rec
                    .body
                    .as_ref()
                    .map_or(Value::Null, super::proto::any_value);
                match record(ids, Some(rec.event_name.as_str()), attrs, body) {
                    Some(r) => kept.push(r),
                    None => other += 1,
                }
            }
        }
    }
    Ok((kept, other))
}

/// A span event of `span` as a record, when it is one of the events above. A per-message
/// event's message is its attributes, or the JSON text of its `gen_ai.event.content`.
pub(crate) fn span_event(span: &Span, name: &str, attrs: Map<String, Value>) -> Option<LogRecord> {
    let body = match attrs.get("gen_ai.event.content") {
        Some(Value::String(t)) => serde_json::from_str(t).unwrap_or(Value::Null),
        Some(v) => v.clone(),
        None => Value::Object(attrs.clone()),
    };
    let ids = (Some(span.trace_id.clone()), Some(span.span_id.clone()));
    record(ids, Some(name), attrs, body)
}

/// A per-message event's message in OpenAI's shape: `{role, content?, tool_calls?,
/// tool_call_id?}` (`role` from the body, else the event's); written as compact JSON, keys sorted.
fn message(role: &str, body: &Value) -> Option<Value> {
    let mut m = Map::new();
    let role = body.get("role").and_then(Value::as_str).unwrap_or(role);
    m.insert("role".into(), Value::from(role));
    let mut said = false;
    for (from, to) in [("content", "content"), ("tool_calls", "tool_calls")] {
        if let Some(v) = body.get(from).filter(|v| !v.is_null()) {
            m.insert(to.into(), v.clone());
            said = true;
        }
    }
    if role == "tool"
        && let Some(id) = body.get("id").or(body.get("tool_call_id"))
    {
        m.insert("tool_call_id".into(), id.clone());
    }
    said.then_some(Value::Object(m))
}

/// Gives `span` what its `records` carry, where it has nothing of its own under that key.
pub(crate) fn fold<'r>(span: &mut Span, records: impl IntoIterator<Item = &'r LogRecord>) {
    let (mut input, mut output, mut finish) = (Vec::new(), Vec::new(), Vec::new());
    for r in records {
        if r.event == DETAILS {
            for (k, v) in &r.attrs {
                if k != "event.name" {
                    span.attrs.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        } else if let Some((_, from, to)) = WHOLE.iter().find(|(e, _, _)| *e == r.event) {
            if let Some(v) = r.attrs.get(*from) {
                span.attrs
                    .entry((*to).to_owned())
                    .or_insert_with(|| v.clone());
            }
        } else if r.event == CHOICE {
            let m = r.body.get("message").unwrap_or(&Value::Null);
            output.extend(message("assistant", m));
            finish.extend(
                r.body
                    .get("finish_reason")
                    .filter(|f| f.is_string())
                    .cloned(),
            );
        } else if let Some((_, role)) = PER_MESSAGE.iter().find(|(e, _)| *e == r.event) {
            input.extend(message(role, &r.body));
        }
    }
    for (key, list) in [
        ("gen_ai.input.messages", input),
        ("gen_ai.output.messages", output),
    ] {
        if !list.is_empty() {
            let text = Value::Array(list).to_string();
            span.attrs
                .entry(key.to_owned())
                .or_insert(Value::String(text));
        }
    }
    if !finish.is_empty() {
        (span.attrs)
            .entry("gen_ai.response.finish_reasons".to_owned())
            .or_insert(Value::Array(finish));
    }
}

/// Records by the trace they belong to, for the spans they name.
#[derive(Debug, Default, Clone)]
pub struct LogIndex {
    by_trace: HashMap<String, Vec<LogRecord>>,
}

impl LogIndex {
    /// Adds records, after those already held (their order is the order messages were sent).
    pub fn extend(&mut self, records: impl IntoIterator<Item = LogRecord>) {
        for r in records {
            self.by_trace.entry(r.trace_id.clone()).or_default().push(r);
        }
    }

    /// Adds every record of `other`, after those already held.
    pub(crate) fn join(&mut self, other: &LogIndex) {
        let mut ids: Vec<&String> = other.by_trace.keys().collect();
        ids.sort();
        for id in ids {
            self.extend(other.by_trace[id].iter().cloned());
        }
    }

    /// How many records it holds.
    pub(crate) fn len(&self) -> usize {
        self.by_trace.values().map(Vec::len).sum()
    }

    /// The records of traces `known` does not know: they name no span read.
    pub(crate) fn unmatched(&self, known: &dyn Fn(&str) -> bool) -> usize {
        (self.by_trace.iter())
            .filter(|(id, _)| !known(id))
            .map(|(_, r)| r.len())
            .sum()
    }

    /// Warns in `outcome` of the records whose trace `known` does not know: they name no span
    /// of the input and are not used.
    pub(crate) fn warn_unmatched(
        &self,
        known: &dyn Fn(&str) -> bool,
        outcome: &mut crate::ingest::IngestOutcome,
    ) {
        let unmatched = self.unmatched(known);
        if unmatched > 0 {
            outcome.warn(
                "input",
                format!("{unmatched} log record(s) name a trace none of whose spans is in this input: not used"),
            );
        }
    }

    /// Gives each of `spans` what the records naming it carry (`fold`).
    pub fn apply(&self, spans: &mut [Span]) {
        for span in spans.iter_mut() {
            let Some(records) = self.by_trace.get(&span.trace_id) else {
                continue;
            };
            let id = span.span_id.clone();
            fold(span, records.iter().filter(|r| r.span_id == id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span() -> Span {
        Span {
            trace_id: "t".into(),
            span_id: "s".into(),
            parent_id: None,
            name: "chat".into(),
            start_ns: 0,
            end_ns: 0,
            attrs: Map::new(),
            error: None,
            read: Default::default(),
        }
    }

    fn rec(event: &str, body: Value) -> LogRecord {
        LogRecord {
            trace_id: "t".into(),
            span_id: "s".into(),
            event: event.into(),
            attrs: Map::new(),
            body,
        }
    }

    #[test]
    fn per_message_events_become_the_spans_messages_in_the_order_sent() {
        let mut s = span();
        let call = serde_json::json!([{"id": "c1", "type": "function",
            "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}]);
        let records = [
            rec(
                "gen_ai.system.message",
                serde_json::json!({"content": "be brief"}),
            ),
            rec(
                "gen_ai.user.message",
                serde_json::json!({"content": "weather?"}),
            ),
            rec(
                "gen_ai.assistant.message",
                serde_json::json!({"tool_calls": call}),
            ),
            rec(
                "gen_ai.tool.message",
                serde_json::json!({"content": "sunny", "id": "c1"}),
            ),
            rec(
                CHOICE,
                serde_json::json!({"index": 0, "finish_reason": "stop",
                "message": {"content": "It is sunny."}}),
            ),
        ];
        fold(&mut s, &records);
        assert_eq!(
            s.attrs["gen_ai.input.messages"],
            Value::String(
                serde_json::json!([
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "weather?"},
                    {"role": "assistant", "tool_calls": call},
                    {"role": "tool", "content": "sunny", "tool_call_id": "c1"},
                ])
                .to_string()
            )
        );
        assert_eq!(
            s.attrs["gen_ai.output.messages"],
            r#"[{"content":"It is sunny.","role":"assistant"}]"#
        );
        assert_eq!(
            s.attrs["gen_ai.response.finish_reasons"],
            serde_json::json!(["stop"])
        );
    }

    #[test]
    fn the_spans_own_attributes_win_and_empty_messages_add_nothing() {
        let mut s = span();
        s.attrs
            .insert("gen_ai.input.messages".into(), "[own]".into());
        let records = [
            rec(
                "gen_ai.user.message",
                serde_json::json!({"content": "other"}),
            ),
            // Without content capture, a choice says only how it ended.
            rec(
                CHOICE,
                serde_json::json!({"index": 0, "finish_reason": "stop", "message": {}}),
            ),
        ];
        fold(&mut s, &records);
        assert_eq!(s.attrs["gen_ai.input.messages"], "[own]");
        assert!(
            !s.attrs.contains_key("gen_ai.output.messages"),
            "{:?}",
            s.attrs
        );
        assert_eq!(
            s.attrs["gen_ai.response.finish_reasons"],
            serde_json::json!(["stop"])
        );
    }

    #[test]
    fn the_first_conventions_prompt_and_completion_events_and_other_records() {
        let mut s = span();
        let mut attrs = Map::new();
        attrs.insert(
            "gen_ai.prompt".into(),
            r#"[{"role":"user","content":"hi"}]"#.into(),
        );
        let prompt = span_event(&s, "gen_ai.content.prompt", attrs).unwrap();
        assert!(span_event(&s, "exception", Map::new()).is_none());
        fold(&mut s, [&prompt]);
        assert_eq!(
            s.attrs["gen_ai.input.messages"],
            r#"[{"role":"user","content":"hi"}]"#
        );
        let doc = serde_json::json!({"resourceLogs": [{"scopeLogs": [{"logRecords": [
            {"eventName": "gen_ai.user.message", "traceId": "0af7651916cd43dd8448eb211c80319c",
             "spanId": "b7ad6b7169203331", "body": {"kvlistValue": {"values": [
                {"key": "content", "value": {"stringValue": "hi"}}]}}},
            {"eventName": "gen_ai.user.message"},
            {"body": {"stringValue": "a plain log line"}},
        ]}]}]});
        let (kept, other) = records_of(&doc);
        assert_eq!((kept.len(), other), (1, 2));
        assert_eq!(kept[0].body, serde_json::json!({"content": "hi"}));
    }

    /// A chat span of trace `t`, its attributes `attrs` and span events `events`.
    fn chat(attrs: Value, events: Value) -> Value {
        serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [{
            "traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331",
            "name": "chat m", "startTimeUnixNano": "1", "endTimeUnixNano": "2",
            "attributes": attrs, "events": events}]}]}]})
    }

    fn kv(k: &str, v: &str) -> Value {
        serde_json::json!({"key": k, "value": {"stringValue": v}})
    }

    const INPUT: &str = r#"[{"role":"user","content":"weather?"}]"#;
    const OUTPUT: &str = r#"[{"role":"assistant","content":"sunny"}]"#;

    /// The one trace `ingest` makes of an OTLP/JSON input (whole and streamed alike).
    fn one_trace(bytes: &[u8], logs: &crate::ingest::collector::OtlpLogs) -> String {
        use crate::ingest::{IngestOptions, InputFormat, ingest_with_logs};
        let o = ingest_with_logs(
            InputFormat::OtlpJson,
            bytes,
            &IngestOptions::for_tests(None),
            logs,
        );
        assert_eq!(o.runs.len(), 1, "{:?}", o.problems);
        assert!(o.problems.is_empty(), "{:?}", o.problems);
        String::from_utf8(o.runs[0].trace.bytes.clone()).unwrap()
    }

    #[test]
    fn content_in_log_records_and_span_events_is_the_content_of_span_attributes() {
        let op = kv("gen_ai.operation.name", "chat");
        let own = chat(
            serde_json::json!([
                op,
                kv("gen_ai.input.messages", INPUT),
                kv("gen_ai.output.messages", OUTPUT)
            ]),
            serde_json::json!([]),
        );
        let expected = one_trace(own.to_string().as_bytes(), &Default::default());
        assert!(
            expected.contains(r#""input_h":"b3:"#) && expected.contains("sunny"),
            "{expected}"
        );
        // A logs document beside the spans, as the collector's `file` exporter writes both
        // signals to one file, and a logs export given as another input.
        let logs = serde_json::json!({"resourceLogs": [{"scopeLogs": [{"logRecords": [{
            "eventName": DETAILS, "traceId": "0af7651916cd43dd8448eb211c80319c",
            "spanId": "b7ad6b7169203331",
            "attributes": [kv("gen_ai.input.messages", INPUT), kv("gen_ai.output.messages", OUTPUT)]}]}]}]});
        let bare = chat(serde_json::json!([op]), serde_json::json!([]));
        let lines = format!("{bare}\n{logs}\n");
        assert_eq!(one_trace(lines.as_bytes(), &Default::default()), expected);
        let other = crate::ingest::collector::OtlpLogs::read(logs.to_string().as_bytes()).unwrap();
        assert_eq!((other.records(), other.others()), (1, 0));
        assert_eq!(one_trace(bare.to_string().as_bytes(), &other), expected);
        assert!(crate::ingest::collector::OtlpLogs::read(lines.as_bytes()).is_none());
        for other in [&b"[{\"role\":\"user\"}]"[..], b"", b"\x0a\x02garbage"] {
            assert!(crate::ingest::collector::OtlpLogs::read(other).is_none());
        }
        // The first conventions' span events.
        let events = chat(
            serde_json::json!([op]),
            serde_json::json!([
                {"name": "gen_ai.content.prompt", "attributes": [kv("gen_ai.prompt", INPUT)]},
                {"name": "gen_ai.content.completion", "attributes": [kv("gen_ai.completion", OUTPUT)]},
            ]),
        );
        let by_events = one_trace(events.to_string().as_bytes(), &Default::default());
        assert_eq!(by_events, expected);
    }

    #[test]
    fn per_message_span_events_are_read_from_attributes_or_event_content() {
        let op = kv("gen_ai.operation.name", "chat");
        let events = chat(
            serde_json::json!([op]),
            serde_json::json!([
                {"name": "gen_ai.user.message", "attributes": [kv("content", "weather?")]},
                {"name": CHOICE, "attributes": [kv("gen_ai.event.content",
                    r#"{"index":0,"finish_reason":"stop","message":{"content":"sunny"}}"#)]},
            ]),
        );
        let text = one_trace(events.to_string().as_bytes(), &Default::default());
        assert!(text.contains(r#""input_h":"b3:"#), "{text}");
        assert!(
            text.contains(r#""text":"sunny""#) && text.contains(r#""finish":"stop""#),
            "{text}"
        );
        assert!(!text.contains("weather?"), "{text}");
    }
}
