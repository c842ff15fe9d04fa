//! Trial ids (`header.trial`): which recording of a case a trace is.
//!
//! A trial is a non-negative integer below 2⁵³ or a string of 1–64 bytes of `[A-Za-z0-9._-]`;
//! an integer equals its decimal string. Trials order with all-digit ids (no leading zero)
//! first, numerically, then the rest bytewise.

use std::cmp::Ordering;

/// The largest integer a trial may be, plus one (2⁵³: every such integer is exact in JSON
/// readers that use doubles).
const INTEGER_LIMIT: u64 = 1 << 53;

/// A trial id, held as its string form (`1` and `"1"` are the same trial).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TrialId(String);

impl TrialId {
    /// Reads a header's `trial` value from its JSON text (a number or a string); the error says
    /// what is wrong with it.
    pub fn from_json(text: &str) -> Result<TrialId, String> {
        let text = text.trim();
        if text.starts_with('"') {
            let s: String = serde_json::from_str(text)
                .map_err(|_| "header `trial` is not a valid JSON string".to_owned())?;
            return TrialId::parse(&s);
        }
        if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
            let n: u64 = text
                .parse()
                .map_err(|_| "header `trial` is an integer of 2^53 or more".to_owned())?;
            if n >= INTEGER_LIMIT {
                return Err("header `trial` is an integer of 2^53 or more".to_owned());
            }
            if text.len() > 1 && text.starts_with('0') {
                return Err("header `trial` is not a valid JSON number".to_owned());
            }
            return Ok(TrialId(n.to_string()));
        }
        let found = match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Number(n)) if n.as_i64().is_some_and(|n| n < 0) => {
                "a negative integer"
            }
            Ok(serde_json::Value::Number(_)) => "a number with a fraction or exponent",
            Ok(v) => crate::json_type_name(&v),
            Err(_) => "something else",
        };
        Err(format!(
            "header `trial` must be a non-negative integer below 2^53 or a string of 1-64 characters of [A-Za-z0-9._-], found {found}"
        ))
    }

    /// A trial id given as text (`--trial ID`, a string in a header).
    pub fn parse(s: &str) -> Result<TrialId, String> {
        let valid = (1..=64).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if valid {
            Ok(TrialId(s.to_owned()))
        } else {
            Err(format!(
                "trial `{}` must be 1-64 characters of [A-Za-z0-9._-]",
                s.escape_debug()
            ))
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether it is written as a JSON integer (all digits, no leading zero, below 2⁵³).
    pub fn is_integer(&self) -> bool {
        is_number(&self.0) && self.0.parse::<u64>().is_ok_and(|n| n < INTEGER_LIMIT)
    }
}

impl std::fmt::Display for TrialId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl serde::Serialize for TrialId {
    /// An integer id as a JSON number, any other as a string.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0.parse::<u64>() {
            Ok(n) if self.is_integer() => s.serialize_u64(n),
            _ => s.serialize_str(&self.0),
        }
    }
}

fn is_number(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'))
}

/// The order of trials: all-digit ids without a leading zero first, numerically (by length,
/// then bytes), then the rest bytewise.
pub fn order(a: &str, b: &str) -> Ordering {
    match (is_number(a), is_number(b)) {
        (true, true) => a.len().cmp(&b.len()).then_with(|| a.cmp(b)),
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (false, false) => a.as_bytes().cmp(b.as_bytes()),
    }
}

/// The key that sorts absent trials first, then by [`order`]: bytes a plain bytewise sort
/// puts in trial order.
pub fn sort_key(trial: Option<&[u8]>) -> Vec<u8> {
    match trial {
        None => Vec::new(),
        Some(t) => {
            let s = std::str::from_utf8(t).unwrap_or("");
            let mut key = Vec::with_capacity(t.len() + 3);
            if is_number(s) {
                key.push(1);
                key.push(u8::try_from(s.len()).unwrap_or(u8::MAX));
            } else {
                key.push(2);
            }
            key.extend_from_slice(t);
            key
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_equal_their_decimal_strings_and_bad_values_are_refused() {
        assert_eq!(
            TrialId::from_json("1").unwrap(),
            TrialId::from_json("\"1\"").unwrap()
        );
        assert_eq!(TrialId::from_json("0").unwrap().as_str(), "0");
        assert_eq!(
            TrialId::from_json("9007199254740991").unwrap().as_str(),
            "9007199254740991"
        );
        for bad in [
            "9007199254740992",
            "-1",
            "1.0",
            "1e3",
            "true",
            "null",
            "[1]",
            "\"\"",
            "\"a b\"",
            "\"é\"",
            "{}",
        ] {
            assert!(TrialId::from_json(bad).is_err(), "{bad}");
        }
        let long = format!("\"{}\"", "a".repeat(64));
        assert!(TrialId::from_json(&long).is_ok());
        let longer = format!("\"{}\"", "a".repeat(65));
        assert!(TrialId::from_json(&longer).is_err());
        assert!(TrialId::from_json("1.5").unwrap_err().contains("fraction"));
    }

    #[test]
    fn numbers_come_first_numerically_then_the_rest_bytewise() {
        let mut ids = vec!["b", "10", "2", "01", "A", "0", "a", "1x"];
        ids.sort_by(|a, b| order(a, b));
        assert_eq!(ids, ["0", "2", "10", "01", "1x", "A", "a", "b"]);
        let mut keyed = vec!["b", "10", "2", "01", "A", "0", "a", "1x"];
        keyed.sort_by_key(|t| sort_key(Some(t.as_bytes())));
        assert_eq!(keyed, ids);
        assert!(sort_key(None) < sort_key(Some(b"0")));
    }

    #[test]
    fn integer_ids_are_written_as_numbers() {
        let json = |s: &str| serde_json::to_string(&TrialId::parse(s).unwrap()).unwrap();
        assert_eq!(json("3"), "3");
        assert_eq!(json("03"), "\"03\"");
        assert_eq!(json("a"), "\"a\"");
    }
}
