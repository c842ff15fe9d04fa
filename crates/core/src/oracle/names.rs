//! Tool names as oracles write them: a plain name compares case-insensitively; a name holding
//! `*`, `?` or `[` is a glob over the whole name, also case-insensitive — `*` any run of
//! characters (including none), `?` exactly one, `[…]` one of a class (`a-z` ranges allowed),
//! `[!…]` one character outside it. A `[` without its closing `]` matches itself.
//!
//! Written by hand rather than with a path-glob crate on purpose: tool names are not paths
//! (`*` must cross `/` and `.`), and brace alternation (`{a,b}`) is not part of the format.

use crate::trace::json::eq_ci;

/// Whether `written` is a glob pattern.
pub(crate) fn is_glob(written: &str) -> bool {
    // Bytes, not chars: this runs for every comparison of a name.
    written.bytes().any(|b| matches!(b, b'*' | b'?' | b'['))
}

/// Whether a tool called `name` is the tool `pattern` names (glob or plain).
pub(crate) fn tool_matches(pattern: &str, name: &str) -> bool {
    if is_glob(pattern) {
        glob_match(pattern, name)
    } else {
        eq_ci(pattern, name)
    }
}

/// Several tool names or patterns, each one's kind ([`is_glob`]) decided once: what the loops
/// that compare a set of names against every call of a trace use, so that plain names cost one
/// case-insensitive comparison each, as they did before globs existed.
pub(crate) struct ToolSet<'p> {
    plain: Vec<&'p str>,
    globs: Vec<&'p str>,
}

impl<'p> ToolSet<'p> {
    /// The set of `names`.
    pub(crate) fn new(names: impl IntoIterator<Item = &'p str>) -> ToolSet<'p> {
        let (globs, plain) = names.into_iter().partition(|n| is_glob(n));
        ToolSet { plain, globs }
    }

    /// Whether a tool called `name` is one the set names.
    pub(crate) fn matches(&self, name: &str) -> bool {
        self.plain.iter().any(|p| eq_ci(p, name)) || self.globs.iter().any(|g| glob_match(g, name))
    }
}

fn fold(c: char) -> char {
    // Simple case folding of one character: enough for tool names.
    c.to_lowercase().next().unwrap_or(c)
}

/// One element of a compiled pattern.
enum Tok {
    Any,
    One,
    Lit(char),
    Class {
        negated: bool,
        items: Vec<(char, char)>,
    },
}

fn compile(pattern: &str) -> Vec<Tok> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' => {
                if !matches!(out.last(), Some(Tok::Any)) {
                    out.push(Tok::Any);
                }
                i += 1;
            }
            '?' => {
                out.push(Tok::One);
                i += 1;
            }
            '[' => {
                let mut j = i + 1;
                let negated = chars.get(j) == Some(&'!');
                if negated {
                    j += 1;
                }
                // A `]` right after `[` or `[!` is a member, not the end.
                let start = j;
                while j < chars.len() && (chars[j] != ']' || j == start) {
                    j += 1;
                }
                if j >= chars.len() {
                    out.push(Tok::Lit('['));
                    i += 1;
                    continue;
                }
                let body = &chars[start..j];
                let mut items = Vec::new();
                let mut k = 0;
                while k < body.len() {
                    if k + 2 < body.len() && body[k + 1] == '-' {
                        items.push((fold(body[k]), fold(body[k + 2])));
                        k += 3;
                    } else {
                        items.push((fold(body[k]), fold(body[k])));
                        k += 1;
                    }
                }
                out.push(Tok::Class { negated, items });
                i = j + 1;
            }
            c => {
                out.push(Tok::Lit(fold(c)));
                i += 1;
            }
        }
    }
    out
}

fn one(tok: &Tok, c: char) -> bool {
    match tok {
        Tok::Any | Tok::One => true,
        Tok::Lit(l) => *l == c,
        Tok::Class { negated, items } => {
            items.iter().any(|(lo, hi)| (*lo..=*hi).contains(&c)) != *negated
        }
    }
}

/// `name` as a pattern that matches exactly that name: each glob character (`*`, `?`, `[`)
/// written as a one-character class (`[*]`), so a tool called `refund*` is never a pattern.
pub(crate) fn escape_glob(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '*' | '?' | '[' => {
                out.push('[');
                out.push(c);
                out.push(']');
            }
            c => out.push(c),
        }
    }
    out
}

/// Whole-name, case-insensitive glob match (linear-time backtracking over the last `*`).
pub(crate) fn glob_match(pattern: &str, name: &str) -> bool {
    let toks = compile(pattern);
    let name: Vec<char> = name.chars().map(fold).collect();
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match toks.get(p) {
            Some(Tok::Any) => {
                star = Some((p, n));
                p += 1;
            }
            Some(t) if one(t, name[n]) => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    toks[p..].iter().all(|t| matches!(t, Tok::Any))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        for (pattern, name, want) in [
            ("book_*", "book_reservation", true),
            ("book_*", "Book_Flight", true),
            ("book_*", "cancel_reservation", false),
            ("*", "", true),
            ("*", "anything/with.dots", true),
            ("get_?", "get_x", true),
            ("get_?", "get_xy", false),
            ("get_[ab]", "get_B", true),
            ("get_[!ab]", "get_b", false),
            ("get_[!ab]", "get_c", true),
            ("v[0-9]", "v7", true),
            ("v[0-9]", "vx", false),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
            ("a[", "a[", true),
            ("[]]x", "]x", true),
            ("*_user", "lookup_user", true),
            ("*_user", "lookup_users", false),
        ] {
            assert_eq!(tool_matches(pattern, name), want, "{pattern} vs {name}");
        }
        assert!(tool_matches("Search", "search"));
        assert!(!is_glob("search"));
    }

    #[test]
    fn many_stars_do_not_backtrack_exponentially() {
        // Only the last `*` is ever resumed, so this is quadratic at worst, not exponential.
        let pattern = "*a".repeat(200);
        assert!(!glob_match(&pattern, &("a".repeat(199) + "b")));
        assert!(glob_match(&pattern, &"a".repeat(200)));
    }
}

#[cfg(test)]
mod escape_tests {
    use super::*;

    #[test]
    fn an_escaped_name_matches_itself_only() {
        for name in ["refund*", "a?b", "x[1]", "[!y]", "plain"] {
            let p = escape_glob(name);
            assert!(tool_matches(&p, name), "{p} vs {name}");
        }
        assert!(!tool_matches(
            &escape_glob("refund*"),
            "refund_everything_to_attacker"
        ));
        assert!(!tool_matches(&escape_glob("a?b"), "axb"));
    }
}
