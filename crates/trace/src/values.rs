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
/// string (the common tool output) is its own canonical form when it has no escape, and is
/// otherwise only decoded and written again; anything else is parsed and made canonical.
pub fn recorded_result_hash(output: &crate::Json<'_>) -> String {
    let raw = output.raw();
    if raw.len() <= super::json::LARGE_VALUE_BYTES && raw.starts_with('"') {
        if !raw.contains('\\') {
            return format!("b3:{}", blake3::hash(raw.as_bytes()).to_hex());
        }
        if let Ok(text) = serde_json::from_str::<String>(raw) {
            return hash_json(&text);
        }
    }
    result_hash(&output.value())
}

/// Paths compare after stripping `./` and turning `\` into `/`.
pub fn normalize_artifact_path(p: &str) -> String {
    let mut s = p.replace('\\', "/");
    while let Some(rest) = s.strip_prefix("./") {
        s = rest.to_owned();
    }
    s
}
