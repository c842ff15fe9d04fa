//! Facts derived once per trace and shared by every oracle: the tool calls, the messages standing
//! at the end (edits and deletes applied), and the final answer.

use crate::trace::json::eq_ci;
use crate::trace::{EventBody, Phase, ToolCallRef, Trace};

/// An actual call as the matchers see it (the base of `tool-sequence` and the argument
/// matching): its `seq`, tool, arguments and the inference that planned it with others.
#[derive(Debug, Clone)]
pub struct ActualCall {
    /// Its `seq`.
    pub seq: u64,
    /// Tool name.
    pub tool: String,
    /// Arguments as JSON.
    pub args: serde_json::Value,
    /// The inference that planned it together with others, if any.
    pub batch: Option<u64>,
}

/// A message as it stands after every edit and delete.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageState {
    /// Its id.
    pub id: String,
    /// Phase after edits (an edit with `phase: final` promotes a preview).
    pub phase: Phase,
    /// Text after edits.
    pub text: String,
    /// `seq` of the message or its last edit: its position.
    pub seq: u64,
    /// Time of the message or its last edit.
    pub ts_ms: Option<i64>,
    /// Whether a `message_delete` retracted it.
    pub deleted: bool,
    /// `seq` of every event that shaped it (send, edits, delete).
    pub history: Vec<u64>,
}

/// The run's final answer and where it came from.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FinalAnswer {
    /// The text (empty when the run has none).
    pub text: String,
    /// The deciding event: the `final_answer`, or the standing final message's last edit.
    pub seq: Option<u64>,
}

impl FinalAnswer {
    /// The evidence of an answer an oracle needs, or that oracle's failure when the run has
    /// none (`expected`: what the oracle looked for).
    pub fn required(&self, expected: serde_json::Value) -> Result<Vec<u64>, super::OracleResult> {
        let evidence: Vec<u64> = self.seq.into_iter().collect();
        if self.text.is_empty() {
            return Err(super::OracleResult::fail(
                "the run has no final answer",
                evidence,
                expected,
                serde_json::Value::Null,
            ));
        }
        Ok(evidence)
    }
}

/// Everything the oracles share about one trace.
#[derive(Debug)]
pub struct Facts<'t, 'a> {
    /// The trace.
    pub trace: &'t Trace<'a>,
    /// Tool calls in `seq` order.
    pub calls: Vec<ToolCallRef<'t, 'a>>,
    /// Every message sent, in order of first sending, with its final state.
    pub messages: Vec<MessageState>,
    /// The final answer by the spec's rule.
    pub final_answer: FinalAnswer,
    /// Approval requests and decisions, matched (derived on first use: only some oracles and
    /// the normalised behaviour need them).
    approvals: std::cell::OnceCell<super::approval::Approvals>,
    /// The batch of each call (derived on first use).
    batches: std::cell::OnceCell<Vec<Option<u64>>>,
    /// The calls inferences planned (derived on first use: only `"of": "planned"` needs them).
    planned: std::cell::OnceCell<Vec<ActualCall>>,
    /// `{"header", "events"}` as JSON text (built on first use: only `expr` reads it).
    document: std::cell::OnceCell<String>,
    /// The result of each call (derived on first use).
    results: std::cell::OnceCell<Vec<Option<usize>>>,
    /// What the trace's `expr` programs may still take (shared with the facts of its turns).
    pub(crate) budget: super::budget::ExprBudget,
}

impl<'t, 'a> Facts<'t, 'a> {
    /// Derives the facts of `trace`, whose `expr` programs have the trace's budget.
    pub fn new(trace: &'t Trace<'a>) -> Self {
        Self::within(trace, super::budget::ExprBudget::new(None))
    }

    /// Derives the facts of `trace` judged within a whole run's `expr` budget.
    pub fn with_run_budget(trace: &'t Trace<'a>, run: super::budget::RunBudget) -> Self {
        Self::within(trace, super::budget::ExprBudget::new(Some(run)))
    }

    /// Derives the facts of a part of a trace (a turn), whose `expr` programs spend the
    /// budget of the facts `of` the whole.
    pub(crate) fn part(trace: &'t Trace<'a>, of: &Facts<'_, '_>) -> Self {
        Self::within(trace, of.budget.clone())
    }

    fn within(trace: &'t Trace<'a>, budget: super::budget::ExprBudget) -> Self {
        let calls: Vec<_> = trace.tool_calls().collect();
        let mut messages: Vec<MessageState> = Vec::new();
        let mut final_event = None;
        for e in &trace.events {
            match &e.body {
                EventBody::Message {
                    id, phase, text, ..
                } => {
                    // A second `message` with an id already sent replaces it (a re-send).
                    messages.retain(|m| m.id != id.as_str());
                    messages.push(MessageState {
                        id: id.to_string(),
                        phase: *phase,
                        text: text.to_string(),
                        seq: e.seq,
                        ts_ms: e.ts_ms,
                        deleted: false,
                        history: vec![e.seq],
                    });
                }
                EventBody::MessageEdit { id, text, phase } => {
                    if let Some(m) = messages.iter_mut().find(|m| m.id == id.as_str()) {
                        m.text = text.to_string();
                        if let Some(p) = phase {
                            m.phase = *p;
                        }
                        m.seq = e.seq;
                        m.ts_ms = e.ts_ms;
                        m.history.push(e.seq);
                    }
                }
                EventBody::MessageDelete { id } => {
                    if let Some(m) = messages.iter_mut().find(|m| m.id == id.as_str()) {
                        m.deleted = true;
                        m.history.push(e.seq);
                    }
                }
                EventBody::FinalAnswer { text } if !text.is_empty() => {
                    final_event = Some((text.to_string(), e.seq));
                }
                _ => {}
            }
        }
        let final_answer = match final_event {
            Some((text, seq)) => FinalAnswer {
                text,
                seq: Some(seq),
            },
            None => messages
                .iter()
                .filter(|m| !m.deleted && m.phase == Phase::Final)
                .max_by_key(|m| m.seq)
                .map(|m| FinalAnswer {
                    text: m.text.clone(),
                    seq: Some(m.seq),
                })
                .unwrap_or_default(),
        };
        Facts {
            trace,
            calls,
            messages,
            final_answer,
            approvals: std::cell::OnceCell::new(),
            batches: std::cell::OnceCell::new(),
            planned: std::cell::OnceCell::new(),
            document: std::cell::OnceCell::new(),
            results: std::cell::OnceCell::new(),
            budget,
        }
    }

    /// The calls the inferences planned, in order: each with the `seq` of its inference, which
    /// is also its batch. Derived once per trace, whichever oracles read them.
    pub fn planned(&self) -> &[ActualCall] {
        self.planned.get_or_init(|| {
            let mut out = Vec::new();
            for e in &self.trace.events {
                if let EventBody::Inference(i) = &e.body {
                    for c in i.output.iter().flat_map(|o| o.tool_calls.iter().flatten()) {
                        out.push(ActualCall {
                            seq: e.seq,
                            tool: c.tool.to_string(),
                            args: c.args.value(),
                            batch: Some(e.seq),
                        });
                    }
                }
            }
            out
        })
    }

    /// The trace as one JSON document, `{"header": …, "events": [ … ]}`: what `expr` programs
    /// read. Built once per trace, however many `expr` oracles the scenario has.
    pub fn document(&self) -> &str {
        self.document.get_or_init(|| {
            serde_json::json!({"header": self.trace.header, "events": self.trace.events})
                .to_string()
        })
    }

    /// The batch of each call in [`Facts::calls`] (same index): the `seq` of the `inference`
    /// that planned it, or `None` when no inference before it planned it.
    ///
    /// Membership comes from the order of events, never from call ids alone: a call belongs to
    /// the latest inference before it that planned a call with the same id *and* tool and whose
    /// planned call no earlier execution has claimed. So two inferences that each plan a call
    /// with the id `""` (or the same id) give two batches, not one. Checking that ids are
    /// non-empty and distinct is `call-result-linked`'s job, not this one's.
    pub fn batches(&self) -> &[Option<u64>] {
        self.batches.get_or_init(|| {
            // Each inference seen so far: its seq and its planned (call id, tool, claimed).
            type Plan<'p> = (u64, Vec<(&'p str, &'p str, bool)>);
            let mut plans: Vec<Plan> = Vec::new();
            let mut out = Vec::with_capacity(self.calls.len());
            for e in &self.trace.events {
                match &e.body {
                    EventBody::Inference(i) => {
                        let planned: Vec<(&str, &str, bool)> = (i.output.iter())
                            .flat_map(|o| o.tool_calls.iter().flatten())
                            .map(|c| (c.call_id.as_str(), c.tool.as_str(), false))
                            .collect();
                        if !planned.is_empty() {
                            plans.push((e.seq, planned));
                        }
                    }
                    EventBody::ToolCall { call_id, tool, .. } => {
                        let claimed = plans.iter_mut().rev().find_map(|(seq, planned)| {
                            let entry = planned.iter_mut().find(|(id, t, claimed)| {
                                !*claimed && *id == call_id.as_str() && eq_ci(t, tool)
                            })?;
                            entry.2 = true;
                            Some(*seq)
                        });
                        out.push(claimed);
                    }
                    _ => {}
                }
            }
            out
        })
    }

    /// The result of each call, in [`Facts::calls`] order, as an index into the trace's
    /// events: each `tool_result` belongs to the latest earlier call with its id that has none
    /// yet. Real recordings reuse call ids (tau-bench's gpt-4o runs give a later call the id of
    /// an earlier one), so the id alone would hand one call another's result.
    pub fn call_results(&self) -> &[Option<usize>] {
        self.results.get_or_init(|| {
            let mut out = vec![None; self.calls.len()];
            let mut open: foldhash::HashMap<&str, Vec<usize>> = Default::default();
            let mut next = 0;
            for (j, e) in self.trace.events.iter().enumerate() {
                while next < self.calls.len() && self.calls[next].event.seq <= e.seq {
                    (open.entry(self.calls[next].call_id.as_str()))
                        .or_default()
                        .push(next);
                    next += 1;
                }
                if let EventBody::ToolResult { call_id, .. } = &e.body {
                    if let Some(i) = open.get_mut(call_id.as_str()).and_then(Vec::pop) {
                        out[i] = Some(j);
                    }
                }
            }
            out
        })
    }

    /// The tool of each result's call, by the result's `seq` (a result no call owns is
    /// absent), by the pairing of [`Facts::call_results`].
    pub fn tool_of_results(&self) -> foldhash::HashMap<u64, &str> {
        (self.calls.iter().zip(self.call_results()))
            .filter_map(|(c, r)| Some((self.trace.events[(*r)?].seq, c.tool.as_str())))
            .collect()
    }

    /// Approval requests and decisions, matched once per trace.
    pub fn approvals(&self) -> &super::approval::Approvals {
        self.approvals
            .get_or_init(|| super::approval::Approvals::new(self.trace))
    }

    /// Messages still standing at the end.
    pub fn standing(&self) -> impl Iterator<Item = &MessageState> {
        self.messages.iter().filter(|m| !m.deleted)
    }
}
