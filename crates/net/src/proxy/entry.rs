//! A request's way in: its body read within the recorder's bounds (at most [`READERS`] at once,
//! each in its turn within [`QUEUE_DEADLINE`], its body within [`BODY_DEADLINE`]), then handed
//! to a control endpoint, recorded as a model request, or only forwarded.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::response::Response;

use super::super::canonical::Api;
use super::super::forward;
use super::super::named::split_path;
use super::super::server::{BODY_LIMIT, error_in};
#[cfg(doc)]
use super::READERS;
use super::{Recorder, exchange};

/// How long a request's body may take to arrive once it is read, as `replay serve` gives it.
const BODY_DEADLINE: Duration = super::super::server::REQUEST_TIMEOUT;

/// How long a request may wait for its turn to be read (behind [`READERS`] others) before it
/// is answered 503 with `Retry-After`.
pub(crate) const QUEUE_DEADLINE: Duration = Duration::from_secs(300);

/// The answer to a request that waited [`QUEUE_DEADLINE`] for its turn: 503, retry.
fn busy(api: Option<Api>) -> Response {
    let message = format!(
        "the recorder was busy reading other requests for {} s: retry",
        QUEUE_DEADLINE.as_secs()
    );
    let mut r = error_in(api, StatusCode::SERVICE_UNAVAILABLE, &message, "busy");
    r.headers_mut().insert(
        axum::http::header::RETRY_AFTER,
        axum::http::HeaderValue::from_static("1"),
    );
    r
}

/// Every request: a control endpoint, a model request (forwarded and recorded), or anything
/// else (forwarded, not recorded).
pub(super) async fn handle(State(recorder): State<Arc<Recorder>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let (named, rest) = split_path("record", parts.uri.path());
    let rest = rest.to_owned();
    let api = Api::of_path(&rest).filter(|_| parts.method == Method::POST);
    // A body announced larger than the limit is refused before a byte of it is read.
    let announced = (parts.headers.get(axum::http::header::CONTENT_LENGTH))
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if announced.is_some_and(|n| n > BODY_LIMIT as u64) {
        let message = format!("the request body is larger than {BODY_LIMIT} bytes");
        return error_in(
            api,
            StatusCode::PAYLOAD_TOO_LARGE,
            &message,
            "body_too_large",
        );
    }
    // A request waits its turn to be read at most `QUEUE_DEADLINE` (then 503, to retry); once
    // read, its body has `BODY_DEADLINE` to arrive. So no request is held open longer than
    // both, whatever the others do, and honest large uploads queued behind each other are read
    // in turn rather than timed out.
    let permit = match tokio::time::timeout(
        QUEUE_DEADLINE,
        recorder.reading.clone().acquire_owned(),
    )
    .await
    {
        Ok(Ok(permit)) => permit,
        Ok(Err(_)) => {
            let stopping = "the recorder is stopping";
            return error_in(api, StatusCode::SERVICE_UNAVAILABLE, stopping, "stopping");
        }
        Err(_) => return busy(api),
    };
    let body = match tokio::time::timeout(BODY_DEADLINE, axum::body::to_bytes(body, BODY_LIMIT))
        .await
    {
        Ok(Ok(b)) => b,
        Ok(Err(_)) => {
            let message = format!("the request body is larger than {BODY_LIMIT} bytes, or was cut");
            return error_in(
                api,
                StatusCode::PAYLOAD_TOO_LARGE,
                &message,
                "body_too_large",
            );
        }
        Err(_) => {
            let message = format!(
                "the request body did not arrive within {} s",
                BODY_DEADLINE.as_secs()
            );
            return error_in(api, StatusCode::REQUEST_TIMEOUT, &message, "timeout");
        }
    };
    if rest == "/tracereplay/v1/next" && parts.method == Method::GET {
        drop(permit);
        return recorder.next(named, &parts.headers).await;
    }
    let control = rest
        .strip_prefix("/tracereplay/v1/")
        .filter(|_| parts.method == Method::POST);
    match (control, api) {
        (Some(what), _) => {
            drop(permit);
            if what == "finish" {
                // An answer the runtime has read may still be being recorded (its body ended a
                // moment before): the session's requests in flight get a moment to land first.
                recorder.settle(named.as_ref(), &parts.headers).await;
            }
            recorder.control(what, named, &parts.headers, &body)
        }
        (None, Some(api)) => {
            let key = match recorder.open(named, &parts.headers) {
                Ok(k) => k,
                Err(r) => return r.respond(Some(api)),
            };
            exchange(recorder, key, api, (parts, rest, body), permit).await
        }
        (None, None) => {
            drop(permit);
            forward::pass(&recorder.forwarder, parts, rest, body).await
        }
    }
}
