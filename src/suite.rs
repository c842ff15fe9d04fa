//! The library's front door: find a suite's scenarios and traces, check them as `tracereplay
//! check` does, and assert from a test that the run passed.

use std::path::Path;

use camino::Utf8PathBuf;

use crate::discover::{Discovered, discover};
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
        let found = discover(&paths, &[])?;
        Ok(Suite { paths, found })
    }

    /// Also loads harness suite directories, where every `*.json` is a scenario, as `check
    /// --scenarios DIR` does: `Suite::discover(["traces"])?.with_scenarios(["harness/suite"])?`.
    pub fn with_scenarios<P: AsRef<Path>>(
        mut self,
        dirs: impl IntoIterator<Item = P>,
    ) -> Result<Suite, Error> {
        let dirs = utf8_paths(dirs)?;
        self.found = discover(&self.paths, &dirs)?;
        self.paths.extend(dirs);
        Ok(self)
    }

    /// How many trace files were found.
    pub fn traces(&self) -> usize {
        self.found.trace_files.len()
    }

    /// Checks the suite: every trace judged against its scenario (and its approved baseline,
    /// when `options` say so), in one report.
    pub fn check(&self, options: &CheckOptions) -> Result<Report, Error> {
        Ok(check(&self.found, &self.paths, options)?)
    }
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
        w.finish().write(&trace).unwrap();
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
