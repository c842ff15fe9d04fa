//! How recorded values compare: numbers in one canonical form, a tool result by the hash of its
//! canonical JSON, artifact paths with one separator. Baselines and oracles compare by these.

use serde_json::Value;

/// [`canonical`] of a value the caller owns, rewritten where it is (no copy).
pub fn make_canonical(v: &mut Value) {
    match v {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(0.0);
            if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 {
                *v = Value::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(make_canonical),
        Value::Object(m) => m.values_mut().for_each(make_canonical),
        _ => {}
    }
}

/// Rewrites numbers canonically: integral floats become integers, `-0` becomes `0`.
pub fn canonical(v: &Value) -> Value {
    match v {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(0.0);
            if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 {
                Value::from(f as i64)
            } else {
                v.clone()
            }
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        Value::Object(m) => {
            Value::Object(m.iter().map(|(k, v)| (k.clone(), canonical(v))).collect())
        }
        other => other.clone(),
    }
}

/// The hash a tool result's content is compared by: `b3:` of its canonical JSON (sorted keys,
/// canonical numbers; a large part is already its own `b3:` summary), written straight into
/// the hasher.
pub fn result_hash(output: &Value) -> String {
    hash_json(&canonical(output))
}

/// `b3:` of `v`'s compact JSON. The serializer writes a few bytes at a time; they reach the
/// hasher in blocks, since each `update` costs far more than the bytes it adds.
fn hash_json<T: serde::Serialize + ?Sized>(v: &T) -> String {
    let mut h = blake3::Hasher::new();
    let mut w = std::io::BufWriter::with_capacity(8 << 10, &mut h);
    // Writing JSON into a hasher cannot fail.
    let _ = serde_json::to_writer(&mut w, v);
    let _ = std::io::Write::flush(&mut w);
    drop(w);
    format!("b3:{}", h.finalize().to_hex())
}

/// [`result_hash`] of a recorded result, parsing no more of it than it must: a small JSON
/// string (the common tool output) is its own canonical form when its escapes are those compact
/// JSON writes, and is otherwise only decoded and written again; anything else is parsed and
/// made canonical.
pub fn recorded_result_hash(output: &crate::Json<'_>) -> String {
    let raw = output.raw();
    if raw.len() <= super::json::LARGE_VALUE_BYTES && raw.starts_with('"') {
        if escaped_canonically(raw) {
            return format!("b3:{}", blake3::hash(raw.as_bytes()).to_hex());
        }
        if let Ok(text) = serde_json::from_str::<String>(raw) {
            return hash_json(&text);
        }
    }
    result_hash(&output.value())
}

/// Whether the raw text of a JSON string is exactly what compact JSON writes for it: its only
/// escapes are serde_json's — `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, and `\u00xx` in lowercase
/// hex for the other control characters. (`\/`, `\u0041`, `\u000a` or `\u001F` decode to the
/// same string but are written otherwise.)
fn escaped_canonically(raw: &str) -> bool {
    let mut rest = raw.as_bytes();
    // From one backslash to the next (most results have few or none).
    while let Some(at) = memchr::memchr(b'\\', rest) {
        let escape = &rest[at + 1..];
        let length = match escape.first() {
            Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => 1,
            Some(b'u') => {
                let digit = |i: usize| match escape.get(i) {
                    Some(d @ b'0'..=b'9') => Some(d - b'0'),
                    Some(d @ b'a'..=b'f') => Some(d - b'a' + 10),
                    _ => None,
                };
                let (Some(0), Some(0), Some(high @ 0..=1), Some(low)) =
                    (digit(1), digit(2), digit(3), digit(4))
                else {
                    return false;
                };
                // These five have short escapes, which compact JSON writes instead.
                if matches!(high * 16 + low, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d) {
                    return false;
                }
                5
            }
            _ => return false,
        };
        rest = &escape[length..];
    }
    true
}

/// Paths compare after stripping `./` and turning `\` into `/`.
pub fn normalize_artifact_path(p: &str) -> String {
    let mut s = p.replace('\\', "/");
    while let Some(rest) = s.strip_prefix("./") {
        s = rest.to_owned();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A recorded string is hashed from its raw text only when that text is what compact JSON
    /// writes; the hash is the same either way.
    #[test]
    fn a_recorded_strings_hash_is_its_canonical_jsons_whatever_its_escapes() {
        let canonical_hash = |raw: &str| {
            let text: String = serde_json::from_str(raw).unwrap();
            result_hash(&Value::String(text))
        };
        let recorded = |raw: &str| {
            let value = serde_json::value::RawValue::from_string(raw.to_owned()).unwrap();
            recorded_result_hash(&crate::Json::from_raw(value))
        };
        // Every control character, quotes, backslashes, a slash, DEL and non-ASCII text, as
        // compact JSON writes them: canonical already.
        let mut every: String = (0u8..0x20).map(char::from).collect();
        every.push_str("\"\\/\u{7f}é😀 plain");
        for text in [every.as_str(), "", "a\nb", "tab\there", "\u{1}\u{1f}"] {
            let raw = serde_json::to_string(text).unwrap();
            assert!(escaped_canonically(&raw), "{raw}");
            assert_eq!(recorded(&raw), canonical_hash(&raw), "{raw}");
        }
        // The same strings written otherwise: decoded and written again.
        for raw in [
            r#""\/""#,
            r#""\u0041""#,
            r#""\u000a""#,
            r#""\u001F""#,
            r#""\u00e9""#,
            r#""\ud83d\ude00""#,
            r#""\u0009""#,
        ] {
            assert!(!escaped_canonically(raw), "{raw}");
            assert_eq!(recorded(raw), canonical_hash(raw), "{raw}");
        }
        assert!(escaped_canonically(r#""\u001f\u0000""#));
    }
}
