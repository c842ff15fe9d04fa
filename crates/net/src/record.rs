//! What a replay session captures, and the trace it records: the served inferences (with the
//! input hash and tools of the request that got them), a `tool_call` and `tool_result` for each
//! tool result the runtime handed back, the events the runtime reported, divergences as `error`
//! events, and the run's end.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Value, json};

use super::capture::Captured;

mod ending;
mod reported;
use super::script::Step;
use crate::trace::PromptHasher;
use crate::trace::{Limits, TraceFile};

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
    events: Vec<Value>,
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
    planned: HashMap<String, (String, Value)>,
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
    fn push_sized(&mut self, e: Value, len: u64) {
        self.bytes = self.bytes.saturating_add(len + 16);
        self.events.push(e);
    }

    /// Keeps a small event the server built.
    fn push(&mut self, e: Value) {
        let len = e.to_string().len() as u64;
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
        let mut fresh: Vec<(Value, u64)> = Vec::new();
        let mut seen = BTreeSet::new();
        let mut order = Vec::new();
        for (id, content, ok) in &captured.results {
            if self.handed_back.contains(id) || !seen.insert(id) {
                continue;
            }
            order.push(id.clone());
            let (tool, args) = self
                .planned
                .get(id)
                .cloned()
                .unwrap_or_else(|| ("unknown".to_owned(), json!({})));
            for e in [
                json!({"kind": "tool_call", "call_id": id, "tool": tool, "args": args}),
                json!({"kind": "tool_result", "call_id": id, "ok": ok, "output": content}),
            ] {
                let len = e.to_string().len() as u64;
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
    fn push_inference(&mut self, mut e: Value, limits: Limits) {
        let line_budget = limits.max_line_bytes / 2;
        let mut len = e.to_string().len() as u64;
        if len > line_budget {
            if let Some(o) = e.as_object_mut() {
                o.remove("request_h");
            }
            len = e.to_string().len() as u64;
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
            let mut e = json!({"kind": "user_message", "prompt": prompt});
            if let Some(ts) = ts_ms {
                e["ts_ms"] = json!(ts);
            }
            if let (Some(text), Some(h)) = (raw, prompt["h"].as_str()) {
                self.bytes = self.bytes.saturating_add(text.len() as u64);
                self.raw.push((h.to_owned(), text.clone()));
            }
            self.push(e);
        }
        if captured.users_total > captured.users.len() && self.users_seen < captured.users_total {
            let text = format!(
                "the request carried {} user turns: the first {} were recorded as user messages",
                captured.users_total,
                captured.users.len()
            );
            self.push(json!({"kind": "note", "text": text}));
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
    ) -> Value {
        self.asked(captured, timing.ts_ms);
        let mut output = serde_json::Map::new();
        if let Some(t) = &step.text {
            output.insert("text".into(), json!(t));
        }
        if !step.tool_calls.is_empty() {
            let calls: Vec<Value> = (step.tool_calls.iter())
                .map(|c| {
                    let args = serde_json::from_str::<Value>(&c.arguments)
                        .unwrap_or_else(|_| json!(c.arguments));
                    self.planned
                        .insert(c.id.clone(), (c.name.clone(), args.clone()));
                    json!({"call_id": c.id, "tool": c.name, "args": args})
                })
                .collect();
            output.insert("tool_calls".into(), json!(calls));
        }
        let mut e = json!({"kind": "inference", "output": output});
        if let Some(ts) = timing.ts_ms {
            e["ts_ms"] = json!(ts);
        }
        if let Some(m) = step.model.as_deref().or(model) {
            e["model"] = json!(m);
        }
        if let Some(h) = &captured.input_h {
            e["input_h"] = json!(h);
            if let Some(text) = &captured.raw_input {
                self.bytes = self.bytes.saturating_add(text.len() as u64);
                self.raw.push((h.clone(), text.clone()));
            }
        }
        if let Some((h, raw)) = &captured.system {
            e["system_h"] = json!(h);
            // The same system text, sent with every request, is kept once.
            let kept = self.raw.iter().any(|(k, _)| k == h);
            if let Some(text) = raw.as_ref().filter(|_| !kept) {
                self.bytes = self.bytes.saturating_add(text.len() as u64);
                self.raw.push((h.clone(), text.clone()));
            }
        }
        if let Some(t) = &captured.tools {
            e["tools_offered"] = json!(t);
        }
        if !self.fresh.is_empty() {
            e["consumes"] = json!(std::mem::take(&mut self.fresh));
        }
        if let Some(u) = step.usage {
            e["usage"] = json!(u);
        }
        if let Some(f) = step.finish {
            e["finish"] = json!(f.as_str());
        }
        if let Some(l) = timing.latency_ms {
            e["latency_ms"] = json!(l);
        }
        if !captured.parts.is_empty() {
            e["request_h"] = json!(captured.parts);
        }
        e
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
        if truncated {
            e["truncated"] = json!(true);
        }
        self.push_inference(e, limits);
        let mut err = json!({"kind": "error", "message": message, "code": code});
        if let Some(ts) = timing.ts_ms {
            err["ts_ms"] = json!(ts);
        }
        if let Some(h) = &captured.input_h {
            err["input_h"] = json!(h);
        }
        self.push(err);
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
        let mut e = json!({"kind": "error", "message": message, "code": code});
        if let Some(ts) = ts_ms {
            e["ts_ms"] = json!(ts);
        }
        self.push(e);
        true
    }

    /// Records a `note` event (where a replay went live), bounded like an error.
    pub fn note(&mut self, text: &str, limits: Limits) {
        if self.room(text.len() as u64 + 64, limits).is_err() {
            self.dropped += 1;
            return;
        }
        self.push(json!({"kind": "note", "text": text}));
    }

    /// Whether any model request was recorded (answered, failed or cut).
    pub fn requested(&self) -> bool {
        self.events.iter().any(|e| {
            matches!(e["kind"].as_str(), Some("inference"))
                || matches!(e["code"].as_str(), Some(c) if c.starts_with("upstream") || c == "stream-truncated")
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
            .filter(|e| e["kind"] == "inference")
            .count()
    }

    /// How the run ended, in a few words: the status of its `run_end` (`failed` when the
    /// runtime reported none), with the codes of its failed requests (`failed: upstream-error`).
    pub fn ended_as(&self) -> String {
        let mut codes: Vec<&str> = (self.events.iter())
            .filter(|e| e["kind"] == "error")
            .filter_map(|e| e["code"].as_str())
            .filter(|c| c.starts_with("upstream") || *c == "stream-truncated")
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
    pub fn end_status(&self) -> Option<&str> {
        let reported = (self.events.iter().rev())
            .find(|e| e["kind"] == "run_end")
            .and_then(|e| e["status"].as_str());
        match reported {
            Some(s) => Some(s),
            None if self.inferred_end().is_some() => Some("completed"),
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
        self.push(json!({"kind": "error", "message": message, "code": "replay-divergence"}));
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
            out.extend_from_slice(json!({"h": h, "text": text}).to_string().as_bytes());
            out.push(b'\n');
        }
        Some(out)
    }

    /// The recorded run as a sealed trace, every credential in `secrets` redacted from it: header, events numbered in order, and the
    /// `run_end` the runtime reported — or, when it reported none, the end its evidence shows
    /// (`ending`: `completed` after a final text answer, with a `note` saying so) or else
    /// `failed` (a run whose end nothing shows is never taken for a completed one). Every event is read back by the
    /// trace reader and written by the one trace writer ([`crate::trace::TraceWriter`]), in the
    /// format's key order, with the raw-prompt sidecar when the developer opted in.
    pub fn seal(
        &self,
        run: &RunHeader<'_>,
        (hasher, secrets): (&PromptHasher, &std::collections::BTreeSet<String>),
        limits: Limits,
    ) -> Result<crate::trace::SealedTrace, String> {
        let mut header = json!({
            "kind": "header", "format": crate::trace::FORMAT_NAME, "version": crate::trace::FORMAT_VERSION,
            "scenario": run.scenario, "case": run.case, "source": run.source,
        });
        if let Some(t) = run.trial {
            header["trial"] = json!(t);
        }
        if let Some(m) = run.model {
            header["model"] = json!(m);
        }
        let mut text = header.to_string();
        text.push('\n');
        let mut events = self.events.clone();
        // What the session knows to be a credential is written nowhere: not in an answer that
        // echoes it, nor in a tool result the agent hands back, in any spelling.
        for e in &mut events {
            super::redact::redact_value(e, secrets);
        }
        if self.dropped > 0 {
            events.push(json!({
                "kind": "error", "code": "replay-divergence",
                "message": format!("{} more error(s) and divergence(s), not recorded: the recording was full", self.dropped),
            }));
        }
        if self.cut_short {
            // Reported completed while a request had not answered: failed, closed.
            for e in events.iter_mut().filter(|e| e["kind"] == "run_end") {
                if e["status"] == "completed" {
                    e["status"] = json!("failed");
                    e["error"] = json!(
                        "the runtime reported the run completed while a model request was still in flight: its answer is not recorded"
                    );
                }
            }
        }
        match (self.ended, self.inferred_end()) {
            (true, _) => {}
            (false, Some(end)) => events.extend(end.events(run.source, self.final_answer)),
            (false, None) => events.push(json!({
                "kind": "run_end", "status": "failed",
                "error": format!("the runtime reported no run end to the {} server, and its last model answer was no final text answer", run.source),
            })),
        }
        for (i, mut e) in events.into_iter().enumerate() {
            e["seq"] = json!(i + 1);
            text.push_str(&e.to_string());
            text.push('\n');
        }
        let file = TraceFile::from_bytes("recorded run", text.into_bytes(), false);
        let seal = file.verify_seal(false).map_err(|e| e.to_string())?;
        let parsed = crate::trace::parse_trace(&file, &seal, limits).map_err(|e| e.to_string())?;
        let mut writer = crate::trace::TraceWriter::with_prompts(
            parsed.trace.header.clone(),
            hasher.clone(),
            false,
        );
        for e in &parsed.trace.events {
            writer.push_event(e);
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
        Ok(sealed)
    }
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
