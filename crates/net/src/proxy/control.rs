//! The recorder's control endpoints: `POST …/tracereplay/v1/events` (events only the runtime
//! knows), `finish` (its body may carry the last of them) and `cancel`; and `GET
//! …/tracereplay/v1/next`, whether the case needs another trial.

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use std::time::Instant;

use super::{Recorder, Refusal, SessionEnd};

impl Recorder {
    /// `GET …/tracereplay/v1/next`: whether the named case needs another trial. A session of
    /// the case still open is a conflict: its trial is not on disk yet, so the answer would
    /// leave it out.
    pub(super) async fn next(
        &self,
        named: Option<crate::named::Named>,
        headers: &HeaderMap,
    ) -> Response {
        let Some(answer) = self.options.next.clone() else {
            let why = "this recorder cannot say whether a case needs another trial";
            return Refusal::new(StatusCode::NOT_FOUND, why, "not_found").respond(None);
        };
        let named = match crate::named::Named::of(named, headers) {
            Ok(Some(n)) => n,
            Ok(None) => {
                let why = "name the case: GET /record/<scenario>/<case>/tracereplay/v1/next";
                return Refusal::new(StatusCode::BAD_REQUEST, why, "session_not_named")
                    .respond(None);
            }
            Err(why) => {
                return Refusal::new(StatusCode::BAD_REQUEST, &why, "session_not_named")
                    .respond(None);
            }
        };
        let open: Vec<String> = (self.lock().values())
            .filter(|s| s.scenario == named.scenario && s.case == named.case)
            .map(|s| {
                s.trial
                    .as_ref()
                    .map_or("(no trial)".to_owned(), |t| t.to_string())
            })
            .collect();
        if !open.is_empty() {
            let why = format!(
                "a session of `{}/{}` is still open (trial {}): finish it first, so that its trial counts",
                named.scenario,
                named.case,
                open.join(", ")
            );
            return Refusal::new(StatusCode::CONFLICT, &why, "session_open").respond(None);
        }
        let (scenario, case) = (named.scenario, named.case);
        match tokio::task::spawn_blocking(move || answer(&scenario, &case)).await {
            Ok(Ok(v)) => axum::Json(v).into_response(),
            Ok(Err(why)) => {
                Refusal::new(StatusCode::UNPROCESSABLE_ENTITY, &why, "cannot_answer").respond(None)
            }
            Err(_) => {
                let why = "answering failed";
                Refusal::new(StatusCode::INTERNAL_SERVER_ERROR, why, "internal").respond(None)
            }
        }
    }

    /// `finish`, `cancel` and `events`.
    pub(super) fn control(
        &self,
        what: &str,
        named: Option<crate::named::Named>,
        headers: &HeaderMap,
        body: &Bytes,
    ) -> Response {
        let mut events = match what {
            "finish" | "events" => match parse_events(body) {
                Ok(e) => e,
                Err(r) => return r.respond(None),
            },
            "cancel" => Vec::new(),
            _ => return Refusal::new(StatusCode::NOT_FOUND, "no such endpoint: the recorder answers POST /tracereplay/v1/events, /finish and /cancel", "not_found").respond(None),
        };
        let key = match self.open(named, headers) {
            Ok(k) => k,
            Err(r) => return r.respond(None),
        };
        if !events.is_empty() {
            let mut sessions = self.lock();
            let s = sessions.get_mut(&key).expect("opened above");
            s.last = Instant::now();
            let (hasher, raw) = (&self.options.hasher, self.options.raw_prompts);
            s.recording.hash_user_text(&mut events, hasher, raw);
            if let Err((i, why)) = s.recording.report_all(events, self.options.limits) {
                let message = format!(
                    "event {i} refused (none of this request's events was recorded): {}",
                    why.message()
                );
                return crate::errors::error(
                    crate::errors::status_of(&why),
                    &message,
                    crate::errors::kind_of(&why),
                );
            }
        }
        match what {
            "events" => axum::Json(serde_json::json!({"recorded": true})).into_response(),
            "cancel" => {
                let s = self.lock().remove(&key);
                if let Some(s) = &s {
                    self.claimed
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(&s.path());
                    let end = SessionEnd {
                        session: s.name(),
                        requests: s.recording.requests(),
                        ended: "cancelled".to_owned(),
                        recorded_to: None,
                        not_recorded: Some("cancelled by the runtime".to_owned()),
                        failed: false,
                    };
                    self.ended(&end);
                    return axum::Json(end).into_response();
                }
                StatusCode::NO_CONTENT.into_response()
            }
            _ => match self.end(&key, "finished") {
                Some(end) if end.failed => {
                    let message = format!(
                        "session {}: {}",
                        end.session,
                        end.not_recorded.as_deref().unwrap_or("")
                    );
                    crate::errors::error(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        &message,
                        "record_refused",
                    )
                }
                Some(end) => axum::Json(end).into_response(),
                None => StatusCode::NO_CONTENT.into_response(),
            },
        }
    }
}

/// The events of a `finish` or `events` body: one event object, an array of them, or nothing.
fn parse_events(body: &Bytes) -> Result<Vec<Value>, Refusal> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Vec::new());
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Array(items)) => Ok(items),
        Ok(Value::Object(m)) if m.is_empty() => Ok(Vec::new()),
        Ok(one @ Value::Object(_)) => Ok(vec![one]),
        Ok(_) => Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            "send an event object or an array of them",
            "invalid_request",
        )),
        Err(e) => Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            &format!("the request body is not JSON: {e}"),
            "invalid_request",
        )),
    }
}
