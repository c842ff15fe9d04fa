//! `tracereplay check`: judge, render, and map the outcome to an exit code.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::baseline::BaselineStore;
use crate::diff::DriftMode;
use crate::discover::discover;
use crate::eval::{
    BaselineOptions, CacheFile, CacheKey, CheckOptions, CheckStats, FailOn, Progress,
    check_with_cache_file, in_pool,
};
use crate::fsutil::write_atomic_streaming;
use crate::privacy::lint::read_allow_file;
use crate::report::{self, human::HumanOptions};
use anyhow::{Context, bail};
use camino::{Utf8Path, Utf8PathBuf};

use super::args::{CheckArgs, CheckFormatArg, DriftArg, FailOnArg};
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
    let started = Instant::now();
    let threads = args.jobs.map(usize::from);
    let row_memory = (args.row_memory as usize) << 20;
    // One pool of `--jobs` threads lists the directories and then judges.
    let (report, stats, discovered, judged) = in_pool(threads, || -> anyhow::Result<_> {
        // The result cache's file is read (and its hash checked) while the files are discovered.
        let (found, cache_file) = std::thread::scope(|s| {
            let cache_file = (!args.no_cache).then(|| {
                s.spawn(|| {
                    CacheKey::resolve().map_or_else(CacheFile::default, |key| {
                        CacheFile::read_with(&args.cache_dir, row_memory as u64, &key)
                    })
                })
            });
            let found = discover(&args.paths, &args.scenario_dirs);
            (found, cache_file.and_then(|h| h.join().ok()))
        });
        let found = found?;
        let discovered = started.elapsed();
        let bar = progress_bar(found.trace_files.len());
        let stats = Arc::new(CheckStats::default());
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
            whole_suite: crate::discover::covers_suite_roots(&args.paths),
            tags: args.tags.clone(),
            threads,
            baselines,
            baselines_note,
            progress: bar.clone().map(|b| Progress(Arc::new(move || b.inc(1)))),
            secrets: args.secrets.mode(),
            allow_raw_prompts: args.allow_raw_prompts,
            waived: read_allow_file(Utf8Path::new(ALLOW_FILE)),
            scripted: args.scripted,
            partition: args.partition,
            cache_dir: (!args.no_cache).then(|| args.cache_dir.clone()),
            stats: Some(stats.clone()),
            row_memory: Some(row_memory),
        };
        let mut searched = args.paths.clone();
        searched.extend(args.scenario_dirs.iter().cloned());
        let report = check_with_cache_file(&found, &searched, &opts, cache_file)?;
        if let Some(b) = &bar {
            b.finish_and_clear();
        }
        Ok((report, stats, discovered, started.elapsed() - discovered))
    })??;

    // Diagnostics go to stderr, in report order, so they are as deterministic as the report.
    let mut err = std::io::stderr().lock();
    for w in &report.warnings {
        let _ = writeln!(err, "warning: {}", report::escape_controls(w));
    }
    let with_warnings = (report.results.metas().enumerate()).filter(|(_, m)| m.has_warnings);
    for (i, _) in with_warnings {
        report.results.with_head(i, |h| {
            for w in h.warnings.iter() {
                let _ = writeln!(err, "warning: {}", report::escape_controls(w));
            }
        });
    }
    let files: [(&Option<Utf8PathBuf>, Renderer, &str); 3] = [
        (&args.json, report::json::render, "JSON report"),
        (&args.junit, report::junit::render, "JUnit report"),
        (&args.markdown, report::markdown::render, "Markdown summary"),
    ];
    for (path, render, what) in files {
        if let Some(path) = path {
            write_atomic_streaming(path, &mut |out| render(&report, out))
                .with_context(|| format!("cannot write the {what} to `{path}`"))?;
        }
    }
    if let Some(dir) = &args.artifacts {
        let run = report::runfolder::write(dir, &report)
            .with_context(|| format!("cannot write the run folder under `{dir}`"))?;
        let (run, problems) = run;
        for p in problems {
            let _ = writeln!(err, "warning: {}", report::escape_controls(&p));
        }
        let _ = writeln!(err, "run folder: {run}");
    }
    let render_start = Instant::now();
    render(args.format, &report, out)?;
    if args.timings {
        out.flush()?;
        let _ = writeln!(
            err,
            "timings: discover {} ms, judge {} ms ({} traces, {} from the cache), render {} ms",
            discovered.as_millis(),
            judged.as_millis(),
            report.summary.traces,
            stats.recalled.load(std::sync::atomic::Ordering::Relaxed),
            render_start.elapsed().as_millis()
        );
    }
    if report.results.unreadable() {
        bail!(
            "result rows kept in a temporary file could not be read back, so the report is incomplete; run again with a working temporary directory (or more `--row-memory`)"
        );
    }
    let failed = report.is_failure();
    // The process ends right after: freeing tens of thousands of rows one by one is wasted time.
    std::mem::forget(report);
    Ok(if failed { exit::FAILURE } else { exit::OK })
}

/// Fingerprints of waived secrets, in the working directory.
pub const ALLOW_FILE: &str = ".tracereplay-allow";

type Renderer = fn(&crate::report::Report, &mut dyn Write) -> std::io::Result<()>;

/// Writes `report` to `out` in `format` (shared by `check` and `merge`).
pub fn render(
    format: CheckFormatArg,
    report: &crate::report::Report,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    match format {
        CheckFormatArg::Human => {
            report::human::render(report, HumanOptions { color: use_color() }, out)
        }
        CheckFormatArg::Json => report::json::render(report, out),
        CheckFormatArg::Junit => report::junit::render(report, out),
        CheckFormatArg::Markdown => report::markdown::render(report, out),
        CheckFormatArg::Github => report::github::render(report, out),
    }
}

/// Colours only on a terminal, and never with `NO_COLOR` set (to anything non-empty).
pub fn use_color() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// A progress bar on stderr for long runs on a terminal; none otherwise.
fn progress_bar(traces: usize) -> Option<ProgressBar> {
    const LONG_RUN: usize = 500;
    if traces < LONG_RUN || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::with_draw_target(Some(traces as u64), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} traces {elapsed}") {
        bar.set_style(style);
    }
    Some(bar)
}
