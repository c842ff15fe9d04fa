//! The Porter stemmer exactly as NLTK's `PorterStemmer()` (its default `NLTK_EXTENSIONS` mode)
//! stems, which is what the `rouge-score` package's default tokenizer calls. The published
//! Porter algorithm and Snowball's English ("Porter2") stemmer differ from it on many words
//! (`dying`, `flies`, `generously`, `happily`…), and the crates that implement those would give
//! different ROUGE scores, so this is a faithful port of NLTK's rules, checked against a table
//! of NLTK's own output (`tests/fixtures/similarity/`).
//!
//! Input is an ASCII token of `[a-z0-9]` (what the ROUGE tokenizer hands it).

/// Words NLTK maps before any rule.
const IRREGULAR: &[(&str, &str)] = &[
    ("sky", "sky"),
    ("skies", "sky"),
    ("dying", "die"),
    ("lying", "lie"),
    ("tying", "tie"),
    ("news", "news"),
    ("innings", "inning"),
    ("inning", "inning"),
    ("outings", "outing"),
    ("outing", "outing"),
    ("cannings", "canning"),
    ("canning", "canning"),
    ("howe", "howe"),
    ("proceed", "proceed"),
    ("exceed", "exceed"),
    ("succeed", "succeed"),
];

fn is_vowel(c: u8) -> bool {
    matches!(c, b'a' | b'e' | b'i' | b'o' | b'u')
}

/// Consonant flag of every letter: `y` is a consonant at the start or after a vowel.
fn consonants(w: &[u8]) -> Vec<bool> {
    let mut flags: Vec<bool> = Vec::with_capacity(w.len());
    for (i, &c) in w.iter().enumerate() {
        let f = if is_vowel(c) {
            false
        } else if c == b'y' {
            i == 0 || !flags[i - 1]
        } else {
            true
        };
        flags.push(f);
    }
    flags
}

fn is_consonant(w: &[u8], i: usize) -> bool {
    consonants(&w[..=i])[i]
}

/// The measure m of `[C](VC){m}[V]`.
fn measure(w: &[u8]) -> usize {
    let f = consonants(w);
    f.windows(2).filter(|p| !p[0] && p[1]).count()
}

fn contains_vowel(w: &[u8]) -> bool {
    consonants(w).iter().any(|c| !c)
}

fn ends_double_consonant(w: &[u8]) -> bool {
    let n = w.len();
    n >= 2 && w[n - 1] == w[n - 2] && is_consonant(w, n - 1)
}

fn ends_cvc(w: &[u8]) -> bool {
    let n = w.len();
    (n >= 3
        && is_consonant(w, n - 3)
        && !is_consonant(w, n - 2)
        && is_consonant(w, n - 1)
        && !matches!(w[n - 1], b'w' | b'x' | b'y'))
        || (n == 2 && !is_consonant(w, 0) && is_consonant(w, 1))
}

type Cond<'c> = &'c dyn Fn(&[u8]) -> bool;

/// The first rule whose suffix the word ends with decides: applied when its condition holds on
/// the stem, else the word is left as it is.
fn apply(w: &[u8], rules: &[(&str, &str, Option<Cond<'_>>)]) -> Vec<u8> {
    for (suffix, replacement, cond) in rules {
        if *suffix == "*d" {
            if ends_double_consonant(w) {
                let stem = &w[..w.len() - 2];
                return if cond.is_none_or(|c| c(stem)) {
                    [stem, replacement.as_bytes()].concat()
                } else {
                    w.to_vec()
                };
            }
            continue;
        }
        if w.ends_with(suffix.as_bytes()) {
            let stem = &w[..w.len() - suffix.len()];
            return if cond.is_none_or(|c| c(stem)) {
                [stem, replacement.as_bytes()].concat()
            } else {
                w.to_vec()
            };
        }
    }
    w.to_vec()
}

fn positive(stem: &[u8]) -> bool {
    measure(stem) > 0
}

fn replace(w: &[u8], suffix: &str, by: &str) -> Vec<u8> {
    [&w[..w.len() - suffix.len()], by.as_bytes()].concat()
}

fn step1a(w: &[u8]) -> Vec<u8> {
    if w.ends_with(b"ies") && w.len() == 4 {
        return replace(w, "ies", "ie");
    }
    apply(
        w,
        &[
            ("sses", "ss", None),
            ("ies", "i", None),
            ("ss", "ss", None),
            ("s", "", None),
        ],
    )
}

fn step1b(w: &[u8]) -> Vec<u8> {
    if w.ends_with(b"ied") {
        return if w.len() == 4 {
            replace(w, "ied", "ie")
        } else {
            replace(w, "ied", "i")
        };
    }
    if w.ends_with(b"eed") {
        let stem = &w[..w.len() - 3];
        return if measure(stem) > 0 {
            [stem, b"ee"].concat()
        } else {
            w.to_vec()
        };
    }
    let mut inter: Option<&[u8]> = None;
    for suffix in ["ed", "ing"] {
        if w.ends_with(suffix.as_bytes()) {
            let stem = &w[..w.len() - suffix.len()];
            if contains_vowel(stem) {
                inter = Some(stem);
                break;
            }
        }
    }
    let Some(stem) = inter else {
        return w.to_vec();
    };
    let last = stem.last().copied().unwrap_or(b' ');
    let last_s = (last as char).to_string();
    let not_lsz = move |_: &[u8]| !matches!(last, b'l' | b's' | b'z');
    let cvc = |s: &[u8]| measure(s) == 1 && ends_cvc(s);
    apply(
        stem,
        &[
            ("at", "ate", None),
            ("bl", "ble", None),
            ("iz", "ize", None),
            ("*d", &last_s, Some(&not_lsz)),
            ("", "e", Some(&cvc)),
        ],
    )
}

fn step1c(w: &[u8]) -> Vec<u8> {
    let cond = |s: &[u8]| s.len() > 1 && is_consonant(s, s.len() - 1);
    apply(w, &[("y", "i", Some(&cond))])
}

fn step2(w: &[u8]) -> Vec<u8> {
    if w.ends_with(b"alli") && positive(&w[..w.len() - 4]) {
        return step2(&replace(w, "alli", "al"));
    }
    let p: Cond<'_> = &positive;
    let logi = |_: &[u8]| positive(&w[..w.len() - 3]);
    apply(
        w,
        &[
            ("ational", "ate", Some(p)),
            ("tional", "tion", Some(p)),
            ("enci", "ence", Some(p)),
            ("anci", "ance", Some(p)),
            ("izer", "ize", Some(p)),
            ("bli", "ble", Some(p)),
            ("alli", "al", Some(p)),
            ("entli", "ent", Some(p)),
            ("eli", "e", Some(p)),
            ("ousli", "ous", Some(p)),
            ("ization", "ize", Some(p)),
            ("ation", "ate", Some(p)),
            ("ator", "ate", Some(p)),
            ("alism", "al", Some(p)),
            ("iveness", "ive", Some(p)),
            ("fulness", "ful", Some(p)),
            ("ousness", "ous", Some(p)),
            ("aliti", "al", Some(p)),
            ("iviti", "ive", Some(p)),
            ("biliti", "ble", Some(p)),
            ("fulli", "ful", Some(p)),
            ("logi", "log", Some(&logi)),
        ],
    )
}

fn step3(w: &[u8]) -> Vec<u8> {
    let p: Cond<'_> = &positive;
    apply(
        w,
        &[
            ("icate", "ic", Some(p)),
            ("ative", "", Some(p)),
            ("alize", "al", Some(p)),
            ("iciti", "ic", Some(p)),
            ("ical", "ic", Some(p)),
            ("ful", "", Some(p)),
            ("ness", "", Some(p)),
        ],
    )
}

fn step4(w: &[u8]) -> Vec<u8> {
    let gt1 = |s: &[u8]| measure(s) > 1;
    let g: Cond<'_> = &gt1;
    let ion = |s: &[u8]| measure(s) > 1 && matches!(s.last(), Some(b's' | b't'));
    apply(
        w,
        &[
            ("al", "", Some(g)),
            ("ance", "", Some(g)),
            ("ence", "", Some(g)),
            ("er", "", Some(g)),
            ("ic", "", Some(g)),
            ("able", "", Some(g)),
            ("ible", "", Some(g)),
            ("ant", "", Some(g)),
            ("ement", "", Some(g)),
            ("ment", "", Some(g)),
            ("ent", "", Some(g)),
            ("ion", "", Some(&ion)),
            ("ou", "", Some(g)),
            ("ism", "", Some(g)),
            ("ate", "", Some(g)),
            ("iti", "", Some(g)),
            ("ous", "", Some(g)),
            ("ive", "", Some(g)),
            ("ize", "", Some(g)),
        ],
    )
}

fn step5a(w: &[u8]) -> Vec<u8> {
    if let Some(stem) = w.strip_suffix(b"e") {
        let m = measure(stem);
        if m > 1 || (m == 1 && !ends_cvc(stem)) {
            return stem.to_vec();
        }
    }
    w.to_vec()
}

fn step5b(w: &[u8]) -> Vec<u8> {
    let cond = |_: &[u8]| measure(&w[..w.len() - 1]) > 1;
    apply(w, &[("ll", "l", Some(&cond))])
}

/// Stems one lowercase ASCII word as NLTK's `PorterStemmer().stem(word)` does.
pub(crate) fn stem(word: &str) -> String {
    let lower = word.to_ascii_lowercase();
    if let Some((_, s)) = IRREGULAR.iter().find(|(w, _)| *w == lower) {
        return (*s).to_owned();
    }
    if word.len() <= 2 {
        return lower;
    }
    let w = lower.as_bytes();
    let w = step1a(w);
    let w = step1b(&w);
    let w = step1c(&w);
    let w = step2(&w);
    let w = step3(&w);
    let w = step4(&w);
    let w = step5a(&w);
    let w = step5b(&w);
    String::from_utf8(w).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::stem;

    #[test]
    fn paper_examples() {
        for (w, s) in [
            ("caresses", "caress"),
            ("ponies", "poni"),
            ("ties", "tie"),
            ("cats", "cat"),
            ("agreed", "agre"),
            ("plastered", "plaster"),
            ("motoring", "motor"),
            ("hopping", "hop"),
            ("falling", "fall"),
            ("filing", "file"),
            ("happy", "happi"),
            ("relational", "relat"),
            ("dying", "die"),
            ("generalization", "gener"),
            ("controlling", "control"),
        ] {
            assert_eq!(stem(w), s, "{w}");
        }
    }
}
