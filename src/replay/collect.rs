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

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use camino::Utf8PathBuf;

use crate::ingest::spans::Span;
use crate::ingest::spans::logs::LogRecord;
use crate::ingest::{Format, IngestOptions, IngestOutcome};

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
}

/// What the receiver tells as it goes: a run written (or why not), or a request refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// A run was written, or could not be.
    Run(Collected),
    /// A request was refused: nothing of it was kept.
    Refused(Refusal),
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

/// A run written, or why it was not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collected {
    /// `scenario/case` (or the trace id, when the run could not be named).
    pub run: String,
    /// Where it was written, or why not.
    pub outcome: Result<String, String>,
}

struct Open {
    format: Format,
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
    told: tokio::sync::mpsc::UnboundedSender<Heard>,
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
            told,
        }
    }

    /// The router: `POST /v1/traces`, `POST /v1/logs`.
    pub fn router(self: Arc<Self>) -> axum::Router {
        axum::Router::new()
            .route("/v1/traces", axum::routing::post(traces))
            .route("/v1/logs", axum::routing::post(logs))
            .fallback(elsewhere)
            .layer(axum::extract::DefaultBodyLimit::max(
                self.options.body_limit,
            ))
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
                let how = super::place::Placement {
                    dir: &self.options.out,
                    raw_prompts: self.options.ingest.raw_opt_in,
                    signer: None,
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
    /// none: refused with 503 and `Retry-After` when it would take the receiver past its bounds.
    fn keep(
        &self,
        format: Format,
        (spans, logs): (Vec<Span>, Vec<LogRecord>),
        bytes: usize,
    ) -> Result<(), Box<Response>> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let new_runs = {
            let ids = spans.iter().map(|s| s.trace_id.as_str());
            let mut ids: Vec<&str> = (ids.chain(logs.iter().map(|l| l.trace_id.as_str())))
                .filter(|id| !open.0.contains_key(*id))
                .collect();
            ids.sort_unstable();
            ids.dedup();
            ids.len()
        };
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
            (format, now, share): (Format, Instant, usize),
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

impl Collector {
    /// The answer refusing a request, told to whoever runs the receiver: `reason` is the same
    /// for every request refused alike (so repeats are counted), `message` the whole answer.
    fn refuse(&self, status: StatusCode, reason: &str, message: &str) -> Response {
        let _ = self.told.send(Heard::Refused(Refusal {
            status: status.as_u16(),
            reason: reason.to_owned(),
            message: message.to_owned(),
        }));
        let body = serde_json::json!({"code": status.as_u16(), "message": message});
        (status, axum::Json(body)).into_response()
    }
}

/// The body, unpacked when it says it is gzip (or starts like gzip), within `limit`.
fn unpacked(
    c: &Collector,
    headers: &HeaderMap,
    body: &Bytes,
    limit: usize,
) -> Result<Vec<u8>, Box<Response>> {
    let gzip = (headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok()))
    .is_some_and(|e| e.eq_ignore_ascii_case("gzip"))
        || body.starts_with(&[0x1f, 0x8b]);
    if !gzip {
        return Ok(body.to_vec());
    }
    crate::ingest::collector::unpack("request.gz", body, limit as u64)
        .map(|b| b.into_owned())
        .map_err(|e| {
            let (status, reason) = if e.contains("unpacks to more than") {
                (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "the body unpacks past the limit",
                )
            } else {
                (StatusCode::BAD_REQUEST, "the body is not valid gzip")
            };
            Box::new(c.refuse(status, reason, &format!("the body is {e}")))
        })
}

/// A request's body, unpacked, and whether it is protobuf (else OTLP/JSON); or the answer to a
/// content type the receiver does not read, or a body past the limit.
fn request(
    c: &Collector,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<(bool, Vec<u8>), Box<Response>> {
    let kind = (headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok()))
    .unwrap_or("")
    .split(';')
    .next()
    .unwrap_or("")
    .trim()
    .to_ascii_lowercase();
    let proto = match kind.as_str() {
        "application/json" => false,
        "application/x-protobuf" => true,
        other => {
            let message = format!(
                "content type `{other}` is not read: send application/json or application/x-protobuf (OTLP/HTTP)"
            );
            return Err(Box::new(c.refuse(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                &format!("content type `{other}` is not read"),
                &message,
            )));
        }
    };
    let bytes = unpacked(c, headers, body, c.options.body_limit)?;
    Ok((proto, bytes))
}

/// The answer to a request whose content was kept: an empty protobuf response, or OTLP/JSON's
/// `partialSuccess` (empty, or counting what was not kept).
fn kept(proto: bool, partial: serde_json::Value) -> Response {
    match proto {
        true => (
            [(header::CONTENT_TYPE, "application/x-protobuf")],
            Vec::new(),
        )
            .into_response(),
        false => axum::Json(serde_json::json!({"partialSuccess": partial})).into_response(),
    }
}

/// The body of a request, or the answer to one past the body limit.
fn body_of(c: &Collector, body: Result<Bytes, BytesRejection>) -> Result<Bytes, Box<Response>> {
    body.map_err(|e| {
        let status = e.status();
        let reason = match status {
            StatusCode::PAYLOAD_TOO_LARGE => "the body is larger than the limit",
            _ => "the body could not be read",
        };
        Box::new(c.refuse(status, reason, &format!("not kept: {}", e.body_text())))
    })
}

/// Any other path: refused, naming the two the receiver takes (an exporter of metrics pointed
/// at it, say).
async fn elsewhere(State(c): State<Arc<Collector>>, uri: axum::http::Uri) -> Response {
    let path = uri.path();
    c.refuse(
        StatusCode::NOT_FOUND,
        &format!("`{}` is not received", crate::report::escape_controls(path)),
        &format!(
            "`{}` is not received: collect takes spans at POST /v1/traces and log records at POST /v1/logs",
            crate::report::escape_controls(path)
        ),
    )
}

/// `POST /v1/traces`.
async fn traces(
    State(c): State<Arc<Collector>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body_of(&c, body) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let (proto, bytes) = match request(&c, &headers, &body) {
        Ok(r) => r,
        Err(r) => return *r,
    };
    let format = if proto {
        Format::OtlpProto
    } else {
        Format::OtlpJson
    };
    let mut outcome = IngestOutcome::default();
    let read = crate::ingest::spans::read(format, &bytes, &mut outcome);
    if let Some(p) = outcome.problems.iter().find(|p| p.rejected) {
        let message = format!("not kept: {}: {}", p.position, p.message);
        let reason = "the body is not a readable OTLP trace export";
        return c.refuse(StatusCode::BAD_REQUEST, reason, &message);
    }
    match c.keep(format, (read.spans, Vec::new()), bytes.len()) {
        Ok(()) => kept(proto, serde_json::json!({})),
        Err(r) => *r,
    }
}

/// `POST /v1/logs`: the `gen_ai.client.inference.operation.details` records (an inference's
/// content sent apart from its span) are kept with their run; other records are not, and the
/// answer's `partialSuccess` counts them.
async fn logs(
    State(c): State<Arc<Collector>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body_of(&c, body) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let (proto, bytes) = match request(&c, &headers, &body) {
        Ok(r) => r,
        Err(r) => return *r,
    };
    let read = match proto {
        false => crate::ingest::spans::logs::read_json(&bytes),
        true => crate::ingest::spans::logs::read_proto(&bytes),
    };
    let (records, other) = match read {
        Ok(r) => r,
        Err(e) => {
            let reason = "the body is not a readable OTLP logs export";
            return c.refuse(StatusCode::BAD_REQUEST, reason, &format!("not kept: {e}"));
        }
    };
    let format = if proto {
        Format::OtlpProto
    } else {
        Format::OtlpJson
    };
    if let Err(r) = c.keep(format, (Vec::new(), records), bytes.len()) {
        return *r;
    }
    let mut partial = serde_json::json!({});
    if other > 0 {
        partial = serde_json::json!({
            "rejectedLogRecords": other,
            "errorMessage": format!("{other} record(s) carry no inference content of a span (`{}` or the per-message `gen_ai.*.message`/`gen_ai.choice` events): not kept", crate::ingest::spans::logs::DETAILS),
        });
    }
    kept(proto, partial)
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
