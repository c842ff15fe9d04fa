//! The persist stage, the only one that writes baseline files: pending `.new` and `.deleted`
//! files decided by the comparisons and the suite-level passes, carried out once the whole run
//! is in view (never from the judging workers), and never under CI.

use rayon::prelude::*;

use super::baselines::Pending;
use crate::baseline::BaselineStore;
use crate::paths::display_path;
use crate::report::FailedWrite;

/// Carries out `pending` in `store` (each file inside it, never through a symlink), in parallel.
/// What cannot be done is a warning; a pending file that cannot be written is also a
/// [`FailedWrite`], and an older pending file in its place is removed, so that `baseline accept`
/// never promotes what an earlier run found. Also returns how many pending files were written.
pub(crate) fn write_pending(
    store: &BaselineStore,
    pending: &[Pending],
) -> (Vec<String>, Vec<FailedWrite>, usize) {
    let confined = store.confined();
    let remove = |path: &camino::Utf8Path, warnings: &mut Vec<String>| {
        if let Err(e) = confined.remove(path) {
            warnings.push(format!(
                "cannot remove stale pending file `{}`: {e}",
                display_path(path)
            ));
        }
    };
    let outcomes: Vec<(Vec<String>, Vec<FailedWrite>, Vec<camino::Utf8PathBuf>)> = pending
        .par_iter()
        .map(|p| {
            let (mut warnings, mut failed, mut wrote) = (Vec::new(), Vec::new(), Vec::new());
            match p {
                Pending::Write {
                    scenario,
                    case,
                    text,
                } => {
                    remove(&store.deleted_path(scenario, case), &mut warnings);
                    let new = store.new_path(scenario, case);
                    // Staged by the judging worker: only the rename is left.
                    let written = match text.staged().filter(|s| s.path() == new) {
                        Some(staged) => staged.commit(),
                        None => (text.bytes()).and_then(|t| confined.write(&new, &t, false)),
                    };
                    if let Err(e) = written {
                        let _ = confined.remove(&new);
                        failed.push(FailedWrite::new(
                            format!(
                                "cannot write pending baseline `{}`: {e}",
                                display_path(&new)
                            ),
                            &e,
                        ));
                    } else {
                        wrote.push(new);
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
                            if let Err(e) = confined.write(&deleted, &bytes, false) {
                                let _ = confined.remove(&deleted);
                                failed.push(FailedWrite::new(
                                    format!(
                                        "cannot write pending removal `{}`: {e}",
                                        display_path(&deleted)
                                    ),
                                    &e,
                                ));
                            } else {
                                wrote.push(deleted);
                            }
                        }
                        Err(e) => {
                            warnings.push(format!("cannot read `{}`: {e}", display_path(approved)))
                        }
                    }
                }
            }
            (warnings, failed, wrote)
        })
        .collect();
    let (mut warnings, mut failed, mut written) = (Vec::new(), Vec::new(), Vec::new());
    for (w, f, n) in outcomes {
        warnings.extend(w);
        failed.extend(f);
        written.extend(n);
    }
    // Durable once, after every write: each file written, then each directory once — in
    // parallel, so the filesystem commits them together instead of one journal commit per
    // file. A pending file that cannot be made durable is not left to be accepted.
    if let Err(e) = crate::fsutil::sync_written(&written, &store.dir) {
        for path in written.drain(..) {
            let _ = confined.remove(&path);
            failed.push(FailedWrite::new(
                format!(
                    "cannot make pending baseline `{}` durable: {e}",
                    display_path(&path)
                ),
                &e,
            ));
        }
    }
    let written = written.len();
    warnings.extend(failed.iter().map(|f| f.message.clone()));
    warnings.sort();
    failed.sort_by(|a, b| a.message.cmp(&b.message));
    (warnings, failed, written)
}
