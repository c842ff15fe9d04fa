//! Every committed seed and every past finding under `fuzz/`, replayed through its target's
//! check on stable, and the structured target on generated traces.

use camino::Utf8PathBuf;

use super::*;

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
        "ingest_openclaw" => |b| ingest(Format::OpenclawScenario, b),
        "ingest_openai" => |b| ingest(Format::OpenaiMessages, b),
        "ingest_otlp" => |b| ingest(Format::OtlpJson, b),
        other => panic!("no fuzz target `{other}`"),
    }
}

fn fuzz_dir() -> Utf8PathBuf {
    Utf8PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// The targets, from `fuzz/fuzz_targets/`.
fn targets() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fuzz_dir().join("fuzz_targets"))
        .expect("fuzz/fuzz_targets exists")
        .map(|e| e.expect("listing fuzz targets").file_name())
        .filter_map(|n| n.to_str()?.strip_suffix(".rs").map(str::to_owned))
        .collect();
    names.sort();
    names
}

/// Replays every file under `fuzz/<dir>/<target>/`; returns how many were replayed.
fn replay(dir: &str) -> usize {
    let mut replayed = 0;
    for target in targets() {
        let check = check_of(&target);
        let Ok(entries) = std::fs::read_dir(fuzz_dir().join(dir).join(&target)) else {
            continue;
        };
        let mut files: Vec<_> = entries.map(|e| e.expect("listing").path()).collect();
        files.sort();
        for path in files {
            let bytes = std::fs::read(&path).expect("reading a fuzz input");
            let outcome = std::panic::catch_unwind(|| check(&bytes));
            assert!(outcome.is_ok(), "{target}: {} fails", path.display());
            replayed += 1;
        }
    }
    replayed
}

#[test]
fn every_target_has_a_check_and_seeds() {
    let targets = targets();
    assert_eq!(targets.len(), 11, "{targets:?}");
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
