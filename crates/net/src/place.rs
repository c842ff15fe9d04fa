//! Putting a recorded run in place: the trace layer's one placement step
//! ([`SealedTrace::place`]: the secret rule, no file of another run replaced, atomic writes
//! confined to the output directory, the raw-prompt sidecar only under the developer opt-in),
//! then the signature when a key is given. `replay serve --record`, `record` and `collect`
//! share it.

use camino::{Utf8Path, Utf8PathBuf};

use super::record::RunHeader;
use crate::trace::{Existing, Limits, Placed, RunName, SealedTrace};

impl RunHeader<'_> {
    /// The name its trace is placed under.
    pub(crate) fn name(&self) -> RunName<'_> {
        RunName {
            scenario: self.scenario,
            case: self.case,
            trial: self.trial.map(crate::trace::TrialId::as_str),
        }
    }
}

/// How a recording is placed.
pub(crate) struct Placing<'a> {
    /// The output directory.
    pub(crate) dir: &'a Utf8Path,
    /// Whether the developer opted in to the raw-prompt sidecar.
    pub(crate) raw_prompts: bool,
    /// Signs the recording, when set.
    pub(crate) signer: Option<&'a dyn crate::sign::TraceSigner>,
    /// Fingerprints of secrets waived as false positives (`.tracereplay-allow`, which the
    /// command line reads once).
    pub(crate) waived: &'a std::collections::HashSet<String>,
    /// Limits for reading back what is signed.
    pub(crate) limits: Limits,
    /// Whether a file already there (of this very run) may be replaced: `replay serve
    /// --record` replaces its own earlier recording; `record` never replaces a file.
    pub(crate) replace: bool,
}

/// Writes `sealed`, the recording of `run`, into place and signs it; returns its path, or why
/// it was not written. A secret in what would be written refuses the write: the error names
/// the secret's kind and fingerprint, never the secret.
pub(crate) fn place(
    run: &RunHeader<'_>,
    sealed: &SealedTrace,
    how: &Placing<'_>,
) -> Result<Utf8PathBuf, String> {
    let confined = crate::fsutil::Confined::new(how.dir.to_owned());
    let placement = crate::trace::Placement {
        dir: &confined,
        raw_prompts: how.raw_prompts,
        existing: if how.replace {
            Existing::SameRun
        } else {
            Existing::Refuse
        },
        durable: true,
        limits: how.limits,
        waived: how.waived,
    };
    let placed = sealed
        .place(run.name(), &placement)
        .map_err(|e| e.to_string())?;
    match placed {
        Placed::Written { path, stored } => {
            if let Some(signer) = how.signer {
                let what = (path.as_path(), stored.as_slice());
                crate::sign::sign_trace(signer, how.dir, what, how.limits, true)
                    .map_err(|e| format!("cannot sign `{path}`: {e}"))?;
            }
            Ok(path)
        }
        // A recording's placement never leaves a file as it is; were it to, nothing is new.
        Placed::Unchanged { path } => Ok(path),
    }
}
