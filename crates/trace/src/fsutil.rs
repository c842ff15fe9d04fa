//! Files on disk, written and read safely: atomic writes (a temporary file in the destination's
//! directory, then a rename, so a crash or kill leaves the old file intact), writes confined to a
//! directory without following a symlink out of it, and reads of regular files only, within a
//! size limit.
//!
//! - **Modes.** Written files get the mode a plain create gives under the process umask (the
//!   temporary file is created as the destination would be, not 0600), so a teammate or a CI step
//!   running as another user can read a baseline or a report.
//! - **Temporary files** are named `.tracereplay-<16 hex>.tmp`. One left by a killed process is
//!   removed by a later write into the same directory once it is `STALE_AFTER` old (never
//!   sooner: a younger one may be another process's write in progress, as when two `check`
//!   runs share a cache or baselines directory).
//! - **Concurrent runs** need no lock: every file is replaced whole by a rename, so two
//!   processes writing the same file leave one complete version of it (the last renamed), and a
//!   reader holding the old file open keeps reading the old version.
//! - **Faults** (debug builds only, for the fault tests): `TRACEREPLAY_FAULT_FULL_DISK=<text>`
//!   makes every write or rename whose destination contains `<text>` (ends with it, when
//!   written `<text>$`) fail as a full disk does, after part of the data reached the temporary
//!   file. `TRACEREPLAY_FAULT_SYNC=<text>` makes every sync of a batch holding a path that
//!   contains `<text>` fail as a failed write-back does (`EIO`), one file's or the whole
//!   filesystem's; `TRACEREPLAY_FAULT_UNWRITTEN=<bytes>` stands for what the machine holds
//!   unwritten, which decides between the two (`whole_fs`).
//! - **Confinement** ([`Confined`]): every directory between the root and the file must be a
//!   real directory, not a symlink, and the file itself, if it exists, a regular file; otherwise
//!   the write (or removal, or rename) is refused with a message naming the path. The root itself
//!   may be a symlink: it is the user's choice of directory.
//! - **Reads** ([`read_regular`]): only a regular file (a FIFO would block forever, `/dev/zero`
//!   never ends), checked before it is opened, and never more than the limit of its kind.

use std::io::{Read, Write};
use std::time::SystemTime;

use camino::{Utf8Path, Utf8PathBuf};

mod staged;
mod whole_fs;
pub use staged::Staged;

/// When this process started writing: temporary files older than this are leftovers.
fn run_started() -> SystemTime {
    static STARTED: std::sync::OnceLock<SystemTime> = std::sync::OnceLock::new();
    *STARTED.get_or_init(SystemTime::now)
}

/// How old a temporary file must be before another run takes it for a leftover and removes it.
pub const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// Whether `e` says the disk (or the user's quota) is full.
pub fn is_disk_full(e: &std::io::Error) -> bool {
    // ENOSPC and EDQUOT (Linux numbers; other systems report the kinds).
    matches!(
        e.kind(),
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
    ) || (cfg!(target_os = "linux") && matches!(e.raw_os_error(), Some(28 | 122)))
}

/// The fault tests' failed write-back: whether a sync of a batch holding `path` is to fail as
/// an I/O error (debug builds only; `TRACEREPLAY_FAULT_SYNC=<text>`, any path containing it).
fn sync_fault_injected(path: &Utf8Path) -> bool {
    cfg!(debug_assertions)
        && std::env::var("TRACEREPLAY_FAULT_SYNC")
            .is_ok_and(|p| !p.is_empty() && path.as_str().contains(&p))
}

/// The error of a failed write-back (`EIO`).
fn write_back_failed() -> std::io::Error {
    if cfg!(unix) {
        std::io::Error::from_raw_os_error(5)
    } else {
        std::io::Error::other("Input/output error")
    }
}

/// The fault tests' full disk: whether writes to `path` are to fail (debug builds only).
fn full_disk_injected(path: &Utf8Path) -> bool {
    cfg!(debug_assertions)
        && std::env::var("TRACEREPLAY_FAULT_FULL_DISK").is_ok_and(|p| match p.strip_suffix('$') {
            Some(end) => !end.is_empty() && path.as_str().ends_with(end),
            None => !p.is_empty() && path.as_str().contains(&p),
        })
}

fn full_disk() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::StorageFull,
        "No space left on device (injected by TRACEREPLAY_FAULT_FULL_DISK)",
    )
}

/// A writer that fails as a full disk does once `left` bytes are written.
struct FillsUp<'w> {
    inner: &'w mut dyn Write,
    left: usize,
}

impl Write for FillsUp<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            return Err(full_disk());
        }
        let n = self.inner.write(&buf[..buf.len().min(self.left)])?;
        self.left -= n;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Notes the start of the run (call early: temporary files older than it count as leftovers).
pub fn mark_run_start() {
    run_started();
}

/// Makes `files` durable, and their directories' entries for them: each file is synced (in
/// parallel), then each directory from the files' own up to `root` once. A large batch written
/// by this process is made durable by one `syncfs` of its filesystem instead, only when that
/// cannot cost much more (little else unwritten on the machine; see `whole_fs`).
pub fn sync_written(files: &[Utf8PathBuf], root: &Utf8Path) -> std::io::Result<()> {
    sync_all_of(files.iter().map(Utf8PathBuf::as_path))?;
    sync_directories_of(files, root)
}

/// Makes the directory entries of `files` durable (after renames into place of files synced
/// already): each directory from the files' own up to `root`, once.
pub fn sync_directories_of(files: &[Utf8PathBuf], root: &Utf8Path) -> std::io::Result<()> {
    let mut dirs: std::collections::BTreeSet<&Utf8Path> = Default::default();
    for f in files {
        let mut d = f.parent();
        while let Some(dir) = d.filter(|d| !d.as_str().is_empty()) {
            if !dirs.insert(dir) || dir == root {
                break;
            }
            d = dir.parent();
        }
    }
    // A directory is synced through a handle on it (Unix); elsewhere the files suffice.
    #[cfg(unix)]
    sync_all_of(dirs.into_iter())?;
    Ok(())
}

/// Threads waiting on `fsync` at once: the filesystem commits the syncs that wait together in
/// one journal commit (and one device flush), so many waiting threads make few commits. They
/// wait on the disk, not on a CPU, so there may be more of them than cores.
const SYNC_THREADS: usize = 64;

/// Syncs every path (a file, or a directory on Unix) through a handle on it, from up to
/// [`SYNC_THREADS`] threads, or a large batch with one `syncfs` of its filesystem (`whole_fs`);
/// the first error wins.
fn sync_all_of<'p>(paths: impl Iterator<Item = &'p Utf8Path>) -> std::io::Result<()> {
    let paths = whole_fs::sync_filesystems_of(paths.collect())?;
    if paths.is_empty() {
        return Ok(());
    }
    let threads = SYNC_THREADS.min(paths.len());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| -> std::io::Result<()> {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(p) = paths.get(i) else {
                            return Ok(());
                        };
                        if sync_fault_injected(p) {
                            return Err(write_back_failed());
                        }
                        std::fs::File::open(p)?.sync_all()?;
                    }
                })
            })
            .collect();
        (workers.into_iter())
            .map(|w| {
                w.join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("a sync thread panicked")))
            })
            .collect::<std::io::Result<Vec<()>>>()
            .map(drop)
    })
}

/// Writes `bytes` to `path` atomically.
pub fn write_atomic(path: &Utf8Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_streaming(path, &mut |w| w.write_all(bytes))
}

/// [`write_atomic`] for content written piece by piece (through a buffer), so a large report
/// is never held in memory whole.
pub fn write_atomic_streaming(
    path: &Utf8Path,
    write: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    write_atomic_with(path, write, true, || Ok(()))
}

/// Creates `path`'s directory if needed, then writes atomically, piece by piece (through a
/// buffer, so a large file is never held in memory whole); `durable` syncs the data to disk
/// before the rename (skip it only for files that may be lost, such as a cache).
pub fn write_streaming_creating_dirs(
    path: &Utf8Path,
    durable: bool,
    write: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    write_atomic_with(path, write, durable, || Ok(()))
}

/// A fresh temporary file in `dir`, created as a plain create would create the destination
/// (mode 0666 less the umask), with its path.
fn temporary_in(dir: &Utf8Path) -> std::io::Result<(std::fs::File, Utf8PathBuf)> {
    for _ in 0..16 {
        let mut random = [0u8; 8];
        getrandom::fill(&mut random).map_err(|e| std::io::Error::other(e.to_string()))?;
        let name: String = random.iter().map(|b| format!("{b:02x}")).collect();
        let path = dir.join(format!(".tracereplay-{name}.tmp"));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(f) => return Ok((f, path)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("cannot name a temporary file"))
}

/// The directory a write of `path` goes into (`.` for a bare file name): where its temporary
/// file is made, and what the stale-file clean-up and the whole-filesystem sync key it by.
fn directory_of(path: &Utf8Path) -> &Utf8Path {
    match path.parent() {
        Some(d) if !d.as_str().is_empty() => d,
        _ => Utf8Path::new("."),
    }
}

/// Whether `name` is one of this tool's temporary files (`.tracereplay-<16 hex>.tmp`).
fn is_temporary_name(name: &str) -> bool {
    name.strip_prefix(".tracereplay-")
        .and_then(|r| r.strip_suffix(".tmp"))
        .is_some_and(|hex| hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Removes this tool's temporary files in `dir` left by a killed process ([`STALE_AFTER`] older
/// than this run), once per directory per run.
fn remove_stale_temporaries(dir: &Utf8Path) {
    // By the directory's text: one looked up per file written, so no list to scan (a writer of
    // 20,000 baselines in 200 directories compared each path with every directory before) and
    // no path hashing by components. Two spellings of one directory only clean it twice.
    static CLEANED: std::sync::Mutex<Option<std::collections::HashSet<String>>> =
        std::sync::Mutex::new(None);
    {
        let mut cleaned = CLEANED.lock().unwrap_or_else(|e| e.into_inner());
        let cleaned = cleaned.get_or_insert_default();
        if cleaned.contains(dir.as_str()) {
            return;
        }
        cleaned.insert(dir.as_str().to_owned());
    }
    // Before this process's first file in `dir`: a later sync of its whole filesystem then
    // reports a failed write-back of any file written from here on.
    whole_fs::note_directory(dir);
    let started = run_started();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        let stale = e.file_name().to_str().is_some_and(is_temporary_name)
            && e.file_type().is_ok_and(|t| t.is_file())
            && e.metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t + STALE_AFTER < started);
        if stale {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// [`write_atomic`] with a hook run between writing the temporary file and the rename, so tests
/// can inject a failure exactly there.
fn write_atomic_with(
    path: &Utf8Path,
    write: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
    durable: bool,
    before_rename: impl FnOnce() -> std::io::Result<()>,
) -> std::io::Result<()> {
    let dir = directory_of(path);
    remove_stale_temporaries(dir);
    let (file, tmp) = temporary_in(dir)?;
    let written = (|| {
        fill(&file, path, write)?;
        if durable {
            file.sync_all()?;
        }
        before_rename()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        // `path` is untouched; the temporary file goes.
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Writes `file` (the temporary file for `path`) through a buffer, failing as a full disk does
/// when the fault tests ask it to for `path`.
fn fill(
    file: &std::fs::File,
    path: &Utf8Path,
    write: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, file);
    if full_disk_injected(path) {
        write(&mut FillsUp {
            inner: &mut out,
            left: 512,
        })?;
        out.flush()?;
        return Err(full_disk());
    }
    let mut counted = Counted {
        inner: &mut out,
        bytes: 0,
    };
    write(&mut counted)?;
    whole_fs::note_written(counted.bytes);
    out.flush()
}

/// A writer that counts the bytes written through it.
struct Counted<'w> {
    inner: &'w mut dyn Write,
    bytes: u64,
}

impl Write for Counted<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.inner.write_all(buf)?;
        self.bytes += buf.len() as u64;
        Ok(())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The field `name` of a Linux `/proc` file's text in lines of `Name:   1234 kB`
/// (`/proc/meminfo`, `/proc/self/status`), in bytes; `None` when it is missing or not in kB.
pub fn kib_field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let value = l.strip_prefix(name)?.strip_prefix(':')?;
        let kib: u64 = value.trim().strip_suffix("kB")?.trim().parse().ok()?;
        kib.checked_mul(1024)
    })
}

/// Opens `path` for reading without blocking on a FIFO (on Unix; elsewhere as usual). The
/// caller checks the open file is a regular file before reading it.
pub fn open_nonblocking(path: &Utf8Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    options.open(path)
}

/// Reads `path` if it is a regular file of at most `limit` bytes: opened without blocking (a
/// FIFO would block an open) and checked before anything is read (a device never ends), then
/// read no further than the limit (a file that grew). `what` names the kind of file in the
/// message.
pub fn read_regular(path: &Utf8Path, limit: u64, what: &str) -> std::io::Result<Vec<u8>> {
    let (reader, len) = open_regular(path, limit, what)?;
    let mut bytes = Vec::with_capacity(len as usize);
    reader.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(path, limit, what));
    }
    Ok(bytes)
}

fn too_large(path: &Utf8Path, limit: u64, what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!(
            "{what} `{path}` is larger than the limit of {limit} bytes for such a file; not read"
        ),
    )
}

/// Opens `path` to be read as a stream, as [`read_regular`] checks it: a regular file (opened
/// without blocking, checked before anything is read) of at most `limit` bytes. The reader
/// stops one byte past the limit, so a file that grew is caught by its reader's length; with
/// its length when opened.
pub fn open_regular(
    path: &Utf8Path,
    limit: u64,
    what: &str,
) -> std::io::Result<(std::io::Take<std::fs::File>, u64)> {
    let file = open_nonblocking(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{what} `{path}` is not a regular file (a FIFO, device or directory); not read"
            ),
        ));
    }
    if meta.len() > limit {
        return Err(too_large(path, limit, what));
    }
    Ok((file.take(limit + 1), meta.len()))
}

/// A directory that writes must stay inside (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confined {
    root: Utf8PathBuf,
}

fn refused(path: &Utf8Path, why: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        format!("refusing to write `{path}`: {why}"),
    )
}

impl Confined {
    /// Writes under `root`.
    pub fn new(root: impl Into<Utf8PathBuf>) -> Confined {
        Confined { root: root.into() }
    }

    /// The root.
    pub fn root(&self) -> &Utf8Path {
        &self.root
    }

    /// Checks `path` (which must lie under the root, lexically) for a write: each directory
    /// between the root and it is a real directory (created when `create` and missing), and the
    /// file itself is absent or a regular file, never a symlink.
    fn check(&self, path: &Utf8Path, create: bool) -> std::io::Result<()> {
        let here = matches!(self.root.as_str(), "" | ".");
        let rel = if here && path.is_relative() {
            path.strip_prefix(".").unwrap_or(path)
        } else {
            path.strip_prefix(&self.root)
                .map_err(|_| refused(path, &format!("it is not inside `{}`", self.root)))?
        };
        let mut at = self.root.clone();
        let parts: Vec<&str> = rel.iter().collect();
        let Some((file, dirs)) = parts.split_last() else {
            return Err(refused(path, "it names the directory itself"));
        };
        for part in dirs {
            if matches!(*part, "." | "..") {
                return Err(refused(path, "it climbs out with `..`"));
            }
            at.push(part);
            match std::fs::symlink_metadata(&at) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(refused(
                        path,
                        &format!(
                            "`{at}` is a symlink, and writes never follow one out of `{}`",
                            self.root
                        ),
                    ));
                }
                Ok(m) if m.is_dir() => {}
                Ok(_) => return Err(refused(path, &format!("`{at}` is not a directory"))),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => {
                    std::fs::create_dir(&at).or_else(|e| {
                        // Another process made it meanwhile: check it again below.
                        if e.kind() == std::io::ErrorKind::AlreadyExists {
                            Ok(())
                        } else {
                            Err(e)
                        }
                    })?;
                    if std::fs::symlink_metadata(&at)?.file_type().is_symlink() {
                        return Err(refused(path, &format!("`{at}` is a symlink")));
                    }
                }
                Err(e) => return Err(e),
            }
        }
        if matches!(*file, "." | "..") {
            return Err(refused(path, "it names a directory"));
        }
        Self::check_file(path)
    }

    /// The last part of [`Confined::check`], for a path whose directories were checked already:
    /// the file itself is absent or a regular file, never a symlink.
    fn check_file(path: &Utf8Path) -> std::io::Result<()> {
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => Err(refused(
                path,
                "it is a symlink, and tracereplay never writes through one",
            )),
            Ok(m) if !m.is_file() => Err(refused(path, "it is not a regular file")),
            Ok(_) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Writes `bytes` to `path` atomically, creating directories under the root as needed.
    pub fn write(&self, path: &Utf8Path, bytes: &[u8], durable: bool) -> std::io::Result<()> {
        self.write_streaming(path, durable, &mut |w| w.write_all(bytes))
    }

    /// [`Confined::write`] for content written piece by piece.
    pub fn write_streaming(
        &self,
        path: &Utf8Path,
        durable: bool,
        write: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.root)?;
        self.check(path, true)?;
        write_atomic_with(path, write, durable, || Ok(()))
    }

    /// Removes `path` (absent is fine); refuses a symlink or a path through one.
    pub fn remove(&self, path: &Utf8Path) -> std::io::Result<()> {
        // Nothing there (not even a dangling symlink), nothing to remove: not an error, even
        // when its directory does not exist.
        if std::fs::symlink_metadata(path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        {
            return Ok(());
        }
        self.check(path, false)?;
        match std::fs::remove_file(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    /// Renames `from` to `to`, both under the root; refuses symlinks at either end or on the way.
    pub fn rename(&self, from: &Utf8Path, to: &Utf8Path) -> std::io::Result<()> {
        self.check(from, false)?;
        if std::fs::symlink_metadata(from).is_err() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("`{from}` does not exist"),
            ));
        }
        // Within one directory (a pending file promoted), its directories were just checked.
        match (from.parent(), to.parent()) {
            // (`file_name` is `None` for a path ending in `..`.)
            (Some(a), Some(b)) if a == b && to.file_name().is_some() => Self::check_file(to)?,
            _ => self.check(to, true)?,
        }
        if full_disk_injected(to) {
            return Err(full_disk());
        }
        std::fs::rename(from, to)
    }

    /// Reads `path` under the root: the same checks as a write, then [`read_regular`].
    pub fn read(&self, path: &Utf8Path, limit: u64, what: &str) -> std::io::Result<Vec<u8>> {
        self.check(path, false)?;
        read_regular(path, limit, what)
    }
}

#[cfg(test)]
#[path = "fsutil_tests.rs"]
mod tests;
