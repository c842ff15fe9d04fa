//! Saying what is wrong with a trace line by key and expected shape, never by its values.
//!
//! A trace's values may be raw prompt text or secrets, and an error message travels far: into
//! every report format, the run folder, the result cache, `explain`, `diff` and `pack`'s refusal.
//! serde's own messages quote the offending value (`invalid type: string "…", expected u64`), so
//! a line that fails the typed parse is described here instead, from its keys and JSON types.

use serde_json::Value;

/// What a field must hold.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Want {
    /// A string.
    Str,
    /// A non-negative integer.
    UInt,
    /// An integer.
    Int,
    /// A non-negative number.
    Number,
    /// `true` or `false`.
    Bool,
    /// An array of strings.
    StrList,
    /// A string→string object.
    StrMap,
    /// An object of these fields.
    Object(&'static [(&'static str, Want)]),
    /// An array of objects of these fields.
    ObjectList(&'static [(&'static str, Want)]),
    /// Anything.
    Any,
}

impl Want {
    fn describe(self) -> &'static str {
        match self {
            Want::Str => "a string",
            Want::UInt => "a non-negative integer",
            Want::Int => "an integer",
            Want::Number => "a non-negative number",
            Want::Bool => "true or false",
            Want::StrList => "an array of strings",
            Want::StrMap => "an object of strings",
            Want::Object(_) => "an object",
            Want::ObjectList(_) => "an array of objects",
            Want::Any => "any JSON value",
        }
    }
}

const PROMPT: &[(&str, Want)] = &[("h", Want::Str), ("len", Want::UInt)];
const USAGE: &[(&str, Want)] = &[
    ("input_tokens", Want::UInt),
    ("output_tokens", Want::UInt),
    ("cache_read_tokens", Want::UInt),
    ("reasoning_tokens", Want::UInt),
    ("cost_usd", Want::Number),
];
const PLANNED: &[(&str, Want)] = &[
    ("call_id", Want::Str),
    ("tool", Want::Str),
    ("args", Want::Any),
];
/// An inference's `output`.
pub(crate) const OUTPUT: &[(&str, Want)] = &[
    ("text", Want::Str),
    ("tool_calls", Want::ObjectList(PLANNED)),
];

/// Every field an event of a known kind may carry, as the reader types it.
pub(crate) const EVENT: &[(&str, Want)] = &[
    ("kind", Want::Str),
    ("seq", Want::UInt),
    ("ts_ms", Want::Int),
    ("id", Want::Str),
    ("prompt", Want::Object(PROMPT)),
    ("request_id", Want::Str),
    ("model", Want::Str),
    ("input_h", Want::Str),
    ("system_h", Want::Str),
    ("tools_offered", Want::StrList),
    ("consumes", Want::StrList),
    ("output", Want::Any),
    ("usage", Want::Object(USAGE)),
    ("finish", Want::Str),
    ("truncated", Want::Bool),
    ("call_id", Want::Str),
    ("tool", Want::Str),
    ("args", Want::Any),
    ("ok", Want::Bool),
    ("output_h", Want::Str),
    ("error", Want::Str),
    ("approval_id", Want::Str),
    ("reason", Want::Str),
    ("granted", Want::Bool),
    ("by", Want::Str),
    ("phase", Want::Str),
    ("text", Want::Str),
    ("reply_to", Want::Str),
    ("channel", Want::Str),
    ("path", Want::Str),
    ("h", Want::Str),
    ("bytes", Want::UInt),
    ("mtime_ms", Want::Int),
    ("from", Want::Any),
    ("to", Want::Any),
    ("message", Want::Str),
    ("code", Want::Any),
    ("status", Want::Str),
];

const RUNTIME: &[(&str, Want)] = &[("name", Want::Str), ("version", Want::Str)];
const PRIVACY: &[(&str, Want)] = &[
    ("prompts", Want::Str),
    ("hash", Want::Str),
    ("kid", Want::Str),
];
/// The header's typed fields.
pub(crate) const HEADER: &[(&str, Want)] = &[
    ("kind", Want::Str),
    ("format", Want::Str),
    ("version", Want::Any),
    ("scenario", Want::Str),
    ("case", Want::Str),
    ("runtime", Want::Object(RUNTIME)),
    ("model", Want::Str),
    ("privacy", Want::Object(PRIVACY)),
    ("recorded_at", Want::Str),
    ("source", Want::Str),
    ("labels", Want::StrMap),
];

/// `a string`, `an integer`…: the JSON type of `v`, for "found …".
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_u64() => "a non-negative integer",
        Value::Number(n) if n.is_i64() => "a negative integer",
        Value::Number(_) => "a number with a fraction or exponent",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn fits(v: &Value, want: Want) -> bool {
    match (want, v) {
        // Optional fields may be `null` (read as absent).
        (_, Value::Null) | (Want::Any, _) => true,
        (Want::Str, Value::String(_)) | (Want::Bool, Value::Bool(_)) => true,
        (Want::UInt, Value::Number(n)) => n.is_u64(),
        (Want::Int, Value::Number(n)) => n.is_i64() || n.is_u64(),
        (Want::Number, Value::Number(n)) => n.as_f64().is_some_and(|f| f >= 0.0),
        (Want::StrList, Value::Array(items)) => items.iter().all(Value::is_string),
        (Want::StrMap, Value::Object(m)) => m.values().all(Value::is_string),
        (Want::Object(_), Value::Object(_)) | (Want::ObjectList(_), Value::Array(_)) => true,
        _ => false,
    }
}

/// The first field of `obj` (at `prefix`) that does not have the shape `fields` gives it.
fn misfit(
    obj: &serde_json::Map<String, Value>,
    fields: &[(&str, Want)],
    prefix: &str,
) -> Option<String> {
    for (name, want) in fields {
        let Some(v) = obj.get(*name) else { continue };
        let at = format!("{prefix}{name}");
        if !fits(v, *want) {
            let found = match (want, v) {
                (Want::StrList, Value::Array(_)) => "an array holding something other than strings",
                (Want::StrMap, Value::Object(_)) => {
                    "an object holding something other than strings"
                }
                _ => type_name(v),
            };
            return Some(format!("`{at}` must be {}, found {found}", want.describe()));
        }
        match (want, v) {
            (Want::Object(inner), Value::Object(o)) => {
                if let Some(m) = misfit(o, inner, &format!("{at}.")) {
                    return Some(m);
                }
            }
            (Want::ObjectList(inner), Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    let Value::Object(o) = item else {
                        return Some(format!(
                            "`{at}[{i}]` must be an object, found {}",
                            type_name(item)
                        ));
                    };
                    if let Some(m) = misfit(o, inner, &format!("{at}[{i}].")) {
                        return Some(m);
                    }
                }
            }
            _ => {}
        }
    }
    None
}

/// What is wrong with `line`, which serde could not read as `fields` describe it, in words that
/// never quote a value of the line: serde's message for a JSON syntax error (those name only
/// positions and tokens), or for a type error the first key whose JSON type is wrong and the
/// type it must have. The position suffix serde adds is replaced by the column alone (the caller
/// names the trace line).
pub(crate) fn describe(line: &str, e: &serde_json::Error, fields: &[(&str, Want)]) -> String {
    let column = e.column();
    let message = super::json::message_without_position(e);
    if !e.is_data() {
        return format!("{message} (column {column})");
    }
    // "missing field `x`" and "duplicate field `x`" name a field, never a value.
    if ["missing field `", "duplicate field `"]
        .iter()
        .any(|fixed| message.starts_with(fixed))
    {
        return message;
    }
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(obj)) => misfit(&obj, fields, "")
            .unwrap_or_else(|| "a field has a value of the wrong type".to_owned()),
        Ok(other) => format!("must be a JSON object, found {}", type_name(&other)),
        Err(_) => "not valid JSON".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct Typed {
        seq: Option<u64>,
        prompt: Option<Prompt>,
        tools_offered: Option<Vec<String>>,
    }

    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct Prompt {
        h: String,
        len: Option<u64>,
    }

    fn described(line: &str) -> String {
        let e = serde_json::from_str::<Typed>(line).err().expect("fails");
        describe(line, &e, EVENT)
    }

    #[test]
    fn type_errors_name_the_key_and_shape_never_the_value() {
        for (line, want) in [
            (
                r#"{"seq":"SECRET VALUE"}"#,
                "`seq` must be a non-negative integer, found a string",
            ),
            (
                r#"{"seq":1.5}"#,
                "`seq` must be a non-negative integer, found a number with a fraction or exponent",
            ),
            (
                r#"{"prompt":"SECRET VALUE"}"#,
                "`prompt` must be an object, found a string",
            ),
            (
                r#"{"prompt":{"h":7}}"#,
                "`prompt.h` must be a string, found a non-negative integer",
            ),
            (
                r#"{"tools_offered":["a",{"SECRET":"VALUE"}]}"#,
                "`tools_offered` must be an array of strings, found an array holding something other than strings",
            ),
            (r#"{"prompt":{}}"#, "missing field `h`"),
            (r#"{"seq":1,"seq":2}"#, "duplicate field `seq`"),
        ] {
            let got = described(line);
            assert_eq!(got, want, "{line}");
            assert!(!got.contains("SECRET"), "{got}");
        }
        let syntax = described(r#"{"seq": SECRET"#);
        assert!(syntax.starts_with("expected value (column"), "{syntax}");
    }
}
