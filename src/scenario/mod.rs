//! Scenarios: the model and loading.

mod load;
mod model;

pub use load::{FileResult, LoadedScenarios, ScenarioError, load_file, load_scenarios};
pub use model::*;
