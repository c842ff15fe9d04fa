//! Why a trace could not be judged: every variant names the file, and the line where there is one.

use camino::Utf8PathBuf;

/// A trace that could not be read, verified or parsed. Evaluation turns these into `error` rows;
/// they never stop the rest of a run.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be opened or read.
    #[error("cannot read `{path}`")]
    Io {
        /// The trace file.
        path: Utf8PathBuf,
        /// The I/O failure.
        #[source]
        source: std::io::Error,
    },
    /// The bytes are not a decodable trace (corrupt or truncated zstd, invalid UTF-8, empty).
    #[error("`{path}`: {detail}")]
    Unreadable {
        /// The trace file.
        path: Utf8PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// A size limit was exceeded; reading stopped there.
    #[error("`{path}`{}: {what} exceeds the limit of {limit} bytes (raise it with `{flag}`)", line_suffix(*.line))]
    TooLarge {
        /// The trace file.
        path: Utf8PathBuf,
        /// The line, for a line over the limit.
        line: Option<usize>,
        /// What was too large.
        what: &'static str,
        /// The limit in force.
        limit: u64,
        /// The flag that raises it.
        flag: &'static str,
    },
    /// The seal does not hold: wrong hash or count, missing footer, footer not last, unsealed
    /// under `--require-sealed`.
    #[error("`{path}`: integrity failure: {detail}")]
    Integrity {
        /// The trace file.
        path: Utf8PathBuf,
        /// What does not match.
        detail: String,
    },
    /// The header names a major version this reader does not know.
    #[error(
        "`{path}`: unsupported trace format version {version} (this tracereplay reads version 1; upgrade tracereplay)"
    )]
    UnsupportedVersion {
        /// The trace file.
        path: Utf8PathBuf,
        /// The version as written.
        version: String,
    },
    /// A line breaks the trace format.
    #[error("`{path}`, line {line}: {detail}")]
    Malformed {
        /// The trace file.
        path: Utf8PathBuf,
        /// 1-based line in the decompressed trace.
        line: usize,
        /// What is wrong.
        detail: String,
    },
    /// Raw prompt text inside the trace.
    #[error("`{path}`, line {line}: privacy violation: {detail}{}", self.advice())]
    Privacy {
        /// The trace file.
        path: Utf8PathBuf,
        /// 1-based line in the decompressed trace.
        line: usize,
        /// What is wrong (never the text itself).
        detail: String,
        /// Whether the developer opt-in (`--allow-raw-prompts`) admits it: text in a field the
        /// format does not define on the prompt side, rather than a prompt written raw.
        waivable: bool,
    },
}

fn line_suffix(line: Option<usize>) -> String {
    line.map(|l| format!(", line {l}")).unwrap_or_default()
}

impl TraceError {
    /// A stable category id for reports: `unreadable`, `too-large`, `integrity`,
    /// `unsupported-version`, `malformed`, `privacy`.
    pub fn category(&self) -> &'static str {
        self.kind().as_str()
    }

    /// The report's kind of this problem.
    pub fn kind(&self) -> crate::common::RowErrorKind {
        use crate::common::RowErrorKind as K;
        match self {
            TraceError::Io { .. } | TraceError::Unreadable { .. } => K::Unreadable,
            TraceError::TooLarge { .. } => K::TooLarge,
            TraceError::Integrity { .. } => K::Integrity,
            TraceError::UnsupportedVersion { .. } => K::UnsupportedVersion,
            TraceError::Malformed { .. } => K::Malformed,
            TraceError::Privacy { .. } => K::Privacy,
        }
    }

    /// What the reader of the error can do about it, as a clause to append (empty when the
    /// message says it already): for text the developer opt-in admits, the opt-in.
    pub fn advice(&self) -> &'static str {
        match self {
            TraceError::Privacy { waivable: true, .. } => {
                " (pass `--allow-raw-prompts` on a developer machine to admit it)"
            }
            _ => "",
        }
    }

    /// The line the problem is on, where there is one.
    pub fn line(&self) -> Option<usize> {
        match self {
            TraceError::Malformed { line, .. } | TraceError::Privacy { line, .. } => Some(*line),
            TraceError::TooLarge { line, .. } => *line,
            TraceError::Io { .. }
            | TraceError::Unreadable { .. }
            | TraceError::Integrity { .. }
            | TraceError::UnsupportedVersion { .. } => None,
        }
    }
}
