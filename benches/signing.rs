//! `check --require-signed` beside the same check without it: 4,000 traces of the small
//! corpus's shape over 200 scenarios, each signed, no cache, at 1 and 2 threads. Checking a
//! signature reads nothing more (the stored bytes are read once) and costs a BLAKE2b pass over
//! them and two Ed25519 verifications. `sign` is measured too: signing the whole suite.
//!
//! `cargo bench --bench signing`; `TRACEREPLAY_BENCH_TRACES` sets the number of traces (default
//! 4,000). CI only compiles it (clippy `--all-targets`).

mod corpus;

use std::sync::Arc;

use camino::Utf8PathBuf;
use divan::Bencher;
use tracereplay_core::discover::discover;
use tracereplay_core::eval::{CheckOptions, Counting, Execution, FailOn, check};
use tracereplay_core::sign::keys::{SigningKey, TrustedKeys, generate};

fn main() {
    divan::main();
}

struct Suite {
    _dir: tempfile::TempDir,
    traces: Utf8PathBuf,
    key: SigningKey,
    trusted: TrustedKeys,
}

fn sign_all(key: &SigningKey, files: &[Utf8PathBuf]) {
    use rayon::prelude::*;
    files.par_iter().for_each(|path| {
        let stored = std::fs::read(path).unwrap();
        let dir = path.parent().unwrap();
        let limits = tracereplay::trace::Limits::default();
        tracereplay_core::sign::sign_trace(key, dir, (path, &stored), limits, false).unwrap();
    });
}

fn suite() -> &'static Suite {
    static SUITE: std::sync::OnceLock<Suite> = std::sync::OnceLock::new();
    SUITE.get_or_init(|| {
        let traces: usize = std::env::var("TRACEREPLAY_BENCH_TRACES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(4_000);
        let spec = corpus::Spec {
            traces,
            scenarios: 200,
            ..corpus::SMALL
        };
        let dir = tempfile::tempdir().unwrap();
        let root = Utf8PathBuf::from_path_buf(dir.path().to_owned()).unwrap();
        let traces = root.join("traces");
        corpus::write(traces.as_std_path(), &spec).unwrap();
        let new = generate().unwrap();
        let key = SigningKey::from_text(&new.secret, "bench").unwrap();
        let mut trusted = TrustedKeys::default();
        trusted.push(key.trusted());
        let found = discover(std::slice::from_ref(&traces), &[]).unwrap();
        sign_all(&key, &found.trace_files);
        Suite {
            _dir: dir,
            traces,
            key,
            trusted,
        }
    })
}

fn options(threads: usize, signed: Option<&TrustedKeys>) -> CheckOptions {
    CheckOptions {
        counting: Counting {
            fail_on: FailOn::None,
            ..Counting::default()
        },
        execution: Execution {
            threads: Some(threads),
            ..Execution::default()
        },
        signatures: signed.map(|k| Arc::new(k.clone()) as _),
        ..CheckOptions::default()
    }
}

#[divan::bench(args = [("unsigned", 1), ("require-signed", 1), ("unsigned", 2), ("require-signed", 2)])]
fn check_suite(b: Bencher, (mode, threads): (&str, usize)) {
    let s = suite();
    let found = discover(std::slice::from_ref(&s.traces), &[]).unwrap();
    let opts = options(threads, (mode == "require-signed").then_some(&s.trusted));
    b.bench(|| {
        let report = check(&found, std::slice::from_ref(&s.traces), &opts).unwrap();
        assert_eq!(report.summary.errors, 0, "every trace is signed");
        report.summary.traces
    });
}

#[divan::bench(sample_count = 3)]
fn sign_suite(b: Bencher) {
    let s = suite();
    let found = discover(std::slice::from_ref(&s.traces), &[]).unwrap();
    b.bench(|| sign_all(&s.key, &found.trace_files));
}
