//! `tracereplay check`: judge, render, and map the outcome to an exit code.

use std::io::{IsTerminal, Write};

use anyhow::{Context, bail};
use camino::Utf8Path;
use tracereplay::discover::discover;
use tracereplay::eval::{CheckOptions, FailOn, check};
use tracereplay::fsutil::write_atomic;
use tracereplay::report::{self, human::HumanOptions};

use super::args::{CheckArgs, FailOnArg, FormatArg};
use super::exit;

/// Runs `check`; `Err` means exit 2.
pub fn run(args: &CheckArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let baselines_note = match &args.baselines {
        Some(dir) if !dir.is_dir() => {
            bail!("the baselines directory `{dir}` given with `--baselines` does not exist")
        }
        Some(dir) => format!("`{dir}` found, but comparison against approved baselines is not built yet in this version"),
        None if Utf8Path::new("baselines").is_dir() => {
            "`baselines/` found, but comparison against approved baselines is not built yet in this version".to_owned()
        }
        None => "no `baselines/` directory, so no baseline comparison happened".to_owned(),
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
