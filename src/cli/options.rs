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

/// Checks where a server (`replay serve`, `record`, `collect`) is to listen: loopback, or
/// elsewhere only with `--allow-remote`, then with a warning. `risk` says what anyone who
/// reaches it could do ("is served", "can write traces").
pub(super) fn check_listen(
    addr: std::net::SocketAddr,
    allow_remote: bool,
    risk: &str,
) -> anyhow::Result<()> {
    if addr.ip().is_loopback() {
        return Ok(());
    }
    if !allow_remote {
        anyhow::bail!(
            "`{addr}` is not a loopback address: anyone who reaches it {risk}; pass --allow-remote to mean it"
        );
    }
    diag!("warning: listening on {addr}, which is not loopback: anyone who reaches it {risk}");
    Ok(())
}

/// How a command that writes traces (`ingest`, `record`, `collect`) hashes prompts: with the
/// key in `TRACEREPLAY_HASH_KEY`, or unkeyed with `--unkeyed`; neither is an error naming `cmd`.
pub(super) fn prompt_hasher(
    cmd: &str,
    unkeyed: bool,
) -> anyhow::Result<tracereplay::privacy::PromptHasher> {
    use tracereplay::privacy::{KEY_ENV, PromptHasher};
    match (PromptHasher::from_env(), unkeyed) {
        (_, true) => Ok(PromptHasher::unkeyed()),
        (Some(h), false) => Ok(h),
        (None, false) => anyhow::bail!(
            "`{cmd}` hashes prompts with a key: set `{KEY_ENV}` (make one with `tracereplay key new`), or pass `--unkeyed` for unkeyed hashes"
        ),
    }
}
