//! `tool-sequence`: the actual tool calls against an expected trajectory, in five modes, with
//! optimal (maximum bipartite) pairing, batch-aware ordering, and argument matching.

mod extras;
mod judge;

use crate::oracle::ConfigError;
#[cfg(test)]
use crate::oracle::facts::ActualCall;
pub(crate) use judge::tool_sequence;
#[cfg(test)]
use judge::{actual_calls, check_sequence, max_matching};

use serde_json::{Value, json};

use super::facts::Facts;
use super::jsoneq::{ArgsMatch, describe_differences, differences, differing_keys, override_for};
use super::result::OracleResult;
use crate::oracle::spec::OracleSpec;

/// The five comparison modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqMode {
    /// Same length, position by position.
    Exact,
    /// Expected is a subsequence of actual.
    InOrder,
    /// Same length, any order.
    Unordered,
    /// Every expected call pairs with a distinct actual call.
    Superset,
    /// Every actual call pairs with a distinct expected call.
    Subset,
}

impl SeqMode {
    fn parse(s: &str) -> Option<SeqMode> {
        match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "exact" => Some(SeqMode::Exact),
            "in-order" => Some(SeqMode::InOrder),
            "unordered" => Some(SeqMode::Unordered),
            "superset" => Some(SeqMode::Superset),
            "subset" => Some(SeqMode::Subset),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            SeqMode::Exact => "exact",
            SeqMode::InOrder => "in-order",
            SeqMode::Unordered => "unordered",
            SeqMode::Superset => "superset",
            SeqMode::Subset => "subset",
        }
    }
}

/// Which calls an oracle reads: the executed `tool_call` events, or the calls `inference`
/// events planned in `output.tool_calls`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Of {
    /// `tool_call` events (the default).
    #[default]
    Executed,
    /// The calls inferences planned, in order.
    Planned,
}

impl Of {
    /// Reads `of` (default `executed`).
    pub fn read(spec: &OracleSpec) -> Result<Of, ConfigError> {
        match spec.get("of") {
            None | Some(Value::Null) => Ok(Of::Executed),
            Some(Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
                "executed" => Ok(Of::Executed),
                "planned" => Ok(Of::Planned),
                _ => Err(ConfigError::value(
                    "of",
                    format!("`of` `{s}` is not `executed` or `planned`"),
                )),
            },
            Some(other) => Err(ConfigError::value(
                "of",
                format!("`of` `{other}` is not `executed` or `planned`"),
            )),
        }
    }
}

/// How a `tool-sequence` splits the trace before comparing.
#[derive(Debug, Clone, PartialEq)]
pub enum Split {
    /// The whole trace against `calls`.
    Whole,
    /// Turn i's calls against the i-th list (`turns`).
    Turns(Vec<Vec<ExpectedCall>>),
    /// The i-th planning inference's calls against the i-th list (`inferences`).
    Inferences(Vec<Vec<ExpectedCall>>),
}

/// One expected call.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpectedCall {
    /// Tool name.
    pub tool: String,
    /// Arguments to match; `None` matches any.
    pub args: Option<Value>,
}

/// A validated `tool-sequence` configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct SeqConfig {
    /// The mode.
    pub mode: SeqMode,
    /// Expected calls.
    pub expected: Vec<ExpectedCall>,
    /// Default argument matching.
    pub args_match: ArgsMatch,
    /// Per-tool overrides.
    pub overrides: Vec<(String, ArgsMatch)>,
    /// `batchOrder: strict`: batches do not relax ordering.
    pub strict_batches: bool,
    /// Executed or planned calls.
    pub of: Of,
    /// Whole trace, per turn or per inference.
    pub split: Split,
    /// The expected calls grouped as the matching groups them (interchangeable calls
    /// together), decided once here rather than for every trace.
    pub(crate) groups: Vec<Vec<usize>>,
    /// With `anyOrder` groups in `calls`: the ranges of `expected`, in order, whose calls may
    /// come in any order (a call outside a group is a range of one).
    pub order: Option<Vec<std::ops::Range<usize>>>,
    /// `readOnly`: tools (or globs) whose extra calls are harmless; with any, an extra call of
    /// another tool fails in every mode.
    pub read_only: Vec<String>,
    /// Whether any expected call's arguments hold argument matchers (decided once here, not on
    /// every comparison).
    pub(crate) matchers: bool,
}

/// Whether any of `expected`'s arguments hold argument matchers.
pub(crate) fn has_matchers(expected: &[ExpectedCall]) -> bool {
    (expected.iter()).any(|e| e.args.as_ref().is_some_and(super::argmatch::has_matchers))
}

/// Reads one expected call: `{tool, args?}`, or (in `turns` and `inferences`) a bare tool
/// name. `at` names it in messages.
fn expected_call(c: &Value, at: &str, bare_names: bool) -> Result<ExpectedCall, ConfigError> {
    if bare_names {
        if let Some(t) = c.as_str().map(str::trim).filter(|t| !t.is_empty()) {
            return Ok(ExpectedCall {
                tool: t.to_owned(),
                args: None,
            });
        }
    }
    let obj = c
        .as_object()
        .ok_or_else(|| ConfigError::value(at, format!("`{at}` is not an object")))?;
    for key in obj.keys() {
        if !["tool", "args"]
            .iter()
            .any(|k| super::registry::same_key(k, key))
        {
            let meant = super::registry::closest(key, ["tool", "args"])
                .map(|m| format!("; did you mean `{m}`?"))
                .unwrap_or_default();
            return Err(ConfigError::value(
                format!("{at}.{key}"),
                format!("unknown key `{key}` in `{at}`{meant}"),
            ));
        }
    }
    let tool = crate::trace::json::field(obj, "tool")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| ConfigError::value(format!("{at}.tool"), format!("`{at}` has no `tool`")))?;
    let args = match crate::trace::json::field(obj, "args") {
        None => None,
        Some(Value::Null) => {
            return Err(ConfigError::value(
                format!("{at}.args"),
                format!("`{at}.args` is null; omit it to match any arguments"),
            ));
        }
        Some(v) => {
            super::argmatch::validate(v, &format!("{at}.args"))?;
            Some(v.clone())
        }
    };
    Ok(ExpectedCall {
        tool: tool.to_owned(),
        args,
    })
}

/// Reads a list of lists of expected calls (`turns`, `inferences`).
fn expected_lists(spec: &OracleSpec, name: &str) -> Result<Vec<Vec<ExpectedCall>>, ConfigError> {
    let Some(Value::Array(lists)) = spec.get(name) else {
        return Err(ConfigError::value(
            name,
            format!("`{name}` must be an array of arrays of calls"),
        ));
    };
    if lists.is_empty() {
        return Err(ConfigError::value(
            name,
            format!(
                "`{name}` is empty: give one list of calls per {}",
                if name == "turns" { "turn" } else { "inference" }
            ),
        ));
    }
    (lists.iter().enumerate())
        .map(|(i, list)| {
            let Value::Array(calls) = list else {
                return Err(ConfigError::value(
                    format!("{name}[{i}]"),
                    format!("`{name}[{i}]` must be an array of calls"),
                ));
            };
            (calls.iter().enumerate())
                .map(|(j, c)| expected_call(c, &format!("{name}[{i}][{j}]"), true))
                .collect()
        })
        .collect()
}

/// Expected calls, and the ranges of their `anyOrder` groups (`None` without any).
type CallsAndGroups = (Vec<ExpectedCall>, Option<Vec<std::ops::Range<usize>>>);

/// An `{"anyOrder": [calls…]}` element of `calls`: its calls.
fn any_order(c: &Value) -> Option<&Value> {
    let obj = c.as_object()?;
    let (key, calls) = obj.iter().next().filter(|_| obj.len() == 1)?;
    super::registry::same_key("anyOrder", key).then_some(calls)
}

/// Reads `calls`, whose elements are calls or `{"anyOrder": [calls…]}` groups: the calls, and
/// the ranges of the groups (`None` without any).
fn calls_with_groups(calls: &[Value]) -> Result<CallsAndGroups, ConfigError> {
    let (mut expected, mut ranges, mut grouped) = (Vec::new(), Vec::new(), false);
    for (i, c) in calls.iter().enumerate() {
        let start = expected.len();
        match any_order(c) {
            Some(Value::Array(group)) if !group.is_empty() => {
                grouped = true;
                for (j, g) in group.iter().enumerate() {
                    expected.push(expected_call(
                        g,
                        &format!("calls[{i}].anyOrder[{j}]"),
                        false,
                    )?);
                }
            }
            Some(_) => {
                return Err(ConfigError::value(
                    format!("calls[{i}].anyOrder"),
                    format!("`calls[{i}].anyOrder` must be a non-empty array of calls"),
                ));
            }
            None => expected.push(expected_call(c, &format!("calls[{i}]"), false)?),
        }
        ranges.push(start..expected.len());
    }
    Ok((expected, grouped.then_some(ranges)))
}

/// Reads `calls` (or the `tools` shorthand) into expected calls, with their `anyOrder` groups.
pub(crate) fn expected_calls(spec: &OracleSpec) -> Result<CallsAndGroups, ConfigError> {
    match (spec.get("calls"), spec.get("tools")) {
        (Some(_), Some(_)) => Err("give exactly one of `calls` and `tools`, not both".into()),
        (None, None) => {
            Err("no expected calls: give `calls`, `tools`, `turns` or `inferences`".into())
        }
        (Some(Value::Array(calls)), None) => calls_with_groups(calls),
        (None, Some(Value::Array(tools))) => tools
            .iter()
            .enumerate()
            .map(|(i, t)| {
                t.as_str()
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(|t| ExpectedCall {
                        tool: t.to_owned(),
                        args: None,
                    })
                    .ok_or_else(|| {
                        ConfigError::value(
                            format!("tools[{i}]"),
                            format!("`tools[{i}]` is not a tool name"),
                        )
                    })
            })
            .collect::<Result<_, _>>()
            .map(|calls| (calls, None)),
        (Some(_), None) => Err(ConfigError::value("calls", "`calls` must be an array")),
        (None, Some(_)) => Err(ConfigError::value(
            "tools",
            "`tools` must be an array of tool names",
        )),
    }
}

/// `argsMatch` (default `exact`).
pub(crate) fn args_mode(spec: &OracleSpec) -> Result<ArgsMatch, ConfigError> {
    match spec.get("argsMatch") {
        None | Some(Value::Null) => Ok(ArgsMatch::Exact),
        Some(Value::String(s)) => ArgsMatch::parse(s).ok_or_else(|| {
            ConfigError::value(
                "argsMatch",
                format!("`argsMatch` `{s}` is not one of exact, ignore, superset, subset, partial"),
            )
        }),
        Some(other) => Err(ConfigError::value(
            "argsMatch",
            format!("`argsMatch` `{other}` is not a mode name"),
        )),
    }
}

/// Configures `tool-sequence`.
pub(crate) fn configure_oracle(
    spec: &OracleSpec,
    _: &super::typed::Fallbacks<'_>,
) -> Result<super::typed::Oracle, ConfigError> {
    Ok(super::typed::Oracle::ToolSequence(Box::new(configure(
        spec,
    )?)))
}

/// Validates a `tool-sequence` oracle.
pub(crate) fn configure(spec: &OracleSpec) -> Result<SeqConfig, ConfigError> {
    let mode = match spec.get("mode") {
        None | Some(Value::Null) => {
            return Err(ConfigError::value(
                "mode",
                "`mode` is required (exact, in-order, unordered, superset or subset)",
            ));
        }
        Some(Value::String(s)) => SeqMode::parse(s).ok_or_else(|| {
            ConfigError::value(
                "mode",
                format!("`mode` `{s}` is not one of exact, in-order, unordered, superset, subset"),
            )
        })?,
        Some(other) => {
            return Err(ConfigError::value(
                "mode",
                format!("`mode` `{other}` is not a mode name"),
            ));
        }
    };
    let of = Of::read(spec)?;
    let mut order = None;
    let (expected, split) = match (spec.get("turns"), spec.get("inferences")) {
        (Some(_), Some(_)) => return Err("give `turns` or `inferences`, not both".into()),
        (Some(_), None) | (None, Some(_))
            if spec.get("calls").is_some() || spec.get("tools").is_some() =>
        {
            return Err("give `calls`/`tools` or a per-turn/per-inference list, not both".into());
        }
        (Some(_), None) => (Vec::new(), Split::Turns(expected_lists(spec, "turns")?)),
        (None, Some(_)) => {
            if of != Of::Planned {
                return Err(ConfigError::value(
                    "inferences",
                    "`inferences` judges planned calls: set `\"of\": \"planned\"`",
                ));
            }
            (
                Vec::new(),
                Split::Inferences(expected_lists(spec, "inferences")?),
            )
        }
        (None, None) => {
            let (expected, groups) = expected_calls(spec)?;
            order = groups;
            (expected, Split::Whole)
        }
    };
    if order.is_some() && !matches!(mode, SeqMode::Exact | SeqMode::InOrder) {
        return Err(ConfigError::value(
            "calls",
            format!(
                "`anyOrder` groups order calls in `exact` and `in-order`; mode `{}` compares in any order already",
                mode.name()
            ),
        ));
    }
    let read_only = match spec.get("readOnly") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(tools)) => (tools.iter().enumerate())
            .map(|(i, t)| {
                (t.as_str().map(str::trim))
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned)
                    .ok_or_else(|| {
                        ConfigError::value(
                            format!("readOnly[{i}]"),
                            format!("`readOnly[{i}]` is not a tool name"),
                        )
                    })
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(ConfigError::value(
                "readOnly",
                "`readOnly` must be an array of tool names",
            ));
        }
    };
    let args_match = args_mode(spec)?;
    let overrides = match spec.get("argsMatchOverrides") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(tool, v)| {
                ArgsMatch::from_value(v)
                    .map(|m| (tool.clone(), m))
                    .map_err(|e| format!("`argsMatchOverrides.{tool}`: {e}"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(ConfigError::value(
                "argsMatchOverrides",
                "`argsMatchOverrides` must map tool names to a mode or a list of paths",
            ));
        }
    };
    let strict_batches = match spec.get("batchOrder") {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "strict" => true,
            "any" => false,
            _ => {
                return Err(ConfigError::value(
                    "batchOrder",
                    format!("`batchOrder` `{s}` is not `strict` or `any`"),
                ));
            }
        },
        Some(other) => {
            return Err(ConfigError::value(
                "batchOrder",
                format!("`batchOrder` `{other}` is not `strict` or `any`"),
            ));
        }
    };
    let matchers = has_matchers(&expected);
    Ok(SeqConfig {
        mode,
        groups: crate::oracle::matching::expected_groups(&expected),
        expected,
        args_match,
        overrides,
        strict_batches,
        of,
        split,
        order,
        read_only,
        matchers,
    })
}

#[cfg(test)]
#[path = "../sequence_tests.rs"]
mod tests;
