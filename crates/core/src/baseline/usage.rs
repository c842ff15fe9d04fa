//! What one run's inferences used and cost ([`RunUsage`]), read from its trace; a baseline keeps
//! it as its [`UsageRecord`], the report sums it.
//!
//! Costs are summed in whole nano-dollars (each inference's cost rounded once), so a total is
//! exact and the same in any order of summing, whatever the thread count.

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

use super::UsageRecord;
use crate::common::money::{dollars, nanos, thousands, usd};
use crate::trace::{EventBody, Trace};

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
