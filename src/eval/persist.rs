//! The persist stage, the only one that writes baseline files: pending `.new` and `.deleted`
//! files decided by the comparisons and the suite-level passes, carried out once the whole run
//! is in view (never from the judging workers), and never under CI.

use rayon::prelude::*;

use super::baselines::Pending;
use crate::baseline::BaselineStore;
use crate::discover::display_path;

/// Carries out `pending` in `store` (each file inside it, never through a symlink), in parallel;
/// what cannot be done is a warning.
pub(crate) fn write_pending(store: &BaselineStore, pending: &[Pending]) -> Vec<String> {
    let confined = store.confined();
    let remove = |path: &camino::Utf8Path, warnings: &mut Vec<String>| {
        if let Err(e) = confined.remove(path) {
            warnings.push(format!(
                "cannot remove stale pending file `{}`: {e}",
                display_path(path)
            ));
        }
    };
    let mut warnings: Vec<String> = pending
        .par_iter()
        .flat_map_iter(|p| {
            let mut warnings = Vec::new();
            match p {
                Pending::Write {
                    scenario,
                    case,
                    text,
                } => {
                    remove(&store.deleted_path(scenario, case), &mut warnings);
                    let new = store.new_path(scenario, case);
                    if let Err(e) = confined.write(&new, text.as_bytes(), true) {
                        warnings.push(format!(
                            "cannot write pending baseline `{}`: {e}",
                            display_path(&new)
                        ));
                    }
                }
                Pending::Clear { scenario, case } => {
                    remove(&store.deleted_path(scenario, case), &mut warnings);
                    remove(&store.new_path(scenario, case), &mut warnings);
                }
                Pending::Remove { approved } => {
                    let deleted = camino::Utf8PathBuf::from(format!("{approved}.deleted"));
                    remove(
                        &camino::Utf8PathBuf::from(format!("{approved}.new")),
                        &mut warnings,
                    );
                    let limit = crate::baseline::MAX_BASELINE_BYTES;
                    match confined.read(approved, limit, "baseline") {
                        Ok(bytes) => {
                            if let Err(e) = confined.write(&deleted, &bytes, true) {
                                warnings.push(format!(
                                    "cannot write pending removal `{}`: {e}",
                                    display_path(&deleted)
                                ));
                            }
                        }
                        Err(e) => {
                            warnings.push(format!("cannot read `{}`: {e}", display_path(approved)))
                        }
                    }
                }
            }
            warnings
        })
        .collect();
    warnings.sort();
    warnings
}
