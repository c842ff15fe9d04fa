//! The library's front door: find a suite's scenarios and traces, check them as `tracereplay
//! check` does, and assert from a test that the run passed.

use std::path::Path;

use camino::Utf8PathBuf;

use crate::discover::Discovered;
use crate::eval::{CheckOptions, check};
use crate::report::Report;

/// Why a suite could not be found or checked.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A path is not UTF-8 (reports need printable paths).
    #[error("`{0}` is not valid UTF-8")]
    NonUtf8(String),
    /// A path does not exist, or the walk met a name that is not UTF-8.
    #[error(transparent)]
    Discover(#[from] crate::discover::DiscoverError),
    /// The check could not do its job (nothing found, a filter matching nothing…).
    #[error(transparent)]
    Check(#[from] crate::eval::CheckError),
    /// A remote path (`s3://…`) could not be listed.
    #[error(transparent)]
    Remote(#[from] crate::remote::RemoteError),
}

impl From<crate::discover::FindError> for Error {
    fn from(e: crate::discover::FindError) -> Error {
        match e {
            crate::discover::FindError::Discover(e) => Error::Discover(e),
            crate::discover::FindError::Remote(e) => Error::Remote(e),
        }
    }
}

/// The scenarios and traces found under some paths: what `tracereplay check PATH…` judges.
#[derive(Debug)]
pub struct Suite {
    paths: Vec<Utf8PathBuf>,
    found: Discovered,
}

fn utf8_paths<P: AsRef<Path>>(
    paths: impl IntoIterator<Item = P>,
) -> Result<Vec<Utf8PathBuf>, Error> {
    (paths.into_iter())
        .map(|p| {
            let p = p.as_ref();
            Utf8PathBuf::from_path_buf(p.to_owned())
                .map_err(|p| Error::NonUtf8(p.to_string_lossy().into_owned()))
        })
        .collect()
}

impl Suite {
    /// Finds the scenarios (`*.scenario.json`) and traces (`*.trace.ndjson.zst`,
    /// `*.trace.ndjson`) under `paths`, as the command line does.
    pub fn discover<P: AsRef<Path>>(paths: impl IntoIterator<Item = P>) -> Result<Suite, Error> {
        let paths = utf8_paths(paths)?;
        let found = crate::discover::find(&paths, &[], &Default::default())?;
        Ok(Suite { paths, found })
    }

    /// Also loads harness suite directories, where every `*.json` is a scenario, as `check
    /// --scenarios DIR` does: `Suite::discover(["traces"])?.with_scenarios(["harness/suite"])?`.
    pub fn with_scenarios<P: AsRef<Path>>(
        self,
        dirs: impl IntoIterator<Item = P>,
    ) -> Result<Suite, Error> {
        let dirs = utf8_paths(dirs)?;
        Suite::open(&self.paths, &dirs)
    }

    /// [`Suite::discover`] of `paths` with the harness suite directories `scenario_dirs`, in one
    /// walk: what `tracereplay check PATH… --scenarios DIR…` judges.
    pub fn open(paths: &[Utf8PathBuf], scenario_dirs: &[Utf8PathBuf]) -> Result<Suite, Error> {
        Suite::open_with(paths, scenario_dirs, &Default::default())
    }

    /// [`Suite::open`], reading remote paths (`s3://…`) as `remote` says.
    pub fn open_with(
        paths: &[Utf8PathBuf],
        scenario_dirs: &[Utf8PathBuf],
        remote: &crate::remote::RemoteOptions,
    ) -> Result<Suite, Error> {
        let found = crate::discover::find(paths, scenario_dirs, remote)?;
        let mut paths = paths.to_vec();
        paths.extend(scenario_dirs.iter().cloned());
        Ok(Suite { paths, found })
    }

    /// Also looks for scenarios in `suite_roots` (the project's suite directories) when a trace
    /// names one the given paths did not hold.
    pub fn look_up_in(&mut self, suite_roots: &[Utf8PathBuf]) {
        self.found.look_up_in(suite_roots);
    }

    /// How many trace files were found.
    pub fn traces(&self) -> usize {
        self.found.trace_files.len()
    }

    /// What discovery found.
    pub(crate) fn found(&self) -> &Discovered {
        &self.found
    }

    /// The trace files found, in the order they are judged.
    pub fn trace_paths(&self) -> &[Utf8PathBuf] {
        &self.found.trace_files
    }

    /// Keeps only the traces `keep` accepts (asked in parallel, for a test that reads or hashes
    /// each file); returns how many were left out.
    pub fn retain_traces(&mut self, keep: impl Fn(&camino::Utf8Path) -> bool + Sync) -> usize {
        use rayon::prelude::*;
        let before = self.found.trace_files.len();
        let kept: Vec<bool> = (self.found.trace_files.par_iter())
            .map(|p| keep(p))
            .collect();
        let mut kept = kept.into_iter();
        (self.found.trace_files).retain(|_| kept.next().unwrap_or(true));
        before - self.found.trace_files.len()
    }

    /// Checks the suite: every trace judged against its scenario (and its approved baseline,
    /// when `options` say so), in one report.
    pub fn check(&self, options: &CheckOptions) -> Result<Report, Error> {
        Ok(check(&self.found, &self.paths, options)?)
    }

    /// [`Suite::check`] with the result cache read ahead ([`CacheRead::read`], for instance
    /// while the suite was discovered); the options' `cache_dir` is still where it is written.
    pub fn check_with_cache(
        &self,
        options: &CheckOptions,
        cache: CacheRead,
    ) -> Result<Report, Error> {
        Ok(crate::eval::check_with_cache_file(
            &self.found,
            &self.paths,
            options,
            Some(cache.0),
        )?)
    }
}

/// The result cache's file, read ahead of a check (see [`Suite::check_with_cache`]).
#[derive(Debug)]
pub struct CacheRead(crate::eval::CacheFile);

impl CacheRead {
    /// Reads the cache under `dir` (its entries checked with the user's cache key, as a check
    /// does), holding at most `row_memory` bytes of it in memory. A missing, foreign or damaged
    /// cache reads as empty: the check then judges everything.
    pub fn read(dir: &camino::Utf8Path, row_memory: u64) -> CacheRead {
        use crate::eval::{CacheFile, CacheKey};
        CacheRead(CacheKey::resolve().map_or_else(CacheFile::default, |key| {
            CacheFile::read_with(dir, row_memory, &key)
        }))
    }
}

/// Runs `f` on a pool of `threads` threads (`None`: rayon's global pool), so that a check run
/// inside it, with the same `threads`, discovers and judges on that pool rather than a second.
pub fn in_pool<R: Send>(threads: Option<usize>, f: impl FnOnce() -> R + Send) -> Result<R, Error> {
    Ok(crate::eval::in_pool(threads, f)?)
}

impl Report {
    /// The rows that make the run fail, one paragraph each: scenario, case, file, and every
    /// oracle or drift finding against it (for a test's panic message).
    pub fn failures(&self) -> String {
        let mut out = String::new();
        for row in self.results.iter().filter(|r| r.blocking) {
            out.push_str(&format!(
                "{} {} / {} ({})\n",
                row.verdict.as_str().to_uppercase(),
                row.scenario.as_deref().unwrap_or("-"),
                row.case.as_deref().unwrap_or("-"),
                row.path.as_deref().unwrap_or("-"),
            ));
            if let Some(e) = &row.error {
                out.push_str(&format!("  {}: {}\n", e.category, e.message));
            }
            for o in row
                .oracles
                .iter()
                .filter(|o| o.verdict != crate::oracle::Verdict::Pass)
            {
                out.push_str(&format!(
                    "  {} {}: {}\n",
                    o.kind,
                    o.verdict.as_str(),
                    o.message
                ));
            }
            for d in row.drift.iter().filter(|d| d.fails) {
                out.push_str(&format!("  drift {}: {}\n", d.category.as_str(), d.detail));
            }
        }
        for f in self.privacy.iter().filter(|f| f.fails) {
            out.push_str(&format!("PRIVACY {}\n  {}\n", f.located(), f.message));
        }
        for o in self.obsolete.iter().filter(|o| o.finding.fails) {
            out.push_str(&format!("OBSOLETE {}\n  {}\n", o.path, o.finding.detail));
        }
        out
    }

    /// Panics, listing [`Report::failures`], unless the run passed (`tracereplay check` would
    /// exit 0).
    #[track_caller]
    pub fn assert_passed(&self) {
        if self.is_failure() {
            let s = &self.summary;
            panic!(
                "tracereplay: {} blocking of {} traces ({} passed, {} failed, {} errors)\n{}",
                s.blocking,
                s.traces,
                s.passed,
                s.failed,
                s.errors,
                self.failures()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A harness suite directory's scenario judges a trace found elsewhere, through the front
    /// door as through `check --scenarios`.
    #[test]
    fn with_scenarios_loads_a_harness_directory() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("harness")).unwrap();
        std::fs::create_dir_all(root.join("traces")).unwrap();
        std::fs::write(
            root.join("harness/search.json"),
            r#"{"id":"search","title":"t","risk":"High","oracles":[{"type":"tool-called","tool":"search"}]}"#,
        )
        .unwrap();
        let mut w = crate::trace::TraceWriter::new(crate::trace::Header::new("search", "default"));
        w.push(
            None,
            crate::trace::EventBody::RunEnd {
                status: crate::trace::RunStatus::Completed,
                error: None,
            },
        );
        let trace = root.join("traces/default.trace.ndjson.zst");
        let trace = Utf8PathBuf::from_path_buf(trace).unwrap();
        w.finish().unwrap().write(&trace).unwrap();
        let alone = Suite::discover([root.join("traces")]).unwrap();
        let report = alone.check(&CheckOptions::default()).unwrap();
        assert_eq!(
            report.results.get(0).error.unwrap().category.as_str(),
            "unknown-scenario"
        );
        let suite = Suite::discover([root.join("traces")])
            .unwrap()
            .with_scenarios([root.join("harness")])
            .unwrap();
        let report = suite.check(&CheckOptions::default()).unwrap();
        let row = report.results.get(0);
        assert_eq!(row.scenario.as_deref(), Some("search"));
        assert_eq!(row.verdict.as_str(), "fail", "the run called no search");
    }
}
