//! `tracereplay record`: a recording proxy. An agent's model client points its base URL here;
//! each request is forwarded unchanged to the upstream (a provider, or another server), its
//! answer streamed back as it arrives, and the exchange recorded — through the same capture,
//! [`Recording`] and placement as `replay serve --record` — as one sealed trace per session.
//!
//! A session is named by the path prefix `/record/<scenario>/<case>/…` or the
//! `X-Tracereplay-Case: <scenario>/<case>` header, and is a trial of its case with `--trial` or
//! the `X-Tracereplay-Trial` header. It ends at `POST …/tracereplay/v1/finish`, after the idle
//! time, or when the server stops; `POST …/tracereplay/v1/cancel` drops it unwritten.

mod control;
mod entry;
pub(crate) mod paths;
mod running;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use camino::Utf8PathBuf;
use serde::Serialize;
use serde_json::Value;

use super::canonical::Api;
use super::forward::{self, Forwarder, Sink};
use super::named::Named;
use super::record::{Recording, RunHeader};
use super::server::error_in;
use crate::trace::Limits;
use crate::trace::PromptHasher;
use crate::trace::TrialId;

pub(crate) use entry::QUEUE_DEADLINE;
use entry::handle;
pub use paths::check_upstream;
pub use running::{RecordingServer, spawn};

pub use super::named::TRIAL_HEADER;

/// How long a request handing back a tool result waits for the answer that planned the call to
/// be recorded, while that answer is still in flight.
pub(crate) const PLANS_DEADLINE: Duration = Duration::from_secs(2);

/// How the recorder forwards and records.
#[derive(Clone)]
pub struct Options {
    /// The upstream's base URL (`https://api.openai.com`, `http://127.0.0.1:8080/prefix`): a
    /// request for `/v1/chat/completions` goes to `<upstream>/v1/chat/completions`.
    pub upstream: String,
    /// Where sessions are written (`DIR/<scenario>/<case>.trace.ndjson.zst`).
    pub out: Utf8PathBuf,
    /// Hashes request inputs (keyed with `TRACEREPLAY_HASH_KEY`, or unkeyed).
    pub hasher: PromptHasher,
    /// Developer opt-in: the raw text of each hashed input goes to the sidecar.
    pub raw_prompts: bool,
    /// The trial each session is, unless its `X-Tracereplay-Trial` header says.
    pub trial: Option<TrialId>,
    /// A session with no request in flight for this long is written.
    pub idle: Option<Duration>,
    /// How long the upstream may go silent in an answer before it counts as timed out.
    pub upstream_timeout: Duration,
    /// Limits of each session's recording.
    pub limits: Limits,
    /// Signs each recording, when set.
    pub signer: Option<Arc<dyn crate::sign::TraceSigner>>,
    /// Whether a recording already on disk for a session's run is replaced (re-recording a
    /// case after the agent changed); a run is still never recorded twice by one server.
    pub replace: bool,
    /// Fingerprints of secrets waived as false positives: a recording holding another secret
    /// is refused.
    pub waived: std::sync::Arc<std::collections::HashSet<String>>,
    /// Answers `GET …/tracereplay/v1/next`: whether a case needs another trial (what
    /// `tracereplay trials next` answers), when set.
    pub next: Option<NextTrial>,
}

/// Whether the case (`scenario`, `case`) needs another trial, as JSON (`{"settled": …,
/// "next_trial": …}`), or why that cannot be answered. It judges the recorded trials: it may
/// take a while, and runs off the server's threads.
pub type NextTrial = Arc<dyn Fn(&str, &str) -> Result<serde_json::Value, String> + Send + Sync>;

/// What the recorder tells whoever runs it, as it happens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// A session opened: its first request arrived (`scenario/case`, and ` trial ID`).
    Opened(String),
    /// A session ended.
    Ended(SessionEnd),
}

/// How a session ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionEnd {
    /// `scenario/case`, and ` trial ID` for a trial.
    pub session: String,
    /// Model requests recorded, answered or failed: the run's `inference` events.
    pub requests: usize,
    /// How the run ended (see [`Recording::ended_as`]).
    pub ended: String,
    /// Where it was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded_to: Option<String>,
    /// Why it was not written: nothing to write (no request made, or cancelled) or a refusal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_recorded: Option<String>,
    /// Whether not writing it is a failure (a refused or failed write), not a choice.
    pub failed: bool,
}

type SessionId = (String, String, Option<String>);

struct RecordSession {
    scenario: String,
    case: String,
    trial: Option<TrialId>,
    model: Option<String>,
    recording: Recording,
    requests: usize,
    in_flight: usize,
    /// The requests in flight, by number: what each asked and when it arrived, so that one
    /// still in flight when the session ends is recorded as the request it was.
    flying: BTreeMap<usize, (super::capture::Captured, i64)>,
    last: Instant,
    /// Credential values seen in this session's requests, kept out of everything recorded.
    secrets: BTreeSet<String>,
}

impl RecordSession {
    fn name(&self) -> String {
        let trial = (self.trial.as_ref()).map_or_else(String::new, |t| format!(" trial {t}"));
        format!("{}/{}{trial}", self.scenario, self.case)
    }

    fn path(&self) -> String {
        let trial = self.trial.as_ref().map(crate::trace::TrialId::as_str);
        let name = crate::trace::RunName {
            scenario: &self.scenario,
            case: &self.case,
            trial,
        };
        name.path().into_string()
    }
}

/// The recorder: its sessions, and the client it forwards with.
pub struct Recorder {
    options: Options,
    forwarder: Arc<Forwarder>,
    sessions: Mutex<BTreeMap<SessionId, RecordSession>>,
    /// Recording paths written (or being written) by this server: never written twice.
    claimed: Mutex<BTreeSet<String>>,
    ends: Mutex<Vec<SessionEnd>>,
    /// Each session's opening and end as they happen, for whoever waits on the server.
    told: tokio::sync::mpsc::UnboundedSender<Heard>,
    /// Requests whose body is being read and captured at once, at most [`READERS`]: what a
    /// request costs before it is forwarded is bounded per server, not per request.
    reading: Arc<tokio::sync::Semaphore>,
}

/// How many request bodies the recorder reads and captures at once (the others wait, their
/// bodies unread): with 16 MiB bodies, what 40 concurrent maximal requests cost is what two do.
pub const READERS: usize = 2;

impl Recorder {
    /// A recorder forwarding to `options.upstream`; `told` hears of each session's opening and
    /// end.
    pub fn new(
        options: Options,
        told: tokio::sync::mpsc::UnboundedSender<Heard>,
    ) -> std::io::Result<Recorder> {
        let forwarder = Arc::new(Forwarder::new(
            options.upstream.clone(),
            options.upstream_timeout,
            options.limits,
        )?);
        Ok(Recorder {
            options,
            forwarder,
            sessions: Mutex::new(BTreeMap::new()),
            claimed: Mutex::new(BTreeSet::new()),
            ends: Mutex::new(Vec::new()),
            told,
            reading: Arc::new(tokio::sync::Semaphore::new(READERS)),
        })
    }

    /// How every session that ended so far ended.
    pub fn ends(&self) -> Vec<SessionEnd> {
        self.ends.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The router: every request goes through one handler.
    pub fn router(self: Arc<Self>) -> axum::Router {
        axum::Router::new().fallback(handle).with_state(self)
    }

    /// Writes every open session (at shutdown), in-flight exchanges first given `grace` to end.
    pub async fn end_all(&self, grace: Duration) {
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline && self.in_flight() > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let keys: Vec<SessionId> = self.lock().keys().cloned().collect();
        for k in keys {
            self.end(&k, "the recorder stopped");
        }
    }

    /// Writes the sessions idle for longer than the idle time.
    pub fn end_idle(&self) {
        let Some(idle) = self.options.idle else {
            return;
        };
        let keys: Vec<SessionId> = (self.lock().iter())
            .filter(|(_, s)| s.in_flight == 0 && s.last.elapsed() >= idle)
            .map(|(k, _)| k.clone())
            .collect();
        for k in keys {
            self.end(&k, "idle");
        }
    }

    fn ended(&self, end: &SessionEnd) {
        let _ = self.told.send(Heard::Ended(end.clone()));
        self.ends
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(end.clone());
    }

    /// Waits (at most two seconds) until the session a `finish` names has no request in
    /// flight.
    async fn settle(&self, named: Option<&Named>, headers: &HeaderMap) {
        let deadline = Instant::now() + Duration::from_secs(2);
        let Ok(Some(Named { scenario, case, .. })) = Named::of(named.cloned(), headers) else {
            return;
        };
        let busy =
            || (self.lock().iter()).any(|(k, s)| k.0 == scenario && k.1 == case && s.in_flight > 0);
        while busy() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    fn in_flight(&self) -> usize {
        self.lock().values().map(|s| s.in_flight).sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<SessionId, RecordSession>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Ends the session `key`: writes it (unless there is nothing to write), and reports how.
    fn end(&self, key: &SessionId, why: &str) -> Option<SessionEnd> {
        let mut s = self.lock().remove(key)?;
        let flying = std::mem::take(&mut s.flying).into_values();
        let limits = self.options.limits;
        s.recording
            .still_in_flight(s.model.as_deref(), flying, why, limits);
        let end = self.write(&s);
        if end.recorded_to.is_none() {
            // A session not written frees its place for another.
            self.claimed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&s.path());
        }
        self.ended(&end);
        Some(end)
    }

    fn write(&self, s: &RecordSession) -> SessionEnd {
        let mut end = SessionEnd {
            session: s.name(),
            requests: s.recording.requests(),
            ended: s.recording.ended_as(),
            recorded_to: None,
            not_recorded: None,
            failed: false,
        };
        let cancelled_early =
            s.recording.end_status() == Some("cancelled") && !s.recording.ran_tools();
        if !s.recording.requested() {
            end.not_recorded = Some("no model request was made".to_owned());
            return end;
        }
        if cancelled_early {
            end.not_recorded = Some("the runtime cancelled the run before any tool ran".to_owned());
            return end;
        }
        let run = RunHeader {
            scenario: &s.scenario,
            case: &s.case,
            trial: s.trial.as_ref(),
            model: s.model.as_deref(),
            source: "record",
        };
        let how = super::place::Placing {
            dir: &self.options.out,
            raw_prompts: self.options.raw_prompts,
            signer: self.options.signer.as_deref(),
            waived: &self.options.waived,
            limits: self.options.limits,
            replace: self.options.replace,
        };
        let placed = (s.recording.seal(
            &run,
            (&self.options.hasher, &s.secrets),
            self.options.limits,
        ))
        .and_then(|sealed| super::place::place(&run, &sealed, &how));
        match placed {
            Ok(path) => end.recorded_to = Some(path.to_string()),
            Err(e) => {
                end.not_recorded = Some(e);
                end.failed = true;
            }
        }
        end
    }

    /// The session a request names (opened if new), or the refusal to answer it with.
    fn open(&self, named: Option<Named>, headers: &HeaderMap) -> Result<SessionId, Refusal> {
        let refuse = |m: &str, kind| Refusal::new(StatusCode::BAD_REQUEST, m, kind);
        let named = Named::of(named, headers).map_err(|e| refuse(&e, "session_not_named"))?;
        let Named {
            scenario,
            case,
            trial,
        } = named.ok_or_else(|| refuse("name the session: put the base URL under /record/<scenario>/<case>/ (and /trial/<trial>/ for a trial) or send the X-Tracereplay-Case: <scenario>/<case> header", "session_not_named"))?;
        if scenario.is_empty() || case.is_empty() {
            return Err(refuse(
                "a session's scenario and case must not be empty",
                "session_not_named",
            ));
        }
        let trial = match trial {
            Some(t) => Some(
                TrialId::parse(&t).map_err(|e| refuse(&format!("trial: {e}"), "invalid_trial"))?,
            ),
            None => self.options.trial.clone(),
        };
        let key = (
            scenario.clone(),
            case.clone(),
            trial.as_ref().map(|t| t.as_str().to_owned()),
        );
        let mut sessions = self.lock();
        if sessions.contains_key(&key) {
            return Ok(key);
        }
        let session = RecordSession {
            scenario,
            case,
            trial,
            model: None,
            recording: Recording::default(),
            requests: 0,
            in_flight: 0,
            flying: BTreeMap::new(),
            last: Instant::now(),
            secrets: BTreeSet::new(),
        };
        let path = session.path();
        let mut claimed = self.claimed.lock().unwrap_or_else(|e| e.into_inner());
        let on_disk = !self.options.replace && self.options.out.join(&path).exists();
        if claimed.contains(&path) || on_disk {
            let how = match on_disk {
                true => {
                    "give the run a trial (`--trial`, or the X-Tracereplay-Trial header), record again with `--replace`, or record into another directory"
                }
                false => {
                    "this recorder recorded it in this session already: give the run a trial (`--trial`, or the X-Tracereplay-Trial header)"
                }
            };
            return Err(Refusal::new(
                StatusCode::CONFLICT,
                &format!(
                    "session {} would be recorded as `{}`, which is recorded already: nothing was forwarded — {how}",
                    session.name(),
                    self.options.out.join(&path)
                ),
                "already_recorded",
            ));
        }
        claimed.insert(path);
        let _ = self.told.send(Heard::Opened(session.name()));
        sessions.insert(key.clone(), session);
        Ok(key)
    }
}

/// A refusal, answered in the asking API's error shape.
#[derive(Debug)]
struct Refusal {
    status: StatusCode,
    message: String,
    kind: &'static str,
}

impl Refusal {
    fn new(status: StatusCode, message: &str, kind: &'static str) -> Refusal {
        Refusal {
            status,
            message: message.to_owned(),
            kind,
        }
    }

    fn respond(&self, api: Option<Api>) -> Response {
        error_in(api, self.status, &self.message, self.kind)
    }
}

/// One model request of a session: captured, its tool results recorded, then forwarded and its
/// answer recorded into the session.
async fn exchange(
    recorder: Arc<Recorder>,
    key: SessionId,
    api: Api,
    (parts, rest, body): (axum::http::request::Parts, String, Bytes),
    reading: tokio::sync::OwnedSemaphorePermit,
) -> Response {
    let fail = |status, message: &str, kind| error_in(Some(api), status, message, kind);
    // A key given twice would be read one way by the upstream and another by the recording:
    // refused, nothing forwarded.
    let request: Value = match serde_json::from_slice(&body) {
        Ok(v) => match crate::trace::json::no_duplicate_keys(&body) {
            Err(e) => {
                let message = format!("the request body is refused: {e}");
                return fail(StatusCode::BAD_REQUEST, &message, "invalid_request");
            }
            Ok(()) if api.shaped(&v) => v,
            Ok(()) => {
                let message = format!("the request body is not {}", api.shape_wanted());
                return fail(StatusCode::BAD_REQUEST, &message, "invalid_request");
            }
        },
        Err(e) => {
            let message = format!("the request body is not JSON: {e}");
            return fail(StatusCode::BAD_REQUEST, &message, "invalid_request");
        }
    };
    let options = &recorder.options;
    let captured = super::capture::capture(api, &request, &options.hasher, options.raw_prompts);
    // The request is read and captured: the next may be read while this one is forwarded.
    drop(reading);
    // A client reads a streamed answer's last event and may ask again before the answer's
    // body has ended and it is recorded: a tool result whose call an answer still in flight
    // planned waits for that answer (briefly), so the call is recorded as it was planned.
    let settled = Instant::now() + PLANS_DEADLINE;
    let awaits = || {
        let sessions = recorder.lock();
        let s = sessions.get(&key);
        s.is_some_and(|s| s.in_flight > 0 && s.recording.awaits_plans(&captured))
    };
    while Instant::now() < settled && awaits() {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let request = {
        let mut sessions = recorder.lock();
        let Some(s) = sessions.get_mut(&key) else {
            let message =
                "the session ended while this request arrived; send it again to start a new one";
            return fail(StatusCode::CONFLICT, message, "session_ended");
        };
        if let Err(why) = s.recording.results(&captured, options.limits) {
            return super::server::refused(&why);
        }
        s.secrets.extend(super::redact::credentials(
            &parts.headers,
            parts.uri.query(),
        ));
        if s.model.is_none() {
            s.model = captured.model.clone();
        }
        s.requests += 1;
        s.in_flight += 1;
        s.last = Instant::now();
        let request = s.requests;
        s.flying
            .insert(request, (captured.clone(), forward::now_ms()));
        request
    };
    let sink = Box::new(SessionSink {
        recorder: recorder.clone(),
        key,
        request,
    });
    forward::forward(
        recorder.forwarder.clone(),
        sink,
        api,
        (parts, rest, body),
        captured,
    )
    .await
}

/// A recorder session, as where its exchanges are recorded.
struct SessionSink {
    recorder: Arc<Recorder>,
    key: SessionId,
    /// The request's number in its session.
    request: usize,
}

impl Sink for SessionSink {
    fn record(&self, f: &mut forward::RecordInto<'_>) {
        let mut sessions = self.recorder.lock();
        if let Some(s) = sessions.get_mut(&self.key) {
            s.in_flight = s.in_flight.saturating_sub(1);
            s.flying.remove(&self.request);
            s.last = Instant::now();
            f(&mut s.recording, &s.secrets, s.model.as_deref());
        }
    }
}
