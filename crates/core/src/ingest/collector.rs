//! A collector's export objects: what the OpenTelemetry Collector's `awss3exporter` (and the
//! GCS, Azure Blob and `file` exporters) write — one batch of spans per object, OTLP/JSON
//! (`*.json`) or protobuf (`*.binpb`), gzip-compressed (`*.gz`) or not, named
//! `[PREFIX]traces_<id>.<ext>` under time partitions (`year=…/month=…/…`), beside `logs_…` and
//! `metrics_…` objects of the other signals.
//!
//! The spans of one trace are spread over the objects of a time window, so they are gathered in
//! a [`SpanPool`] across objects, grouped by trace id (a span exported twice, as the collector's
//! retries may, counts once), and mapped exactly as `ingest` maps a file. A trace is built once
//! its root span (one with no parent) is among them; until then it is held back, for an ingest
//! that has read more objects.

use std::collections::{BTreeMap, BTreeSet};

use super::spans::{self, ReadSpans, Span};
use super::{IngestOptions, IngestOutcome, IngestProblem, InputFormat};

/// The largest export object read, stored or unpacked (the size limit of a trace file).
pub const MAX_EXPORT_BYTES: u64 = 256 << 20;

/// What an object in a collector's layout holds, told by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportKind {
    /// A trace export in this format.
    Traces(InputFormat),
    /// An export of another signal (`logs_…`, `metrics_…`): not read.
    OtherSignal,
}

/// What the object named `name` (a key or file name) holds, or `None` when its name is none of
/// a collector's: `*.json`, `*.jsonl`, `*.binpb` or `*.pb`, each also with `.gz`.
pub fn export_kind(name: &str) -> Option<ExportKind> {
    let file = name.rsplit('/').next().unwrap_or(name);
    let plain = file.strip_suffix(".gz").unwrap_or(file);
    let (stem, ext) = plain.rsplit_once('.')?;
    let format = match ext {
        "json" | "jsonl" => InputFormat::OtlpJson,
        "binpb" | "pb" => InputFormat::OtlpProto,
        _ => return None,
    };
    // `[PREFIX]SIGNAL_<id>`: the signal ends the part before the last `_`.
    let signal = stem.rsplit_once('_').map_or("", |(head, _)| head);
    Some(if signal.ends_with("logs") || signal.ends_with("metrics") {
        ExportKind::OtherSignal
    } else {
        ExportKind::Traces(format)
    })
}

/// Why [`unpack`] gave no bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnpackError {
    /// The bytes are not gzip, or are cut.
    #[error("not readable as gzip: {0}")]
    NotGzip(String),
    /// They unpack to more than the limit (a decompression bomb, or just too big).
    #[error("unpacks to more than {0} bytes; refused")]
    TooLarge(u64),
    /// Built without the `otlp-proto` feature, which unpacks gzip.
    #[error(
        "gzip-compressed, and this library was built without the `otlp-proto` feature (part of the command-line build) that unpacks it"
    )]
    Unsupported,
}

/// The bytes of a stored object, gunzipped when it is gzip (named `*.gz`, or starting with the
/// gzip magic), within `limit` bytes unpacked ([`MAX_EXPORT_BYTES`], say): a small object that
/// unpacks to more is refused, never unpacked in full.
pub fn unpack<'a>(
    name: &str,
    stored: &'a [u8],
    limit: u64,
) -> Result<std::borrow::Cow<'a, [u8]>, UnpackError> {
    let gzip = name.ends_with(".gz") || stored.starts_with(&[0x1f, 0x8b]);
    if !gzip {
        return Ok(std::borrow::Cow::Borrowed(stored));
    }
    #[cfg(feature = "otlp-proto")]
    {
        use std::io::Read as _;
        let mut out = Vec::new();
        let mut decoder = flate2::read::MultiGzDecoder::new(stored).take(limit.saturating_add(1));
        decoder
            .read_to_end(&mut out)
            .map_err(|e| UnpackError::NotGzip(e.to_string()))?;
        if out.len() as u64 > limit {
            return Err(UnpackError::TooLarge(limit));
        }
        Ok(std::borrow::Cow::Owned(out))
    }
    #[cfg(not(feature = "otlp-proto"))]
    {
        let _ = limit;
        Err(UnpackError::Unsupported)
    }
}

/// The inference content of OTLP logs exports — the log records of the GenAI conventions'
/// content events (`gen_ai.client.inference.operation.details`, and the older per-message
/// events), by the span they name — for the spans of other inputs: `ingest spans.binpb
/// logs.binpb` reads the logs export first and gives each span of the trace export what its
/// records carry, as `collect` does for records and spans that arrive apart.
#[derive(Debug, Default, Clone)]
pub struct OtlpLogs {
    index: spans::logs::LogIndex,
    others: usize,
}

impl OtlpLogs {
    /// Reads `bytes` as an OTLP logs export: OTLP/JSON whose every document is a logs one
    /// (`resourceLogs`, one document or one per line), or — built with the `otlp-proto` feature —
    /// protobuf that is an `ExportLogsServiceRequest` and no trace export. `None` when they are
    /// none of these (a trace export, say, even one holding logs documents too).
    pub fn read(bytes: &[u8]) -> Option<OtlpLogs> {
        let mut logs = OtlpLogs::default();
        let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
        if first == Some(&b'{') {
            let has = |needle: &[u8]| memchr::memmem::find(bytes, needle).is_some();
            if !has(b"\"resourceLogs\"") || has(b"\"resourceSpans\"") {
                return None;
            }
            for doc in serde_json::Deserializer::from_slice(bytes).into_iter::<serde_json::Value>()
            {
                let doc = doc
                    .ok()
                    .filter(|d| d.get("resourceLogs").is_some_and(|l| l.is_array()))?;
                let (kept, others) = spans::logs::records_of(&doc);
                logs.index.extend(kept);
                logs.others += others;
            }
            return Some(logs);
        }
        #[cfg(feature = "otlp-proto")]
        {
            // A request with any record starts with its first `resource_logs` (field 1, bytes):
            // anything else (text, say) is not tried as protobuf.
            if bytes.first() != Some(&0x0a) || spans::proto::is_trace_export(bytes) {
                return None;
            }
            let (kept, others) = spans::logs::read_proto(bytes).ok()?;
            if kept.is_empty() && others == 0 {
                return None;
            }
            logs.index.extend(kept);
            logs.others = others;
            Some(logs)
        }
        #[cfg(not(feature = "otlp-proto"))]
        None
    }

    /// Adds the records of `other`, after its own.
    pub fn join(&mut self, other: &OtlpLogs) {
        self.index.join(&other.index);
        self.others += other.others;
    }

    /// How many records it keeps: those carrying an inference's content and naming its span.
    pub fn records(&self) -> usize {
        self.index.len()
    }

    /// How many records it read and does not keep (other events, plain log lines, records
    /// naming no span).
    pub fn others(&self) -> usize {
        self.others
    }

    pub(crate) fn index(&self) -> &spans::logs::LogIndex {
        &self.index
    }
}

/// The spans of one export object, with the problems met reading it.
#[derive(Debug)]
pub struct ExportSpans {
    format: InputFormat,
    spans: Vec<Span>,
    /// What could not be read, by position in the object (`line 3, span 2`).
    pub problems: Vec<IngestProblem>,
}

impl ExportSpans {
    /// Reads an unpacked export object of `format` (OTLP/JSON or protobuf).
    pub fn read(format: InputFormat, bytes: &[u8]) -> ExportSpans {
        let mut outcome = IngestOutcome::default();
        let ReadSpans { spans, .. } = spans::read(format, bytes, &mut outcome);
        ExportSpans {
            format,
            spans,
            problems: outcome.problems,
        }
    }

    /// An object of `format` that holds no span (one that could not be read as an export).
    pub fn empty(format: InputFormat) -> ExportSpans {
        ExportSpans {
            format,
            spans: Vec::new(),
            problems: Vec::new(),
        }
    }

    /// The trace ids its spans belong to.
    pub fn trace_ids(&self) -> BTreeSet<String> {
        self.spans.iter().map(|s| s.trace_id.clone()).collect()
    }
}

/// Spans gathered across export objects, by trace id.
#[derive(Debug, Default)]
pub struct SpanPool {
    traces: BTreeMap<String, Pooled>,
}

#[derive(Debug)]
struct Pooled {
    /// The format of the first object that held the trace (its header's `source`).
    format: InputFormat,
    spans: Vec<Span>,
    ids: BTreeSet<String>,
}

/// What a [`SpanPool`] built.
#[derive(Debug, Default)]
pub struct Built {
    /// The runs built and the problems met, as `ingest` of one file reports them.
    pub outcome: IngestOutcome,
    /// The traces built or refused by the importer, by id: settled until new spans of them come.
    pub settled: Vec<String>,
    /// The traces whose root span was not among the spans: held back, by id.
    pub held_back: Vec<String>,
}

impl SpanPool {
    /// Adds the spans of `export` whose trace `keep` accepts; a span already pooled (same trace
    /// and span id) is not added again.
    pub fn add(&mut self, export: ExportSpans, keep: &dyn Fn(&str) -> bool) {
        for span in export.spans {
            if !keep(&span.trace_id) {
                continue;
            }
            let pooled = (self.traces)
                .entry(span.trace_id.clone())
                .or_insert_with(|| Pooled {
                    format: export.format,
                    spans: Vec::new(),
                    ids: BTreeSet::new(),
                });
            if pooled.ids.insert(span.span_id.clone()) {
                pooled.spans.push(span);
            }
        }
    }

    /// How many traces the pool holds.
    pub fn traces(&self) -> usize {
        self.traces.len()
    }

    /// Builds a run of each trace whose root span is pooled (ordered and named as `ingest` of
    /// a file orders and names them); holds back the others.
    pub fn build(self, opts: &IngestOptions) -> Built {
        let mut built = Built::default();
        let mut complete = Vec::new();
        for (id, pooled) in self.traces {
            if pooled.spans.iter().any(|s| s.parent_id.is_none()) {
                built.settled.push(id.clone());
                complete.push((id, pooled.format, pooled.spans));
            } else {
                built.held_back.push(id);
            }
        }
        spans::build_traces(complete, None, opts, &mut built.outcome);
        built
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_collectors_names_are_told_apart() {
        let traces = |f| Some(ExportKind::Traces(f));
        for (name, kind) in [
            (
                "otlp/year=2026/month=12/day=04/hour=17/minute=54/traces_4b2c.json",
                traces(InputFormat::OtlpJson),
            ),
            ("p/traces_1.json.gz", traces(InputFormat::OtlpJson)),
            ("p/myapp-traces_1.binpb", traces(InputFormat::OtlpProto)),
            ("p/traces_1.binpb.gz", traces(InputFormat::OtlpProto)),
            ("export.jsonl", traces(InputFormat::OtlpJson)),
            ("p/logs_77.json", Some(ExportKind::OtherSignal)),
            ("p/app_metrics_77.binpb.gz", Some(ExportKind::OtherSignal)),
            ("p/README.md", None),
            ("p/run.trace.ndjson.zst", None),
            ("p/traces_1.gz", None),
        ] {
            assert_eq!(export_kind(name), kind, "{name}");
        }
    }

    #[test]
    fn plain_bytes_are_not_unpacked() {
        let bytes = br#"{"resourceSpans":[]}"#;
        assert!(matches!(
            unpack("traces_1.json", bytes, 100),
            Ok(std::borrow::Cow::Borrowed(_))
        ));
    }

    #[cfg(feature = "otlp-proto")]
    #[test]
    fn gzip_is_unpacked_and_bounded() {
        use std::io::Write as _;
        let gz = |data: &[u8]| {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        };
        let packed = gz(b"{\"resourceSpans\":[]}");
        assert_eq!(
            &*unpack("traces_1.json.gz", &packed, 100).unwrap(),
            b"{\"resourceSpans\":[]}"
        );
        // By its magic, whatever its name.
        assert!(unpack("traces_1.json", &packed, 100).is_ok());
        let err = unpack("traces_1.json.gz", b"not gzip at all", 100).unwrap_err();
        assert!(matches!(err, UnpackError::NotGzip(_)), "{err}");
        assert!(err.to_string().starts_with("not readable as gzip"), "{err}");
        // A bomb: a few KiB that unpack past the limit are refused; at the limit, taken.
        let bomb = gz(&vec![0u8; 4 << 20]);
        assert!(bomb.len() < 64 << 10, "{}", bomb.len());
        let err = unpack("traces_1.json.gz", &bomb, (4 << 20) - 1).unwrap_err();
        assert_eq!(err, UnpackError::TooLarge((4 << 20) - 1));
        assert_eq!(
            unpack("traces_1.json.gz", &bomb, 4 << 20).unwrap().len(),
            4 << 20
        );
    }

    /// An OTLP/JSON export of `spans` (trace id, span id, parent id, name).
    fn export(spans: &[(&str, &str, Option<&str>, &str)]) -> ExportSpans {
        let spans: Vec<serde_json::Value> = (spans.iter())
            .enumerate()
            .map(|(i, (trace, span, parent, name))| {
                let mut s = serde_json::json!({
                    "traceId": trace, "spanId": span, "name": name,
                    "startTimeUnixNano": (1_000 + i).to_string(),
                    "endTimeUnixNano": (2_000 + i).to_string(),
                    "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                                   {"key": "gen_ai.tool.name", "value": {"stringValue": *name}}],
                });
                if let Some(p) = parent {
                    s["parentSpanId"] = (*p).into();
                }
                s
            })
            .collect();
        let doc = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]});
        ExportSpans::read(InputFormat::OtlpJson, doc.to_string().as_bytes())
    }

    fn opts() -> IngestOptions {
        IngestOptions {
            scenario: Some("s".into()),
            ..IngestOptions::for_tests(None)
        }
    }

    #[test]
    fn a_trace_is_built_from_all_its_objects_once_its_root_is_there() {
        let (a, b) = ("a".repeat(32), "b".repeat(32));
        let root = "1".repeat(16);
        let first = export(&[
            (&a, "0000000000000002", Some(&root), "lookup"),
            (&b, "0000000000000009", Some("0000000000000008"), "orphan"),
        ]);
        assert_eq!(first.trace_ids(), BTreeSet::from([a.clone(), b.clone()]));
        // Without its root, neither trace is built.
        let mut pool = SpanPool::default();
        pool.add(
            export(&[(&a, "0000000000000002", Some(&root), "lookup")]),
            &|_| true,
        );
        let held = pool.build(&opts());
        assert_eq!(held.held_back, vec![a.clone()]);
        assert!(held.outcome.runs.is_empty() && held.settled.is_empty());
        // With it (and a span sent twice), the trace is built of its three spans once.
        let mut pool = SpanPool::default();
        pool.add(first, &|t| t == a);
        pool.add(
            export(&[
                (&a, &root, None, "root"),
                (&a, "0000000000000002", Some(&root), "lookup"),
                (&a, "0000000000000003", Some(&root), "book"),
            ]),
            &|t| t == a,
        );
        assert_eq!(pool.traces(), 1, "the trace `keep` refused is not pooled");
        let built = pool.build(&opts());
        assert_eq!(built.settled, vec![a.clone()]);
        assert!(built.held_back.is_empty());
        let [run] = &built.outcome.runs[..] else {
            panic!("{:?}", built.outcome.problems)
        };
        // Every span here is a tool span: three calls, not four.
        assert_eq!(run.events.get("tool_call"), Some(&3), "{:?}", run.events);
    }
}
