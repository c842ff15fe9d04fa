//! Reports: one pure-data model and one renderer per format.

pub mod human;
pub mod json;
mod model;

pub use model::*;
