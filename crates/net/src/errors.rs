//! The answers a refusal gets: in the shape of the API asked (OpenAI's or Anthropic's error
//! body), never retried by the SDKs.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::canonical::Api;
use super::{openai, record};

/// The error type of a refusal.
pub(super) fn kind_of(why: &record::Refused) -> &'static str {
    match why {
        record::Refused::Invalid(_) => "invalid_event",
        record::Refused::Conflict(_) => "event_conflict",
        record::Refused::TooLarge(_) => "recording_too_large",
    }
}

/// The status of a refusal: 400, 409 or 413.
pub(super) fn status_of(why: &record::Refused) -> StatusCode {
    match why {
        record::Refused::Invalid(_) => StatusCode::BAD_REQUEST,
        record::Refused::Conflict(_) => StatusCode::CONFLICT,
        record::Refused::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
    }
}

/// The response to a refusal, with its reason.
pub(super) fn refused(why: &record::Refused) -> Response {
    error(status_of(why), why.message(), kind_of(why))
}

/// A refusal, answered in the shape of the API asked (OpenAI's when none).
#[derive(Debug)]
pub(super) struct Fail {
    pub(super) status: StatusCode,
    pub(super) message: String,
    pub(super) kind: &'static str,
}

impl Fail {
    pub(super) fn respond(self, api: Option<Api>) -> Response {
        error_in(api, self.status, &self.message, self.kind)
    }
}

pub(super) fn error(status: StatusCode, message: &str, kind: &str) -> Response {
    error_in(None, status, message, kind)
}

/// An error answer in `api`'s error body shape (Anthropic's for the Messages API, OpenAI's
/// otherwise), never retried by the SDKs.
pub(super) fn error_in(
    api: Option<Api>,
    status: StatusCode,
    message: &str,
    kind: &str,
) -> Response {
    let body = match api {
        Some(Api::Anthropic) => super::anthropic::error(message, kind),
        _ => openai::error(message, kind),
    };
    let mut r = (status, axum::Json(body)).into_response();
    // The OpenAI SDKs honour this: retrying would only ask past the end again.
    r.headers_mut()
        .insert("x-should-retry", HeaderValue::from_static("false"));
    r
}
