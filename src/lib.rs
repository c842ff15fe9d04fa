//! tracereplay: agent runs stored as sealed traces and re-evaluated offline, in parallel, against
//! scenario oracles and approved baselines.
//!
//! The library holds the whole domain — reading and writing traces ([`trace`]), loading
//! scenarios ([`scenario`]), judging them ([`oracle`], [`eval`]), baselines and drift
//! ([`baseline`], [`diff`]) and reports ([`report`]) — and never parses flags, prints or exits;
//! the `tracereplay` binary (the default `cli` feature) does that. Build with
//! `default-features = false` for the library alone.
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

pub mod baseline;
pub mod common;
pub mod diff;
pub mod discover;
pub mod eval;
pub mod fsutil;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod gates;
pub mod ingest;
pub mod oracle;
pub mod paths;
pub mod prices;
pub mod privacy;
pub mod remote;
#[cfg(feature = "replay")]
pub mod replay;
pub mod report;
pub mod scenario;
pub mod sign;
mod suite;
pub mod trace;
pub mod trials;

pub use eval::{
    BaselinePolicy, Baselines, CheckOptions, Counting, FailOn, JudgeOptions, Runtime, Selection,
};
pub use report::{Report, ResultRow, RowVerdict};
pub use scenario::Scenario;
pub use suite::{CacheRead, Error, Suite, in_pool};
