//! Resolving oracle parameters the way the harness does: a tool from `tool`, else `value`, else
//! `metadata.tool`; a text from `value`, else `metadata.value`; a limit from `limit`, else a
//! numeric `value`, else `metadata.limit` / `metadata.value`. Values are trimmed and blanks count
//! as not configured.

use crate::oracle::ConfigError;
use serde_json::Value;

use crate::oracle::spec::{OracleSpec, scalar_string};
use crate::trace::Phase;

fn configured(s: Option<String>) -> Option<String> {
    s.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}

/// The tool an oracle names, if configured.
pub(crate) fn tool(spec: &OracleSpec) -> Option<String> {
    string(spec, "tool")
        .or_else(|| configured(spec.get("value").and_then(scalar_string)))
        .or_else(|| configured(spec.metadata("tool")))
}

/// The text an oracle names, if configured.
pub(crate) fn text(spec: &OracleSpec) -> Option<String> {
    configured(spec.get("value").and_then(scalar_string))
        .or_else(|| configured(spec.metadata("value")))
}

/// A resolved limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Limit {
    /// Nothing configured.
    Missing,
    /// A valid limit (`0` included).
    Valid(u64),
    /// Configured but not a non-negative integer.
    Invalid(String),
}

/// A non-negative integer; a numeric string only with `strings` (the harness's `value`, which is
/// a string as often as not). A numeric parameter of this format written as a string (`"max":
/// "2"`) is a mistake, named, never read as the number.
fn integer(v: &Value, strings: bool) -> Option<Result<u64, String>> {
    match v {
        Value::Null => None,
        Value::Number(n) => Some(
            n.as_u64()
                .or_else(|| {
                    n.as_f64()
                        .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 9.0e15)
                        .map(|f| f as u64)
                })
                .ok_or_else(|| n.to_string()),
        ),
        Value::String(s) if s.trim().is_empty() => None,
        Value::String(s) if strings => Some(s.trim().parse::<u64>().map_err(|_| s.clone())),
        Value::String(s) => Some(Err(format!(
            "{} (a string: write the number without quotes)",
            Value::String(s.clone())
        ))),
        other => Some(Err(other.to_string())),
    }
}

/// The limit an oracle names: `limit`, else an integer or numeric-string `value`, else
/// `metadata.limit`, else `metadata.value`.
pub(crate) fn limit(spec: &OracleSpec) -> Limit {
    if let Some(r) = spec.get("limit").and_then(|v| integer(v, false)) {
        return match r {
            Ok(n) => Limit::Valid(n),
            Err(bad) => Limit::Invalid(bad),
        };
    }
    // `value` counts only when numeric: the harness falls through otherwise.
    if let Some(Ok(n)) = spec.get("value").and_then(|v| integer(v, true)) {
        return Limit::Valid(n);
    }
    for key in ["limit", "value"] {
        if let Some(m) = configured(spec.metadata(key)) {
            return match m.parse::<u64>() {
                Ok(n) => Limit::Valid(n),
                Err(_) => Limit::Invalid(m),
            };
        }
    }
    Limit::Missing
}

/// A count parameter (`max`, `max_errors`…): `None` when not given, an error naming it when it
/// is not a non-negative integer.
pub(crate) fn count(spec: &OracleSpec, name: &str) -> Result<Option<u64>, ConfigError> {
    match spec.get(name).and_then(|v| integer(v, false)) {
        None => Ok(None),
        Some(Ok(n)) => Ok(Some(n)),
        Some(Err(bad)) => Err(ConfigError::value(
            name,
            format!("`{name}` is `{bad}`, not a non-negative integer"),
        )),
    }
}

/// A `true`/`false` parameter; not given is `false`.
pub(crate) fn flag(spec: &OracleSpec, name: &str) -> bool {
    spec.get(name).and_then(Value::as_bool).unwrap_or(false)
}

/// A string parameter (`tool`, `path`, `kind`…), trimmed; blank counts as not configured.
pub(crate) fn string(spec: &OracleSpec, name: &str) -> Option<String> {
    configured(spec.get(name).and_then(Value::as_str).map(str::to_owned))
}

/// A string array parameter (e.g. `tools`), trimmed, blanks dropped.
pub(crate) fn string_list(spec: &OracleSpec, name: &str) -> Vec<String> {
    spec.get(name)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// The optional `phase` parameter (`preview` or `final`; blank counts as not configured).
pub(crate) fn phase(spec: &OracleSpec) -> Result<Option<Phase>, ConfigError> {
    match spec.get("phase") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Phase::parse(&s.trim().to_ascii_lowercase())
            .map(Some)
            .ok_or_else(|| {
                ConfigError::value(
                    "phase",
                    format!("`phase` `{s}` is not `preview` or `final`"),
                )
            }),
        Some(other) => Err(ConfigError::value(
            "phase",
            format!("`phase` `{other}` is not `preview` or `final`"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: &str) -> OracleSpec {
        OracleSpec::new(0, serde_json::from_str(json).unwrap())
    }

    #[test]
    fn tool_resolution_order() {
        for (json, want) in [
            (r#"{"tool":" web ","value":"x"}"#, Some("web")),
            (r#"{"tool":"  ","value":"x"}"#, Some("x")),
            (r#"{"value":42}"#, Some("42")),
            (r#"{"metadata":{"tool":"m"}}"#, Some("m")),
            (r#"{"Tool":"ci"}"#, Some("ci")),
            (r#"{"value":"","metadata":{"tool":" "}}"#, None),
        ] {
            assert_eq!(tool(&spec(json)).as_deref(), want, "{json}");
        }
    }

    #[test]
    fn text_resolution_order() {
        assert_eq!(
            text(&spec(r#"{"value":" demo "}"#)).as_deref(),
            Some("demo")
        );
        assert_eq!(
            text(&spec(r#"{"metadata":{"value":"m"}}"#)).as_deref(),
            Some("m")
        );
        assert_eq!(text(&spec(r#"{"value":" ","tool":"t"}"#)), None);
    }

    #[test]
    fn limit_resolution_order() {
        for (json, want) in [
            (r#"{"limit":0}"#, Limit::Valid(0)),
            (r#"{"limit":3,"value":9}"#, Limit::Valid(3)),
            (r#"{"value":"4"}"#, Limit::Valid(4)),
            (r#"{"value":2.0}"#, Limit::Valid(2)),
            (
                r#"{"value":"many","metadata":{"limit":"5"}}"#,
                Limit::Valid(5),
            ),
            (r#"{"metadata":{"value":"6"}}"#, Limit::Valid(6)),
            (r#"{"limit":-1}"#, Limit::Invalid("-1".into())),
            (
                r#"{"limit":"x"}"#,
                Limit::Invalid("\"x\" (a string: write the number without quotes)".into()),
            ),
            // A number written as a string is named, never read as the number.
            (
                r#"{"limit":"2"}"#,
                Limit::Invalid("\"2\" (a string: write the number without quotes)".into()),
            ),
            (r#"{}"#, Limit::Missing),
        ] {
            assert_eq!(limit(&spec(json)), want, "{json}");
        }
    }
}
