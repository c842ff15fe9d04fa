//! What a run may use: `max-cost` (US dollars per run), and the limits `max-tokens` and
//! `max-cost` put on a case's trials (`"trials": {"median": …, "max": …}`), which the case stage
//! checks over the values the oracle found in each trial.

use crate::oracle::ConfigError;
use serde_json::{Value, json};

use super::typed::{Fallbacks, Oracle};
use super::{Facts, OracleResult};
use crate::common::money::{dollars, nanos, usd};
use crate::oracle::spec::OracleSpec;
use crate::trace::EventBody;

/// A limit on the median and the maximum of a value over a case's trials.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct OverTrials {
    /// The median's limit.
    pub median: Option<f64>,
    /// The maximum's limit.
    pub max: Option<f64>,
}

/// The `trials` parameter of `max-tokens` (`integers`) or `max-cost`: `{median?, max?}`, at
/// least one, each a non-negative number.
pub(super) fn over_trials(
    spec: &OracleSpec,
    integers: bool,
) -> Result<Option<OverTrials>, ConfigError> {
    let Some(v) = spec.get("trials") else {
        return Ok(None);
    };
    let Value::Object(m) = v else {
        return Err(ConfigError::value(
            "trials",
            "`trials` must be an object with `median` and/or `max`",
        ));
    };
    let mut out = OverTrials::default();
    for (k, v) in m {
        let slot = match k.as_str() {
            "median" => &mut out.median,
            "max" => &mut out.max,
            other => {
                return Err(ConfigError::value(
                    format!("trials.{other}"),
                    format!("unknown key `trials.{other}` (known: median, max)"),
                ));
            }
        };
        let n = v
            .as_f64()
            .filter(|n| *n >= 0.0 && (!integers || n.fract() == 0.0));
        let Some(n) = n else {
            let what = if integers {
                "a non-negative integer"
            } else {
                "a non-negative number of US dollars"
            };
            return Err(ConfigError::value(
                format!("trials.{k}"),
                format!("`trials.{k}` must be {what}"),
            ));
        };
        *slot = Some(n);
    }
    if out.median.is_none() && out.max.is_none() {
        return Err(ConfigError::value(
            "trials",
            "`trials` names neither `median` nor `max`",
        ));
    }
    Ok(Some(out))
}

/// Configures `max-cost`.
pub(crate) fn configure_max_cost(
    spec: &OracleSpec,
    _: &Fallbacks<'_>,
) -> Result<Oracle, ConfigError> {
    let limit = match spec.get("limit") {
        None => {
            return Err(ConfigError::value(
                "limit",
                "no `limit` (US dollars per run)",
            ));
        }
        Some(v) => v.as_f64().filter(|l| *l >= 0.0).ok_or_else(|| {
            ConfigError::value(
                "limit",
                "`limit` must be a non-negative number of US dollars",
            )
        })?,
    };
    over_trials(spec, false)?;
    Ok(Oracle::MaxCost {
        limit_nanos: nanos(limit),
    })
}

/// `max-cost`: the run's summed inference cost (recorded, else priced from the price table)
/// is at most the limit; `not-evaluable` when some inference's cost is unknown.
pub(crate) fn max_cost(limit_nanos: u64, facts: &Facts<'_, '_>) -> OracleResult {
    let header_model = facts.trace.header.model.as_deref();
    // Summed exactly, rounded to nano-dollars once (see `RunUsage::of`).
    let (mut sum, mut seqs, mut unknown) = (0.0_f64, Vec::new(), Vec::new());
    let mut unpriced: Vec<String> = Vec::new();
    for e in &facts.trace.events {
        let EventBody::Inference(i) = &e.body else {
            continue;
        };
        seqs.push(e.seq);
        match i.usage.and_then(|u| u.cost_usd) {
            Some(c) => sum += c,
            None => {
                unknown.push(e.seq);
                let model = i.model.as_deref().or(header_model);
                let name = model.map_or("(no model)".to_owned(), |m| format!("`{m}`"));
                if i.usage.is_some() && !unpriced.contains(&name) {
                    unpriced.push(name);
                }
            }
        }
    }
    let limit = dollars(usd(limit_nanos));
    if !unknown.is_empty() {
        let why = if unpriced.is_empty() {
            "record no usage".to_owned()
        } else {
            format!(
                "record no cost and no price applies (model {}; price it in `prices.toml`)",
                unpriced.join(", ")
            )
        };
        return OracleResult::not_evaluable(
            format!("{} inference(s) {why}", unknown.len()),
            unknown,
        );
    }
    let total = nanos(sum);
    let spent = usd(total);
    let found = json!({ "cost_usd": spent });
    if total <= limit_nanos {
        OracleResult::pass(format!("cost {}, limit {limit}", dollars(spent)), seqs).found(found)
    } else {
        OracleResult::fail(
            format!("cost {} exceeds the limit of {limit}", dollars(spent)),
            seqs,
            json!({ "limit_usd": usd(limit_nanos) }),
            found,
        )
    }
}

/// A top-level oracle's limits over a case's trials: its index and type, what it measures
/// (the key of its `found`), and the limits.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TrialLimit {
    /// The oracle's index in the scenario.
    pub index: usize,
    /// `max-tokens` or `max-cost`.
    pub kind: &'static str,
    /// The limits.
    pub limits: OverTrials,
}

/// The trial limits of a scenario's top-level oracles (well-formed ones; a malformed `trials`
/// makes its oracle misconfigured, which fails every trial).
pub(crate) fn trial_limits(oracles: &[OracleSpec]) -> Vec<TrialLimit> {
    let mut out = Vec::new();
    for spec in oracles {
        let kind = match super::canonical_type(spec.type_name()) {
            Some("max-tokens") => "max-tokens",
            Some("max-cost") => "max-cost",
            _ => continue,
        };
        if let Ok(Some(limits)) = over_trials(spec, kind == "max-tokens") {
            out.push(TrialLimit {
                index: spec.index,
                kind,
                limits,
            });
        }
    }
    out
}

/// The median (of an even count: the mean of the middle two) and the maximum.
fn median_and_max(values: &mut [f64]) -> (f64, f64) {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let median = if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    };
    (median, values[n - 1])
}

impl TrialLimit {
    /// Checks the limit over the trials' results of this oracle (`None` for a trial where it
    /// is missing); the failure's sentence, or `None` when the limits hold.
    pub(crate) fn check(&self, trials: &[Option<&OracleResult>]) -> Option<String> {
        let (key, show): (&str, fn(f64) -> String) = match self.kind {
            "max-cost" => ("cost_usd", dollars),
            _ => ("tokens", |t| format!("{t}")),
        };
        let mut values = Vec::with_capacity(trials.len());
        for r in trials {
            match r
                .and_then(|r| r.found.as_ref())
                .and_then(|f| f.get(key)?.as_f64())
            {
                Some(v) => values.push(v),
                None => {
                    return Some(format!(
                        "`{}:{}` cannot be held to its trial limits: it measured nothing in some trial",
                        self.index, self.kind
                    ));
                }
            }
        }
        if values.is_empty() {
            return None;
        }
        let n = values.len();
        let (median, max) = median_and_max(&mut values);
        let mut over = Vec::new();
        if let Some(l) = self.limits.median.filter(|l| median > *l) {
            over.push(format!(
                "median {} over {n} trials exceeds {}",
                show(median),
                show(l)
            ));
        }
        if let Some(l) = self.limits.max.filter(|l| max > *l) {
            over.push(format!(
                "maximum {} over {n} trials exceeds {}",
                show(max),
                show(l)
            ));
        }
        (!over.is_empty()).then(|| format!("`{}:{}`: {}", self.index, self.kind, over.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median_and_max(&mut [3.0, 1.0, 2.0]), (2.0, 3.0));
        assert_eq!(median_and_max(&mut [4.0, 1.0, 2.0, 3.0]), (2.5, 4.0));
    }

    #[test]
    fn trial_limits_hold_the_median_and_the_maximum() {
        let r = |tokens: u64| OracleResult::pass("x", vec![]).found(json!({ "tokens": tokens }));
        let results = [r(100), r(120), r(400), r(110)];
        let trials: Vec<Option<&OracleResult>> = results.iter().map(Some).collect();
        let limit = |median, max| TrialLimit {
            index: 2,
            kind: "max-tokens",
            limits: OverTrials { median, max },
        };
        assert_eq!(limit(Some(115.0), None).check(&trials), None);
        assert_eq!(
            limit(Some(114.0), Some(300.0)).check(&trials).unwrap(),
            "`2:max-tokens`: median 115 over 4 trials exceeds 114, maximum 400 over 4 trials exceeds 300"
        );
        let missing = [Some(&results[0]), None];
        assert!(
            limit(None, Some(1e9))
                .check(&missing)
                .unwrap()
                .contains("measured nothing")
        );
    }
}
