//! Where a recorded run goes, and putting it there: the one placement step `replay serve
//! --record` and `record` share — the secret lint over what would be written, no file of
//! another run replaced, atomic writes confined to the output directory, the raw-prompt
//! sidecar only under the developer opt-in, and the signature when a key is given.

use camino::{Utf8Path, Utf8PathBuf};

use super::record::RunHeader;
use crate::trace::{Limits, SealedTrace};

/// Where a run's recording goes under the output directory: `<scenario>/<case>.trace.ndjson.zst`,
/// or `<scenario>/<case>/<trial>.trace.ndjson.zst` for a trial (lowercased path segments, as
/// baselines have them).
pub fn recording_path(scenario: &str, case: &str, trial: Option<&crate::trace::TrialId>) -> String {
    let segment = crate::baseline::encode_trace_segment;
    let (scenario, case) = (segment(scenario), segment(case));
    match trial {
        None => format!("{scenario}/{case}.trace.ndjson.zst"),
        Some(t) => format!("{scenario}/{case}/{}.trace.ndjson.zst", segment(t.as_str())),
    }
}

/// The run recorded at `path`, in words, when it is another run than `run` (scenario, case or
/// trial spelt otherwise, as two ids that differ only in letter case share a file name);
/// `None` when nothing is there, it is this run, or it cannot be read.
pub(crate) fn other_run_at(path: &Utf8Path, run: &RunHeader<'_>, limits: Limits) -> Option<String> {
    let file = crate::trace::TraceFile::open(path, limits).ok()?;
    let first = file.bytes.split(|b| *b == b'\n').next()?;
    let header: serde_json::Value = serde_json::from_slice(first).ok()?;
    let text = |k: &str| match &header[k] {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    let theirs = (text("scenario")?, text("case")?, text("trial"));
    let ours = (
        run.scenario.to_owned(),
        run.case.to_owned(),
        run.trial.map(|t| t.as_str().to_owned()),
    );
    (theirs != ours).then(|| {
        let trial = theirs
            .2
            .map_or_else(String::new, |t| format!(" trial `{t}`"));
        format!("scenario `{}` case `{}`{trial}", theirs.0, theirs.1)
    })
}

/// How a recording is placed.
pub(crate) struct Placement<'a> {
    /// The output directory.
    pub(crate) dir: &'a Utf8Path,
    /// Whether the developer opted in to the raw-prompt sidecar.
    pub(crate) raw_prompts: bool,
    /// Signs the recording, when set.
    pub(crate) signer: Option<&'a dyn crate::sign::TraceSigner>,
    /// Limits for reading back what is signed.
    pub(crate) limits: Limits,
    /// Whether a file already there (of this very run) may be replaced: `replay serve
    /// --record` replaces its own earlier recording; `record` never replaces a file.
    pub(crate) replace: bool,
}

/// Writes `sealed`, the recording of `run`, into place; returns its path, or why it was not
/// written. A secret in what would be written refuses the write: the error names the run and
/// the secret's kind and fingerprint, never the secret.
pub(crate) fn place(
    run: &RunHeader<'_>,
    sealed: &SealedTrace,
    how: &Placement<'_>,
) -> Result<Utf8PathBuf, String> {
    let path = how
        .dir
        .join(recording_path(run.scenario, run.case, run.trial));
    let sidecar = sealed.sidecar.as_deref().filter(|_| how.raw_prompts);
    let waived = crate::privacy::lint::read_allow_file(Utf8Path::new(".tracereplay-allow"));
    let mode = crate::privacy::lint::SecretsMode::Fail;
    let mut found = crate::privacy::lint::scan_secrets("trace", &sealed.bytes, mode, &waived);
    if let Some(side) = sidecar {
        found.extend(crate::privacy::lint::scan_secrets(
            "sidecar", side, mode, &waived,
        ));
    }
    if let Some(f) = found.first() {
        let at = f.line.map(|l| format!(" line {l}")).unwrap_or_default();
        return Err(format!(
            "not written: what would be written holds a secret ({} {}, in the {}{at}); nothing of this run was written — remove the secret from the tool output or prompt that carried it, or waive a false positive by adding `{}` to `.tracereplay-allow`",
            f.kind,
            f.fingerprint.as_deref().unwrap_or(""),
            f.file,
            f.fingerprint.as_deref().unwrap_or("")
        ));
    }
    if let Some(other) = other_run_at(&path, run, how.limits) {
        return Err(format!(
            "`{path}` holds the recording of {other}, which differs only in letter case from this run's; not replaced — give this run another trial (or case)"
        ));
    }
    if !how.replace && path.exists() {
        return Err(format!(
            "`{path}` exists; a recording never replaces one — give this run a trial (`--trial`, or the X-Tracereplay-Trial header), or record into another directory"
        ));
    }
    let compressed = sealed.compress().map_err(|e| e.to_string())?;
    let confined = crate::fsutil::Confined::new(how.dir.to_owned());
    confined
        .write(&path, &compressed, true)
        .map_err(|e| format!("cannot write `{path}`: {e}"))?;
    if let Some(side) = sidecar {
        let side_path = crate::trace::sidecar_path(&path);
        confined
            .write(&side_path, side, true)
            .map_err(|e| format!("cannot write `{side_path}`: {e}"))?;
    }
    if let Some(signer) = how.signer {
        let what = (path.as_path(), compressed.as_slice());
        crate::eval::sign_trace(signer, how.dir, what, how.limits, true)
            .map_err(|e| format!("cannot sign `{path}`: {e}"))?;
    }
    Ok(path)
}
