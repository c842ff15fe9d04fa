//! The receiver's HTTP side: `POST /v1/traces` and `POST /v1/logs` read (OTLP/JSON or protobuf,
//! gzip or not, within the body limit) and kept, or refused with the status and reason an
//! exporter can act on — each refusal told to whoever runs the receiver.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::{Collector, Heard, Refusal};
use crate::ingest::{Format, IngestOutcome};

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

/// A request's body, unpacked, and the format it is in (OTLP protobuf or JSON); or the answer to a
/// content type the receiver does not read, or a body past the limit.
fn request(
    c: &Collector,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<(Format, Vec<u8>), Box<Response>> {
    let body = &body_of(c, body)?;
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
    if bytes.iter().all(u8::is_ascii_whitespace) && !proto {
        let message =
            "the body is empty: an OTLP/JSON export is an object (`resourceSpans`, `resourceLogs`)";
        return Err(Box::new(c.refuse(
            StatusCode::BAD_REQUEST,
            "the body is empty",
            message,
        )));
    }
    let format = if proto {
        Format::OtlpProto
    } else {
        Format::OtlpJson
    };
    Ok((format, bytes))
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
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let (format, bytes) = match request(&c, &headers, body) {
        Ok(r) => r,
        Err(r) => return *r,
    };
    let proto = format == Format::OtlpProto;
    let mut outcome = IngestOutcome::default();
    let read = crate::ingest::spans::read(format, &bytes, &mut outcome);
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
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let (format, bytes) = match request(&c, &headers, body) {
        Ok(r) => r,
        Err(r) => return *r,
    };
    let proto = format == Format::OtlpProto;
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
