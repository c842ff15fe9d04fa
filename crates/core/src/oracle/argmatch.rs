//! Argument matchers: an expected argument written as an object of `$` keys says how the actual
//! value is compared, where a plain value is compared exactly (JSON equality: `5` equals `5.0`).
//!
//! | key | the actual value |
//! |---|---|
//! | `$eq` | equals this value, taken literally (an object with `$` keys of its own, too) |
//! | `$oneOf` | equals one of these values (BFCL's "possible answers") |
//! | `$regex` | is a string this Unicode-aware regular expression finds a match in |
//! | `$approx` with `$abs` and/or `$rel` | is a number within the absolute or relative tolerance |
//! | `$any` | anything (with `$type`, any value of that type) |
//! | `$text: true` | strings compared after normalisation ([`normal_text`]) |
//! | `$type` | is of this JSON type: `string`, `integer` (`3.0` is not), `number`, `boolean`, `array`, `object`, `null` |
//! | `$optional: true` | may be absent |
//! | `$default` | absent counts as this value (a parameter's default given explicitly is the same call) |
//!
//! At most one of `$eq`, `$oneOf`, `$regex`, `$approx` and `$any`; with none, the matcher
//! accepts any value its modifiers accept (`$default` alone: equals the default). Matchers may
//! stand at any depth of the expected arguments.

use serde_json::{Map, Value};

use super::jsoneq::json_eq;
use crate::oracle::ConfigError;

/// The keys a matcher may have.
const KEYS: [&str; 11] = [
    "$eq",
    "$oneOf",
    "$regex",
    "$approx",
    "$abs",
    "$rel",
    "$any",
    "$text",
    "$type",
    "$optional",
    "$default",
];

/// The JSON types `$type` names.
const TYPES: [&str; 7] = [
    "string", "integer", "number", "boolean", "array", "object", "null",
];

/// What the value must be.
enum Want<'v> {
    Eq(&'v Value),
    OneOf(&'v [Value]),
    Regex(&'v str),
    Approx { value: f64, abs: f64, rel: f64 },
    Any,
}

/// One matcher, borrowed from the expected arguments.
struct Matcher<'v> {
    want: Want<'v>,
    text: bool,
    ty: Option<&'v str>,
    optional: bool,
    default: Option<&'v Value>,
}

/// Whether `v` is written as a matcher: an object with a `$` key.
fn is_matcher(v: &Value) -> Option<&Map<String, Value>> {
    v.as_object()
        .filter(|m| m.keys().any(|k| k.starts_with('$')))
}

/// Whether `v` holds a matcher anywhere.
pub(crate) fn has_matchers(v: &Value) -> bool {
    has_key(v, &|k| k.starts_with('$'))
}

/// Whether `v` holds a `$type` matcher anywhere: the one matcher that tells values apart that
/// JSON equality holds equal (`3` and `3.0`).
pub(crate) fn has_type_matcher(v: &Value) -> bool {
    has_key(v, &|k| k == "$type")
}

fn has_key(v: &Value, key: &dyn Fn(&str) -> bool) -> bool {
    match v {
        Value::Object(m) => m.keys().any(|k| key(k)) || m.values().any(|x| has_key(x, key)),
        Value::Array(items) => items.iter().any(|x| has_key(x, key)),
        _ => false,
    }
}

impl<'v> Matcher<'v> {
    /// Reads a matcher object, or says what is wrong with it.
    fn read(m: &'v Map<String, Value>) -> Result<Matcher<'v>, String> {
        if let Some(plain) = m.keys().find(|k| !k.starts_with('$')) {
            return Err(format!(
                "mixes matcher keys (`$…`) with the plain key `{plain}`; to compare an object holding `$` keys as it is, write {{\"$eq\": …}}"
            ));
        }
        if let Some(unknown) = m.keys().find(|k| !KEYS.contains(&k.as_str())) {
            let meant = super::registry::closest(unknown, KEYS)
                .map(|k| format!("; did you mean `{k}`?"))
                .unwrap_or_default();
            return Err(format!("`{unknown}` is not a matcher key{meant}"));
        }
        let flag = |k: &str| match m.get(k) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(format!("`{k}` must be true or false")),
        };
        let number = |k: &str| match m.get(k) {
            None => Ok(None),
            Some(v) => match v.as_f64().filter(|f| f.is_finite()) {
                Some(f) => Ok(Some(f)),
                None => Err(format!("`{k}` must be a number")),
            },
        };
        let wants: Vec<&str> = ["$eq", "$oneOf", "$regex", "$approx", "$any"]
            .into_iter()
            .filter(|k| m.contains_key(*k))
            .collect();
        if wants.len() > 1 {
            return Err(format!(
                "give at most one of `$eq`, `$oneOf`, `$regex`, `$approx` and `$any`, not {}",
                wants.join(" and ")
            ));
        }
        let (abs, rel) = (number("$abs")?, number("$rel")?);
        if abs.is_some_and(|t| t < 0.0) || rel.is_some_and(|t| t < 0.0) {
            return Err("`$abs` and `$rel` must not be negative".into());
        }
        if (abs.is_some() || rel.is_some()) && !m.contains_key("$approx") {
            return Err("`$abs` and `$rel` are tolerances of `$approx`".into());
        }
        let default = m.get("$default");
        let want = match wants.first().copied() {
            Some("$eq") => Want::Eq(&m["$eq"]),
            Some("$oneOf") => match &m["$oneOf"] {
                Value::Array(items) if !items.is_empty() => Want::OneOf(items),
                _ => return Err("`$oneOf` must be a non-empty array of values".into()),
            },
            Some("$regex") => {
                // Compiled by `validate` (once, when the oracle is configured) and by
                // `regex_matches` (once per thread): reading a matcher, as every comparison does,
                // compiles nothing.
                let pattern = m["$regex"].as_str().ok_or("`$regex` must be a string")?;
                Want::Regex(pattern)
            }
            Some("$approx") => {
                let value = number("$approx")?.ok_or("`$approx` must be a number")?;
                if abs.is_none() && rel.is_none() {
                    return Err("`$approx` needs a tolerance: `$abs`, `$rel` or both".into());
                }
                Want::Approx {
                    value,
                    abs: abs.unwrap_or(0.0),
                    rel: rel.unwrap_or(0.0),
                }
            }
            Some(_) => match flag("$any")? {
                true => Want::Any,
                false => return Err("`$any` must be true (leave it out otherwise)".into()),
            },
            None => match default {
                Some(d) => Want::Eq(d),
                None => Want::Any,
            },
        };
        let ty = match m.get("$type") {
            None => None,
            Some(Value::String(t)) if TYPES.contains(&t.as_str()) => Some(t.as_str()),
            Some(other) => {
                return Err(format!(
                    "`$type` must be one of {}, not {other}",
                    TYPES.join(", ")
                ));
            }
        };
        let matcher = Matcher {
            want,
            text: flag("$text")?,
            ty,
            optional: flag("$optional")?,
            default,
        };
        if matcher.optional && default.is_some() {
            return Err("`$default` already lets the argument be absent: drop `$optional`".into());
        }
        if matcher.text && matches!(matcher.want, Want::Regex(_) | Want::Approx { .. }) {
            return Err("`$text` normalises what `$eq`, `$oneOf` and `$default` compare; a `$regex` or `$approx` compares the value as it is".into());
        }
        if let Some(d) = default.filter(|d| !matcher.accepts_present(d)) {
            return Err(format!(
                "its `$default` {d} does not pass the matcher itself"
            ));
        }
        Ok(matcher)
    }

    /// Whether the actual value (or its absence) passes.
    fn accepts(&self, actual: Option<&Value>) -> bool {
        match (actual, self.default) {
            (Some(a), _) => self.accepts_present(a),
            (None, Some(d)) => self.accepts_present(d),
            (None, None) => self.optional,
        }
    }

    fn accepts_present(&self, a: &Value) -> bool {
        if self.ty.is_some_and(|t| !of_type(t, a)) {
            return false;
        }
        let eq = |e: &Value| self.equal(e, a);
        match &self.want {
            Want::Eq(e) => eq(e),
            Want::OneOf(items) => items.iter().any(eq),
            Want::Regex(p) => a.as_str().is_some_and(|s| regex_matches(p, s)),
            Want::Approx { value, abs, rel } => a.as_f64().is_some_and(|x| {
                let d = (x - value).abs();
                d <= *abs || d <= rel * value.abs()
            }),
            Want::Any => true,
        }
    }

    /// Whether `a` equals `e` as the matcher compares values (strings normalised with
    /// `$text`).
    fn equal(&self, e: &Value, a: &Value) -> bool {
        match (self.text, e, a) {
            (true, Value::String(x), Value::String(y)) => normal_text(x) == normal_text(y),
            _ => json_eq(e, a),
        }
    }

    /// How the matcher decided on `actual`, for a report.
    fn describe(&self, actual: Option<&Value>) -> String {
        let ok = self.accepts(actual);
        let Some(a) = actual else {
            return match (self.default, self.optional) {
                (Some(d), _) if ok => format!("absent, which counts as its default {d}"),
                (Some(d), _) => format!("absent, and its default {d} does not pass"),
                (None, true) => "absent, which it may be".to_owned(),
                (None, false) => "absent".to_owned(),
            };
        };
        if let Some(t) = self.ty.filter(|t| !of_type(t, a)) {
            return format!("{a} is not of type {t}");
        }
        let verb = if ok { "matched" } else { "did not match" };
        match &self.want {
            Want::Eq(e) if self.text => format!("{a} {verb} {e} after normalisation"),
            Want::Eq(e) => format!("{a} {verb} {e}"),
            Want::OneOf(items) => {
                let list = Value::Array(items.to_vec());
                let after = if self.text {
                    " after normalisation"
                } else {
                    ""
                };
                let matched = (items.iter()).find(|e| self.equal(e, a));
                match (matched, self.text) {
                    (Some(e), true) => format!("{a} matched {e} after normalisation"),
                    (Some(_), false) => format!("{a} is one of {list}"),
                    (None, _) => format!("{a} is none of {list}{after}"),
                }
            }
            Want::Regex(p) => format!("{a} {verb} /{p}/"),
            Want::Approx { value, abs, rel } => {
                let within = if ok { "within" } else { "outside" };
                format!("{a} is {within} the tolerance of {value} (abs {abs}, rel {rel})")
            }
            Want::Any if self.ty.is_some() => format!("{a} is of type {}", self.ty.unwrap_or("")),
            Want::Any => format!("{a} is accepted as anything"),
        }
    }
}

/// Whether `v` is of the JSON type `t` (`integer`: a number written without a fraction or
/// exponent, so `3.0` is not one).
fn of_type(t: &str, v: &Value) -> bool {
    match (t, v) {
        ("string", Value::String(_)) | ("boolean", Value::Bool(_)) => true,
        ("array", Value::Array(_)) | ("object", Value::Object(_)) | ("null", Value::Null) => true,
        ("number", Value::Number(_)) => true,
        ("integer", Value::Number(n)) => n.is_i64() || n.is_u64(),
        _ => false,
    }
}

/// Text as `$text` compares it: Unicode NFKC, invisible format characters removed, lowercased
/// ([`crate::trace::json::normalise_text`]), then every whitespace and punctuation character
/// (Unicode categories `Z*` and `P*`: spaces, `,` `.` `-` `_` `/` `'` `"` `*` …) removed — as
/// BFCL standardises strings before comparing them.
pub(crate) fn normal_text(s: &str) -> String {
    static DROP: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"[\s\p{P}]+").expect("a valid pattern"));
    DROP.replace_all(&crate::trace::json::normalise_text(s), "")
        .into_owned()
}

/// Whether `pattern` finds a match in `s`; compiled once per thread.
fn regex_matches(pattern: &str, s: &str) -> bool {
    thread_local! {
        static CACHE: std::cell::RefCell<foldhash::HashMap<String, Option<regex::Regex>>> =
            Default::default();
    }
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.len() > 256 {
            cache.clear();
        }
        let compiled = cache
            .entry(pattern.to_owned())
            .or_insert_with(|| regex::Regex::new(pattern).ok());
        compiled.as_ref().is_some_and(|r| r.is_match(s))
    })
}

/// Checks every matcher in expected arguments `v`; `at` names them in the error
/// (`args.sport`).
pub(crate) fn validate(v: &Value, at: &str) -> Result<(), ConfigError> {
    if let Some(m) = is_matcher(v) {
        let checked = Matcher::read(m).and_then(|m| match m.want {
            Want::Regex(p) => regex::Regex::new(p)
                .map(drop)
                .map_err(|e| format!("`$regex` does not compile: {e}")),
            _ => Ok(()),
        });
        return checked.map_err(|e| ConfigError::value(at, format!("`{at}`: {e}")));
    }
    match v {
        Value::Object(m) => (m.iter()).try_for_each(|(k, x)| validate(x, &format!("{at}.{k}"))),
        Value::Array(items) => {
            (items.iter().enumerate()).try_for_each(|(i, x)| validate(x, &format!("{at}.{i}")))
        }
        _ => Ok(()),
    }
}

/// Whether the actual value `actual` (absent: `None`) passes the expected `expected`, which may
/// be or hold matchers; a plain object needs the same keys (those its matchers let be absent
/// aside), a plain array the same length.
pub(crate) fn value_matches(expected: &Value, actual: Option<&Value>) -> bool {
    if let Some(m) = is_matcher(expected) {
        return Matcher::read(m).is_ok_and(|m| m.accepts(actual));
    }
    let Some(actual) = actual else {
        return false;
    };
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            e.iter().all(|(k, x)| value_matches(x, a.get(k))) && a.keys().all(|k| e.contains_key(k))
        }
        (Value::Array(e), Value::Array(a)) => {
            e.len() == a.len() && e.iter().zip(a).all(|(x, y)| value_matches(x, Some(y)))
        }
        _ => json_eq(expected, actual),
    }
}

/// [`value_matches`] under `partial`: keys of plain objects need only be in `actual`.
pub(crate) fn partial_matches(expected: &Value, actual: Option<&Value>) -> bool {
    if is_matcher(expected).is_some() {
        return value_matches(expected, actual);
    }
    let Some(actual) = actual else {
        return false;
    };
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e.iter().all(|(k, x)| partial_matches(x, a.get(k))),
        (Value::Array(e), Value::Array(a)) => {
            e.len() == a.len() && e.iter().zip(a).all(|(x, y)| partial_matches(x, Some(y)))
        }
        _ => json_eq(expected, actual),
    }
}

/// How each top-level matcher of `expected` decided on `actual`'s value: ``"`sport`: "TENNIS"
/// matched "tennis" after normalisation"``, in key order.
pub(crate) fn decisions(expected: &Value, actual: &Value) -> Vec<String> {
    let Some(e) = expected
        .as_object()
        .filter(|_| is_matcher(expected).is_none())
    else {
        return Vec::new();
    };
    (e.iter())
        .filter_map(|(k, x)| {
            let m = Matcher::read(is_matcher(x)?).ok()?;
            Some(format!("`{k}`: {}", m.describe(actual.get(k))))
        })
        .collect()
}

#[cfg(test)]
#[path = "argmatch_tests.rs"]
mod tests;
