//! `expr`'s regular expressions (`test`, `match`, `capture`, `scan`, `split`, `sub`, `gsub`),
//! Unicode-aware as jq's (Oniguruma's) are: `\w`, `\d`, `\s` and `\b` know every script, `(?i)`
//! and the `i` flag fold case beyond ASCII (`τ-bench`, a non-breaking space, a dotless ı). The
//! standard library's own definitions of those filters call the three natives here, which
//! replace its ASCII-only ones; the flags are jq's (`g`, `n`, `i`, `m`, `s`, `l`, `x`, `p`), and
//! offsets and lengths count characters, as jq's do.

use jaq_core::{Cv, Error, ValR, ValT as _, data, native::bome};
use jaq_json::Val;
use jaq_std::ValT as _;
use regex::bytes::{Regex, RegexBuilder};

type D = data::JustLut<Val>;

/// The native that replaces the standard library's of that name (each takes the pattern and
/// the flags), if it is one of the three regex natives.
pub(super) fn replacing(name: &str) -> Option<jaq_core::Native<D>> {
    Some(match name {
        "matches" => jaq_core::Native::new(|cv| bome(apply(cv, (false, true)))),
        "split_matches" => jaq_core::Native::new(|cv| bome(apply(cv, (true, true)))),
        "split_" => jaq_core::Native::new(|cv| bome(apply(cv, (true, false)))),
        _ => return None,
    })
}

/// jq's regex flags.
#[derive(Default, Clone, Copy)]
struct Flags {
    global: bool,
    skip_empty: bool,
    case_insensitive: bool,
    multi_line: bool,
    dot_all: bool,
    lazy: bool,
    extended: bool,
}

impl Flags {
    fn new(text: &str) -> Result<Flags, Error<Val>> {
        let mut f = Flags::default();
        for c in text.chars() {
            match c {
                'g' => f.global = true,
                'n' => f.skip_empty = true,
                'i' => f.case_insensitive = true,
                'm' => f.multi_line = true,
                's' => f.dot_all = true,
                'l' => f.lazy = true,
                'x' => f.extended = true,
                'p' => (f.multi_line, f.dot_all) = (true, true),
                other => return Err(Error::str(format_args!("invalid regex flag: {other}"))),
            }
        }
        Ok(f)
    }

    fn regex(self, pattern: &str) -> Result<Regex, Error<Val>> {
        RegexBuilder::new(pattern)
            .unicode(true)
            .case_insensitive(self.case_insensitive)
            .multi_line(self.multi_line)
            .dot_matches_new_line(self.dot_all)
            .swap_greed(self.lazy)
            .ignore_whitespace(self.extended)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| Error::str(format_args!("invalid regex: {e}")))
    }
}

/// A string argument of the filter.
fn text_of(v: &Val) -> Result<&str, Error<Val>> {
    std::str::from_utf8(v.try_as_utf8_bytes()?).map_err(Error::str)
}

/// Applies the regex (the two variables on the stack: pattern, flags) to the input. With
/// `split`, the text between matches is given too (as strings); with `matches`, each match as
/// an array of match objects (`offset`, `length`, `string`, and `name` for a named group).
fn apply(mut cv: Cv<'_, D>, (split, matches): (bool, bool)) -> ValR<Val> {
    let flags = cv.0.pop_var();
    let pattern = cv.0.pop_var();
    let flags = Flags::new(text_of(&flags)?)?;
    let re = flags.regex(text_of(&pattern)?)?;
    let input = &cv.1;
    let bytes = input.try_as_utf8_bytes()?;
    let chars = |part: &[u8]| String::from_utf8_lossy(part).chars().count();
    let mut out: Vec<Val> = Vec::new();
    let mut last = 0;
    // Characters before `counted.0` (matches come in order: counted once, not from the start
    // for each).
    let mut counted = (0usize, 0usize);
    for caps in re.captures_iter(bytes) {
        let Some(whole) = caps.get(0) else { continue };
        if flags.skip_empty && whole.is_empty() {
            continue;
        }
        counted = (
            whole.start(),
            counted.1 + chars(&bytes[counted.0..whole.start()]),
        );
        let at = counted;
        if split {
            out.push(input.as_sub_str(&bytes[last..whole.start()]));
            last = whole.end();
        }
        if matches {
            let groups = (caps.iter().zip(re.capture_names())).filter_map(|(m, name)| {
                let m = m?;
                let string = &bytes[m.range()];
                let mut fields = vec![
                    (
                        Val::from("offset".to_owned()),
                        Val::from((at.1 + chars(&bytes[at.0..m.start()])) as isize),
                    ),
                    (
                        Val::from("length".to_owned()),
                        Val::from(chars(string) as isize),
                    ),
                    (Val::from("string".to_owned()), input.as_sub_str(string)),
                ];
                if let Some(n) = name {
                    fields.push((Val::from("name".to_owned()), Val::from(n.to_owned())));
                }
                Some(Val::from_map(fields))
            });
            out.push(groups.collect::<ValR<Val>>()?);
        }
        if !flags.global {
            break;
        }
    }
    if split {
        out.push(input.as_sub_str(&bytes[last..]));
    }
    Ok(out.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use crate::oracle::Verdict;
    use crate::oracle::test_support::one;
    use serde_json::json;

    fn judged(jq: &str) -> crate::oracle::OracleResult {
        one(
            json!({"type": "expr", "jq": jq}),
            &[r#"{"kind":"run_end","status":"completed"}"#],
        )
    }

    #[test]
    fn classes_case_and_boundaries_know_every_script() {
        for jq in [
            // `\w`, `\s`, `\d` and `\b` beyond ASCII: what an ASCII-only engine lets slip.
            r#""τ-bench" | test("^\\w+-bench$")"#,
            "\"a\u{a0}b\" | test(\"a\\\\sb\")",
            r#""ı" | test("^\\w$")"#,
            r#""٣" | test("^\\d$")"#,
            r#""naïve café" | test("\\bcafé\\b")"#,
            // Case folding beyond ASCII, by flag and inline.
            r#""ÉCOLE" | test("école"; "i")"#,
            r#""ΣΟΦΙΑ" | test("(?i)σοφια")"#,
            // Offsets and lengths count characters, as jq's do.
            r#""τα-β" | match("β") | .offset == 3 and .length == 1"#,
            r#"[ "aéb" | scan("\\w") ] | length == 3"#,
            r#""a b\u00a0c" | gsub("\\s"; "_") == "a_b_c""#,
            r#"[ "x1y22z" | splits("\\d+") ] == ["x", "y", "z"]"#,
            r#""été" | capture("(?<first>\\w)") | .first == "é""#,
        ] {
            let r = judged(jq);
            assert_eq!(r.verdict, Verdict::Pass, "{jq}: {}", r.message);
        }
    }

    #[test]
    fn a_bad_pattern_or_flag_fails_with_the_reason() {
        let r = judged(r#""a" | test("(")"#);
        assert!(r.message.contains("invalid regex"), "{}", r.message);
        let r = judged(r#""a" | test("a"; "q")"#);
        assert!(r.message.contains("invalid regex flag: q"), "{}", r.message);
    }
}
