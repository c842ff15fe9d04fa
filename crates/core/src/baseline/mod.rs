//! Approved baselines: the normalised behaviour of a run and its files on disk.

mod behaviour;
mod set;
mod store;
mod text;

pub mod usage;
pub use crate::common::segment::{
    MAX_SEGMENT_BYTES, decode_segment, encode_segment, encode_trace_segment,
};
pub use behaviour::{
    ApprovalRecord, ArtifactRecord, Behaviour, CallRecord, MessageRecord, UsageRecord, canonical,
    normalize_artifact_path, oracle_key, recorded_result_hash, result_hash,
};
pub use set::{Approved, BaselineSet, SET_FORMAT, SET_VERSION, SetTrial};
pub use store::{
    APPROVED_SUFFIX, BASELINE_FORMAT, BASELINE_VERSION, BaselineError, BaselineFile, BaselineStore,
    DELETED_SUFFIX, MAX_BASELINE_BYTES, NEW_SUFFIX, StoredCase,
};

#[cfg(test)]
mod properties_tests;
