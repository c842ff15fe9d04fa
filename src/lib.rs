//! tracereplay: agent runs stored as sealed traces and re-evaluated offline, in parallel, against
//! scenario oracles.
//!
//! The library holds the whole domain — reading and writing traces ([`trace`]), loading
//! scenarios ([`scenario`]), judging them ([`oracle`], [`eval`]) and building reports
//! ([`report`]) — and never parses flags, prints or exits; the `tracereplay` binary does that.

pub mod baseline;
#[cfg(feature = "cli")]
pub mod cli;
pub mod diff;
pub mod discover;
pub mod eval;
pub mod fsutil;
pub mod gates;
pub mod ingest;
pub mod oracle;
pub mod privacy;
pub mod report;
pub mod scenario;
pub mod trace;
