//! Resolving flags into library options, once, for every command (the flags are raw values in
//! [`super::args`]; what they mean is decided here): judging, drift and baselines, failures that
//! count, waivers, colour.

use std::io::IsTerminal;

use anyhow::bail;
use camino::{Utf8Path, Utf8PathBuf};

use super::args::{ColorArg, DriftArg, DriftArgs, FailOnArg, JudgingArgs};
use tracereplay::baseline::BaselineStore;
use tracereplay::diff::DriftMode;
use tracereplay::eval::{BaselinePolicy, Baselines, FailOn, JudgeOptions};

/// Fingerprints of waived secrets, in the working directory.
pub(super) const ALLOW_FILE: &str = ".tracereplay-allow";

/// The secret fingerprints `.tracereplay-allow` waives.
pub(super) fn waived() -> std::collections::HashSet<String> {
    tracereplay::privacy::lint::read_allow_file(Utf8Path::new(ALLOW_FILE))
}

/// How traces are judged (reading the price table, when one is given).
pub(super) fn judging(args: &JudgingArgs) -> anyhow::Result<JudgeOptions> {
    let prices = match &args.prices {
        Some(file) => Some(std::sync::Arc::new(super::prices::read(file)?)),
        None => None,
    };
    Ok(JudgeOptions {
        limits: args.limits.limits(),
        require_sealed: args.require_sealed,
        allow_raw_prompts: args.allow_raw_prompts,
        prices,
    })
}

/// The settings every command runs with, resolved once from the command line and the project
/// file before any command runs (ripgrep's high-level arguments): no command reads a global,
/// and none resolves these its own way.
#[derive(Debug, Clone)]
pub(super) struct Resolved {
    /// `--color`.
    color: ColorArg,
    /// The baselines directory used when `--baselines` is not given: `baselines/`, or the
    /// project file's `baselines` (which, like the default, may not exist yet).
    default_baselines: Utf8PathBuf,
    /// Where a trace's scenario is looked up when the checked paths do not define it: the
    /// project file's `paths`, else `traces/`.
    suite_roots: Vec<Utf8PathBuf>,
}

impl Resolved {
    /// Resolves the command line `cli` (already holding the project file's settings as
    /// arguments) with what of `project` is not an argument.
    pub(super) fn from(cli: &super::args::Cli, project: &super::config::Config) -> Self {
        let (paths, baselines) = project.defaults();
        Self {
            color: cli.color,
            default_baselines: baselines.unwrap_or_else(|| "baselines".into()),
            suite_roots: paths.unwrap_or_else(|| vec![tracereplay::discover::DEFAULT_ROOT.into()]),
        }
    }

    /// The suite's roots ([`Resolved::suite_roots`]).
    pub(super) fn suite_roots(&self) -> &[Utf8PathBuf] {
        &self.suite_roots
    }

    /// The baselines directory in force: an explicit `--baselines DIR` must exist; the default
    /// is used when present and otherwise means "no comparison".
    pub(super) fn resolve_baselines(
        &self,
        explicit: Option<&Utf8Path>,
    ) -> anyhow::Result<Option<Utf8PathBuf>> {
        match explicit {
            Some(dir) if !dir.is_dir() => {
                bail!("the baselines directory `{dir}` given with `--baselines` does not exist")
            }
            Some(dir) => Ok(Some(dir.to_owned())),
            None if self.default_baselines.is_dir() => Ok(Some(self.default_baselines.clone())),
            None => Ok(None),
        }
    }

    /// Whether and how baselines take part: `--drift ignore` turns them off; otherwise the
    /// directory in force ([`Resolved::resolve_baselines`]) with the drift mode and usage
    /// tolerance.
    pub(super) fn baselines(
        &self,
        drift: &DriftArgs,
        explicit_dir: Option<&Utf8Path>,
        write_pending: bool,
    ) -> anyhow::Result<Baselines> {
        let dir = self.resolve_baselines(explicit_dir)?;
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
                refresh: false,
                alpha: alpha(drift.alpha)?,
            },
            write_pending,
        })
    }

    /// Colours on standard output: `--color always`/`never`; with `auto`, never with
    /// `NO_COLOR`, always with `CLICOLOR_FORCE` or `FORCE_COLOR`, else only on a terminal.
    pub(super) fn use_color(&self) -> bool {
        match self.color {
            ColorArg::Always => true,
            ColorArg::Never => false,
            ColorArg::Auto if no_color() => false,
            ColorArg::Auto if env_on("CLICOLOR_FORCE") || env_on("FORCE_COLOR") => true,
            ColorArg::Auto => std::io::stdout().is_terminal(),
        }
    }

    /// The progress bar follows the colour rule, but only ever draws on a terminal (stderr):
    /// never with `--color never` or `NO_COLOR`, and forcing colours never puts it in a log.
    pub(super) fn use_progress(&self) -> bool {
        std::io::stderr().is_terminal()
            && self.color != ColorArg::Never
            && (self.color == ColorArg::Always || !no_color())
    }
}

/// `--usage-tolerance PCT` as a fraction.
pub(super) fn tolerance(pct: f64) -> anyhow::Result<f64> {
    if !pct.is_finite() || pct < 0.0 {
        bail!("`--usage-tolerance` must be a non-negative percentage, got {pct}");
    }
    Ok(pct / 100.0)
}

/// `--alpha`, checked.
pub(super) fn alpha(alpha: f64) -> anyhow::Result<f64> {
    if !(alpha > 0.0 && alpha < 1.0) {
        bail!("`--alpha` must be a number between 0 and 1, got {alpha}");
    }
    Ok(alpha)
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

/// Whether an environment variable is set to something other than empty, `0` or `false`.
fn env_on(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| {
        let v = v.trim();
        !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false")
    })
}

/// Whether `NO_COLOR` is set (to anything non-empty).
fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
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
