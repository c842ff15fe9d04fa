//! Helpers the commands share that are no setting (those are `super::settings`): waived
//! secrets, where a server may listen, the prompt hasher.

use camino::Utf8Path;

/// Fingerprints of waived secrets, in the working directory.
pub(super) const ALLOW_FILE: &str = ".tracereplay-allow";

/// The secret fingerprints `.tracereplay-allow` waives.
pub(super) fn waived() -> std::collections::HashSet<String> {
    tracereplay_trace::privacy::lint::read_allow_file(Utf8Path::new(ALLOW_FILE))
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
) -> anyhow::Result<tracereplay::trace::PromptHasher> {
    use tracereplay::trace::{KEY_ENV, PromptHasher};
    match (PromptHasher::from_env(), unkeyed) {
        (_, true) => Ok(PromptHasher::unkeyed()),
        (Some(h), false) => Ok(h),
        (None, false) => anyhow::bail!(
            "`{cmd}` hashes prompts with a key: set `{KEY_ENV}` (make one with `tracereplay key new`), or pass `--unkeyed` for unkeyed hashes"
        ),
    }
}
