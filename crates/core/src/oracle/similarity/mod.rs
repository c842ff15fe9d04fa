//! `response-similarity`: the final answer against a reference text, by ROUGE-1 F-measure
//! exactly as Google ADK's `response_match_score` (v1) computes it:
//!
//! 1. NFKC normalisation, then lower-casing;
//! 2. CJK characters (ideographs, kana, hangul syllables) become tokens of their own; Thai, Lao,
//!    Khmer and Myanmar are split into grapheme clusters (a base letter with its marks); every
//!    other character that is not a letter, digit or mark separates words;
//! 3. an ASCII word is tokenised as the `rouge-score` package's default tokenizer does — Porter
//!    stemmed ([`porter`], NLTK's rules) when longer than three letters; any other word is a
//!    token as it stands;
//! 4. unigram overlap: precision = common ÷ candidate tokens, recall = common ÷ reference
//!    tokens (each denominator at least 1), F = 2PR ÷ (P + R), 0 when both are 0.
//!
//! The score is F; the oracle passes when it reaches its `threshold` (default 1: the same
//! tokens). With `turns: [...]` instead of `value`, each turn's final answer is scored against
//! its reference and the score is the mean, as ADK averages invocations.

pub(crate) mod porter;

use crate::oracle::ConfigError;
use foldhash::{HashMap, HashMapExt};
use serde_json::{Value, json};
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

use super::facts::Facts;
use super::result::{FOUND_CHARS, OracleResult, shorten};
use super::typed::{Fallbacks, Oracle};
use crate::oracle::spec::OracleSpec;

/// What the reference text is compared with.
#[derive(Debug, Clone, PartialEq)]
pub enum Reference {
    /// The run's final answer against one text.
    Whole(String),
    /// Each turn's final answer against its text.
    Turns(Vec<String>),
}

/// A configured `response-similarity`.
#[derive(Debug, Clone, PartialEq)]
pub struct Similarity {
    /// The reference.
    pub reference: Reference,
}

/// Configures `response-similarity`.
pub(crate) fn configure(spec: &OracleSpec, _: &Fallbacks<'_>) -> Result<Oracle, ConfigError> {
    match spec.get("metric") {
        None => {}
        Some(Value::String(m)) if m.trim().eq_ignore_ascii_case("rouge1-f") => {}
        Some(other) => {
            return Err(ConfigError::value(
                "metric",
                format!("`metric` {other} is not a known metric (rouge1-f)"),
            ));
        }
    }
    let value = super::params::text(spec);
    let reference = match (value, spec.get("turns")) {
        (Some(_), Some(_)) => return Err("give `value` or `turns`, not both".into()),
        (None, None) => return Err("no reference text: give `value` or `turns`".into()),
        (Some(v), None) => Reference::Whole(v),
        (None, Some(Value::Array(items))) => {
            if items.is_empty() {
                return Err(ConfigError::value(
                    "turns",
                    "`turns` is empty: give one reference text per turn",
                ));
            }
            Reference::Turns(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, t)| {
                        t.as_str()
                            .map(str::to_owned)
                            .ok_or_else(|| format!("`turns[{i}]` is not a string"))
                    })
                    .collect::<Result<_, _>>()?,
            )
        }
        (None, Some(_)) => {
            return Err(ConfigError::value(
                "turns",
                "`turns` must be an array of reference texts",
            ));
        }
    };
    Ok(Oracle::ResponseSimilarity(Box::new(Similarity {
        reference,
    })))
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x4E00..=0x9FFF | 0x3040..=0x309F | 0x30A0..=0x30FF | 0xAC00..=0xD7AF)
}

fn is_non_spaced(c: char) -> bool {
    matches!(c as u32, 0x0E00..=0x0E7F | 0x0E80..=0x0EFF | 0x1780..=0x17FF | 0x1000..=0x109F)
}

/// Python's `str.isalnum()` or a mark. Rust's alphabetic property also holds a few symbols
/// that Python's letters do not (the negative circled and squared Latin letters); those are
/// excluded so that both agree.
fn is_word_char(c: char) -> bool {
    (c.is_alphanumeric() && !matches!(c as u32, 0x1F130..=0x1F189)) || is_combining_mark(c)
}

/// The tokens of a text, as ADK's ROUGE tokenizer makes them.
pub(crate) fn tokenize(text: &str) -> Vec<String> {
    let text: String = text.nfkc().collect::<String>().to_lowercase();
    let mut processed = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_cjk(c) {
            processed.push(' ');
            processed.push(c);
            processed.push(' ');
        } else if is_non_spaced(c) {
            if !is_combining_mark(c) {
                processed.push(' ');
            }
            processed.push(c);
        } else if is_word_char(c) {
            processed.push(c);
        } else {
            processed.push(' ');
        }
    }
    let mut tokens = Vec::new();
    for word in processed.split_whitespace() {
        if word.is_ascii() {
            // `rouge-score`'s tokenizer: [a-z0-9] runs, stemmed when longer than 3.
            for t in word
                .split(|c: char| !c.is_ascii_lowercase() && !c.is_ascii_digit())
                .filter(|t| !t.is_empty())
            {
                tokens.push(if t.len() > 3 {
                    porter::stem(t)
                } else {
                    t.to_owned()
                });
            }
        } else {
            tokens.push(word.to_owned());
        }
    }
    tokens.retain(|t| !t.is_empty());
    tokens
}

/// ROUGE-1 of a candidate against a reference: (precision, recall, F).
pub(crate) fn rouge1(candidate: &str, reference: &str) -> (f64, f64, f64) {
    let count = |tokens: Vec<String>| {
        let mut m: HashMap<String, usize> = HashMap::new();
        for t in tokens {
            *m.entry(t).or_default() += 1;
        }
        m
    };
    let (cand, refs) = (count(tokenize(candidate)), count(tokenize(reference)));
    let common: usize = (refs.iter())
        .map(|(t, n)| (*n).min(cand.get(t).copied().unwrap_or(0)))
        .sum();
    let (nc, nr): (usize, usize) = (cand.values().sum(), refs.values().sum());
    let precision = common as f64 / nc.max(1) as f64;
    let recall = common as f64 / nr.max(1) as f64;
    let f = if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    };
    (precision, recall, f)
}

fn num(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

impl Similarity {
    /// Judges the final answer (or each turn's) against the reference.
    pub fn judge(&self, facts: &Facts<'_, '_>) -> OracleResult {
        match &self.reference {
            Reference::Whole(reference) => {
                let answer = &facts.final_answer;
                let expected =
                    json!({"metric": "rouge1-f", "reference": shorten(reference, FOUND_CHARS)});
                let evidence = match answer.required(expected.clone()) {
                    Ok(e) => e,
                    Err(fail) => return fail,
                };
                let (p, r, f) = rouge1(&answer.text, reference);
                let msg = format!(
                    "ROUGE-1 F {} against the reference (precision {}, recall {})",
                    num(f),
                    num(p),
                    num(r)
                );
                if f >= 1.0 {
                    OracleResult::pass(msg, evidence)
                } else {
                    OracleResult::fail(
                        msg,
                        evidence,
                        expected,
                        json!(shorten(&answer.text, FOUND_CHARS)),
                    )
                    .with_score(f)
                }
            }
            Reference::Turns(references) => {
                let ranges = super::turns::turn_ranges(&facts.trace.events);
                if ranges.is_empty() {
                    return OracleResult::not_evaluable(
                        "`turns` needs turns, and the trace has no `user_message`",
                        Vec::new(),
                    );
                }
                if ranges.len() != references.len() {
                    return OracleResult::fail(
                        format!(
                            "the trace has {} turn(s) and `turns` lists {}",
                            ranges.len(),
                            references.len()
                        ),
                        Vec::new(),
                        json!({"turns": references.len()}),
                        json!({"turns": ranges.len()}),
                    );
                }
                let mut total = 0.0;
                let mut evidence = Vec::new();
                let mut parts = Vec::new();
                for (i, (range, reference)) in ranges.into_iter().zip(references).enumerate() {
                    let sub = super::turns::turn_trace(facts.trace, range);
                    let turn = Facts::part(&sub, facts);
                    let (_, _, f) = rouge1(&turn.final_answer.text, reference);
                    total += f;
                    evidence.extend(turn.final_answer.seq);
                    parts.push(format!("turn {}: {}", i + 1, num(f)));
                }
                let score = total / references.len() as f64;
                let msg = format!(
                    "mean ROUGE-1 F {} over {} turns ({})",
                    num(score),
                    references.len(),
                    parts.join(", ")
                );
                if score >= 1.0 {
                    OracleResult::pass(msg, evidence)
                } else {
                    OracleResult::fail(
                        msg,
                        evidence,
                        json!({"metric": "rouge1-f", "turns": references.len()}),
                        json!({"score": score}),
                    )
                    .with_score(score)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
