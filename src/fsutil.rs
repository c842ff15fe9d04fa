//! Atomic file writes: a temporary file in the destination's directory, then a rename, so a crash
//! or kill leaves the old file intact.

use std::io::Write;

use camino::Utf8Path;

/// Writes `bytes` to `path` atomically.
pub fn write_atomic(path: &Utf8Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_str().is_empty() => d,
        _ => Utf8Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".tracereplay-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
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
}
