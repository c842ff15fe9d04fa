//! Masking secrets wherever a value is rendered: the scan finds them in traces and scenarios,
//! and every report shows `[secret <kind> <fingerprint> <prefix>…]` in their place. Text and
//! JSON values only: each type that holds them masks itself with these (`ResultRow`,
//! `OracleResult`, `DriftFinding`, `Explanation`), so privacy knows none of them.

use std::borrow::Cow;
use std::collections::HashSet;

use super::lint::{fingerprint, hits};

/// `text` with every secret the scan recognises (and `waived` does not list) replaced by
/// `[secret <kind> <fingerprint> <prefix>…]`: what every report shows instead of a secret that
/// a trace or scenario holds. Borrowed when there is none (the usual case).
pub fn mask_secrets<'t>(text: &'t str, waived: &HashSet<String>) -> Cow<'t, str> {
    let mut out: Option<String> = None;
    let mut last = 0;
    for h in hits(text.as_bytes()) {
        let fp = fingerprint(&h.secret);
        if waived.contains(&fp) {
            continue;
        }
        let buf = out.get_or_insert_with(String::new);
        buf.push_str(&text[last..h.start]);
        let prefix: String = h.secret.chars().take(4).collect();
        buf.push_str(&format!(
            "[secret {} {fp} {prefix}…]",
            h.kind.replace('_', "-")
        ));
        last = h.start + h.secret.len();
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut buf) => {
            buf.push_str(&text[last..]);
            Cow::Owned(buf)
        }
    }
}

/// [`mask_secrets`] over every string (and object key) of a JSON value, in place.
pub fn mask_value(v: &mut serde_json::Value, waived: &HashSet<String>) {
    match v {
        serde_json::Value::String(s) => {
            if let Cow::Owned(m) = mask_secrets(s, waived) {
                *s = m;
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(|i| mask_value(i, waived)),
        serde_json::Value::Object(m) => {
            let entries = std::mem::take(m);
            for (k, mut v) in entries {
                mask_value(&mut v, waived);
                m.insert(mask_secrets(&k, waived).into_owned(), v);
            }
        }
        _ => {}
    }
}

/// [`mask_secrets`] of a string, in place.
pub fn mask_string(s: &mut String, waived: &HashSet<String>) {
    if let Cow::Owned(m) = mask_secrets(s, waived) {
        *s = m;
    }
}
