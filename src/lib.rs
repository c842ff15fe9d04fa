//! tracereplay: agent runs stored as sealed traces and re-evaluated offline, in parallel, against
//! scenario oracles and approved baselines.
//!
//! The library's API is three things: the crate root (a [`Suite`] of traces and scenarios,
//! checked with [`CheckOptions`] into a [`Report`]; [`Scenario`]s and the oracle registry,
//! [`ORACLE_TYPES`]), [`trace`] (the format: reading, verifying, writing and placing sealed
//! traces — [`TraceFile`], [`TraceWriter`], [`SealedTrace`]) and [`report`] (the report's types
//! and its formats, each an [`report::Exporter`]). It never parses flags, prints or exits; the
//! `tracereplay` binary (the default `cli` feature) does that. Build with
//! `default-features = false` for the library alone. (`internal` holds the layers the binary is
//! built from; it is hidden and not API.)
//!
//! # Checking a suite from your own tests
//!
//! The same check as `tracereplay check traces/`, from `cargo test`:
//!
//! ```
//! use tracereplay::{CheckOptions, Suite};
//!
//! let suite = Suite::discover(["traces"])?;
//! let report = suite.check(&CheckOptions::default())?;
//! // Panics with every failing scenario, oracle and drift finding unless the run passed.
//! report.assert_passed();
//! assert_eq!(report.summary.traces, suite.traces());
//! # Ok::<(), tracereplay::Error>(())
//! ```
//!
//! Options group by concern: [`Selection`] (which scenarios), [`JudgeOptions`] (how a trace is
//! judged), [`Counting`] (what fails the run), [`Baselines`] (approved baselines and drift) and
//! [`Runtime`] (threads, cache). The report is plain data: iterate `report.results` for each
//! [`ResultRow`].

pub mod report;
pub use tracereplay_trace as trace;

/// Not API: the layers the `tracereplay` binary, its tests, benches and fuzz targets are built
/// from, public only so that they can reach them. Nothing in it is covered by semantic
/// versioning; a library user names what the crate root, [`trace`] and [`report`] export.
#[doc(hidden)]
pub mod internal;
mod suite;

// The layers keep their crate paths (`crate::oracle::…`) inside the crate.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use internal::fuzzing;
#[cfg(feature = "replay")]
pub(crate) use internal::replay;
pub(crate) use internal::{
    baseline, common, diff, discover, eval, fsutil, gates, ingest, oracle, paths, prices, privacy,
    remote, scenario, sign, trials,
};

pub use eval::{
    BaselinePolicy, Baselines, CheckOptions, Counting, FailOn, JudgeOptions, Runtime, Selection,
};
pub use oracle::registry::{Family, OracleType, TYPES as ORACLE_TYPES, lookup as lookup_oracle};
pub use oracle::{OracleResult, Verdict};
pub use report::{DriftCategory, DriftFinding, Report, ResultRow, RowVerdict};
pub use scenario::{Risk, Scenario, load_scenarios};
pub use suite::{CacheRead, Error, Suite, in_pool};
pub use trace::{ParsedTrace, SealedTrace, TraceFile, TraceWriter, parse_trace};
