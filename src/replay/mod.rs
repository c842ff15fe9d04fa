//! Replaying a recorded run into the real agent loop: `tracereplay replay serve` answers the
//! OpenAI API's model requests with a trace's recorded model outputs — in order, whatever is
//! asked, and loudly when the recording runs out — so that the runtime under test runs its own
//! tool dispatch, guards and approvals against the model outputs of the recorded run.
//!
//! What is built so far: serving (Chat Completions, streamed or not, and Responses), sessions
//! per recorded run (by path prefix or header), exhaustion, and ending a session. Capturing the
//! runtime's requests (input hashes, divergence) and recording the replayed run as a trace are
//! not built yet.

pub mod openai;
pub mod script;
pub mod server;

pub use script::{Script, Step, load, load_all};
pub use server::{Replay, SessionReport};
