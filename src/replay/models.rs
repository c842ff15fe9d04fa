//! `replay serve`'s model endpoints: Chat Completions, Responses and Anthropic Messages, each
//! streamed or not, answered with a session's next recorded response — in order, whatever is
//! asked, loudly when the recording runs out — with the request captured and compared with the
//! recording's.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::canonical::Api;
use super::record::{self, Timing};
use super::server::{Replay, error_in, named, refused};
use super::{anthropic, openai};

/// Answers a model request of `api` with the session's next recorded response.
pub(super) fn next_response(
    replay: &Replay,
    path: Option<(String, String)>,
    headers: &HeaderMap,
    body: &Bytes,
    api: Api,
) -> Response {
    let fail = |status, message: &str, kind| error_in(Some(api), status, message, kind);
    let session = match replay.session(path, headers) {
        Ok(s) => s,
        Err(f) => return f.respond(Some(api)),
    };
    let request: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            let message = format!("the request body is not JSON: {e}");
            return fail(StatusCode::BAD_REQUEST, &message, "invalid_request");
        }
    };
    // Only a request of the endpoint's shape gets the next recorded response.
    // (Whatever it asks: a request without `messages` is still served.)
    if !api.shaped(&request) {
        let message = format!("the request body is not {}", api.shape_wanted());
        return fail(StatusCode::BAD_REQUEST, &message, "invalid_request");
    }
    let options = &replay.options;
    let mut guard = session.lock().unwrap_or_else(|e| e.into_inner());
    let s = &mut *guard;
    let total = s.script.steps.len();
    if s.served >= total {
        s.exhausted += 1;
        let message = format!(
            "replay exhausted: {} of {total} recorded model responses served",
            s.served
        );
        s.recording.divergence(&message, options.limits);
        return fail(StatusCode::GONE, &message, "replay_exhausted");
    }
    let captured = record::capture(api, &request, &s.hasher, options.raw_prompts);
    if let Err(why) = s.recording.results(&captured, options.limits) {
        return refused(&why);
    }
    let n = s.served + 1;
    let step = &s.script.steps[n - 1];
    let diverging = record::divergences(n, step, &captured);
    for d in &diverging {
        s.recording.divergence(d, options.limits);
    }
    s.divergences.extend(diverging.iter().cloned());
    if options.strict && !diverging.is_empty() {
        let message = format!("replay diverged (--strict): {}", diverging.join("; "));
        return fail(StatusCode::CONFLICT, &message, "replay_diverged");
    }
    s.served = n;
    let model = s.script.model.clone();
    s.recording
        .inference(model.as_deref(), step, &captured, Timing::default());
    let (script, step) = (&s.script, &s.script.steps[n - 1]);
    let streamed = request.get("stream") == Some(&Value::Bool(true));
    let stream = |text: String| {
        let body = options.chunking.body(&text);
        ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
    };
    match (api, streamed) {
        (Api::Chat, true) => stream(openai::chat_completion_stream(script, step, n)),
        (Api::Chat, false) => axum::Json(openai::chat_completion(script, step, n)).into_response(),
        (Api::Responses, true) => stream(openai::response_stream(script, step, n)),
        (Api::Responses, false) => axum::Json(openai::response(script, step, n)).into_response(),
        (Api::Anthropic, true) => stream(anthropic::message_stream(script, step, n)),
        (Api::Anthropic, false) => axum::Json(anthropic::message(script, step, n)).into_response(),
    }
}

pub(super) async fn chat(
    State(replay): State<Arc<Replay>>,
    path: Option<Path<(String, String)>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    next_response(&replay, named(path), &headers, &body, Api::Chat)
}

pub(super) async fn responses(
    State(replay): State<Arc<Replay>>,
    path: Option<Path<(String, String)>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    next_response(&replay, named(path), &headers, &body, Api::Responses)
}

pub(super) async fn messages(
    State(replay): State<Arc<Replay>>,
    path: Option<Path<(String, String)>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    next_response(&replay, named(path), &headers, &body, Api::Anthropic)
}
