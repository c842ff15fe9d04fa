use camino::Utf8Path;

use super::*;
use crate::fsutil::directory_of;

#[test]
fn one_sync_pays_only_for_many_files_and_little_else_unwritten() {
    let per = ALLOWANCE_PER_FILE;
    assert!(!pays(MIN_FILES - 1, 0, 0), "too few files");
    assert!(pays(MIN_FILES, 0, 0));
    // Up to what this process wrote plus the allowance per file, and not a byte more.
    let ours = 100 << 20;
    let most = ours + MIN_FILES as u64 * per;
    assert!(pays(MIN_FILES, most, ours));
    assert!(!pays(MIN_FILES, most + 1, ours));
    assert!(pays(20_000, ours + 20_000 * per, ours));
    assert!(!pays(20_000, u64::MAX, ours));
    assert!(
        pays(usize::MAX, u64::MAX, u64::MAX),
        "saturates, never overflows"
    );
}

#[test]
fn only_kernels_from_5_8_have_syncfs_report_errors() {
    for yes in [
        "5.8.0",
        "5.8",
        "5.15.0-91-generic",
        "6.1.0-13-amd64\n",
        "10.0.1",
        "6.6.87.2-microsoft-standard-WSL2",
    ] {
        assert!(reports_errors(yes), "{yes}");
    }
    for no in [
        "5.7.19",
        "4.19.0-26-amd64",
        "3.10.0-1160.el7.x86_64",
        "5",
        "",
        "linux",
        "5.x",
    ] {
        assert!(!reports_errors(no), "{no}");
    }
}

#[test]
fn unwritten_is_dirty_plus_writeback_from_meminfo() {
    let meminfo = "MemTotal:       16384000 kB\nDirty:              140 kB\nWriteback:            24 kB\nWritebackTmp:          0 kB\n";
    assert_eq!(unwritten_of(meminfo), Some(164 * 1024));
    assert_eq!(unwritten_of("Dirty: 140 kB\n"), None, "Writeback missing");
    assert_eq!(unwritten_of("Dirty: lots kB\nWriteback: 0 kB\n"), None);
}

#[test]
fn a_write_goes_into_the_directory_it_is_keyed_by() {
    assert_eq!(directory_of(Utf8Path::new("a/b/c.json")), "a/b");
    assert_eq!(directory_of(Utf8Path::new("c.json")), ".");
    assert_eq!(directory_of(Utf8Path::new("/c.json")), "/");
}

/// Files written through `fsutil` into directories on a filesystem whose whole sync pays are
/// synced with one `syncfs`; a path written otherwise, and everything when the sync would not
/// pay, is left to be synced on its own.
#[cfg(target_os = "linux")]
#[test]
fn a_large_batch_written_here_is_synced_with_one_syncfs() {
    use camino::Utf8PathBuf;
    // Under the build's directory, not /tmp, which may be a tmpfs.
    let base = Utf8Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
    std::fs::create_dir_all(&base).unwrap();
    let dir = tempfile::tempdir_in(&base).unwrap();
    let root = Utf8PathBuf::from_path_buf(dir.path().to_owned()).unwrap();
    let files: Vec<Utf8PathBuf> = (0..MIN_FILES + 6)
        .map(|i| root.join(format!("d{}/f{i}.json", i % 3)))
        .collect();
    for f in &files {
        super::super::write_streaming_creating_dirs(f, false, &mut |w| w.write_all(b"{}")).unwrap();
    }
    let elsewhere = root.join("not-through-fsutil.json");
    std::fs::write(&elsewhere, b"{}").unwrap();
    let mut batch: Vec<&Utf8Path> = files.iter().map(Utf8PathBuf::as_path).collect();
    batch.push(&elsewhere);

    // Too much else unwritten: every path is left to its own sync, none synced whole.
    let before = whole_syncs();
    let rest = sync_filesystems_with(batch.clone(), || Some(u64::MAX)).unwrap();
    assert_eq!(rest.len(), batch.len());
    assert_eq!(whole_syncs(), before);
    // Nothing known of what is unwritten: the same.
    let rest = sync_filesystems_with(batch.clone(), || None).unwrap();
    assert_eq!(rest.len(), batch.len());

    let rest = sync_filesystems_with(batch.clone(), || Some(0)).unwrap();
    if is_known(&std::fs::File::open(&root).unwrap()) {
        assert_eq!(
            rest,
            [elsewhere.as_path()],
            "only the file written otherwise"
        );
        assert_eq!(whole_syncs(), before + 1, "one filesystem, one syncfs");
    } else {
        eprintln!("note: `{base}` is not on ext4, XFS or btrfs: each file is synced alone");
        assert_eq!(rest.len(), batch.len());
        assert_eq!(whole_syncs(), before);
    }
}
