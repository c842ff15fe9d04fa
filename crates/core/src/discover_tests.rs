//! Tests of discovery: the walk, symlinks, repeats, read-ahead and suite directories.

use super::*;

#[test]
fn walks_recursively_skips_hidden_and_survives_symlink_loops() {
    let tmp = tempfile::tempdir().unwrap();
    let root = Utf8PathBuf::from_path_buf(tmp.path().to_owned()).unwrap();
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    std::fs::create_dir_all(root.join(".hidden")).unwrap();
    std::fs::write(root.join("a/x.scenario.json"), "{}").unwrap();
    std::fs::write(root.join("a/b/x.trace.ndjson.zst"), "").unwrap();
    std::fs::write(root.join("a/b/y.trace.ndjson"), "").unwrap();
    std::fs::write(root.join("a/b/other.json"), "{}").unwrap();
    std::fs::write(root.join(".hidden/h.trace.ndjson"), "").unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&root, root.join("a/b/loop")).unwrap();
        std::os::unix::fs::symlink(
            root.join("a/b/y.trace.ndjson"),
            root.join("a/twin.trace.ndjson"),
        )
        .unwrap();
    }
    let found = discover(std::slice::from_ref(&root), &[]).unwrap();
    assert_eq!(found.scenario_files, vec![root.join("a/x.scenario.json")]);
    assert_eq!(
        found.trace_files,
        vec![
            root.join("a/b/x.trace.ndjson.zst"),
            root.join("a/b/y.trace.ndjson")
        ]
    );
    #[cfg(unix)]
    assert!(
        found.warnings.iter().any(|w| w.contains("loop")),
        "{:?}",
        found.warnings
    );
}

/// A file reached as a path given twice, or through a directory given as well, counts
/// once, under the name reached first. A second name that is not a symlink (a hard link) is
/// a file of its own, as it would be wherever inode numbers cannot be trusted.
#[cfg(unix)]
#[test]
fn one_file_counts_once_however_it_is_reached() {
    let tmp = tempfile::tempdir().unwrap();
    let root = Utf8PathBuf::from_path_buf(tmp.path().to_owned()).unwrap();
    std::fs::create_dir_all(root.join("d")).unwrap();
    std::fs::write(root.join("d/a.trace.ndjson"), "").unwrap();
    std::fs::write(root.join("d/c.trace.ndjson"), "").unwrap();
    std::fs::hard_link(root.join("d/a.trace.ndjson"), root.join("d/b.trace.ndjson")).unwrap();
    let explicit = root.join("d/c.trace.ndjson");
    let found = discover(&[explicit.clone(), root.join("d"), explicit], &[]).unwrap();
    assert_eq!(
        found.trace_files,
        ["c", "a", "b"].map(|n| root.join(format!("d/{n}.trace.ndjson")))
    );
}

/// Two different files that share a (device, inode) pair, as overlayfs can report, are both
/// found: the repeat is confirmed by path, never taken on the id alone.
#[cfg(unix)]
#[test]
fn a_reused_inode_number_never_hides_a_file() {
    let tmp = tempfile::tempdir().unwrap();
    let root = Utf8PathBuf::from_path_buf(tmp.path().to_owned()).unwrap();
    for n in ["x", "y"] {
        std::fs::create_dir_all(root.join(n)).unwrap();
        std::fs::write(root.join(format!("{n}/t.trace.ndjson")), "").unwrap();
    }
    let mut seen = HashMap::default();
    let (x, y) = (root.join("x/t.trace.ndjson"), root.join("y/t.trace.ndjson"));
    assert!(Walker::first_reach(&mut seen, (1, 7), &x));
    assert!(
        !Walker::first_reach(&mut seen, (1, 7), &x),
        "the same path again"
    );
    assert!(
        Walker::first_reach(&mut seen, (1, 7), &y),
        "another file, same id"
    );
    assert!(
        !Walker::first_reach(&mut seen, (1, 7), &y),
        "and that file again"
    );
    assert!(
        !Walker::first_reach(&mut seen, (1, 7), &x),
        "and the first again"
    );
    // Files, likewise.
    let mut walker = Walker::default();
    for p in [&x, &y, &y, &x] {
        walker.file(p.clone(), Some((1, 7)), false, false);
    }
    assert_eq!(walker.found.trace_files, vec![x, y]);
}

/// The parallel read-ahead lists each real, visible directory once, and the walk finds
/// exactly what it finds listing every directory itself.
#[test]
fn reading_ahead_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let root = Utf8PathBuf::from_path_buf(tmp.path().to_owned()).unwrap();
    for d in ["a/b/c", "a/d", ".hidden", "e"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    for f in [
        "a/b/c/1.trace.ndjson",
        "a/d/2.trace.ndjson",
        "e/x.scenario.json",
    ] {
        std::fs::write(root.join(f), "").unwrap();
    }
    std::fs::write(root.join(".hidden/3.trace.ndjson"), "").unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(root.join("a/d"), root.join("e/link")).unwrap();
        std::os::unix::fs::symlink(&root, root.join("a/b/loop")).unwrap();
    }
    let mut listed: Vec<Utf8PathBuf> = prefetch(&[&root]).into_keys().collect();
    listed.sort();
    let expected: Vec<Utf8PathBuf> = ["", "a", "a/b", "a/b/c", "a/d", "e"]
        .iter()
        .map(|d| {
            if d.is_empty() {
                root.clone()
            } else {
                root.join(d)
            }
        })
        .collect();
    assert_eq!(listed, expected);

    let ahead = discover(std::slice::from_ref(&root), &[]).unwrap();
    let mut walker = Walker::new(&[&root]);
    walker.root(&root, false).unwrap();
    let itself = walker.found;
    assert_eq!(ahead.trace_files, itself.trace_files);
    assert_eq!(ahead.scenario_files, itself.scenario_files);
    assert_eq!(ahead.warnings, itself.warnings);
    // `e/link` leads to `a/d`, searched already; `a/b/loop` back to the root.
    assert_eq!(ahead.trace_files.len(), 2);
    #[cfg(unix)]
    assert_eq!(ahead.warnings.len(), 2, "{:?}", ahead.warnings);
}

#[test]
fn suite_dirs_take_every_json_but_baselines_and_contracts() {
    let tmp = tempfile::tempdir().unwrap();
    let root = Utf8PathBuf::from_path_buf(tmp.path().to_owned()).unwrap();
    for f in ["a.json", "b.baseline.json", "c.contract.json", "d.txt"] {
        std::fs::write(root.join(f), "{}").unwrap();
    }
    let found = discover(&[], std::slice::from_ref(&root)).unwrap();
    assert_eq!(found.suite_files, vec![root.join("a.json")]);
}

#[test]
fn missing_paths_are_errors() {
    let err = discover(&["no/such/dir".into()], &[]).unwrap_err();
    assert_eq!(err.to_string(), "`no/such/dir` does not exist");
}
