//! Traces: the model, reading (bounded decompression, seal verification, parsing), and writing.

mod error;
pub mod json;
mod model;
mod pack;
mod parse;
mod parse_body;
mod prompt_side;
mod raw;
mod read;
mod seal;
mod shape;
mod write;

pub use error::TraceError;
pub use json::{Json, Str};
pub use model::*;
pub use pack::{Packed, pack};
pub use parse::{ParsedTrace, parse_trace, parse_trace_with, probe_header};
#[cfg_attr(not(feature = "replay"), allow(unused_imports))] // the recorder's
pub(crate) use parse_body::request_part_segment;
pub use read::{Limits, Seal, TraceFile, is_trace_path, normalize_line_ends};
pub use seal::{Footer, content_hash, footer_line, is_footer_line, is_hash, parse_footer};
pub(crate) use shape::type_name as json_type_name;
pub use write::{SealedTrace, TraceWriter, ZSTD_LEVEL, sidecar_path};
