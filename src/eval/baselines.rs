//! Comparing judged traces with their approved baselines, writing pending files off CI, and the
//! suite-level passes: ambiguous (scenario, case) pairs and obsolete baselines.

use std::collections::{BTreeMap, HashSet};

use camino::Utf8PathBuf;

use crate::baseline::{BaselineFile, BaselineStore, Behaviour, decode_segment};
use crate::diff::{DriftCategory, DriftFinding, DriftMode, compare};
use crate::discover::display_path;
use crate::report::{ObsoleteBaseline, Rows};

/// How `check` treats approved baselines.
#[derive(Debug, Clone)]
pub struct BaselineOptions {
    /// Where they live.
    pub store: BaselineStore,
    /// Which drift fails the run.
    pub mode: DriftMode,
    /// Usage tolerance as a fraction (0.2 = 20 %).
    pub tolerance: f64,
    /// Write `.new`/`.deleted` pending files and remove stale ones (never under CI).
    pub write_pending: bool,
}

/// Removes a stale pending file inside the store (never through a symlink).
fn remove_if_present(store: &BaselineStore, path: &Utf8PathBuf, warnings: &mut Vec<String>) {
    if let Err(e) = store.confined().remove(path) {
        warnings.push(format!(
            "cannot remove stale pending file `{}`: {e}",
            display_path(path)
        ));
    }
}

/// Compares one judged trace with its approved baseline; off CI, writes `.new` when it is new or
/// drifted and removes stale pending files when it matches.
pub fn compare_trace(
    opts: &BaselineOptions,
    scenario: &str,
    case: &str,
    content_hash: &str,
    behaviour: Behaviour,
    warnings: &mut Vec<String>,
) -> Vec<DriftFinding> {
    let store = &opts.store;
    let approved_path = store.approved_path(scenario, case);
    let new_path = store.new_path(scenario, case);
    let current = BaselineFile::new(scenario, case, content_hash, behaviour);
    let findings = if approved_path.exists() {
        match BaselineFile::read(&approved_path) {
            Ok(approved) => compare(
                &approved.behaviour,
                &current.behaviour,
                opts.tolerance,
                opts.mode,
            ),
            Err(e) => {
                return vec![DriftFinding::new(
                    DriftCategory::BaselineInvalid,
                    crate::eval::error_chain(&e),
                    None,
                    opts.mode,
                )];
            }
        }
    } else {
        vec![DriftFinding::new(
            DriftCategory::New,
            format!(
                "no approved baseline at `{}`; review and accept it with `tracereplay baseline accept`",
                display_path(&approved_path)
            ),
            None,
            opts.mode,
        )]
    };
    if opts.write_pending {
        remove_if_present(store, &store.deleted_path(scenario, case), warnings);
        if findings.is_empty() {
            remove_if_present(store, &new_path, warnings);
        } else if let Err(e) = BaselineFile::write_text(store, &new_path, &current.to_text()) {
            warnings.push(format!(
                "cannot write pending baseline `{}`: {e}",
                display_path(&new_path)
            ));
        }
    }
    findings
}

/// Two rows sharing one baseline make its comparison an error: every judged row of the pair gets
/// an `ambiguous` finding instead of its comparison, and no pending file is left for it.
pub fn mark_ambiguous(
    rows: &mut Rows,
    opts: &BaselineOptions,
    fail_on: super::FailOn,
    warnings: &mut Vec<String>,
) {
    let mut of_row: Vec<(usize, String)> = Vec::new();
    rows.for_each_head(|i, h| of_row.extend(h.baseline.map(|b| (i, b.to_owned()))));
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, b) in &of_row {
        *count.entry(b).or_default() += 1;
    }
    let shared: Vec<(usize, usize)> = (of_row.iter())
        .map(|(i, b)| (*i, count[b.as_str()]))
        .filter(|&(_, n)| n >= 2)
        .collect();
    for (i, n) in shared {
        let mut r = rows.get(i);
        let b = r.baseline.as_deref().unwrap_or("");
        let detail = format!(
            "{n} traces share scenario `{}` case `{}`, so none can be compared with `{b}`; give each run its own `case`",
            r.scenario.as_deref().unwrap_or(""),
            r.case.as_deref().unwrap_or("")
        );
        r.drift = vec![DriftFinding::new(
            DriftCategory::Ambiguous,
            detail,
            None,
            opts.mode,
        )];
        super::set_blocking(&mut r, fail_on);
        if opts.write_pending {
            if let (Some(s), Some(c)) = (&r.scenario, &r.case) {
                remove_if_present(&opts.store, &opts.store.new_path(s, c), warnings);
            }
        }
        rows.set(i, &r);
    }
}

/// Approved baselines without a trace, within scope: `in_scope` says whether a stored baseline
/// (by its encoded scenario segment) belongs to this run.
/// else the encoded ids of the scenarios in scope.
pub fn find_obsolete(
    rows: &Rows,
    opts: &BaselineOptions,
    in_scope: &dyn Fn(&str) -> bool,
    warnings: &mut Vec<String>,
) -> Vec<ObsoleteBaseline> {
    let mut used: HashSet<String> = HashSet::new();
    rows.for_each_head(|_, h| used.extend(h.baseline.map(str::to_owned)));
    let mut out = Vec::new();
    for stored in opts.store.list(crate::baseline::APPROVED_SUFFIX) {
        let shown = display_path(&stored.path);
        if used.contains(shown.as_str()) {
            continue;
        }
        if !in_scope(&stored.scenario_segment) {
            continue;
        }
        let (scenario, case) = match BaselineFile::read(&stored.path) {
            Ok(b) => (b.scenario, b.case),
            Err(_) => (
                decode_segment(&stored.scenario_segment),
                decode_segment(&stored.case_segment),
            ),
        };
        let detail = format!(
            "approved baseline `{shown}` has no trace; accept its removal with `tracereplay baseline accept` or record the run again"
        );
        if opts.write_pending {
            let deleted = Utf8PathBuf::from(format!("{}.deleted", stored.path));
            let new = Utf8PathBuf::from(format!("{}.new", stored.path));
            remove_if_present(&opts.store, &new, warnings);
            let confined = opts.store.confined();
            let limit = crate::baseline::MAX_BASELINE_BYTES;
            match confined.read(&stored.path, limit, "baseline") {
                Ok(bytes) => {
                    if let Err(e) = confined.write(&deleted, &bytes, true) {
                        warnings.push(format!(
                            "cannot write pending removal `{}`: {e}",
                            display_path(&deleted)
                        ));
                    }
                }
                Err(e) => warnings.push(format!("cannot read `{shown}`: {e}")),
            }
        }
        out.push(ObsoleteBaseline {
            scenario,
            case,
            path: shown,
            finding: DriftFinding::new(DriftCategory::Obsolete, detail, None, opts.mode),
        });
    }
    out
}
