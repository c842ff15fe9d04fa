use camino::{Utf8Path, Utf8PathBuf};

use super::*;
use crate::eval::{BaselinePolicy, Baselines, CacheKey, CheckOptions, FailOn};

/// A suite directory with a scenario and two trace files (discovery goes by their names).
fn suite_dir() -> (tempfile::TempDir, Utf8PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = Utf8PathBuf::from_path_buf(dir.path().to_owned()).unwrap();
    std::fs::create_dir_all(root.join("traces/s")).unwrap();
    std::fs::write(root.join("traces/s/s.scenario.json"), "{}").unwrap();
    for name in ["a", "b"] {
        let path = root.join(format!("traces/s/{name}.trace.ndjson.zst"));
        std::fs::write(path, name).unwrap();
    }
    (dir, root)
}

/// Waits until the files just written are older than [`SETTLE`] (a run is recorded only then).
fn settle() {
    std::thread::sleep(SETTLE + std::time::Duration::from_millis(100));
}

fn inputs(root: &Utf8Path, options: &CheckOptions) -> Inputs {
    Inputs::take(&Suite::open(&[root.join("traces")], &[]).unwrap(), options)
}

#[test]
fn a_record_is_given_back_only_to_its_invocation_and_inputs() {
    let (_dir, root) = suite_dir();
    let cache = root.join("cache");
    let key = CacheKey::from_material(b"test");
    let options = CheckOptions::default();
    let unsettled = inputs(&root, &options);
    let run = Invocation::with_key(&cache, b"check traces", &key);
    run.record(&unsettled, &[], 1, (b"", b"")).unwrap();
    assert!(
        run.recorded().is_none(),
        "files changed just now: not recorded"
    );
    settle();
    let taken = inputs(&root, &options);
    assert_eq!(taken.trace_stamps().len(), 2);
    run.record(&taken, &[], 1, (b"report\n", b"warning: w\n"))
        .unwrap();

    let back = run.recorded().expect("the record reads back");
    assert_eq!(
        (back.code, &back.stdout[..], &back.stderr[..]),
        (1, &b"report\n"[..], &b"warning: w\n"[..])
    );
    assert!(
        back.matches(&inputs(&root, &options)),
        "the same files, taken again"
    );

    // Another invocation, or another key, finds none.
    assert!(
        Invocation::with_key(&cache, b"check traces -q", &key)
            .recorded()
            .is_none()
    );
    let other_key = CacheKey::from_material(b"other");
    assert!(
        Invocation::with_key(&cache, b"check traces", &other_key)
            .recorded()
            .is_none()
    );

    // Other options, a trace rewritten (same size), a trace added or removed: other inputs.
    let strict = CheckOptions {
        counting: crate::eval::Counting {
            fail_on: FailOn::Critical,
            ..Default::default()
        },
        ..Default::default()
    };
    assert!(!back.matches(&inputs(&root, &strict)), "options");
    let a = root.join("traces/s/a.trace.ndjson.zst");
    std::fs::write(&a, "A").unwrap();
    let rewritten = inputs(&root, &options);
    assert!(!back.matches(&rewritten), "a trace rewritten at its size");
    // A trace's stamp is not part of the head: only the whole tells.
    let suite = Suite::open(&[root.join("traces")], &[]).unwrap();
    assert!(back.head_matches(&Inputs::head(&suite, &options)));
    let c = root.join("traces/s/c.trace.ndjson.zst");
    std::fs::write(&c, "c").unwrap();
    let added = inputs(&root, &options);
    assert!(
        !back.matches(&added) && !rewritten.digest.eq(&added.digest),
        "a trace added"
    );
    // Which traces there are is: the head tells.
    let suite = Suite::open(&[root.join("traces")], &[]).unwrap();
    assert!(
        !back.head_matches(&Inputs::head(&suite, &options)),
        "a trace added"
    );
    std::fs::remove_file(&c).unwrap();
    assert!(
        !back.matches(&inputs(&root, &options)),
        "a is still rewritten"
    );
    assert_eq!(
        inputs(&root, &options).digest,
        rewritten.digest,
        "c removed again"
    );
}

#[test]
fn the_baselines_directory_is_an_input_file_by_file() {
    let (_dir, root) = suite_dir();
    let store = root.join("baselines");
    std::fs::create_dir_all(store.join("s")).unwrap();
    std::fs::write(store.join("s/a.baseline.json"), "{}").unwrap();
    let options = CheckOptions {
        baselines: Baselines::Compared {
            policy: BaselinePolicy {
                store: crate::baseline::BaselineStore::new(store.clone()),
                mode: crate::diff::DriftMode::Default,
                tolerance: 0.2,
                refresh: false,
                alpha: 0.05,
            },
            write_pending: false,
        },
        ..Default::default()
    };
    let before = inputs(&root, &options);
    assert_eq!(
        before.digest,
        inputs(&root, &options).digest,
        "taken twice, the same"
    );
    assert_ne!(
        before.digest,
        inputs(&root, &CheckOptions::default()).digest
    );
    // A pending file beside it, or the approved one rewritten, changes the inputs.
    std::fs::write(store.join("s/a.baseline.json.new"), "{}").unwrap();
    let pending = inputs(&root, &options);
    assert_ne!(before.digest, pending.digest, "a pending file");
    std::fs::remove_file(store.join("s/a.baseline.json.new")).unwrap();
    std::fs::write(store.join("s/a.baseline.json"), "[]").unwrap();
    assert_ne!(pending.digest, inputs(&root, &options).digest, "rewritten");
}

#[test]
fn a_damaged_record_or_a_replaced_cache_file_is_not_used() {
    let (_dir, root) = suite_dir();
    let cache = root.join("cache");
    let key = CacheKey::from_material(b"test");
    settle();
    let taken = inputs(&root, &CheckOptions::default());
    let run = Invocation::with_key(&cache, b"check", &key);
    run.record(&taken, &[], 0, (b"ok\n", b"")).unwrap();
    let file = cache.join(FILE);
    let good = std::fs::read(&file).unwrap();
    for at in [
        0,
        MAGIC.len() + 3,
        MAGIC.len() + 64,
        good.len() - 40,
        good.len() - 1,
    ] {
        let mut bad = good.clone();
        bad[at] ^= 1;
        std::fs::write(&file, &bad).unwrap();
        assert!(run.recorded().is_none(), "a byte flipped at {at}");
    }
    for len in [0, 10, good.len() - 1] {
        std::fs::write(&file, &good[..len]).unwrap();
        assert!(run.recorded().is_none(), "cut to {len} bytes");
    }
    std::fs::write(&file, &good).unwrap();
    assert!(run.recorded().is_some());
    // The cache file appearing (or being replaced) makes it another invocation.
    assert!(run.cache_unchanged());
    std::fs::write(crate::eval::CacheFile::path_in(&cache), "x").unwrap();
    assert!(!run.cache_unchanged());
    assert!(
        Invocation::with_key(&cache, b"check", &key)
            .recorded()
            .is_none()
    );
}

#[test]
fn inputs_are_settled_only_when_nothing_changed_just_before() {
    let (_dir, root) = suite_dir();
    let options = CheckOptions::default();
    assert!(!inputs(&root, &options).settled(), "files written just now");
    settle();
    assert!(inputs(&root, &options).settled());
    std::fs::write(root.join("traces/s/a.trace.ndjson.zst"), "A").unwrap();
    assert!(!inputs(&root, &options).settled(), "a trace rewritten");
}
