//! Finding scenario and trace files under the given paths: recursive, symlinks followed with
//! loop detection, hidden directories skipped, each file counted once however it was reached.

use foldhash::HashMap;
use std::path::PathBuf;

use camino::{Utf8Path, Utf8PathBuf};

use crate::trace::is_trace_path;

/// A path the user named that does not exist or cannot be listed.
#[derive(Debug, thiserror::Error)]
pub enum DiscoverError {
    /// The path does not exist.
    #[error("`{path}` does not exist")]
    NotFound {
        /// The path as given.
        path: Utf8PathBuf,
    },
    /// A path that is not UTF-8 was found; reports need printable paths.
    #[error("`{path}` is not valid UTF-8")]
    NonUtf8 {
        /// The path, lossily decoded.
        path: String,
    },
}

/// What discovery found. Paths are as reached from the given paths (relative stays relative).
#[derive(Debug, Default)]
pub struct Discovered {
    /// `*.scenario.json` files under the paths.
    pub scenario_files: Vec<Utf8PathBuf>,
    /// Every `*.json` of the `--scenarios` directories, except baselines and contracts.
    pub suite_files: Vec<Utf8PathBuf>,
    /// Trace files (`*.trace.ndjson`, `*.trace.ndjson.zst`).
    pub trace_files: Vec<Utf8PathBuf>,
    /// Raw-prompt sidecars (`*.prompts.ndjson`, `*.prompts.ndjson.zst`) under the paths.
    pub sidecar_files: Vec<Utf8PathBuf>,
    /// Things under the paths that discovery could not list, resolve or read, each with why:
    /// an unreadable directory, a path too long to resolve, a dangling symlink or a special file
    /// (a FIFO…) where a trace or scenario could be, a symlink leading outside the checked
    /// paths. Each becomes an `error` row: what cannot be looked at could hold a failure.
    pub unreachable: Vec<(Utf8PathBuf, String)>,
    /// Things worth telling the user (a symlink loop, or a second path to a directory already
    /// searched).
    pub warnings: Vec<String>,
    /// The paths searched (the given paths, then the `--scenarios` directories): the suite's
    /// roots, inside which a scenario's Harness Contract must lie.
    pub roots: Vec<Utf8PathBuf>,
    /// `*.scenario.json` files of the suite's own roots, when the run searched other paths
    /// ([`Discovered::look_up_in`]): they resolve the scenario a trace names when no scenario
    /// under the paths defines it, and are otherwise not part of the run (no row of their own,
    /// never obsolete).
    pub lookup_files: Vec<Utf8PathBuf>,
    /// The remote objects among `trace_files` (named by URL), and how to read them; `None` when
    /// every path was local.
    pub remote: Option<std::sync::Arc<crate::remote::Remote>>,
}

impl Discovered {
    /// The scenario files under the paths, then the look-up ones not among them: every
    /// scenario a trace of the run may name.
    pub fn every_scenario_file(&self) -> Vec<Utf8PathBuf> {
        let mut files = self.scenario_files.clone();
        let more = (self.lookup_files.iter()).filter(|f| !self.scenario_files.contains(f));
        files.extend(more.cloned());
        files
    }

    /// Adds the scenario files of `suite_roots` (the project file's `paths`, else `traces/`) as
    /// look-up scenarios, when the run's own paths do not cover them: so that `check replayed/`
    /// finds the scenario of a recording made from `traces/`. Roots that do not exist, or that
    /// the run already searched, add nothing.
    pub fn look_up_in(&mut self, suite_roots: &[Utf8PathBuf]) {
        let searched: Vec<std::path::PathBuf> = (self.roots.iter())
            .filter_map(|r| std::fs::canonicalize(r).ok())
            .collect();
        for root in suite_roots {
            let Ok(canonical) = std::fs::canonicalize(root) else {
                continue;
            };
            if searched.iter().any(|s| canonical.starts_with(s)) {
                continue;
            }
            let Ok(found) = discover(std::slice::from_ref(root), &[]) else {
                continue;
            };
            self.lookup_files.extend(found.scenario_files);
            self.roots.push(root.clone());
        }
    }
}

/// Whether `path` is a `*.json` file (not a baseline, contract or report of ours) whose first
/// 64 KiB name `oracles` or `scriptedTrace`: a scenario under a name discovery skips.
fn looks_like_scenario(path: &Utf8Path) -> bool {
    use std::io::Read;
    let name = path.file_name().unwrap_or("");
    if !name.ends_with(".json")
        || [".baseline.json", ".contract.json", ".scenario.json"]
            .iter()
            .any(|s| name.ends_with(s))
    {
        return false;
    }
    let Ok(file) = crate::fsutil::open_nonblocking(path) else {
        return false;
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut head = Vec::with_capacity(4096);
    if file.take(64 * 1024).read_to_end(&mut head).is_err() {
        return false;
    }
    let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
    text.trim_start().starts_with(['{', '['])
        && (text.contains("\"oracles\"") || text.contains("\"scriptedtrace\""))
}

/// Walks `paths` for scenarios and traces and `suite_dirs` for harness-suite scenario files.
///
/// The directories under the paths are listed ahead, in parallel on the current rayon pool
/// (`prefetch`); the walk itself is sequential, so what it finds, in which order, and what it
/// warns about do not depend on the thread count.
pub fn discover(
    paths: &[Utf8PathBuf],
    suite_dirs: &[Utf8PathBuf],
) -> Result<Discovered, DiscoverError> {
    let roots: Vec<&Utf8Path> = paths
        .iter()
        .chain(suite_dirs)
        .map(|p| p.as_path())
        .collect();
    let mut walker = Walker::new(&roots);
    walker.listed = prefetch(&roots);
    for p in paths {
        walker.root(p, false)?;
    }
    for p in suite_dirs {
        walker.root(p, true)?;
    }
    walker.found.roots = roots.iter().map(|r| r.to_path_buf()).collect();
    Ok(walker.found)
}

/// How many entries of a hidden directory are looked at for traces and scenarios.
const HIDDEN_PEEK: usize = 1000;

/// The suite's own root, relative to the working directory: what every command searches when
/// given no path.
pub const DEFAULT_ROOT: &str = "traces";

/// Whether a run over `paths` covers the suite's own roots, so that an approved baseline of a
/// scenario it did not find means the scenario is gone (not merely elsewhere): the default root
/// exists and one of the paths is it or a directory holding it (compared after resolving
/// symlinks and `..`). Checking another directory from the repository root covers nothing of
/// the suite, and must not mark its baselines obsolete.
pub fn covers_suite_roots(paths: &[Utf8PathBuf]) -> bool {
    let Ok(root) = std::fs::canonicalize(DEFAULT_ROOT) else {
        return false;
    };
    paths
        .iter()
        .any(|p| std::fs::canonicalize(p).is_ok_and(|p| root.starts_with(&p)))
}

/// Why a file of type `t` is not read.
fn not_regular(t: &std::fs::FileType) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO, not a regular file; not read (reading it could block forever)".into();
        }
        if t.is_socket() {
            return "a socket, not a regular file; not read".into();
        }
        if t.is_block_device() || t.is_char_device() {
            return "a device, not a regular file; not read".into();
        }
    }
    let _ = t;
    "not a regular file; not read".into()
}

pub use crate::paths::display_path;

/// What identifies a file or directory however it is reached: device and inode on Unix (a
/// regular file's inode comes with the directory listing, so it costs no `stat`), the canonical
/// path elsewhere. Only a hint on Unix: some file systems (overlayfs, as in many CI containers)
/// can give two files one pair, so a repeated id is confirmed by canonical paths (see
/// [`Walker::first_reach`]) and a file is never dropped on an id alone.
#[cfg(unix)]
type FileId = (u64, u64);
#[cfg(not(unix))]
type FileId = PathBuf;

/// The id of `path`, following symlinks; `None` when it cannot be resolved.
fn id_of(path: &Utf8Path) -> Option<FileId> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        std::fs::canonicalize(path).ok()
    }
}

/// The id of a regular file listed in the directory with id `dir`.
#[cfg(unix)]
fn listed_id(dir: &FileId, entry: &std::fs::DirEntry) -> FileId {
    use std::os::unix::fs::DirEntryExt;
    (dir.0, entry.ino())
}

#[cfg(not(unix))]
fn listed_id(dir: &FileId, entry: &std::fs::DirEntry) -> FileId {
    dir.join(entry.file_name())
}

/// A directory's entries, sorted by name: name, type (from the listing) and file id.
type Listing = Vec<(std::ffi::OsString, Option<std::fs::FileType>, FileId)>;

/// A directory's id and listing, as read ahead by [`prefetch`].
type Listed = (FileId, std::io::Result<Listing>);

/// Lists `dir` (with id `dir_id`), sorted by name. The entry's type (and on Unix its inode)
/// come with the listing: no `stat` per file.
fn list(dir: &Utf8Path, dir_id: &FileId) -> std::io::Result<Listing> {
    let mut listed: Listing = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| (e.file_name(), e.file_type().ok(), listed_id(dir_id, &e)))
        .collect();
    listed.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(listed)
}

/// Reads ahead, in parallel, the id and listing of every directory under `roots` that the walk
/// will enter: real subdirectories, not hidden, each listed once. Symlinked directories are left
/// to the walk (which detects their loops), as is anything not listed here; so the read-ahead only
/// saves time and never changes what is found.
fn prefetch(roots: &[&Utf8Path]) -> HashMap<Utf8PathBuf, Listed> {
    use rayon::prelude::*;
    use std::sync::Mutex;
    fn visit(
        dir: Utf8PathBuf,
        seen: &Mutex<foldhash::HashSet<FileId>>,
        out: &Mutex<HashMap<Utf8PathBuf, Listed>>,
    ) {
        let Some(id) = id_of(&dir) else { return };
        // A directory reached again (a bind mount looping back, say) is not listed twice.
        #[allow(clippy::clone_on_copy)] // a copy on Unix, a path elsewhere
        let first = (seen.lock().unwrap_or_else(|e| e.into_inner())).insert(id.clone());
        if !first {
            return;
        }
        let listing = list(&dir, &id);
        let subdirs: Vec<Utf8PathBuf> = match &listing {
            Ok(entries) => entries
                .iter()
                .filter(|(_, t, _)| t.is_some_and(|t| t.is_dir()))
                .filter_map(|(name, _, _)| name.to_str())
                .filter(|name| !name.starts_with('.'))
                .map(|name| dir.join(name))
                .collect(),
            Err(_) => Vec::new(),
        };
        out.lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(dir, (id, listing));
        subdirs.into_par_iter().for_each(|d| visit(d, seen, out));
    }
    let seen = Mutex::default();
    let out = Mutex::default();
    roots
        .par_iter()
        .filter(|root| root.is_dir())
        .for_each(|root| visit(root.to_path_buf(), &seen, &out));
    out.into_inner().unwrap_or_else(|e| e.into_inner())
}

#[derive(Default)]
struct Walker {
    found: Discovered,
    /// Directories read ahead by [`prefetch`], taken as the walk enters them.
    listed: HashMap<Utf8PathBuf, Listed>,
    /// The paths each directory id was reached by (one, unless ids are reused; directories are
    /// few).
    seen_dirs: HashMap<FileId, Vec<Utf8PathBuf>>,
    /// Where the first path of each file id is kept: `found`'s list of its kind, at an index.
    seen_files: HashMap<FileId, (Kind, usize)>,
    /// Further files whose id an earlier, different file already had (rare: reused ids).
    shared_ids: Vec<(FileId, Utf8PathBuf)>,
    /// The checked paths, resolved: where a symlink may lead.
    inside: Vec<PathBuf>,
}

/// Whether two paths name the same file once symlinks and `.`/`..` are resolved.
fn same_canonical(a: &Utf8Path, b: &Utf8Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

impl Walker {
    /// A walker of `roots`, following symlinks only to places inside them.
    fn new(roots: &[&Utf8Path]) -> Walker {
        Walker {
            inside: (roots.iter())
                .filter_map(|r| std::fs::canonicalize(r).ok())
                .collect(),
            ..Walker::default()
        }
    }

    /// Whether `path` (with `id`) reaches a file or directory for the first time: a new id, or a
    /// known id none of whose paths is, canonically, this one. Repeats are confirmed by path so
    /// that file systems reusing inode numbers across layers never hide a file.
    fn first_reach(
        seen: &mut HashMap<FileId, Vec<Utf8PathBuf>>,
        id: FileId,
        path: &Utf8Path,
    ) -> bool {
        let paths = seen.entry(id).or_default();
        if paths.iter().any(|p| p == path || same_canonical(p, path)) {
            return false;
        }
        paths.push(path.to_owned());
        true
    }

    fn root(&mut self, path: &Utf8Path, suite: bool) -> Result<(), DiscoverError> {
        let meta = std::fs::metadata(path).map_err(|_| DiscoverError::NotFound {
            path: path.to_owned(),
        })?;
        if meta.is_dir() {
            self.dir(path, suite)
        } else if meta.is_file() {
            // A file named explicitly is taken if it is a trace or any JSON file.
            let id = id_of(path);
            self.file(path.to_owned(), id, suite, true);
            Ok(())
        } else {
            self.unreachable(path, not_regular(&meta.file_type()));
            Ok(())
        }
    }

    fn dir(&mut self, dir: &Utf8Path, suite: bool) -> Result<(), DiscoverError> {
        let ahead = self.listed.remove(dir);
        let (dir_id, listing) = match ahead {
            Some((id, listing)) => (Some(id), Some(listing)),
            None => (id_of(dir), None),
        };
        let Some(dir_id) = dir_id else {
            self.unreachable(
                dir,
                "cannot be resolved (a path too long, or removed while searched)".into(),
            );
            return Ok(());
        };
        #[allow(clippy::clone_on_copy)] // a copy on Unix, a path elsewhere
        let first_visit = Walker::first_reach(&mut self.seen_dirs, dir_id.clone(), dir);
        if !first_visit {
            self.found.warnings.push(format!(
                "`{dir}` leads to a directory already searched (a symlink loop or a second path); skipped"
            ));
            return Ok(());
        }
        let listed = match listing.unwrap_or_else(|| list(dir, &dir_id)) {
            Ok(listed) => listed,
            Err(e) => {
                self.unreachable(dir, format!("the directory cannot be listed: {e}"));
                return Ok(());
            }
        };
        // A symlink (or an unknown type) is the only entry that costs a `stat`.
        for (name, file_type, listed_id) in listed {
            let name = name.into_string().map_err(|n| DiscoverError::NonUtf8 {
                path: dir.join(n.to_string_lossy().as_ref()).into_string(),
            })?;
            let path = dir.join(&name);
            let (is_dir, is_file, id) = match file_type {
                Some(t) if t.is_dir() => (true, false, None),
                Some(t) if t.is_file() => (false, true, Some(listed_id)),
                Some(t) if !t.is_symlink() => {
                    // A FIFO, socket or device: never opened (a FIFO would block the run).
                    if self.kind_of(&path, suite, false).is_some() {
                        self.unreachable(&path, not_regular(&t));
                    }
                    continue;
                }
                _ => {
                    // A symlink (or an unknown type): followed only inside the checked paths.
                    let Ok(meta) = std::fs::metadata(&path) else {
                        if self.kind_of(&path, suite, false).is_some() || !name.contains('.') {
                            self.unreachable(
                                &path,
                                "a symlink that leads nowhere (dangling)".into(),
                            );
                        } else {
                            self.found
                                .warnings
                                .push(format!("`{path}` is a dangling symlink; skipped"));
                        }
                        continue;
                    };
                    let resolved = std::fs::canonicalize(&path).ok();
                    if !resolved.is_some_and(|r| self.inside.iter().any(|root| r.starts_with(root)))
                    {
                        if meta.is_dir() || self.kind_of(&path, suite, false).is_some() {
                            self.unreachable(&path, "a symlink that leads outside the checked paths; not followed (pass its target as a path too, to check it)".into());
                        }
                        continue;
                    }
                    if !meta.is_dir() && !meta.is_file() {
                        if self.kind_of(&path, suite, false).is_some() {
                            self.unreachable(&path, not_regular(&meta.file_type()));
                        }
                        continue;
                    }
                    (meta.is_dir(), meta.is_file(), None)
                }
            };
            if is_dir {
                if !name.starts_with('.') {
                    self.dir(&path, suite)?;
                } else if let Some(holds) = self.hidden_holds(&path, suite) {
                    // Skipped, but never silently: what it holds could be a failure.
                    self.unreachable(&path, format!("a hidden directory holding {holds}, which discovery skips; rename it, or pass it as a path to check it"));
                }
            } else if is_file {
                let id = id.or_else(|| id_of(&path));
                self.file(path, id, suite, false);
            }
        }
        Ok(())
    }

    /// What a skipped hidden directory holds that discovery would look at (a trace or a
    /// scenario among its first entries), if anything. Looks one level deep, at most
    /// [`HIDDEN_PEEK`] entries: a large hidden directory (`.git`) costs next to nothing.
    fn hidden_holds(&self, dir: &Utf8Path, suite: bool) -> Option<&'static str> {
        let entries = std::fs::read_dir(dir).ok()?;
        for e in entries.take(HIDDEN_PEEK).flatten() {
            let Some(name) = e.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            match self.kind_of(&dir.join(&name), suite, false) {
                Some(Kind::Trace) => return Some("trace files"),
                Some(Kind::Scenario | Kind::Suite) => return Some("scenario files"),
                _ => {}
            }
        }
        None
    }

    /// Records something under the paths that cannot be looked at.
    fn unreachable(&mut self, path: &Utf8Path, why: String) {
        self.found.unreachable.push((path.to_owned(), why));
    }

    /// The kind of file discovery looks for that `path` names, if any.
    fn kind_of(&self, path: &Utf8Path, suite: bool, explicit: bool) -> Option<Kind> {
        let name = path.file_name().unwrap_or("");
        Some(if is_trace_path(path) && !suite {
            Kind::Trace
        } else if !suite
            && (name.ends_with(".prompts.ndjson") || name.ends_with(".prompts.ndjson.zst"))
        {
            Kind::Sidecar
        } else if name.ends_with(".scenario.json") || (explicit && name.ends_with(".json")) {
            if suite { Kind::Suite } else { Kind::Scenario }
        } else if suite
            && name.ends_with(".json")
            && !name.ends_with(".baseline.json")
            && !name.ends_with(".contract.json")
        {
            Kind::Suite
        } else {
            return None;
        })
    }

    /// Takes a file of a kind discovery looks for, once per id (`None`: it could not be
    /// resolved, and is taken as found).
    fn file(&mut self, path: Utf8PathBuf, id: Option<FileId>, suite: bool, explicit: bool) {
        let Some(kind) = self.kind_of(&path, suite, explicit) else {
            if !suite && looks_like_scenario(&path) {
                self.found.warnings.push(format!(
                    "found scenario-like file `{}`; rename it to `*.scenario.json` or pass its directory with `--scenarios`",
                    display_path(&path)
                ));
            }
            return;
        };
        // The same file reached twice (two paths, a symlink) counts once; as in `first_reach`, a
        // repeated id counts as a repeat only when the paths agree.
        if let Some(id) = id {
            match self.seen_files.get(&id).copied() {
                None => {
                    let at = self.list(kind).len();
                    self.seen_files.insert(id, (kind, at));
                }
                Some((first_kind, at)) => {
                    let same = |p: &Utf8Path| p == path || same_canonical(p, &path);
                    if same(&self.list(first_kind)[at])
                        || (self.shared_ids.iter()).any(|(other, p)| *other == id && same(p))
                    {
                        return;
                    }
                    self.shared_ids.push((id, path.clone()));
                }
            }
        }
        self.list(kind).push(path);
    }

    fn list(&mut self, kind: Kind) -> &mut Vec<Utf8PathBuf> {
        match kind {
            Kind::Trace => &mut self.found.trace_files,
            Kind::Scenario => &mut self.found.scenario_files,
            Kind::Suite => &mut self.found.suite_files,
            Kind::Sidecar => &mut self.found.sidecar_files,
        }
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Sidecar,
    Trace,
    Scenario,
    Suite,
}

/// Why [`find`] found nothing to judge: a local path, or a remote listing.
#[derive(Debug, thiserror::Error)]
pub enum FindError {
    /// A path does not exist, or the walk met a name that is not UTF-8.
    #[error(transparent)]
    Discover(#[from] DiscoverError),
    /// A remote path (`s3://…`) could not be listed.
    #[error(transparent)]
    Remote(#[from] crate::remote::RemoteError),
}

/// [`discover`] of `paths` and `scenario_dirs`, with the remote ones among
/// `paths` listed (as `options` says) and their traces added, named by URL; the listing is kept
/// in [`Discovered::remote`] to read them by.
pub fn find(
    paths: &[Utf8PathBuf],
    scenario_dirs: &[Utf8PathBuf],
    options: &crate::remote::RemoteOptions,
) -> Result<Discovered, FindError> {
    let (urls, local): (Vec<Utf8PathBuf>, Vec<Utf8PathBuf>) =
        (paths.iter().cloned()).partition(|p| crate::remote::is_remote(p.as_str()));
    let mut found = discover(&local, scenario_dirs)?;
    if !urls.is_empty() {
        let (listed, traces) = crate::remote::Remote::list(&urls, options)?;
        found.trace_files.extend(traces);
        found.remote = Some(std::sync::Arc::new(listed));
    }
    Ok(found)
}

#[cfg(test)]
#[path = "discover_tests.rs"]
mod tests;
