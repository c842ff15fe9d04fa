//! Ids as path segments: how a scenario, case or trial id names a directory or file of traces
//! and baselines, and back for display.

/// The longest path segment written (bytes): longer encoded ids are cut and given a hash suffix
/// (see [`encode_segment`]), so every name fits the 255-byte limit of common file systems with
/// room for the longest suffix (`.baseline.json.deleted`).
pub const MAX_SEGMENT_BYTES: usize = 200;

/// [`encode_segment`] for a directory or file under a suite's roots (where `ingest` and
/// `replay --record` write traces): a leading `.` is written `%2E` too, so that no id makes a
/// hidden directory, which discovery skips.
pub fn encode_trace_segment(id: &str) -> String {
    let s = encode_segment(id);
    match s.strip_prefix('.') {
        Some(rest) => format!("%2E{rest}"),
        None => s,
    }
}

/// Encodes one path segment: the id lowercased, every byte outside `[a-z0-9._-]` as `%XX`, and
/// `.`/`..` as `%2E`/`%2E%2E`, so no id can name a path outside the baselines directory.
///
/// An encoding longer than [`MAX_SEGMENT_BYTES`] is cut to its first 167 bytes (never inside a
/// `%XX`) followed by `~` and 32 hex digits of BLAKE3 of the lowercased id: stable, still unique
/// (128 bits of hash), and short enough for any file system. (`~` is never produced by the
/// plain encoding, so a cut name cannot equal an uncut one.)
pub fn encode_segment(id: &str) -> String {
    let lower: String = id.chars().flat_map(char::to_lowercase).collect();
    if lower == "." || lower == ".." {
        return "%2E".repeat(lower.len());
    }
    let mut out = String::with_capacity(lower.len());
    for b in lower.bytes() {
        if b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.len() > MAX_SEGMENT_BYTES {
        const KEEP: usize = MAX_SEGMENT_BYTES - 33;
        let mut cut = KEEP;
        // Never inside a `%XX`.
        while [1, 2]
            .iter()
            .any(|back| cut >= *back && out.as_bytes()[cut - back] == b'%')
        {
            cut -= 1;
        }
        let hash = blake3::hash(lower.as_bytes()).to_hex();
        out.truncate(cut);
        out.push('~');
        out.push_str(&hash[..32]);
    }
    out
}

/// Decodes a segment written by [`encode_segment`] (for display; ids were lowercased).
pub fn decode_segment(seg: &str) -> String {
    percent_decode(seg, false)
}

/// `%XX` sequences (two hex digits) decoded — and `+` as a space when `plus` (a query value or
/// a form); an invalid sequence kept as it is; bytes that decode to no UTF-8 replaced.
pub fn percent_decode(text: &str, plus: bool) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b'+', _, _) if plus => {
                out.push(b' ');
                i += 1;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding_takes_two_hex_digits_and_keeps_the_rest() {
        assert_eq!(percent_decode("Basic%20abc%3D", false), "Basic abc=");
        assert_eq!(percent_decode("100%", false), "100%");
        assert_eq!(percent_decode("%+1%4", false), "%+1%4");
        assert_eq!(percent_decode("a+b%2Bc", true), "a b+c");
        assert_eq!(percent_decode("a+b", false), "a+b");
        assert_eq!(
            decode_segment(&encode_segment("Wéather/Paris")),
            "wéather/paris"
        );
    }
}
