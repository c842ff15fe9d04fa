//! What the runs used and cost: each row's totals ([`RunUsage`]), the suite's
//! ([`SuiteUsage`]), its budgets and its change against the approved baselines.
//!
//! Costs are summed in whole nano-dollars (each inference's cost rounded once), so a suite's
//! total is exact and the same in any order of summing, whatever the thread count.

use serde::{Deserialize, Serialize};

use crate::baseline::UsageRecord;

pub use crate::baseline::usage::RunUsage;
pub use crate::common::money::{dollars, nanos, thousands, usd};

/// One suite budget and how the run stands against it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetCheck {
    /// `tokens` or `cost`.
    pub budget: String,
    /// The limit (tokens, or US dollars).
    pub limit: f64,
    /// What the suite used, when it is known.
    pub used: Option<f64>,
    /// Over the limit, or unknown (which fails as well: never a silent pass).
    pub exceeded: bool,
    /// A sentence for the reports.
    pub detail: String,
}

/// The suite's totals beside the approved baselines' (over the traces compared with one).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct UsageChange {
    /// Traces compared with an approved baseline that records usage.
    pub traces: u64,
    /// The approved totals.
    pub approved: UsageRecord,
    /// This run's totals over the same traces.
    pub current: UsageRecord,
}

impl UsageChange {
    /// "+4.1 % tokens, −2.0 % cost against the approved baselines (12 traces)".
    pub fn describe(&self) -> String {
        let pct = |from: f64, to: f64| {
            if from == 0.0 {
                if to == 0.0 {
                    "±0 %".to_owned()
                } else {
                    "new".to_owned()
                }
            } else {
                format!("{:+.1} %", (to - from) / from * 100.0)
            }
        };
        let tokens = |u: &UsageRecord| u.input_tokens.saturating_add(u.output_tokens) as f64;
        let mut out = format!(
            "{} tokens ({} → {})",
            pct(tokens(&self.approved), tokens(&self.current)),
            thousands(tokens(&self.approved) as u64),
            thousands(tokens(&self.current) as u64)
        );
        if let (Some(a), Some(c)) = (self.approved.cost_usd, self.current.cost_usd) {
            out.push_str(&format!(
                ", {} cost ({} → {})",
                pct(a, c),
                dollars(a),
                dollars(c)
            ));
        }
        out.push_str(&format!(
            " against the approved baselines of {} trace(s)",
            self.traces
        ));
        out
    }

    /// An approved set's totals beside the current set's (`traces`: the current trials).
    pub fn of_sets(approved: &[UsageRecord], current: &[UsageRecord]) -> UsageChange {
        let mut out = UsageChange::default();
        for a in approved {
            add_record(&mut out.approved, a);
        }
        for c in current {
            add_record(&mut out.current, c);
        }
        out.traces = current.len() as u64;
        out
    }

    /// Adds another change (another case's).
    pub fn merge(&mut self, other: &UsageChange) {
        self.traces += other.traces;
        add_record(&mut self.approved, &other.approved);
        add_record(&mut self.current, &other.current);
    }

    /// Adds one compared trace.
    pub fn add(&mut self, approved: &UsageRecord, current: &UsageRecord) {
        self.traces += 1;
        add_record(&mut self.approved, approved);
        add_record(&mut self.current, current);
    }
}

/// Adds `b` to `a`. The sum knows its cost when both do; a record of no request costs nothing
/// (it records no cost, as a run without a request does), and a sum of none records none.
fn add_record(a: &mut UsageRecord, b: &UsageRecord) {
    let known = |r: &UsageRecord| {
        if r.requests == 0 {
            Some(0)
        } else {
            r.cost_usd.map(nanos)
        }
    };
    let cost = known(a).zip(known(b)).map(|(x, y)| x.saturating_add(y));
    a.input_tokens = a.input_tokens.saturating_add(b.input_tokens);
    a.output_tokens = a.output_tokens.saturating_add(b.output_tokens);
    a.requests = a.requests.saturating_add(b.requests);
    a.cost_usd = cost.filter(|_| a.requests > 0).map(usd);
}

/// What the suite used, its budgets, and its change against the approved baselines.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SuiteUsage {
    /// Totals over every judged trace (every trial).
    #[serde(flatten)]
    pub totals: RunUsage,
    /// The budgets set (`[budget]`, `--budget-tokens`, `--budget-cost`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub budgets: Vec<BudgetCheck>,
    /// Against the approved baselines, when baselines were compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub against_approved: Option<UsageChange>,
}

impl SuiteUsage {
    /// The lines the text reports print: the totals, each budget, the change against the
    /// approved baselines.
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![format!("usage: {}", self.totals.describe())];
        out.extend(self.budgets.iter().map(|b| {
            let mark = if b.exceeded { "FAILED " } else { "" };
            format!("budget: {mark}{}", b.detail)
        }));
        if let Some(c) = &self.against_approved {
            out.push(format!("usage change: {}", c.describe()));
        }
        out
    }
}

/// The budgets `check` holds a suite to.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Budget {
    /// Input + output tokens over every judged trace.
    pub tokens: Option<u64>,
    /// US dollars over every judged trace.
    pub cost: Option<f64>,
}

impl Budget {
    /// The budgets a report's totals were held to.
    pub fn of(usage: Option<&SuiteUsage>) -> Budget {
        let mut out = Budget::default();
        for b in usage.iter().flat_map(|u| &u.budgets) {
            match b.budget.as_str() {
                "tokens" => out.tokens = Some(b.limit as u64),
                "cost" => out.cost = Some(b.limit),
                _ => {}
            }
        }
        out
    }

    /// How `totals` stand against the budgets set.
    pub fn check(&self, totals: &RunUsage) -> Vec<BudgetCheck> {
        let mut out = Vec::new();
        if let Some(limit) = self.tokens {
            let used = totals.tokens();
            let (exceeded, detail) = if totals.unmetered > 0 {
                (
                    true,
                    format!(
                        "token budget {} cannot be checked: {} of {} request(s) record no usage",
                        thousands(limit),
                        thousands(totals.unmetered),
                        thousands(totals.requests)
                    ),
                )
            } else if used > limit {
                (
                    true,
                    format!(
                        "token budget exceeded: {} tokens used, budget {}",
                        thousands(used),
                        thousands(limit)
                    ),
                )
            } else {
                (
                    false,
                    format!(
                        "token budget: {} of {} tokens used",
                        thousands(used),
                        thousands(limit)
                    ),
                )
            };
            out.push(BudgetCheck {
                budget: "tokens".into(),
                limit: limit as f64,
                used: (totals.unmetered == 0).then_some(used as f64),
                exceeded,
                detail,
            });
        }
        if let Some(limit) = self.cost {
            let used = totals.cost_usd();
            let (exceeded, detail) = match used {
                None => (
                    true,
                    format!(
                        "cost budget {} cannot be checked: the cost of {} of {} request(s) is unknown (record it, or price the model in `prices.toml`)",
                        dollars(limit),
                        thousands(totals.uncosted),
                        thousands(totals.requests)
                    ),
                ),
                Some(c) if nanos(c) > nanos(limit) => (
                    true,
                    format!(
                        "cost budget exceeded: {} spent, budget {}",
                        dollars(c),
                        dollars(limit)
                    ),
                ),
                Some(c) => (
                    false,
                    format!("cost budget: {} of {} spent", dollars(c), dollars(limit)),
                ),
            };
            out.push(BudgetCheck {
                budget: "cost".into(),
                limit,
                used,
                exceeded,
                detail,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_and_counts_read_well() {
        assert_eq!(dollars(0.001308), "$0.001308");
        assert_eq!(dollars(14.443248), "$14.443248");
        assert_eq!(dollars(2.0), "$2.00");
        assert_eq!(dollars(0.5), "$0.50");
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1234567), "1,234,567");
    }

    #[test]
    fn budgets_fail_when_exceeded_or_unknown() {
        let mut u = RunUsage {
            requests: 2,
            input_tokens: 600,
            output_tokens: 500,
            cost_nanos: nanos(0.25),
            ..RunUsage::default()
        };
        let b = Budget {
            tokens: Some(1000),
            cost: Some(0.25),
        };
        let checks = b.check(&u);
        assert!(checks[0].exceeded && checks[0].detail.contains("1,100 tokens used"));
        assert!(!checks[1].exceeded, "{}", checks[1].detail);
        u.uncosted = 1;
        u.unmetered = 1;
        let checks = b.check(&u);
        assert!(checks.iter().all(|c| c.exceeded && c.used.is_none()));
        assert!(checks[1].detail.contains("1 of 2 request(s) is unknown"));
    }

    #[test]
    fn json_names_cost_only_when_known() {
        let mut u = RunUsage {
            requests: 2,
            input_tokens: 1,
            output_tokens: 2,
            uncosted: 2,
            ..RunUsage::default()
        };
        assert_eq!(
            serde_json::to_string(&u).unwrap(),
            r#"{"requests":2,"input_tokens":1,"output_tokens":2}"#
        );
        let back: RunUsage = serde_json::from_str(&serde_json::to_string(&u).unwrap()).unwrap();
        assert_eq!(back, u);
        u.uncosted = 1;
        u.cost_nanos = 1_500;
        assert_eq!(
            serde_json::to_string(&u).unwrap(),
            r#"{"requests":2,"input_tokens":1,"output_tokens":2,"cost_usd":1.5e-6,"uncosted":1}"#
        );
        let back: RunUsage = serde_json::from_str(&serde_json::to_string(&u).unwrap()).unwrap();
        assert_eq!(back, u);
    }
}
