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
    let bytes = seg.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
