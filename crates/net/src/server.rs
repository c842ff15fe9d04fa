//! The HTTP server: axum on a tokio runtime, loopback by default.
//!
//! Routes (each also under `/replay/<scenario>/<case>/…`, and `/replay/<scenario>/<case>/trial/<trial>/…`
//! for a trial, to name the session by path):
//!
//! - `POST /v1/chat/completions` — the next recorded response; `"stream": true` gives it as
//!   server-sent events.
//! - `POST /v1/responses` — the next recorded response in the Responses API's shape.
//! - `POST /tracereplay/v1/finish` — ends the session and says what was served.
//!
//! A request names its session by the path prefix, or by the `X-Tracereplay-Case:
//! <scenario>/<case>` header (and `X-Tracereplay-Trial: <trial>`); with one recording served,
//! unnamed requests go to it. Request
//! bodies are bounded ([`BODY_LIMIT`]) and each request has [`REQUEST_TIMEOUT`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::Serialize;
use serde_json::Value;

use super::canonical::Api;
pub(super) use super::errors::{Fail, error, error_in, kind_of, refused, status_of};
use super::record::{self, Recording};
use super::script::Script;
use crate::trace::Limits;
use crate::trace::PromptHasher;

/// The largest request body accepted.
pub const BODY_LIMIT: usize = 16 << 20;
/// How long one request may take, body included.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
pub use super::named::CASE_HEADER;
use super::named::Named;

/// What a session did, as `finish` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionReport {
    /// `scenario/case`.
    pub session: String,
    /// Model responses served.
    pub served: usize,
    /// Model responses recorded.
    pub recorded: usize,
    /// Requests answered with the exhaustion error.
    pub exhausted: usize,
    /// Whether the session went off its script: asked past its end, or a request whose input
    /// or offered tools differ from the recording's.
    pub diverged: bool,
    /// Each divergence, in a sentence.
    pub divergences: Vec<String>,
    /// Whether `finish` was called.
    pub finished: bool,
    /// Whether the runtime reported the run's end (a `run_end` event).
    pub run_end_reported: bool,
    /// Where the replayed run was recorded, once it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded_to: Option<String>,
    /// Why the run was not recorded although recording was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_recorded: Option<String>,
    /// The request at which the session went live (`--upstream`), if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub went_live_at: Option<usize>,
    /// Requests forwarded to the upstream once live.
    pub live: usize,
}

/// How the server captures and records.
#[derive(Debug, Clone)]
pub struct Options {
    /// Hashes request inputs as `ingest` hashed the recordings' (see [`Options::hasher_for`]).
    pub hasher: PromptHasher,
    /// Where replayed runs are recorded (`DIR/<scenario>/<case>.trace.ndjson.zst`), if anywhere.
    pub record: Option<camino::Utf8PathBuf>,
    /// The trial each recorded run is (`--trial`) when its recording is not a trial: its
    /// header's `trial`, and its file `DIR/<scenario>/<case>/<trial>.trace.ndjson.zst`. A
    /// replayed trial is recorded as the trial it replays.
    pub trial: Option<crate::trace::TrialId>,
    /// Answer a diverging request with an error instead of the recorded output.
    pub strict: bool,
    /// Developer opt-in: the raw text of each hashed input goes to a `NAME.prompts.ndjson`
    /// sidecar beside the recording (never into the trace, never to a log).
    pub raw_prompts: bool,
    /// Limits for checking reported events and the recording.
    pub limits: Limits,
    /// Signs each recording (a detached signature beside it), when set.
    pub signer: Option<std::sync::Arc<dyn crate::sign::TraceSigner>>,
    /// How streamed answers are cut into writes (`--chunking`).
    pub chunking: super::chunking::Chunking,
    /// Replay, then live: where to forward once the recording is left (`--upstream`).
    pub live: Option<Live>,
    /// Fingerprints of secrets waived as false positives: a recording holding another secret
    /// is refused.
    pub waived: std::sync::Arc<std::collections::HashSet<String>>,
}

/// Replay, then live: the recording served up to a point, the rest forwarded to an upstream
/// and recorded as `record` records.
#[derive(Debug, Clone)]
pub struct Live {
    /// The upstream's base URL (checked as `record` checks it).
    pub upstream: String,
    /// How long the upstream may stay silent in an answer.
    pub timeout: Duration,
    /// When the session goes live.
    pub from: LiveFrom,
}

/// When a replayed session goes live; always once its recording is exhausted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveFrom {
    /// Once every recorded response was served.
    Exhausted,
    /// At this request (1-based).
    Request(usize),
    /// At the first request that diverges from the recording.
    Divergence,
}

impl Options {
    /// The trial a replay of `script` is recorded as: the trial it replays, else `--trial`.
    pub fn trial_of<'s>(&'s self, script: &'s Script) -> Option<&'s crate::trace::TrialId> {
        script.trial.as_ref().or(self.trial.as_ref())
    }

    /// The hasher for a recording's session: the recording's own scheme — unkeyed for a
    /// `blake3` recording, [`Options::hasher`] for a keyed one — so that each session's request
    /// hashes compare with its recorded `input_h`.
    pub fn hasher_for(&self, script: &Script) -> PromptHasher {
        if script.hash_scheme.0 == "blake3-keyed" {
            self.hasher.clone()
        } else {
            PromptHasher::unkeyed()
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            hasher: PromptHasher::unkeyed(),
            record: None,
            trial: None,
            strict: false,
            raw_prompts: false,
            limits: Limits::default(),
            signer: None,
            chunking: super::chunking::Chunking::Recorded,
            live: None,
            waived: Default::default(),
        }
    }
}

pub(super) struct ReplaySession {
    pub(super) script: Script,
    pub(super) hasher: PromptHasher,
    pub(super) served: usize,
    pub(super) exhausted: usize,
    pub(super) divergences: Vec<String>,
    pub(super) finished: bool,
    /// Whether the session was closed (finished, or the server stopped).
    closed: bool,
    /// The request at which the session went live, and the requests forwarded since.
    pub(super) went_live_at: Option<usize>,
    pub(super) live: usize,
    /// The live requests in flight, by number: what each asked and when, so that one still in
    /// flight when the session ends is recorded as the request it was.
    pub(super) flying: BTreeMap<usize, (super::capture::Captured, i64)>,
    /// Credentials the live requests carried, kept out of what is recorded.
    pub(super) secrets: std::collections::BTreeSet<String>,
    pub(super) recording: Recording,
    recorded: Option<String>,
    not_recorded: Option<String>,
}

impl ReplaySession {
    fn report(&self) -> SessionReport {
        SessionReport {
            session: self.script.key(),
            served: self.served,
            recorded: self.script.steps.len(),
            exhausted: self.exhausted,
            diverged: self.exhausted > 0 || !self.divergences.is_empty(),
            divergences: self.divergences.clone(),
            finished: self.finished,
            run_end_reported: self.recording.ended(),
            recorded_to: self.recorded.clone(),
            not_recorded: self.not_recorded.clone(),
            went_live_at: self.went_live_at,
            live: self.live,
        }
    }

    /// Whether the runtime asked anything of this session (served, refused or past the end).
    fn requested(&self) -> bool {
        self.served > 0 || self.exhausted > 0 || !self.divergences.is_empty() || self.live > 0
    }

    /// Ends the session (once): under `--strict`, recorded responses left unserved by a session
    /// that made requests are a divergence.
    fn close(&mut self, options: &Options) {
        let flying = std::mem::take(&mut self.flying).into_values();
        let model = self.script.model.clone();
        (self.recording).still_in_flight(model.as_deref(), flying, "finished", options.limits);
        let total = self.script.steps.len();
        let unserved = self.served < total && self.went_live_at.is_none();
        if options.strict && !self.closed && self.requested() && unserved {
            let message = format!(
                "the session ended with {} of {total} recorded model responses unserved (--strict)",
                total - self.served
            );
            self.recording.divergence(&message, options.limits);
            self.divergences.push(message);
        }
        self.closed = true;
    }

    /// Where the run was recorded, once it was.
    pub(super) fn recorded_to(&self) -> Option<&str> {
        self.recorded.as_deref()
    }

    /// Writes the replayed run under the record directory (once); `Err` says why not.
    fn write_recording(&mut self, options: &Options) -> Result<(), String> {
        let (Some(dir), None) = (&options.record, &self.recorded) else {
            return Ok(());
        };
        // A run that never happened is not recorded: it would claim an end nobody reported.
        if !self.requested() && !self.recording.ended() {
            self.not_recorded = Some(
                "no request was made and no run end was reported, so there is no run to record"
                    .to_owned(),
            );
            return Ok(());
        }
        self.not_recorded = None;
        let run = record::RunHeader {
            scenario: &self.script.scenario,
            case: &self.script.case,
            trial: options.trial_of(&self.script),
            model: self.script.model.as_deref(),
            source: "replay",
        };
        let sealed = (self.recording).seal(&run, (&self.hasher, &self.secrets), options.limits)?;
        let how = super::place::Placing {
            dir,
            raw_prompts: options.raw_prompts,
            signer: options.signer.as_deref(),
            waived: &options.waived,
            limits: options.limits,
            replace: true,
        };
        let path = super::place::place(&run, &sealed, &how)?;
        self.recorded = Some(path.to_string());
        Ok(())
    }
}

/// The served recordings, one session each.
pub struct Replay {
    sessions: BTreeMap<String, Mutex<ReplaySession>>,
    pub(super) options: Options,
    /// The upstream client once live (`Options::live`); `Err` when it could not be made.
    pub(super) forwarder: Option<Result<Arc<super::forward::Forwarder>, String>>,
    /// Requests read and captured at once, at most `proxy::READERS`, as `record` bounds them.
    pub(super) reading: Arc<tokio::sync::Semaphore>,
}

impl Replay {
    /// Sessions for `scripts` (one per `scenario/case`).
    pub fn new(scripts: Vec<Script>, options: Options) -> Replay {
        Replay {
            sessions: (scripts.into_iter())
                .map(|s| {
                    (
                        s.key(),
                        Mutex::new(ReplaySession {
                            hasher: options.hasher_for(&s),
                            script: s,
                            served: 0,
                            exhausted: 0,
                            divergences: Vec::new(),
                            finished: false,
                            closed: false,
                            went_live_at: None,
                            live: 0,
                            flying: BTreeMap::new(),
                            secrets: Default::default(),
                            recording: Recording::default(),
                            recorded: None,
                            not_recorded: None,
                        }),
                    )
                })
                .collect(),
            forwarder: (options.live.as_ref()).map(|l| {
                super::forward::Forwarder::new(l.upstream.clone(), l.timeout, options.limits)
                    .map(Arc::new)
                    .map_err(|e| e.to_string())
            }),
            reading: Arc::new(tokio::sync::Semaphore::new(super::proxy::READERS)),
            options,
        }
    }

    /// The session named `key`.
    pub(super) fn session_by_key(&self, key: &str) -> Option<&Mutex<ReplaySession>> {
        self.sessions.get(key)
    }

    /// Records every session not recorded yet (at shutdown); returns the problems.
    pub fn record_all(&self) -> Vec<String> {
        let mut problems = Vec::new();
        for s in self.sessions.values() {
            let mut s = s.lock().unwrap_or_else(|e| e.into_inner());
            s.close(&self.options);
            if let Err(e) = s.write_recording(&self.options) {
                problems.push(format!("{}: {e}", s.script.key()));
            }
        }
        problems
    }

    /// Every session's report, by `scenario/case`.
    pub fn reports(&self) -> Vec<SessionReport> {
        (self.sessions.values())
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).report())
            .collect()
    }

    /// The router serving these sessions.
    pub fn router(self: Arc<Self>) -> Router {
        let api = |prefix: &str| {
            Router::new()
                .route(
                    &format!("{prefix}/v1/chat/completions"),
                    post(super::models::chat),
                )
                .route(
                    &format!("{prefix}/v1/responses"),
                    post(super::models::responses),
                )
                .route(
                    &format!("{prefix}/v1/messages"),
                    post(super::models::messages),
                )
                .route(&format!("{prefix}/tracereplay/v1/finish"), post(finish))
                .route(&format!("{prefix}/tracereplay/v1/events"), post(events))
        };
        api("")
            .merge(api("/replay/{scenario}/{case}"))
            .merge(api("/replay/{scenario}/{case}/trial/{trial}"))
            .fallback(|| async {
                error(StatusCode::NOT_FOUND, "no such endpoint: this server answers POST /v1/chat/completions, /v1/responses, /v1/messages, /tracereplay/v1/events and /tracereplay/v1/finish", "not_found")
            })
            // A live request waits for the upstream's answer as long as it may stay silent.
            .layer(middleware::from_fn_with_state(
                (self.options.live.as_ref()).map_or(REQUEST_TIMEOUT, |l| l.timeout.max(REQUEST_TIMEOUT)),
                timeout,
            ))
            .layer(DefaultBodyLimit::max(BODY_LIMIT))
            .with_state(self)
    }

    pub(super) fn session(
        &self,
        path: Option<Named>,
        headers: &HeaderMap,
    ) -> Result<&Mutex<ReplaySession>, Fail> {
        let named = Named::of(path, headers).map_err(|message| Fail {
            status: StatusCode::BAD_REQUEST,
            message,
            kind: "session_not_named",
        })?;
        let named = named.map(|n| n.key());
        match named {
            Some(key) => self.sessions.get(&key).ok_or_else(|| Fail {
                status: StatusCode::NOT_FOUND,
                message: format!(
                    "no recording of `{key}` is served (served: {})",
                    self.keys()
                ),
                kind: "unknown_session",
            }),
            None if self.sessions.len() == 1 => Ok(self.sessions.values().next().expect("one")),
            None => Err(Fail {
                status: StatusCode::BAD_REQUEST,
                message: format!(
                    "{} recordings are served: name one with the path prefix /replay/<scenario>/<case>/ (/replay/<scenario>/<case>/trial/<trial>/ for a trial) or the X-Tracereplay-Case header (served: {})",
                    self.sessions.len(),
                    self.keys()
                ),
                kind: "session_not_named",
            }),
        }
    }

    /// Answers one request as the HTTP routes do, without a server, and gives its status:
    /// `route` is `chat`, `responses`, `events` or `finish` (anything else: 404). For the fuzz
    /// target of the request and event surfaces, and for tests.
    pub fn answer(&self, route: &str, body: &[u8]) -> u16 {
        let (headers, body) = (HeaderMap::new(), Bytes::copy_from_slice(body));
        let r = match route {
            "chat" => super::models::next_response(self, None, &headers, &body, Api::Chat),
            "responses" => {
                super::models::next_response(self, None, &headers, &body, Api::Responses)
            }
            "messages" => super::models::next_response(self, None, &headers, &body, Api::Anthropic),
            "events" => post_events(self, None, &headers, &body),
            "finish" => match self.session(None, &headers) {
                Ok(s) => {
                    let mut s = s.lock().unwrap_or_else(|e| e.into_inner());
                    s.finished = true;
                    StatusCode::OK.into_response()
                }
                Err(f) => f.respond(None),
            },
            _ => StatusCode::NOT_FOUND.into_response(),
        };
        r.status().as_u16()
    }

    /// Each session's recording as it stands, sealed (what finishing would write), or why it
    /// cannot be.
    pub fn seal_all(&self) -> Vec<Result<Vec<u8>, String>> {
        (self.sessions.values())
            .map(|s| {
                let s = s.lock().unwrap_or_else(|e| e.into_inner());
                let run = record::RunHeader {
                    scenario: &s.script.scenario,
                    case: &s.script.case,
                    trial: self.options.trial_of(&s.script),
                    model: s.script.model.as_deref(),
                    source: "replay",
                };
                s.recording
                    .seal(&run, (&s.hasher, &s.secrets), self.options.limits)
                    .map(|sealed| sealed.bytes)
            })
            .collect()
    }

    fn keys(&self) -> String {
        let keys: Vec<&str> = self.sessions.keys().map(String::as_str).collect();
        keys.join(", ")
    }
}

async fn timeout(State(limit): State<Duration>, req: Request, next: Next) -> Response {
    // A body announced larger than the limit is refused before a byte of it is read.
    let announced = (req.headers().get(header::CONTENT_LENGTH))
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|n| n > BODY_LIMIT as u64) {
        return error(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("the request body is larger than {BODY_LIMIT} bytes"),
            "body_too_large",
        );
    }
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(r) => r,
        Err(_) => error(
            StatusCode::REQUEST_TIMEOUT,
            "the request took too long",
            "timeout",
        ),
    }
}

/// A route's path parameters.
pub(super) type Params = Option<Path<BTreeMap<String, String>>>;

pub(super) fn named(path: Params) -> Option<Named> {
    Named::of_params(path)
}

/// `POST /tracereplay/v1/finish`: ends the session — after recording the events its body
/// carries, if any (as `events` would) — and says what was served.
async fn finish(
    State(replay): State<Arc<Replay>>,
    path: Params,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = named(path);
    let carries = !(body.iter().all(u8::is_ascii_whitespace) || body.as_ref() == b"{}");
    if carries {
        let answer = post_events(&replay, path.clone(), &headers, &body);
        if !answer.status().is_success() {
            return answer;
        }
    }
    let session = match replay.session(path, &headers) {
        Ok(s) => s,
        Err(f) => return f.respond(None),
    };
    let mut s = session.lock().unwrap_or_else(|e| e.into_inner());
    s.finished = true;
    s.close(&replay.options);
    if let Err(e) = s.write_recording(&replay.options) {
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("cannot record the run: {e}"),
            "record_failed",
        );
    }
    axum::Json(s.report()).into_response()
}

/// `POST /tracereplay/v1/events`: events the runtime reports (one event object or an array),
/// recorded in arrival order after the reader's checks.
async fn events(
    State(replay): State<Arc<Replay>>,
    path: Params,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    post_events(&replay, named(path), &headers, &body)
}

/// What `POST /tracereplay/v1/events` answers, without HTTP.
fn post_events(
    replay: &Replay,
    path: Option<Named>,
    headers: &HeaderMap,
    body: &Bytes,
) -> Response {
    let session = match replay.session(path, headers) {
        Ok(s) => s,
        Err(f) => return f.respond(None),
    };
    let events = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Array(items)) => items,
        Ok(one @ Value::Object(_)) => vec![one],
        Ok(_) => {
            return error(
                StatusCode::BAD_REQUEST,
                "send an event object or an array of them",
                "invalid_request",
            );
        }
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                &format!("the request body is not JSON: {e}"),
                "invalid_request",
            );
        }
    };
    let mut s = session.lock().unwrap_or_else(|e| e.into_inner());
    if s.recorded.is_some() {
        return error(
            StatusCode::CONFLICT,
            "the session is finished and recorded",
            "session_finished",
        );
    }
    if let Err((i, why)) = s.recording.report_all(events, replay.options.limits) {
        let message = format!(
            "event {i} refused (none of this request's events was recorded): {}",
            why.message()
        );
        return error(status_of(&why), &message, kind_of(&why));
    }
    axum::Json(serde_json::json!({"recorded": true})).into_response()
}
