//! JSON equality as the oracles define it, and argument matching (`argsMatch`, overrides).
//!
//! Object key order is irrelevant, array order matters, numbers compare by numeric value (`6`
//! equals `6.0`, `-0` equals `0`, integers exactly), `true` is not `1`, `null` is not a missing
//! key.

use crate::oracle::ConfigError;
use serde_json::{Map, Number, Value};

fn as_integer(n: &Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

fn num_eq(a: &Number, b: &Number) -> bool {
    match (as_integer(a), as_integer(b)) {
        (Some(x), Some(y)) => x == y,
        // An integer equals a float only when the float is integral and exactly that integer.
        (Some(i), None) | (None, Some(i)) => {
            let f = if a.is_f64() { a.as_f64() } else { b.as_f64() }.unwrap_or(f64::NAN);
            f.fract() == 0.0 && f as i128 == i && i as f64 == f
        }
        (None, None) => a.as_f64() == b.as_f64(),
    }
}

/// JSON equality.
pub(crate) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => num_eq(x, y),
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => false,
    }
}

/// How one call's arguments are compared, expected against actual.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgsMatch {
    /// Actual equals expected.
    Exact,
    /// Arguments are not compared.
    Ignore,
    /// Every top-level key of expected is in actual with an equal value.
    Superset,
    /// Every top-level key of actual is in expected with an equal value.
    Subset,
    /// Every key of expected is in actual with a partially matching value, recursively through
    /// objects; arrays compare element by element with the same rule and must have equal length;
    /// other values compare by JSON equality.
    Partial,
    /// Only these dot-paths are compared; missing on both sides passes, on one side fails.
    Paths(Vec<String>),
}

impl ArgsMatch {
    /// Parses a mode name (case-insensitive, `_` equals `-`).
    pub fn parse(s: &str) -> Option<ArgsMatch> {
        match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "exact" => Some(ArgsMatch::Exact),
            "ignore" => Some(ArgsMatch::Ignore),
            "superset" => Some(ArgsMatch::Superset),
            "subset" => Some(ArgsMatch::Subset),
            "partial" => Some(ArgsMatch::Partial),
            _ => None,
        }
    }

    /// Reads an `argsMatch` value or an override: a mode name or a list of dot-paths.
    pub fn from_value(v: &Value) -> Result<ArgsMatch, ConfigError> {
        match v {
            Value::String(s) => ArgsMatch::parse(s).ok_or_else(|| {
                ConfigError::value(
                    "argsMatch",
                    format!(
                        "`{s}` is not an argsMatch mode (exact, ignore, superset, subset, partial)"
                    ),
                )
            }),
            Value::Array(items) => items
                .iter()
                .map(|i| {
                    i.as_str()
                        .map(|s| s.trim().to_owned())
                        .filter(|s| !s.is_empty())
                        .ok_or_else(|| {
                            ConfigError::value(
                                "argsMatch",
                                "override paths must be non-blank strings",
                            )
                        })
                })
                .collect::<Result<Vec<_>, _>>()
                .map(ArgsMatch::Paths),
            other => Err(ConfigError::value(
                "argsMatch",
                format!("`{other}` is not an argsMatch mode or a list of paths"),
            )),
        }
    }
}

/// Resolves a dot-path (`order.id`, `items.0.sku`) in a JSON value.
pub(crate) fn resolve_path<'v>(v: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(v, |cur, seg| match cur {
        Value::Object(m) => m.get(seg),
        Value::Array(a) => seg.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}

fn keys_in(from: &Map<String, Value>, into: &Value) -> bool {
    let empty = Map::new();
    let into = into.as_object().unwrap_or(&empty);
    from.iter()
        .all(|(k, v)| into.get(k).is_some_and(|w| json_eq(v, w)))
}

/// Whether actual arguments `actual` satisfy `expected` under `mode` (expected arguments that
/// hold matchers: [`super::argmatch`]).
pub(crate) fn args_match(mode: &ArgsMatch, expected: &Value, actual: &Value) -> bool {
    let matchers = super::argmatch::has_matchers(expected);
    args_match_as(mode, expected, actual, matchers)
}

/// [`args_match`], told whether `expected` holds matchers (a configuration that knows it saves
/// the scan on every comparison).
pub(crate) fn args_match_as(
    mode: &ArgsMatch,
    expected: &Value,
    actual: &Value,
    matchers: bool,
) -> bool {
    if matchers {
        return args_match_with_matchers(mode, expected, actual);
    }
    match mode {
        ArgsMatch::Ignore => true,
        ArgsMatch::Exact => json_eq(expected, actual),
        ArgsMatch::Superset => match expected {
            Value::Object(e) => keys_in(e, actual),
            other => json_eq(other, actual),
        },
        ArgsMatch::Subset => match actual {
            Value::Object(a) => keys_in(a, expected),
            other => json_eq(expected, other),
        },
        ArgsMatch::Partial => partial_eq(expected, actual),
        ArgsMatch::Paths(paths) => {
            paths.iter().all(
                |p| match (resolve_path(expected, p), resolve_path(actual, p)) {
                    (None, None) => true,
                    (Some(x), Some(y)) => json_eq(x, y),
                    _ => false,
                },
            )
        }
    }
}

/// [`args_match`] for expected arguments that hold matchers: the same modes, each key compared
/// by [`super::argmatch::value_matches`], so a key a matcher lets be absent may be.
fn args_match_with_matchers(mode: &ArgsMatch, expected: &Value, actual: &Value) -> bool {
    use super::argmatch::{partial_matches, value_matches};
    fn plain(v: &Value) -> Option<&Map<String, Value>> {
        v.as_object()
            .filter(|m| !m.keys().any(|k| k.starts_with('$')))
    }
    match mode {
        ArgsMatch::Ignore => true,
        ArgsMatch::Exact => value_matches(expected, Some(actual)),
        ArgsMatch::Superset => match plain(expected) {
            Some(e) => e
                .iter()
                .all(|(k, x)| value_matches(x, actual.as_object().and_then(|a| a.get(k)))),
            None => value_matches(expected, Some(actual)),
        },
        ArgsMatch::Subset => match (plain(expected), actual) {
            (Some(e), Value::Object(a)) => a
                .iter()
                .all(|(k, v)| e.get(k).is_some_and(|x| value_matches(x, Some(v)))),
            _ => value_matches(expected, Some(actual)),
        },
        ArgsMatch::Partial => partial_matches(expected, Some(actual)),
        ArgsMatch::Paths(paths) => {
            paths.iter().all(
                |p| match (resolve_path(expected, p), resolve_path(actual, p)) {
                    (None, None) => true,
                    (Some(x), y) => value_matches(x, y),
                    (None, Some(_)) => false,
                },
            )
        }
    }
}

/// `partial` matching: `expected` is contained in `actual`, recursively (see
/// [`ArgsMatch::Partial`]).
pub(crate) fn partial_eq(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e
            .iter()
            .all(|(k, v)| a.get(k).is_some_and(|w| partial_eq(v, w))),
        (Value::Array(e), Value::Array(a)) => {
            e.len() == a.len() && e.iter().zip(a).all(|(x, y)| partial_eq(x, y))
        }
        _ => json_eq(expected, actual),
    }
}

/// Top-level keys whose values differ (present on one side only, or unequal), sorted.
pub(crate) fn differing_keys(expected: &Value, actual: &Value) -> Vec<String> {
    let empty = Map::new();
    let e = expected.as_object().unwrap_or(&empty);
    let a = actual.as_object().unwrap_or(&empty);
    let matchers = super::argmatch::has_matchers(expected);
    let mut keys: Vec<String> = e
        .keys()
        .chain(a.keys())
        .filter(|k| match (e.get(*k), a.get(*k)) {
            (Some(x), y) if matchers => !super::argmatch::value_matches(x, y),
            (Some(x), Some(y)) => !json_eq(x, y),
            _ => true,
        })
        .cloned()
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// How long one value of a difference may print before it is shortened.
const DIFFERENCE_CHARS: usize = 120;

fn shown(v: Option<&Value>) -> Value {
    match v {
        None => Value::String("(missing)".to_owned()),
        Some(v) => {
            let text = v.to_string();
            if text.chars().count() > DIFFERENCE_CHARS {
                Value::String(super::result::shorten(&text, DIFFERENCE_CHARS))
            } else {
                v.clone()
            }
        }
    }
}

/// For each top-level key whose values differ: `{"key", "expected", "found"}`, each value
/// shortened to a readable length (a missing key shows as `"(missing)"`), so that a report
/// shows the change itself, not a prefix of the whole arguments.
pub(crate) fn differences(expected: &Value, actual: &Value) -> Vec<Value> {
    let empty = Map::new();
    let e = expected.as_object().unwrap_or(&empty);
    let a = actual.as_object().unwrap_or(&empty);
    if expected.as_object().is_none() || actual.as_object().is_none() {
        return if json_eq(expected, actual) {
            Vec::new()
        } else {
            vec![
                serde_json::json!({"key": "", "expected": shown(Some(expected)), "found": shown(Some(actual))}),
            ]
        };
    }
    let decided: Vec<String> = super::argmatch::decisions(expected, actual);
    differing_keys(expected, actual)
        .into_iter()
        .map(|k| {
            let mut d = serde_json::json!({"key": k, "expected": shown(e.get(&k)), "found": shown(a.get(&k))});
            let how = format!("`{k}`: ");
            if let Some(m) = decided.iter().find_map(|m| m.strip_prefix(&how)) {
                d["matcher"] = Value::String(m.to_owned());
            }
            d
        })
        .collect()
}

/// `` `insurance` (expected "no", found "yes") ``, for at most three differences.
pub(crate) fn describe_differences(differences: &[Value]) -> String {
    let mut parts: Vec<String> = (differences.iter().take(3))
        .map(|d| match d["matcher"].as_str() {
            Some(how) => format!("`{}` ({how})", d["key"].as_str().unwrap_or("")),
            None => format!(
                "`{}` (expected {}, found {})",
                d["key"].as_str().unwrap_or(""),
                d["expected"],
                d["found"]
            ),
        })
        .collect();
    if differences.len() > 3 {
        parts.push(format!("{} more", differences.len() - 3));
    }
    parts.join(", ")
}

/// The per-tool override for `tool`, if any (tool names compare case-insensitively; an
/// override's name may be a glob).
pub(crate) fn override_for<'m>(
    overrides: &'m [(String, ArgsMatch)],
    tool: &str,
) -> Option<&'m ArgsMatch> {
    overrides
        .iter()
        .find(|(t, _)| super::names::tool_matches(t, tool))
        .map(|(_, m)| m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_equality_rules() {
        for (a, b, eq) in [
            (json!(6), json!(6.0), true),
            (json!(-0.0), json!(0), true),
            (json!(1.5), json!(1.5), true),
            (json!(9007199254740993u64), json!(9007199254740992.0), false),
            (json!(true), json!(1), false),
            (json!({"a": null}), json!({}), false),
            (
                json!({"a": 1, "b": [1, 2]}),
                json!({"b": [1, 2], "a": 1.0}),
                true,
            ),
            (json!([1, 2]), json!([2, 1]), false),
            (json!("6"), json!(6), false),
        ] {
            assert_eq!(json_eq(&a, &b), eq, "{a} vs {b}");
        }
    }

    #[test]
    fn args_modes_have_a_fixed_direction() {
        let e = json!({"a": 1});
        let a = json!({"a": 1, "b": 2});
        assert!(args_match(&ArgsMatch::Superset, &e, &a));
        assert!(!args_match(&ArgsMatch::Superset, &a, &e));
        assert!(args_match(&ArgsMatch::Subset, &a, &e));
        assert!(!args_match(&ArgsMatch::Subset, &e, &a));
        assert!(!args_match(&ArgsMatch::Exact, &e, &a));
        assert!(args_match(&ArgsMatch::Exact, &json!({}), &json!({})));
        assert!(!args_match(&ArgsMatch::Exact, &json!({}), &a));
        assert!(args_match(&ArgsMatch::Ignore, &e, &json!("x")));
    }

    #[test]
    fn paths_compare_only_what_they_name() {
        let e = json!({"order": {"id": 7, "note": "x"}, "items": [{"sku": "a"}]});
        let a = json!({"order": {"id": 7.0, "note": "y"}, "items": [{"sku": "a"}, {"sku": "b"}]});
        assert!(args_match(
            &ArgsMatch::Paths(vec![
                "order.id".into(),
                "items.0.sku".into(),
                "missing.both".into()
            ]),
            &e,
            &a
        ));
        assert!(!args_match(
            &ArgsMatch::Paths(vec!["order.note".into()]),
            &e,
            &a
        ));
        assert!(
            !args_match(&ArgsMatch::Paths(vec!["items.1.sku".into()]), &e, &a),
            "missing on one side fails"
        );
        assert_eq!(
            differing_keys(&e, &a),
            vec!["items".to_owned(), "order".to_owned()]
        );
        assert_eq!(ArgsMatch::from_value(&json!("SUPER_SET")).ok(), None);
        assert_eq!(
            ArgsMatch::from_value(&json!(" SubSet ")).ok(),
            Some(ArgsMatch::Subset)
        );
    }
}
