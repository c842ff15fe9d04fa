//! Importers: foreign recordings in, sealed traces out, prompts hashed on the way in.
//!
//! One file per format: `openclaw` (harness scenarios with a `scriptedTrace`), `openai`
//! (Chat Completions message lists, tau-bench and tau2-bench results, Responses API items),
//! `spans` (OpenTelemetry spans, as OTLP/JSON exports or SDK span JSON). Each returns the runs
//! it could build and the problems it met, each naming a position in the input; one bad run
//! never stops the others. Runs are named by `naming`; [`detect()`] picks the format when
//! `--from` is not given.

mod atif;
pub mod atif_export;
pub mod collector;
mod detect;
pub mod ground_truth;
pub mod identity;
pub(crate) mod naming;
pub(crate) mod openai;
pub(crate) mod openclaw;
pub mod spans;
pub mod stamp;
mod usage;

use std::collections::BTreeMap;

use serde_json::Value;

pub use detect::detect;
pub use naming::{Position, RunIds};

use crate::trace::PromptHasher;
use crate::trace::{Event, EventBody, Header, Json, RunStatus, SealedTrace, Str, TraceWriter};

/// Which importer to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    /// OpenClaw.NET scenario files with a `scriptedTrace`.
    OpenclawScenario,
    /// OpenAI Chat Completions messages or Responses API items.
    OpenaiMessages,
    /// OTLP/JSON trace exports (GenAI conventions, OpenInference, Vercel AI SDK, Traceloop).
    OtlpJson,
    /// OTLP protobuf trace exports (`ExportTraceServiceRequest`), the same conventions; read
    /// by builds with the `otlp-proto` feature.
    OtlpProto,
    /// OpenTelemetry SDK span JSON (`ReadableSpan.to_json()`), the same conventions.
    OtelSpans,
    /// Harbor's Agent Trajectory Interchange Format (ATIF) trajectories.
    Atif,
}

impl InputFormat {
    /// The `--from` name, also written as `header.source`.
    pub fn name(self) -> &'static str {
        match self {
            InputFormat::OpenclawScenario => "openclaw-scenario",
            InputFormat::OpenaiMessages => "openai-messages",
            InputFormat::OtlpJson => "otlp-json",
            InputFormat::OtlpProto => "otlp-proto",
            InputFormat::OtelSpans => "otel-spans",
            InputFormat::Atif => "atif",
        }
    }
}

/// How runs are recorded.
#[derive(Debug, Clone)]
pub struct IngestOptions {
    /// Prompt hashing (keyed from `TRACEREPLAY_HASH_KEY`, or unkeyed with `--unkeyed`).
    pub hasher: PromptHasher,
    /// The developer opt-in for raw-prompt sidecars.
    pub raw_opt_in: bool,
    /// `--scenario`: the scenario of every run (else named by `naming`).
    pub scenario: Option<String>,
    /// `--case`: the case of every run (else named by `naming`).
    pub case: Option<String>,
    /// `--name`: a naming template (see `naming`).
    pub name: Option<String>,
    /// The input file's stem, for names of runs without identifiers.
    pub file_stem: Option<String>,
    /// `--allow-empty`: write runs that hold no agent event.
    pub allow_empty: bool,
}

#[cfg(test)]
#[cfg(test)]
impl InputFormat {
    /// Ingests `bytes` as this format, unkeyed, as the importers' tests do.
    pub(crate) fn ingest_for_tests(self, bytes: &[u8]) -> IngestOutcome {
        ingest(self, bytes, &IngestOptions::for_tests(None))
    }
}

#[cfg(test)]
impl IngestOptions {
    /// Unkeyed hashing, no opt-in, nothing named: what the importers' tests ingest with.
    pub(crate) fn for_tests(file_stem: Option<&str>) -> IngestOptions {
        IngestOptions {
            hasher: PromptHasher::unkeyed(),
            raw_opt_in: false,
            scenario: None,
            case: None,
            name: None,
            file_stem: file_stem.map(str::to_owned),
            allow_empty: false,
        }
    }
}

impl IngestedRun {
    /// A run of `scenario`/`case`, its events counted by kind.
    pub fn new(scenario: String, case: String, trace: SealedTrace) -> IngestedRun {
        let events = events_of(&trace.bytes);
        // The trial as the writer put it in the header.
        let trial = crate::trace::probe_run(&trace.bytes)
            .and_then(|(_, _, trial)| trial)
            .map(|t| t.as_str().to_owned());
        IngestedRun {
            scenario,
            case,
            trial,
            trace,
            events,
        }
    }
}

/// The events of sealed trace bytes by kind: the writer puts `kind` first on every line.
fn events_of(bytes: &[u8]) -> BTreeMap<&'static str, usize> {
    let mut out = BTreeMap::new();
    for line in bytes.split(|b| *b == b'\n').skip(1) {
        let Some(rest) = line.strip_prefix(b"{\"kind\":\"") else {
            continue;
        };
        let kind = &rest[..memchr::memchr(b'"', rest).unwrap_or(0)];
        if let Some(k) = crate::trace::KNOWN_KINDS
            .iter()
            .find(|k| k.as_bytes() == kind)
        {
            *out.entry(*k).or_default() += 1;
        }
    }
    out
}

/// One run turned into a sealed trace.
#[derive(Debug, Clone)]
pub struct IngestedRun {
    /// Scenario id.
    pub scenario: String,
    /// Case.
    pub case: String,
    /// The trial of the case (the header's `trial`), when the input numbers its trials.
    pub trial: Option<String>,
    /// The sealed trace (and sidecar, when opted in).
    pub trace: SealedTrace,
    /// Its events by kind.
    pub events: BTreeMap<&'static str, usize>,
}

/// Something an importer could not take, with its position in the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestProblem {
    /// Where in the input (`line 3`, `run 2`, `span 7f3a…`).
    pub position: String,
    /// What is wrong.
    pub message: String,
    /// Whether a run was dropped because of it (a warning otherwise).
    pub rejected: bool,
}

/// What an importer produced from one input file.
#[derive(Debug, Default)]
pub struct IngestOutcome {
    /// Runs built.
    pub runs: Vec<IngestedRun>,
    /// Problems met.
    pub problems: Vec<IngestProblem>,
    /// What was read but not mapped to any event, by reason, with counts.
    pub skipped: BTreeMap<String, usize>,
}

impl IngestOutcome {
    fn reject(&mut self, position: impl Into<String>, message: impl Into<String>) {
        self.problems.push(IngestProblem {
            position: position.into(),
            message: message.into(),
            rejected: true,
        });
    }

    /// Takes in what another part of the input produced.
    fn merge(&mut self, other: IngestOutcome) {
        self.runs.extend(other.runs);
        self.problems.extend(other.problems);
        for (k, n) in other.skipped {
            *self.skipped.entry(k).or_default() += n;
        }
    }

    /// Adds a run — unless it holds no agent event (no user message, inference, tool call or
    /// final answer) and `--allow-empty` was not given: then it is refused at `position`, and
    /// nothing is written.
    pub fn add(&mut self, run: IngestedRun, position: &str, opts: &IngestOptions) {
        if !opts.allow_empty && !AGENT_KINDS.iter().any(|k| run.events.contains_key(k)) {
            self.reject(
                position,
                "no agent event (no user message, inference, tool call or final answer): nothing written; pass `--allow-empty` to write it anyway",
            );
            return;
        }
        self.runs.push(run);
    }

    pub(crate) fn warn(&mut self, position: impl Into<String>, message: impl Into<String>) {
        self.problems.push(IngestProblem {
            position: position.into(),
            message: message.into(),
            rejected: false,
        });
    }
}

/// Imports one input file's bytes.
pub fn ingest(format: InputFormat, bytes: &[u8], opts: &IngestOptions) -> IngestOutcome {
    ingest_with_logs(format, bytes, opts, &collector::OtlpLogs::default())
}

/// Imports one input file's bytes, its spans given the inference content that `logs` (OTLP log
/// records read from other inputs) carry for them.
pub fn ingest_with_logs(
    format: InputFormat,
    bytes: &[u8],
    opts: &IngestOptions,
    logs: &collector::OtlpLogs,
) -> IngestOutcome {
    let logs = logs.index();
    match format {
        InputFormat::OpenclawScenario => openclaw::ingest(bytes, opts),
        InputFormat::Atif => atif::ingest(bytes, opts),
        InputFormat::OpenaiMessages => openai::ingest(bytes, opts),
        InputFormat::OtlpJson | InputFormat::OtlpProto | InputFormat::OtelSpans => {
            let mut outcome = IngestOutcome::default();
            // OTLP exports are ingested as they are read, trace by trace (SDK span dumps are
            // read whole first).
            if spans::ingest_streaming(format, bytes, opts, logs, &mut outcome) {
                return outcome;
            }
            let read = spans::read(format, bytes, &mut outcome);
            spans::ingest(format, read, opts, logs, &mut outcome);
            outcome
        }
    }
}

/// The event kinds that show what an agent did: a run without any is not a run.
const AGENT_KINDS: &[&str] = &["user_message", "inference", "tool_call", "final_answer"];

/// Builds one run's trace with the spec's key order, hashing prompts as it goes.
pub struct RunBuilder {
    writer: TraceWriter,
    /// `seq` of the last event.
    pub last_seq: u64,
    final_answer: bool,
    run_end: bool,
    scenario: String,
    case: String,
}

impl RunBuilder {
    /// Starts a run of `scenario`/`case` recorded from `format`, as trial `trial` of the case
    /// when the input numbers its trials (a value that is no trial id is left out).
    pub fn new(
        format: InputFormat,
        ids: (&str, &str, Option<&str>),
        model: Option<&str>,
        opts: &IngestOptions,
    ) -> RunBuilder {
        RunBuilder::with_labels(format, ids, model, Default::default(), opts)
    }

    /// [`RunBuilder::new`], with header `labels` (an OpenTelemetry run's `otel.trace_id` and
    /// `otel.span_id`, so that verdicts can be attached to the run they judge).
    pub fn with_labels(
        format: InputFormat,
        (scenario, case, trial): (&str, &str, Option<&str>),
        model: Option<&str>,
        labels: std::collections::BTreeMap<String, String>,
        opts: &IngestOptions,
    ) -> RunBuilder {
        let mut header = Header::new(scenario.to_owned(), case.to_owned());
        header.labels = labels;
        header.trial = trial.and_then(|t| crate::trace::TrialId::parse(t).ok());
        header.source = Some(Str::from(format.name()));
        header.model = model.map(Str::from);
        RunBuilder {
            writer: TraceWriter::with_prompts(header, opts.hasher.clone(), opts.raw_opt_in),
            last_seq: 0,
            final_answer: false,
            run_end: false,
            scenario: scenario.to_owned(),
            case: case.to_owned(),
        }
    }

    /// Hashes prompt text (recording it in the sidecar only when opted in).
    pub fn prompt(&mut self, text: &str) -> crate::trace::PromptRef<'static> {
        self.writer.prompt(text)
    }

    /// Appends an event.
    pub fn push(&mut self, ts_ms: Option<i64>, body: EventBody<'_>) -> u64 {
        self.mark(&body);
        self.last_seq = self.writer.push(ts_ms, body);
        self.last_seq
    }

    /// Appends an event keeping its own `seq` when it increases.
    pub fn push_event(&mut self, e: &Event<'_>) {
        self.mark(&e.body);
        self.writer.push_event(e);
    }

    /// Notes a final answer or run end, so that finishing adds none.
    fn mark(&mut self, body: &EventBody<'_>) {
        match body {
            EventBody::FinalAnswer { .. } => self.final_answer = true,
            EventBody::RunEnd { .. } => self.run_end = true,
            _ => {}
        }
    }

    /// Finishes the run (as [`RunBuilder::finish`]) and adds it to `outcome` — unless it holds
    /// no agent event (no user message, inference, tool call or final answer) and
    /// `--allow-empty` was not given: then it is refused at `position`, and nothing is written.
    pub fn finish_into(
        self,
        outcome: &mut IngestOutcome,
        position: &str,
        opts: &IngestOptions,
        (final_answer, status, error): (Option<String>, RunStatus, Option<String>),
    ) {
        let (scenario, case) = (self.scenario.clone(), self.case.clone());
        match self.finish(final_answer, status, error) {
            Ok(sealed) => outcome.add(IngestedRun::new(scenario, case, sealed), position, opts),
            Err(e) => outcome.reject(position, e.to_string()),
        }
    }

    /// Adds the final answer (if not yet given and non-empty) and a `run_end`, then seals; an
    /// event that broke the trace's order rules (the writer's) instead.
    pub fn finish(
        mut self,
        final_answer: Option<String>,
        status: RunStatus,
        error: Option<String>,
    ) -> Result<SealedTrace, crate::trace::BrokenOrder> {
        self.complete(final_answer, status, error);
        self.writer.finish()
    }

    /// Adds the final answer (if not yet given and non-empty) and a `run_end`.
    fn complete(&mut self, final_answer: Option<String>, status: RunStatus, error: Option<String>) {
        if let Some(text) = final_answer.filter(|t| !t.is_empty()) {
            if !self.final_answer {
                self.push(
                    None,
                    EventBody::FinalAnswer {
                        text: Str::from(text),
                    },
                );
            }
        }
        if !self.run_end {
            self.push(
                None,
                EventBody::RunEnd {
                    status,
                    error: error.map(Str::from),
                },
            );
        }
    }
}

/// Arguments as recorded: an object stays an object; a string holding an object is parsed; any
/// other string is kept; other JSON becomes `{"value": …}`. Returns whether the arguments were
/// invalid JSON text (kept as a string).
pub fn args_from(v: Option<&Value>) -> (crate::trace::Args<'static>, bool) {
    use crate::trace::Args;
    match v {
        None | Some(Value::Null) => (
            Args::Object(Json::from_value(&serde_json::json!({}))),
            false,
        ),
        Some(Value::Object(_)) => (
            Args::Object(Json::from_value(v.unwrap_or(&Value::Null))),
            false,
        ),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(o)) => (Args::Object(Json::from_value(&o)), false),
            // Some recorders encode twice: a string holding a string holding the object.
            Ok(Value::String(inner)) => match serde_json::from_str::<Value>(&inner) {
                Ok(Value::Object(o)) => (Args::Object(Json::from_value(&o)), false),
                _ => (Args::Text(Str::from(s.clone())), false),
            },
            Ok(_) => (Args::Text(Str::from(s.clone())), false),
            Err(_) => (Args::Text(Str::from(s.clone())), !s.trim().is_empty()),
        },
        Some(other) => (
            Args::Object(Json::from_value(&serde_json::json!({ "value": other }))),
            false,
        ),
    }
}

/// Text of message content: a string, or the `text` of its parts joined; other JSON compactly.
pub fn content_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter_map(|p| {
                    p.get("text")
                        .and_then(Value::as_str)
                        .or_else(|| p.get("content").and_then(Value::as_str))
                })
                .collect();
            if texts.is_empty() {
                Some(v.to_string())
            } else {
                Some(texts.join("\n"))
            }
        }
        other => Some(other.to_string()),
    }
}

/// An id as every importer reads it (a call's, a result's): a string that is neither empty nor
/// only whitespace. An empty id is no id — absent, never a link to a call whose id is `""`.
pub(crate) fn id_str(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str).filter(|s| !s.trim().is_empty())
}

/// Unix milliseconds of a timestamp ([`stamp::parse`]: RFC 3339 and the ISO 8601 forms the
/// formats write), or `None` when it is refused.
pub fn parse_rfc3339_ms(s: &str) -> Option<i64> {
    stamp::parse(s).ok().map(|t| t.ms)
}

#[cfg(test)]
mod empty_ids_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(
            parse_rfc3339_ms("2025-11-29T12:00:00Z"),
            Some(1_764_417_600_000)
        );
        assert_eq!(
            parse_rfc3339_ms("2025-11-29T14:00:00.250+02:00"),
            Some(1_764_417_600_250)
        );
        assert_eq!(parse_rfc3339_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339_ms("yesterday"), None);
        assert_eq!(parse_rfc3339_ms("2026-11-29T12:00:01.25Ъ"), None);
        assert_eq!(parse_rfc3339_ms("2026-11-29T12:00:01.2x5Z"), None);
    }

    #[test]
    fn argument_shapes() {
        use crate::trace::Args;
        let (a, bad) = args_from(Some(&serde_json::json!("{\"b\":1}")));
        assert!(matches!(a, Args::Object(_)) && !bad);
        let (a, bad) = args_from(Some(&serde_json::json!("\"{\\\"b\\\":1}\"")));
        assert!(matches!(a, Args::Object(_)) && !bad, "double-encoded");
        let (a, bad) = args_from(Some(&serde_json::json!("{broken")));
        assert!(matches!(a, Args::Text(_)) && bad);
    }
}
