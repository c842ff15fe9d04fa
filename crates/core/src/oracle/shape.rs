//! The JSON shapes oracle parameters take (see [`super::registry`]).

use serde_json::Value;

/// The JSON shape a parameter takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A string.
    Str,
    /// A string, number or boolean (the harness stringifies them).
    Scalar,
    /// A non-negative integer, or a string holding one.
    Count,
    /// `true` or `false`.
    Bool,
    /// An array of strings.
    StrList,
    /// An object.
    Object,
    /// An array of expected calls, each `{tool, args?}`.
    Calls,
    /// An array of arrays (per turn or per inference).
    Lists,
    /// An array of oracle objects.
    Oracles,
    /// A number.
    Number,
    /// An integer.
    Int,
    /// Any JSON value.
    Any,
}

impl Shape {
    pub(super) fn describe(self) -> &'static str {
        match self {
            Shape::Str => "a string",
            Shape::Scalar => "a string, number or boolean",
            Shape::Count => "a non-negative integer",
            Shape::Bool => "true or false",
            Shape::StrList => "an array of strings",
            Shape::Object => "an object",
            Shape::Calls => "an array of calls (`{\"tool\": …, \"args\"?: …}`)",
            Shape::Lists => "an array of arrays",
            Shape::Oracles => "an array of oracle objects",
            Shape::Number => "a number",
            Shape::Int => "an integer",
            Shape::Any => "any JSON value",
        }
    }

    pub(super) fn fits(self, v: &Value) -> bool {
        match (self, v) {
            (Shape::Any, _) => true,
            (Shape::Str, Value::String(_)) | (Shape::Bool, Value::Bool(_)) => true,
            (Shape::Scalar, Value::String(_) | Value::Number(_) | Value::Bool(_)) => true,
            (Shape::Count, Value::Number(n)) => {
                n.as_u64().is_some() || n.as_f64().is_some_and(|f| f >= 0.0 && f.fract() == 0.0)
            }
            (Shape::Count, Value::String(s)) => s.trim().parse::<u64>().is_ok(),
            (Shape::StrList, Value::Array(items)) => items.iter().all(Value::is_string),
            (Shape::Object, Value::Object(_)) | (Shape::Calls, Value::Array(_)) => true,
            (Shape::Lists, Value::Array(items)) => items.iter().all(Value::is_array),
            (Shape::Oracles, Value::Array(items)) => items.iter().all(Value::is_object),
            (Shape::Number, Value::Number(_)) => true,
            (Shape::Int, Value::Number(n)) => n.as_i64().is_some(),
            _ => false,
        }
    }
}
