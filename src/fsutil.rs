//! Atomic file writes: a temporary file in the destination's directory, then a rename, so a crash
//! or kill leaves the old file intact.

use std::io::Write;

use camino::Utf8Path;

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

/// Creates `path`'s directory if needed, then writes atomically; `durable` syncs the data to
/// disk before the rename (skip it only for files that may be lost, such as a cache).
pub fn write_creating_dirs(path: &Utf8Path, bytes: &[u8], durable: bool) -> std::io::Result<()> {
    write_streaming_creating_dirs(path, durable, &mut |w| w.write_all(bytes))
}

/// [`write_creating_dirs`] for content written piece by piece (through a buffer), so a large
/// file is never held in memory whole.
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

/// [`write_atomic`] with a hook run between writing the temporary file and the rename, so tests
/// can inject a failure exactly there.
fn write_atomic_with(
    path: &Utf8Path,
    write: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
    durable: bool,
    before_rename: impl FnOnce() -> std::io::Result<()>,
) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_str().is_empty() => d,
        _ => Utf8Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".tracereplay-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    {
        let mut out = std::io::BufWriter::with_capacity(64 * 1024, tmp.as_file_mut());
        write(&mut out)?;
        out.flush()?;
    }
    if durable {
        tmp.as_file().sync_all()?;
    }
    // On error the temporary file is dropped (and deleted) and `path` is untouched.
    before_rename()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content_and_leaves_no_temporary_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = camino::Utf8PathBuf::from_path_buf(dir.path().join("f.json")).unwrap();
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_failure_before_the_rename_leaves_the_old_file_intact() {
        let dir = tempfile::tempdir().unwrap();
        let p = camino::Utf8PathBuf::from_path_buf(dir.path().join("a.baseline.json")).unwrap();
        write_atomic(&p, b"approved").unwrap();
        let err = write_atomic_with(&p, &mut |w| w.write_all(b"half-written"), true, || {
            Err(std::io::Error::other("killed"))
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "killed");
        assert_eq!(std::fs::read(&p).unwrap(), b"approved");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file left behind"
        );
    }
}
