//! The credentials a request carries, and their removal from everything a recording writes:
//! header values named as credentials, cookie pairs, credential-named query parameters —
//! redacted in every spelling an upstream or a tool may write them back in.

use std::collections::BTreeSet;

use axum::http::HeaderMap;
use serde_json::Value;

/// Headers that carry credentials: forwarded, never written. (Any header whose name says
/// key, token, secret, auth or cookie counts too.)
fn is_credential(name: &str) -> bool {
    ["key", "token", "secret", "auth", "cookie", "signature"]
        .iter()
        .any(|w| name.contains(w))
}

/// The shortest value taken for a credential: shorter ones carry no secret worth the name, and
/// replacing them would garble what is recorded (a one-letter "key" would redact every `a`).
const SHORTEST_CREDENTIAL: usize = 4;

/// The credential values a request carries (longest first): those of headers named as
/// credentials (a bearer token's token too; each `name=value` of a cookie, and its value), and
/// of credential-named query parameters (`?key=…`, `&api_key=…`, `&sig=…`).
pub(crate) fn credentials(headers: &HeaderMap, query: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut take = |c: &str| {
        let c = c.trim();
        if c.len() >= SHORTEST_CREDENTIAL {
            out.push(c.to_owned());
        }
    };
    for (name, value) in headers {
        if !is_credential(name.as_str()) {
            continue;
        }
        let Ok(v) = value.to_str() else { continue };
        take(v);
        if let Some((_, token)) = v.split_once(' ') {
            take(token);
        }
        if name.as_str().contains("cookie") {
            for pair in v.split(';') {
                take(pair);
                if let Some((_, value)) = pair.split_once('=') {
                    take(value);
                }
            }
        }
    }
    for pair in query.unwrap_or("").split('&') {
        let Some((name, value)) = pair.split_once('=') else {
            continue;
        };
        let name = name.to_ascii_lowercase();
        if is_credential(&name) || ["sig", "password", "pass", "pwd"].contains(&name.as_str()) {
            take(value);
            take(&super::named::decode(value, true));
        }
    }
    out.sort_by_key(|c| std::cmp::Reverse(c.len()));
    out.dedup();
    out
}

/// The spellings a credential may take in what an upstream or a tool writes back: as sent; JSON
/// string-escaped (quotes and backslashes), with `/` as `\/` too; every character but letters and
/// digits as a `\uXXXX` escape (lowercase or uppercase hex); percent-encoded.
fn spellings(secret: &str) -> Vec<String> {
    let json = serde_json::to_string(secret).unwrap_or_default();
    let json = json[1..json.len().saturating_sub(1).max(1)].to_owned();
    let unicode = |upper: bool| -> String {
        (secret.chars())
            .map(|c| match c.is_ascii_alphanumeric() {
                true => c.to_string(),
                false if upper => format!("\\u{:04X}", c as u32),
                false => format!("\\u{:04x}", c as u32),
            })
            .collect()
    };
    let percent: String = (secret.bytes())
        .map(
            |b| match b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                true => (b as char).to_string(),
                false => format!("%{b:02X}"),
            },
        )
        .collect();
    let mut out = vec![
        secret.to_owned(),
        json.replace('/', "\\/"),
        json,
        secret.replace('/', "\\/"),
        unicode(false),
        unicode(true),
        percent,
    ];
    out.sort();
    out.dedup();
    out
}

/// `text` with every credential of the session, in every spelling of [`spellings`], replaced by
/// `[redacted]`, longest first.
pub(crate) fn redact(text: &str, secrets: &BTreeSet<String>) -> String {
    let mut all: Vec<String> = secrets.iter().flat_map(|s| spellings(s)).collect();
    all.sort_by_key(|c| std::cmp::Reverse(c.len()));
    all.dedup();
    all.into_iter()
        .fold(text.to_owned(), |t, s| match t.contains(s.as_str()) {
            true => t.replace(s.as_str(), "[redacted]"),
            false => t,
        })
}

/// Every string of `v` (keys too) redacted as [`redact`] redacts text.
pub(crate) fn redact_value(v: &mut Value, secrets: &BTreeSet<String>) {
    if secrets.is_empty() {
        return;
    }
    match v {
        Value::String(s) => {
            let r = redact(s, secrets);
            if r != *s {
                *s = r;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| redact_value(i, secrets)),
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                let Some(mut child) = map.remove(&k) else {
                    continue;
                };
                redact_value(&mut child, secrets);
                map.insert(redact(&k, secrets), child);
            }
        }
        _ => {}
    }
}

/// Every text of a trace event (its strings, and each JSON value's strings and keys) redacted
/// as [`redact`] redacts text; a value none of whose texts holds a credential is left as
/// written.
pub(crate) fn redact_event(e: &mut crate::trace::Event<'static>, secrets: &BTreeSet<String>) {
    use crate::trace::{Json, Str, TextMut};
    if secrets.is_empty() {
        return;
    }
    e.texts_mut(&mut |text| match text {
        TextMut::Str(s) => {
            let r = redact(s, secrets);
            if r != s.as_str() {
                *s = Str::from(r);
            }
        }
        TextMut::Json(j) => {
            let Ok(mut v) = serde_json::from_str::<Value>(j.raw()) else {
                return;
            };
            let before = v.clone();
            redact_value(&mut v, secrets);
            if v != before {
                *j = Json::from_value(&v);
            }
        }
    });
}
