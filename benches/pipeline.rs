//! Benchmarks of the `check` pipeline over the seeded corpus of `benches/corpus.rs` (the small
//! corpus's trace shape: ~30 events, ~20 KB): read + decompress, hash, parse, judge (harness
//! oracles; `tool-sequence`), and the whole `check` in-process at 1 and 2 threads, cold and with
//! the result cache filled.
//!
//! `cargo bench --bench pipeline`; `TRACEREPLAY_BENCH_TRACES` sets the corpus size (default
//! 2,000). CI only compiles it (clippy `--all-targets`).

mod corpus;

use camino::Utf8PathBuf;
use divan::Bencher;
use tracereplay::trace::{Limits, TraceFile, content_hash, parse_trace};
use tracereplay_core::discover::discover;
use tracereplay_core::eval::{CheckOptions, Execution, check};
use tracereplay_core::oracle::{Facts, judge, judge_oracle};
use tracereplay_core::scenario::load_file;

fn main() {
    divan::main();
}

struct Corpus {
    _dir: tempfile::TempDir,
    root: Utf8PathBuf,
    files: Vec<Utf8PathBuf>,
    decompressed: Vec<Vec<u8>>,
}

fn corpus() -> &'static Corpus {
    static CORPUS: std::sync::OnceLock<Corpus> = std::sync::OnceLock::new();
    CORPUS.get_or_init(|| {
        let traces = std::env::var("TRACEREPLAY_BENCH_TRACES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2_000);
        let spec = corpus::Spec {
            traces,
            scenarios: 20,
            ..corpus::SMALL
        };
        let dir = tempfile::tempdir().unwrap();
        let root = Utf8PathBuf::from_path_buf(dir.path().to_owned()).unwrap();
        corpus::write(root.as_std_path(), &spec).unwrap();
        let files = discover(std::slice::from_ref(&root), &[])
            .unwrap()
            .trace_files;
        let decompressed = files
            .iter()
            .map(|f| TraceFile::open(f, Limits::default()).unwrap().bytes)
            .collect();
        Corpus {
            _dir: dir,
            root,
            files,
            decompressed,
        }
    })
}

#[divan::bench]
fn read_and_decompress(b: Bencher) {
    let c = corpus();
    b.bench(|| {
        c.files
            .iter()
            .map(|f| TraceFile::open(f, Limits::default()).unwrap().bytes.len())
            .sum::<usize>()
    });
}

#[divan::bench]
fn hash(b: Bencher) {
    let c = corpus();
    b.bench(|| {
        c.decompressed
            .iter()
            .map(|t| content_hash(t).len())
            .sum::<usize>()
    });
}

fn files_in_memory(c: &Corpus) -> Vec<TraceFile> {
    c.decompressed
        .iter()
        .map(|t| TraceFile::from_bytes("t.trace.ndjson.zst", t.clone(), true))
        .collect()
}

#[divan::bench]
fn verify_and_parse(b: Bencher) {
    let c = corpus();
    b.with_inputs(|| files_in_memory(c)).bench_refs(|files| {
        files
            .iter()
            .map(|file| {
                let seal = file.verify_seal(true).unwrap();
                parse_trace(file, &seal, Limits::default())
                    .unwrap()
                    .trace
                    .events
                    .len()
            })
            .sum::<usize>()
    });
}

/// Parsing alone: the seals are verified while the inputs are prepared, outside the timing.
#[divan::bench]
fn parse(b: Bencher) {
    let c = corpus();
    let sealed = || {
        (files_in_memory(c).into_iter())
            .map(|file| {
                let seal = file.verify_seal(true).unwrap();
                (file, seal)
            })
            .collect::<Vec<_>>()
    };
    b.with_inputs(sealed).bench_refs(|files| {
        files
            .iter()
            .map(|(file, seal)| {
                (parse_trace(file, seal, Limits::default()).unwrap())
                    .trace
                    .events
                    .len()
            })
            .sum::<usize>()
    });
}

/// Judging parsed traces: every oracle of the corpus scenario, only `tool-sequence`, or the same
/// `tool-sequence` with `"threshold": 0.5` (what a threshold costs on top of the oracle).
#[divan::bench(args = ["all-oracles", "tool-sequence", "tool-sequence-threshold"])]
fn judge_parsed(b: Bencher, which: &str) {
    let c = corpus();
    let scenario = load_file(&c.root.join("corpus.s000/corpus.s000.scenario.json"))
        .unwrap()
        .remove(0)
        .unwrap();
    let files = files_in_memory(c);
    let parsed: Vec<_> = files
        .iter()
        .map(|f| {
            parse_trace(f, &f.verify_seal(true).unwrap(), Limits::default())
                .unwrap()
                .trace
        })
        .collect();
    let sequence = scenario
        .oracles
        .iter()
        .find(|o| o.type_name() == "tool-sequence")
        .unwrap()
        .clone();
    let mut params = sequence.params.clone();
    params.insert("threshold".into(), serde_json::json!(0.5));
    let thresholded = tracereplay_core::scenario::OracleSpec::new(sequence.index, params);
    b.bench(|| {
        parsed
            .iter()
            .map(|t| match which {
                "all-oracles" => judge(&scenario.oracles, t).len(),
                "tool-sequence" => judge_oracle(&sequence, &Facts::new(t)).evidence.len(),
                _ => judge_oracle(&thresholded, &Facts::new(t)).evidence.len(),
            })
            .sum::<usize>()
    });
}

#[divan::bench(args = [1, 2])]
fn full_check(b: Bencher, threads: usize) {
    let c = corpus();
    let found = discover(std::slice::from_ref(&c.root), &[]).unwrap();
    let opts = CheckOptions {
        execution: Execution {
            threads: Some(threads),
            ..Execution::default()
        },
        ..CheckOptions::default()
    };
    b.bench(|| {
        let report = check(&found, std::slice::from_ref(&c.root), &opts).unwrap();
        assert_eq!(report.summary.passed, c.files.len());
        report.summary.traces
    });
}

/// Benches checking the corpus again with `opts` (a first, untimed run fills the result cache
/// when there is one), then `after` on each report.
fn bench_recheck(
    b: Bencher,
    opts: CheckOptions,
    after: impl Fn(&tracereplay::report::Report) + Sync,
) {
    let c = corpus();
    let found = discover(std::slice::from_ref(&c.root), &[]).unwrap();
    let first = check(&found, std::slice::from_ref(&c.root), &opts).unwrap();
    b.bench(|| {
        let report = check(&found, std::slice::from_ref(&c.root), &opts).unwrap();
        assert_eq!(report.summary, first.summary);
        after(&report);
        report.summary.traces
    });
}

fn cache_dir(dir: &tempfile::TempDir) -> Utf8PathBuf {
    Utf8PathBuf::from_path_buf(dir.path().to_owned()).unwrap()
}

/// A re-check of the unchanged corpus with the result cache filled: rows are recalled by each
/// trace's stat fingerprint, never read, decompressed or parsed.
#[divan::bench(args = [1, 2])]
fn full_check_cached(b: Bencher, threads: usize) {
    let cache = tempfile::tempdir().unwrap();
    let opts = CheckOptions {
        execution: Execution {
            threads: Some(threads),
            cache_dir: Some(cache_dir(&cache)),
            ..Execution::default()
        },
        ..CheckOptions::default()
    };
    bench_recheck(b, opts, |_| {});
}

/// A check at 2 threads and its JSON report, with the rows held in memory or every row in the
/// temporary file (`--row-memory 0`); `-cached` with the result cache filled, read whole into
/// memory or streamed, its rows read back from disk.
#[divan::bench(args = ["memory", "disk", "memory-cached", "disk-cached"])]
fn check_and_render(b: Bencher, rows: &str) {
    let cache = tempfile::tempdir().unwrap();
    let opts = CheckOptions {
        execution: Execution {
            threads: Some(2),
            row_memory: rows.starts_with("disk").then_some(0),
            cache_dir: rows.ends_with("cached").then(|| cache_dir(&cache)),
            ..Execution::default()
        },
        ..CheckOptions::default()
    };
    bench_recheck(b, opts, |report| {
        tracereplay::report::json::render(report, &mut std::io::sink()).unwrap();
    });
}
