//! Escaping text that a trace or scenario controls before a person's terminal or a Markdown
//! renderer sees it, so that a newline in a case name cannot start a forged report line or a
//! workflow command, and an escape sequence cannot repaint the screen.

pub use crate::common::text::escape_controls;

/// `text` fit for one Markdown table cell: controls escaped, and `|`, `<`, `>` and `&` written
/// so that they cannot end the cell, open an HTML comment that hides the rows below, or inject
/// markup.
pub fn markdown_cell(text: &str) -> String {
    let escaped = escape_controls(text);
    let mut out = String::with_capacity(escaped.len());
    for c in escaped.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    #[test]
    fn controls_are_shown_not_obeyed() {
        for (raw, shown) in [
            ("plain é 中", "plain é 中"),
            ("a\nPASS  x", "a\\nPASS  x"),
            ("\r\t", "\\r\\t"),
            ("\u{1b}[2J", "\\u001b[2J"),
            ("\u{7f}\u{85}", "\\u007f\\u0085"),
            ("x\u{2028}y\u{202e}z", "x\\u2028y\\u202ez"),
        ] {
            assert_eq!(escape_controls(raw), shown, "{raw:?}");
        }
        assert!(matches!(escape_controls("clean"), Cow::Borrowed(_)));
    }

    #[test]
    fn markdown_cells_cannot_break_the_table() {
        assert_eq!(
            markdown_cell("a|b\n<!-- x & y -->"),
            "a\\|b\\n&lt;!-- x &amp; y --&gt;"
        );
    }
}
