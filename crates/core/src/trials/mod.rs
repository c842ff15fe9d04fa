//! Trials: several recordings of one (scenario, case), judged as a set. A case's verdict comes
//! from its trials under the scenario's `trials` policy (`policy`); its drift from an approved
//! set is a matter of statistics (`stats`, [`crate::diff::trial_drift`]), never of comparing trials one to one.
//! A case with one trace is judged exactly as a trace is.

pub mod group;
pub mod plan;
pub mod policy;
pub mod sequential;
pub(crate) mod stats;

pub use crate::trace::TrialId;
