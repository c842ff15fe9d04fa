//! Helpers the commands share that are no setting (those are `super::settings`): waived
//! secrets, and what stands where a trace is about to be written.

use camino::Utf8Path;

/// Fingerprints of waived secrets, in the working directory.
pub(super) const ALLOW_FILE: &str = ".tracereplay-allow";

/// The secret fingerprints `.tracereplay-allow` waives.
pub(super) fn waived() -> std::collections::HashSet<String> {
    tracereplay::privacy::lint::read_allow_file(Utf8Path::new(ALLOW_FILE))
}

/// What stands where a trace is about to be written (by `ingest` or `pack`).
pub(super) enum AtDestination {
    /// Nothing.
    Free,
    /// A sealed trace with the same content hash.
    Same,
    /// Something else: another sealed trace (its content hash), or `None`, a file that is no
    /// readable sealed trace. Kept unless `--force`.
    Different(Option<String>),
}

/// What stands at `dest`, against a trace of `content_hash`.
pub(super) fn at_destination(
    dest: &Utf8Path,
    content_hash: &str,
    limits: tracereplay::trace::Limits,
) -> AtDestination {
    if std::fs::symlink_metadata(dest).is_err() {
        return AtDestination::Free;
    }
    let existing = tracereplay::trace::TraceFile::open(dest, limits)
        .ok()
        .and_then(|f| f.verify_seal(true).ok())
        .map(|s| s.content_hash);
    match existing {
        Some(h) if h == content_hash => AtDestination::Same,
        other => AtDestination::Different(other),
    }
}

/// Why a trace is not written over what stands at `dest` (`existing`: its content hash, when it
/// is a sealed trace).
pub(super) fn not_replaced(dest: &Utf8Path, existing: Option<&str>, new: &str) -> String {
    let what = existing.map_or_else(
        || "something that is not a readable sealed trace".to_owned(),
        |h| format!("a different trace ({h}, the new one is {new})"),
    );
    format!(
        "`{}` holds {what}; not replaced — pass `--force` to replace it",
        tracereplay::paths::display_path(dest)
    )
}
