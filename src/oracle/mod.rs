//! Oracles: the registry that maps an oracle `type` to its check, and judging a whole trace.

pub mod approval;
pub mod artifacts;
pub mod calls;
pub mod contract;
pub mod counts;
pub mod facts;
pub mod harness;
pub mod jsoneq;
pub mod params;
pub mod replies;
mod result;
pub mod sequence;

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
    "tool-sequence",
    "tool-args",
    "tool-succeeded",
    "tool-result-contains",
    "call-result-linked",
    "request-count",
    "step-count",
    "message-count",
    "no-preview-left",
    "final-after-tool",
    "artifact-contains",
    "artifact-before-reply",
    "final-answer-matches",
    "max-tokens",
    "tools-offered",
    "contract-conformant",
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
        "tool-sequence" => sequence::tool_sequence(spec, facts),
        "tool-args" => calls::tool_args(spec, facts),
        "tool-succeeded" => calls::tool_succeeded(spec, facts),
        "tool-result-contains" => calls::tool_result_contains(spec, facts),
        "call-result-linked" => calls::call_result_linked(facts),
        "request-count" => counts::request_count(spec, facts),
        "step-count" => counts::step_count(spec, facts),
        "message-count" => counts::message_count(spec, facts),
        "no-preview-left" => replies::no_preview_left(spec, facts),
        "final-after-tool" => replies::final_after_tool(spec, facts),
        "artifact-contains" => artifacts::artifact_contains(spec, facts),
        "artifact-before-reply" => artifacts::artifact_before_reply(spec, facts),
        "final-answer-matches" => replies::final_answer_matches(spec, facts),
        "max-tokens" => counts::max_tokens(spec, facts),
        "tools-offered" => counts::tools_offered(spec, facts),
        "contract-conformant" => contract::contract_conformant(scenario, facts),
        other => unreachable!("{other} is in KNOWN_TYPES but has no check"),
    };
    result.typed(kind, Some(spec.index))
}

/// The misconfiguration of each oracle of `scenario` (index, type as written, message): what
/// `gates` reports. Every oracle decides misconfiguration before looking at events, so judging
/// an empty trace finds exactly those.
pub fn misconfigurations(scenario: &Scenario) -> Vec<(usize, String, String)> {
    let empty = Trace {
        header: crate::trace::Header::new(scenario.id.clone(), "gates"),
        events: Vec::new(),
    };
    let facts = Facts::new(&empty);
    scenario
        .oracles
        .iter()
        .map(|spec| (spec, judge_oracle(spec, scenario, &facts)))
        .filter(|(_, r)| r.misconfigured)
        .map(|(spec, r)| (spec.index, spec.type_name().to_owned(), r.message))
        .collect()
}

/// Judges a trace against every oracle of its scenario, in declaration order, followed by the
/// synthetic `run-completed` unless the scenario declares `status-is`.
pub fn judge(scenario: &Scenario, trace: &Trace<'_>) -> Vec<OracleResult> {
    judge_facts(scenario, &Facts::new(trace))
}

/// [`judge`] over facts already derived (so a caller that also normalises the trace derives
/// them once).
pub fn judge_facts(scenario: &Scenario, facts: &Facts<'_, '_>) -> Vec<OracleResult> {
    let mut results: Vec<OracleResult> = scenario
        .oracles
        .iter()
        .map(|spec| judge_oracle(spec, scenario, facts))
        .collect();
    let declares_status = scenario
        .oracles
        .iter()
        .any(|o| canonical_type(o.type_name()) == Some("status-is"));
    if !declares_status {
        results.push(harness::run_completed(facts).typed(RUN_COMPLETED, None));
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
#[cfg(test)]
mod tests_catalogue;
