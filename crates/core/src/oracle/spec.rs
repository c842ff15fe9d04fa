//! One entry of a scenario's `oracles[]` as written, and the scenario's `expected` values the
//! harness lets oracles fall back on: what the oracles are configured from. The scenario layer
//! builds these when it loads a file; the oracle layer knows no scenario.

use serde_json::{Map, Value};

use super::typed::{Fallbacks, Oracle};
use crate::trace::json::field;

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
    pub oracle: Option<Result<Oracle, super::ConfigError>>,
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
    pub fn misconfiguration(&self) -> Option<&super::ConfigError> {
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
