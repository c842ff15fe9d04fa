//! Scenarios: the model and loading.

/// The Harness Contract a scenario may name (its model lives with the oracle that checks it).
pub use crate::oracle::harness_contract as contract;
pub(crate) mod load;
pub(crate) mod locate;
mod model;

pub use load::{
    FileResult, LoadedScenarios, MAX_SCENARIO_BYTES, ScenarioError, load_file, load_scenarios,
};
pub use model::{Expected, OracleSpec, Risk, Scenario, field, metadata_string, scalar_string};
