//! Benchmarks of the `check` pipeline over a synthetic corpus of small sealed traces:
//! decompress, hash, parse, judge, and the whole `check` at 1 and 2 threads.
//!
//! Run with `cargo bench --bench pipeline`; CI only compiles it (`cargo test` builds benches
//! with `--all-targets` in `.ci/run`).

use camino::Utf8PathBuf;
use divan::Bencher;
use tracereplay::discover::discover;
use tracereplay::eval::{CheckOptions, check};
use tracereplay::trace::{
    Args, EventBody, Header, Json, Limits, PromptRef, RunStatus, TraceFile, TraceWriter,
    content_hash, parse_trace,
};

const TRACES: usize = 2_000;
const SCENARIOS: usize = 20;

fn main() {
    divan::main();
}

/// One deterministic trace of ~30 events (~15 KB decompressed).
fn trace_bytes(i: usize) -> Vec<u8> {
    let scenario = format!("bench.scenario.{}", i % SCENARIOS);
    let mut w = TraceWriter::new(Header::new(scenario, format!("case-{i}")));
    w.push(
        Some(1_764_417_600_000),
        EventBody::UserMessage {
            prompt: PromptRef {
                h: content_hash(format!("prompt {i}").as_bytes()).into(),
                len: Some(9),
            },
            id: Some("in1".into()),
        },
    );
    for c in 0..9 {
        let call_id = format!("c{c}");
        let args = serde_json::json!({"path": format!("docs/file-{i}-{c}.md"), "limit": c, "filters": {"kind": "markdown", "recursive": true}});
        w.push(
            None,
            EventBody::ToolCall {
                call_id: call_id.clone().into(),
                tool: if c % 3 == 2 { "write" } else { "read" }.into(),
                args: Args::Object(Json::from_value(&args)),
            },
        );
        let output = "lorem ipsum dolor sit amet ".repeat(40 + (i * 7 + c) % 20);
        w.push(
            None,
            EventBody::ToolResult {
                call_id: call_id.into(),
                ok: true,
                output: Some(Json::from_value(&output)),
                output_h: None,
                error: None,
            },
        );
        w.push(
            None,
            EventBody::Note {
                text: format!("step {c} of trace {i} done").into(),
            },
        );
    }
    w.push(
        None,
        EventBody::FinalAnswer {
            text: format!("Done: processed trace {i}").into(),
        },
    );
    w.push(
        None,
        EventBody::RunEnd {
            status: RunStatus::Completed,
            error: None,
        },
    );
    w.finish().bytes
}

struct Corpus {
    _dir: tempfile::TempDir,
    root: Utf8PathBuf,
    decompressed: Vec<Vec<u8>>,
}

fn corpus() -> &'static Corpus {
    static CORPUS: std::sync::OnceLock<Corpus> = std::sync::OnceLock::new();
    CORPUS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let root = Utf8PathBuf::from_path_buf(dir.path().to_owned()).unwrap();
        for s in 0..SCENARIOS {
            let id = format!("bench.scenario.{s}");
            let body = serde_json::json!({"id": id, "title": "bench", "risk": "High", "oracles": [
                {"type": "tool-called", "tool": "read"}, {"type": "tool-not-called", "tool": "shell"},
                {"type": "max-tool-calls", "limit": 20}, {"type": "final-answer-contains", "value": "done"},
                {"type": "approval-not-required"}, {"type": "no-unsafe-tool"}]});
            std::fs::write(root.join(format!("{id}.scenario.json")), body.to_string()).unwrap();
        }
        let mut decompressed = Vec::new();
        for i in 0..TRACES {
            let bytes = trace_bytes(i);
            std::fs::write(root.join(format!("t{i:05}.trace.ndjson.zst")), zstd::bulk::compress(&bytes, 9).unwrap()).unwrap();
            decompressed.push(bytes);
        }
        Corpus { _dir: dir, root, decompressed }
    })
}

#[divan::bench]
fn read_and_decompress(b: Bencher) {
    let c = corpus();
    let files: Vec<Utf8PathBuf> = (0..TRACES)
        .map(|i| c.root.join(format!("t{i:05}.trace.ndjson.zst")))
        .collect();
    b.bench(|| {
        files
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

#[divan::bench]
fn verify_and_parse(b: Bencher) {
    let c = corpus();
    b.bench(|| {
        c.decompressed
            .iter()
            .map(|t| {
                let file = TraceFile::from_bytes("t.trace.ndjson.zst", t.clone(), true);
                let seal = file.verify_seal(true).unwrap();
                parse_trace(&file, &seal, Limits::default())
                    .unwrap()
                    .trace
                    .events
                    .len()
            })
            .sum::<usize>()
    });
}

#[divan::bench(args = [1, 2])]
fn full_check(b: Bencher, threads: usize) {
    let c = corpus();
    let found = discover(std::slice::from_ref(&c.root), &[]).unwrap();
    let opts = CheckOptions {
        threads: Some(threads),
        ..CheckOptions::default()
    };
    b.bench(|| {
        let report = check(&found, std::slice::from_ref(&c.root), &opts).unwrap();
        assert_eq!(report.summary.passed, TRACES);
        report.summary.traces
    });
}
