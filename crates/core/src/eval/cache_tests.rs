//! Tests of the result cache: the MAC over pieces, the keys, saving, loading and damage.

use super::*;
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
        load().save(|| [(keys, &a)].into_iter(), 0, false).unwrap();
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
        .save(|| [(ka, &a), (kb, &b)].into_iter(), 0, false)
        .unwrap();

    let loaded = load(dir, "ctx");
    let bytes = |hit: Option<(RowBytes, Keys)>| hit.map(|(row, keys)| (row.load().to_vec(), keys));
    assert_eq!(
        bytes(loaded.take_by_stat(&[1; 16])),
        Some((a.load().to_vec(), ka))
    );
    assert_eq!(
        bytes(loaded.take_by_content(&[3; 16])),
        None,
        "an entry is taken once"
    );
    assert_eq!(
        bytes(loaded.take_by_content(&[4; 16])),
        Some((b.load().to_vec(), kb))
    );
    assert_eq!(
        bytes(loaded.take_by_stat(&[0; 16])),
        None,
        "no stat key, no stat lookup"
    );
    loaded.put_back(&ka);
    assert_eq!(
        bytes(loaded.take_by_content(&[3; 16])),
        Some((a.load().to_vec(), ka))
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
