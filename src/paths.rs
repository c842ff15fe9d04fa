//! How paths are shown: a leaf module every layer may use (reports, baselines, judging), so that
//! naming a file in a message never depends on discovery.

use std::path::PathBuf;

use camino::Utf8Path;

/// A path printed relative to the working directory, with `/` separators and no leading `./`.
pub fn display_path(path: &Utf8Path) -> String {
    // The working directory does not change during a run; ask for it once.
    static CWD: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    let cwd = CWD.get_or_init(|| std::env::current_dir().ok());
    let rel = if path.is_absolute() {
        cwd.as_ref()
            .and_then(|cwd| path.as_std_path().strip_prefix(cwd).ok())
            .and_then(|p| Utf8Path::from_path(p))
    } else {
        None
    };
    let p = rel.unwrap_or(path);
    let mut s = p.as_str().replace('\\', "/");
    while let Some(rest) = s.strip_prefix("./") {
        s = rest.to_owned();
    }
    s
}
