//! `final_metrics`: `export --to atif` writes the totals from the trace's usage, so a total
//! given on the way in that is not the sum of the steps' metrics would come back changed — it
//! is counted instead.

use serde_json::Value;

use super::{present, skip};
use crate::ingest::IngestOutcome;

/// What the steps' metrics add up to, as the exporter adds the trace's usage up.
#[derive(Default)]
struct Sums {
    any: bool,
    prompt: u64,
    completion: u64,
    cached: Option<u64>,
    cost: Option<f64>,
    every_cost: bool,
}

/// Counts each total of `final_metrics` that is not what the steps add up to.
pub(super) fn check(doc: &Value, steps: &[Value], outcome: &mut IngestOutcome) {
    let Some(fm) = doc.get("final_metrics").filter(|v| !v.is_null()) else {
        return;
    };
    if present(fm.get("extra")) {
        skip(outcome, "atif `final_metrics.extra`");
    }
    let s = sums(steps);
    let n = |k: &str| fm.get(k).filter(|v| !v.is_null());
    let int = |k: &str, want: Option<u64>| n(k).is_some_and(|v| v.as_u64() != want);
    let cost = s.cost.filter(|_| s.every_cost);
    let any = |n: u64| s.any.then_some(n);
    let differs = [
        (
            "total_prompt_tokens",
            int("total_prompt_tokens", any(s.prompt)),
        ),
        (
            "total_completion_tokens",
            int("total_completion_tokens", any(s.completion)),
        ),
        ("total_cached_tokens", int("total_cached_tokens", s.cached)),
        ("total_steps", int("total_steps", Some(steps.len() as u64))),
        (
            "total_cost_usd",
            n("total_cost_usd").is_some_and(|v| match (v.as_f64(), cost) {
                (Some(given), Some(sum)) => (given - sum).abs() > 1e-9 * given.abs().max(1.0),
                _ => true,
            }),
        ),
    ];
    for (field, _) in differs.iter().filter(|(_, d)| *d) {
        skip(
            outcome,
            &format!(
                "atif `final_metrics.{field}` that is not the steps' sum (export writes the sum)"
            ),
        );
    }
}

/// The sums of the metrics that become usage: agent steps with a model request and both token
/// counts.
fn sums(steps: &[Value]) -> Sums {
    let mut s = Sums {
        every_cost: true,
        ..Sums::default()
    };
    for step in steps {
        let agent = step.get("source").and_then(Value::as_str) == Some("agent");
        let llm = step.get("llm_call_count").and_then(Value::as_u64) != Some(0);
        let Some(m) = step.get("metrics").filter(|_| agent && llm) else {
            continue;
        };
        let n = |k: &str| m.get(k).and_then(Value::as_u64);
        let (Some(p), Some(c)) = (n("prompt_tokens"), n("completion_tokens")) else {
            continue;
        };
        s.any = true;
        s.prompt += p;
        s.completion += c;
        if let Some(k) = n("cached_tokens") {
            *s.cached.get_or_insert(0) += k;
        }
        match m.get("cost_usd").and_then(Value::as_f64) {
            Some(c) if c >= 0.0 && c.is_finite() => *s.cost.get_or_insert(0.0) += c,
            _ => s.every_cost = false,
        }
    }
    s
}
