//! What may be written: the privacy and secret lint, masking found secrets, and the developer's
//! opt-in to raw prompt text. It knows no trace type, so the trace writer can apply its rules
//! (prompts are hashed by the trace layer's [`crate::PromptHasher`]).

pub mod lint;
pub mod mask;

/// The environment variable that opts a developer in to raw-prompt sidecars (`1`).
pub const RAW_OPT_IN_ENV: &str = "TRACEREPLAY_DEV_RAW_PROMPTS";

/// Whether raw prompt text may be written: the command's `--dev-raw-prompts` flag, or
/// `TRACEREPLAY_DEV_RAW_PROMPTS=1`. Never on by default.
pub fn raw_prompts_opted_in(flag: bool) -> bool {
    flag || std::env::var(RAW_OPT_IN_ENV).is_ok_and(|v| v.trim() == "1")
}
