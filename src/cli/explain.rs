//! `tracereplay explain`: every oracle's verdict for a trace (or all traces of a scenario), with
//! the deciding events in context and drift; `--last` explains the newest run folder's failures
//! from its recorded evidence alone.

use std::io::Write;

use camino::{Utf8Path, Utf8PathBuf};
use tracereplay::report::explain::Explanation;
use tracereplay::report::explain::{render, render_headline};
use tracereplay::report::runfolder::latest_run;
use tracereplay::trace::{TraceFile, probe_header};
use tracereplay_core::discover::discover;
use tracereplay_core::eval::ScenarioIndex;
use tracereplay_core::eval::explain::explain_opened;
use tracereplay_core::scenario::load_scenarios;

use super::args::ExplainArgs;
use super::exit;
use super::settings::Settings;

/// The largest evidence file `explain --last` reads (one failing trace's results and cited
/// events: far below a trace's own limit).
const MAX_EVIDENCE_BYTES: u64 = 256 << 20;

/// Runs `explain`; `Err` means exit 2.
pub(super) fn run(
    args: &ExplainArgs,
    settings: &Settings,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    // With no target, `explain` explains the newest run's failures.
    if args.last || args.target.is_none() {
        return last(args, settings.use_color(), out);
    }
    let target = args.target.as_deref().unwrap_or_default();
    let as_path = Utf8Path::new(target);
    // Scenarios come from the search paths that exist, plus the directory of a trace given by path.
    let paths = settings.paths();
    let mut roots: Vec<Utf8PathBuf> = paths.iter().filter(|p| p.exists()).cloned().collect();
    if as_path.is_file() {
        roots.push(
            as_path
                .parent()
                .filter(|p| !p.as_str().is_empty())
                .unwrap_or(Utf8Path::new("."))
                .to_owned(),
        );
    }
    // A remote target (`s3://…`) is a trace object, or a prefix of them; its scenarios are the
    // local ones.
    let remote_target = tracereplay_core::remote::is_remote(target);
    if remote_target {
        roots.extend(
            settings
                .suite_roots()
                .iter()
                .filter(|r| r.exists())
                .cloned(),
        );
        roots.dedup();
    }
    let listed = if remote_target {
        Some(tracereplay_core::discover::find(
            &[as_path.to_owned()],
            &[],
            &Default::default(),
        )?)
    } else {
        None
    };
    let remote = listed.as_ref().and_then(|l| l.remote.as_deref());
    let found = discover(&roots, &settings.scenarios())?;
    let loaded = load_scenarios(&found.scenario_files, &found.suite_files, &found.roots);
    let index = ScenarioIndex::new(&loaded.scenarios).looked_in(&found.roots);
    // The same judging and drift options as `check`, so both say the same of a trace.
    let baselines = settings.baselines_of_single_traces()?;
    let judging = settings.judging(args.judging.limits.limits(), args.judging.allow_raw_prompts)?;
    let limits = judging.limits;
    let waived = super::options::waived();
    let traces: Vec<Utf8PathBuf> = if let Some(listed) = &listed {
        if listed.trace_files.is_empty() {
            diag!("error: no trace (`*.trace.ndjson.zst`, `*.trace.ndjson`) under `{target}`");
            return Ok(exit::ERROR);
        }
        listed.trace_files.clone()
    } else if as_path.is_file() {
        vec![as_path.to_owned()]
    } else {
        // A scenario id: every trace whose header names it.
        let Some(scenario) = index.get(target) else {
            diag!(
                "error: `{target}` is neither an existing trace file nor a scenario id under {}",
                roots
                    .iter()
                    .map(|r| format!("`{r}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            return Ok(exit::ERROR);
        };
        let mut paths: Vec<Utf8PathBuf> = found
            .trace_files
            .iter()
            .filter(|p| {
                TraceFile::open(p, limits)
                    .ok()
                    .and_then(|f| probe_header(&f.bytes))
                    .is_some_and(|(s, _)| s.eq_ignore_ascii_case(&scenario.id))
            })
            .cloned()
            .collect();
        paths.sort();
        if paths.is_empty() {
            diag!(
                "error: scenario `{}` has no trace under the search paths",
                scenario.id
            );
            return Ok(exit::ERROR);
        }
        paths
    };
    // Exit 2 when the scenarios are what kept a trace from being judged (none has its id, or
    // its scenario has problems): the set-up is wrong. A trace that does not verify or parse
    // was explained: that is the finding.
    let mut unknown = false;
    for (i, path) in traces.iter().enumerate() {
        if i > 0 {
            writeln!(out, "\n{}", "─".repeat(60))?;
        }
        let opened = tracereplay_core::remote::open(remote, path, limits);
        let mut e = explain_opened(path, opened, &judging, &index, baselines.policy());
        unknown |= e.not_judged;
        // A secret in the trace or scenario is never shown in full.
        e.mask_secrets(&waived);
        render(&e, settings.use_color(), out)?;
    }
    Ok(if unknown { exit::ERROR } else { exit::OK })
}

fn last(args: &ExplainArgs, color: bool, out: &mut dyn Write) -> anyhow::Result<i32> {
    let Some(run) = latest_run(&args.runs) else {
        diag!(
            "error: no run folder under `{}`; write one with `tracereplay check --artifacts`",
            args.runs
        );
        return Ok(exit::ERROR);
    };
    writeln!(out, "run {run}")?;
    let waived = super::options::waived();
    let evidence = run.join("evidence");
    let mut files = Vec::new();
    collect_json(&evidence, &mut files);
    files.sort();
    let mut explained = Vec::new();
    for path in files {
        // Read as any input is read: a regular file, within a bound.
        let bytes =
            tracereplay_trace::fsutil::read_regular(&path, MAX_EVIDENCE_BYTES, "evidence file")
                .map_err(|err| anyhow::anyhow!("cannot read `{path}`: {err}"))?;
        let mut e: Explanation = serde_json::from_slice(&bytes)
            .map_err(|err| anyhow::anyhow!("`{path}` is not an evidence file: {err}"))?;
        e.mask_secrets(&waived);
        explained.push(e);
    }
    if let Some(target) = args.target.as_deref() {
        explained.retain(|e| names(e, target));
        if explained.is_empty() {
            diag!(
                "error: no failure in run `{run}` is `{target}` (give a scenario id, `scenario/case` or a trace path)"
            );
            return Ok(exit::ERROR);
        }
    }
    if explained.is_empty() {
        writeln!(out, "no failing trace in this run")?;
    }
    let full = args.full || args.target.is_some();
    for e in &explained {
        if full {
            writeln!(out, "\n{}", "─".repeat(60))?;
            render(e, color, out)?;
        } else {
            render_headline(e, color, out)?;
        }
    }
    if !full && !explained.is_empty() {
        writeln!(
            out,
            "\n{} failure(s); `tracereplay explain --last TARGET` (a scenario, `scenario/case` or a path) or `--full` shows the evidence",
            explained.len()
        )?;
    }
    Ok(exit::OK)
}

/// Whether an explanation is the one `target` names: its scenario id, `scenario/case`, or its
/// trace path (as recorded, or ending with what was given).
fn names(e: &Explanation, target: &str) -> bool {
    let scenario = e.scenario.as_deref().unwrap_or("");
    let case = e.case.as_deref().unwrap_or("");
    let target = target.trim_start_matches("./");
    scenario.eq_ignore_ascii_case(target)
        || format!("{scenario}/{case}").eq_ignore_ascii_case(target)
        || e.path == target
        || e.path.ends_with(&format!("/{target}"))
}

fn collect_json(dir: &Utf8Path, out: &mut Vec<Utf8PathBuf>) {
    let Ok(entries) = dir.read_dir_utf8() else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        let p = e.path().to_owned();
        if p.is_dir() {
            collect_json(&p, out);
        } else if p.extension() == Some("json") {
            out.push(p);
        }
    }
}
