//! Span exports ingested as they are read (`ingest` of OTLP/JSON and OTLP protobuf): a first pass
//! counts each trace's spans, the second hands each span to its trace, which is built as soon as
//! its last span arrives — as the receiver builds a run when its root span ends. Memory holds the
//! open traces' spans, never every span of the export; the runs come out in the order reading the
//! export whole gives them (first span's start, then trace id).

use std::collections::HashMap;

use super::Span;
use crate::ingest::{IngestOptions, IngestOutcome, IngestedRun, InputFormat};

/// An export ingested as it is read: each trace is built as soon as its last span is read (the
/// first pass counted them), so memory holds the open traces' spans, never every span of the
/// export — as the receiver holds only the runs still open.
pub(crate) struct Stream {
    format: InputFormat,
    opts: IngestOptions,
    /// Spans still to come, by trace id.
    remaining: HashMap<String, usize>,
    /// The spans read so far of each open trace.
    open: HashMap<String, Vec<Span>>,
    /// Each run built, with the key runs are ordered by (first span's start, trace id).
    keys: Vec<((u128, String), usize)>,
    /// The log records carrying content of the spans.
    logs: super::logs::LogIndex,
}

impl Stream {
    /// A stream of `format` spans, `remaining` of each trace still to come, given what `logs`
    /// carry for them as each trace is built.
    pub(crate) fn new(
        format: InputFormat,
        opts: IngestOptions,
        remaining: HashMap<String, usize>,
        logs: super::logs::LogIndex,
    ) -> Stream {
        Stream {
            format,
            opts,
            remaining,
            open: HashMap::new(),
            keys: Vec::new(),
            logs,
        }
    }

    /// Hands `span` to its trace, building the trace when it was the last one.
    pub(crate) fn push(&mut self, span: Span, outcome: &mut IngestOutcome) {
        let id = span.trace_id.clone();
        self.open.entry(id.clone()).or_default().push(span);
        let left = self.remaining.get_mut(&id).map(|n| {
            *n = n.saturating_sub(1);
            *n
        });
        if left == Some(0) {
            let spans = self.open.remove(&id).unwrap_or_default();
            self.build(id, spans, outcome);
        }
    }

    fn build(&mut self, id: String, mut spans: Vec<Span>, outcome: &mut IngestOutcome) {
        self.logs.apply(&mut spans);
        let before = outcome.runs.len();
        let first = spans.iter().map(|s| s.start_ns).min().unwrap_or(0);
        super::build_traces(
            vec![(id.clone(), self.format, spans)],
            None,
            &self.opts,
            outcome,
        );
        for i in before..outcome.runs.len() {
            self.keys.push(((first, id.clone()), i));
        }
    }

    /// Builds what is still open (a trace whose counted spans did not all come back: none
    /// should), and puts the runs built into `outcome` in the order of the whole export, with
    /// the problems met.
    pub(crate) fn finish(mut self, built: &mut IngestOutcome, outcome: &mut IngestOutcome) {
        let mut left: Vec<(String, Vec<Span>)> = self.open.drain().collect();
        left.sort_by(|a, b| a.0.cmp(&b.0));
        for (id, spans) in left {
            self.build(id, spans, built);
        }
        self.keys.sort();
        let mut runs: Vec<Option<IngestedRun>> = built.runs.drain(..).map(Some).collect();
        outcome
            .runs
            .extend(self.keys.into_iter().filter_map(|(_, i)| runs[i].take()));
        outcome.problems.append(&mut built.problems);
        for (k, n) in std::mem::take(&mut built.skipped) {
            *outcome.skipped.entry(k).or_default() += n;
        }
    }
}
