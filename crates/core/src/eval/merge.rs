//! Combining the JSON reports of partitioned `check` runs into one report.

use crate::report::Report;

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
    /// The reports are not all N shares of one suite, each exactly once.
    #[error("{}; merge the JSON reports of every `check --partition hash:K/N` share of one run, each once", problems.join("; "))]
    Shares {
        /// What is missing, duplicated or foreign, naming the reports.
        problems: Vec<String>,
    },
}

/// Checks that `reports` (each with the name it is known by) are all N shares of one suite,
/// each exactly once: what makes a merged exit code mean what a whole run's would.
fn check_shares(reports: &[(String, Report)]) -> Result<(), MergeError> {
    let mut problems = Vec::new();
    let shares: Vec<(&str, &crate::report::Partition)> = reports
        .iter()
        .filter_map(|(name, r)| match &r.partition {
            Some(p) => Some((name.as_str(), p)),
            None => {
                problems.push(format!(
                    "`{name}` is not a share of a partitioned run (it records no `partition`)"
                ));
                None
            }
        })
        .collect();
    if let Some((first_name, first)) = shares.first() {
        let mut seen: std::collections::BTreeMap<u64, Vec<&str>> = Default::default();
        for (name, p) in &shares {
            if p.of != first.of || p.suite != first.suite {
                problems.push(format!(
                    "`{name}` (share {}/{}) was cut from another suite than `{first_name}` (share {}/{}): another commit, other traces or other flags",
                    p.share, p.of, first.share, first.of
                ));
                continue;
            }
            seen.entry(p.share).or_default().push(name);
        }
        for (share, names) in &seen {
            if names.len() > 1 {
                let list: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
                problems.push(format!(
                    "share {share}/{} is given {} times ({})",
                    first.of,
                    names.len(),
                    list.join(", ")
                ));
            }
        }
        let missing: Vec<String> = (1..=first.of)
            .filter(|k| !seen.contains_key(k))
            .map(|k| format!("{k}/{}", first.of))
            .collect();
        if !missing.is_empty() {
            problems.push(format!("share(s) {} missing", missing.join(", ")));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(MergeError::Shares { problems })
    }
}

/// Merges the reports of every share of one partitioned run (each given with the name it is
/// known by, for messages): rows, findings and warnings are combined and re-sorted exactly as
/// `check` sorts them; counts are computed again from the merged rows. Refuses unless the reports are all N shares of one
/// suite, each exactly once, so a lost or repeated share can never merge into a green run.
pub fn merge(reports: Vec<(String, Report)>) -> Result<Report, MergeError> {
    merge_with(reports, None)
}

/// [`merge`], checking each share's digest with `key`: every share must carry a digest keyed
/// with it (`check` run with the same key), so a share whose rows were edited cannot be made
/// to look as `check` wrote it.
pub fn merge_with(
    reports: Vec<(String, Report)>,
    key: Option<&super::ShareKey>,
) -> Result<Report, MergeError> {
    if reports.is_empty() {
        return Err(MergeError::Empty);
    }
    for (i, (_, r)) in reports.iter().enumerate() {
        if r.schema_version != crate::report::SCHEMA_VERSION {
            return Err(MergeError::Schema {
                index: i + 1,
                found: r.schema_version,
                expected: crate::report::SCHEMA_VERSION,
            });
        }
    }
    check_shares(&reports)?;
    // Nothing a share says of itself is trusted: its counts must be its rows', its rows its
    // share's, and rows and label what `check` wrote.
    let problems: Vec<String> = (reports.iter())
        .flat_map(|(name, r)| super::shares::problems(name, r, key))
        .collect();
    if !problems.is_empty() {
        return Err(MergeError::Shares { problems });
    }
    let (traces, scenarios) =
        super::shares::checked_totals(&reports).ok_or_else(|| MergeError::Shares {
            problems: vec!["the shares' `traces` or `scenarios` counts overflow when added".into()],
        })?;
    let fail_on = (reports.first())
        .and_then(|(_, r)| r.partition.as_ref())
        .and_then(|p| p.fail_on.as_deref())
        .and_then(super::FailOn::parse)
        .unwrap_or_default();
    // Every share held its own totals to the run's budgets: the merged run holds the suite's.
    let budget = (reports.iter())
        .map(|(_, r)| crate::report::usage::Budget::of(r.summary.usage.as_ref()))
        .find(|b| b.tokens.is_some() || b.cost.is_some())
        .unwrap_or_default();
    let mut iter = reports.into_iter().map(|(_, r)| r).enumerate();
    let (_, mut out) = iter.next().ok_or(MergeError::Empty)?;
    out.partition = None;
    for (_, r) in iter {
        out.cases.extend(r.cases);
        out.thresholds = out.thresholds.or(r.thresholds);
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
    // A share that listed no case holds single traces only: their case lines, as the whole run
    // would have listed them.
    if !out.cases.is_empty() {
        let listed: std::collections::HashSet<(String, String)> = (out.cases.iter())
            .map(|c| (c.scenario.clone(), c.case.clone()))
            .collect();
        let opts = super::CheckOptions {
            counting: super::Counting {
                fail_on,
                ..Default::default()
            },
            ..Default::default()
        };
        let judged = |r: &crate::report::ResultRow| {
            matches!(
                r.source,
                crate::report::Source::Trace | crate::report::Source::Scripted
            )
        };
        let missing: Vec<crate::report::cases::CaseRow> = (out.results.iter())
            .filter(|r| judged(r))
            .filter(|r| match (&r.scenario, &r.case) {
                (Some(s), Some(c)) => !listed.contains(&(s.clone(), c.clone())),
                _ => false,
            })
            .map(|r| super::single_trace_case(&r, &opts))
            .collect();
        out.cases.extend(missing);
    }
    // Cases in report order; their set findings decided again over every case of the run.
    out.cases.sort_by(|a, b| {
        (a.scenario.as_bytes(), a.case.as_bytes()).cmp(&(b.scenario.as_bytes(), b.case.as_bytes()))
    });
    if let Some(t) = out.thresholds.as_mut() {
        crate::report::cases::decide_again(&mut out.cases, t, fail_on);
    }
    // The merged counts and exit code, from the merged rows and cases.
    out.summary = super::summarise(
        &out.results,
        &out.privacy,
        &out.obsolete,
        traces,
        scenarios,
        fail_on,
    );
    super::count_cases(&mut out.summary, &out.results, &out.cases, fail_on);
    super::apply_budget(&mut out.summary, &budget);
    out.fail_on = Some(fail_on.as_str());
    Ok(out)
}
