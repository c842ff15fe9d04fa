//! The registry of oracle types: one table that is the single source for the known types, for
//! how each is configured into a typed [`Oracle`] (whose exhaustive `match` is the dispatch), for
//! the parameters each type takes (and so for the strict-parameter rules), and for the
//! categories `gates` needs.
//!
//! Strict parameters: a key the type does not define (compared ignoring case, `_` equal to
//! `-`), a parameter of the wrong JSON type, or one parameter given twice (`tool` and `Tool`)
//! is a misconfiguration naming the key and, when one is close, what was probably meant.
//! `metadata` stays free-form on every oracle. The harness's own serialisers write every field
//! of its one oracle class, unset ones as `null`, so a `null` `tool`, `value`, `limit`, `tools`
//! or `metadata` is accepted on any oracle as "not set".

use serde_json::{Map, Value};

use super::typed::{Configure, Fallbacks, Oracle};
use super::{ConfigError, ParamProblem, ParamProblemKind};
use super::{
    artifacts, behaviour, calls, compose, contract, cost, counts, expr, harness, params, replies,
    sequence, similarity,
};
use crate::oracle::spec::OracleSpec;

pub use super::shape::Shape;

/// What `gates` needs to know of a type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Judges which tools were called: satisfies a tool-use scenario.
    Tool,
    /// Judges approvals: satisfies an approval or safety scenario.
    Approval,
    /// Anything else.
    Other,
    /// `not`, `all-of`, `any-of`: the families of the oracles inside.
    Composite,
}

/// One oracle type.
pub struct OracleType {
    /// Canonical name, lowercase.
    pub name: &'static str,
    /// Its parameters besides `type` and `metadata`.
    pub params: &'static [(&'static str, Shape)],
    /// Its `gates` category.
    pub family: Family,
    /// How its parameters become a typed [`Oracle`] (whose check is [`Oracle::judge`]).
    pub configure: Configure,
}

use Shape::*;

const COUNT_BOUNDS: [(&str, Shape); 3] = [("count", Count), ("min", Count), ("max", Count)];

/// Every oracle type this version judges.
pub static TYPES: &[OracleType] = &[
    OracleType {
        name: "tool-called",
        params: &[("tool", Str), ("tools", StrList), ("value", Scalar)],
        family: Family::Tool,
        configure: harness::configure_tool_called,
    },
    OracleType {
        name: "tool-not-called",
        params: &[("tool", Str), ("tools", StrList), ("value", Scalar)],
        family: Family::Tool,
        configure: harness::configure_tool_not_called,
    },
    OracleType {
        name: "max-tool-calls",
        params: &[("limit", Count), ("value", Scalar)],
        family: Family::Tool,
        configure: harness::configure_max_tool_calls,
    },
    OracleType {
        name: "final-answer-contains",
        params: &[("value", Scalar), ("values", StrList)],
        family: Family::Other,
        configure: harness::configure_final_answer_contains,
    },
    OracleType {
        name: "final-answer-not-contains",
        params: &[("value", Scalar), ("values", StrList)],
        family: Family::Other,
        configure: harness::configure_final_answer_not_contains,
    },
    OracleType {
        name: "approval-required",
        params: &[("tool", Str), ("value", Scalar)],
        family: Family::Approval,
        configure: |s, _| {
            Ok(Oracle::ApprovalRequired {
                tool: params::tool(s),
            })
        },
    },
    OracleType {
        name: "approval-not-required",
        params: &[],
        family: Family::Approval,
        configure: |_, _| Ok(Oracle::ApprovalNotRequired),
    },
    OracleType {
        name: "no-unsafe-tool",
        params: &[("tools", StrList)],
        family: Family::Approval,
        configure: |s, fb| {
            Ok(Oracle::NoUnsafeTool {
                unsafe_tools: harness::unsafe_tools(s, fb),
            })
        },
    },
    OracleType {
        name: "status-is",
        params: &[("value", Str)],
        family: Family::Other,
        configure: harness::configure_status_is,
    },
    OracleType {
        name: "tool-sequence",
        params: &[
            ("mode", Str),
            ("calls", Calls),
            ("tools", StrList),
            ("argsMatch", Str),
            ("argsMatchOverrides", Object),
            ("batchOrder", Str),
            ("of", Str),
            ("turns", Lists),
            ("inferences", Lists),
            ("readOnly", StrList),
        ],
        family: Family::Tool,
        configure: sequence::configure_oracle,
    },
    OracleType {
        name: "tool-args",
        params: &[
            ("tool", Str),
            ("value", Scalar),
            ("args", Any),
            ("argsMatch", Str),
            ("of", Str),
        ],
        family: Family::Tool,
        configure: calls::configure_tool_args,
    },
    OracleType {
        name: "tool-succeeded",
        params: &[("tool", Str), ("value", Scalar)],
        family: Family::Other,
        configure: |s, _| {
            Ok(Oracle::ToolSucceeded {
                tool: params::tool(s),
            })
        },
    },
    OracleType {
        name: "tool-result-contains",
        params: &[("tool", Str), ("value", Scalar)],
        family: Family::Other,
        configure: calls::configure_tool_result_contains,
    },
    OracleType {
        name: "call-result-linked",
        params: &[],
        family: Family::Other,
        configure: |_, _| Ok(Oracle::CallResultLinked),
    },
    OracleType {
        name: "request-count",
        params: &COUNT_BOUNDS,
        family: Family::Other,
        configure: counts::configure_request_count,
    },
    OracleType {
        name: "step-count",
        params: &[
            ("kind", Str),
            COUNT_BOUNDS[0],
            COUNT_BOUNDS[1],
            COUNT_BOUNDS[2],
        ],
        family: Family::Other,
        configure: counts::configure_step_count,
    },
    OracleType {
        name: "message-count",
        params: &[
            ("phase", Str),
            ("value", Scalar),
            COUNT_BOUNDS[0],
            COUNT_BOUNDS[1],
            COUNT_BOUNDS[2],
        ],
        family: Family::Other,
        configure: counts::configure_message_count,
    },
    OracleType {
        name: "no-preview-left",
        params: &[("require", Bool)],
        family: Family::Other,
        configure: replies::configure_no_preview_left,
    },
    OracleType {
        name: "final-after-tool",
        params: &[("tool", Str), ("value", Scalar), ("phase", Str)],
        family: Family::Other,
        configure: replies::configure_final_after_tool,
    },
    OracleType {
        name: "artifact-contains",
        params: &[("path", Str), ("values", StrList), ("value", Scalar)],
        family: Family::Other,
        configure: artifacts::configure_artifact_contains,
    },
    OracleType {
        name: "artifact-before-reply",
        params: &[("path", Str)],
        family: Family::Other,
        configure: artifacts::configure_artifact_before_reply,
    },
    OracleType {
        name: "final-answer-matches",
        params: &[("pattern", Str)],
        family: Family::Other,
        configure: replies::configure_final_answer_matches,
    },
    OracleType {
        name: "pattern",
        params: &[
            ("pattern", Str),
            ("preset", Str),
            ("in", Any),
            ("tool", Str),
            ("pointer", Str),
            ("expect", Str),
        ],
        family: Family::Other,
        configure: super::patterns::configure_pattern,
    },
    OracleType {
        name: "hosts",
        params: &[
            ("allow", StrList),
            ("deny", StrList),
            ("in", Any),
            ("tool", Str),
            ("pointer", Str),
        ],
        family: Family::Other,
        configure: super::patterns::configure_hosts,
    },
    OracleType {
        name: "max-tokens",
        params: &[
            ("limit", Count),
            ("value", Scalar),
            ("kind", Str),
            ("trials", Object),
        ],
        family: Family::Other,
        configure: counts::configure_max_tokens,
    },
    OracleType {
        name: "max-cost",
        params: &[("limit", Number), ("trials", Object)],
        family: Family::Other,
        configure: cost::configure_max_cost,
    },
    OracleType {
        name: "tools-offered",
        params: &[("tools", StrList), ("mode", Str)],
        family: Family::Other,
        configure: counts::configure_tools_offered,
    },
    OracleType {
        name: "no-repeated-call",
        params: &[
            ("max", Count),
            ("consecutive", Bool),
            ("tool", Str),
            ("tools", StrList),
        ],
        family: Family::Other,
        configure: behaviour::configure_no_repeated_call,
    },
    OracleType {
        name: "no-retry-spiral",
        params: &[("max", Count), ("tool", Str), ("tools", StrList)],
        family: Family::Other,
        configure: behaviour::configure_no_retry_spiral,
    },
    OracleType {
        name: "tool-errors-handled",
        params: &[("success", StrList), ("tool", Str), ("tools", StrList)],
        family: Family::Other,
        configure: behaviour::configure_tool_errors_handled,
    },
    OracleType {
        name: "step-status",
        params: &[("tool", Str), ("tools", StrList), ("max_errors", Count)],
        family: Family::Other,
        configure: behaviour::configure_step_status,
    },
    OracleType {
        name: "contract-conformant",
        params: &[],
        family: Family::Other,
        configure: contract::configure,
    },
    OracleType {
        name: "tool-call-count",
        params: &[
            ("tool", Str),
            COUNT_BOUNDS[0],
            COUNT_BOUNDS[1],
            COUNT_BOUNDS[2],
            ("of", Str),
        ],
        family: Family::Tool,
        configure: counts::configure_tool_call_count,
    },
    OracleType {
        name: "response-similarity",
        params: &[("value", Scalar), ("turns", StrList), ("metric", Str)],
        family: Family::Other,
        configure: similarity::configure,
    },
    OracleType {
        name: "expr",
        params: &[("jq", Str)],
        family: Family::Other,
        configure: expr::configure,
    },
    OracleType {
        name: "not",
        params: &[("oracle", Object)],
        family: Family::Composite,
        configure: compose::configure_not,
    },
    OracleType {
        name: "all-of",
        params: &[("oracles", Oracles)],
        family: Family::Composite,
        configure: compose::configure_all_of,
    },
    OracleType {
        name: "any-of",
        params: &[("oracles", Oracles)],
        family: Family::Composite,
        configure: compose::configure_any_of,
    },
];

/// Keys every oracle takes (`threshold` is refused by the composing types when configured).
const COMMON: &[&str] = &["type", "metadata", "threshold", "turn"];
/// The harness's oracle fields: `null` on any oracle means "not set".
const HARNESS_FIELDS: &[&str] = &["tool", "value", "limit", "tools", "metadata"];
/// The keys of one expected call in `calls`.
const CALL_KEYS: &[(&str, Shape)] = &[("tool", Str), ("args", Any)];

/// The type named `written` (compared case-insensitively, trimmed).
pub fn lookup(written: &str) -> Option<&'static OracleType> {
    // Asked for every oracle of every trace judged, and almost always with a type's own
    // spelling: that is found by its hash, anything else by the case-insensitive comparison.
    static BY_NAME: std::sync::LazyLock<foldhash::HashMap<&str, &OracleType>> =
        std::sync::LazyLock::new(|| TYPES.iter().map(|t| (t.name, t)).collect());
    let written = written.trim();
    if let Some(t) = BY_NAME.get(written) {
        return Some(t);
    }
    TYPES.iter().find(|t| t.name.eq_ignore_ascii_case(written))
}

/// Whether two parameter names are the same: ASCII case ignored, `_` equal to `-`.
pub fn same_key(a: &str, b: &str) -> bool {
    let norm = |c: u8| match c {
        b'_' => b'-',
        c => c.to_ascii_lowercase(),
    };
    a.len() == b.len() && a.bytes().zip(b.bytes()).all(|(x, y)| norm(x) == norm(y))
}

/// Edit distance of two short names (insertions, deletions, substitutions and swaps of two
/// neighbours each count one), ignoring ASCII case and `_`/`-`.
fn distance(a: &str, b: &str) -> usize {
    let norm = |s: &str| -> Vec<u8> {
        s.bytes()
            .map(|c| {
                if c == b'_' {
                    b'-'
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect()
    };
    let (a, b) = (norm(a), norm(b));
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

/// The name among `candidates` closest to `written`, when it is close (at most a third of its
/// length, and at least one edit away from being another word entirely).
pub fn closest<'c>(
    written: &str,
    candidates: impl IntoIterator<Item = &'c str>,
) -> Option<&'c str> {
    let limit = (written.len() / 3).max(1);
    candidates
        .into_iter()
        .map(|c| (distance(written, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, c)| (*d, *c))
        .map(|(_, c)| c)
}

/// The unknown-key message for `key` on an oracle of type `t`, with what was probably meant: a
/// parameter of this type with a close name, else the type whose parameter it is.
fn unknown_key(t: &OracleType, key: &str) -> String {
    let mut msg = format!("unknown parameter `{key}` for {}", t.name);
    let own = (t.params.iter().map(|(n, _)| *n)).chain(["metadata", "threshold", "turn"]);
    if let Some(meant) = closest(key, own) {
        msg.push_str(&format!("; did you mean `{meant}`?"));
    } else {
        let elsewhere: Vec<&str> = (TYPES.iter())
            .filter(|o| o.params.iter().any(|(n, _)| same_key(n, key)))
            .map(|o| o.name)
            .collect();
        if let Some(other) =
            closest(t.name, elsewhere.iter().copied()).or_else(|| elsewhere.first().copied())
        {
            msg.push_str(&format!("; did you mean {other}, which takes it?"));
        }
    }
    msg
}

/// Checks an object's keys against `allowed`: unknown keys, keys given twice in different
/// spellings, and values of the wrong shape. `what` names the object in messages.
fn check_keys(
    obj: &Map<String, Value>,
    allowed: &[(&str, Shape)],
    common: &[&str],
    unknown: &dyn Fn(&str) -> String,
    what: &str,
) -> Vec<ParamProblem> {
    let problem = |key: &str, kind, message| ParamProblem {
        key: key.to_owned(),
        kind,
        message,
    };
    let mut problems = Vec::new();
    let mut seen: Vec<(&str, &str)> = Vec::new(); // (canonical, as written)
    for (key, value) in obj {
        let canonical = (allowed.iter().map(|(n, _)| *n))
            .chain(common.iter().copied())
            .find(|n| same_key(n, key));
        let Some(canonical) = canonical else {
            problems.push(problem(key, ParamProblemKind::Unknown, unknown(key)));
            continue;
        };
        if let Some((_, first)) = seen.iter().find(|(c, _)| *c == canonical) {
            problems.push(problem(
                canonical,
                ParamProblemKind::Twice,
                format!("`{canonical}` is given twice{what} (as `{first}` and `{key}`)"),
            ));
            continue;
        }
        seen.push((canonical, key));
        if value.is_null() && HARNESS_FIELDS.contains(&canonical) {
            continue;
        }
        let shape = (allowed.iter())
            .find(|(n, _)| *n == canonical)
            .map(|(_, s)| *s)
            .unwrap_or(match canonical {
                "metadata" => Object,
                "threshold" => Number,
                "turn" => Int,
                _ => Any,
            });
        if !shape.fits(value) {
            let message = format!(
                "`{canonical}`{what} must be {}, found {}",
                shape.describe(),
                crate::trace::json_type_name(value)
            );
            problems.push(problem(canonical, ParamProblemKind::WrongType, message));
        }
    }
    problems
}

/// The strict-parameter problems of an oracle of type `t` (empty when it is well-formed).
pub fn param_problems(t: &OracleType, spec: &OracleSpec) -> Vec<ParamProblem> {
    let mut problems = check_keys(
        &spec.params,
        t.params,
        COMMON,
        &|key| unknown_key(t, key),
        "",
    );
    if let Some(Value::Array(calls)) = spec.get("calls") {
        // An `{"anyOrder": [calls…]}` group's calls are checked as calls (by configuring).
        let group = |c: &serde_json::Map<String, Value>| {
            c.len() == 1 && c.keys().all(|k| same_key("anyOrder", k))
        };
        for (i, call) in calls.iter().enumerate() {
            if let Some(c) = call.as_object().filter(|c| !group(c)) {
                let what = format!(" in `calls[{i}]`");
                problems.extend(check_keys(
                    c,
                    CALL_KEYS,
                    &[],
                    &|key| {
                        let mut m = format!("unknown key `{key}` in `calls[{i}]`");
                        if let Some(meant) = closest(key, ["tool", "args"]) {
                            m.push_str(&format!("; did you mean `{meant}`?"));
                        }
                        m
                    },
                    &what,
                ));
            }
        }
    }
    problems
}

/// Configures one oracle of type `t`: the strict-parameter rules first (every problem, joined),
/// then its own parameters' values.
pub(crate) fn configure(
    t: &OracleType,
    spec: &OracleSpec,
    fallbacks: &Fallbacks<'_>,
) -> Result<Oracle, ConfigError> {
    let problems = param_problems(t, spec);
    if !problems.is_empty() {
        return Err(ConfigError::Params(problems));
    }
    let oracle = (t.configure)(spec, fallbacks)?;
    compose::wrap(oracle, spec, t.family != Family::Composite)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_lowercase_and_found_however_written() {
        for (i, t) in TYPES.iter().enumerate() {
            assert_eq!(t.name, t.name.to_ascii_lowercase());
            assert!(TYPES[..i].iter().all(|o| o.name != t.name), "{}", t.name);
            for w in [
                t.name.to_owned(),
                t.name.to_uppercase(),
                format!(" {} ", t.name),
            ] {
                assert_eq!(lookup(&w).map(|f| f.name), Some(t.name), "{w}");
            }
        }
        assert!(lookup("tool-calls").is_none());
    }

    #[test]
    fn suggestions() {
        assert_eq!(closest("tols", ["tools", "tool", "mode"]), Some("tools"));
        assert_eq!(closest("tol", ["tools", "tool", "mode"]), Some("tool"));
        assert_eq!(closest("argsmatch", ["argsMatch"]), Some("argsMatch"));
        assert_eq!(closest("threshhold", ["tool", "value"]), None);
        assert!(same_key("args_match", "args-match"));
        assert!(same_key("ArgsMatch", "argsmatch"));
        assert!(!same_key("args_match", "argsMatch"));
        assert_eq!(closest("riks", ["risk", "tags"]), Some("risk"));
    }
}
