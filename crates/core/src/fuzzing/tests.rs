//! Every committed seed and every past finding under `fuzz/`, replayed through its target's
//! check on stable, and the structured target on generated traces.

use camino::Utf8PathBuf;

use super::*;

/// The fuzz targets whose checks are the servers' (`tracereplay-net`'s `fuzzing`, which replays
/// their seeds and findings in its own tests).
const NET_TARGETS: [&str; 2] = ["replay_requests", "recorded_answer"];

/// The check of each fuzz target, by the target's name (the `fuzz/fuzz_targets/*.rs` files).
pub(super) fn check_of(target: &str) -> fn(&[u8]) {
    match target {
        "trace_zst" => |b| trace(b, true),
        "trace_ndjson" => |b| trace(b, false),
        "trace_written" => written,
        "scenario" => scenario,
        "contract" => contract,
        "baseline" => baseline,
        "cache" => cache,
        "report" => report,
        "merge" => merge,
        "ingest_openclaw" => |b| ingest(InputFormat::OpenclawScenario, b),
        "ingest_openai" => |b| ingest(InputFormat::OpenaiMessages, b),
        "ingest_otlp" => |b| ingest(InputFormat::OtlpJson, b),
        "ingest_otel_spans" => |b| ingest(InputFormat::OtelSpans, b),
        other => panic!("no fuzz target `{other}`"),
    }
}

fn fuzz_dir() -> Utf8PathBuf {
    Utf8PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("fuzz")
}

/// The targets, from `fuzz/fuzz_targets/`.
fn targets() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fuzz_dir().join("fuzz_targets"))
        .expect("fuzz/fuzz_targets exists")
        .map(|e| e.expect("listing fuzz targets").file_name())
        .filter_map(|n| n.to_str()?.strip_suffix(".rs").map(str::to_owned))
        .collect();
    names.retain(|n| !NET_TARGETS.contains(&n.as_str()));
    names.sort();
    names
}

/// Replays every file under `fuzz/<dir>/<target>/`; returns how many were replayed.
fn replay(dir: &str) -> usize {
    (targets().iter())
        .map(|t| replay_inputs(fuzz_dir().as_std_path(), dir, t, check_of(t)))
        .sum()
}

#[test]
fn every_target_has_a_check_and_seeds() {
    let targets = targets();
    assert_eq!(targets.len() + NET_TARGETS.len(), 15, "{targets:?}");
    for t in &targets {
        check_of(t);
        let seeds = std::fs::read_dir(fuzz_dir().join("corpus").join(t))
            .map(|d| d.count())
            .unwrap_or(0);
        assert!(seeds > 0, "fuzz target `{t}` has no seed corpus");
    }
}

#[test]
fn seed_corpora_pass_their_checks() {
    assert!(replay("corpus") > 50);
}

#[test]
fn past_findings_stay_fixed() {
    // `fuzz/regressions/<target>/` holds each input a campaign found (minimised).
    replay("regressions");
}

#[test]
fn generated_traces_round_trip_and_survive_edits() {
    // Deterministic pseudo-random inputs for the structured target.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..300 {
        let len = (next() % 2048) as usize;
        let data: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        written(&data);
    }
}

#[test]
fn the_probe_scenarios_and_full_trace_load() {
    assert_eq!(probe_scenarios().len(), 2);
    let full = full_trace();
    trace(&full.bytes, false);
    for s in probe_scenarios() {
        judge_scenario(s);
    }
}

proptest::proptest! {
    #![proptest_config(super::runs::config(64))]

    #[test]
    fn written_traces_read_back_event_for_event(
        data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..8192)
    ) {
        let mut u = arbitrary::Unstructured::new(&data);
        if let Ok(generated) = written_trace(&mut u, true) {
            assert_round_trip(&generated);
        }
    }
}

#[test]
fn megabyte_values_of_every_unusual_piece_read_back() {
    use crate::trace::{Args, Json, Str, TraceWriter};
    let mut w = TraceWriter::new(Header::new("fuzz.big", "default"));
    let mut events = 0;
    // Each piece around a 1 MiB value, in turn in a string field, tool arguments and a result.
    for (i, piece) in super::generate::PIECES.iter().enumerate() {
        let big = format!("{piece}{}{piece}", "y".repeat(1 << 20));
        let body = match i % 3 {
            0 => EventBody::Note {
                text: Str::from(big),
            },
            1 => EventBody::ToolCall {
                call_id: Str::from(format!("c{i}")),
                tool: Str::from("t"),
                args: Args::Object(Json::from_value(&serde_json::json!({ "v": big }))),
            },
            _ => EventBody::ToolResult {
                call_id: Str::from(format!("c{i}")),
                ok: true,
                output: Some(Json::from_value(&serde_json::json!([big, 1]))),
                output_h: None,
                error: None,
            },
        };
        w.push(None, body);
        events += 1;
    }
    let generated = WrittenTrace {
        sealed: w.finish().unwrap(),
        events,
    };
    assert!(generated.sealed.bytes.len() > 24 << 20);
    assert_round_trip(&generated);
}
