//! Unified line diffs rendered with `similar`: Patience algorithm, a timeout, grouped hunks with
//! three lines of context.

use std::time::Duration;

use similar::{Algorithm, ChangeTag, TextDiff};

/// A unified diff of `old` against `new` (empty when equal), headed `approved`/`current`.
pub(crate) fn unified(old: &str, new: &str) -> String {
    if old == new {
        return String::new();
    }
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Patience)
        .timeout(Duration::from_millis(500))
        .diff_lines(old, new);
    let mut out = String::new();
    out.push_str("--- approved\n+++ current\n");
    for group in diff.grouped_ops(3) {
        let first = group.first().expect("a group has ops");
        let last = group.last().expect("a group has ops");
        let old_range = first.old_range().start..last.old_range().end;
        let new_range = first.new_range().start..last.new_range().end;
        out.push_str(&format!(
            "@@ -{},{} +{},{} @@\n",
            old_range.start + 1,
            old_range.len(),
            new_range.start + 1,
            new_range.len()
        ));
        for op in &group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                    ChangeTag::Equal => ' ',
                };
                out.push(sign);
                out.push_str(change.value().trim_end_matches('\n'));
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_hunks_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\n";
        let d = unified(old, new);
        assert_eq!(
            d,
            "--- approved\n+++ current\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n"
        );
        assert_eq!(unified("x\n", "x\n"), "");
    }
}
