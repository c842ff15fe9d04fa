//! The receiver's HTTP side: `POST /v1/traces` and `POST /v1/logs` read (OTLP/JSON or protobuf,
//! gzip or not, within the body limit) and kept, or refused with the status and reason an
//! exporter can act on — each refusal told to whoever runs the receiver.

use std::sync::Arc;

use std::borrow::Cow;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::{Collector, Heard, Refusal};
use crate::ingest::{IngestOutcome, InputFormat};

impl Collector {
    /// The answer refusing a request, told to whoever runs the receiver: `reason` is the same
    /// for every request refused alike (so repeats are counted), `message` the whole answer.
    pub(super) fn refuse(&self, status: StatusCode, reason: &str, message: &str) -> Response {
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
fn unpacked<'b>(
    c: &Collector,
    headers: &HeaderMap,
    body: &'b Bytes,
    limit: usize,
) -> Result<Cow<'b, [u8]>, Box<Response>> {
    let gzip = (headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok()))
    .is_some_and(|e| e.eq_ignore_ascii_case("gzip"))
        || body.starts_with(&[0x1f, 0x8b]);
    if !gzip {
        return Ok(Cow::Borrowed(body));
    }
    crate::ingest::collector::unpack("request.gz", body, limit as u64)
        .map(|b| Cow::Owned(b.into_owned()))
        .map_err(|e| {
            let (status, reason) = match e {
                crate::ingest::collector::UnpackError::TooLarge(_) => (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "the body unpacks past the limit",
                ),
                crate::ingest::collector::UnpackError::NotGzip(_)
                | crate::ingest::collector::UnpackError::Unsupported => {
                    (StatusCode::BAD_REQUEST, "the body is not valid gzip")
                }
            };
            Box::new(c.refuse(status, reason, &format!("the body is {e}")))
        })
}

/// The format a request's body is in (OTLP protobuf or JSON); or the answer to a content type
/// the receiver does not read.
fn format_of(c: &Collector, headers: &HeaderMap) -> Result<InputFormat, Box<Response>> {
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
    Ok(if proto {
        InputFormat::OtlpProto
    } else {
        InputFormat::OtlpJson
    })
}

/// How long a request's body may take to arrive once it is read, as `record` and `replay serve`
/// give it.
const BODY_DEADLINE: std::time::Duration = crate::server::REQUEST_TIMEOUT;

/// Reads a request (after the content type is known to be read), unpacks it and hands its bytes
/// to `then`, holding one of the receiver's read permits throughout: at most
/// [`crate::proxy::READERS`] bodies are read and parsed at once (the others wait, their
/// bodies unread), so what concurrent requests cost before their spans are counted is bounded
/// per receiver, not per request. A body announced larger than the limit is refused before a
/// byte of it is read; a request that waited [`crate::proxy::QUEUE_DEADLINE`] for its
/// turn gets 503 (retry); a body that has not arrived within [`BODY_DEADLINE`] of its turn gets
/// 408.
async fn with_body(
    c: &Arc<Collector>,
    headers: &HeaderMap,
    body: Body,
    then: impl FnOnce(&Collector, InputFormat, &[u8]) -> Response + Send + 'static,
) -> Response {
    let format = match format_of(c, headers) {
        Ok(f) => f,
        Err(r) => return *r,
    };
    let limit = c.options.body_limit;
    let too_large = || {
        let message = format!("not kept: the body is larger than the limit ({limit} bytes)");
        let reason = "the body is larger than the limit";
        c.refuse(StatusCode::PAYLOAD_TOO_LARGE, reason, &message)
    };
    let announced = (headers.get(header::CONTENT_LENGTH))
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if announced.is_some_and(|n| n > limit as u64) {
        return too_large();
    }
    // Its turn to be read comes within `QUEUE_DEADLINE` (else 503, which exporters retry);
    // then its body has `BODY_DEADLINE` to arrive.
    let queue = crate::proxy::QUEUE_DEADLINE;
    let _permit = match tokio::time::timeout(queue, c.reading.acquire()).await {
        Ok(Ok(permit)) => permit,
        Ok(Err(_)) => {
            let message = "not kept: the receiver is stopping";
            return c.refuse(StatusCode::SERVICE_UNAVAILABLE, "stopping", message);
        }
        Err(_) => {
            let message = format!(
                "not kept: the receiver was busy reading other requests for {} s; retry",
                queue.as_secs()
            );
            let reason = "the receiver was busy reading (back-pressure: the exporter retries)";
            let mut r = c.refuse(StatusCode::SERVICE_UNAVAILABLE, reason, &message);
            r.headers_mut().insert(
                header::RETRY_AFTER,
                axum::http::HeaderValue::from_static("1"),
            );
            return r;
        }
    };
    let body = match tokio::time::timeout(BODY_DEADLINE, axum::body::to_bytes(body, limit)).await {
        Ok(Ok(body)) => body,
        Ok(Err(e)) => {
            let past_limit = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
            if past_limit {
                return too_large();
            }
            let message = format!("not kept: the body could not be read: {e}");
            return c.refuse(
                StatusCode::BAD_REQUEST,
                "the body could not be read",
                &message,
            );
        }
        Err(_) => {
            let secs = BODY_DEADLINE.as_secs();
            let message = format!("not kept: the body did not arrive within {secs} s");
            let reason = "the body did not arrive in time";
            return c.refuse(StatusCode::REQUEST_TIMEOUT, reason, &message);
        }
    };
    // Unpacking and parsing are CPU work: done off the runtime's workers, so that the other
    // requests' bodies are read (and their deadlines kept) meanwhile. The permit is held
    // throughout.
    let (c2, headers) = (c.clone(), headers.clone());
    let parsed = tokio::task::spawn_blocking(move || {
        let c = &*c2;
        let bytes = match unpacked(c, &headers, &body, limit) {
            Ok(b) => b,
            Err(r) => return *r,
        };
        if bytes.iter().all(u8::is_ascii_whitespace) && format == InputFormat::OtlpJson {
            let message = "the body is empty: an OTLP/JSON export is an object (`resourceSpans`, `resourceLogs`)";
            return c.refuse(StatusCode::BAD_REQUEST, "the body is empty", message);
        }
        then(c, format, &bytes)
    })
    .await;
    parsed.unwrap_or_else(|_| {
        let message = "not kept: reading the body failed inside the receiver";
        c.refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            "an internal failure",
            message,
        )
    })
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

/// Any other path: refused, naming the two the receiver takes (an exporter of metrics pointed
/// at it, say).
pub(super) async fn elsewhere(State(c): State<Arc<Collector>>, uri: axum::http::Uri) -> Response {
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
pub(super) async fn traces(
    State(c): State<Arc<Collector>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    with_body(&c, &headers, body, traces_read).await
}

fn traces_read(c: &Collector, format: InputFormat, bytes: &[u8]) -> Response {
    let proto = format == InputFormat::OtlpProto;
    let mut outcome = IngestOutcome::default();
    let read = crate::ingest::spans::read(format, bytes, &mut outcome);
    if let Some(p) = outcome.problems.iter().find(|p| p.rejected) {
        let message = format!("not kept: {}: {}", p.position, p.message);
        let reason = "the body is not a readable OTLP trace export";
        return c.refuse(StatusCode::BAD_REQUEST, reason, &message);
    }
    match c.keep(format, (read.spans, Vec::new())) {
        Ok(0) => kept(proto, serde_json::json!({})),
        Ok(late) => {
            let partial = serde_json::json!({
                "rejectedSpans": late,
                "errorMessage": format!("{late} span(s) of runs already written (they arrived after --settle): not kept"),
            });
            kept(proto, partial)
        }
        Err(r) => *r,
    }
}

/// `POST /v1/logs`: the `gen_ai.client.inference.operation.details` records (an inference's
/// content sent apart from its span) are kept with their run; other records are not, and the
/// answer's `partialSuccess` counts them.
pub(super) async fn logs(
    State(c): State<Arc<Collector>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    with_body(&c, &headers, body, logs_read).await
}

fn logs_read(c: &Collector, format: InputFormat, bytes: &[u8]) -> Response {
    let proto = format == InputFormat::OtlpProto;
    let read = match proto {
        false => crate::ingest::spans::logs::read_json(bytes),
        true => crate::ingest::spans::logs::read_proto(bytes),
    };
    let (records, other) = match read {
        Ok(r) => r,
        Err(e) => {
            let reason = "the body is not a readable OTLP logs export";
            return c.refuse(StatusCode::BAD_REQUEST, reason, &format!("not kept: {e}"));
        }
    };
    if let Err(r) = c.keep(format, (Vec::new(), records)) {
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
