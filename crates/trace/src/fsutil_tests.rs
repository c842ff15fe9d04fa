//! Tests of [`super`]: atomic writes, confinement, durability.
use super::*;

fn utf8(p: &std::path::Path) -> Utf8PathBuf {
    Utf8PathBuf::from_path_buf(p.to_owned()).unwrap()
}

#[test]
fn replaces_content_and_leaves_no_temporary_files() {
    let dir = tempfile::tempdir().unwrap();
    let p = utf8(&dir.path().join("f.json"));
    write_atomic(&p, b"one").unwrap();
    write_atomic(&p, b"two").unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), b"two");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn a_failure_before_the_rename_leaves_the_old_file_intact() {
    let dir = tempfile::tempdir().unwrap();
    let p = utf8(&dir.path().join("a.baseline.json"));
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

/// A written file has the mode a plain create gives (not the 0600 of a secure temporary
/// file): whatever the umask lets a plain `File::create` have.
#[cfg(unix)]
#[test]
fn written_files_get_the_mode_of_a_plain_create() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain");
    std::fs::File::create(&plain).unwrap();
    let p = utf8(&dir.path().join("f.json"));
    write_atomic(&p, b"x").unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(p.as_std_path()), mode(&plain));
    assert_ne!(
        mode(&plain),
        0o600,
        "the umask of a test run leaves others some access"
    );
}

#[test]
fn stale_temporary_files_are_removed_fresh_ones_and_others_kept() {
    assert!(is_temporary_name(".tracereplay-0123456789abcdef.tmp"));
    assert!(!is_temporary_name(".tracereplay-notes.tmp"));
    let dir = tempfile::tempdir().unwrap();
    let stale = dir.path().join(".tracereplay-0123456789abcdef.tmp");
    let other = dir.path().join(".tracereplay-mine.tmp");
    // Another process's write in progress, begun a minute ago: not a leftover.
    let in_progress = dir.path().join(".tracereplay-fedcba9876543210.tmp");
    for (p, age) in [(&stale, 3600), (&other, 3600), (&in_progress, 60)] {
        std::fs::write(p, b"left").unwrap();
        let old = SystemTime::now() - std::time::Duration::from_secs(age);
        std::fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    mark_run_start();
    write_atomic(&utf8(&dir.path().join("f.json")), b"x").unwrap();
    assert!(!stale.exists());
    assert!(other.exists());
    assert!(in_progress.exists());
}

/// A confined root, and outside it a directory holding `important` (`keep`) that the root's
/// `linked` points to: what no confined write, rename or removal may reach.
#[cfg(unix)]
struct Escape {
    root: tempfile::TempDir,
    outside: tempfile::TempDir,
    c: Confined,
}

#[cfg(unix)]
impl Escape {
    fn new() -> Escape {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let c = Confined::new(utf8(root.path()));
        std::os::unix::fs::symlink(outside.path(), root.path().join("linked")).unwrap();
        std::fs::write(outside.path().join("important"), b"keep").unwrap();
        Escape { root, outside, c }
    }

    /// `rel` under the root.
    fn at(&self, rel: &str) -> Utf8PathBuf {
        utf8(&self.root.path().join(rel))
    }

    /// `rel` under the root made a symlink to `important`.
    fn link_to_important(&self, rel: &str) -> Utf8PathBuf {
        let link = self.at(rel);
        std::os::unix::fs::symlink(self.outside.path().join("important"), &link).unwrap();
        link
    }

    /// Outside the root, nothing was written, renamed or removed.
    fn assert_untouched(&self) {
        assert_eq!(names_in(self.outside.path()), ["important"]);
        assert_eq!(
            std::fs::read(self.outside.path().join("important")).unwrap(),
            b"keep"
        );
    }
}

#[cfg(unix)]
#[test]
fn confined_writes_never_follow_a_symlink_out() {
    let e = Escape::new();
    let err = (e.c.write(&e.at("linked/x.baseline.json"), b"x", false)).unwrap_err();
    assert!(err.to_string().contains("is a symlink"), "{err}");
    e.assert_untouched();
    let link = e.link_to_important("f.json");
    assert!(e.c.write(&link, b"x", false).is_err());
    assert!(e.c.remove(&link).is_err());
    e.assert_untouched();
    let fine = e.at("a/b.json");
    e.c.write(&fine, b"ok", true).unwrap();
    assert_eq!(std::fs::read(&fine).unwrap(), b"ok");
    assert!((e.c.write(&utf8(e.outside.path()).join("y"), b"x", false)).is_err());
    e.assert_untouched();
}

#[cfg(unix)]
#[test]
fn reads_take_regular_files_within_their_limit_only() {
    let dir = tempfile::tempdir().unwrap();
    let f = utf8(&dir.path().join("f"));
    std::fs::write(&f, b"0123456789").unwrap();
    assert_eq!(read_regular(&f, 10, "file").unwrap(), b"0123456789");
    assert!(
        read_regular(&f, 9, "file")
            .unwrap_err()
            .to_string()
            .contains("limit of 9")
    );
    let fifo = utf8(&dir.path().join("fifo"));
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let err = read_regular(&fifo, 10, "allow file").unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");
    assert!(read_regular(Utf8Path::new("/dev/zero"), 10, "baseline").is_err());
}

#[test]
fn syncs_every_file_and_directory_and_reports_a_missing_one() {
    let dir = tempfile::tempdir().unwrap();
    let root = utf8(dir.path());
    let files: Vec<Utf8PathBuf> = (0..100)
        .map(|i| {
            let p = root.join(format!("d{}/f{i}", i % 7));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, b"x").unwrap();
            p
        })
        .collect();
    sync_written(&files, &root).unwrap();
    sync_directories_of(&files, &root).unwrap();
    let mut missing = files.clone();
    missing.push(root.join("d0/absent"));
    let e = sync_written(&missing, &root).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
}

/// Names in `dir`, sorted.
fn names_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn a_staged_file_appears_only_when_committed_and_goes_when_dropped() {
    let root = tempfile::tempdir().unwrap();
    let c = Confined::new(utf8(root.path()));
    let kept = utf8(&root.path().join("s/a.new"));
    std::fs::create_dir_all(root.path().join("s")).unwrap();
    std::fs::write(&kept, b"older").unwrap();
    let staged = c.stage(&kept, b"newer").unwrap();
    assert_eq!(staged.path(), kept);
    assert_eq!(staged.read().unwrap(), b"newer");
    // Beside its destination, under a temporary name, the old file untouched.
    let dir = root.path().join("s");
    let names = names_in(&dir);
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names.iter().any(|n| is_temporary_name(n)), "{names:?}");
    assert_eq!(std::fs::read(&kept).unwrap(), b"older");
    staged.commit().unwrap();
    assert_eq!(std::fs::read(&kept).unwrap(), b"newer");
    assert_eq!(names_in(&dir), ["a.new"]);
    let again = staged.commit().unwrap_err();
    assert!(again.to_string().contains("in place already"), "{again}");
    drop(staged);
    assert_eq!(
        std::fs::read(&kept).unwrap(),
        b"newer",
        "kept once committed"
    );

    let dropped = utf8(&root.path().join("t/u/b.new"));
    let staged = c.stage(&dropped, b"undecided").unwrap();
    assert_eq!(names_in(&root.path().join("t/u")).len(), 1);
    drop(staged);
    assert!(names_in(&root.path().join("t/u")).is_empty(), "removed");
}

#[cfg(unix)]
#[test]
fn staging_and_committing_never_follow_a_symlink_out() {
    let e = Escape::new();
    let err = (e.c.stage(&e.at("linked/x.new"), b"x")).unwrap_err();
    assert!(err.to_string().contains("is a symlink"), "{err}");
    e.assert_untouched();
    // A symlink put where the file goes after it was staged: the commit refuses it and the
    // staged file goes.
    let path = e.at("d/f.new");
    let staged = e.c.stage(&path, b"x").unwrap();
    e.link_to_important("d/f.new");
    let err = staged.commit().unwrap_err();
    assert!(err.to_string().contains("is a symlink"), "{err}");
    assert_eq!(names_in(&e.root.path().join("d")), ["f.new"]);
    e.assert_untouched();
}

#[cfg(unix)]
#[test]
fn confined_renames_never_go_through_a_symlink() {
    let e = Escape::new();
    let from = e.at("s/a.new");
    e.c.write(&from, b"pending", false).unwrap();
    // Within one directory: onto a symlink.
    let link = e.link_to_important("s/a");
    let err = e.c.rename(&from, &link).unwrap_err();
    assert!(err.to_string().contains("is a symlink"), "{err}");
    // Into another directory through a symlinked one.
    let err = e.c.rename(&from, &e.at("linked/a")).unwrap_err();
    assert!(err.to_string().contains("is a symlink"), "{err}");
    e.assert_untouched();
    // Onto the directory above, spelt within this one: refused.
    let err = e.c.rename(&from, &e.at("s/..")).unwrap_err();
    assert!(err.to_string().contains("names a directory"), "{err}");
    // Within one directory, onto nothing or a regular file: done.
    let to = e.at("s/b");
    e.c.rename(&from, &to).unwrap();
    assert_eq!(std::fs::read(&to).unwrap(), b"pending");
    let missing = e.c.rename(&from, &to).unwrap_err();
    assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
}
