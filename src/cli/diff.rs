//! `tracereplay diff`: drift from approved baselines, or between two recordings.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;

use anyhow::bail;
use camino::Utf8Path;
use rayon::prelude::*;
use tracereplay::report::human::HumanOptions;
use tracereplay::report::{ExportContext, Format, RowVerdict, Source};
use tracereplay_core::diff::report::{DiffEntry, DiffReport, Unpaired};
use tracereplay_core::diff::{DriftCategory, DriftFinding, compare};
use tracereplay_core::eval::{
    Baselines, JudgedTrace, ScenarioIndex, check, error_chain, judge_opened_file,
};
use tracereplay_core::scenario::load_scenarios;
use tracereplay_trace::paths::display_path;

use super::args::DiffArgs;
use super::settings::Settings;
use super::{exit, options};

/// Runs `diff`; `Err` means exit 2.
pub(super) fn run(
    args: &DiffArgs,
    settings: &Settings,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    let mut report = match (&args.from, &args.to) {
        (Some(old), Some(new)) => {
            let mut report = between(old, new, args, settings)?;
            // The sides are the two recordings, not an approved baseline and a current run.
            let header = format!("--- {}\n+++ {}\n", display_path(old), display_path(new));
            for d in report.entries.iter_mut().flat_map(|e| &mut e.drift) {
                if let Some(diff) = &mut d.diff {
                    if let Some(rest) = diff.strip_prefix("--- approved\n+++ current\n") {
                        *diff = format!("{header}{rest}");
                    }
                }
            }
            report
        }
        _ => against_baselines(args, settings)?,
    };
    // Drift shows arguments and answers: a secret among them is never shown in full.
    let waived = options::waived();
    for e in &mut report.entries {
        e.drift.iter_mut().for_each(|d| d.mask_secrets(&waived));
    }
    let ctx = ExportContext {
        human: HumanOptions {
            color: settings.use_color(),
            ..HumanOptions::default()
        },
        ..ExportContext::default()
    };
    Format::from(args.format).export(&report, &ctx, out)?;
    Ok(if !report.errors.is_empty() {
        exit::ERROR
    } else if report.has_drift() {
        exit::FAILURE
    } else {
        exit::OK
    })
}

fn against_baselines(args: &DiffArgs, settings: &Settings) -> anyhow::Result<DiffReport> {
    // `diff` only reads: no pending file is written.
    let baselines = settings.baselines(false)?;
    match baselines {
        Baselines::Compared { .. } => {}
        Baselines::Ignored => bail!("`diff` with `--drift ignore` has nothing to compare"),
        Baselines::Absent => bail!(
            "no `baselines/` directory to diff against; create approved baselines with `tracereplay baseline approve`, or compare two recordings with `--from OLD --to NEW`"
        ),
        Baselines::Missing(dir) => bail!(
            "no `{dir}` directory (the project file's `baselines`) to diff against; create approved baselines with `tracereplay baseline approve`, or compare two recordings with `--from OLD --to NEW`"
        ),
    }
    let paths = settings.paths();
    let mut found =
        tracereplay_core::discover::find(&paths, &settings.scenarios(), &Default::default())?;
    found.look_up_in(settings.suite_roots());
    let opts = super::options::judge_only(settings, &paths, args.judging.parts(), baselines)?;
    let checked = check(&found, &paths, &opts)?;
    let mut report = DiffReport::default();
    let mut compared = 0;
    for row in checked.results.iter() {
        if row.verdict == RowVerdict::Error && row.source == Source::Trace {
            report
                .errors
                .push(row.error.map(|e| e.message).unwrap_or_default());
            continue;
        }
        if row.source != Source::Trace {
            continue;
        }
        compared += 1;
        report.entries.push(DiffEntry {
            scenario: row.scenario.unwrap_or_default(),
            case: row.case.unwrap_or_default(),
            old: row.baseline,
            new: row.path,
            drift: row.drift,
        });
    }
    // A case of several trials carries its drift on its case line.
    for c in checked.cases.iter().filter(|c| c.trials >= 2) {
        if c.drift.is_empty() {
            continue;
        }
        report.entries.push(DiffEntry {
            scenario: c.scenario.clone(),
            case: c.case.clone(),
            old: c.baseline.clone(),
            new: Some(format!("{} trials", c.trials)),
            drift: c.drift.iter().map(|d| d.to_drift()).collect(),
        });
    }
    for o in checked.obsolete {
        report.entries.push(DiffEntry {
            scenario: o.scenario,
            case: o.case,
            old: Some(o.path),
            new: None,
            drift: vec![o.finding],
        });
    }
    Ok(report.finish(compared))
}

type Side = BTreeMap<(String, String), Vec<(String, JudgedTrace)>>;

fn between(
    old: &Utf8Path,
    new: &Utf8Path,
    args: &DiffArgs,
    settings: &Settings,
) -> anyhow::Result<DiffReport> {
    // Either side may be in object storage; scenarios come from the local side and
    // `--scenarios`. The project file's `paths` play no part: the two sides are named.
    let none = Default::default();
    let old_found = tracereplay_core::discover::find(&[old.to_owned()], &[], &none)?;
    let new_found =
        tracereplay_core::discover::find(&[new.to_owned()], &settings.scenarios(), &none)?;
    // Scenarios of the newer recording win; the older one fills in ids the newer lacks. A
    // scenario file both sides hold (one directory on both sides, or overlapping ones) is one
    // file, read once, and counts as the newer side's.
    let same_file = |f: &camino::Utf8PathBuf| f.canonicalize_utf8().unwrap_or_else(|_| f.clone());
    let newer_files: HashSet<camino::Utf8PathBuf> =
        new_found.scenario_files.iter().map(same_file).collect();
    let older_only: Vec<&camino::Utf8PathBuf> = (old_found.scenario_files.iter())
        .filter(|f| !newer_files.contains(&same_file(f)))
        .collect();
    let mut files = new_found.scenario_files.clone();
    files.extend(older_only.iter().map(|f| (*f).clone()));
    let mut roots = new_found.roots.clone();
    roots.extend(old_found.roots.iter().cloned());
    let loaded = load_scenarios(&files, &new_found.suite_files, &roots);
    // An older scenario whose id the newer recording defines is left out; two of one side with
    // one id are a problem, as in `check`.
    let older: HashSet<&camino::Utf8PathBuf> = older_only.into_iter().collect();
    let newer: HashSet<String> = (loaded.scenarios.iter())
        .filter(|s| !older.contains(&s.file))
        .map(|s| s.id.to_lowercase())
        .collect();
    let index = ScenarioIndex::new(
        (loaded.scenarios.iter())
            .filter(|s| !older.contains(&s.file) || !newer.contains(&s.id.to_lowercase())),
    );
    let judging = settings.judging(args.judging.limits.limits(), args.judging.allow_raw_prompts)?;
    let mut report = DiffReport::default();
    let mut read_side = |found: &tracereplay_core::discover::Discovered| -> Side {
        let judged: Vec<_> = found
            .trace_files
            .par_iter()
            .map(|p| {
                let opened =
                    tracereplay_core::remote::open(found.remote.as_deref(), p, judging.limits);
                (display_path(p), judge_opened_file(opened, &judging, &index))
            })
            .collect();
        let mut side = Side::new();
        for (path, r) in judged {
            match r {
                Ok(j) => side
                    .entry((j.scenario.to_lowercase(), j.case.to_lowercase()))
                    .or_default()
                    .push((path, j)),
                Err(e) => report.errors.push(error_chain(&e)),
            }
        }
        side
    };
    let old_side = read_side(&old_found);
    let new_side = read_side(&new_found);
    if old_side.is_empty() && new_side.is_empty() && report.errors.is_empty() {
        bail!("no traces found under `{old}` or `{new}`");
    }
    let tol = settings.usage_tolerance()?;
    let mode = settings.drift_mode();
    let mut compared = 0;
    let mut sets = Vec::new();
    for (key, olds) in &old_side {
        let Some(news) = new_side.get(key) else {
            report.only_old.extend(olds.iter().map(|(p, j)| Unpaired {
                scenario: j.scenario.clone(),
                case: j.case.clone(),
                path: p.clone(),
            }));
            continue;
        };
        compared += 1;
        let (op, oj) = &olds[0];
        let (np, nj) = &news[0];
        let distinct = |side: &[(String, JudgedTrace)]| {
            let mut ids: Vec<Option<&str>> = side.iter().map(|(_, j)| j.trial.as_deref()).collect();
            ids.sort_unstable();
            ids.iter().all(Option::is_some) && ids.windows(2).all(|w| w[0] != w[1])
        };
        let several = olds.len() > 1 || news.len() > 1;
        if several && distinct(olds) && distinct(news) {
            // Trials: compared as sets, with the run's thresholds, below.
            sets.push(tracereplay_core::diff::sets::SetInput {
                scenario: nj.scenario.clone(),
                case: nj.case.clone(),
                old: olds.iter().map(|(_, j)| j.behaviour.clone()).collect(),
                new: news.iter().map(|(_, j)| j.behaviour.clone()).collect(),
            });
            continue;
        }
        let drift = if several {
            let detail = format!(
                "{} old and {} new traces share this (scenario, case) without distinct trials; give each run its own `trial` (or `case`)",
                olds.len(),
                news.len()
            );
            vec![DriftFinding::new(
                DriftCategory::Ambiguous,
                detail,
                None,
                mode,
            )]
        } else {
            compare(&oj.behaviour, &nj.behaviour, tol, mode)
        };
        report.entries.push(DiffEntry {
            scenario: nj.scenario.clone(),
            case: nj.case.clone(),
            old: Some(op.clone()),
            new: Some(np.clone()),
            drift,
        });
    }
    if !sets.is_empty() {
        let alpha = settings.alpha()?;
        let summary = tracereplay_core::diff::sets::compare_sets(sets, tol, mode, alpha);
        for e in &summary.cases_by_effect {
            report.entries.push(DiffEntry {
                scenario: e.scenario.clone(),
                case: e.case.clone(),
                old: Some(format!("{} trials", side_n(&e.old))),
                new: Some(format!("{} trials", side_n(&e.new))),
                drift: e.drift(),
            });
        }
        report.sets = Some(summary);
    }
    for (key, news) in &new_side {
        if !old_side.contains_key(key) {
            report.only_new.extend(news.iter().map(|(p, j)| Unpaired {
                scenario: j.scenario.clone(),
                case: j.case.clone(),
                path: p.clone(),
            }));
        }
    }
    Ok(report.finish(compared))
}

fn side_n(s: &tracereplay_core::diff::trial_drift::Side) -> u64 {
    match s {
        tracereplay_core::diff::trial_drift::Side::Counts { n, .. }
        | tracereplay_core::diff::trial_drift::Side::Median { n, .. } => *n,
    }
}
