//! Verdicts as OpenTelemetry logs (`check --otlp FILE`): an OTLP/JSON `ExportLogsServiceRequest`
//! with one `gen_ai.evaluation.result` event per oracle result (and one per row that could not
//! be judged). A trace ingested from OpenTelemetry keeps its run's trace and span ids in its
//! header's labels; its events carry them, so a backend attaches the verdicts to the run they
//! judge. The explanation is the oracle's message, as every report shows it (secrets masked,
//! no raw prompt text).

use std::collections::BTreeMap;
use std::io::Write;

use camino::Utf8Path;
use serde_json::{Value, json};

use super::{Report, ResultRow};

pub use crate::trace::{SPAN_ID_LABEL, TRACE_ID_LABEL};
/// The event name of the GenAI semantic conventions for an evaluation's result.
pub const EVENT_NAME: &str = "gen_ai.evaluation.result";

/// An OpenTelemetry run's ids, as OTLP/JSON writes them (lowercase hex).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OtelIds {
    /// 32 hex digits.
    pub trace_id: String,
    /// 16 hex digits, when known.
    pub span_id: Option<String>,
}

/// `0x`-prefixed or not, any case: the id as lowercase hex when it has `digits` digits and is
/// not all zeros (OTLP's "invalid" id).
fn hex_id(raw: &str, digits: usize) -> Option<String> {
    let s = raw.trim().trim_start_matches("0x").to_ascii_lowercase();
    (s.len() == digits && s.bytes().all(|b| b.is_ascii_hexdigit()) && s.bytes().any(|b| b != b'0'))
        .then_some(s)
}

/// The OpenTelemetry ids a trace file's header labels hold, if any.
pub fn otel_ids_of(path: &Utf8Path, limits: crate::trace::Limits) -> Option<OtelIds> {
    let file = crate::trace::TraceFile::open(path, limits).ok()?;
    let end = memchr::memchr(b'\n', &file.bytes).unwrap_or(file.bytes.len());
    let header: Value = serde_json::from_slice(&file.bytes[..end]).ok()?;
    let labels = header.get("labels")?;
    let trace_id = hex_id(labels.get(TRACE_ID_LABEL)?.as_str()?, 32)?;
    let span_id = (labels.get(SPAN_ID_LABEL).and_then(Value::as_str)).and_then(|s| hex_id(s, 16));
    Some(OtelIds { trace_id, span_id })
}

fn string(key: &str, value: &str) -> Value {
    json!({"key": key, "value": {"stringValue": value}})
}

/// The attributes every event of a row carries: which trace it judged.
fn row_attributes(row: &ResultRow) -> Vec<Value> {
    let mut out = Vec::new();
    let fields = [
        ("tracereplay.scenario", &row.scenario),
        ("tracereplay.case", &row.case),
        ("tracereplay.trial", &row.trial),
        ("tracereplay.trace.path", &row.path),
        ("tracereplay.trace.seal", &row.content_hash),
    ];
    for (key, value) in fields {
        if let Some(v) = value {
            out.push(string(key, v));
        }
    }
    out.push(string("tracereplay.verdict", row.verdict.as_str()));
    out
}

/// One log record.
fn record(time: &str, ids: Option<&OtelIds>, fail: bool, attributes: Vec<Value>) -> Value {
    let mut r = json!({
        "timeUnixNano": time,
        "observedTimeUnixNano": time,
        "severityNumber": if fail { 13 } else { 9 },
        "severityText": if fail { "WARN" } else { "INFO" },
        "eventName": EVENT_NAME,
        "attributes": attributes,
    });
    if let Some(ids) = ids {
        r["traceId"] = json!(ids.trace_id);
        if let Some(span) = &ids.span_id {
            r["spanId"] = json!(span);
        }
    }
    r
}

/// The OpenTelemetry ids of the report's traces that have them (read from their headers, in
/// parallel), by the path the report shows.
pub fn otel_ids(report: &Report, limits: crate::trace::Limits) -> BTreeMap<String, OtelIds> {
    use rayon::prelude::*;
    let paths: Vec<String> = report.results.summaries().filter_map(|r| r.path).collect();
    (paths.into_par_iter())
        .filter_map(|p| {
            let ids = otel_ids_of(Utf8Path::new(&p), limits)?;
            Some((p, ids))
        })
        .collect()
}

/// Writes the OTLP/JSON logs of `report`. `ids` holds the OpenTelemetry ids of the traces that
/// have them, by the path the report shows; `time_unix_nano` is every record's time (the run's,
/// so that the same run gives the same bytes).
pub fn render(
    report: &Report,
    ids: &BTreeMap<String, OtelIds>,
    time_unix_nano: u64,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let time = time_unix_nano.to_string();
    let mut records = Vec::new();
    for row in report.results.iter() {
        let row_ids = row.path.as_ref().and_then(|p| ids.get(p));
        let base = row_attributes(&row);
        if let Some(e) = &row.error {
            let mut attributes = vec![
                string("gen_ai.evaluation.name", "tracereplay.judged"),
                string("gen_ai.evaluation.score.label", "error"),
                string("gen_ai.evaluation.explanation", &e.message),
                string("error.type", e.category.as_str()),
            ];
            attributes.extend(base);
            records.push(record(&time, row_ids, true, attributes));
            continue;
        }
        for o in &row.oracles {
            let mut attributes = vec![
                string("gen_ai.evaluation.name", &o.kind),
                json!({"key": "gen_ai.evaluation.score.value", "value": {"doubleValue": o.score}}),
                string("gen_ai.evaluation.score.label", o.verdict.as_str()),
                string("gen_ai.evaluation.explanation", &o.message),
            ];
            if let Some(i) = o.index {
                attributes.push(json!({"key": "tracereplay.oracle.index", "value": {"intValue": i.to_string()}}));
            }
            attributes.extend(base.iter().cloned());
            let fail = o.verdict != crate::oracle::Verdict::Pass;
            records.push(record(&time, row_ids, fail, attributes));
        }
    }
    let request = json!({
        "resourceLogs": [{
            "resource": {"attributes": [string("service.name", "tracereplay")]},
            "scopeLogs": [{
                "scope": {"name": "tracereplay", "version": report.tool.version},
                "logRecords": records,
            }],
        }],
    });
    serde_json::to_writer(&mut *out, &request)?;
    writeln!(out)?;
    report.results.readable()
}

/// The OpenTelemetry logs as a [`super::Exporter`].
pub struct OtlpExporter;

super::export::exporter!(
OtlpExporter for super::Report, "OpenTelemetry logs", None, |report, ctx, out| {
    let time = (ctx.time_unix_nano).unwrap_or_else(super::html::report_time_nanos);
    render(report, &otel_ids(report, ctx.limits), time, out)
});
