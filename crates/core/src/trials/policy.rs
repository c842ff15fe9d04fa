//! A scenario's `trials` policy: how many trials a case needs and which of them must pass.
//!
//! ```json
//! "trials": {"min": 4, "pass": "all"}
//! "trials": {"min": 8, "pass": {"at-least": 6}}
//! "trials": {"min": 8, "pass": {"rate": 0.70, "confidence": 0.95}}
//! "trials": {"max": 16, "pass": {"rate": 0.80, "confidence": 0.95}, "sequential": true}
//! "trials": {"min": 16, "drift": {"looks": [4, 8, 12, 16], "spending": "obrien-fleming"}}
//! ```
//!
//! A sequential policy records a case's trials one at a time until its verdict is settled —
//! further trials up to `max` could not change it — or `max` is reached (`super::sequential`).
//! A policy with `drift` judges the regression of the trial verdict against an approved set
//! group-sequentially, at fixed looks (`super::group`): the current set may stop at the first
//! look that shows a regression.
//!
//! Parameters are strict: an unknown key, a wrong type or a value out of range is a problem
//! (a `gates` error, so the scenario is not judged).

use serde_json::{Map, Value};

use super::stats;

/// The largest `trials.min` (far beyond any recorded set; keeps the power computations of
/// `gates` bounded whatever a scenario says).
pub(crate) const MAX_MIN: u64 = 10_000;

/// Which trials of a case must pass.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum PassRule {
    /// Every trial (the default).
    #[default]
    All,
    /// At least `n` trials pass and at most `min − n` fail.
    AtLeast(u64),
    /// The one-sided lower Wilson bound of the pass rate at `confidence` is at least `rate`.
    Rate {
        /// R, in (0, 1].
        rate: f64,
        /// C, in [0.5, 1).
        confidence: f64,
    },
}

/// The largest look of a `trials.drift` design, and the most approved trials it is judged
/// against (its exact boundaries take seconds beyond).
pub const MAX_LOOK: u64 = 64;

/// `trials.drift`: the looks at which the trial-verdict regression test of a case is judged,
/// and how α is spent over them.
#[derive(Debug, Clone, PartialEq)]
pub struct DriftLooks {
    /// Current trials at each look, increasing, the last at most [`MAX_LOOK`].
    pub looks: Vec<u64>,
    /// How α is spent.
    pub spending: super::group::Spending,
}

/// The `trials` policy of a scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialsPolicy {
    /// The fewest trials a case may have (at least 1).
    pub min: u64,
    /// Which must pass.
    pub pass: PassRule,
    /// With `"sequential": true`, `max`: the most trials a case records. The case is judged as
    /// if all `max` were recorded, and settled as soon as the remaining ones could not change
    /// that verdict.
    pub sequential: Option<u64>,
    /// With `drift`, the group-sequential design of the trial-verdict regression test.
    pub drift: Option<DriftLooks>,
}

/// The default policy: one trial, which must pass.
pub const DEFAULT: TrialsPolicy = TrialsPolicy {
    min: 1,
    pass: PassRule::All,
    sequential: None,
    drift: None,
};

impl Default for TrialsPolicy {
    fn default() -> Self {
        DEFAULT
    }
}

/// How a case's pass/fail trials measure up to the policy.
#[derive(Debug, Clone, PartialEq)]
pub enum PolicyVerdict {
    /// The policy is met.
    Pass,
    /// It is not: why, in a sentence.
    Fail(String),
    /// The trials cannot be judged (the case is `error`): too few, more than a sequential
    /// policy records, or a sequential case not settled yet.
    CannotJudge(String),
}

impl TrialsPolicy {
    /// Reads `trials` from a scenario object (`None` or `null`: the default).
    pub fn from_json(value: Option<&Value>) -> Result<TrialsPolicy, String> {
        let obj = match value {
            None | Some(Value::Null) => return Ok(TrialsPolicy::default()),
            Some(Value::Object(o)) => o,
            Some(_) => return Err("`trials` must be an object".to_owned()),
        };
        only_keys(
            obj,
            &["min", "pass", "max", "sequential", "drift"],
            "trials",
        )?;
        let min = match obj.get("min") {
            None => 1,
            Some(v) => v
                .as_u64()
                .filter(|m| (1..=MAX_MIN).contains(m))
                .ok_or("`trials.min` must be an integer from 1 to 10000")?,
        };
        let sequential = match (obj.get("sequential"), obj.get("max")) {
            (None | Some(Value::Bool(false)), None) => None,
            (None | Some(Value::Bool(false)), Some(_)) => {
                return Err(
                    "`trials.max` is the most trials of a sequential policy: add `\"sequential\": true`, or give `min`".to_owned(),
                );
            }
            (Some(Value::Bool(true)), None) => {
                return Err(
                    "a sequential `trials` policy needs `max`, the most trials a case records"
                        .to_owned(),
                );
            }
            (Some(Value::Bool(true)), Some(v)) => Some(
                v.as_u64()
                    .filter(|m| (min..=MAX_MIN).contains(m))
                    .ok_or(format!(
                        "`trials.max` must be an integer from `trials.min` ({min}) to 10000"
                    ))?,
            ),
            (Some(_), _) => return Err("`trials.sequential` must be true or false".to_owned()),
        };
        // `at-least N` counts out of the trials a case is judged on: `max` when sequential.
        let planned = sequential.unwrap_or(min);
        let pass = match obj.get("pass") {
            None => PassRule::All,
            Some(Value::String(s)) if s == "all" => PassRule::All,
            Some(Value::String(s)) => {
                return Err(format!(
                    "`trials.pass` is `{s}`; give \"all\", {{\"at-least\": N}} or {{\"rate\": R, \"confidence\": C}}"
                ));
            }
            Some(Value::Object(p)) if p.contains_key("at-least") => {
                only_keys(p, &["at-least"], "trials.pass")?;
                let n = p["at-least"]
                    .as_u64()
                    .filter(|n| (1..=planned).contains(n))
                    .ok_or(match sequential {
                        None => format!(
                            "`trials.pass.at-least` must be an integer from 1 to `trials.min` ({min})"
                        ),
                        Some(max) => format!(
                            "`trials.pass.at-least` must be an integer from 1 to `trials.max` ({max})"
                        ),
                    })?;
                PassRule::AtLeast(n)
            }
            Some(Value::Object(p)) if p.contains_key("rate") => {
                only_keys(p, &["rate", "confidence"], "trials.pass")?;
                let rate = p["rate"]
                    .as_f64()
                    .filter(|r| *r > 0.0 && *r <= 1.0)
                    .ok_or("`trials.pass.rate` must be a number above 0 and at most 1")?;
                let confidence = match p.get("confidence") {
                    None => 0.95,
                    Some(c) => c.as_f64().filter(|c| (0.5..1.0).contains(c)).ok_or(
                        "`trials.pass.confidence` must be a number from 0.5 up to 1 (not 1 itself)",
                    )?,
                };
                PassRule::Rate { rate, confidence }
            }
            Some(_) => {
                return Err(
                    "`trials.pass` must be \"all\", {\"at-least\": N} or {\"rate\": R, \"confidence\": C}"
                        .to_owned(),
                );
            }
        };
        let drift = obj.get("drift").map(drift_looks).transpose()?;
        if let Some(d) = &drift {
            // A case is judged (its verdict, then its drift) at every look.
            let (first, last) = (d.looks[0], d.looks[d.looks.len() - 1]);
            if first < min {
                return Err(format!(
                    "the first of `trials.drift.looks` ({first}) is below `trials.min` ({min}): a case could not be judged there"
                ));
            }
            if let Some(max) = sequential.filter(|&max| last > max) {
                return Err(format!(
                    "the last of `trials.drift.looks` ({last}) is above `trials.max` ({max})"
                ));
            }
        }
        Ok(TrialsPolicy {
            min,
            pass,
            sequential,
            drift,
        })
    }

    /// Whether the policy is the default one (a single trial suffices and must pass).
    pub fn is_default(&self) -> bool {
        *self == TrialsPolicy::default()
    }

    /// Judges `passed` passing trials of `n` pass/fail ones.
    pub fn verdict(&self, passed: u64, n: u64) -> PolicyVerdict {
        if let Some(max) = self.sequential {
            return super::sequential::verdict(self, max, passed, n);
        }
        if n < self.min {
            return PolicyVerdict::CannotJudge(format!(
                "{n} trial(s) recorded, the scenario needs {}",
                self.min
            ));
        }
        let failed = n - passed;
        match self.pass {
            PassRule::All if failed == 0 => PolicyVerdict::Pass,
            PassRule::All => PolicyVerdict::Fail(format!(
                "{failed} of {n} trials fail and the scenario's `trials.pass` is \"all\""
            )),
            PassRule::AtLeast(k) if passed >= k && failed <= self.min - k => PolicyVerdict::Pass,
            PassRule::AtLeast(k) => PolicyVerdict::Fail(format!(
                "the scenario needs at least {k} passing and at most {} failing",
                self.min - k
            )),
            PassRule::Rate { rate, confidence } => {
                let lower = stats::wilson_lower(passed, n, confidence);
                if lower >= rate {
                    PolicyVerdict::Pass
                } else {
                    PolicyVerdict::Fail(format!(
                        "the lower {}% Wilson bound of the pass rate is {lower:.6}, below the scenario's {rate}",
                        confidence * 100.0
                    ))
                }
            }
        }
    }

    /// What `gates` warns about (the exit code unchanged): a `rate` that even `min` passing
    /// trials of `min` cannot meet, and a `min` too small to ever show a regression at `alpha`.
    pub fn warnings(&self, alpha: f64) -> Vec<String> {
        let mut out = Vec::new();
        // What a case is judged on: `min` trials, or a sequential policy's `max`.
        let (m, raise) = match self.sequential {
            Some(max) => (max, "max"),
            None => (self.min, "min"),
        };
        if let PassRule::Rate { rate, confidence } = self.pass {
            let best = stats::wilson_lower(m, m, confidence);
            if best < rate {
                out.push(format!(
                    "`trials`: even {m}/{m} passing trials give a lower Wilson bound of {best:.6} at confidence {confidence}, below `rate` {rate}; raise `{raise}` or lower `rate`"
                ));
            }
        }
        let smallest = 1.0 / stats::choose(2 * m, m);
        // A scenario that states no policy is judged one trace at a time: nothing to warn of.
        if !self.is_default() && !stats::at_most(smallest, alpha) {
            out.push(format!(
                "`trials.{raise}` {m}: {m} and {m} trials cannot show a regression at α = {alpha} (the smallest possible p is {smallest:.6}); {}",
                smallest_power(alpha),
            ));
        }
        out
    }
}

/// "k and k trials can show k/k → 0/k at p = …", for the smallest k that can at `alpha`.
pub(crate) fn smallest_power(alpha: f64) -> String {
    let k = (1..=64u64)
        .find(|&k| stats::at_most(stats::fisher_lower(k, k, 0, k), alpha))
        .unwrap_or(64);
    format!(
        "{k} and {k} can show {k}/{k} → 0/{k} at p = {:.3}",
        stats::fisher_lower(k, k, 0, k)
    )
}

/// Reads `trials.drift`: `{"looks": [n₁, …], "spending": "obrien-fleming" | "pocock"}`.
fn drift_looks(value: &Value) -> Result<DriftLooks, String> {
    let obj = value
        .as_object()
        .ok_or("`trials.drift` must be an object: {\"looks\": [4, 8, 12, 16]}")?;
    only_keys(obj, &["looks", "spending"], "trials.drift")?;
    let bad = || {
        format!(
            "`trials.drift.looks` must be increasing trial counts from 2 to {MAX_LOOK}, such as [4, 8, 12, 16]"
        )
    };
    let looks: Vec<u64> = (obj.get("looks").and_then(Value::as_array).ok_or_else(bad)?)
        .iter()
        .map(|v| v.as_u64().filter(|n| (2..=MAX_LOOK).contains(n)))
        .collect::<Option<_>>()
        .ok_or_else(bad)?;
    if looks.is_empty() || looks.windows(2).any(|w| w[0] >= w[1]) {
        return Err(bad());
    }
    let spending = match obj.get("spending") {
        None => super::group::Spending::OBrienFleming,
        Some(Value::String(s)) => super::group::Spending::parse(s)?,
        Some(_) => {
            return Err(
                "`trials.drift.spending` must be \"obrien-fleming\" or \"pocock\"".to_owned(),
            );
        }
    };
    Ok(DriftLooks { looks, spending })
}

fn only_keys(obj: &Map<String, Value>, allowed: &[&str], at: &str) -> Result<(), String> {
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        None => Ok(()),
        Some(k) => Err(format!(
            "unknown key `{at}.{k}`; `{at}` takes {}",
            allowed
                .iter()
                .map(|a| format!("`{a}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(v: Value) -> Result<TrialsPolicy, String> {
        TrialsPolicy::from_json(Some(&v))
    }

    #[test]
    fn the_three_shapes_read_and_judge() {
        let all = policy(json!({"min": 4, "pass": "all"})).unwrap();
        assert_eq!(all.verdict(4, 4), PolicyVerdict::Pass);
        assert!(matches!(all.verdict(3, 4), PolicyVerdict::Fail(_)));
        assert_eq!(
            all.verdict(3, 3),
            PolicyVerdict::CannotJudge("3 trial(s) recorded, the scenario needs 4".into())
        );
        let at_least = policy(json!({"min": 8, "pass": {"at-least": 6}})).unwrap();
        assert_eq!(at_least.verdict(6, 8), PolicyVerdict::Pass);
        assert!(matches!(at_least.verdict(5, 8), PolicyVerdict::Fail(_)));
        // More trials than `min`: at most min − N may fail.
        assert!(matches!(at_least.verdict(7, 10), PolicyVerdict::Fail(_)));
        assert_eq!(at_least.verdict(8, 10), PolicyVerdict::Pass);
        let rate = policy(json!({"min": 8, "pass": {"rate": 0.70, "confidence": 0.95}})).unwrap();
        assert_eq!(rate.verdict(8, 8), PolicyVerdict::Pass);
        assert!(matches!(rate.verdict(7, 8), PolicyVerdict::Fail(_)));
        let strict = policy(json!({"min": 8, "pass": {"rate": 0.75}})).unwrap();
        assert!(
            matches!(strict.verdict(8, 8), PolicyVerdict::Fail(_)),
            "0.747276 misses 0.75"
        );
        assert_eq!(
            TrialsPolicy::from_json(None).unwrap(),
            TrialsPolicy::default()
        );
        let sequential =
            policy(json!({"max": 16, "pass": {"at-least": 12}, "sequential": true})).unwrap();
        assert_eq!((sequential.min, sequential.sequential), (1, Some(16)));
        assert_eq!(sequential.pass, PassRule::AtLeast(12));
        assert_eq!(sequential.verdict(12, 12), PolicyVerdict::Pass);
        assert!(
            matches!(sequential.verdict(11, 16), PolicyVerdict::Fail(m) if m.contains("5 of 16 trials fail"))
        );
        assert!(
            matches!(sequential.verdict(10, 12), PolicyVerdict::CannotJudge(m) if m.contains("not settled"))
        );
        assert_eq!(
            policy(json!({"min": 4, "sequential": false}))
                .unwrap()
                .sequential,
            None
        );
    }

    #[test]
    fn strict_parameters_refuse_what_is_not_the_format() {
        for bad in [
            json!("all"),
            json!({"min": 0}),
            json!({"min": 9223372036854775807u64}),
            json!({"min": 2.5}),
            json!({"min": "4"}),
            json!({"mni": 4}),
            json!({"pass": "most"}),
            json!({"min": 4, "pass": {"at-least": 5}}),
            json!({"min": 4, "pass": {"at-least": 0}}),
            json!({"pass": {"rate": 0}}),
            json!({"pass": {"rate": 1.5}}),
            json!({"pass": {"rate": 0.7, "confidence": 1}}),
            json!({"pass": {"rate": 0.7, "confidence": 0.4}}),
            json!({"pass": {"rate": 0.7, "extra": 1}}),
            json!({"pass": {"at-least": 1, "rate": 0.5}}),
            json!({"pass": {}}),
            json!({"max": 4}),
            json!({"max": 4, "sequential": false}),
            json!({"sequential": true}),
            json!({"sequential": "yes", "max": 4}),
            json!({"min": 5, "max": 4, "sequential": true}),
            json!({"max": 4, "sequential": true, "pass": {"at-least": 5}}),
        ] {
            assert!(policy(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn gates_warns_about_unreachable_rates_and_powerless_minimums() {
        let unreachable = policy(json!({"min": 8, "pass": {"rate": 0.75}})).unwrap();
        assert!(unreachable.warnings(0.05)[0].contains("0.747276"));
        let weak = policy(json!({"min": 2})).unwrap();
        let w = weak.warnings(0.05);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("3 and 3 can show 3/3 → 0/3 at p = 0.050"),
            "{w:?}"
        );
        assert!(policy(json!({"min": 3})).unwrap().warnings(0.05).is_empty());
        assert_eq!(policy(json!({"min": 3})).unwrap().warnings(0.01).len(), 1);
        assert!(TrialsPolicy::default().warnings(0.05).is_empty());
    }
}
