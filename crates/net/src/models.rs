//! `replay serve`'s model endpoints: Chat Completions, Responses and Anthropic Messages, each
//! streamed or not, answered with a session's next recorded response — in order, whatever is
//! asked, loudly when the recording runs out — with the request captured and compared with the
//! recording's.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::canonical::Api;
use super::capture;
use super::forward;
use super::record::Timing;
use super::server::{BODY_LIMIT, LiveFrom, Replay, ReplaySession, error_in, named, refused};
use super::{anthropic, openai};

/// What a model request gets: a response now, or forwarding (the session is live).
pub(super) enum Answered {
    /// Served from the recording, or refused.
    Now(Response),
    /// Forwarded to the upstream: the session, and the request as captured (its tool
    /// results recorded already).
    Live(String, capture::Captured, usize),
}

/// Answers a model request of `api` with the session's next recorded response (the fuzz
/// target's and the tests' way in: a request that would go live gets 503 here).
pub(super) fn next_response(
    replay: &Replay,
    path: Option<super::named::Named>,
    headers: &HeaderMap,
    body: &Bytes,
    api: Api,
) -> Response {
    let credentials = super::redact::credentials(headers, None);
    match decide(replay, path, (headers, &credentials), body, api) {
        Answered::Now(r) => r,
        Answered::Live(..) => error_in(
            Some(api),
            StatusCode::SERVICE_UNAVAILABLE,
            "live forwarding needs the server",
            "not_served",
        ),
    }
}

/// Serves the next recorded response — or, once the session is live (`--upstream`), says to
/// forward the request — recording what the request hands back either way.
fn decide(
    replay: &Replay,
    path: Option<super::named::Named>,
    (headers, credentials): (&HeaderMap, &[String]),
    body: &Bytes,
    api: Api,
) -> Answered {
    let fail = |status, message: &str, kind| error_in(Some(api), status, message, kind);
    let session = match replay.session(path, headers) {
        Ok(s) => s,
        Err(f) => return Answered::Now(f.respond(Some(api))),
    };
    let request: Value = match serde_json::from_slice(body) {
        Ok(v) => match crate::trace::json::no_duplicate_keys(body) {
            Ok(()) => v,
            Err(e) => {
                let message = format!("the request body is refused: {e}");
                return Answered::Now(fail(StatusCode::BAD_REQUEST, &message, "invalid_request"));
            }
        },
        Err(e) => {
            let message = format!("the request body is not JSON: {e}");
            return Answered::Now(fail(StatusCode::BAD_REQUEST, &message, "invalid_request"));
        }
    };
    // Only a request of the endpoint's shape gets the next recorded response.
    // (Whatever it asks: a request without `messages` is still served.)
    if !api.shaped(&request) {
        let message = format!("the request body is not {}", api.shape_wanted());
        return Answered::Now(fail(StatusCode::BAD_REQUEST, &message, "invalid_request"));
    }
    let options = &replay.options;
    let mut guard = session.lock().unwrap_or_else(|e| e.into_inner());
    let s = &mut *guard;
    // Whatever the request carries as a credential is kept out of everything the session
    // writes, served or live.
    s.secrets.extend(credentials.iter().cloned());
    let total = s.script.steps.len();
    let live = options.live.as_ref().map(|l| l.from);
    // Once live, every request is forwarded.
    if s.went_live_at.is_some() {
        return go_live(s, replay, (api, &request), None, None);
    }
    if s.served >= total {
        if live.is_some() {
            let why = format!("the recording's {total} responses were all served");
            return go_live(s, replay, (api, &request), Some(why), None);
        }
        s.exhausted += 1;
        let message = format!(
            "replay exhausted: {} of {total} recorded model responses served",
            s.served
        );
        s.recording.divergence(&message, options.limits);
        return Answered::Now(fail(StatusCode::GONE, &message, "replay_exhausted"));
    }
    if let Some(LiveFrom::Request(at)) = live {
        if s.served + 1 >= at {
            let why = format!("--live-from {at}");
            return go_live(s, replay, (api, &request), Some(why), None);
        }
    }
    let captured = capture::capture(api, &request, &s.hasher, options.raw_prompts);
    if let Err(why) = s.recording.results(&captured, options.limits) {
        return Answered::Now(refused(&why));
    }
    if live == Some(LiveFrom::Divergence) {
        let diverging = capture::divergences(s.served + 1, &s.script.steps[s.served], &captured);
        if !diverging.is_empty() {
            let why = format!("it diverged ({})", diverging.join("; "));
            return go_live(s, replay, (api, &request), Some(why), Some(captured));
        }
    }
    let n = s.served + 1;
    let step = &s.script.steps[n - 1];
    let mut diverging = capture::divergences(n, step, &captured);
    if let Some(why) = capture::unmatchable(n, step) {
        // Under --strict every request must match its recording: one that cannot be checked
        // is refused; otherwise it is served, and the recording says it was not checked.
        match options.strict {
            true => diverging.push(why),
            false => s.recording.note(&why, options.limits),
        }
    }
    for d in &diverging {
        s.recording.divergence(d, options.limits);
    }
    s.divergences.extend(diverging.iter().cloned());
    if options.strict && !diverging.is_empty() {
        let message = format!("replay diverged (--strict): {}", diverging.join("; "));
        return Answered::Now(fail(StatusCode::CONFLICT, &message, "replay_diverged"));
    }
    s.served = n;
    let model = s.script.model.clone();
    s.recording.inference(
        model.as_deref(),
        step,
        &captured,
        (Timing::default(), options.limits),
    );
    let (script, step) = (&s.script, &s.script.steps[n - 1]);
    let streamed = request.get("stream") == Some(&Value::Bool(true));
    let stream = |text: String| {
        let body = options.chunking.body(&text);
        ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
    };
    Answered::Now(match (api, streamed) {
        (Api::Chat, true) => stream(openai::chat_completion_stream(script, step, n)),
        (Api::Chat, false) => axum::Json(openai::chat_completion(script, step, n)).into_response(),
        (Api::Responses, true) => stream(openai::response_stream(script, step, n)),
        (Api::Responses, false) => axum::Json(openai::response(script, step, n)).into_response(),
        (Api::Anthropic, true) => stream(anthropic::message_stream(script, step, n)),
        (Api::Anthropic, false) => axum::Json(anthropic::message(script, step, n)).into_response(),
    })
}

/// Takes the session live at this request (noting where and why, the first time), and says to
/// forward it; the request's tool results are recorded first.
fn go_live(
    s: &mut ReplaySession,
    replay: &Replay,
    (api, request): (Api, &Value),
    why: Option<String>,
    captured: Option<capture::Captured>,
) -> Answered {
    let options = &replay.options;
    let captured = match captured {
        Some(c) => c,
        None => {
            let c = capture::capture(api, request, &s.hasher, options.raw_prompts);
            if let Err(why) = s.recording.results(&c, options.limits) {
                return Answered::Now(refused(&why));
            }
            c
        }
    };
    if let Some(why) = why {
        let n = s.served + s.exhausted + 1;
        s.went_live_at = Some(n);
        let text = format!(
            "replay went live at request {n}: {why}; from here on the run is the upstream's"
        );
        s.recording.note(&text, options.limits);
    }
    s.live += 1;
    let n = s.live;
    s.flying.insert(n, (captured.clone(), forward::now_ms()));
    Answered::Live(s.script.key(), captured, n)
}

/// A replayed session, as where its live exchanges are recorded.
struct ReplaySink {
    replay: Arc<Replay>,
    key: String,
    /// The live request's number in its session.
    request: usize,
}

impl forward::Sink for ReplaySink {
    fn record(&self, f: &mut forward::RecordInto<'_>) {
        if let Some(s) = self.replay.session_by_key(&self.key) {
            let mut s = s.lock().unwrap_or_else(|e| e.into_inner());
            let s = &mut *s;
            s.flying.remove(&self.request);
            if s.recorded_to().is_none() {
                f(&mut s.recording, &s.secrets, s.script.model.as_deref());
            }
        }
    }
}

/// A client reads a streamed answer's last event and may ask again before the answer's body
/// has ended and it is recorded: in a live session, a request handing back the result of a
/// call an answer still in flight planned waits for that answer (briefly, as `record` does), so
/// the call is recorded as it was planned.
async fn settle(
    replay: &Replay,
    path: Option<super::named::Named>,
    headers: &HeaderMap,
    body: &Bytes,
    api: Api,
) {
    let Ok(session) = replay.session(path, headers) else {
        return;
    };
    let live = |s: &ReplaySession| s.went_live_at.is_some() && !s.flying.is_empty();
    if !live(&session.lock().unwrap_or_else(|e| e.into_inner())) {
        return;
    }
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return;
    };
    let hasher = crate::trace::PromptHasher::unkeyed();
    let captured = capture::capture(api, &request, &hasher, false);
    let settled = std::time::Instant::now() + super::proxy::PLANS_DEADLINE;
    let awaits = || {
        let s = session.lock().unwrap_or_else(|e| e.into_inner());
        live(&s) && s.recording.awaits_plans(&captured)
    };
    while std::time::Instant::now() < settled && awaits() {
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
}

/// A model request of `api`, served or forwarded.
async fn answer(
    replay: Arc<Replay>,
    path: super::server::Params,
    request: Request,
    api: Api,
) -> Response {
    let (parts, body) = request.into_parts();
    // Bodies are read and captured a few at a time (see `proxy::READERS`): what concurrent
    // requests cost is bounded per server.
    let Ok(reading) = replay.reading.clone().acquire_owned().await else {
        let message = "the server is stopping";
        return error_in(
            Some(api),
            StatusCode::SERVICE_UNAVAILABLE,
            message,
            "stopping",
        );
    };
    let body = match axum::body::to_bytes(body, BODY_LIMIT).await {
        Ok(b) => b,
        Err(_) => {
            let message = format!("the request body is larger than {BODY_LIMIT} bytes, or was cut");
            return error_in(
                Some(api),
                StatusCode::PAYLOAD_TOO_LARGE,
                &message,
                "body_too_large",
            );
        }
    };
    let credentials = super::redact::credentials(&parts.headers, parts.uri.query());
    let path = named(path);
    settle(&replay, path.clone(), &parts.headers, &body, api).await;
    let decided = decide(&replay, path, (&parts.headers, &credentials), &body, api);
    // Read and captured: the next request may be read while this one is answered or forwarded.
    drop(reading);
    match decided {
        Answered::Now(r) => r,
        Answered::Live(key, captured, request) => {
            let forwarder = match &replay.forwarder {
                Some(Ok(f)) => f.clone(),
                Some(Err(e)) => {
                    let message = format!("the upstream client could not be made: {e}");
                    return error_in(
                        Some(api),
                        StatusCode::BAD_GATEWAY,
                        &message,
                        "upstream_unreachable",
                    );
                }
                None => unreachable!("a session goes live only with an upstream"),
            };
            let sink = Box::new(ReplaySink {
                replay: replay.clone(),
                key,
                request,
            });
            let rest = api.path().to_owned();
            forward::forward(forwarder, sink, api, (parts, rest, body), captured).await
        }
    }
}

pub(super) async fn chat(
    State(replay): State<Arc<Replay>>,
    path: super::server::Params,
    request: Request,
) -> Response {
    answer(replay, path, request, Api::Chat).await
}

pub(super) async fn responses(
    State(replay): State<Arc<Replay>>,
    path: super::server::Params,
    request: Request,
) -> Response {
    answer(replay, path, request, Api::Responses).await
}

pub(super) async fn messages(
    State(replay): State<Arc<Replay>>,
    path: super::server::Params,
    request: Request,
) -> Response {
    answer(replay, path, request, Api::Anthropic).await
}
