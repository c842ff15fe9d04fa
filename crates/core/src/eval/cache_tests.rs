//! Tests of the result cache: the MAC over pieces, the keys, saving, loading and damage.

use super::*;
use crate::eval::cache_file::MAX_FILE;
use crate::report::{ResultRow, RowVerdict, Source};

fn row(path: &str) -> RowBytes {
    let r: ResultRow = serde_json::from_value(serde_json::json!({
        "scenario": "s", "case": "c", "path": path, "scenario_file": null,
        "content_hash": null, "risk": null, "verdict": "pass", "source": "trace",
        "sealed": true, "known_gap": false, "blocking": false, "oracles": [],
        "baseline": null, "drift": [], "warnings": []
    }))
    .unwrap();
    assert_eq!((r.verdict, r.source), (RowVerdict::Pass, Source::Trace));
    rows::encode(&r).into()
}

/// Gathering the pieces changes the speed, not the hash: pieces of every size, from a frame
/// to more than a batch, give BLAKE3 of their concatenation.
#[test]
fn entries_hash_as_one_buffer() {
    let bytes: Vec<u8> = (0..300_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    let key = CacheKey::from_material(b"test");
    let whole = {
        let mut h = blake3::Hasher::new_keyed(&key.0);
        h.update(&3u64.to_le_bytes()).update(b"ctx").update(&bytes);
        h.finalize()
    };
    for sizes in [
        &[36, 650][..],
        &[1],
        &[1023, 1025],
        &[70_000, 5],
        &[200_000],
    ] {
        let mut hasher = EntryHasher::new(&key, "ctx");
        let (mut at, mut i) = (0, 0);
        while at < bytes.len() {
            let end = (at + sizes[i % sizes.len()]).min(bytes.len());
            hasher.update(&bytes[at..end]);
            (at, i) = (end, i + 1);
        }
        assert_eq!(hasher.finalize(), whole, "pieces of {sizes:?}");
    }
}

/// The content key covers the bytes and the path, and cannot be shifted from one to the
/// other.
#[test]
fn content_keys_tell_bytes_from_path() {
    let key = |path: &str, bytes: &[u8]| content_key(Utf8Path::new(path), bytes);
    assert_eq!(key("a/b", b"xy"), key("a/b", b"xy"));
    assert_ne!(key("a/b", b"xy"), key("a/c", b"xy"));
    assert_ne!(key("a/b", b"xy"), key("a/b", b"xz"));
    assert_ne!(key("ya/b", b"x"), key("a/b", b"xy"));
}

/// Read whole (in memory) and streamed (rows read back from the file), the same cache.
#[test]
fn a_saved_cache_loads_and_a_damaged_one_is_ignored() {
    for whole in [crate::eval::ROW_MEMORY as u64, 0] {
        saved_and_damaged(whole);
    }
}

#[test]
fn a_cache_with_a_large_baseline_record_loads_whole_and_streamed() {
    // The record of 100,000 approved baselines, about 10 MB in the header line.
    let record: String = (0..100_000)
        .map(|i| format!("{:032x} {:032x} baselines/s/case-{i}.baseline.json\n", i, i))
        .collect();
    for whole in [crate::eval::ROW_MEMORY as u64, 0] {
        let key = CacheKey::from_material(b"test");
        let dir = tempfile::tempdir().unwrap();
        let dir = Utf8Path::from_path(dir.path()).unwrap();
        let load = || {
            let file = CacheFile::read_with(dir, whole, &key);
            ResultCache::from_file(dir, file, "ctx", record.clone(), key.clone())
        };
        let keys = Keys {
            stat: Some([1; 16]),
            content: [3; 16],
        };
        let a = row("a");
        load()
            .save(|| [(keys, [7; 16], &a)].into_iter(), 0, &|_| false)
            .unwrap();
        let loaded = load();
        assert!(loaded.take_by_stat(&[1; 16]).is_some(), "whole: {whole}");
        assert_eq!(loaded.file.context(), format!("ctx\n{record}"));
    }
}

fn saved_and_damaged(whole: u64) {
    let key = CacheKey::from_material(b"test");
    let load = |dir: &Utf8Path, context: &str| {
        let file = CacheFile::read_with(dir, whole, &key);
        ResultCache::from_file(dir, file, context, String::new(), key.clone())
    };
    let dir = tempfile::tempdir().unwrap();
    let dir = Utf8Path::from_path(dir.path()).unwrap();
    let cache = load(dir, "ctx");
    let (a, b) = (row("a"), row("b"));
    let ka = Keys {
        stat: Some([1; 16]),
        content: [3; 16],
    };
    let kb = Keys {
        stat: None,
        content: [4; 16],
    };
    cache
        .save(
            || [(ka, [7; 16], &a), (kb, [8; 16], &b)].into_iter(),
            0,
            &|_| false,
        )
        .unwrap();

    let loaded = load(dir, "ctx");
    let bytes = |hit: Option<Taken>| hit.map(|t| (t.row.load().to_vec(), t.keys, t.depends));
    assert_eq!(
        bytes(loaded.take_by_stat(&[1; 16])),
        Some((a.load().to_vec(), ka, [7; 16]))
    );
    assert_eq!(
        bytes(loaded.take_by_content(&[3; 16])),
        None,
        "an entry is taken once"
    );
    assert_eq!(
        bytes(loaded.take_by_content(&[4; 16])),
        Some((b.load().to_vec(), kb, [8; 16]))
    );
    assert_eq!(
        bytes(loaded.take_by_stat(&[0; 16])),
        None,
        "no stat key, no stat lookup"
    );
    loaded.put_back(&ka);
    assert_eq!(
        bytes(loaded.take_by_content(&[3; 16])),
        Some((a.load().to_vec(), ka, [7; 16]))
    );
    assert_eq!(load(dir, "other").file.slots.len(), 0);
    // Under another key the file does not authenticate.
    let other = CacheKey::from_material(b"another");
    assert_eq!(CacheFile::read_with(dir, whole, &other).slots.len(), 0);

    let file = dir.join(file_name(VERSION));
    let good = std::fs::read(&file).unwrap();
    let mut flipped = good.clone();
    *flipped.last_mut().unwrap() ^= 1;
    for damaged in [&good[..good.len() - 3], &flipped[..], b"garbage\n"] {
        std::fs::write(&file, damaged).unwrap();
        assert_eq!(load(dir, "ctx").file.slots.len(), 0);
    }
    // A huge file is not even read (sparse here: no disk used).
    std::fs::write(&file, &good).unwrap();
    assert_eq!(load(dir, "ctx").file.slots.len(), 2);
    let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
    f.set_len(MAX_FILE + 1).unwrap();
    assert_eq!(load(dir, "ctx").file.slots.len(), 0);
}

/// The keys take a path as it is shown: a leading `./` and the working directory do not make
/// a second key for the same trace, and the reports show it the same way.
#[test]
fn keys_take_the_path_as_shown() {
    let cwd = std::env::current_dir().unwrap();
    let cwd = cwd.to_str().unwrap();
    let kp = |p: &str| super::super::trace_keys::key_path(Utf8Path::new(p)).to_owned();
    assert_eq!(kp("./a/b.trace"), "a/b.trace");
    assert_eq!(kp(".//./a/b.trace"), "a/b.trace");
    assert_eq!(kp("a/b.trace"), "a/b.trace");
    assert_eq!(kp(&format!("{cwd}/a/b.trace")), "a/b.trace");
    assert_eq!(kp("/elsewhere/a.trace"), "/elsewhere/a.trace");
    assert_eq!(kp("../up/a.trace"), "../up/a.trace");
    assert_eq!(kp(&format!("{cwd}//a/b.trace")), "a/b.trace");
    // The keys and the reports name a path alike: one helper strips both.
    for p in [
        "./a/b.trace",
        ".//./a/b.trace",
        &format!("{cwd}/a/b.trace"),
        "../up/a",
    ] {
        assert_eq!(crate::paths::display_path(Utf8Path::new(p)), kp(p), "{p}");
    }
    let key = |p: &str| content_key(Utf8Path::new(p), b"xy");
    assert_eq!(key("./s/a.trace"), key("s/a.trace"));
    assert_eq!(key(&format!("{cwd}/s/a.trace")), key("s/a.trace"));
    assert_ne!(key("s/a.trace"), key("t/a.trace"));
}

/// Which cached rows a run over `searched` would have found: those shown under one of its
/// paths (not a sibling that shares a prefix, not a path outside the working directory for
/// `.`); a remote path holds them all.
#[test]
fn a_row_is_held_by_the_paths_that_would_find_it() {
    let holds = |roots: &[&str], path: &str| {
        let roots: Vec<String> = (roots.iter())
            .map(|r| crate::paths::display_path(Utf8Path::new(r)))
            .collect();
        super::super::trace_keys::searched_holds(&roots, &row(path))
    };
    let cwd = std::env::current_dir().unwrap();
    let abs = format!("{}/s1", cwd.to_str().unwrap());
    for root in [".", "./", "s1", "s1/", "./s1", abs.as_str(), "/"] {
        assert!(holds(&[root], "s1/a.trace.ndjson.zst"), "{root}");
    }
    for root in ["s2", "s", "s1/a", "../s1"] {
        assert!(!holds(&[root], "s1/a.trace.ndjson.zst"), "{root}");
    }
    assert!(!holds(&["."], "../up/a.trace.ndjson.zst"));
    assert!(!holds(&["."], "/elsewhere/a.trace.ndjson.zst"));
    assert!(holds(&["s2", "s1"], "s1/deep/a.trace.ndjson.zst"));
    assert!(holds(&["./s1/a.trace.ndjson.zst"], "s1/a.trace.ndjson.zst"));
    assert!(!holds(&["s1/a.trace.ndjson"], "s1/a.trace.ndjson.zst"));
    assert!(holds(&["s3://bucket/x"], "s1/a.trace.ndjson.zst"));
}

/// Saving keeps exactly the untaken entries `keep` names, with their dependency keys, beside the
/// run's own rows; taken entries are replaced by what the run gives.
#[test]
fn a_save_keeps_the_untaken_entries_it_is_told_to() {
    let key = CacheKey::from_material(b"test");
    let dir = tempfile::tempdir().unwrap();
    let dir = Utf8Path::from_path(dir.path()).unwrap();
    let load = || {
        let file = CacheFile::read_with(dir, crate::eval::ROW_MEMORY as u64, &key);
        ResultCache::from_file(dir, file, "ctx", String::new(), key.clone())
    };
    let keys = |n: u8| Keys {
        stat: Some([n; 16]),
        content: [n + 100; 16],
    };
    let (a, b, c) = (row("s1/a"), row("s2/b"), row("s3/c"));
    let rows = [(keys(1), [11; 16], &a), (keys(2), [12; 16], &b)];
    load().save(|| rows.into_iter(), 0, &|_| false).unwrap();
    // A run takes `a` and judges `c`; of the rest, it keeps what lies outside `s2`.
    let cache = load();
    let taken = cache.take_by_stat(&[1; 16]).unwrap();
    let own = [(taken.keys, taken.depends, &a), (keys(3), [13; 16], &c)];
    let outside_s2 = |r: &RowBytes| !super::super::trace_keys::searched_holds(&["s2".into()], r);
    cache.save(|| own.into_iter(), 1, &outside_s2).unwrap();
    let loaded = load();
    assert_eq!(
        loaded.file.slots.len(),
        2,
        "`b` lay inside the searched path"
    );
    assert_eq!(loaded.take_by_stat(&[1; 16]).unwrap().depends, [11; 16]);
    assert_eq!(loaded.take_by_stat(&[3; 16]).unwrap().depends, [13; 16]);
    // Kept when outside the searched paths.
    let cache = load();
    cache.save(std::iter::empty, 0, &|_| true).unwrap();
    assert_eq!(load().file.slots.len(), 2);
}

/// A cache file too large to read whole keeps its rows' heads in memory as far as the budget
/// holds them, so a recalled row's scenario, baseline and sort key are read without reading
/// the file; the rest of each row is read back from it.
#[test]
fn a_streamed_cache_keeps_the_heads_its_budget_holds() {
    use std::borrow::Cow;
    let key = CacheKey::from_material(b"test");
    let dir = tempfile::tempdir().unwrap();
    let dir = Utf8Path::from_path(dir.path()).unwrap();
    let rows = [row("a"), row("bb"), row("ccc")];
    let keys = |i: u8| Keys {
        stat: Some([i + 1; 16]),
        content: [i + 10; 16],
    };
    let cache = CacheFile::read_with(dir, 0, &key);
    (ResultCache::from_file(dir, cache, "ctx", String::new(), key.clone()))
        .save(
            || (0..3).map(|i| (keys(i), [7; 16], &rows[usize::from(i)])),
            0,
            &|_| false,
        )
        .unwrap();
    let len = std::fs::metadata(dir.join(file_name(VERSION)))
        .unwrap()
        .len();
    let head_len = |r: &RowBytes| rows::head_len(&r.load()).unwrap();
    let first = head_len(&rows[0]) as u64;
    assert!(
        first < rows[0].load().len() as u64,
        "a head is a strict prefix"
    );
    // Whole: the buffer is shared. Streamed with room for every head, for the first only, for
    // none.
    for (budget, in_memory) in [
        (len, [true; 3]),
        (len - 1, [true; 3]),
        (first, [true, false, false]),
        (0, [false; 3]),
    ] {
        let loaded = {
            let file = CacheFile::read_with(dir, budget, &key);
            ResultCache::from_file(dir, file, "ctx", String::new(), key.clone())
        };
        for i in 0..3u8 {
            let taken = loaded.take_by_stat(&[i + 1; 16]).unwrap();
            let (head, whole) = (taken.row.head(), taken.row.load());
            let want = &rows[usize::from(i)];
            assert_eq!(*whole, *want.load(), "budget {budget}, row {i}");
            assert!(whole.starts_with(&head), "budget {budget}, row {i}");
            let held = matches!(head, Cow::Borrowed(_));
            assert_eq!(held, in_memory[usize::from(i)], "budget {budget}, row {i}");
            if held && budget < len {
                assert_eq!(head.len(), head_len(want), "only the head is held");
            }
            assert_eq!(
                rows::decode_head(&head).unwrap(),
                rows::decode_head(&whole).unwrap()
            );
        }
    }
}
