//! `tracereplay check`: judge, render, and map the outcome to an exit code.

use std::io::{IsTerminal, Write};

use anyhow::{Context, bail};
use camino::{Utf8Path, Utf8PathBuf};
use tracereplay::baseline::BaselineStore;
use tracereplay::diff::DriftMode;
use tracereplay::discover::discover;
use tracereplay::eval::{BaselineOptions, CheckOptions, FailOn, check};
use tracereplay::fsutil::write_atomic;
use tracereplay::report::{self, human::HumanOptions};

use super::args::{CheckArgs, DriftArg, FailOnArg, FormatArg};
use super::ci::is_ci;
use super::exit;

/// The baselines directory in force: an explicit `--baselines DIR` must exist; the default
/// `baselines/` is used when present and otherwise means "no comparison".
pub fn resolve_baselines(explicit: Option<&Utf8Path>) -> anyhow::Result<Option<Utf8PathBuf>> {
    match explicit {
        Some(dir) if !dir.is_dir() => {
            bail!("the baselines directory `{dir}` given with `--baselines` does not exist")
        }
        Some(dir) => Ok(Some(dir.to_owned())),
        None if Utf8Path::new("baselines").is_dir() => Ok(Some("baselines".into())),
        None => Ok(None),
    }
}

/// The library's drift mode.
pub fn drift_mode(arg: DriftArg) -> DriftMode {
    match arg {
        DriftArg::Default => DriftMode::Default,
        DriftArg::Strict => DriftMode::Strict,
        DriftArg::Warn => DriftMode::Warn,
        DriftArg::Ignore => DriftMode::Ignore,
    }
}

/// `--usage-tolerance PCT` as a fraction.
pub fn tolerance(pct: f64) -> anyhow::Result<f64> {
    if !pct.is_finite() || pct < 0.0 {
        bail!("`--usage-tolerance` must be a non-negative percentage, got {pct}");
    }
    Ok(pct / 100.0)
}

/// Runs `check`; `Err` means exit 2.
pub fn run(args: &CheckArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let under_ci = is_ci(&args.ci);
    let (baselines, baselines_note) = match (args.drift, resolve_baselines(args.baselines.as_deref())?) {
        (DriftArg::Ignore, _) => (None, "not compared (`--drift ignore`)".to_owned()),
        (_, None) => (None, "no `baselines/` directory, so no baseline comparison happened; create approved baselines with `tracereplay baseline approve`".to_owned()),
        (mode, Some(dir)) => {
            let note = format!(
                "compared with `{dir}`; {}",
                if under_ci { "CI: no pending file written" } else { "pending files written beside the approved ones" }
            );
            let opts = BaselineOptions {
                store: BaselineStore::new(dir),
                mode: drift_mode(mode),
                tolerance: tolerance(args.usage_tolerance)?,
                write_pending: !under_ci,
            };
            (Some(opts), note)
        }
    };
    let found = discover(&args.paths, &args.scenario_dirs)?;
    let opts = CheckOptions {
        limits: args.limits.limits(),
        require_sealed: args.require_sealed,
        fail_on: match args.fail_on {
            FailOnArg::Any => FailOn::Any,
            FailOnArg::High => FailOn::High,
            FailOnArg::Critical => FailOn::Critical,
            FailOnArg::None => FailOn::None,
        },
        scenarios: args.scenarios.clone(),
        tags: args.tags.clone(),
        threads: args.jobs.map(usize::from),
        baselines,
        baselines_note,
    };
    let mut searched = args.paths.clone();
    searched.extend(args.scenario_dirs.iter().cloned());
    let report = check(&found, &searched, &opts)?;

    // Diagnostics go to stderr, in report order, so they are as deterministic as the report.
    let mut err = std::io::stderr().lock();
    for w in &report.warnings {
        let _ = writeln!(err, "warning: {w}");
    }
    for row in &report.results {
        for w in &row.warnings {
            let _ = writeln!(err, "warning: {w}");
        }
    }
    if let Some(path) = &args.json {
        let mut buf = Vec::new();
        report::json::render(&report, &mut buf)?;
        write_atomic(path, &buf)
            .with_context(|| format!("cannot write the JSON report to `{path}`"))?;
    }
    match args.format {
        FormatArg::Human => {
            let color = std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
            report::human::render(&report, HumanOptions { color }, out)?;
        }
        FormatArg::Json => report::json::render(&report, out)?,
    }
    Ok(if report.is_failure() {
        exit::FAILURE
    } else {
        exit::OK
    })
}
