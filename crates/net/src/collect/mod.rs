//! `tracereplay collect`: an OTLP/HTTP receiver for live-instrumented agents. `POST /v1/traces`
//! takes OTLP/JSON or protobuf (gzip or not); spans are grouped by trace id into runs, and each
//! run is written — mapped exactly as `ingest` maps the same spans from a file (one mapping,
//! `ingest::spans`) — once its root span has arrived and a moment has passed for stragglers,
//! after `--idle` seconds without a span, or when the receiver stops.
//!
//! It answers 200 only for what it parsed and kept: a body it cannot read gets 400 with the
//! reason, a content type it does not read 415, a body that unpacks past the limit 413, and a
//! request that would take it past its bounds (open runs, buffered bytes) 503 with
//! `Retry-After` — nothing of such a request is kept.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use camino::Utf8PathBuf;

mod http;

use crate::ingest::spans::Span;
use crate::ingest::spans::logs::LogRecord;
use crate::ingest::{IngestOptions, IngestOutcome, InputFormat};

/// How the receiver keeps and writes runs.
#[derive(Clone)]
pub struct CollectOptions {
    /// Where runs are written (`DIR/<scenario>/<case>.trace.ndjson.zst`).
    pub out: Utf8PathBuf,
    /// Hashing and naming, as `ingest` takes them.
    pub ingest: IngestOptions,
    /// A run with no span for this long is written even without its root span.
    pub idle: Option<Duration>,
    /// How long after its root span a run waits for stragglers before it is written.
    pub settle: Duration,
    /// Runs held open at most; past it, requests get 503.
    pub max_open_runs: usize,
    /// Bytes of spans held at most (their request bodies' size); past it, requests get 503.
    pub max_buffered: usize,
    /// Largest request body, after unpacking gzip.
    pub body_limit: usize,
    /// Limits of the traces written.
    pub limits: crate::trace::Limits,
    /// Fingerprints of secrets waived as false positives: a recording holding another secret
    /// is refused.
    pub waived: std::sync::Arc<std::collections::HashSet<String>>,
}

/// What the receiver tells as it goes: a run written (or why not), or a request refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// A run was written, or could not be.
    Run(Collected),
    /// A request was refused: nothing of it was kept.
    Refused(Refusal),
    /// Spans or log records of runs already written arrived (after `--settle`): not kept.
    Late(usize),
    /// A run opened: the first span or record of a trace id arrived (the trace id).
    Opened(String),
}

/// A refused request: its HTTP status, the reason (the same for every request refused alike,
/// so repeats can be counted), and the whole answer sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The status answered (400, 404, 413, 415, 503).
    pub status: u16,
    /// Why, in a few words that do not change from one request to the next of the same kind.
    pub reason: String,
    /// The message the answer carried.
    pub message: String,
}

impl Refusal {
    /// Whether the refusal only asks the client to retry later (back-pressure, 503): the data
    /// is not lost, the exporter sends it again.
    pub fn retryable(&self) -> bool {
        self.status == 503
    }
}

/// What a span costs held, estimated: its own fields, and each attribute's key and value with
/// the overhead of the map entry and allocations that hold them.
fn cost_of_span(s: &Span) -> usize {
    SPAN + s.trace_id.len()
        + s.span_id.len()
        + s.name.len()
        + s.parent_id.as_ref().map_or(0, String::len)
        + s.error.as_ref().map_or(0, String::len)
        + attrs_cost(&s.attrs)
}

/// A span held, besides its strings; a log record; a map entry; a JSON value.
const SPAN: usize = 320;
const RECORD: usize = 256;
const ENTRY: usize = 96;
const VALUE: usize = 32;

fn attrs_cost(attrs: &serde_json::Map<String, serde_json::Value>) -> usize {
    (attrs.iter())
        .map(|(k, v)| ENTRY + k.len() + value_cost(v))
        .sum()
}

fn value_cost(v: &serde_json::Value) -> usize {
    use serde_json::Value;
    VALUE
        + match v {
            Value::String(s) => s.len(),
            Value::Array(a) => a.iter().map(value_cost).sum(),
            Value::Object(o) => attrs_cost(o),
            _ => 0,
        }
}

/// How many written runs' trace ids the receiver remembers, to keep their late spans out.
const REMEMBERED: usize = 100_000;

/// A run written, or why it was not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collected {
    /// `scenario/case` (or the trace id, when the run could not be named).
    pub run: String,
    /// Where it was written, or why not.
    pub outcome: Result<String, String>,
}

struct Open {
    format: InputFormat,
    spans: Vec<Span>,
    /// Content the run's inferences sent as log records, merged into their spans when written.
    logs: Vec<LogRecord>,
    bytes: usize,
    last: Instant,
    root_at: Option<Instant>,
}

/// The receiver's state: the runs still open.
pub struct Collector {
    options: CollectOptions,
    open: Mutex<(HashMap<String, Open>, usize)>,
    /// The trace ids of runs written, the most recent [`REMEMBERED`]: a span of one that
    /// arrives later is not made a fragment run of its own.
    written: Mutex<(
        std::collections::HashSet<String>,
        std::collections::VecDeque<String>,
    )>,
    told: tokio::sync::mpsc::UnboundedSender<Heard>,
    /// Requests whose body is being read and parsed at once, at most
    /// [`crate::proxy::READERS`], as `record` bounds them.
    reading: tokio::sync::Semaphore,
}

impl Collector {
    /// A receiver writing under `options.out`; `told` hears of each run written.
    pub fn new(
        options: CollectOptions,
        told: tokio::sync::mpsc::UnboundedSender<Heard>,
    ) -> Collector {
        Collector {
            options,
            open: Mutex::new((HashMap::new(), 0)),
            written: Mutex::new(Default::default()),
            told,
            reading: tokio::sync::Semaphore::new(super::proxy::READERS),
        }
    }

    /// The router: `POST /v1/traces`, `POST /v1/logs`.
    pub fn router(self: Arc<Self>) -> axum::Router {
        axum::Router::new()
            .route("/v1/traces", axum::routing::post(http::traces))
            .route("/v1/logs", axum::routing::post(http::logs))
            .fallback(http::elsewhere)
            .with_state(self)
    }

    /// Writes the runs that are due: settled after their root span, or idle.
    pub fn write_due(&self) {
        let now = Instant::now();
        let due: Vec<(String, Open)> = {
            let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
            let ids: Vec<String> = (open.0.iter())
                .filter(|(_, o)| {
                    o.root_at.is_some_and(|r| now >= r + self.options.settle)
                        || self.options.idle.is_some_and(|i| now >= o.last + i)
                })
                .map(|(id, _)| id.clone())
                .collect();
            ids.into_iter()
                .filter_map(|id| {
                    let o = open.0.remove(&id)?;
                    open.1 = open.1.saturating_sub(o.bytes);
                    Some((id, o))
                })
                .collect()
        };
        self.write(due);
    }

    /// Writes every open run (at shutdown).
    pub fn write_all(&self) {
        let all: Vec<(String, Open)> = {
            let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
            open.1 = 0;
            open.0.drain().collect()
        };
        self.write(all);
    }

    fn write(&self, mut runs: Vec<(String, Open)>) {
        runs.sort_by(|a, b| a.0.cmp(&b.0));
        {
            let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
            for (id, _) in &runs {
                if written.0.insert(id.clone()) {
                    written.1.push_back(id.clone());
                }
                while written.1.len() > REMEMBERED {
                    if let Some(old) = written.1.pop_front() {
                        written.0.remove(&old);
                    }
                }
            }
        }
        for (id, o) in runs {
            let mut outcome = IngestOutcome::default();
            if o.spans.is_empty() {
                let why = "only log records arrived for this trace, no span: nothing to write";
                let _ = self.told.send(Heard::Run(Collected {
                    run: id.clone(),
                    outcome: Err(why.to_owned()),
                }));
                continue;
            }
            let mut spans = o.spans;
            let mut logs = crate::ingest::spans::logs::LogIndex::default();
            logs.extend(o.logs);
            logs.apply(&mut spans);
            let traces = vec![(id.clone(), o.format, spans)];
            crate::ingest::spans::build_traces(traces, None, &self.options.ingest, &mut outcome);
            for p in outcome.problems.iter().filter(|p| p.rejected) {
                let _ = self.told.send(Heard::Run(Collected {
                    run: id.clone(),
                    outcome: Err(p.message.clone()),
                }));
            }
            for run in outcome.runs {
                let trial = run
                    .trial
                    .as_deref()
                    .and_then(|t| crate::trace::TrialId::parse(t).ok());
                let header = super::record::RunHeader {
                    scenario: &run.scenario,
                    case: &run.case,
                    trial: trial.as_ref(),
                    model: None,
                    source: "collect",
                };
                let how = super::place::Placing {
                    dir: &self.options.out,
                    raw_prompts: self.options.ingest.raw_opt_in,
                    signer: None,
                    waived: &self.options.waived,
                    limits: self.options.limits,
                    replace: false,
                };
                let placed = super::place::place(&header, &run.trace, &how).map(|p| p.to_string());
                let name = format!("{}/{}", run.scenario, run.case);
                let _ = self.told.send(Heard::Run(Collected {
                    run: name,
                    outcome: placed,
                }));
            }
        }
    }

    /// Keeps what one request carried — spans, log records or both — with their runs, all or
    /// none. A full receiver makes room by writing the runs idle longest (their spans are as
    /// complete as they will get by then); a request that alone would pass its bounds is refused
    /// with 503 and `Retry-After`. Spans and records of runs already written (late, past
    /// `--settle`) are not kept: returns how many.
    fn keep(
        &self,
        format: InputFormat,
        (mut spans, mut logs): (Vec<Span>, Vec<LogRecord>),
    ) -> Result<usize, Box<Response>> {
        let late = {
            let written = self.written.lock().unwrap_or_else(|e| e.into_inner());
            let before = spans.len() + logs.len();
            spans.retain(|s| !written.0.contains(&s.trace_id));
            logs.retain(|l| !written.0.contains(&l.trace_id));
            before - spans.len() - logs.len()
        };
        // What is held is counted as what it costs in memory, not as the bytes it came in (a
        // protobuf of many tiny attributes is about six times its size once read).
        let bytes = (spans.iter().map(cost_of_span)).sum::<usize>()
            + (logs.iter())
                .map(|l| RECORD + value_cost(&l.body) + attrs_cost(&l.attrs))
                .sum::<usize>();
        if bytes > self.options.max_buffered {
            let message = format!(
                "the request holds about {bytes} bytes of spans once read, more than the receiver holds at most ({}, `--max-buffered-mb`): nothing of it was kept; send smaller batches",
                self.options.max_buffered
            );
            let reason = "a request larger than --max-buffered-mb alone";
            return Err(Box::new(self.refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                reason,
                &message,
            )));
        }
        let mut full = Vec::new();
        let kept = self.keep_open(format, (spans, logs), bytes, &mut full);
        // Written outside the lock: the runs that made room.
        self.write(full);
        if late > 0 && kept.is_ok() {
            let _ = self.told.send(Heard::Late(late));
        }
        kept.map(|()| late)
    }

    fn keep_open(
        &self,
        format: InputFormat,
        (spans, logs): (Vec<Span>, Vec<LogRecord>),
        bytes: usize,
        full: &mut Vec<(String, Open)>,
    ) -> Result<(), Box<Response>> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let incoming: std::collections::HashSet<&str> = (spans.iter().map(|s| s.trace_id.as_str()))
            .chain(logs.iter().map(|l| l.trace_id.as_str()))
            .collect();
        let new_runs = {
            let ids = spans.iter().map(|s| s.trace_id.as_str());
            let mut ids: Vec<&str> = (ids.chain(logs.iter().map(|l| l.trace_id.as_str())))
                .filter(|id| !open.0.contains_key(*id))
                .collect();
            ids.sort_unstable();
            ids.dedup();
            ids.len()
        };
        // Room made by writing the runs idle longest, but never one this request adds to.
        while open.0.len() + new_runs > self.options.max_open_runs
            || open.1 + bytes > self.options.max_buffered
        {
            let oldest = (open.0.iter())
                .filter(|(id, _)| !incoming.contains(id.as_str()))
                .min_by(|a, b| (a.1.last, a.0).cmp(&(b.1.last, b.0)))
                .map(|(id, _)| id.clone());
            let Some(id) = oldest else { break };
            if let Some(o) = open.0.remove(&id) {
                open.1 = open.1.saturating_sub(o.bytes);
                full.push((id, o));
            }
        }
        if open.0.len() + new_runs > self.options.max_open_runs
            || open.1 + bytes > self.options.max_buffered
        {
            let mut r = self.refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                "the receiver was full (back-pressure: the exporter retries)",
                &format!(
                    "the receiver is full ({} open runs, {} bytes held; at most {} and {}): nothing of this request was kept; retry",
                    open.0.len(),
                    open.1,
                    self.options.max_open_runs,
                    self.options.max_buffered
                ),
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            return Err(Box::new(r));
        }
        let now = Instant::now();
        let share = bytes / (spans.len() + logs.len()).max(1);
        // The run a span or record joins, opened with this request's format if new.
        fn run<'m>(
            runs: &'m mut HashMap<String, Open>,
            id: &str,
            (format, now, share): (InputFormat, Instant, usize),
        ) -> &'m mut Open {
            let run = runs.entry(id.to_owned()).or_insert_with(|| Open {
                format,
                spans: Vec::new(),
                logs: Vec::new(),
                bytes: 0,
                last: now,
                root_at: None,
            });
            run.last = now;
            run.bytes += share;
            run
        }
        let at = (format, now, share);
        let mut opened = std::collections::BTreeSet::new();
        for id in (spans.iter().map(|s| &s.trace_id)).chain(logs.iter().map(|l| &l.trace_id)) {
            if !open.0.contains_key(id) {
                opened.insert(id.clone());
            }
        }
        for id in opened {
            let _ = self.told.send(Heard::Opened(id));
        }
        for s in spans {
            let run = run(&mut open.0, &s.trace_id, at);
            if s.parent_id.is_none() {
                run.root_at = Some(now);
            }
            // Spans decide the format a run was read in (its log records may come first).
            run.format = format;
            run.spans.push(s);
        }
        for l in logs {
            run(&mut open.0, &l.trace_id, at).logs.push(l);
        }
        open.1 += bytes;
        Ok(())
    }
}

/// A receiver running in the background (its own runtime, signals in place before its address
/// is announced).
pub struct Receiving {
    /// Where it listens.
    pub addr: std::net::SocketAddr,
    collector: Arc<Collector>,
    told: tokio::sync::mpsc::UnboundedReceiver<Heard>,
    signals: Option<super::signals::Signals>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    runtime: tokio::runtime::Runtime,
}

/// Starts receiving on `addr`.
pub fn spawn(addr: std::net::SocketAddr, options: CollectOptions) -> std::io::Result<Receiving> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let (tell, told) = tokio::sync::mpsc::unbounded_channel();
    let collector = Arc::new(Collector::new(options, tell));
    let listener = runtime.block_on(tokio::net::TcpListener::bind(addr))?;
    let local = listener.local_addr()?;
    let signals = runtime.block_on(async { super::signals::Signals::install() })?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let router = collector.clone().router();
    runtime.spawn(super::running::serve_until(router, listener, async {
        let _ = stopped.await;
    }));
    let ticking = collector.clone();
    runtime.spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let c = ticking.clone();
            let _ = tokio::task::spawn_blocking(move || c.write_due()).await;
        }
    });
    Ok(Receiving {
        addr: local,
        collector,
        told,
        signals: Some(signals),
        stop: Some(stop),
        runtime,
    })
}

impl Receiving {
    /// Waits for SIGINT, SIGTERM or SIGHUP, then stops and writes every open run; `told` hears
    /// of each run written (or not) and each request refused as it happens, on the calling
    /// thread.
    pub fn wait(mut self, mut told: impl FnMut(&Heard)) {
        if let Some(mut signals) = self.signals.take() {
            let heard = &mut self.told;
            self.runtime.block_on(async {
                loop {
                    tokio::select! {
                        _ = signals.recv() => break,
                        Some(c) = heard.recv() => told(&c),
                    }
                }
            });
        }
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        // Requests in flight get a moment to be kept.
        (self.runtime).block_on(async { tokio::time::sleep(Duration::from_millis(50)).await });
        self.collector.write_all();
        while let Ok(c) = self.told.try_recv() {
            told(&c);
        }
    }
}
