//! Escaping text that a trace or scenario controls before a person's terminal or a Markdown
//! renderer sees it, so that a newline in a case name cannot start a forged report line or a
//! workflow command, and an escape sequence cannot repaint the screen.

use std::borrow::Cow;

/// Whether `c` must not reach a terminal or Markdown as itself: C0 and C1 control characters,
/// DEL, the Unicode line and paragraph separators, and the bidirectional overrides and isolates
/// (which can make text read in another order than it is stored).
pub(crate) fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every character `needs_escape` names written as an escape: `\n`, `\r`, `\t`,
/// and `\u001b`-style for the rest. Borrowed when there is nothing to escape (the usual case).
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if needs_escape(c) => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}
