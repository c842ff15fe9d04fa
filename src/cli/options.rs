//! Helpers the commands share that are no setting (those are `super::settings`): waived
//! secrets, where a server may listen, the prompt hasher, the options of judging only.

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

/// The options of a command that judges the traces under `paths` as `check` does but fails
/// nothing and writes nothing (`trials plan`, `trials next`, `diff`): what it makes of the
/// report is its own.
pub(super) fn judge_only(
    settings: &super::settings::Settings,
    paths: &[camino::Utf8PathBuf],
    (limits, allow_raw_prompts): (tracereplay::trace::Limits, bool),
    baselines: tracereplay_core::eval::Baselines,
) -> anyhow::Result<tracereplay_core::eval::CheckOptions> {
    use tracereplay_core::eval::{CheckOptions, Counting, FailOn, Selection};
    Ok(CheckOptions {
        selection: Selection {
            whole_suite: tracereplay_core::discover::covers_suite_roots(paths),
            ..Selection::default()
        },
        judging: settings.judging(limits, allow_raw_prompts)?,
        counting: Counting {
            fail_on: FailOn::None,
            ..Counting::default()
        },
        baselines,
        ..CheckOptions::default()
    })
}
