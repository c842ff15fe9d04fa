//! `tracereplay check`: judge, render, and map the outcome to an exit code.

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use anyhow::{Context, bail};
use tracereplay::report::{
    self, ExportContext,
    human::{HumanOptions, StatusLevel},
};
use tracereplay::{CacheRead, Suite, in_pool};
use tracereplay_core::eval::{CheckOptions, CheckStats, Counting, Execution, Progress, Selection};
use tracereplay_core::run_record::{Inputs, Invocation, Recorded};
use tracereplay_trace::fsutil::write_atomic_streaming;

use super::args::{CheckArgs, Format, StatusLevelArg};
use super::check_last::LastRun;
use super::check_record::{Kept, ToKeep};
use super::ci::is_ci;
use super::settings::Settings;
use super::{exit, options};

/// What a run settles before judging: the last run it re-judges, the signatures it requires,
/// and the key its attestation will be signed with — read first, so that a run asked to attest
/// never ends without its record.
struct Prepared {
    last_run: Option<LastRun>,
    signatures: Option<Arc<dyn tracereplay_core::sign::SignatureCheck>>,
    trusted_ids: Vec<String>,
    attest_key: Option<Arc<tracereplay_core::sign::keys::SigningKey>>,
}

/// A judged suite, with how long discovering and judging took.
struct Judged {
    report: report::Report,
    stats: Arc<CheckStats>,
    /// Traces `--last-failed` left out.
    left_out: usize,
    discovered: std::time::Duration,
    judged: std::time::Duration,
    /// The run's inputs, taken before judging when it takes part in the run record.
    inputs: Option<Inputs>,
    /// Trace files judged.
    traces: usize,
}

/// A suite judged, or the record of the same run of the same files.
enum Judgement {
    Judged(Box<Judged>),
    Replayed(Recorded),
}

/// Runs `check`; `Err` means exit 2. Everything parallel in it (discovery, judging, drawing the
/// report) runs on one pool of `--jobs` threads.
pub(super) fn run(
    args: &CheckArgs,
    settings: &Settings,
    out: &mut (dyn Write + Send),
) -> anyhow::Result<i32> {
    in_pool(args.jobs.map(usize::from), || {
        run_in_pool(args, settings, out)
    })?
}

fn run_in_pool(
    args: &CheckArgs,
    settings: &Settings,
    out: &mut (dyn Write + Send),
) -> anyhow::Result<i32> {
    let prepared = prepare(args, settings)?;
    let invocation = super::check_record::invocation(args, settings);
    let Judged {
        report,
        stats,
        left_out,
        discovered,
        judged,
        inputs,
        traces,
    } = match judge_suite(args, settings, &prepared, invocation.as_ref())? {
        Judgement::Judged(j) => *j,
        Judgement::Replayed(r) => {
            let _ = std::io::stderr().lock().write_all(&r.stderr);
            out.write_all(&r.stdout)?;
            return Ok(r.code);
        }
    };
    let to_keep = (invocation.as_ref().zip(inputs.as_ref())).map(|(invocation, inputs)| ToKeep {
        invocation,
        inputs,
        traces,
    });
    let (out, mut err) = (
        &mut Kept::new(out, to_keep.is_some()),
        Kept::new(std::io::stderr().lock(), to_keep.is_some()),
    );
    // Diagnostics go to stderr, in report order, so they are as deterministic as the report.
    print_warnings(&report, &mut err);
    if !args.quiet {
        for n in &report.notes {
            let _ = writeln!(err, "note: {}", report::escape_controls(n));
        }
    }
    let html = (args.html.is_some() || args.artifacts.is_some() || args.format == Format::Html)
        .then(|| html_context(args, settings, &report));
    let ctx = ExportContext {
        html: html.as_ref(),
        limits: args.judging.limits.limits(),
        // One time for every format that stamps it: the OTLP file and what is sent agree.
        time_unix_nano: Some(report::html::report_time_nanos()),
        ..ExportContext::default()
    };
    let not_written = write_files(args, &report, &ctx, &mut err);
    let render_start = Instant::now();
    let rows = if args.verbose {
        Some(StatusLevel::All)
    } else {
        args.status_level.map(status_level)
    };
    let shown = (args.quiet, settings.use_color());
    render(args.format, &report, rows, shown, &ctx, out)?;
    if args.format == Format::Github {
        append_step_summary(&report, &ctx, &mut err);
    }
    if let Some(last) = &prepared.last_run {
        let note = format!(
            "last-failed: judged {} trace(s) that failed, errored, changed or were not judged in run {}; {left_out} that passed then, unchanged, were left out (a re-run for a person, not a CI gate)",
            report.summary.traces, last.id
        );
        if args.format == Format::Human {
            writeln!(out, "{note}")?;
        } else {
            diag!("{note}");
        }
    }
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
    if !not_written.is_empty() {
        out.flush()?;
        bail!(
            "{}; every file that existed before is unchanged",
            not_written.join("; ")
        );
    }
    let code = if report.is_failure() {
        exit::FAILURE
    } else {
        exit::OK
    };
    if let (Some(path), Some(key)) = (&args.signing.attest, &prepared.attest_key) {
        out.flush()?;
        attest(
            args,
            settings,
            (&report, code),
            (path, key),
            prepared.trusted_ids,
        )?;
    }
    if let Some(to_keep) = &to_keep {
        let failed = report.failed_writes.len();
        super::check_record::keep(to_keep, &stats, failed, code, (out, &err));
    }
    Ok(code)
}

/// Settles what the run needs before judging ([`Prepared`]), refusing what cannot work:
/// `--last-failed` under CI, `--require-signed` on remote traces, `--attest` without a key.
fn prepare(args: &CheckArgs, settings: &Settings) -> anyhow::Result<Prepared> {
    if args.last_failed && is_ci(&args.ci) {
        bail!(
            "`--last-failed` re-judges only what failed in the last run folder, so it is no CI gate: under CI, run the whole `check` (or pass `--no-ci` if this is not CI)"
        );
    }
    let last_run = if args.last_failed {
        let runs = (args.artifacts.clone()).unwrap_or_else(|| ".tracereplay/runs".into());
        Some(LastRun::read(&runs)?)
    } else {
        None
    };
    let require_signed = settings.require_signed();
    if require_signed
        && let Some(url) =
            (settings.paths().iter()).find(|p| tracereplay_core::remote::is_remote(p.as_str()))
    {
        bail!(
            "`--require-signed` reads each trace's signature from beside it on disk, and `{url}` is remote; check signed traces from a local copy"
        );
    }
    let run_id = settings.run_id().map(str::to_owned);
    let trusted = (require_signed)
        .then(|| super::sign::trusted(settings.trusted_keys(), "`--require-signed`"))
        .transpose()?
        .map(|keys| keys.for_run(run_id.clone()));
    let trusted_ids = trusted.as_ref().map(|k| k.id_list()).unwrap_or_default();
    let signatures =
        trusted.map(|k| Arc::new(k) as Arc<dyn tracereplay_core::sign::SignatureCheck>);
    let attest_key = match &args.signing.attest {
        Some(_) => Some(super::sign::signer(&args.signing.signing)?.with_context(|| {
            format!(
                "`--attest` signs the record with the signing key: set `{}` to a secret key file's content, or pass `--signing-key FILE`",
                tracereplay_core::sign::SIGNING_KEY_ENV
            )
        })?),
        None => None,
    };
    Ok(Prepared {
        last_run,
        signatures,
        trusted_ids,
        attest_key,
    })
}

/// Discovers the suite and judges it, in one pool of `--jobs` threads (the result cache's file
/// read while the files are discovered); or, when the run record of `invocation` was made from
/// the same files, gives that.
fn judge_suite(
    args: &CheckArgs,
    settings: &Settings,
    prepared: &Prepared,
    invocation: Option<&Invocation>,
) -> anyhow::Result<Judgement> {
    let paths = settings.paths();
    let in_suite = super::scope::pending_allowed(&paths, settings, args.quiet || is_ci(&args.ci));
    let baselines = settings.baselines(!is_ci(&args.ci) && in_suite)?;
    let started = Instant::now();
    let threads = args.jobs.map(usize::from);
    let row_memory = (args.row_memory as usize) << 20;
    let cache_dir = settings.cache_dir();
    let last_run = prepared.last_run.as_ref();
    let recorded = invocation.and_then(Invocation::recorded);
    in_pool(threads, || -> anyhow::Result<Judgement> {
        let (suite, cache) = std::thread::scope(|s| {
            // With a record of this invocation kept, the cache is read only if it does not serve.
            let cache = (!args.no_cache && recorded.is_none())
                .then(|| s.spawn(|| CacheRead::read(&cache_dir, row_memory as u64)));
            let suite = Suite::open(&paths, &settings.scenarios());
            (suite, cache.and_then(|h| h.join().ok()))
        });
        let mut suite = suite?;
        suite.look_up_in(settings.suite_roots());
        let mut left_out = 0;
        if let Some(last) = last_run {
            let limits = args.judging.limits.limits();
            // Hashing the candidates is parallel, as judging them would be.
            left_out = suite.retain_traces(|p| last.keeps(p, limits));
        }
        let discovered = started.elapsed();
        let bar = progress_bar(suite.traces(), settings.use_progress());
        let stats = Arc::new(CheckStats::default());
        let mut opts = CheckOptions {
            selection: Selection {
                scenarios: args.scenarios.clone(),
                tags: args.tags.clone(),
                partition: args.partition,
                whole_suite: tracereplay_core::discover::covers_suite_roots(&paths),
                scripted: args.scripted,
                rerun: last_run.map(|l| l.passed_scenarios.clone()),
            },
            judging: settings
                .judging(args.judging.limits.limits(), args.judging.allow_raw_prompts)?,
            counting: Counting {
                fail_on: settings.fail_on(),
                secrets: args.secrets.mode(),
                waived: options::waived(),
                budget: settings.budget(),
            },
            baselines,
            execution: Execution {
                threads,
                progress: bar.clone().map(|b| Progress(Arc::new(move || b.inc(1)))),
                cache_dir: (!args.no_cache).then(|| cache_dir.clone()),
                stats: Some(stats.clone()),
                row_memory: Some(row_memory),
                stamps: None,
            },
            signatures: prepared.signatures.clone(),
            share_key: args.partition.and_then(|_| super::merge::share_key()),
        };
        // A record whose head differs cannot serve: the cache is then read while the trace
        // files are stamped.
        let head = invocation.map(|_| Inputs::head(&suite, &opts));
        let stale = |r: &Recorded| head.as_ref().is_some_and(|h| !r.head_matches(h));
        let read_now = !args.no_cache && recorded.as_ref().is_some_and(stale);
        let (inputs, read) = std::thread::scope(|s| {
            let reading =
                read_now.then(|| s.spawn(|| CacheRead::read(&cache_dir, row_memory as u64)));
            let inputs = head.map(|h| h.finish(&suite, &opts));
            (inputs, reading.and_then(|h| h.join().ok()))
        });
        let same_files = |r: &Recorded| inputs.as_ref().is_some_and(|i| r.matches(i));
        if let Some(recorded) = recorded.filter(same_files) {
            return Ok(Judgement::Replayed(recorded));
        }
        let cache = cache
            .or(read)
            .or_else(|| (!args.no_cache).then(|| CacheRead::read(&cache_dir, row_memory as u64)));
        opts.execution.stamps = inputs.as_ref().map(Inputs::trace_stamps);
        let report = match cache {
            Some(cache) => suite.check_with_cache(&opts, cache)?,
            None => suite.check(&opts)?,
        };
        if let Some(b) = &bar {
            b.finish_and_clear();
        }
        Ok(Judgement::Judged(Box::new(Judged {
            report,
            stats,
            left_out,
            discovered,
            judged: started.elapsed() - discovered,
            inputs,
            traces: suite.traces(),
        })))
    })?
}

/// The run's warnings and its rows', on stderr (URLs' credentials redacted, controls escaped).
fn print_warnings(report: &report::Report, err: &mut dyn Write) {
    // Many warnings of one kind (one per trace of a directory) are a few and a count.
    for w in super::repeats::collapse(&report.warnings) {
        let w = tracereplay_trace::paths::redact_urls_in(&w);
        let _ = writeln!(err, "warning: {}", report::escape_controls(&w));
    }
    if report.results.metas().any(|m| m.has_warnings) {
        for row in report.results.summaries() {
            for w in &row.warnings {
                let _ = writeln!(err, "warning: {}", report::escape_controls(w));
            }
        }
    }
}

/// How the run was made, for its HTML report.
fn html_context(
    args: &CheckArgs,
    settings: &Settings,
    report: &report::Report,
) -> report::html::HtmlContext {
    report::html::HtmlContext {
        exit_code: if report.is_failure() {
            exit::FAILURE
        } else {
            exit::OK
        },
        flags: judging_flags(args, settings),
        generated: Some(report::html::generated_now()),
        limits: args.judging.limits.limits(),
        waived: options::waived(),
        raw_prompts: args.judging.allow_raw_prompts,
    }
}

/// Writes every file the run also writes — each format's, through its exporter; the OTLP
/// endpoint; the run folder — and returns what could not be written, in words. A file that
/// cannot be written fails the run (exit 2), but only after the report is shown: the results
/// are never lost with it, and what existed before stays as it was. A full disk is never a mere
/// warning, even for the cache or a pending baseline file.
fn write_files(
    args: &CheckArgs,
    report: &report::Report,
    ctx: &ExportContext<'_>,
    err: &mut dyn Write,
) -> Vec<String> {
    let mut not_written: Vec<String> = Vec::new();
    for format in Format::ALL {
        if let Some(path) = args.also_written(format) {
            let exporter = format.exporter();
            if let Err(e) =
                write_atomic_streaming(path, &mut |out| exporter.export(report, ctx, out))
            {
                not_written.push(format!(
                    "cannot write the {} to `{path}`: {e}",
                    exporter.what()
                ));
            }
        }
    }
    if let Some(endpoint) = args.otlp_endpoint.as_deref() {
        not_written.extend(super::otlp::send_to(report, ctx, endpoint));
    }
    if let Some(dir) = &args.artifacts {
        match report::runfolder::write(dir, report, ctx) {
            Ok((run, problems)) => {
                for p in problems {
                    let _ = writeln!(err, "warning: {}", report::escape_controls(&p));
                }
                let _ = writeln!(err, "run folder: {run}");
            }
            Err(e) => not_written.push(format!("cannot write the run folder under `{dir}`: {e}")),
        }
    }
    not_written.extend(
        (report.failed_writes.iter())
            .filter(|f| f.disk_full)
            .map(|f| format!("the disk is full: {}", f.message)),
    );
    not_written
}

/// In GitHub Actions, the annotations come with the Markdown summary on the job's page: it is
/// appended to `GITHUB_STEP_SUMMARY` (a warning when it cannot be).
fn append_step_summary(report: &report::Report, ctx: &ExportContext<'_>, err: &mut dyn Write) {
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) else {
        return;
    };
    let appended = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|f| {
            let mut w = std::io::BufWriter::new(f);
            Format::Markdown.export(report, ctx, &mut w)?;
            w.flush()
        });
    if let Err(e) = appended {
        let _ = writeln!(
            err,
            "warning: cannot append the summary to `GITHUB_STEP_SUMMARY` ({}): {e}",
            path.to_string_lossy()
        );
    }
}

/// Writes the signed in-toto record of the run's verdicts (`--attest`).
fn attest(
    args: &CheckArgs,
    settings: &Settings,
    (report, code): (&report::Report, i32),
    (path, key): (
        &camino::Utf8PathBuf,
        &tracereplay_core::sign::keys::SigningKey,
    ),
    trusted_keys: Vec<String>,
) -> anyhow::Result<()> {
    let facts = tracereplay_core::sign::attest::RunFacts {
        options: judging_flags(args, settings),
        trusted_keys,
        exit_code: code,
        time: Some(report::html::report_time_nanos() / 1_000_000_000),
        commit: super::sign::current_commit(),
        run_id: settings.run_id().map(str::to_owned),
    };
    let statement = tracereplay_core::sign::attest::statement(report, facts);
    let text = tracereplay_core::sign::attest::sign(&statement, key);
    write_atomic_streaming(path, &mut |w| w.write_all(text.as_bytes()))
        .with_context(|| format!("cannot write the attestation to `{path}`"))?;
    diag!("attestation: {path} (signed by key {})", key.key_id());
    Ok(())
}

/// The options of this run that change how traces are judged or what fails the run: every
/// judging setting with its value (from the settings table, [`Settings::judging_settings`]),
/// then the flags of `check`'s own that do.
fn judging_flags(args: &CheckArgs, settings: &Settings) -> Vec<String> {
    let mut flags = settings.judging_settings();
    for (on, flag) in [
        (args.judging.allow_raw_prompts, "--allow-raw-prompts"),
        (args.scripted, "--scripted"),
        (args.last_failed, "--last-failed"),
    ] {
        if on {
            flags.push(flag.to_owned());
        }
    }
    flags.extend(args.scenarios.iter().map(|s| format!("--scenario {s}")));
    flags.extend(args.tags.iter().map(|t| format!("--tag {t}")));
    if let Some((k, n)) = args.partition {
        flags.push(format!("--partition hash:{k}/{n}"));
    }
    flags
}

fn status_level(arg: StatusLevelArg) -> StatusLevel {
    match arg {
        StatusLevelArg::None => StatusLevel::None,
        StatusLevelArg::Fail => StatusLevel::Fail,
        StatusLevelArg::Drift => StatusLevel::Drift,
        StatusLevelArg::Pass => StatusLevel::Pass,
        StatusLevelArg::All => StatusLevel::All,
    }
}

/// Writes `report` to `out` in `format`, through its exporter (shared by `check` and `merge`):
/// the human format with `rows` (else as many as suit the run's size), quiet and colour as
/// given.
pub(super) fn render(
    format: Format,
    report: &tracereplay::report::Report,
    rows: Option<StatusLevel>,
    (quiet, color): (bool, bool),
    ctx: &ExportContext<'_>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let ctx = ExportContext {
        human: HumanOptions {
            color,
            rows: rows.unwrap_or_else(|| StatusLevel::for_run(report.summary.traces)),
            quiet,
        },
        ..*ctx
    };
    format.export(report, &ctx, out)
}

/// A progress bar on stderr for long runs on a terminal; none otherwise.
fn progress_bar(traces: usize, on_terminal: bool) -> Option<ProgressBar> {
    const LONG_RUN: usize = 500;
    if traces < LONG_RUN || !on_terminal {
        return None;
    }
    let bar = ProgressBar::with_draw_target(Some(traces as u64), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} traces {elapsed}") {
        bar.set_style(style);
    }
    Some(bar)
}
