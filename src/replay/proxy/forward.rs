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

/// The upstream request: `rest` (and the query) under the upstream's base URL, the headers
/// but the hop's own and the recorder's, identity encoding (so the recorder can read the
/// answer it passes on), the body unchanged.
fn upstream_request(
    recorder: &Recorder,
    parts: &Parts,
    rest: &str,
    body: Bytes,
) -> reqwest::RequestBuilder {
    let mut url = format!("{}{rest}", recorder.options.upstream.trim_end_matches('/'));
    if let Some(q) = parts.uri.query() {
        url.push('?');
        url.push_str(q);
    }
    let mut builder = recorder.client.request(parts.method.clone(), url);
    for (name, value) in &parts.headers {
        let n = name.as_str();
        if HOP.contains(&n) || n.starts_with("x-tracereplay-") || n == "accept-encoding" {
            continue;
        }
        builder = builder.header(name, value);
    }
    builder.header("accept-encoding", "identity").body(body)
}

/// The answer's headers to pass back: all but the hop's own.
fn answer_headers(from: &reqwest::header::HeaderMap) -> HeaderMap {
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

/// A request forwarded as it is, its answer passed back, nothing recorded (`/v1/models`,
/// `count_tokens`, anything that is not one of the three model APIs).
pub(super) async fn pass(recorder: &Recorder, parts: Parts, rest: String, body: Bytes) -> Response {
    let answer = match upstream_request(recorder, &parts, &rest, body).send().await {
        Ok(a) => a,
        Err(e) => {
            let message = format!(
                "the upstream could not be reached: {}",
                crate::paths::redact_urls_in(&e.to_string())
            );
            return error_in(
                None,
                StatusCode::BAD_GATEWAY,
                &message,
                "upstream_unreachable",
            );
        }
    };
    let status = answer.status();
    let headers = answer_headers(answer.headers());
    let bytes = answer.bytes().await.unwrap_or_default();
    let mut r = Response::new(Body::from(bytes));
    *r.status_mut() = status;
    *r.headers_mut() = headers;
    r
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
    let answer = match upstream_request(&recorder, &parts, &rest, body)
        .send()
        .await
    {
        Ok(a) => a,
        Err(e) => {
            let (status, kind, what) = if e.is_timeout() {
                (StatusCode::GATEWAY_TIMEOUT, "upstream_timeout", "timed out")
            } else {
                (
                    StatusCode::BAD_GATEWAY,
                    "upstream_unreachable",
                    "could not be reached",
                )
            };
            let cause = crate::paths::redact_urls_in(&error_chain(&e));
            let message = format!("the upstream {what}: {cause}");
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
    mut answer: reqwest::Response,
    tx: tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
    done: Done,
    api: Api,
    status: StatusCode,
    streamed: bool,
) {
    let mut reader = streamed.then(|| StreamReader::new(api));
    let mut kept: Vec<u8> = Vec::new();
    let mut overflow = false;
    let cut: Option<String> = loop {
        match answer.chunk().await {
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
                let why = format!("the upstream cut the answer: {}", error_chain(&e));
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
