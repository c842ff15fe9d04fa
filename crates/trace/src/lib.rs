//! The tracereplay trace format: the model, reading within bounds (decompression, seal
//! verification, parsing), sealing, the one typed writer and the one placement step (with its
//! secret rule), prompt privacy, and the paths traces are written at. It depends on nothing else
//! of tracereplay: what a recorder in another program builds on.

pub mod common;
pub mod fsutil;
pub mod paths;
pub mod privacy;

mod error;
mod fast_line;
pub mod hash;
pub mod json;
mod model;
mod order;
mod owned;
mod pack;
mod parse;
mod parse_body;
mod place;
mod prompt_side;
mod raw;
mod read;
mod seal;
mod shape;
pub mod trial;
pub mod values;
mod write;

/// Where traces are written: a directory nothing escapes (no `..`, no symlink under it).
pub use crate::fsutil::{Confined, Staged};
pub use error::TraceError;
pub use hash::{GrowingPrompt, KEY_ENV, PromptHasher, key_id};
pub use json::{Json, Str};
pub use model::{
    Args, Event, EventBody, FORMAT_NAME, FORMAT_VERSION, Finish, Header, Inference,
    InferenceOutput, KNOWN_KINDS, Phase, PlannedCall, Privacy, PromptRef, RunStatus, Runtime,
    ToolCallRef, Trace, Usage, normalize_kind, squash,
};
pub use order::{BrokenOrder, OrderError};
pub use owned::TextMut;
pub use pack::{Packed, pack};
pub use parse::{ParsedTrace, parse_trace, parse_trace_with, probe_header, probe_run};
pub use parse_body::request_part_segment;
pub use place::{
    AtDestination, Checked, Existing, PlaceError, Placed, Placement, RunName, at_destination,
    keep_same,
};
pub use read::{Limits, Seal, TraceFile, is_trace_path, normalize_line_ends};
pub use seal::{Footer, content_hash, footer_line, is_footer_line, is_hash, parse_footer};
pub use shape::type_name as json_type_name;
pub use trial::TrialId;
pub use write::{SealedTrace, TraceWriter, ZSTD_LEVEL, sidecar_path};

/// The header label holding the OpenTelemetry trace id a trace was ingested from (and that
/// `check --otlp` writes its verdicts back onto).
pub const TRACE_ID_LABEL: &str = "otel.trace_id";
/// The header label holding the id of the span a trace was ingested from (its agent span).
pub const SPAN_ID_LABEL: &str = "otel.span_id";
