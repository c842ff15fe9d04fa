//! One exchange with the upstream: the request forwarded unchanged, the answer streamed back
//! piece by piece as it arrives (never buffered to its end), and read on the way through into
//! what the recording keeps — or, when it fails or is cut, into an `error` event saying so.
//! The recorder (`record`) and `replay serve` going live forward through it, each recording
//! into its own session ([`Sink`]).

use std::collections::BTreeSet;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName, StatusCode};
use axum::response::Response;
use serde_json::Value;

use super::answer::Answer;
use super::canonical::Api;
use super::capture;
use super::record::{Recording, Timing};
use super::server::error_in;
use super::stream_reader::{ANSWER_KEEP, StreamReader};

/// What records an ended exchange into its session: given the session's recording, the
/// credentials its requests carried (kept out of what is recorded) and the model it asked for.
pub(crate) type RecordInto<'a> = dyn FnMut(&mut Recording, &BTreeSet<String>, Option<&str>) + 'a;

/// Where a forwarded exchange is recorded: its session's recording, if the session is still
/// open when the exchange ends.
pub(crate) trait Sink: Send + Sync + 'static {
    /// Runs `f` on the session's recording; does nothing once the session ended.
    fn record(&self, f: &mut RecordInto<'_>);
}

/// The upstream and how to reach it.
pub(crate) struct Forwarder {
    /// The upstream's base URL.
    pub(crate) upstream: String,
    /// How long the upstream may stay silent.
    pub(crate) timeout: Duration,
    /// Limits of what is recorded.
    pub(crate) limits: crate::trace::Limits,
    client: super::client::Upstream,
}

impl Forwarder {
    /// A forwarder to `upstream` (checked already).
    pub(crate) fn new(
        upstream: String,
        timeout: Duration,
        limits: crate::trace::Limits,
    ) -> std::io::Result<Forwarder> {
        Ok(Forwarder {
            upstream,
            timeout,
            limits,
            client: super::client::upstream()?,
        })
    }
}

/// The most of a non-streamed answer (or an error body) kept for reading: larger answers are
/// still passed through whole, and recorded as too large to read.
const KEEP: usize = 16 << 20;

/// The most of an error's message (an upstream's error body, say) recorded, in characters: cut
/// after the session's credentials are redacted from the whole.
const EXCERPT: usize = 4096;

/// Headers that belong to one hop, never forwarded either way.
const HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "host",
    "content-length",
];

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Why the upstream gave no answer.
enum Unanswered {
    /// Silent for longer than the upstream timeout.
    TimedOut,
    /// Not reached, or the exchange failed (the error and its causes).
    Failed(String),
}

/// Sends the request to the upstream: `rest` (and the query) under the upstream's base URL,
/// the headers but the hop's own and the recorder's, identity encoding (so the recorder can
/// read the answer it passes on), the body unchanged.
async fn send(
    forwarder: &Forwarder,
    parts: &Parts,
    rest: &str,
    body: Bytes,
) -> Result<hyper::Response<hyper::body::Incoming>, Unanswered> {
    let mut url = format!("{}{rest}", forwarder.upstream.trim_end_matches('/'));
    if let Some(q) = parts.uri.query() {
        url.push('?');
        url.push_str(q);
    }
    let mut request = hyper::Request::builder()
        .method(parts.method.clone())
        .uri(url);
    for (name, value) in &parts.headers {
        let n = name.as_str();
        if HOP.contains(&n) || n.starts_with("x-tracereplay-") || n == "accept-encoding" {
            continue;
        }
        request = request.header(name, value);
    }
    let request = (request.header("accept-encoding", "identity"))
        .body(http_body_util::Full::new(body))
        .map_err(|e| Unanswered::Failed(e.to_string()))?;
    match tokio::time::timeout(forwarder.timeout, forwarder.client.request(request)).await {
        Err(_) => Err(Unanswered::TimedOut),
        Ok(Err(e)) => Err(Unanswered::Failed(error_chain(&e))),
        Ok(Ok(answer)) => Ok(answer),
    }
}

/// The answer's headers to pass back: all but the hop's own.
fn answer_headers(from: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    for (name, value) in from {
        if HOP.contains(&name.as_str()) && name.as_str() != "content-length" {
            continue;
        }
        if let Ok(n) = HeaderName::from_bytes(name.as_str().as_bytes()) {
            out.append(n, value.clone());
        }
    }
    out
}

/// The next piece of an answer's body: `Ok(None)` at its end, `Err` when it was cut or the
/// upstream fell silent for longer than the timeout.
async fn next_piece(
    body: &mut hyper::body::Incoming,
    timeout: std::time::Duration,
) -> Result<Option<Bytes>, String> {
    use http_body_util::BodyExt;
    loop {
        match tokio::time::timeout(timeout, body.frame()).await {
            Err(_) => {
                return Err(format!(
                    "the upstream was silent for {} s",
                    timeout.as_secs_f64()
                ));
            }
            Ok(None) => return Ok(None),
            Ok(Some(Err(e))) => return Err(error_chain(&e)),
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    return Ok(Some(data));
                }
                // Trailers: nothing to pass on.
            }
        }
    }
}

/// A request forwarded as it is, its answer passed back, nothing recorded (`/v1/models`,
/// `count_tokens`, anything that is not one of the three model APIs).
pub(crate) async fn pass(
    forwarder: &Forwarder,
    parts: Parts,
    rest: String,
    body: Bytes,
) -> Response {
    let answer = match send(forwarder, &parts, &rest, body).await {
        Ok(a) => a,
        Err(why) => {
            let (status, kind, what) = unanswered(&why);
            let message = format!("the upstream {what}");
            return error_in(None, status, &message, kind);
        }
    };
    let status = answer.status();
    let headers = answer_headers(answer.headers());
    // Passed on piece by piece as it arrives, never held whole (a 1 GiB listing costs no
    // memory); a cut or a silence past the timeout ends the body with an error.
    let timeout = forwarder.timeout;
    let pieces = futures::stream::unfold(Some(answer.into_body()), move |body| async move {
        let mut body = body?;
        match next_piece(&mut body, timeout).await {
            Ok(Some(piece)) => Some((Ok(piece), Some(body))),
            Ok(None) => None,
            Err(e) => Some((Err(std::io::Error::other(e)), None)),
        }
    });
    let mut r = Response::new(Body::from_stream(pieces));
    *r.status_mut() = status;
    *r.headers_mut() = headers;
    r
}

/// The status, error type and sentence of an unanswered request.
fn unanswered(why: &Unanswered) -> (StatusCode, &'static str, String) {
    match why {
        Unanswered::TimedOut => (
            StatusCode::GATEWAY_TIMEOUT,
            "upstream_timeout",
            "timed out".to_owned(),
        ),
        Unanswered::Failed(e) => (
            StatusCode::BAD_GATEWAY,
            "upstream_unreachable",
            format!("could not be reached: {}", crate::paths::redact_urls_in(e)),
        ),
    }
}

/// One model request, captured and its tool results recorded already: forwarded, its answer
/// streamed back, and recorded into `sink` when it ends.
pub(crate) async fn forward(
    forwarder: std::sync::Arc<Forwarder>,
    sink: Box<dyn Sink>,
    api: Api,
    (parts, rest, body): (Parts, String, Bytes),
    captured: capture::Captured,
) -> Response {
    let done = Done {
        sink,
        captured,
        ts_ms: now_ms(),
        started: Instant::now(),
        limits: forwarder.limits,
    };
    let answer = match send(&forwarder, &parts, &rest, body).await {
        Ok(a) => a,
        Err(why) => {
            let (status, kind, what) = unanswered(&why);
            let message = format!("the upstream {what}");
            done.failed(
                (&Answer::default(), false),
                &message,
                &kind.replace('_', "-"),
            );
            return error_in(Some(api), status, &message, kind);
        }
    };
    let status = answer.status();
    let headers = answer_headers(answer.headers());
    let streamed = (answer
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok()))
    .is_some_and(|t| t.starts_with("text/event-stream"));
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(16);
    tokio::spawn(pump(
        answer,
        tx,
        done,
        (api, status, streamed),
        forwarder.timeout,
    ));
    let body = Body::from_stream(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|piece| (piece, rx))
    }));
    let mut r = Response::new(body);
    *r.status_mut() = status;
    *r.headers_mut() = headers;
    r
}

use crate::common::error_chain;

/// What an exchange records when it ends.
struct Done {
    sink: Box<dyn Sink>,
    captured: capture::Captured,
    ts_ms: i64,
    started: Instant,
    limits: crate::trace::Limits,
}

impl Done {
    /// Records the exchange as a failed request — an `inference` with what arrived of the
    /// answer (`partial`; `truncated` when it was cut), then an `error` event saying why
    /// (credentials redacted).
    fn failed(&self, (partial, truncated): (&Answer, bool), message: &str, code: &str) {
        let timing = Timing {
            ts_ms: Some(self.ts_ms),
            latency_ms: Some(self.started.elapsed().as_millis() as u64),
        };
        self.sink.record(&mut |recording, secrets, model| {
            // Redacted whole (a secret may straddle the cut), then cut to the excerpt kept.
            let message = super::redact::redact(message, secrets);
            let message: String = message.chars().take(EXCERPT).collect();
            let partial = (&partial.step(), truncated);
            let why = (message.as_str(), code);
            recording.failed(model, partial, &self.captured, why, (timing, self.limits));
        });
    }

    /// Records a whole answer as an inference.
    fn answered(&self, answer: &Answer) {
        let latency = self.started.elapsed().as_millis() as u64;
        let timing = Timing {
            ts_ms: Some(self.ts_ms),
            latency_ms: Some(latency),
        };
        self.sink.record(&mut |recording, _, model| {
            recording.inference(model, &answer.step(), &self.captured, (timing, self.limits));
        });
    }
}

/// Passes the upstream's answer on piece by piece as it arrives, reading it on the way, then
/// records it: whole, or cut (by the upstream or the client) as an `error` event with what
/// arrived.
async fn pump(
    answer: hyper::Response<hyper::body::Incoming>,
    tx: tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
    done: Done,
    (api, status, streamed): (Api, StatusCode, bool),
    timeout: Duration,
) {
    // An answer encoded (gzip, say) though the recorder asked for `identity` is passed on as
    // it came, and recorded as such: its bytes cannot be read as an answer.
    let encoded = (answer.headers().get(axum::http::header::CONTENT_ENCODING))
        .and_then(|v| v.to_str().ok())
        .map(|e| e.trim().to_ascii_lowercase())
        .filter(|e| !e.is_empty() && e != "identity");
    let mut incoming = answer.into_body();
    let mut reader = (streamed && encoded.is_none()).then(|| StreamReader::new(api));
    let mut kept: Vec<u8> = Vec::new();
    let mut overflow = false;
    let cut: Option<String> = loop {
        match next_piece(&mut incoming, timeout).await {
            Ok(Some(piece)) => {
                match &mut reader {
                    Some(r) => r.feed(&piece),
                    None if kept.len() + piece.len() <= KEEP => kept.extend_from_slice(&piece),
                    None => overflow = true,
                }
                if tx.send(Ok(piece)).await.is_err() {
                    break Some(
                        "the client closed the connection before the answer ended".to_owned(),
                    );
                }
            }
            Ok(None) => break None,
            Err(e) => {
                let why = format!("the upstream cut the answer: {e}");
                let _ = tx.send(Err(std::io::Error::other(why.clone()))).await;
                break Some(why);
            }
        }
    };
    // The client's body ends (`tx` dropped) only once the exchange is recorded — on every
    // return below — so a runtime that reads an answer and then finishes its session (an empty
    // 502, a 307) never finds the request still in flight.
    let _ends_after_recording = tx;
    if !status.is_success() {
        let text = String::from_utf8_lossy(&kept);
        done.failed(
            (&Answer::default(), false),
            &format!("the upstream answered {status}: {text}"),
            "upstream-error",
        );
        return;
    }
    if let Some(encoding) = encoded {
        let message = format!(
            "the upstream sent its answer `{encoding}`-encoded though asked for `identity`: passed on as it came, not read"
        );
        done.failed((&Answer::default(), false), &message, "upstream-encoded");
        return;
    }
    let (read, over) = match reader {
        Some(r) => r.finish(),
        None if overflow => {
            done.failed(
                (&Answer::default(), false),
                &format!("the answer was larger than {KEEP} bytes: passed on whole, not read"),
                "upstream-too-large",
            );
            return;
        }
        None => match serde_json::from_slice::<Value>(&kept) {
            Ok(v) if cut.is_none() => {
                let mut a = Answer::from_json(api, &v);
                let over = a.bound(ANSWER_KEEP);
                (a, over)
            }
            Err(e) if cut.is_none() => {
                let message = format!("the answer is not JSON ({e}): passed on as it came");
                done.failed((&Answer::default(), false), &message, "upstream-invalid");
                return;
            }
            _ => (Answer::default(), false),
        },
    };
    if over {
        let message = format!(
            "the answer was larger than {ANSWER_KEEP} bytes of text and tool calls: passed on whole, recorded up to that: {}",
            read.arrived()
        );
        done.failed((&read, true), &message, "upstream-too-large");
        return;
    }
    match (cut, read.complete, &read.error) {
        (None, true, None) => done.answered(&read),
        (None, true, Some(e)) => done.failed(
            (&read, false),
            &format!("the answer carried an error: {e}; {}", read.arrived()),
            "upstream-error",
        ),
        (None, false, _) => done.failed(
            (&read, true),
            &format!(
                "the answer ended before its end (no final event): {}",
                read.arrived()
            ),
            "stream-truncated",
        ),
        (Some(why), _, _) => done.failed(
            (&read, true),
            &format!("{why}: {}", read.arrived()),
            "stream-truncated",
        ),
    }
}
