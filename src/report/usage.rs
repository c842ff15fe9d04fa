//! What the runs used and cost: each row's totals ([`RunUsage`]), the suite's
//! ([`SuiteUsage`]), its budgets and its change against the approved baselines.
//!
//! Costs are summed in whole nano-dollars (each inference's cost rounded once), so a suite's
//! total is exact and the same in any order of summing, whatever the thread count.

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

use crate::baseline::UsageRecord;
use crate::trace::{EventBody, Trace};

/// US dollars as whole nano-dollars.
pub fn nanos(usd: f64) -> u64 {
    // `as` saturates: an absurd recorded cost cannot wrap into a small one.
    (usd * 1e9).round() as u64
}

/// Whole nano-dollars as US dollars.
pub fn usd(nanos: u64) -> f64 {
    nanos as f64 / 1e9
}

/// What one run's inferences (or a suite's) used and cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunUsage {
    /// `inference` events.
    pub requests: u64,
    /// Summed `input_tokens` (of the inferences that record usage).
    pub input_tokens: u64,
    /// Summed `output_tokens`.
    pub output_tokens: u64,
    /// Inferences that record no usage.
    pub unmetered: u64,
    /// The cost of the inferences whose cost is known, in nano-dollars.
    pub cost_nanos: u64,
    /// Inferences whose cost is unknown: no usage, or no recorded cost and no price.
    pub uncosted: u64,
    /// Inferences whose cost the price table gave (the rest of the known ones were recorded).
    pub priced: u64,
}

impl RunUsage {
    /// The totals of a trace (priced already, when a price table was given).
    pub fn of(trace: &Trace<'_>) -> RunUsage {
        let mut out = RunUsage::default();
        // Summed exactly and rounded to nano-dollars once: many sub-nano-dollar requests add up
        // to what they cost, never to zero.
        let mut cost = 0.0_f64;
        for e in &trace.events {
            let EventBody::Inference(i) = &e.body else {
                continue;
            };
            out.requests += 1;
            match &i.usage {
                Some(u) => {
                    out.input_tokens = out.input_tokens.saturating_add(u.input_tokens);
                    out.output_tokens = out.output_tokens.saturating_add(u.output_tokens);
                    match u.cost_usd {
                        Some(c) => cost += c,
                        None => out.uncosted += 1,
                    }
                    out.priced += u64::from(u.priced);
                }
                None => {
                    out.unmetered += 1;
                    out.uncosted += 1;
                }
            }
        }
        out.cost_nanos = nanos(cost);
        out
    }

    /// Adds `other`'s totals.
    pub fn add(&mut self, other: &RunUsage) {
        self.requests = self.requests.saturating_add(other.requests);
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.unmetered = self.unmetered.saturating_add(other.unmetered);
        self.cost_nanos = self.cost_nanos.saturating_add(other.cost_nanos);
        self.uncosted = self.uncosted.saturating_add(other.uncosted);
        self.priced = self.priced.saturating_add(other.priced);
    }

    /// The totals as a baseline records them: the cost only when every request's is known
    /// (and there was a request).
    pub fn record(&self) -> UsageRecord {
        UsageRecord {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            requests: self.requests,
            cost_usd: self.cost_usd().filter(|_| self.requests > 0),
        }
    }

    /// Input plus output tokens.
    pub fn tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// The cost in US dollars when it is known for every inference.
    pub fn cost_usd(&self) -> Option<f64> {
        (self.uncosted == 0).then(|| usd(self.cost_nanos))
    }

    /// The cost known so far, when some inference's cost is known.
    pub fn known_cost_usd(&self) -> Option<f64> {
        (self.requests > self.uncosted).then(|| usd(self.cost_nanos))
    }

    /// "1,234 tokens, $0.0123" (or "cost unknown for 2 of 9 requests"), for the text reports.
    pub fn describe(&self) -> String {
        let mut out = format!(
            "{} request(s), {} input + {} output tokens",
            thousands(self.requests),
            thousands(self.input_tokens),
            thousands(self.output_tokens)
        );
        if self.unmetered > 0 {
            out.push_str(&format!(
                " ({} request(s) record no usage)",
                thousands(self.unmetered)
            ));
        }
        match (self.cost_usd(), self.known_cost_usd()) {
            (Some(c), _) => out.push_str(&format!(", {}", dollars(c))),
            (None, Some(c)) => out.push_str(&format!(
                ", {} known (cost unknown for {} of {} requests)",
                dollars(c),
                thousands(self.uncosted),
                thousands(self.requests)
            )),
            (None, None) => {}
        }
        out
    }
}

/// The JSON form: counts, `cost_usd` when some inference's cost is known, `uncosted`,
/// `unmetered` and `priced` when not zero.
impl Serialize for RunUsage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("requests", &self.requests)?;
        m.serialize_entry("input_tokens", &self.input_tokens)?;
        m.serialize_entry("output_tokens", &self.output_tokens)?;
        if let Some(c) = self.known_cost_usd() {
            m.serialize_entry("cost_usd", &c)?;
        }
        if self.uncosted > 0 && self.known_cost_usd().is_some() {
            m.serialize_entry("uncosted", &self.uncosted)?;
        }
        if self.unmetered > 0 {
            m.serialize_entry("unmetered", &self.unmetered)?;
        }
        if self.priced > 0 {
            m.serialize_entry("priced", &self.priced)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for RunUsage {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        /// The JSON form [`RunUsage`]'s `Serialize` writes.
        #[derive(Deserialize)]
        struct Json {
            requests: u64,
            input_tokens: u64,
            output_tokens: u64,
            #[serde(default)]
            cost_usd: Option<f64>,
            #[serde(default)]
            uncosted: u64,
            #[serde(default)]
            unmetered: u64,
            #[serde(default)]
            priced: u64,
        }
        let j = Json::deserialize(d)?;
        Ok(RunUsage {
            requests: j.requests,
            input_tokens: j.input_tokens,
            output_tokens: j.output_tokens,
            unmetered: j.unmetered,
            priced: j.priced,
            cost_nanos: j.cost_usd.map_or(0, nanos),
            // No cost at all: every request's is unknown.
            uncosted: if j.cost_usd.is_some() {
                j.uncosted
            } else {
                j.requests
            },
        })
    }
}

/// `12,345`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `$0.001308`: dollars to the micro-dollar, trailing zeros beyond the cents dropped.
pub fn dollars(usd: f64) -> String {
    let text = format!("{usd:.6}");
    let (whole, frac) = text.split_once('.').unwrap_or((&text, ""));
    let frac = frac.trim_end_matches('0');
    let frac = if frac.len() < 2 {
        format!("{frac:0<2}")
    } else {
        frac.to_owned()
    };
    format!("${whole}.{frac}")
}

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
