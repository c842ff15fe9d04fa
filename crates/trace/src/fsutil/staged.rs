//! Files written before their fate is decided: [`Confined::stage`] writes a file's content to a
//! temporary file beside it, [`Staged::commit`] puts it in place by a rename, and a [`Staged`]
//! dropped uncommitted removes its temporary file.

use std::sync::atomic::{AtomicBool, Ordering};

use camino::{Utf8Path, Utf8PathBuf};

use super::{
    Confined, directory_of, fill, full_disk, full_disk_injected, remove_stale_temporaries,
    temporary_in,
};

impl Confined {
    /// Writes `bytes` to a temporary file beside `path` (creating directories under the root as
    /// needed) without putting it in place: [`Staged::commit`] does, by a rename. So a file can
    /// be written while its fate is still open, and appear only once it is decided. Not synced,
    /// as [`Confined::write`] with `durable` false.
    pub fn stage(&self, path: &Utf8Path, bytes: &[u8]) -> std::io::Result<Staged> {
        std::fs::create_dir_all(self.root())?;
        self.check(path, true)?;
        let dir = directory_of(path);
        remove_stale_temporaries(dir);
        let (file, tmp) = temporary_in(dir)?;
        let staged = Staged {
            tmp,
            path: path.to_owned(),
            committed: AtomicBool::new(false),
        };
        // Dropped on a failure, which removes the temporary file.
        fill(&file, path, &mut |w| w.write_all(bytes))?;
        Ok(staged)
    }
}

/// A file written beside its destination and not yet in place ([`Confined::stage`]).
#[derive(Debug)]
pub struct Staged {
    tmp: Utf8PathBuf,
    path: Utf8PathBuf,
    committed: AtomicBool,
}

impl Staged {
    /// Where it goes.
    pub fn path(&self) -> &Utf8Path {
        &self.path
    }

    /// What was written.
    pub fn read(&self) -> std::io::Result<Vec<u8>> {
        std::fs::read(&self.tmp)
    }

    /// Puts the file in place by a rename, once: a second commit fails. The destination may
    /// not be a symlink (its directories were checked when it was staged). Neither the file
    /// nor its directory is synced: the caller syncs what it put in place.
    pub fn commit(&self) -> std::io::Result<()> {
        if self.committed.swap(true, Ordering::AcqRel) {
            return Err(std::io::Error::other(format!(
                "`{}` was put in place already",
                self.path
            )));
        }
        let renamed = Confined::check_file(&self.path).and_then(|()| {
            if full_disk_injected(&self.path) {
                return Err(full_disk());
            }
            std::fs::rename(&self.tmp, &self.path)
        });
        if renamed.is_err() {
            let _ = std::fs::remove_file(&self.tmp);
        }
        renamed
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !*self.committed.get_mut() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}
