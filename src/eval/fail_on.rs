//! `--fail-on`: which failures make the exit code 1, by their scenario's risk.

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
