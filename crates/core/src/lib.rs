//! The tracereplay judging core: scenarios and their oracles, approved baselines and drift,
//! the judging pipeline (`check`), the report and its formats, ingest of other recorders'
//! formats, trials and their statistics, and signed evidence. No async runtime (but for the
//! optional `remote` object-storage reader), no HTTP server, no command-line parsing: what a
//! project that judges traces from `cargo test` depends on. The trace format itself is
//! [`tracereplay_trace`], re-exported as [`trace`].
//!
//! # Checking a suite from your own tests
//!
//! The same check as `tracereplay check traces/`, from `cargo test`:
//!
//! ```no_run
//! use tracereplay_core::{CheckOptions, Suite};
//!
//! let suite = Suite::discover(["traces"])?;
//! let report = suite.check(&CheckOptions::default())?;
//! // Panics with every failing scenario, oracle and drift finding unless the run passed.
//! report.assert_passed();
//! assert_eq!(report.summary.traces, suite.traces());
//! # Ok::<(), tracereplay_core::Error>(())
//! ```
//!
//! Options group by concern: [`Selection`] (which scenarios), [`JudgeOptions`] (how a trace is
//! judged), [`Counting`] (what fails the run), [`Baselines`] (approved baselines and drift) and
//! [`Execution`] (threads, cache). The report is plain data: iterate `report.results` for each
//! [`ResultRow`].

pub use tracereplay_trace as trace;
// The trace crate's helpers keep their paths inside this crate (`crate::fsutil::…`).
use tracereplay_trace::{common, fsutil, paths, privacy};

pub mod baseline;
pub mod diff;
pub mod discover;
pub mod eval;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
pub mod gates;
pub mod ingest;
pub mod oracle;
pub mod prices;
pub mod remote;
pub mod report;
pub mod run_record;
pub mod scenario;
pub mod sign;
mod suite;
pub mod trials;

pub use eval::{
    BaselinePolicy, Baselines, CheckOptions, Counting, Execution, FailOn, JudgeOptions, Selection,
};
pub use oracle::registry::{Family, OracleType, TYPES as ORACLE_TYPES, lookup as lookup_oracle};
pub use oracle::{OracleResult, Verdict};
pub use report::{DriftCategory, DriftFinding, Report, ResultRow, RowVerdict};
pub use scenario::{Risk, Scenario, load_scenarios};
pub use suite::{CacheRead, Error, Suite, in_pool};
pub use trace::{ParsedTrace, SealedTrace, TraceFile, TraceWriter, parse_trace};
