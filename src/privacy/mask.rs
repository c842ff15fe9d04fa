//! Masking secrets wherever a value is rendered: the scan finds them in traces and scenarios,
//! and every report shows `[secret <kind> <fingerprint> <prefix>…]` in their place.

use std::borrow::Cow;
use std::collections::HashSet;

use super::lint::{fingerprint, hits};
use crate::report::ResultRow;

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

/// Masks every string of a result row that a renderer shows: oracle messages, expected and
/// found values, drift details and diffs, the error message, warnings and cited events.
pub fn mask_row(row: &mut ResultRow, waived: &HashSet<String>) {
    let text = |s: &mut String| mask_string(s, waived);
    row.oracles.iter_mut().for_each(|o| mask_oracle(o, waived));
    row.drift.iter_mut().for_each(|d| mask_drift(d, waived));
    if let Some(e) = &mut row.error {
        text(&mut e.message);
    }
    row.warnings.iter_mut().for_each(text);
    for e in &mut row.cited_events {
        mask_value(e, waived);
    }
}

fn mask_string(s: &mut String, waived: &HashSet<String>) {
    if let Cow::Owned(m) = mask_secrets(s, waived) {
        *s = m;
    }
}

/// Masks an oracle result's message, expected and found values.
pub fn mask_oracle(o: &mut crate::oracle::OracleResult, waived: &HashSet<String>) {
    mask_string(&mut o.message, waived);
    for v in [&mut o.expected, &mut o.found].into_iter().flatten() {
        mask_value(v, waived);
    }
}

/// Masks a drift finding's detail and diff.
pub fn mask_drift(d: &mut crate::diff::DriftFinding, waived: &HashSet<String>) {
    mask_string(&mut d.detail, waived);
    if let Some(diff) = &mut d.diff {
        mask_string(diff, waived);
    }
}

/// Masks everything `explain` shows: oracle results, drift, events and the error.
pub fn mask_explanation(e: &mut crate::eval::explain::Explanation, waived: &HashSet<String>) {
    e.oracles.iter_mut().for_each(|o| mask_oracle(o, waived));
    e.drift.iter_mut().for_each(|d| mask_drift(d, waived));
    e.events.iter_mut().for_each(|v| mask_value(v, waived));
    if let Some(err) = &mut e.error {
        mask_string(err, waived);
    }
}
