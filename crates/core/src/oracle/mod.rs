//! Oracles: judging one oracle through the [`registry`], and a whole trace.

pub(crate) mod approval;
pub(crate) mod argmatch;
pub(crate) mod artifacts;
pub mod behaviour;
pub mod budget;
pub(crate) mod calls;
pub(crate) mod compose;
mod config_error;
pub(crate) mod contract;
pub(crate) mod cost;
pub(crate) mod counts;
pub mod expr;
mod expr_regex;
pub(crate) mod facts;
pub(crate) mod harness;
pub mod harness_contract;
pub(crate) mod jsoneq;
mod matching;
pub(crate) mod names;
pub(crate) mod params;
pub(crate) mod patterns;
pub mod registry;
pub(crate) mod replies;
mod result;
pub(crate) mod sequence;
mod shape;
pub(crate) mod similarity;
pub(crate) mod spec;
pub(crate) mod turns;
pub(crate) mod typed;

pub use config_error::{ConfigError, ParamProblem, ParamProblemKind, ValueProblem};
pub use facts::{Facts, FinalAnswer, MessageState};
pub use result::{OracleResult, Verdict, shorten};
pub use typed::{Fallbacks, Oracle};

use crate::trace::Trace;
use spec::OracleSpec;

/// The synthetic result every trace gets unless its scenario declares `status-is`.
pub const RUN_COMPLETED: &str = "run-completed";

/// The synthetic result a trace gets when it records a replay divergence (an `error` event with
/// code `replay-divergence`): always a failure, whatever `run_end` says.
pub const REPLAY_DIVERGENCE: &str = "replay-divergence";

/// The canonical name of a known oracle type (looked up case-insensitively).
pub fn canonical_type(written: &str) -> Option<&'static str> {
    registry::lookup(written).map(|t| t.name)
}

/// Every oracle type this version judges, lowercase, from the registry.
pub fn known_types() -> impl Iterator<Item = &'static str> {
    registry::TYPES.iter().map(|t| t.name)
}

/// Judges one oracle: an unknown type fails as `unknown:<type>`, a misconfigured one (known when
/// its scenario loaded) as a misconfiguration; a configured one is judged.
pub fn judge_oracle(spec: &OracleSpec, facts: &Facts<'_, '_>) -> OracleResult {
    let written = spec.type_name();
    match (&spec.oracle, registry::lookup(written)) {
        (Some(Ok(oracle)), Some(t)) => oracle.judge(facts).typed(t.name, Some(spec.index)),
        (Some(Err(problem)), Some(t)) => {
            OracleResult::misconfigured(problem.to_string()).typed(t.name, Some(spec.index))
        }
        _ => {
            let mut msg = if written.is_empty() {
                "the oracle has no `type`".to_owned()
            } else {
                format!("unknown oracle type `{written}`")
            };
            if let Some(meant) = registry::closest(written, known_types()) {
                msg.push_str(&format!("; did you mean `{meant}`?"));
            }
            OracleResult::misconfigured(msg).typed(format!("unknown:{written}"), Some(spec.index))
        }
    }
}

/// Each of a scenario's `oracles` that cannot be judged (index, type as written, message): the
/// misconfigured ones and those of an unknown type. What `gates` reports, read from the oracles
/// configured at load time, without judging anything.
pub fn misconfigurations(oracles: &[OracleSpec]) -> Vec<(usize, String, String)> {
    oracles
        .iter()
        .filter_map(|spec| {
            let message = match &spec.oracle {
                Some(Ok(_)) => return None,
                Some(Err(problem)) => format!("misconfigured: {problem}"),
                None => format!("unknown oracle type `{}`", spec.type_name()),
            };
            Some((spec.index, spec.type_name().to_owned(), message))
        })
        .collect()
}

/// Judges a trace against a scenario's `oracles`, in declaration order, followed by the
/// synthetic `run-completed` unless they include `status-is`, and by a failing
/// `replay-divergence` when the trace records one.
///
/// Events copied from an earlier run as context are left out, as a scenario without
/// `judgeCopiedContext` leaves them out.
pub fn judge(oracles: &[OracleSpec], trace: &Trace<'_>) -> Vec<OracleResult> {
    judge_facts(oracles, &Facts::new(&trace.judged(false)))
}

/// [`judge`] over facts already derived (so a caller that also normalises the trace derives
/// them once).
pub fn judge_facts(oracles: &[OracleSpec], facts: &Facts<'_, '_>) -> Vec<OracleResult> {
    let mut results: Vec<OracleResult> = (oracles.iter())
        .map(|spec| judge_oracle(spec, facts))
        .collect();
    let declares_status = oracles
        .iter()
        .any(|o| canonical_type(o.type_name()) == Some("status-is"));
    if !declares_status {
        results.push(harness::run_completed(facts).typed(RUN_COMPLETED, None));
    }
    if let Some(diverged) = harness::replay_divergence(facts) {
        results.push(diverged.typed(REPLAY_DIVERGENCE, None));
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
mod artifacts_tests;
#[cfg(test)]
mod behaviour_tests;
#[cfg(test)]
mod calls_tests;
#[cfg(test)]
mod contract_tests;
#[cfg(test)]
mod counts_tests;
#[cfg(test)]
mod harness_tests;
#[cfg(test)]
mod peers;
#[cfg(test)]
mod replies_tests;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
