//! Combining the JSON reports of partitioned `check` runs into one report.

use super::model::{Report, Summary};

/// Why reports could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// No report given.
    #[error("no report to merge")]
    Empty,
    /// A report of another schema version.
    #[error(
        "report {index} has schema version {found}; this tracereplay merges version {expected}"
    )]
    Schema {
        /// 1-based position of the report.
        index: usize,
        /// Its version.
        found: u32,
        /// The supported version.
        expected: u32,
    },
}

/// Merges reports whose shares are disjoint: rows, findings and warnings are combined and
/// re-sorted exactly as `check` sorts them; counts are summed.
pub fn merge(reports: Vec<Report>) -> Result<Report, MergeError> {
    let mut iter = reports.into_iter().enumerate();
    let (_, mut out) = iter.next().ok_or(MergeError::Empty)?;
    if out.schema_version != super::SCHEMA_VERSION {
        return Err(MergeError::Schema {
            index: 1,
            found: out.schema_version,
            expected: super::SCHEMA_VERSION,
        });
    }
    for (i, r) in iter {
        if r.schema_version != super::SCHEMA_VERSION {
            return Err(MergeError::Schema {
                index: i + 1,
                found: r.schema_version,
                expected: super::SCHEMA_VERSION,
            });
        }
        add(&mut out.summary, &r.summary);
        out.results.append(r.results);
        out.obsolete.extend(r.obsolete);
        out.privacy.extend(r.privacy);
        out.warnings.extend(r.warnings);
    }
    out.results.sort();
    out.obsolete.sort_by(|a, b| a.path.cmp(&b.path));
    out.privacy.sort();
    out.warnings.sort();
    out.warnings.dedup();
    Ok(out)
}

fn add(total: &mut Summary, s: &Summary) {
    total.traces += s.traces;
    total.scenarios += s.scenarios;
    total.passed += s.passed;
    total.failed += s.failed;
    total.errors += s.errors;
    total.ignored_failures += s.ignored_failures;
    total.drifted += s.drifted;
    total.new += s.new;
    total.obsolete += s.obsolete;
    total.privacy += s.privacy;
    total.blocking += s.blocking;
}
