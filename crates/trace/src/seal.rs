//! Content hashes and the footer that seals a trace.

use serde::Deserialize;

/// BLAKE3 of `bytes` as `b3:` + 64 lowercase hex digits, in one call over the whole buffer.
pub fn content_hash(bytes: &[u8]) -> String {
    format!("b3:{}", blake3::hash(bytes).to_hex())
}

/// Whether `s` is `b3:` (or, with `keyed_ok`, `b3k:`) followed by 64 lowercase hex digits.
pub fn is_hash(s: &str, keyed_ok: bool) -> bool {
    let hex = if let Some(rest) = s.strip_prefix("b3:") {
        rest
    } else if let Some(rest) = s.strip_prefix("b3k:").filter(|_| keyed_ok) {
        rest
    } else {
        return false;
    };
    hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The footer line (with its `\n`) for a trace whose body has `events` event lines and hashes
/// to `content_hash`.
pub fn footer_line(events: u64, content_hash: &str) -> String {
    format!("{{\"kind\":\"footer\",\"events\":{events},\"content_hash\":\"{content_hash}\"}}\n")
}

/// What a footer line says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Footer {
    /// Number of event lines between header and footer.
    pub events: u64,
    /// BLAKE3 over every byte before the footer line.
    pub content_hash: String,
}

#[derive(Deserialize)]
struct KindProbe<'a> {
    #[serde(borrow)]
    kind: Option<super::json::Str<'a>>,
}

#[derive(Deserialize)]
struct FooterFields {
    events: u64,
    content_hash: String,
}

/// Whether a line is a footer line (its `kind` normalises to `footer`), ignoring other fields.
pub fn is_footer_line(line: &[u8]) -> bool {
    serde_json::from_slice::<KindProbe>(line)
        .ok()
        .and_then(|p| p.kind)
        .is_some_and(|k| super::model::normalize_kind(&k) == Some("footer"))
}

/// Parses a footer line's fields; the error says what is wrong with it.
pub fn parse_footer(line: &[u8]) -> Result<Footer, String> {
    const FIELDS: &[(&str, super::shape::Want)] = &[
        ("events", super::shape::Want::UInt),
        ("content_hash", super::shape::Want::Str),
    ];
    let f: FooterFields = serde_json::from_slice(line).map_err(|e| {
        let text = String::from_utf8_lossy(line);
        format!(
            "footer is not valid: {}",
            super::shape::describe(&text, &e, FIELDS)
        )
    })?;
    if !is_hash(&f.content_hash, false) {
        return Err(
            "footer `content_hash` is not `b3:` followed by 64 lowercase hex digits".to_owned(),
        );
    }
    Ok(Footer {
        events: f.events,
        content_hash: f.content_hash,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_forms() {
        let h = content_hash(b"abc");
        assert!(is_hash(&h, false));
        assert!(is_hash(&h.replace("b3:", "b3k:"), true));
        assert!(!is_hash(&h.replace("b3:", "b3k:"), false));
        assert!(!is_hash(&h.to_uppercase(), true));
        assert!(!is_hash("b3:abc", true));
    }

    #[test]
    fn footer_round_trips() {
        let line = footer_line(17, &content_hash(b"x"));
        assert!(is_footer_line(line.trim_end().as_bytes()));
        let f = parse_footer(line.as_bytes()).unwrap();
        assert_eq!(f.events, 17);
        assert!(parse_footer(br#"{"kind":"footer","events":1,"content_hash":"nope"}"#).is_err());
    }
}
