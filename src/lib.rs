//! tracereplay: agent runs stored as sealed traces and re-evaluated offline, in parallel, against
//! scenario oracles and approved baselines.
//!
//! The library's API is three things: the crate root (a [`Suite`] of traces and scenarios,
//! checked with [`CheckOptions`] into a [`Report`]; [`Scenario`]s and the oracle registry,
//! [`ORACLE_TYPES`]), [`trace`] (the format: reading, verifying, writing and placing sealed
//! traces — [`TraceFile`], [`TraceWriter`], [`SealedTrace`]) and [`report`] (the report's types
//! and its formats, each an [`report::Exporter`]). It never parses flags, prints or exits; the
//! `tracereplay` binary (the default `cli` feature) does that. Build with
//! `default-features = false` for the library alone.
//!
//! The package is the workspace's top: the trace format is the crate `tracereplay-trace`
//! (re-exported as [`trace`]), judging is `tracereplay-core` (a project that only judges traces
//! may depend on it alone: no async runtime, no HTTP server, no command-line parser), and the
//! servers are `tracereplay-net`.
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
//! [`Execution`] (threads, cache). The report is plain data: iterate `report.results` for each
//! [`ResultRow`].

pub use tracereplay_core::report;
pub use tracereplay_trace as trace;

pub use tracereplay_core::{
    BaselinePolicy, Baselines, CacheRead, CheckOptions, Counting, DriftCategory, DriftFinding,
    Error, Execution, FailOn, Family, JudgeOptions, ORACLE_TYPES, OracleResult, OracleType, Report,
    ResultRow, Risk, RowVerdict, Scenario, Selection, Suite, Verdict, in_pool, load_scenarios,
    lookup_oracle,
};
pub use tracereplay_trace::{ParsedTrace, SealedTrace, TraceFile, TraceWriter, parse_trace};
