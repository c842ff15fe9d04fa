//! Making many written files durable with one `syncfs` of their filesystem instead of one `fsync`
//! each (Linux).
//!
//! A file's own `fsync` makes the filesystem write it and then flush the device's cache; 20,000
//! of them from 64 threads took 0.45–0.55 s of `baseline approve`, where one `syncfs` of the
//! filesystem they lie on writes the same blocks in one sweep and flushes the device once. But
//! `syncfs` writes *everything* unwritten on that filesystem, other processes' files too, so it
//! is used only when it cannot cost much more than the syncs it replaces:
//!
//! - **Many files.** At least [`MIN_FILES`] paths in the batch; fewer are synced one by one.
//! - **Little else unwritten.** Everything the machine holds unwritten (`Dirty` + `Writeback` in
//!   `/proc/meminfo`, all filesystems) is at most what this process wrote plus
//!   [`ALLOWANCE_PER_FILE`] for each file the sync replaces: about what one file's own sync
//!   costs on a disk that writes a few hundred MB/s, so the whole sync writes no more than the
//!   per-file syncs would cost.
//! - **Errors reported.** Since Linux 5.8 `syncfs` reports a writeback error of the filesystem
//!   that happened after the descriptor it is called on was opened; before, it said nothing.
//!   So it is used only on 5.8 or later, and through a descriptor opened on the first directory
//!   this process wrote into on that filesystem, *before* its first file there was created: a
//!   failed write-back of any file this process wrote is reported, even one another process's
//!   sync saw first. (A failed write-back of another process's file on the same filesystem fails
//!   this run's sync too: it errs towards saying a write may be lost.)
//! - **Known filesystems.** ext4, XFS and btrfs, whose `syncfs` writes data and metadata and
//!   records write-back errors where it reads them. Elsewhere (overlay, network and FUSE
//!   filesystems) each file is synced on its own.
//!
//! A path whose directory this process did not write into through `fsutil` (so no descriptor
//! was opened before it) is synced on its own, as on every other system.

/// The fewest paths in a batch worth one whole-filesystem sync.
#[cfg(any(target_os = "linux", test))]
pub(crate) const MIN_FILES: usize = 64;

/// Unwritten bytes allowed, beyond this process's own, for each file one `syncfs` replaces.
#[cfg(any(target_os = "linux", test))]
pub(crate) const ALLOWANCE_PER_FILE: u64 = 16 * 1024;

/// Whether one `syncfs` of a batch of `files` pays: enough files, and no more unwritten on the
/// machine (`unwritten`) than this process wrote (`ours`) plus an allowance per file.
#[cfg(any(target_os = "linux", test))]
pub(crate) fn pays(files: usize, unwritten: u64, ours: u64) -> bool {
    files >= MIN_FILES
        && unwritten <= ours.saturating_add((files as u64).saturating_mul(ALLOWANCE_PER_FILE))
}

/// Whether the kernel release (`uname -r`, `/proc/sys/kernel/osrelease`) is 5.8 or later, whose
/// `syncfs` reports write-back errors.
#[cfg(any(target_os = "linux", test))]
pub(crate) fn reports_errors(release: &str) -> bool {
    let mut parts = release.trim().split(['.', '-', '+']);
    let number = |p: Option<&str>| p.and_then(|p| p.parse::<u32>().ok());
    match (number(parts.next()), number(parts.next())) {
        (Some(major), Some(minor)) => (major, minor) >= (5, 8),
        _ => false,
    }
}

/// `Dirty` + `Writeback` of a `/proc/meminfo` text, in bytes (`None` when either is missing).
#[cfg(any(target_os = "linux", test))]
pub(crate) fn unwritten_of(meminfo: &str) -> Option<u64> {
    let field = |name| crate::fsutil::kib_field(meminfo, name);
    Some(field("Dirty")?.saturating_add(field("Writeback")?))
}

#[cfg(all(test, target_os = "linux"))]
pub(crate) use linux::{is_known, sync_filesystems_with, whole_syncs};
#[cfg(target_os = "linux")]
pub(crate) use linux::{note_directory, note_written, sync_filesystems_of};

#[cfg(not(target_os = "linux"))]
pub(crate) use elsewhere::{note_directory, note_written, sync_filesystems_of};

#[cfg(not(target_os = "linux"))]
mod elsewhere {
    use camino::Utf8Path;

    pub(crate) fn note_directory(_dir: &Utf8Path) {}
    pub(crate) fn note_written(_bytes: u64) {}
    pub(crate) fn sync_filesystems_of(paths: Vec<&Utf8Path>) -> std::io::Result<Vec<&Utf8Path>> {
        Ok(paths)
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::HashMap;
    use std::os::unix::fs::MetadataExt;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use camino::Utf8Path;

    /// ext4 (and ext2/3), XFS, btrfs.
    const KNOWN: [u64; 3] = [0xEF53, 0x5846_5342, 0x9123_683E];

    /// Whether `handle` lies on a filesystem [`KNOWN`] to sync whole.
    pub(crate) fn is_known(handle: &std::fs::File) -> bool {
        rustix::fs::fstatfs(handle)
            .is_ok_and(|s| KNOWN.contains(&((s.f_type as u64) & 0xFFFF_FFFF)))
    }

    /// The directories this process wrote into, and per filesystem they lie on the first one
    /// and a descriptor on it (`None` for a filesystem not to sync whole).
    #[derive(Default)]
    struct Written {
        directories: HashMap<String, u64>,
        filesystems: HashMap<u64, Option<Arc<Filesystem>>>,
    }

    /// A filesystem to sync whole: a descriptor on a directory of it, and that directory.
    struct Filesystem {
        handle: std::fs::File,
        dir: String,
    }

    impl Filesystem {
        /// `syncfs` through the descriptor; an error says it was the whole filesystem's.
        fn sync(&self, injected: bool) -> std::io::Result<()> {
            let synced = match injected {
                true => Err(crate::fsutil::write_back_failed()),
                false => rustix::fs::syncfs(&self.handle).map_err(std::io::Error::from),
            };
            synced.map_err(|e| {
                let what = format!("{e} (syncing the whole filesystem `{}` is on)", self.dir);
                std::io::Error::new(e.kind(), what)
            })
        }
    }

    static WRITTEN: Mutex<Option<Written>> = Mutex::new(None);
    static BYTES: AtomicU64 = AtomicU64::new(0);
    static WHOLE_SYNCS: AtomicUsize = AtomicUsize::new(0);

    /// Notes that this process is about to create its first file in `dir`: opens the
    /// descriptor a later `syncfs` of its filesystem goes through, if it is the first there.
    pub(crate) fn note_directory(dir: &Utf8Path) {
        let Ok(handle) = std::fs::File::open(dir) else {
            return;
        };
        let Ok(dev) = handle.metadata().map(|m| m.dev()) else {
            return;
        };
        let mut written = WRITTEN.lock().unwrap_or_else(|e| e.into_inner());
        let written = written.get_or_insert_default();
        written.directories.insert(dir.as_str().to_owned(), dev);
        (written.filesystems.entry(dev)).or_insert_with(|| {
            let known = is_known(&handle);
            let dir = dir.as_str().to_owned();
            known.then(|| Arc::new(Filesystem { handle, dir }))
        });
    }

    /// Counts bytes this process wrote to files.
    pub(crate) fn note_written(bytes: u64) {
        BYTES.fetch_add(bytes, Ordering::Relaxed);
    }

    /// How many whole-filesystem syncs this process made (for tests).
    #[cfg(test)]
    pub(crate) fn whole_syncs() -> usize {
        WHOLE_SYNCS.load(Ordering::Relaxed)
    }

    /// Syncs the filesystems of what it can of `paths` whole, when that pays (see the module);
    /// returns the paths left to sync one by one.
    pub(crate) fn sync_filesystems_of(paths: Vec<&Utf8Path>) -> std::io::Result<Vec<&Utf8Path>> {
        if paths.len() < super::MIN_FILES {
            return Ok(paths);
        }
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        if !super::reports_errors(&release) {
            return Ok(paths);
        }
        sync_filesystems_with(paths, || {
            // The fault tests' machine with this much unwritten (debug builds only).
            let told = std::env::var("TRACEREPLAY_FAULT_UNWRITTEN").ok();
            if let Some(n) = told.filter(|_| cfg!(debug_assertions)) {
                return n.parse().ok();
            }
            let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
            super::unwritten_of(&meminfo)
        })
    }

    /// [`sync_filesystems_of`] past the kernel's check, with what is unwritten on the machine
    /// read by `unwritten` (once the paths are sorted).
    pub(crate) fn sync_filesystems_with(
        paths: Vec<&Utf8Path>,
        unwritten: impl FnOnce() -> Option<u64>,
    ) -> std::io::Result<Vec<&Utf8Path>> {
        let (mut covered, mut rest, mut handles) = (Vec::new(), Vec::new(), Vec::new());
        {
            let written = WRITTEN.lock().unwrap_or_else(|e| e.into_inner());
            let Some(written) = written.as_ref() else {
                return Ok(paths);
            };
            for p in paths {
                // A directory this process wrote into, or a file in one.
                let dev = (written.directories.get(p.as_str())).or_else(|| {
                    written
                        .directories
                        .get(crate::fsutil::directory_of(p).as_str())
                });
                match dev.and_then(|d| Some((d, written.filesystems.get(d)?.as_ref()?))) {
                    Some((dev, handle)) => {
                        covered.push(p);
                        if !handles.iter().any(|(d, _)| d == dev) {
                            handles.push((*dev, Arc::clone(handle)));
                        }
                    }
                    None => rest.push(p),
                }
            }
        }
        let ours = BYTES.load(Ordering::Relaxed);
        if !unwritten().is_some_and(|u| super::pays(covered.len(), u, ours)) {
            rest.append(&mut covered);
            return Ok(rest);
        }
        let injected = (covered.iter()).any(|p| crate::fsutil::sync_fault_injected(p));
        for (_, filesystem) in &handles {
            filesystem.sync(injected)?;
            WHOLE_SYNCS.fetch_add(1, Ordering::Relaxed);
        }
        Ok(rest)
    }
}

#[cfg(test)]
#[path = "whole_fs_tests.rs"]
mod tests;
