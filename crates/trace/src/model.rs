//! The in-memory model of a trace (format v1): header, events and footer, borrowing from the
//! decompressed bytes they were read from.

use std::collections::BTreeMap;

use serde::Serialize;

use super::json::{Json, Str};

/// The value of `header.format`.
pub const FORMAT_NAME: &str = "tracereplay.trace";
/// The major format version this reader understands.
pub const FORMAT_VERSION: u64 = 1;

/// Line 1 of every trace.
#[derive(Debug, Clone, Serialize)]
pub struct Header<'a> {
    /// Id of the scenario the run exercised.
    pub scenario: Str<'a>,
    /// Which recorded run of the scenario this is (`default` when absent).
    pub case: Str<'a>,
    /// Which trial of the case this recording is, when the case was recorded several times.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trial: Option<crate::TrialId>,
    /// The agent runtime that produced the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Runtime<'a>>,
    /// The model id requested.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<Str<'a>>,
    /// How prompt text was recorded.
    pub privacy: Privacy<'a>,
    /// When the run was recorded (informational).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded_at: Option<Str<'a>>,
    /// Where the trace came from (`native`, an importer name…).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<Str<'a>>,
    /// Free-form labels.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

/// The agent runtime named in the header.
#[derive(Debug, Clone, Serialize)]
pub struct Runtime<'a> {
    /// Runtime name.
    pub name: Str<'a>,
    /// Runtime version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<Str<'a>>,
}

/// How prompt text was recorded (`header.privacy`).
#[derive(Debug, Clone, Serialize)]
pub struct Privacy<'a> {
    /// `hashed` or `raw-sidecar`.
    pub prompts: Str<'a>,
    /// `blake3` or `blake3-keyed`.
    pub hash: Str<'a>,
    /// Key id of the keyed hash.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kid: Option<Str<'a>>,
}

impl Default for Privacy<'_> {
    fn default() -> Self {
        Privacy {
            prompts: Str::from("hashed"),
            hash: Str::from("blake3"),
            kid: None,
        }
    }
}

/// A hashed text sent to the model: `{"h": "b3:…", "len": N}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptRef<'a> {
    /// `b3:` or `b3k:` followed by 64 lowercase hex digits.
    pub h: Str<'a>,
    /// Length in Unicode scalar values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub len: Option<u64>,
}

/// One event line.
#[derive(Debug, Clone)]
pub struct Event<'a> {
    /// Strictly increasing sequence number.
    pub seq: u64,
    /// Unix time in milliseconds, when recorded.
    pub ts_ms: Option<i64>,
    /// Nanoseconds past `ts_ms` (0 to 999,999), when the source kept time finer than a
    /// millisecond (an extension of format v1, `ts_sub_ns`: importers write it, only when not 0).
    pub ts_sub_ns: Option<u32>,
    /// The event was copied from an earlier run as context (ATIF's `is_copied_context`), not
    /// done by this run: oracles and baselines do not see it unless the scenario says
    /// `judgeCopiedContext` (an extension of format v1, `copied`, written only when true).
    pub copied: bool,
    /// 1-based line number in the decompressed trace (0 for events built in memory).
    pub line: usize,
    /// What happened.
    pub body: EventBody<'a>,
}

impl<'a> Event<'a> {
    /// An event built in memory: no line, no time finer than `ts_ms`, not copied.
    pub fn new(seq: u64, ts_ms: Option<i64>, body: EventBody<'a>) -> Self {
        Event {
            seq,
            ts_ms,
            ts_sub_ns: None,
            copied: false,
            line: 0,
            body,
        }
    }
}

/// The kind-specific part of an event.
#[derive(Debug, Clone)]
#[allow(missing_docs)] // fields are documented in the trace-format spec table
pub enum EventBody<'a> {
    /// An inbound user turn.
    UserMessage {
        prompt: PromptRef<'a>,
        id: Option<Str<'a>>,
    },
    /// One request to the model and its response.
    Inference(Box<Inference<'a>>),
    /// A tool execution started.
    ToolCall {
        call_id: Str<'a>,
        tool: Str<'a>,
        args: Args<'a>,
    },
    /// The result of the call with that `call_id`.
    ToolResult {
        call_id: Str<'a>,
        ok: bool,
        output: Option<Json<'a>>,
        output_h: Option<Str<'a>>,
        error: Option<Str<'a>>,
    },
    /// The runtime asked for approval; no `tool` means a blanket request.
    ApprovalRequest {
        tool: Option<Str<'a>>,
        call_id: Option<Str<'a>>,
        approval_id: Option<Str<'a>>,
        reason: Option<Str<'a>>,
    },
    /// An answer to an approval request.
    ApprovalDecision {
        granted: bool,
        approval_id: Option<Str<'a>>,
        call_id: Option<Str<'a>>,
        tool: Option<Str<'a>>,
        by: Option<Str<'a>>,
    },
    /// Something sent to the user.
    Message {
        id: Str<'a>,
        phase: Phase,
        text: Str<'a>,
        reply_to: Option<Str<'a>>,
        channel: Option<Str<'a>>,
    },
    /// An earlier message's text replaced.
    MessageEdit {
        id: Str<'a>,
        text: Str<'a>,
        phase: Option<Phase>,
    },
    /// An earlier message retracted.
    MessageDelete { id: Str<'a> },
    /// A file the run wrote.
    Artifact {
        path: Str<'a>,
        h: Str<'a>,
        bytes: u64,
        text: Option<Str<'a>>,
        mtime_ms: Option<i64>,
    },
    /// A state transition the runtime reported.
    StateChange {
        path: Str<'a>,
        from: Option<Json<'a>>,
        to: Option<Json<'a>>,
    },
    /// An error not tied to one tool call.
    Error {
        message: Str<'a>,
        code: Option<Json<'a>>,
        /// The conversation of the model request that failed, when the error is a failed
        /// request's (an extension of format v1: `record` writes it).
        input_h: Option<Str<'a>>,
    },
    /// Free-form annotation.
    Note { text: Str<'a> },
    /// The run's final answer.
    FinalAnswer { text: Str<'a> },
    /// How the run ended.
    RunEnd {
        status: RunStatus,
        error: Option<Str<'a>>,
    },
    /// A kind this reader does not know; kept, warned about once, seen by no oracle.
    Unknown { kind: String },
}

/// One request to the model and its response.
#[derive(Debug, Clone, Default)]
#[allow(missing_docs)]
pub struct Inference<'a> {
    pub request_id: Option<Str<'a>>,
    pub model: Option<Str<'a>>,
    pub input_h: Option<Str<'a>>,
    pub system_h: Option<Str<'a>>,
    pub tools_offered: Option<Vec<Str<'a>>>,
    pub consumes: Option<Vec<Str<'a>>>,
    pub output: Option<InferenceOutput<'a>>,
    pub usage: Option<Usage>,
    pub finish: Option<Finish>,
    /// How long the request took, from its first byte sent to its answer's last byte
    /// received, in milliseconds (an extension of format v1: `record` writes it).
    pub latency_ms: Option<u64>,
    /// The request's parts, hashed: (JSON pointer into the canonical request, hash of the value
    /// there), so that a replay can name the first field a changed request differs in (an
    /// extension of format v1: `record` and `replay serve --record` write it).
    pub request_h: Option<Vec<(Str<'a>, Str<'a>)>>,
    /// The answer was cut before its end (a stream the upstream or the client closed): its
    /// `output` is what arrived, and an `error` event after it says why (an extension of
    /// format v1: `record` writes it, only when true).
    pub truncated: bool,
    /// How many requests to the model this event stands for, when more than one were
    /// recorded as one step with their usage summed (ATIF's `llm_call_count` > 1; an extension
    /// of format v1: `request-count` still counts events).
    pub llm_calls: Option<u32>,
}

/// What the model answered.
#[derive(Debug, Clone, Default)]
pub struct InferenceOutput<'a> {
    /// Assistant text.
    pub text: Option<Str<'a>>,
    /// Calls planned together: one batch.
    pub tool_calls: Option<Vec<PlannedCall<'a>>>,
}

/// A tool call an inference planned.
#[derive(Debug, Clone)]
pub struct PlannedCall<'a> {
    /// The call id the execution must carry.
    pub call_id: Str<'a>,
    /// Tool name.
    pub tool: Str<'a>,
    /// Arguments.
    pub args: Args<'a>,
}

/// Token usage of one inference.
///
/// `input_tokens` includes the cache reads `cache_read_tokens` counts and `output_tokens` the
/// reasoning `reasoning_tokens` counts (as OpenAI and the OpenTelemetry GenAI conventions count
/// them). `cost_usd` is what the request cost in US dollars when the recorder knew it (an
/// extension of format v1: readers that do not know it ignore it).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, serde::Deserialize)]
#[allow(missing_docs)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Input tokens written to the provider's prompt cache (Anthropic's
    /// `cache_creation_input_tokens`), counted in `input_tokens` too (an extension of format
    /// v1, as `cost_usd`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Whether `cost_usd` was computed from a price table rather than recorded (never written).
    #[serde(skip)]
    pub priced: bool,
}

/// Tool-call arguments: a JSON object, or a string that did not hold one.
#[derive(Debug, Clone, PartialEq)]
pub enum Args<'a> {
    /// A JSON object (possibly parsed from a string holding one).
    Object(Json<'a>),
    /// A string that is not a JSON object, kept as written.
    Text(Str<'a>),
}

impl Args<'_> {
    /// The arguments as a JSON value (object or string).
    pub fn value(&self) -> serde_json::Value {
        match self {
            Args::Object(j) => j.value(),
            Args::Text(s) if s.len() > super::json::LARGE_VALUE_BYTES => {
                super::json::summary(&serde_json::Value::String(s.to_string()).to_string())
            }
            Args::Text(s) => serde_json::Value::String(s.to_string()),
        }
    }
}

macro_rules! string_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name { $($(#[$vm])* $variant),+ }

        impl $name {
            /// Every accepted spelling, as the spec writes it.
            pub const ALL: &'static [&'static str] = &[$($text),+];

            /// The spec's spelling.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            /// Parses the exact spelling the spec uses.
            pub fn parse(s: &str) -> Option<Self> {
                match s { $($text => Some($name::$variant),)+ _ => None }
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

string_enum! {
    /// A message's phase.
    Phase { /// Streamed, provisional.
        Preview = "preview", /// The reply that stands.
        Final = "final" }
}

string_enum! {
    /// `run_end.status`.
    RunStatus { /// The run finished normally.
        Completed = "completed", /// The run failed.
        Failed = "failed", /// The run was cancelled.
        Cancelled = "cancelled" }
}

string_enum! {
    /// `inference.finish`.
    Finish { /// Natural stop.
        Stop = "stop", /// Stopped to call tools.
        ToolCall = "tool_call", /// Hit the length limit.
        Length = "length", /// Filtered.
        ContentFilter = "content_filter", /// Errored.
        Error = "error" }
}

impl EventBody<'_> {
    /// The canonical kind name (`tool_call`, …).
    pub fn kind(&self) -> &str {
        match self {
            EventBody::UserMessage { .. } => "user_message",
            EventBody::Inference(_) => "inference",
            EventBody::ToolCall { .. } => "tool_call",
            EventBody::ToolResult { .. } => "tool_result",
            EventBody::ApprovalRequest { .. } => "approval_request",
            EventBody::ApprovalDecision { .. } => "approval_decision",
            EventBody::Message { .. } => "message",
            EventBody::MessageEdit { .. } => "message_edit",
            EventBody::MessageDelete { .. } => "message_delete",
            EventBody::Artifact { .. } => "artifact",
            EventBody::StateChange { .. } => "state_change",
            EventBody::Error { .. } => "error",
            EventBody::Note { .. } => "note",
            EventBody::FinalAnswer { .. } => "final_answer",
            EventBody::RunEnd { .. } => "run_end",
            EventBody::Unknown { kind } => kind,
        }
    }
}

/// Every known event kind, in the spec's order.
pub const KNOWN_KINDS: &[&str] = &[
    "user_message",
    "inference",
    "tool_call",
    "tool_result",
    "approval_request",
    "approval_decision",
    "message",
    "message_edit",
    "message_delete",
    "artifact",
    "state_change",
    "error",
    "note",
    "final_answer",
    "run_end",
];

/// Maps a kind as written to its canonical name: case, `-` and `_` ignored, so `toolCall`,
/// `Tool-Call` and `tool_call` are one kind. Returns `None` for a kind that is still unknown.
pub fn normalize_kind(kind: &str) -> Option<&'static str> {
    // Hot path: recorders write the canonical spelling.
    if let Some(k) = KNOWN_KINDS
        .iter()
        .chain(&["header", "footer"])
        .find(|k| **k == kind)
    {
        return Some(k);
    }
    let squashed = squash(kind);
    KNOWN_KINDS
        .iter()
        .copied()
        .chain(["header", "footer"])
        .find(|k| k.replace('_', "") == squashed)
}

/// Lowercases and drops `-` and `_`.
pub fn squash(s: &str) -> String {
    s.chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// A parsed trace: header and events, borrowing from the decompressed bytes.
#[derive(Debug, Clone)]
pub struct Trace<'a> {
    /// Line 1.
    pub header: Header<'a>,
    /// Every event, in recorded order.
    pub events: Vec<Event<'a>>,
}

impl<'a> Trace<'a> {
    /// The trace as oracles and baselines judge it: without the events copied from an earlier
    /// run as context ([`Event::copied`]) unless `with_copied` — borrowed, at no cost, when
    /// nothing is left out.
    pub fn judged(&self, with_copied: bool) -> std::borrow::Cow<'_, Trace<'a>> {
        if with_copied || !self.events.iter().any(|e| e.copied) {
            return std::borrow::Cow::Borrowed(self);
        }
        std::borrow::Cow::Owned(Trace {
            header: self.header.clone(),
            events: (self.events.iter())
                .filter(|e| !e.copied)
                .cloned()
                .collect(),
        })
    }

    /// The run's end status: `run_end.status`, or `None` (reported as `unknown`) without one.
    pub fn run_end(&self) -> Option<(&Event<'a>, RunStatus)> {
        self.events.iter().find_map(|e| match e.body {
            EventBody::RunEnd { status, .. } => Some((e, status)),
            _ => None,
        })
    }

    /// The tool calls: `tool_call` events in `seq` order.
    pub fn tool_calls(&self) -> impl Iterator<Item = ToolCallRef<'_, 'a>> {
        self.events.iter().filter_map(|e| match &e.body {
            EventBody::ToolCall {
                call_id,
                tool,
                args,
            } => Some(ToolCallRef {
                event: e,
                call_id,
                tool,
                args,
            }),
            _ => None,
        })
    }
}

/// A view of one `tool_call` event.
#[derive(Debug, Clone, Copy)]
pub struct ToolCallRef<'t, 'a> {
    /// The event itself.
    pub event: &'t Event<'a>,
    /// Its call id.
    pub call_id: &'t Str<'a>,
    /// Its tool name.
    pub tool: &'t Str<'a>,
    /// Its arguments.
    pub args: &'t Args<'a>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_normalise_ignoring_case_dashes_and_underscores() {
        for (written, canonical) in [
            ("toolCall", Some("tool_call")),
            ("TOOL-CALL", Some("tool_call")),
            ("tool_call", Some("tool_call")),
            ("runEnd", Some("run_end")),
            ("Final_Answer", Some("final_answer")),
            ("approvalDecision", Some("approval_decision")),
            ("footer", Some("footer")),
            ("telemetry", None),
            ("tool_calls", None),
        ] {
            assert_eq!(normalize_kind(written), canonical, "{written}");
        }
    }

    #[test]
    fn enums_parse_only_spec_spellings() {
        assert_eq!(Phase::parse("final"), Some(Phase::Final));
        assert_eq!(Phase::parse("Final"), None);
        assert_eq!(RunStatus::parse("cancelled"), Some(RunStatus::Cancelled));
        assert_eq!(Finish::parse("content_filter"), Some(Finish::ContentFilter));
        assert_eq!(Finish::parse("done"), None);
    }
}
