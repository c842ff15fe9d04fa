//! tracereplay's network side: `replay serve`, `record` and `collect` — HTTP servers (axum on
//! tokio, with hyper's client upstream) that serve recorded model outputs, record live ones, and
//! receive OpenTelemetry exports. Tokio, axum and hyper live only in this crate.
//!
//! Replaying a recorded run into the real agent loop: `tracereplay replay serve` answers the
//! OpenAI API's model requests with a trace's recorded model outputs — in order, whatever is
//! asked, and loudly when the recording runs out — so that the runtime under test runs its own
//! tool dispatch, guards and approvals against the model outputs of the recorded run.
//!
//! Each request is captured — its input hashed as `ingest --from openai-messages` hashes a
//! recorded request's input, the tools it offers, the tool results it hands back — and compared
//! with the recording: a different input or tool set is a divergence. The runtime may report
//! its own events (approvals, messages, the final answer, the run's end); when the session
//! finishes, the replayed run is recorded as a sealed trace, which `check` and `diff` read like
//! any other.

// The layers below keep their paths inside this crate (`crate::ingest::…`).
use tracereplay_core::{discover, ingest, report, sign};
use tracereplay_trace::{self as trace, common, fsutil, paths};

pub mod answer;
pub(crate) mod anthropic;
pub mod canonical;
pub mod capture;
pub mod chunking;
mod client;
pub mod collect;
pub(crate) mod errors;
mod forward;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
mod models;
pub(crate) mod named;
pub(crate) mod openai;
pub(crate) mod place;
pub mod proxy;
pub mod record;
pub(crate) mod redact;
pub(crate) mod running;
pub(crate) mod script;
pub mod server;
pub(crate) mod signals;
pub mod stream_reader;

pub use chunking::Chunking;
pub use running::{Running, StopWhen, spawn};
pub use script::{Script, Step, load, load_all};
pub use server::{Live, LiveFrom, Options, Replay, SessionReport};
