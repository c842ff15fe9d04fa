//! Not API: the layers the `tracereplay` binary, its tests, benches and fuzz targets are built
//! from (`tracereplay::internal::…`), public only so that they can reach them, and inside the
//! crate at their own paths (`crate::oracle`). Nothing here is covered by semantic versioning:
//! a library user names what the crate root, `trace` and `report` export. Each layer keeps its
//! directory under `src/`; `tests/cli/layering.rs` holds the rules between them.

pub use tracereplay_trace::{common, fsutil, paths, privacy};

#[path = "baseline/mod.rs"]
pub mod baseline;
#[path = "diff/mod.rs"]
pub mod diff;
#[path = "discover.rs"]
pub mod discover;
#[path = "eval/mod.rs"]
pub mod eval;
#[cfg(any(test, feature = "fuzzing"))]
#[path = "fuzzing/mod.rs"]
pub mod fuzzing;
#[path = "gates/mod.rs"]
pub mod gates;
#[path = "ingest/mod.rs"]
pub mod ingest;
#[path = "oracle/mod.rs"]
pub mod oracle;
#[path = "prices.rs"]
pub mod prices;
#[path = "remote/mod.rs"]
pub mod remote;
#[cfg(feature = "replay")]
#[path = "replay/mod.rs"]
pub mod replay;
#[path = "scenario/mod.rs"]
pub mod scenario;
#[path = "sign/mod.rs"]
pub mod sign;
#[path = "trials/mod.rs"]
pub mod trials;
