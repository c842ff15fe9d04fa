//! Resolving flags into library options, once, for every command (the flags are raw values in
//! [`super::args`]; what they mean is decided here): judging, drift and baselines, failures that
//! count, waivers, colour.

use std::io::IsTerminal;

use anyhow::bail;
use camino::{Utf8Path, Utf8PathBuf};

use super::args::{DriftArg, DriftArgs, FailOnArg, JudgingArgs};
use crate::baseline::BaselineStore;
use crate::diff::DriftMode;
use crate::eval::{BaselinePolicy, Baselines, FailOn, JudgeOptions};

/// Fingerprints of waived secrets, in the working directory.
pub(super) const ALLOW_FILE: &str = ".tracereplay-allow";

/// The secret fingerprints `.tracereplay-allow` waives.
pub(super) fn waived() -> std::collections::HashSet<String> {
    crate::privacy::lint::read_allow_file(Utf8Path::new(ALLOW_FILE))
}

/// How traces are judged.
pub(super) fn judging(args: &JudgingArgs) -> JudgeOptions {
    JudgeOptions {
        limits: args.limits.limits(),
        require_sealed: args.require_sealed,
        allow_raw_prompts: args.allow_raw_prompts,
    }
}

/// The baselines directory in force: an explicit `--baselines DIR` must exist; the default
/// `baselines/` is used when present and otherwise means "no comparison".
pub(super) fn resolve_baselines(
    explicit: Option<&Utf8Path>,
) -> anyhow::Result<Option<Utf8PathBuf>> {
    match explicit {
        Some(dir) if !dir.is_dir() => {
            bail!("the baselines directory `{dir}` given with `--baselines` does not exist")
        }
        Some(dir) => Ok(Some(dir.to_owned())),
        None if Utf8Path::new("baselines").is_dir() => Ok(Some("baselines".into())),
        None => Ok(None),
    }
}

/// Whether and how baselines take part: `--drift ignore` turns them off; otherwise the
/// directory in force ([`resolve_baselines`]) with the drift mode and usage tolerance.
pub(super) fn baselines(
    drift: &DriftArgs,
    explicit_dir: Option<&Utf8Path>,
    write_pending: bool,
) -> anyhow::Result<Baselines> {
    let dir = resolve_baselines(explicit_dir)?;
    let mode = match drift.drift {
        DriftArg::Ignore => return Ok(Baselines::Ignored),
        DriftArg::Default => DriftMode::Default,
        DriftArg::Strict => DriftMode::Strict,
        DriftArg::Warn => DriftMode::Warn,
    };
    let Some(dir) = dir else {
        return Ok(Baselines::Absent);
    };
    Ok(Baselines::Compared {
        policy: BaselinePolicy {
            store: BaselineStore::new(dir),
            mode,
            tolerance: tolerance(drift.usage_tolerance)?,
        },
        write_pending,
    })
}

/// `--usage-tolerance PCT` as a fraction.
pub(super) fn tolerance(pct: f64) -> anyhow::Result<f64> {
    if !pct.is_finite() || pct < 0.0 {
        bail!("`--usage-tolerance` must be a non-negative percentage, got {pct}");
    }
    Ok(pct / 100.0)
}

/// `--fail-on`.
pub(super) fn fail_on(arg: FailOnArg) -> FailOn {
    match arg {
        FailOnArg::Any => FailOn::Any,
        FailOnArg::High => FailOn::High,
        FailOnArg::Critical => FailOn::Critical,
        FailOnArg::None => FailOn::None,
    }
}

/// Colours only on a terminal, and never with `NO_COLOR` set (to anything non-empty).
pub(super) fn use_color() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}
