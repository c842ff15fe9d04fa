//! What kind of problem kept a report row from being judged: a value the trace reader names
//! its errors by, and the report, the pipeline and the cache store.

use serde::{Deserialize, Serialize};

/// What kind of problem kept a row from being judged (its JSON `category`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RowErrorKind {
    /// The file could not be read.
    Unreadable,
    /// A line or the whole trace is over a size limit.
    TooLarge,
    /// The seal does not hold (or is missing where one is required).
    Integrity,
    /// A trace format version this tool does not read.
    UnsupportedVersion,
    /// Not a valid trace.
    Malformed,
    /// Prompt-side text where only hashes may be.
    Privacy,
    /// The trace names a scenario no loaded file defines.
    UnknownScenario,
    /// The scenario fails the quality gates, or its file does not load.
    ScenarioInvalid,
    /// A scenario in scope has no trace.
    NoTrace,
    /// A path discovery could not look at.
    Unreachable,
    /// A scenario's `scriptedTrace` is not a valid script.
    ScriptedInvalid,
    /// Traces of one case without distinct trials.
    DuplicateTrial,
    /// A signature is required (`--require-signed`) and the trace is unsigned, its signature
    /// does not verify, or the key that made it is not trusted.
    Signature,
    /// A stored row that does not decode (a corrupt result cache).
    Internal,
    /// A remote trace whose key sits under one scenario's directory and that names another:
    /// the key decides which share of a partitioned run reads it.
    Misplaced,
}

impl RowErrorKind {
    /// Every kind.
    pub const ALL: [RowErrorKind; 15] = [
        RowErrorKind::Unreadable,
        RowErrorKind::TooLarge,
        RowErrorKind::Integrity,
        RowErrorKind::UnsupportedVersion,
        RowErrorKind::Malformed,
        RowErrorKind::Privacy,
        RowErrorKind::UnknownScenario,
        RowErrorKind::ScenarioInvalid,
        RowErrorKind::NoTrace,
        RowErrorKind::Unreachable,
        RowErrorKind::ScriptedInvalid,
        RowErrorKind::DuplicateTrial,
        RowErrorKind::Signature,
        RowErrorKind::Internal,
        RowErrorKind::Misplaced,
    ];

    /// The category id (`unknown-scenario`…).
    pub fn as_str(self) -> &'static str {
        match self {
            RowErrorKind::Unreadable => "unreadable",
            RowErrorKind::TooLarge => "too-large",
            RowErrorKind::Integrity => "integrity",
            RowErrorKind::UnsupportedVersion => "unsupported-version",
            RowErrorKind::Malformed => "malformed",
            RowErrorKind::Privacy => "privacy",
            RowErrorKind::UnknownScenario => "unknown-scenario",
            RowErrorKind::ScenarioInvalid => "scenario-invalid",
            RowErrorKind::NoTrace => "no-trace",
            RowErrorKind::Unreachable => "unreachable",
            RowErrorKind::ScriptedInvalid => "scripted-invalid",
            RowErrorKind::DuplicateTrial => "duplicate-trial",
            RowErrorKind::Signature => "signature",
            RowErrorKind::Internal => "internal",
            RowErrorKind::Misplaced => "misplaced",
        }
    }

    /// The kind of a category id.
    pub fn parse(s: &str) -> Option<RowErrorKind> {
        RowErrorKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

impl std::fmt::Display for RowErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
