//! The token usage and cost a recorded model message carries, in the names of the OpenAI APIs
//! (and of the harnesses that record them beside it, such as tau2-bench).

use serde_json::Value;

use crate::trace::Usage;

/// A message's token usage (Chat Completions or Responses names), with the cost a harness
/// recorded beside it (tau2-bench's per-message `cost`, in US dollars).
pub(super) fn usage_of(m: &Value) -> Option<Usage> {
    let u = m.get("usage")?;
    let get = |a: &str, b: &str| u.get(a).or_else(|| u.get(b)).and_then(Value::as_u64);
    let detail = |a: &str, b: &str, field: &str| {
        (u.get(a).or_else(|| u.get(b)))
            .and_then(|d| d.get(field))
            .and_then(Value::as_u64)
    };
    Some(Usage {
        input_tokens: get("prompt_tokens", "input_tokens")?,
        output_tokens: get("completion_tokens", "output_tokens")?,
        cache_read_tokens: detail(
            "prompt_tokens_details",
            "input_tokens_details",
            "cached_tokens",
        ),
        cache_write_tokens: None,
        reasoning_tokens: detail(
            "completion_tokens_details",
            "output_tokens_details",
            "reasoning_tokens",
        ),
        cost_usd: (m.get("cost").and_then(Value::as_f64)).filter(|c| *c >= 0.0 && c.is_finite()),
        priced: false,
    })
}
