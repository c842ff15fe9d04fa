//! What the runtime reports to a recording (`POST …/tracereplay/v1/events`, `finish`'s body):
//! each event checked by the trace reader, and against the recording (one `final_answer`, one
//! `run_end`, edits of messages sent), before it is kept.

use serde_json::{Value, json};

use super::{Recording, Refused, reportable};
use crate::trace::{Event, EventBody, Limits, TraceError, TraceFile};

impl Recording {
    /// Hashes the text of each `user_message` the runtime reports as `text` (it lacks the key
    /// the recorder hashes with) into the `prompt` the trace format holds, as the recorder hashes
    /// the turns it forwards; under the developer opt-in, the text goes to the raw-prompt
    /// sidecar. Any other prompt-side text is left for [`Self::report`] to refuse.
    pub fn hash_user_text(
        &mut self,
        events: &mut [Value],
        hasher: &crate::trace::PromptHasher,
        raw_prompts: bool,
    ) {
        for e in events.iter_mut() {
            let is_user = (e.get("kind").and_then(Value::as_str))
                .is_some_and(|k| crate::trace::normalize_kind(k) == Some("user_message"));
            if !is_user || e.get("prompt").is_some() {
                continue;
            }
            let Some(Value::String(text)) = e.as_object_mut().and_then(|m| m.remove("text")) else {
                continue;
            };
            let (h, len) = (hasher.hash(&text), text.chars().count());
            e["prompt"] = json!({"h": h, "len": len});
            if raw_prompts && !self.raw.iter().any(|(kept, _)| *kept == h) {
                self.bytes = self.bytes.saturating_add(text.len() as u64);
                self.raw.push((h, text));
            }
        }
    }

    /// Records an event the runtime reported, after checking it with the trace reader (so a
    /// raw prompt, a missing field or an unknown kind is refused now, with the reason).
    pub fn report(&mut self, event: Value, limits: Limits) -> Result<(), Refused> {
        let (event, size) = self.admit(&event, limits)?;
        match &event.body {
            EventBody::RunEnd { .. } => self.ended = true,
            EventBody::FinalAnswer { .. } => self.final_answer = true,
            EventBody::Message { id, .. } => {
                self.sent.insert(id.to_string());
            }
            _ => {}
        }
        self.push_sized(event, size);
        Ok(())
    }

    /// Records events the runtime reported, all or none: each is checked as [`Self::report`]
    /// checks it, in order, before any is kept.
    pub fn report_all(
        &mut self,
        events: Vec<Value>,
        limits: Limits,
    ) -> Result<(), (usize, Refused)> {
        let (ended, final_answer, sent, bytes) =
            (self.ended, self.final_answer, self.sent.clone(), self.bytes);
        let before = self.events.len();
        for (i, e) in events.into_iter().enumerate() {
            if let Err(why) = self.report(e, limits) {
                // Undo: the events already taken from this request leave no trace.
                self.events.truncate(before);
                (self.ended, self.final_answer, self.sent, self.bytes) =
                    (ended, final_answer, sent, bytes);
                return Err((i, why));
            }
        }
        Ok(())
    }

    /// Whether `event` may be recorded now: a reportable kind, a valid trace line, one that
    /// keeps the recording valid (one `final_answer`, one `run_end`, edits of messages sent),
    /// and room for it.
    /// Returns the event as the trace reader read it, and the size of its line.
    fn admit(&self, event: &Value, limits: Limits) -> Result<(Event<'static>, u64), Refused> {
        let kind = event.get("kind").and_then(Value::as_str).unwrap_or("");
        if !reportable().any(|k| k == kind) {
            return Err(Refused::Invalid(format!(
                "an event of kind `{kind}` cannot be reported (reportable: {}); model requests and tool results are recorded by the server",
                reportable().collect::<Vec<_>>().join(", ")
            )));
        }
        let mut probe = event.clone();
        probe["seq"] = json!(2);
        // An edit or delete is checked after a message of its id (whether that message was
        // sent in this recording is the conflict check's question, below).
        let sent = match (kind, event.get("id")) {
            ("message_edit" | "message_delete", Some(Value::String(id))) => {
                json!({"kind": "message", "seq": 1, "id": id, "phase": "preview", "text": ""})
                    .to_string()
                    + "\n"
            }
            _ => String::new(),
        };
        let text = format!(
            "{}\n{sent}{probe}\n",
            json!({"kind": "header", "format": crate::trace::FORMAT_NAME, "version": crate::trace::FORMAT_VERSION, "scenario": "probe", "case": "probe"}),
        );
        let file = TraceFile::from_bytes("reported event", text.into_bytes(), false);
        // The trace reader's advice names `check`'s opt-in; a runtime reporting to the
        // recorder is told what the recorder takes instead.
        let invalid = |e: TraceError| {
            Refused::Invalid(match e {
                TraceError::Privacy {
                    path,
                    line,
                    detail,
                    waivable: true,
                } => format!(
                    "`{path}`, line {line}: privacy violation: {detail}: report a user turn as `{{\"kind\":\"user_message\",\"text\":…}}` and the recorder hashes it (its raw text is kept only under `record --dev-raw-prompts`, in a sidecar)"
                ),
                e => e.to_string(),
            })
        };
        let seal = file.verify_seal(false).map_err(invalid)?;
        let parsed = crate::trace::parse_trace(&file, &seal, limits).map_err(invalid)?;
        let Some(read) = parsed.trace.events.last() else {
            return Err(Refused::Invalid("the event was not read".to_owned()));
        };
        // Numbered when the recording is sealed, as every event is (the probe's `seq` is not).
        let mut read = read.clone().into_owned();
        (read.seq, read.line) = (0, 0);
        let size = super::line_len(&read) + 1;
        let id = event.get("id").and_then(Value::as_str).unwrap_or("");
        let conflict = match kind {
            "run_end" if self.ended => Some("the run's end was reported already".to_owned()),
            "final_answer" if self.final_answer => {
                Some("a final answer was reported already".to_owned())
            }
            "message_edit" | "message_delete" if !self.sent.contains(id) => Some(format!(
                "it names message `{}`, which was never sent",
                crate::report::escape_controls(id)
            )),
            _ => None,
        };
        if let Some(c) = conflict {
            return Err(Refused::Conflict(format!(
                "{c}: recording it would make the trace invalid"
            )));
        }
        self.room(size, limits)?;
        Ok((read, size))
    }
}
