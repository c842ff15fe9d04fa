//! Which checked paths belong to the suite: pending baselines are the suite's, so a check of a
//! directory outside the project's `paths` compares with the approved baselines but proposes
//! none, and says so.

use camino::{Utf8Path, Utf8PathBuf};
use tracereplay_trace::paths::display_path;

use super::settings::Settings;

/// Whether a check of `paths` may write pending baselines: every path lies within the project's
/// `paths` (or no project file names them). Otherwise a note says why none is written, unless
/// `quiet` (or under CI, where none is written anyway).
pub(super) fn pending_allowed(paths: &[Utf8PathBuf], settings: &Settings, quiet: bool) -> bool {
    let outside = outside_suite(paths, settings.project_paths());
    if !outside.is_empty() && !quiet {
        let shown: Vec<String> = (outside.iter())
            .map(|p| format!("`{}`", display_path(p)))
            .collect();
        let roots: Vec<String> = (settings.suite_roots().iter())
            .map(|p| format!("`{}`", display_path(p)))
            .collect();
        diag!(
            "note: {} outside the project's paths ({}): compared with the approved baselines, but no pending baseline is written for it; record into the suite (`record` does by default) or add the directory to `paths` to review and accept its runs",
            shown.join(", ") + if outside.len() == 1 { " is" } else { " are" },
            roots.join(", ")
        );
    }
    outside.is_empty()
}

/// The checked paths that lie outside the project's `paths` (none without a project file that
/// names them, and none that are object-storage URLs). Paths are compared as they resolve on
/// disk (symlinks, `..`), falling back to the text for one that does not exist.
fn outside_suite<'p>(
    paths: &'p [Utf8PathBuf],
    project: Option<&[Utf8PathBuf]>,
) -> Vec<&'p Utf8PathBuf> {
    let Some(roots) = project else {
        return Vec::new();
    };
    let real = |p: &Utf8Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.as_std_path().into());
    let roots: Vec<std::path::PathBuf> = roots.iter().map(|r| real(r)).collect();
    (paths.iter())
        .filter(|p| !p.as_str().contains("://"))
        .filter(|p| {
            let p = real(p);
            !roots.iter().any(|r| p.starts_with(r))
        })
        .collect()
}
