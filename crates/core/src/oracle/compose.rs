//! What any oracle may add around its own check, and the composing types:
//!
//! - `threshold` (0 < T ≤ 1): the oracle passes when its score is at least T. The default is 1,
//!   which keeps the oracle's own verdict, so a scenario without thresholds is judged as before.
//!   `not-evaluable` and a misconfiguration stay what they are whatever the threshold.
//! - `turn` (1-based, negative from the end): the oracle is judged on that turn's events alone,
//!   plus the run's `run_end` (see [`super::turns`]).
//! - `not`, `all-of`, `any-of`: composition, each inner oracle with its own threshold; they take
//!   no threshold of their own.

use crate::oracle::ConfigError;
use serde_json::{Value, json};

use super::facts::Facts;
use super::registry;
use super::result::{OracleResult, Verdict};
use super::turns;
use super::typed::{Fallbacks, Oracle};
use crate::oracle::spec::OracleSpec;

/// An inner oracle of a composition: its type (for messages) and itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Inner {
    /// Its canonical type name.
    pub kind: &'static str,
    /// The oracle.
    pub oracle: Oracle,
}

/// The types of the plain oracles an oracle is made of (itself when it composes nothing).
pub(crate) fn leaf_kinds(kind: &'static str, oracle: &Oracle) -> Vec<&'static str> {
    match oracle {
        Oracle::Not(inner) => leaf_kinds(inner.kind, &inner.oracle),
        Oracle::AllOf(inners) | Oracle::AnyOf(inners) => (inners.iter())
            .flat_map(|i| leaf_kinds(i.kind, &i.oracle))
            .collect(),
        Oracle::Threshold { inner, .. } | Oracle::Turn { inner, .. } => leaf_kinds(kind, inner),
        _ => vec![kind],
    }
}

/// Every threshold below 1 inside an oracle: (the type it applies to, the threshold).
pub(crate) fn thresholds(kind: &'static str, oracle: &Oracle) -> Vec<(&'static str, f64)> {
    match oracle {
        Oracle::Not(inner) => thresholds(inner.kind, &inner.oracle),
        Oracle::AllOf(inners) | Oracle::AnyOf(inners) => (inners.iter())
            .flat_map(|i| thresholds(i.kind, &i.oracle))
            .collect(),
        Oracle::Threshold { inner, threshold } => {
            let mut out = vec![(kind, *threshold)];
            out.extend(thresholds(kind, inner));
            out
        }
        Oracle::Turn { inner, .. } => thresholds(kind, inner),
        _ => Vec::new(),
    }
}

/// Reads `threshold`: `None` when absent (the default, 1), else a number in (0, 1].
pub(crate) fn threshold(spec: &OracleSpec) -> Result<Option<f64>, ConfigError> {
    match spec.get("threshold") {
        None => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(t) if t > 0.0 && t <= 1.0 => Ok(Some(t)),
            _ => Err(ConfigError::value(
                "threshold",
                format!("`threshold` {n} is outside (0, 1]"),
            )),
        },
        Some(other) => Err(ConfigError::value(
            "threshold",
            format!(
                "`threshold` must be a number in (0, 1], found {}",
                crate::trace::json_type_name(other)
            ),
        )),
    }
}

/// Reads `turn`: `None` when absent, else a non-zero integer.
pub(crate) fn turn(spec: &OracleSpec) -> Result<Option<i64>, ConfigError> {
    match spec.get("turn") {
        None => Ok(None),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(0) => Err(ConfigError::value(
                "turn",
                "`turn` 0 does not exist: turns count from 1 (or from -1, the last)",
            )),
            Some(t) => Ok(Some(t)),
            None => Err(ConfigError::value(
                "turn",
                format!("`turn` {n} is not an integer"),
            )),
        },
        Some(other) => Err(ConfigError::value(
            "turn",
            format!(
                "`turn` must be an integer, found {}",
                crate::trace::json_type_name(other)
            ),
        )),
    }
}

/// Wraps a configured oracle in its `turn` and `threshold`, as written on `spec`.
pub(crate) fn wrap(
    oracle: Oracle,
    spec: &OracleSpec,
    takes_threshold: bool,
) -> Result<Oracle, ConfigError> {
    let mut oracle = oracle;
    if let Some(n) = turn(spec)? {
        oracle = Oracle::Turn {
            inner: Box::new(oracle),
            turn: n,
        };
    }
    match threshold(spec)? {
        Some(_) if !takes_threshold => Err(ConfigError::value(
            "threshold",
            "takes no `threshold` of its own: give one to its inner oracles",
        )),
        // A threshold of 1 is the default: the oracle's own verdict.
        Some(t) if t < 1.0 => Ok(Oracle::Threshold {
            inner: Box::new(oracle),
            threshold: t,
        }),
        _ => Ok(oracle),
    }
}

/// Configures one inner oracle object (`at` names it in messages).
fn inner(value: &Value, at: &str, fallbacks: &Fallbacks<'_>) -> Result<Inner, ConfigError> {
    let Value::Object(map) = value else {
        return Err(ConfigError::from(format!("{at} must be an oracle object")));
    };
    let spec = OracleSpec {
        index: 0,
        params: map.clone(),
        oracle: None,
    };
    let written = spec.type_name();
    let Some(t) = registry::lookup(written) else {
        let mut msg = if written.is_empty() {
            format!("{at} has no `type`")
        } else {
            format!("{at} has unknown type `{written}`")
        };
        if let Some(meant) = registry::closest(written, super::known_types()) {
            msg.push_str(&format!("; did you mean `{meant}`?"));
        }
        return Err(msg.into());
    };
    if map.keys().any(|k| k.eq_ignore_ascii_case("trials")) {
        return Err(ConfigError::from(format!(
            "{at} (`{}`): `trials` holds a case's trials to a limit, so it belongs on a top-level oracle only",
            t.name
        )));
    }
    let oracle = registry::configure(t, &spec, fallbacks)
        .map_err(|e| format!("{at} (`{}`): {e}", t.name))?;
    Ok(Inner {
        kind: t.name,
        oracle,
    })
}

/// Configures `not`.
pub(crate) fn configure_not(spec: &OracleSpec, fb: &Fallbacks<'_>) -> Result<Oracle, ConfigError> {
    let value = spec
        .get("oracle")
        .ok_or_else(|| ConfigError::value("oracle", "no `oracle` to negate"))?;
    Ok(Oracle::Not(Box::new(inner(value, "`oracle`", fb)?)))
}

fn inner_list(spec: &OracleSpec, fb: &Fallbacks<'_>) -> Result<Vec<Inner>, ConfigError> {
    let Some(Value::Array(items)) = spec.get("oracles") else {
        return Err(ConfigError::value("oracles", "no `oracles` to combine"));
    };
    if items.is_empty() {
        return Err(ConfigError::value("oracles", "`oracles` is empty"));
    }
    (items.iter().enumerate())
        .map(|(i, v)| inner(v, &format!("`oracles[{i}]`"), fb))
        .collect()
}

/// Configures `all-of`.
pub(crate) fn configure_all_of(
    spec: &OracleSpec,
    fb: &Fallbacks<'_>,
) -> Result<Oracle, ConfigError> {
    Ok(Oracle::AllOf(inner_list(spec, fb)?))
}

/// Configures `any-of`.
pub(crate) fn configure_any_of(
    spec: &OracleSpec,
    fb: &Fallbacks<'_>,
) -> Result<Oracle, ConfigError> {
    Ok(Oracle::AnyOf(inner_list(spec, fb)?))
}

/// Applies a threshold below 1 to an oracle's result.
pub(crate) fn apply_threshold(mut r: OracleResult, t: f64) -> OracleResult {
    if r.could_not_judge() {
        return r;
    }
    let passes = r.score >= t;
    if r.verdict == Verdict::Pass && passes {
        // The common case: a full pass, nothing to add.
        return r;
    }
    let (score, threshold) = (r.score_text(), trim_number(t));
    match (r.verdict, passes) {
        (Verdict::Fail, true) => {
            r.verdict = Verdict::Pass;
            r.message = format!("score {score} reaches threshold {threshold}: {}", r.message);
        }
        (Verdict::Pass, false) => {
            r.verdict = Verdict::Fail;
            r.message = format!(
                "score {score} is below threshold {threshold}: {}",
                r.message
            );
            r.expected = Some(Box::new(json!({ "threshold": t })));
            r.found = Some(Box::new(json!({ "score": r.score })));
        }
        (Verdict::Fail, false) => {
            r.message = format!(
                "score {score} is below threshold {threshold}: {}",
                r.message
            );
        }
        _ => {}
    }
    r
}

fn trim_number(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Judges an oracle on one turn of the trace.
pub(crate) fn check_turn(inner: &Oracle, n: i64, facts: &Facts<'_, '_>) -> OracleResult {
    let ranges = turns::turn_ranges(&facts.trace.events);
    if ranges.is_empty() {
        return OracleResult::not_evaluable(
            format!("turn {n}: the trace has no turns (no `user_message`)"),
            Vec::new(),
        );
    }
    let Some(i) = turns::resolve(n, ranges.len()) else {
        // A failure, as the spec has it; and one no composition may invert.
        return OracleResult::fail(
            format!(
                "turn {n} does not exist: the trace has {} turn(s)",
                ranges.len()
            ),
            Vec::new(),
            json!({ "turn": n }),
            json!({ "turns": ranges.len() }),
        )
        .unjudged();
    };
    let sub = turns::turn_trace(facts.trace, ranges[i].clone());
    let mut r = inner.judge(&Facts::part(&sub, facts));
    r.message = format!("turn {}: {}", i + 1, r.message);
    r
}

/// Judges `not`.
pub(crate) fn check_not(inner: &Inner, facts: &Facts<'_, '_>) -> OracleResult {
    let r = inner.oracle.judge(facts);
    if r.misconfigured || r.verdict == Verdict::NotEvaluable {
        return r;
    }
    if r.unjudged {
        // Its failure says nothing about the trace: `not` cannot pass on it.
        return cannot_judge(
            format!(
                "`{}` could not judge, so `not` cannot either: {}",
                inner.kind, r.message
            ),
            r.evidence,
        );
    }
    let score = 1.0 - r.score;
    let kind = inner.kind;
    let out = match r.verdict {
        Verdict::Pass => OracleResult::fail(
            format!("`{kind}` passed, which `not` forbids: {}", r.message),
            r.evidence,
            json!({ "not": kind }),
            json!(r.message),
        ),
        _ => OracleResult::pass(
            format!("`{kind}` failed, as `not` requires: {}", r.message),
            r.evidence,
        ),
    };
    out.with_score(score)
}

fn describe(i: usize, inner: &Inner, r: &OracleResult) -> String {
    format!(
        "oracles[{i}] (`{}`) {}: {}",
        inner.kind,
        r.verdict.as_str(),
        r.message
    )
}

/// A composition that could not judge because an inner oracle could not: `not-evaluable`.
fn cannot_judge(message: String, evidence: Vec<u64>) -> OracleResult {
    OracleResult::not_evaluable(message, evidence).unjudged()
}

/// Judges `all-of` (`all` true) or `any-of`, in three-valued logic: an inner oracle that could
/// not judge decides nothing, so `all-of` fails only on an inner failure and `any-of` passes
/// only on an inner pass; when the verdict would hang on an inner oracle that could not judge,
/// the composition is `not-evaluable`, naming it.
pub(crate) fn check_group(inners: &[Inner], all: bool, facts: &Facts<'_, '_>) -> OracleResult {
    let results: Vec<OracleResult> = inners.iter().map(|i| i.oracle.judge(facts)).collect();
    let passed = |r: &OracleResult| r.verdict == Verdict::Pass;
    let failed = |r: &OracleResult| !passed(r) && !r.could_not_judge();
    let scores = results.iter().map(|r| r.score);
    let score = if all {
        scores.fold(1.0, f64::min)
    } else {
        scores.fold(0.0, f64::max)
    };
    let holds = if all {
        results.iter().all(passed)
    } else {
        results.iter().any(passed)
    };
    let decided = holds
        || if all {
            results.iter().any(failed)
        } else {
            results.iter().all(failed)
        };
    // Evidence and messages: the inner results that decided the verdict (or, undecided, the
    // ones that could not judge).
    let deciding: Vec<usize> = (0..results.len())
        .filter(|&i| match (decided, holds) {
            (true, true) => passed(&results[i]),
            (true, false) => failed(&results[i]),
            (false, _) => results[i].could_not_judge(),
        })
        .collect();
    let mut evidence: Vec<u64> = (deciding.iter())
        .flat_map(|&i| results[i].evidence.iter().copied())
        .collect();
    evidence.sort_unstable();
    evidence.dedup();
    let text: Vec<String> = (deciding.iter())
        .map(|&i| describe(i, &inners[i], &results[i]))
        .collect();
    let name = if all { "all-of" } else { "any-of" };
    let out = if holds {
        OracleResult::pass(text.join("; "), evidence)
    } else if !decided {
        let mut r = cannot_judge(format!("could not judge: {}", text.join("; ")), evidence);
        // All inner oracles merely not evaluable: the composition is just that, too.
        r.unjudged = results.iter().any(|r| r.unjudged || r.misconfigured);
        r
    } else {
        let failing: Vec<Value> = (deciding.iter())
            .map(|&i| json!({"index": i, "type": inners[i].kind, "message": results[i].message}))
            .collect();
        OracleResult::fail(
            text.join("; "),
            evidence,
            json!(if all {
                "every inner oracle passes"
            } else {
                "some inner oracle passes"
            }),
            json!({ name: failing }),
        )
    };
    out.with_score(score)
}

#[cfg(test)]
#[path = "compose_tests.rs"]
mod tests;
