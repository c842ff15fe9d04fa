//! The scenario model: the OpenClaw.NET agent-harness shape, with case-insensitive property names.

use std::collections::BTreeMap;

use camino::Utf8PathBuf;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::oracle::typed::{Fallbacks, Oracle};
use crate::trace::json::eq_ci;

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

/// `expected`: fallback values for oracles; nothing here is judged on its own.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Expected {
    /// `mustCallTools`, trimmed, blanks dropped.
    pub must_call_tools: Vec<String>,
    /// `mustNotCallTools`.
    pub must_not_call_tools: Vec<String>,
    /// `finalAnswerContains`.
    pub final_answer_contains: Vec<String>,
    /// `finalAnswerMustNotContain`.
    pub final_answer_must_not_contain: Vec<String>,
    /// `maxToolCalls`.
    pub max_tool_calls: Option<u64>,
    /// `requiresApproval`, when set at all.
    pub requires_approval: Option<bool>,
}

/// One entry of `oracles[]`: the object as written and the typed oracle it configures into,
/// once, when its scenario loads (with the scenario's fallbacks). Judging reads no parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct OracleSpec {
    /// Position in the scenario's `oracles` array.
    pub index: usize,
    /// The object as written.
    pub params: Map<String, Value>,
    /// The configured oracle; `Err` says what is wrong (a misconfiguration: the strict-parameter
    /// problems, else its own); `None` for a type this version does not know (judged as
    /// `unknown:<type>`).
    pub oracle: Option<Result<Oracle, String>>,
}

impl OracleSpec {
    /// The oracle at `index`, configured on its own (without a scenario's fallbacks).
    pub fn new(index: usize, params: Map<String, Value>) -> OracleSpec {
        let mut spec = OracleSpec {
            index,
            params,
            oracle: None,
        };
        spec.configure(&Fallbacks::none());
        spec
    }

    /// (Re)configures the oracle with `fallbacks`.
    pub(crate) fn configure(&mut self, fallbacks: &Fallbacks<'_>) {
        self.oracle = crate::oracle::registry::lookup(self.type_name())
            .map(|t| crate::oracle::registry::configure(t, self, fallbacks));
    }

    /// What is wrong with a known oracle's configuration.
    pub fn misconfiguration(&self) -> Option<&str> {
        match &self.oracle {
            Some(Err(e)) => Some(e),
            _ => None,
        }
    }

    /// A parameter by name, matched as the strict-parameter rules compare names: ignoring ASCII
    /// case, `_` equal to `-`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.params.get(name).or_else(|| {
            (self.params.iter())
                .find(|(k, _)| crate::oracle::registry::same_key(k, name))
                .map(|(_, v)| v)
        })
    }

    /// `type`, trimmed, as written (empty when missing).
    pub fn type_name(&self) -> &str {
        self.get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim()
    }

    /// A string entry of the oracle's `metadata` map.
    pub fn metadata(&self, name: &str) -> Option<String> {
        self.get("metadata")
            .and_then(Value::as_object)
            .and_then(|m| field(m, name))
            .and_then(metadata_string)
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
    pub contract_loaded: Option<Result<super::contract::Contract, String>>,
    /// Judged and reported, but its failures never affect the exit code.
    pub known_gap: bool,
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
        let fallbacks = Fallbacks::of(self);
        for o in &mut oracles {
            o.configure(&fallbacks);
        }
        self.oracles = oracles;
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

/// Looks a property up by name, ignoring ASCII case as the harness's JSON options do.
pub fn field<'v>(obj: &'v Map<String, Value>, name: &str) -> Option<&'v Value> {
    obj.get(name).or_else(|| {
        obj.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    })
}

/// A metadata value as text: a scalar, or a list of scalars joined with `,` (so
/// `"unsafeTools": ["deploy", "shell"]` means what `"deploy,shell"` means).
pub fn metadata_string(v: &Value) -> Option<String> {
    match v {
        Value::Array(items) => {
            let parts: Option<Vec<String>> = items.iter().map(scalar_string).collect();
            parts.map(|p| p.join(","))
        }
        other => scalar_string(other),
    }
}

/// A string, or a number or bool written as its JSON text; `None` for other values.
pub fn scalar_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}
