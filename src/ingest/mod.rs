//! Importers: foreign recordings in, sealed traces out, prompts hashed on the way in.
//!
//! One file per format: [`openclaw`] (harness scenarios with a `scriptedTrace`), [`openai`]
//! (Chat Completions message lists and Responses API items), [`otlp`] (OpenTelemetry GenAI
//! spans). Each returns the runs it could build and the problems it met, each naming the file
//! and a position; one bad run never stops the others.

pub mod openai;
pub mod openclaw;
pub mod otlp;

use serde_json::Value;

use crate::privacy::PromptHasher;
use crate::trace::{Event, EventBody, Header, Json, RunStatus, SealedTrace, Str, TraceWriter};

/// Which importer to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenClaw.NET scenario files with a `scriptedTrace`.
    OpenclawScenario,
    /// OpenAI Chat Completions messages or Responses API items.
    OpenaiMessages,
    /// OTLP/JSON trace exports with GenAI semantic conventions.
    OtlpJson,
}

impl Format {
    /// The `--from` name, also written as `header.source`.
    pub fn name(self) -> &'static str {
        match self {
            Format::OpenclawScenario => "openclaw-scenario",
            Format::OpenaiMessages => "openai-messages",
            Format::OtlpJson => "otlp-json",
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
    /// `--scenario`: the scenario id when the input names none (or to override it).
    pub scenario: Option<String>,
    /// `--case`: the case of a single run, or the prefix of several.
    pub case: Option<String>,
}

/// One run turned into a sealed trace.
#[derive(Debug, Clone)]
pub struct IngestedRun {
    /// Scenario id.
    pub scenario: String,
    /// Case.
    pub case: String,
    /// The sealed trace (and sidecar, when opted in).
    pub trace: SealedTrace,
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
}

impl IngestOutcome {
    fn reject(&mut self, position: impl Into<String>, message: impl Into<String>) {
        self.problems.push(IngestProblem {
            position: position.into(),
            message: message.into(),
            rejected: true,
        });
    }

    fn warn(&mut self, position: impl Into<String>, message: impl Into<String>) {
        self.problems.push(IngestProblem {
            position: position.into(),
            message: message.into(),
            rejected: false,
        });
    }
}

/// Imports one input file's bytes.
pub fn ingest(format: Format, bytes: &[u8], opts: &IngestOptions) -> IngestOutcome {
    match format {
        Format::OpenclawScenario => openclaw::ingest(bytes, opts),
        Format::OpenaiMessages => openai::ingest(bytes, opts),
        Format::OtlpJson => otlp::ingest(bytes, opts),
    }
}

/// The case of run `index` (0-based) of `count` runs in one input.
pub fn case_name(opts: &IngestOptions, index: usize, count: usize) -> String {
    match (&opts.case, count) {
        (Some(c), 1) => c.clone(),
        (None, 1) => "default".to_owned(),
        (Some(c), _) => format!("{c}-{}", index + 1),
        (None, _) => format!("sample-{}", index + 1),
    }
}

/// Builds one run's trace with the spec's key order, hashing prompts as it goes.
pub struct RunBuilder {
    writer: TraceWriter,
    /// `seq` of the last event.
    pub last_seq: u64,
    final_answer: bool,
    run_end: bool,
}

impl RunBuilder {
    /// Starts a run of `scenario`/`case` recorded from `format`.
    pub fn new(
        format: Format,
        scenario: &str,
        case: &str,
        model: Option<&str>,
        opts: &IngestOptions,
    ) -> RunBuilder {
        let mut header = Header::new(scenario.to_owned(), case.to_owned());
        header.source = Some(Str::from(format.name()));
        header.model = model.map(Str::from);
        RunBuilder {
            writer: TraceWriter::with_prompts(header, opts.hasher.clone(), opts.raw_opt_in),
            last_seq: 0,
            final_answer: false,
            run_end: false,
        }
    }

    /// Hashes prompt text (recording it in the sidecar only when opted in).
    pub fn prompt(&mut self, text: &str) -> crate::trace::PromptRef<'static> {
        self.writer.prompt(text)
    }

    /// Appends an event.
    pub fn push(&mut self, ts_ms: Option<i64>, body: EventBody<'_>) -> u64 {
        match &body {
            EventBody::FinalAnswer { .. } => self.final_answer = true,
            EventBody::RunEnd { .. } => self.run_end = true,
            _ => {}
        }
        self.last_seq = self.writer.push(ts_ms, body);
        self.last_seq
    }

    /// Appends an event keeping its own `seq` when it increases.
    pub fn push_event(&mut self, e: &Event<'_>) {
        self.writer.push_event(e);
    }

    /// Adds the final answer (if not yet given and non-empty) and a `run_end`, then seals.
    pub fn finish(
        mut self,
        final_answer: Option<String>,
        status: RunStatus,
        error: Option<String>,
    ) -> SealedTrace {
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
        self.writer.finish()
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

/// Unix milliseconds of an RFC 3339 timestamp (`2026-11-29T12:00:00.5Z`, `…+02:00`).
pub fn parse_rfc3339_ms(s: &str) -> Option<i64> {
    let s = s.trim();
    let (date, rest) = s.split_once(['T', 't', ' '])?;
    let mut d = date.split('-');
    let (y, m, day): (i64, i64, i64) = (
        d.next()?.parse().ok()?,
        d.next()?.parse().ok()?,
        d.next()?.parse().ok()?,
    );
    let split = rest.find(['Z', 'z', '+', '-']).unwrap_or(rest.len());
    let (time, zone) = rest.split_at(split);
    let mut t = time.split(':');
    let (hh, mm): (i64, i64) = (t.next()?.parse().ok()?, t.next()?.parse().ok()?);
    let sec_text = t.next().unwrap_or("0");
    let (whole, frac) = sec_text.split_once('.').unwrap_or((sec_text, ""));
    let ss: i64 = whole.parse().ok()?;
    let millis: i64 = format!("{frac:0<3}")[..3].parse().ok()?;
    let offset_min = match zone {
        "" | "Z" | "z" => 0,
        z => {
            let sign = if z.starts_with('-') { -1 } else { 1 };
            let (oh, om) = z[1..].split_once(':').unwrap_or((&z[1..], "0"));
            sign * (oh.parse::<i64>().ok()? * 60 + om.parse::<i64>().ok()?)
        }
    };
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Howard Hinnant's days-from-civil.
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 86_400 + hh * 3600 + mm * 60 + ss - offset_min * 60) * 1000) + millis)
}

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
