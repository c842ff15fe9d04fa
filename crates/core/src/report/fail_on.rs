//! `--fail-on`: which failures make the exit code 1, by their scenario's risk.

use super::RowVerdict;
use crate::scenario::Risk;

/// Which failing traces make the exit code 1, by their scenario's risk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailOn {
    /// Every failure.
    Any,
    /// High and Critical (the harness's default).
    #[default]
    High,
    /// Critical only.
    Critical,
    /// No failure (errors still count).
    None,
}

impl FailOn {
    /// Parses a `--fail-on` value.
    pub fn parse(s: &str) -> Option<FailOn> {
        [FailOn::Any, FailOn::High, FailOn::Critical, FailOn::None]
            .into_iter()
            .find(|f| f.as_str() == s)
    }

    /// The `--fail-on` value.
    pub fn as_str(self) -> &'static str {
        match self {
            FailOn::Any => "any",
            FailOn::High => "high",
            FailOn::Critical => "critical",
            FailOn::None => "none",
        }
    }

    /// Whether a failure at `risk` counts.
    pub fn counts(self, risk: Risk) -> bool {
        match self {
            FailOn::Any => true,
            FailOn::High => risk >= Risk::High,
            FailOn::Critical => risk >= Risk::Critical,
            FailOn::None => false,
        }
    }
}

/// Whether a verdict makes the exit code 1: errors always, failures by `--fail-on` unless the
/// scenario is a known gap.
pub fn verdict_blocks(
    verdict: RowVerdict,
    known_gap: bool,
    risk: Option<Risk>,
    fail_on: FailOn,
) -> bool {
    match verdict {
        RowVerdict::Pass => false,
        RowVerdict::Error => true,
        RowVerdict::Fail => !known_gap && fail_on.counts(risk.unwrap_or_default()),
    }
}
