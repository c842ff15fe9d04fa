//! Reports: one pure-data model and one renderer per format.

pub mod cases;
mod escape;
pub mod explain;
pub mod github;
pub mod html;
pub mod human;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod merge;
mod model;
pub mod otlp;
pub mod runfolder;
pub mod shares;
mod stamp;
pub mod usage;

pub use crate::eval::{RowMeta, Rows};
pub use escape::{escape_controls, markdown_cell};
pub use model::*;
