//! Oracles: the registry that maps an oracle `type` to its check, and judging a whole trace.

pub mod approval;
pub mod facts;
pub mod harness;
pub mod params;
mod result;

pub use facts::{Facts, FinalAnswer, MessageState};
pub use result::{OracleResult, Verdict, shorten};

use crate::scenario::{OracleSpec, Scenario};
use crate::trace::Trace;

/// Every oracle type this version judges, lowercase.
pub const KNOWN_TYPES: &[&str] = &[
    "tool-called",
    "tool-not-called",
    "max-tool-calls",
    "final-answer-contains",
    "final-answer-not-contains",
    "approval-required",
    "approval-not-required",
    "no-unsafe-tool",
    "status-is",
];

/// The synthetic result every trace gets unless its scenario declares `status-is`.
pub const RUN_COMPLETED: &str = "run-completed";

/// The canonical name of a known oracle type (looked up case-insensitively).
pub fn canonical_type(written: &str) -> Option<&'static str> {
    KNOWN_TYPES
        .iter()
        .copied()
        .find(|k| k.eq_ignore_ascii_case(written.trim()))
}

/// Judges one oracle.
pub fn judge_oracle(spec: &OracleSpec, scenario: &Scenario, facts: &Facts<'_, '_>) -> OracleResult {
    let written = spec.type_name();
    let Some(kind) = canonical_type(written) else {
        let msg = if written.is_empty() {
            "the oracle has no `type`".to_owned()
        } else {
            format!("unknown oracle type `{written}`")
        };
        return OracleResult::misconfigured(msg)
            .typed(format!("unknown:{written}"), Some(spec.index));
    };
    let result = match kind {
        "tool-called" => harness::tool_called(spec, scenario, facts),
        "tool-not-called" => harness::tool_not_called(spec, scenario, facts),
        "max-tool-calls" => harness::max_tool_calls(spec, scenario, facts),
        "final-answer-contains" => harness::final_answer_contains(spec, scenario, facts),
        "final-answer-not-contains" => harness::final_answer_not_contains(spec, scenario, facts),
        "approval-required" => harness::approval_required(spec, facts),
        "approval-not-required" => harness::approval_not_required(facts),
        "no-unsafe-tool" => harness::no_unsafe_tool(spec, scenario, facts),
        "status-is" => harness::status_is(spec, facts),
        other => unreachable!("{other} is in KNOWN_TYPES but has no check"),
    };
    result.typed(kind, Some(spec.index))
}

/// Judges a trace against every oracle of its scenario, in declaration order, followed by the
/// synthetic `run-completed` unless the scenario declares `status-is`.
pub fn judge(scenario: &Scenario, trace: &Trace<'_>) -> Vec<OracleResult> {
    let facts = Facts::new(trace);
    let mut results: Vec<OracleResult> = scenario
        .oracles
        .iter()
        .map(|spec| judge_oracle(spec, scenario, &facts))
        .collect();
    let declares_status = scenario
        .oracles
        .iter()
        .any(|o| canonical_type(o.type_name()) == Some("status-is"));
    if !declares_status {
        results.push(harness::run_completed(&facts).typed(RUN_COMPLETED, None));
    }
    results
}

/// A trace's verdict from its oracle results: pass only when every result passes.
pub fn overall(results: &[OracleResult]) -> Verdict {
    if results.iter().all(|r| r.verdict == Verdict::Pass) {
        Verdict::Pass
    } else {
        Verdict::Fail
    }
}

#[cfg(test)]
mod tests;
