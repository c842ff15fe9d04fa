//! What a replay session captures, and the trace it records: the served inferences (with the
//! input hash and tools of the request that got them), a `tool_call` and `tool_result` for each
//! tool result the runtime handed back, the events the runtime reported, divergences as `error`
//! events, and the run's end.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use super::capture::Captured;

mod ending;
mod reported;
use super::script::Step;
use crate::trace::{
    Args, Event, EventBody, Header, Inference, InferenceOutput, Json, Limits, PlannedCall,
    PromptHasher, RunStatus, Str, TraceFile,
};

/// Event kinds the server records itself; the runtime may report every other known kind.
pub const SERVER_RECORDED: &[&str] = &["inference", "tool_call", "tool_result"];

/// The kinds the runtime may report: every kind of the trace format but [`SERVER_RECORDED`].
pub fn reportable() -> impl Iterator<Item = &'static str> {
    (crate::trace::KNOWN_KINDS.iter().copied()).filter(|k| !SERVER_RECORDED.contains(k))
}

/// Why the server refuses what a runtime sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The event is not a valid trace line (HTTP 400).
    Invalid(String),
    /// The event is valid alone but would make the recording invalid (a second `run_end`, an
    /// edit of a message never sent): HTTP 409.
    Conflict(String),
    /// The recording would outgrow the trace size limit (HTTP 413).
    TooLarge(String),
}

impl Refused {
    /// The reason, in a sentence.
    pub fn message(&self) -> &str {
        match self {
            Refused::Invalid(m) | Refused::Conflict(m) | Refused::TooLarge(m) => m,
        }
    }
}

/// The run being recorded, bounded by the trace size limit (what `verify` would accept).
#[derive(Debug, Default)]
pub struct Recording {
    /// The events in order, typed as the trace writer writes them (their `seq` is given when
    /// the recording is sealed).
    events: Vec<Event<'static>>,
    /// Bytes the recording holds (its event lines and raw-prompt sidecar), and its limit
    /// (0: not set yet, taken from the first check).
    bytes: u64,
    /// Whether a `final_answer` was reported.
    final_answer: bool,
    /// Message ids sent, so an edit or delete of another is refused.
    sent: std::collections::HashSet<String>,
    /// Divergences not recorded once the recording was full.
    dropped: usize,
    /// Calls the served inferences planned: id → (tool, arguments).
    planned: HashMap<String, (String, Args<'static>)>,
    /// Results already recorded, by call id.
    handed_back: BTreeSet<String>,
    /// Whether the runtime reported its own `run_end`.
    ended: bool,
    /// Raw input text by hash, under the developer opt-in only.
    raw: Vec<(String, String)>,
    /// User turns already written as `user_message`s.
    users_seen: usize,
    /// The results the request being recorded handed back first: its inference's `consumes`.
    fresh: Vec<String>,
    /// Whether a model request was still in flight when the session ended: the run is then
    /// never written as completed (its last answer is unknown).
    cut_short: bool,
}

impl Recording {
    /// Room for `more` bytes within the trace size limit (a margin kept for the header, the
    /// `run_end` and the footer), or why not.
    fn room(&self, more: u64, limits: Limits) -> Result<(), Refused> {
        const MARGIN: u64 = 64 << 10;
        let cap = limits.max_trace_bytes.saturating_sub(MARGIN);
        if self.bytes.saturating_add(more) > cap {
            return Err(Refused::TooLarge(format!(
                "the recording would outgrow the trace size limit of {} bytes (`--max-trace-bytes`); nothing of this request was recorded",
                limits.max_trace_bytes
            )));
        }
        Ok(())
    }

    /// Keeps an event whose line is `len` bytes (its `seq` counted in a small margin).
    fn push_sized(&mut self, e: Event<'static>, len: u64) {
        self.bytes = self.bytes.saturating_add(len + 16);
        self.events.push(e);
    }

    /// Keeps a small event the server built.
    fn push(&mut self, ts_ms: Option<i64>, body: EventBody<'static>) {
        let e = Event::new(0, ts_ms, body);
        let len = line_len(&e);
        self.push_sized(e, len);
    }

    /// Whether `captured` hands back the result of a call no recorded answer planned yet: one
    /// whose answer may still be being recorded.
    pub fn awaits_plans(&self, captured: &Captured) -> bool {
        (captured.results.iter())
            .any(|(id, _, _)| !self.handed_back.contains(id) && !self.planned.contains_key(id))
    }

    /// Records the tool results a request hands back for the first time; refused whole when
    /// they would outgrow the trace size limit.
    pub fn results(&mut self, captured: &Captured, limits: Limits) -> Result<(), Refused> {
        // The events first, each serialised once: sized, checked against the limit together,
        // then kept (or none of them).
        let mut fresh: Vec<(Event<'static>, u64)> = Vec::new();
        let mut seen = BTreeSet::new();
        let mut order = Vec::new();
        for (id, content, ok) in &captured.results {
            if self.handed_back.contains(id) || !seen.insert(id) {
                continue;
            }
            order.push(id.clone());
            let (tool, args) = (self.planned.get(id).cloned())
                .unwrap_or_else(|| ("unknown".to_owned(), crate::ingest::args_from(None).0));
            let call = EventBody::ToolCall {
                call_id: Str::from(id.as_str()),
                tool: Str::from(tool),
                args,
            };
            let result = EventBody::ToolResult {
                call_id: Str::from(id.as_str()),
                ok: *ok,
                output: (!content.is_null()).then(|| Json::from_value(content)),
                output_h: None,
                error: None,
            };
            for body in [call, result] {
                let e = Event::new(0, None, body);
                let len = line_len(&e);
                fresh.push((e, len));
            }
        }
        self.room(fresh.iter().map(|(_, len)| len).sum(), limits)?;
        self.fresh = order;
        self.handed_back.extend(seen.into_iter().cloned());
        for (e, len) in fresh {
            self.push_sized(e, len);
        }
        Ok(())
    }

    /// Records an answered request: `step` is the answer (served from a recording, or read
    /// from the upstream's), `model` the model named when the answer names none.
    pub fn inference(
        &mut self,
        model: Option<&str>,
        step: &Step,
        captured: &Captured,
        (timing, limits): (Timing, Limits),
    ) {
        let e = self.request_event(model, step, captured, timing);
        self.push_inference(e, limits);
    }

    /// Keeps an inference: its `request_h` left out when the line would pass half the line
    /// limit (so the trace reader always takes it); counted as dropped when the recording is
    /// full.
    fn push_inference(&mut self, mut e: Event<'static>, limits: Limits) {
        let line_budget = limits.max_line_bytes / 2;
        let mut len = line_len(&e);
        if len > line_budget {
            if let EventBody::Inference(i) = &mut e.body {
                i.request_h = None;
            }
            len = line_len(&e);
        }
        match self.room(len, limits) {
            Ok(()) => self.push_sized(e, len),
            Err(_) => self.dropped += 1,
        }
    }

    /// Writes the user turns of a request's conversation not written yet, as `user_message`s
    /// (hashed; raw text to the sidecar only under the opt-in), before its inference.
    fn asked(&mut self, captured: &Captured, ts_ms: Option<i64>) {
        for (prompt, raw) in captured.users.iter().skip(self.users_seen) {
            if let Some(text) = raw {
                self.bytes = self.bytes.saturating_add(text.len() as u64);
                self.raw.push((prompt.h.to_string(), text.clone()));
            }
            let prompt = prompt.clone();
            self.push(ts_ms, EventBody::UserMessage { prompt, id: None });
        }
        if captured.users_total > captured.users.len() && self.users_seen < captured.users_total {
            let text = format!(
                "the request carried {} user turns: the first {} were recorded as user messages",
                captured.users_total,
                captured.users.len()
            );
            self.push(None, EventBody::Note { text: text.into() });
        }
        self.users_seen = self.users_seen.max(captured.users_total);
    }

    /// The `inference` event of a request (its user turns written first): `step` is the
    /// answer, whole or what arrived of it.
    fn request_event(
        &mut self,
        model: Option<&str>,
        step: &Step,
        captured: &Captured,
        timing: Timing,
    ) -> Event<'static> {
        self.asked(captured, timing.ts_ms);
        let strs = |v: &[String]| v.iter().map(|s| Str::from(s.as_str())).collect::<Vec<_>>();
        let calls: Vec<PlannedCall<'static>> = (step.tool_calls.iter())
            .map(|c| {
                // As every importer reads arguments: the doors record one call one way.
                let args = crate::ingest::args_from(Some(&Value::String(c.arguments.clone()))).0;
                (self.planned).insert(c.id.clone(), (c.name.clone(), args.clone()));
                PlannedCall {
                    call_id: Str::from(c.id.as_str()),
                    tool: Str::from(c.name.as_str()),
                    args,
                }
            })
            .collect();
        let mut raw = |h: &String, text: Option<&String>| {
            // The same text (a system text sent with every request) is kept once.
            if let Some(text) = text.filter(|_| !self.raw.iter().any(|(k, _)| k == h)) {
                self.bytes = self.bytes.saturating_add(text.len() as u64);
                self.raw.push((h.clone(), text.clone()));
            }
        };
        if let Some(h) = &captured.input_h {
            raw(h, captured.raw_input.as_ref());
        }
        if let Some((h, text)) = &captured.system {
            raw(h, text.as_ref());
        }
        let inference = Inference {
            model: (step.model.as_deref().or(model)).map(Str::from),
            input_h: captured.input_h.as_deref().map(Str::from),
            system_h: (captured.system.as_ref()).map(|(h, _)| Str::from(h.as_str())),
            tools_offered: captured.tools.as_deref().map(strs),
            consumes: (!self.fresh.is_empty()).then(|| strs(&std::mem::take(&mut self.fresh))),
            output: Some(InferenceOutput {
                text: step.text.as_deref().map(Str::from),
                tool_calls: (!calls.is_empty()).then_some(calls),
            }),
            usage: step.usage,
            finish: step.finish,
            latency_ms: timing.latency_ms,
            request_h: (!captured.parts.is_empty()).then(|| {
                (captured.parts.iter())
                    .map(|(k, v)| (Str::from(k.as_str()), Str::from(v.as_str())))
                    .collect()
            }),
            ..Inference::default()
        };
        Event::new(0, timing.ts_ms, EventBody::Inference(Box::new(inference)))
    }

    /// Records a request that failed — the upstream's error, an answer cut short, one that
    /// could not be read — as every request is recorded, an `inference` (what arrived of the
    /// answer as its output, `finish: "error"`, `truncated` when the answer was cut), followed
    /// by an `error` event saying why, with the conversation's `input_h`. Bounded like a
    /// divergence: `false` when the recording was full.
    pub fn failed(
        &mut self,
        model: Option<&str>,
        (partial, truncated): (&Step, bool),
        captured: &Captured,
        (message, code): (&str, &str),
        (timing, limits): (Timing, Limits),
    ) -> bool {
        if self.room(message.len() as u64 + 100, limits).is_err() {
            self.dropped += 1;
            return false;
        }
        let mut step = partial.clone();
        step.finish = Some(crate::trace::Finish::Error);
        // A call cut before its arguments ended was never planned whole: left out.
        step.tool_calls
            .retain(|c| serde_json::from_str::<Value>(&c.arguments).is_ok());
        let mut e = self.request_event(model, &step, captured, timing);
        if let EventBody::Inference(i) = &mut e.body {
            i.truncated = truncated;
        }
        self.push_inference(e, limits);
        let input_h = captured.input_h.as_deref().map(Str::from);
        self.push(timing.ts_ms, error_body(message, code, input_h));
        true
    }

    /// Records the model requests still in flight when the session ended (`why`), each as a
    /// failed request whose answer never came (`stream-truncated`); the run is then written as
    /// failed even if the runtime reported it completed — it failed closed.
    pub fn still_in_flight(
        &mut self,
        model: Option<&str>,
        flying: impl IntoIterator<Item = (Captured, i64)>,
        why: &str,
        limits: Limits,
    ) {
        let message = format!(
            "the request was still in flight when the session ended ({why}): its answer is not recorded"
        );
        for (captured, ts_ms) in flying {
            self.cut_short = true;
            let timing = Timing {
                ts_ms: Some(ts_ms),
                latency_ms: None,
            };
            let partial = (&Step::default(), true);
            let why = (message.as_str(), "stream-truncated");
            self.failed(model, partial, &captured, why, (timing, limits));
        }
    }

    /// Records an `error` event (an upstream's failure, a cut stream), bounded like a
    /// divergence; `false` when the recording was full.
    pub fn error(&mut self, message: &str, code: &str, ts_ms: Option<i64>, limits: Limits) -> bool {
        if self.room(message.len() as u64 + 100, limits).is_err() {
            self.dropped += 1;
            return false;
        }
        self.push(ts_ms, error_body(message, code, None));
        true
    }

    /// Records a `note` event (where a replay went live), bounded like an error.
    pub fn note(&mut self, text: &str, limits: Limits) {
        if self.room(text.len() as u64 + 64, limits).is_err() {
            self.dropped += 1;
            return;
        }
        self.push(None, EventBody::Note { text: text.into() });
    }

    /// Whether any model request was recorded (answered, failed or cut).
    pub fn requested(&self) -> bool {
        (self.events.iter()).any(|e| {
            matches!(e.body, EventBody::Inference(_))
                || error_code(e).is_some_and(|c| failed_request(&c))
        })
    }

    /// Whether the runtime ran a tool in this run (a tool result was handed back, or a
    /// `tool_call` reported).
    pub fn ran_tools(&self) -> bool {
        !self.handed_back.is_empty()
    }

    /// The model requests recorded: one `inference` each, answered or failed (what
    /// `request-count` counts and usage sums).
    pub fn requests(&self) -> usize {
        (self.events.iter())
            .filter(|e| matches!(e.body, EventBody::Inference(_)))
            .count()
    }

    /// How the run ended, in a few words: the status of its `run_end` (`failed` when the
    /// runtime reported none), with the codes of its failed requests (`failed: upstream-error`).
    pub fn ended_as(&self) -> String {
        let mut codes: Vec<String> = (self.events.iter())
            .filter_map(error_code)
            .filter(|c| failed_request(c))
            .collect();
        codes.dedup();
        match (self.end_status(), codes.is_empty()) {
            (Some(status), true) if !self.ended => {
                format!("{status}, end inferred from the final answer")
            }
            (Some(status), true) => status.to_owned(),
            (status, false) => format!("{}: {}", status.unwrap_or("failed"), codes.join(", ")),
            (None, true) => "failed: no run end reported".to_owned(),
        }
    }

    /// The status of the `run_end` the runtime reported, or `completed` when the evidence shows
    /// the run ended though the runtime reported no end (see `ending`).
    pub fn end_status(&self) -> Option<&'static str> {
        let reported = (self.events.iter().rev()).find_map(|e| match e.body {
            EventBody::RunEnd { status, .. } => Some(status),
            _ => None,
        });
        match reported {
            Some(s) => Some(s.as_str()),
            None if self.inferred_end().is_some() => Some(RunStatus::Completed.as_str()),
            None => None,
        }
    }

    /// The run's end as the evidence shows it, when the runtime reported none.
    fn inferred_end(&self) -> Option<ending::Inferred> {
        (!self.ended)
            .then(|| ending::Inferred::from(&self.events, self.cut_short))
            .flatten()
    }

    /// Records a divergence as an `error` event; once the recording is full, divergences are
    /// counted instead (the session still reports every one, and its exit code says so).
    pub fn divergence(&mut self, message: &str, limits: Limits) {
        if self.room(message.len() as u64 + 100, limits).is_err() {
            self.dropped += 1;
            return;
        }
        self.push(None, error_body(message, "replay-divergence", None));
    }

    /// Whether the runtime reported the run's end.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// The raw-prompt sidecar (`{"h","text"}` lines, as `ingest --dev-raw-prompts` writes
    /// them), when the developer opted in and there is raw text.
    pub fn sidecar(&self) -> Option<Vec<u8>> {
        if self.raw.is_empty() {
            return None;
        }
        let mut out = Vec::new();
        for (h, text) in &self.raw {
            let line = serde_json::json!({"h": h, "text": text});
            serde_json::to_writer(&mut out, &line).expect("serialising into memory cannot fail");
            out.push(b'\n');
        }
        Some(out)
    }

    /// The recorded run as a sealed trace, every credential in `secrets` redacted from it: header, events numbered in order, and the
    /// `run_end` the runtime reported — or, when it reported none, the end its evidence shows
    /// (`ending`: `completed` after a final text answer, with a `note` saying so) or else
    /// `failed` (a run whose end nothing shows is never taken for a completed one). The typed
    /// events are written once, by the one trace writer ([`crate::trace::TraceWriter`]), in the
    /// format's key order, with the raw-prompt sidecar when the developer opted in; what it
    /// wrote is read back with the trace reader's limits, so a recording is never sealed that
    /// `check` would refuse.
    pub fn seal(
        &self,
        run: &RunHeader<'_>,
        (hasher, secrets): (&PromptHasher, &std::collections::BTreeSet<String>),
        limits: Limits,
    ) -> Result<crate::trace::SealedTrace, String> {
        let mut header = Header::new(run.scenario, run.case);
        header.trial = run.trial.cloned();
        header.model = run.model.map(Str::from);
        header.source = Some(Str::from(run.source));
        let mut events = self.events.clone();
        if self.dropped > 0 {
            let message = format!(
                "{} more error(s) and divergence(s), not recorded: the recording was full",
                self.dropped
            );
            events.push(Event::new(
                0,
                None,
                error_body(&message, "replay-divergence", None),
            ));
        }
        if self.cut_short {
            // Reported completed while a request had not answered: failed, closed.
            for e in &mut events {
                if let EventBody::RunEnd { status, error } = &mut e.body
                    && *status == RunStatus::Completed
                {
                    *status = RunStatus::Failed;
                    *error = Some(Str::from(
                        "the runtime reported the run completed while a model request was still in flight: its answer is not recorded",
                    ));
                }
            }
        }
        match (self.ended, self.inferred_end()) {
            (true, _) => {}
            (false, Some(end)) => events.extend(end.events(run.source, self.final_answer)),
            (false, None) => events.push(Event::new(
                0,
                None,
                EventBody::RunEnd {
                    status: RunStatus::Failed,
                    error: Some(Str::from(format!(
                        "the runtime reported no run end to the {} server, and its last model answer was no final text answer",
                        run.source
                    ))),
                },
            )),
        }
        let mut writer = crate::trace::TraceWriter::with_prompts(header, hasher.clone(), false);
        for mut e in events {
            // What the session knows to be a credential is written nowhere: not in an answer
            // that echoes it, nor in a tool result the agent hands back, in any spelling.
            super::redact::redact_event(&mut e, secrets);
            writer.push_event(&e);
        }
        let mut sealed = writer.finish().map_err(|e| e.to_string())?;
        sealed.sidecar = self
            .sidecar()
            .map(|b| super::redact::redact(&String::from_utf8_lossy(&b), secrets).into_bytes());
        if sealed.bytes.len() as u64 > limits.max_trace_bytes {
            return Err(format!(
                "the recording is {} bytes, over the trace size limit of {} bytes",
                sealed.bytes.len(),
                limits.max_trace_bytes
            ));
        }
        let file = TraceFile::from_bytes("recorded run", sealed.bytes.clone(), false);
        let seal = file.verify_seal(false).map_err(|e| e.to_string())?;
        crate::trace::parse_trace(&file, &seal, limits).map_err(|e| e.to_string())?;
        Ok(sealed)
    }
}

/// The length of an event's line as the writer writes it (its `seq` aside).
fn line_len(e: &Event<'_>) -> u64 {
    serde_json::to_vec(e).map_or(0, |v| v.len() as u64)
}

/// An `error` event's body.
fn error_body(message: &str, code: &str, input_h: Option<Str<'static>>) -> EventBody<'static> {
    EventBody::Error {
        message: Str::from(message),
        code: Some(Json::from_value(code)),
        input_h,
    }
}

/// The code of an `error` event, when it is a string.
fn error_code(e: &Event<'_>) -> Option<String> {
    match &e.body {
        EventBody::Error { code: Some(c), .. } => serde_json::from_str(c.raw()).ok(),
        _ => None,
    }
}

/// Whether an error's code says a model request failed (the upstream's error, a cut stream).
fn failed_request(code: &str) -> bool {
    code.starts_with("upstream") || code == "stream-truncated"
}

/// The header of a recorded run.
#[derive(Debug, Clone, Copy)]
pub struct RunHeader<'a> {
    /// The scenario id.
    pub scenario: &'a str,
    /// The case.
    pub case: &'a str,
    /// The trial, when the case is recorded several times.
    pub trial: Option<&'a crate::trace::TrialId>,
    /// The model the run asked for.
    pub model: Option<&'a str>,
    /// `replay` or `record`.
    pub source: &'static str,
}

/// When an inference happened and how long it took (a live recording's; replay records none,
/// so that one recording replayed twice gives the same bytes).
#[derive(Debug, Clone, Copy, Default)]
pub struct Timing {
    /// When the request arrived (Unix milliseconds).
    pub ts_ms: Option<i64>,
    /// From the request's arrival to its answer's last byte.
    pub latency_ms: Option<u64>,
}

#[cfg(test)]
mod tests;
