//! One exchange with the upstream: the request forwarded unchanged, the answer streamed back
//! piece by piece as it arrives (never buffered to its end), and read on the way through into
//! what the recording keeps — or, when it fails or is cut, into an `error` event saying so.

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName, StatusCode};
use axum::response::Response;
use serde_json::Value;

use super::{Key, Recorder};
use crate::replay::answer::{Answer, StreamReader};
use crate::replay::canonical::Api;
use crate::replay::record::{self, Timing};
use crate::replay::server::error_in;

/// The most of a non-streamed answer (or an error body) kept for reading: larger answers are
/// still passed through whole, and recorded as too large to read.
const KEEP: usize = 64 << 20;

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

/// Headers that carry credentials: forwarded, never written. (Any header whose name says
/// key, token, secret, auth or cookie counts too.)
fn is_credential(name: &str) -> bool {
    ["key", "token", "secret", "auth", "cookie", "signature"]
        .iter()
        .any(|w| name.contains(w))
}

/// The credential values of `headers` (a bearer token's token too), longest first.
fn credentials(headers: &HeaderMap) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (name, value) in headers {
        if !is_credential(name.as_str()) {
            continue;
        }
        let Ok(v) = value.to_str() else { continue };
        for candidate in [Some(v), v.split_once(' ').map(|(_, t)| t)]
            .into_iter()
            .flatten()
        {
            let c = candidate.trim();
            if c.len() >= 8 {
                out.push(c.to_owned());
            }
        }
    }
    out.sort_by_key(|c| std::cmp::Reverse(c.len()));
    out
}

/// `text` with every credential of the session replaced by `[redacted]`.
fn redact(text: &str, secrets: &std::collections::BTreeSet<String>) -> String {
    let mut sorted: Vec<&String> = secrets.iter().collect();
    sorted.sort_by_key(|c| std::cmp::Reverse(c.len()));
    sorted
        .into_iter()
        .fold(text.to_owned(), |t, s| t.replace(s.as_str(), "[redacted]"))
}

fn now_ms() -> i64 {
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
    recorder: &Recorder,
    parts: &Parts,
    rest: &str,
    body: Bytes,
) -> Result<hyper::Response<hyper::body::Incoming>, Unanswered> {
    let mut url = format!("{}{rest}", recorder.options.upstream.trim_end_matches('/'));
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
    let timeout = recorder.options.upstream_timeout;
    match tokio::time::timeout(timeout, recorder.client.request(request)).await {
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
pub(super) async fn pass(recorder: &Recorder, parts: Parts, rest: String, body: Bytes) -> Response {
    let answer = match send(recorder, &parts, &rest, body).await {
        Ok(a) => a,
        Err(why) => {
            let (status, kind, what) = unanswered(&why);
            let message = format!("the upstream {what}");
            return error_in(None, status, &message, kind);
        }
    };
    let status = answer.status();
    let headers = answer_headers(answer.headers());
    let mut incoming = answer.into_body();
    let mut bytes = Vec::new();
    while let Ok(Some(piece)) = next_piece(&mut incoming, recorder.options.upstream_timeout).await {
        bytes.extend_from_slice(&piece);
    }
    let mut r = Response::new(Body::from(bytes));
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

/// One model request: forwarded, its answer streamed back and recorded.
pub(super) async fn exchange(
    recorder: Arc<Recorder>,
    key: Key,
    api: Api,
    parts: Parts,
    rest: String,
    body: Bytes,
) -> Response {
    let request: Value = match serde_json::from_slice(&body) {
        Ok(v) if api.shaped(&v) => v,
        Ok(_) => {
            let message = format!("the request body is not {}", api.shape_wanted());
            return error_in(
                Some(api),
                StatusCode::BAD_REQUEST,
                &message,
                "invalid_request",
            );
        }
        Err(e) => {
            let message = format!("the request body is not JSON: {e}");
            return error_in(
                Some(api),
                StatusCode::BAD_REQUEST,
                &message,
                "invalid_request",
            );
        }
    };
    let options = &recorder.options;
    let captured = record::capture(api, &request, &options.hasher, options.raw_prompts);
    let (started, ts_ms) = (Instant::now(), now_ms());
    {
        let mut sessions = recorder.lock();
        let Some(s) = sessions.get_mut(&key) else {
            let message =
                "the session ended while this request arrived; send it again to start a new one";
            return error_in(Some(api), StatusCode::CONFLICT, message, "session_ended");
        };
        if let Err(why) = s.recording.results(&captured, options.limits) {
            return crate::replay::server::refused(&why);
        }
        s.secrets.extend(credentials(&parts.headers));
        if s.model.is_none() {
            s.model = captured.model.clone();
        }
        s.requests += 1;
        s.in_flight += 1;
        s.last = Instant::now();
    }
    let done = Done {
        recorder: recorder.clone(),
        key,
        captured,
        ts_ms,
        started,
    };
    let answer = match send(&recorder, &parts, &rest, body).await {
        Ok(a) => a,
        Err(why) => {
            let (status, kind, what) = unanswered(&why);
            let message = format!("the upstream {what}");
            done.failed(&message, &kind.replace('_', "-"));
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
    tokio::spawn(pump(answer, tx, done, api, status, streamed));
    let body = Body::from_stream(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|piece| (piece, rx))
    }));
    let mut r = Response::new(body);
    *r.status_mut() = status;
    *r.headers_mut() = headers;
    r
}

/// The error and its causes, in one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// What an exchange records when it ends.
struct Done {
    recorder: Arc<Recorder>,
    key: Key,
    captured: record::Captured,
    ts_ms: i64,
    started: Instant,
}

impl Done {
    fn with_session(&self, f: impl FnOnce(&mut super::Session)) {
        let mut sessions = self.recorder.lock();
        if let Some(s) = sessions.get_mut(&self.key) {
            s.in_flight = s.in_flight.saturating_sub(1);
            s.last = Instant::now();
            f(s);
        }
    }

    /// Records the exchange as an `error` event (credentials redacted).
    fn failed(&self, message: &str, code: &str) {
        let limits = self.recorder.options.limits;
        self.with_session(|s| {
            let message = redact(message, &s.secrets);
            s.recording.error(&message, code, Some(self.ts_ms), limits);
        });
    }

    /// Records a whole answer as an inference.
    fn answered(&self, answer: &Answer) {
        let latency = self.started.elapsed().as_millis() as u64;
        let timing = Timing {
            ts_ms: Some(self.ts_ms),
            latency_ms: Some(latency),
        };
        self.with_session(|s| {
            let model = s.model.clone();
            s.recording
                .inference(model.as_deref(), &answer.step(), &self.captured, timing);
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
    api: Api,
    status: StatusCode,
    streamed: bool,
) {
    let timeout = done.recorder.options.upstream_timeout;
    let mut incoming = answer.into_body();
    let mut reader = streamed.then(|| StreamReader::new(api));
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
    drop(tx);
    if !status.is_success() {
        let text = String::from_utf8_lossy(&kept);
        let excerpt: String = text.chars().take(4000).collect();
        done.failed(
            &format!("the upstream answered {status}: {excerpt}"),
            "upstream-error",
        );
        return;
    }
    let read = match reader {
        Some(r) => r.finish(),
        None if overflow => {
            done.failed(
                &format!("the answer was larger than {KEEP} bytes: passed on, not read"),
                "upstream-too-large",
            );
            return;
        }
        None => match serde_json::from_slice::<Value>(&kept) {
            Ok(v) if cut.is_none() => Answer::from_json(api, &v),
            _ => Answer::default(),
        },
    };
    match (cut, read.complete, &read.error) {
        (None, true, None) => done.answered(&read),
        (None, true, Some(e)) => done.failed(
            &format!("the answer carried an error: {e}; {}", read.arrived()),
            "upstream-error",
        ),
        (None, false, _) => done.failed(
            &format!(
                "the answer ended before its end (no final event): {}",
                read.arrived()
            ),
            "stream-truncated",
        ),
        (Some(why), _, _) => done.failed(&format!("{why}: {}", read.arrived()), "stream-truncated"),
    }
}
