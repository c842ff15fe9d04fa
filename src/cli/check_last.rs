//! `check --last-failed`: what the newest run folder says failed, and which traces a re-run
//! judges again.

use std::collections::HashSet;

use anyhow::{Context, bail};
use camino::Utf8Path;
use tracereplay_trace::paths::display_path;

/// The largest `report.json` `--last-failed` reads.
const MAX_LAST_REPORT_BYTES: u64 = 1 << 30;

/// What `--last-failed` takes from the newest run folder.
pub(super) struct LastRun {
    /// The run's id (its folder's name).
    pub(super) id: String,
    /// Every trace path it judged, as shown, with the content hash it was judged with.
    pub(super) judged: std::collections::HashMap<String, Option<String>>,
    /// The paths of its rows that did not pass.
    pub(super) failed: HashSet<String>,
    /// Scenarios (lowercase) whose every row passed.
    pub(super) passed_scenarios: HashSet<String>,
}

impl LastRun {
    /// Reads `report.json` of the newest run folder under `runs`.
    pub(super) fn read(runs: &Utf8Path) -> anyhow::Result<LastRun> {
        let Some(run) = tracereplay::report::runfolder::latest_run(runs) else {
            bail!(
                "`--last-failed`: no run folder under `{runs}`; write one with `tracereplay check --artifacts`"
            );
        };
        let path = run.join("report.json");
        // Read as any input is read: a regular file, within a bound.
        let bytes = tracereplay_trace::fsutil::read_regular(
            &path,
            MAX_LAST_REPORT_BYTES,
            "the last run's report",
        )
        .with_context(|| format!("`--last-failed`: cannot read `{path}`"))?;
        let report: serde_json::Value = serde_json::from_slice(&bytes)
            .with_context(|| format!("`--last-failed`: `{path}` is not a JSON report"))?;
        let mut last = LastRun {
            id: run.file_name().unwrap_or("").to_owned(),
            judged: Default::default(),
            failed: HashSet::new(),
            passed_scenarios: HashSet::new(),
        };
        let mut failing_scenarios = HashSet::new();
        for row in report["results"].as_array().into_iter().flatten() {
            let scenario = row["scenario"].as_str().map(str::to_lowercase);
            let path = row["path"].as_str().map(str::to_owned);
            let passed = row["verdict"] == "pass" && row["blocking"] != true;
            if let Some(p) = &path {
                let hash = row["content_hash"].as_str().map(str::to_owned);
                last.judged.insert(p.clone(), hash);
                if !passed {
                    last.failed.insert(p.clone());
                }
            }
            if let Some(s) = scenario {
                if passed {
                    last.passed_scenarios.insert(s);
                } else {
                    failing_scenarios.insert(s);
                }
            }
        }
        // A case of several trials is judged whole: one failing trial, or a case that did not
        // pass, brings every trial of it back.
        let key = |v: &serde_json::Value| {
            Some((
                v["scenario"].as_str()?.to_owned(),
                v["case"].as_str()?.to_owned(),
            ))
        };
        let mut rejudged: HashSet<(String, String)> = (report["cases"].as_array().into_iter())
            .flatten()
            .filter(|c| c["verdict"] != "pass" || c["blocking"] == true)
            .filter_map(key)
            .collect();
        let rows = report["results"].as_array().into_iter().flatten();
        let trials: Vec<&serde_json::Value> = rows.filter(|r| r.get("trial").is_some()).collect();
        for r in &trials {
            if r["path"].as_str().is_some_and(|p| last.failed.contains(p)) {
                rejudged.extend(key(r));
            }
        }
        for r in trials {
            if let (Some(k), Some(p)) = (key(r), r["path"].as_str()) {
                if rejudged.contains(&k) {
                    last.failed.insert(p.to_owned());
                    failing_scenarios.insert(k.0.to_lowercase());
                }
            }
        }
        last.passed_scenarios
            .retain(|s| !failing_scenarios.contains(s));
        Ok(last)
    }

    /// Whether this run judges `path`: it did not pass last time, was not judged then, or is
    /// not the trace it was then (its content hash differs, or cannot be read now).
    pub(super) fn keeps(&self, path: &Utf8Path, limits: tracereplay::trace::Limits) -> bool {
        let shown = display_path(path);
        if self.failed.contains(&shown) {
            return true;
        }
        let Some(Some(then)) = self.judged.get(&shown) else {
            return true;
        };
        let now = tracereplay::trace::TraceFile::open(path, limits)
            .ok()
            .and_then(|f| f.verify_seal(false).ok())
            .map(|s| s.content_hash);
        now.as_deref() != Some(then.as_str())
    }
}
