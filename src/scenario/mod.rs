//! Scenarios: the model and loading.

pub mod contract;
pub(crate) mod load;
mod model;

pub use load::{
    FileResult, LoadedScenarios, MAX_SCENARIO_BYTES, ScenarioError, load_file, load_scenarios,
};
pub use model::*;
