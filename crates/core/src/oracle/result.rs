//! What judging produces: a verdict per oracle, with a message and evidence.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An oracle's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The check held.
    Pass,
    /// The check did not hold.
    Fail,
    /// The subject was there but lacked a field the oracle needs; counts as a failure.
    NotEvaluable,
}

impl Verdict {
    /// `pass`, `fail` or `not-evaluable`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::NotEvaluable => "not-evaluable",
        }
    }
}

/// One oracle's result on one trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OracleResult {
    /// The oracle type (canonical lowercase), `unknown:<as written>`, or `run-completed`.
    #[serde(rename = "type")]
    pub kind: Cow<'static, str>,
    /// Position in the scenario's `oracles` (absent for the synthetic `run-completed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<usize>,
    /// The verdict.
    pub verdict: Verdict,
    /// How much of the check held, in [0, 1]: the oracle's natural fraction where it has one
    /// (matched calls, tools found, texts contained, text similarity), else 1 for a pass and 0
    /// otherwise.
    #[serde(default)]
    pub score: f64,
    /// What was found, in a sentence.
    pub message: String,
    /// `seq` numbers of the events that decided it.
    pub evidence: Vec<u64>,
    /// For failures: what the oracle expected.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub expected: Option<Box<Value>>,
    /// For failures: what the trace held instead.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub found: Option<Box<Value>>,
    /// The oracle lacks what it needs (reported by `gates`; judged as a failure).
    #[serde(skip)]
    pub misconfigured: bool,
    /// The oracle could not judge (its program raised, crashed or ran out of time, the turn it
    /// names does not exist): a failure alone, and `not-evaluable` in every composition, which
    /// never turns it into a pass.
    #[serde(skip)]
    pub unjudged: bool,
}

/// A field that is present is `Some`, even when it is `null` (`"found": null` says the trace
/// held nothing, which an absent field does not): a report read back, as `merge` reads shares,
/// keeps it.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Box<Value>>, D::Error> {
    Value::deserialize(d).map(|v| Some(Box::new(v)))
}

impl OracleResult {
    /// Masks every secret the scan recognises (and `waived` does not list) in the message and
    /// the expected and found values.
    pub fn mask_secrets(&mut self, waived: &std::collections::HashSet<String>) {
        crate::privacy::mask::mask_string(&mut self.message, waived);
        for v in [&mut self.expected, &mut self.found].into_iter().flatten() {
            crate::privacy::mask::mask_value(v, waived);
        }
    }

    /// A passing result.
    pub fn pass(message: impl Into<String>, evidence: Vec<u64>) -> Self {
        OracleResult {
            kind: Cow::Borrowed(""),
            index: None,
            verdict: Verdict::Pass,
            score: 1.0,
            message: message.into(),
            evidence,
            expected: None,
            found: None,
            misconfigured: false,
            unjudged: false,
        }
    }

    /// A failing result with what was expected and found.
    pub fn fail(
        message: impl Into<String>,
        evidence: Vec<u64>,
        expected: impl Into<Value>,
        found: impl Into<Value>,
    ) -> Self {
        OracleResult {
            kind: Cow::Borrowed(""),
            index: None,
            verdict: Verdict::Fail,
            score: 0.0,
            message: message.into(),
            evidence,
            // Boxed: a passing result (the common case) then costs one pointer per field.
            expected: Some(Box::new(expected.into())),
            found: Some(Box::new(found.into())),
            misconfigured: false,
            unjudged: false,
        }
    }

    /// The same result, marked as one whose oracle could not judge.
    pub fn unjudged(mut self) -> Self {
        self.unjudged = true;
        self
    }

    /// Whether the oracle could not judge: misconfigured, not evaluable, or unjudged. No
    /// composition turns such a result into a pass.
    pub fn could_not_judge(&self) -> bool {
        self.misconfigured || self.unjudged || self.verdict == Verdict::NotEvaluable
    }

    /// A misconfigured oracle: it fails, naming what is missing.
    pub fn misconfigured(message: impl Into<String>) -> Self {
        OracleResult {
            misconfigured: true,
            ..OracleResult::fail(
                format!("misconfigured: {}", message.into()),
                Vec::new(),
                Value::Null,
                Value::Null,
            )
        }
    }

    /// A subject present but lacking a field the oracle needs.
    pub fn not_evaluable(message: impl Into<String>, evidence: Vec<u64>) -> Self {
        OracleResult {
            verdict: Verdict::NotEvaluable,
            score: 0.0,
            ..OracleResult::pass(message, evidence)
        }
    }

    /// The same result recording what it measured (`max-tokens` and `max-cost` record their
    /// totals even when they pass: the case stage holds a case's trials to them).
    pub fn found(mut self, found: serde_json::Value) -> Self {
        self.found = Some(Box::new(found));
        self
    }

    /// The same result with its natural fraction as score (clamped to [0, 1]; a non-finite
    /// fraction counts as 0).
    pub fn with_score(mut self, score: f64) -> Self {
        self.score = if score.is_finite() {
            score.clamp(0.0, 1.0)
        } else {
            0.0
        };
        self
    }

    /// Whether the score is worth printing next to a verdict: strictly between 0 and 1.
    pub fn partial_score(&self) -> bool {
        self.score > 0.0 && self.score < 1.0
    }

    /// The score as reports print it: at most three decimals (`0.667`).
    pub fn score_text(&self) -> String {
        let s = format!("{:.3}", self.score);
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }

    /// ` (score 0.667)` when the score is partial, else empty: what reports print after the
    /// oracle's name.
    pub fn score_note(&self) -> String {
        if self.partial_score() {
            format!(" (score {})", self.score_text())
        } else {
            String::new()
        }
    }

    /// The evidence as `seq 3, 9` (empty when there is none), as every report prints it.
    pub fn evidence_text(&self) -> String {
        if self.evidence.is_empty() {
            return String::new();
        }
        let seqs: Vec<String> = self.evidence.iter().map(u64::to_string).collect();
        format!("seq {}", seqs.join(", "))
    }

    pub(crate) fn typed(
        mut self,
        kind: impl Into<Cow<'static, str>>,
        index: Option<usize>,
    ) -> Self {
        self.kind = kind.into();
        // Messages are kept for the whole run: hold no spare capacity.
        self.message.shrink_to_fit();
        self.index = index;
        self
    }
}

/// How much of a recorded text (a final answer, an artifact) a failure's `found` shows.
pub(super) const FOUND_CHARS: usize = 400;

/// Shortens long recorded text for `found`, on a char boundary.
pub fn shorten(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}
