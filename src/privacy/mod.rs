//! Prompt privacy: keyed hashing, the privacy and secret lint, and masking found secrets.

pub mod lint;
pub(crate) mod mask;

pub use crate::trace::{GrowingPrompt, KEY_ENV, PromptHasher, key_id};

/// The environment variable that opts a developer in to raw-prompt sidecars (`1`).
pub const RAW_OPT_IN_ENV: &str = "TRACEREPLAY_DEV_RAW_PROMPTS";

/// Whether raw prompt text may be written: the command's `--dev-raw-prompts` flag, or
/// `TRACEREPLAY_DEV_RAW_PROMPTS=1`. Never on by default.
pub fn raw_prompts_opted_in(flag: bool) -> bool {
    flag || std::env::var(RAW_OPT_IN_ENV).is_ok_and(|v| v.trim() == "1")
}
