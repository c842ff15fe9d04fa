//! The scenario model: the OpenClaw.NET agent-harness shape, with case-insensitive property names.

use std::collections::BTreeMap;

use camino::Utf8PathBuf;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::oracle::spec::{Expected, OracleSpec, metadata_string, scalar_string};
use crate::oracle::typed::Fallbacks;
use crate::trace::json::eq_ci;
pub use crate::trace::json::field;

/// How much a scenario's failure matters; drives `--fail-on`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
pub enum Risk {
    /// The default.
    #[default]
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
    /// Critical.
    Critical,
}

impl Risk {
    /// Parses `Low`, `Medium`, `High` or `Critical`, case-insensitively.
    pub fn parse(s: &str) -> Option<Risk> {
        [Risk::Low, Risk::Medium, Risk::High, Risk::Critical]
            .into_iter()
            .find(|r| r.as_str().eq_ignore_ascii_case(s.trim()))
    }

    /// The harness's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Low => "Low",
            Risk::Medium => "Medium",
            Risk::High => "High",
            Risk::Critical => "Critical",
        }
    }
}

/// A scenario: what an agent must and must not do, stated before any run.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Unique id (case-insensitive).
    pub id: String,
    /// Human title.
    pub title: String,
    /// Risk level.
    pub risk: Risk,
    /// `type` (classification).
    pub kind: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// Free text.
    pub description: Option<String>,
    /// What the run was asked: test data, never copied into a report.
    pub input: Option<Value>,
    /// Fallback values.
    pub expected: Expected,
    /// The oracles: the only things that produce verdicts.
    pub oracles: Vec<OracleSpec>,
    /// The harness's scripted trace, when present.
    pub scripted_trace: Option<Value>,
    /// Path of a Harness Contract, relative to the scenario file.
    pub contract: Option<String>,
    /// The contract, loaded (or why it did not load).
    pub contract_loaded: Option<Result<crate::oracle::harness_contract::Contract, String>>,
    /// Judged and reported, but its failures never affect the exit code.
    pub known_gap: bool,
    /// Oracles and baselines see the events a trace marks as copied from an earlier run as
    /// context (`judgeCopiedContext`; by default they judge only the run's own events).
    pub judge_copied_context: bool,
    /// String map (`unsafeTools`…).
    pub metadata: BTreeMap<String, String>,
    /// The file it was loaded from.
    pub file: Utf8PathBuf,
    /// Whether `risk` was written (a scenario without it is Low, and a `gates` error).
    pub risk_set: bool,
    /// Keys outside the scenario format (top level and `expected`), worded as problems with a
    /// suggestion where one is close: `gates` errors.
    pub unknown_keys: Vec<String>,
    /// How a case with several trials is judged (`trials`; the default when absent or
    /// malformed).
    pub trials: crate::trials::policy::TrialsPolicy,
    /// Why `trials` is malformed (a `gates` error).
    pub trials_problem: Option<String>,
}

impl Scenario {
    /// Configures every oracle with this scenario's fallbacks (its `expected` values, metadata
    /// and contract): done when it loads, and again after any of those change.
    pub fn configure_oracles(&mut self) {
        let mut oracles = std::mem::take(&mut self.oracles);
        let fallbacks = self.fallbacks();
        for o in &mut oracles {
            o.configure(&fallbacks);
        }
        self.oracles = oracles;
    }

    /// What the scenario lends its oracles: its `expected` values, its `unsafeTools` metadata
    /// and its contract.
    pub fn fallbacks(&self) -> Fallbacks<'_> {
        Fallbacks {
            expected: &self.expected,
            unsafe_tools: self.metadata("unsafeTools"),
            contract: self.contract_loaded.as_ref(),
        }
    }

    /// A metadata entry, key matched case-insensitively.
    pub fn metadata(&self, name: &str) -> Option<&str> {
        self.metadata
            .iter()
            .find(|(k, _)| eq_ci(k, name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether the scenario's `type` or tags include `tag` (case-insensitive).
    pub fn has_tag(&self, tag: &str) -> bool {
        self.kind
            .as_deref()
            .is_some_and(|k| eq_ci(k.trim(), tag.trim()))
            || self.tags.iter().any(|t| eq_ci(t.trim(), tag.trim()))
    }
}
