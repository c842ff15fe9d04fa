//! Scenarios: the model and loading.

pub mod contract;
mod load;
mod model;

pub use load::{FileResult, LoadedScenarios, ScenarioError, load_file, load_scenarios};
pub use model::*;
