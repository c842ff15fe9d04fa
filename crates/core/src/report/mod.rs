//! Reports: one pure-data model and one renderer per format.

pub(crate) mod cases;
pub mod compare;
mod escape;
pub mod explain;
mod export;
mod fail_on;
pub mod github;
pub mod html;
pub mod human;
pub mod json;
pub mod junit;
pub mod markdown;
mod model;
pub mod otlp;
pub mod runfolder;
pub(crate) use crate::common::stamp;
pub use stamp::rfc3339;
pub(crate) mod store;
pub mod usage;

pub use escape::{escape_controls, markdown_cell};
pub use export::{ExportContext, Exporter, Format};
pub use fail_on::{FailOn, verdict_blocks};
pub use model::{
    DriftCategory, DriftFinding, FailedWrite, ObsoleteBaseline, Partition, Report, ResultRow,
    RowError, RowErrorKind, RowSummary, RowVerdict, SCHEMA_VERSION, Source, Summary, ToolInfo,
};
pub use store::{RowMeta, Rows};
