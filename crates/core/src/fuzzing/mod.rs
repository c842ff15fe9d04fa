//! The checks behind the fuzz targets in `fuzz/`, one per reader of untrusted input, kept in the
//! library so that the same code runs under libFuzzer (`cargo +nightly fuzz run <target>`, with
//! the `fuzzing` feature) and on stable, where the unit tests replay every committed seed and
//! every past finding through it.
//!
//! Each check asserts more than "no panic" where the reader allows it: a trace that reads packs
//! to the same content hash and, written again, reads back to the same bytes; a scenario that
//! loads judges an empty and a full trace; a baseline finds no drift against itself and prints
//! to a fixed point; ingest output reads back and verifies. Not a stable API.

mod generate;
#[cfg(test)]
pub(crate) mod runs;

use camino::Utf8Path;

pub use generate::{WrittenTrace, written_trace};

use crate::baseline::{BaselineFile, Behaviour};
use crate::diff::{DriftMode, compare};
use crate::ingest::{IngestOptions, InputFormat};
use crate::oracle::{self, Facts};
use crate::report::Report;
use crate::scenario::Scenario;
use crate::trace::PromptHasher;
use crate::trace::{
    EventBody, Header, Limits, Packed, SealedTrace, Trace, TraceFile, TraceWriter, pack,
    parse_trace, parse_trace_with,
};

/// Replays every file under `fuzz/<dir>/<target>/` (`fuzz` the `fuzz/` directory; `dir`
/// `corpus` or `regressions`) through `check`, in name order, and returns how many were
/// replayed; panics naming the first input whose check fails. What the unit tests of each crate
/// with fuzz targets run on stable.
pub fn replay_inputs(fuzz: &std::path::Path, dir: &str, target: &str, check: fn(&[u8])) -> usize {
    let Ok(entries) = std::fs::read_dir(fuzz.join(dir).join(target)) else {
        return 0;
    };
    let mut files: Vec<_> = entries.map(|e| e.expect("listing").path()).collect();
    files.sort();
    for path in &files {
        let bytes = std::fs::read(path).expect("reading a fuzz input");
        let outcome = std::panic::catch_unwind(|| check(&bytes));
        assert!(outcome.is_ok(), "{target}: {} fails", path.display());
    }
    files.len()
}

/// The path every fuzzed input is read as.
const PATH: &str = "fuzz/input.trace.ndjson";

/// A directory that does not exist: a fuzzed scenario naming a contract can read no file.
const NO_ROOT: &str = "/nonexistent-tracereplay-fuzz-root";

/// The trace reader, on stored bytes (`compressed`: a `.zst`), with the default limits.
pub fn trace(stored: &[u8], compressed: bool) {
    let limits = Limits::default();
    let Ok(file) = TraceFile::from_stored(PATH, stored, compressed, limits) else {
        return;
    };
    let Ok(seal) = file.verify_seal(false) else {
        return;
    };
    let strict = parse_trace(&file, &seal, limits);
    // The developer opt-in only ever admits more.
    let opted_in = parse_trace_with(&file, &seal, limits, true);
    if strict.is_ok() {
        assert!(
            opted_in.is_ok(),
            "a trace read without the opt-in reads with it"
        );
    }
    let Ok(parsed) = strict else { return };
    judge_everything(&parsed.trace);

    // Packing keeps the content hash, and what it packs verifies and reads.
    match pack(&file, limits).expect("a trace that reads packs") {
        Packed::AlreadySealed { content_hash } => assert_eq!(content_hash, seal.content_hash),
        Packed::Sealed {
            bytes,
            content_hash,
        } => {
            assert_eq!(content_hash, seal.content_hash);
            let packed = TraceFile::from_bytes(PATH, bytes, false);
            let again = packed.verify_seal(true).expect("a packed trace verifies");
            assert_eq!(again.content_hash, seal.content_hash);
            parse_trace(&packed, &again, limits).expect("a packed trace reads");
        }
    }

    // Written again by the writer, it reads back to the same bytes, compressed or not.
    let first = rewrite(&parsed.trace);
    let second = read_and_rewrite(first.bytes.clone(), false);
    assert_eq!(
        String::from_utf8_lossy(&first.bytes),
        String::from_utf8_lossy(&second.bytes),
        "a trace written again reads back the same"
    );
    assert_eq!(first.content_hash, second.content_hash);
    let compressed = first.compress().expect("compressing in memory");
    assert_eq!(read_and_rewrite(compressed, true).bytes, first.bytes);
}

/// The structured trace target: a trace generated from `data` (see [`written_trace`]) reads
/// back to exactly the bytes written, compressed or not; then the rest of `data` edits those
/// bytes (flip, insert, delete) and the edited trace goes through [`trace`].
pub fn written(data: &[u8]) {
    let mut u = arbitrary::Unstructured::new(data);
    let Ok(generated) = written_trace(&mut u, false) else {
        return;
    };
    assert_round_trip(&generated);
    let mut bytes = generated.sealed.bytes;
    let mut compress = false;
    for _ in 0..8 {
        let (Ok(at), Ok(op), Ok(byte)) = (
            u.arbitrary::<u32>(),
            u.arbitrary::<u8>(),
            u.arbitrary::<u8>(),
        ) else {
            break;
        };
        let at = at as usize % (bytes.len() + 1);
        match op % 4 {
            0 if at < bytes.len() => bytes[at] ^= byte | 1,
            1 => bytes.insert(at, byte),
            2 if at < bytes.len() => {
                bytes.remove(at);
            }
            _ => compress = true,
        }
    }
    trace(&bytes, false);
    if compress {
        trace(
            &zstd::bulk::compress(&bytes, 1).expect("compressing in memory"),
            true,
        );
    }
}

/// A generated trace reads back (sealed, compressed or not) to exactly the bytes and content
/// hash written, event for event.
pub fn assert_round_trip(generated: &WrittenTrace) {
    let written = &generated.sealed;
    for (stored, compressed) in [
        (written.bytes.clone(), false),
        (written.compress().expect("compressing in memory"), true),
    ] {
        let file = TraceFile::from_stored(PATH, &stored, compressed, Limits::default())
            .expect("a written trace decompresses");
        let seal = file.verify_seal(true).expect("a written trace verifies");
        assert_eq!(seal.content_hash, written.content_hash);
        let parsed = parse_trace(&file, &seal, Limits::default())
            .unwrap_or_else(|e| panic!("a written trace reads: {e}"));
        assert_eq!(parsed.trace.events.len(), generated.events);
        let again = rewrite(&parsed.trace);
        if again.bytes != written.bytes {
            let (a, b) = (
                String::from_utf8_lossy(&written.bytes),
                String::from_utf8_lossy(&again.bytes),
            );
            let first = a.lines().zip(b.lines()).find(|(x, y)| x != y);
            panic!("read back differently; first differing line: {first:?}");
        }
        assert_eq!(again.content_hash, written.content_hash);
    }
}

/// The trace as the writer writes it: same header, same events (and `seq`s).
pub(crate) fn rewrite(trace: &Trace<'_>) -> SealedTrace {
    let mut w = TraceWriter::new(trace.header.clone());
    for e in &trace.events {
        w.push_event(e);
    }
    w.finish()
        .expect("a trace that was read keeps the order rules")
}

/// Reads a trace the writer wrote (it must read, sealed) and writes it again.
fn read_and_rewrite(stored: Vec<u8>, compressed: bool) -> SealedTrace {
    let limits = Limits::default();
    let file = TraceFile::from_stored(PATH, &stored, compressed, limits)
        .expect("a written trace decompresses");
    let seal = file.verify_seal(true).expect("a written trace verifies");
    let parsed = parse_trace(&file, &seal, limits).unwrap_or_else(|e| {
        panic!(
            "a written trace reads: {e}\n{}",
            String::from_utf8_lossy(&file.bytes)
        )
    });
    assert!(seal.sealed);
    rewrite(&parsed.trace)
}

/// Every oracle type, with and without parameters, and the behaviour a baseline records: none
/// may panic on any trace that reads.
fn judge_everything(trace: &Trace<'_>) {
    let facts = Facts::new(trace);
    for scenario in probe_scenarios() {
        let results = oracle::judge_facts(&scenario.oracles, &facts);
        let behaviour = Behaviour::from_facts(&facts, &results);
        assert!(compare(&behaviour, &behaviour, 0.2, DriftMode::Strict).is_empty());
    }
}

/// Scenarios declaring every oracle type, bare and with typical parameters taken from the
/// fixed trace's names, so a fuzzed trace meets configured oracles.
fn probe_scenarios() -> &'static [Scenario] {
    static SCENARIOS: std::sync::OnceLock<Vec<Scenario>> = std::sync::OnceLock::new();
    SCENARIOS.get_or_init(|| {
        let bare: Vec<String> = oracle::known_types()
            .map(|t| format!(r#"{{"type":"{t}"}}"#))
            .collect();
        let configured = [
            r#"{"type":"tool-called","tool":"search"}"#,
            r#"{"type":"max-tool-calls","limit":1}"#,
            r#"{"type":"final-answer-contains","value":"done"}"#,
            r#"{"type":"approval-required","tool":"deploy"}"#,
            r#"{"type":"no-unsafe-tool","tools":["deploy"]}"#,
            r#"{"type":"status-is","value":"completed"}"#,
            r#"{"type":"tool-sequence","mode":"exact","calls":[{"tool":"search","args":{"q":"x"}},{"tool":"deploy"}]}"#,
            r#"{"type":"tool-sequence","mode":"unordered","tools":["search","deploy","search"]}"#,
            r#"{"type":"tool-sequence","mode":"subset","tools":["search"],"batchOrder":"strict"}"#,
            r#"{"type":"tool-args","tool":"search","args":{"q":"x"},"argsMatch":"subset"}"#,
            r#"{"type":"tool-result-contains","tool":"search","value":"found"}"#,
            r#"{"type":"step-count","kind":"tool_call","min":1,"max":3}"#,
            r#"{"type":"message-count","phase":"final","count":1}"#,
            r#"{"type":"final-after-tool","tool":"search"}"#,
            r#"{"type":"artifact-contains","path":"out/report.md","values":["ok"]}"#,
            r#"{"type":"artifact-before-reply","path":"out/report.md"}"#,
            r#"{"type":"final-answer-matches","pattern":"^d.*e$"}"#,
            r#"{"type":"max-tokens","limit":100,"kind":"output"}"#,
            r#"{"type":"tools-offered","tools":["search"],"mode":"exact"}"#,
        ];
        let scenario = |oracles: &str| {
            format!(
                r#"{{"id":"fuzz.probe","title":"probe","risk":"High","tags":["tools"],"oracles":[{oracles}]}}"#
            )
            .parse::<Scenario>()
            .expect("the probe scenarios load")
        };
        vec![scenario(&bare.join(",")), scenario(&configured.join(","))]
    })
}

/// A small trace that every oracle has something to look at in: a user turn, a planned batch,
/// calls and results, an approval, messages, an artifact, an answer and the end.
fn full_trace() -> &'static SealedTrace {
    static TRACE: std::sync::OnceLock<SealedTrace> = std::sync::OnceLock::new();
    TRACE.get_or_init(|| {
        let json = |s: &str| serde_json::from_str::<serde_json::Value>(s).expect("fixed JSON");
        let lines = [
            r#"{"kind":"user_message","seq":1,"prompt":{"h":"b3:0000000000000000000000000000000000000000000000000000000000000000","len":3}}"#,
            r#"{"kind":"inference","seq":2,"tools_offered":["search","deploy"],"output":{"tool_calls":[{"call_id":"c1","tool":"search","args":{"q":"x"}},{"call_id":"c2","tool":"deploy","args":{}}]},"usage":{"input_tokens":10,"output_tokens":5},"finish":"tool_call"}"#,
            r#"{"kind":"tool_call","seq":3,"call_id":"c1","tool":"search","args":{"q":"x"}}"#,
            r#"{"kind":"tool_result","seq":4,"call_id":"c1","ok":true,"output":"found it"}"#,
            r#"{"kind":"approval_request","seq":5,"tool":"deploy","call_id":"c2","approval_id":"a1"}"#,
            r#"{"kind":"approval_decision","seq":6,"granted":true,"approval_id":"a1"}"#,
            r#"{"kind":"tool_call","seq":7,"call_id":"c2","tool":"deploy","args":"{\"env\":\"prod\"}"}"#,
            r#"{"kind":"tool_result","seq":8,"call_id":"c2","ok":false,"error":"denied"}"#,
            r#"{"kind":"message","seq":9,"id":"m1","phase":"preview","text":"working"}"#,
            r#"{"kind":"message_edit","seq":10,"id":"m1","text":"done","phase":"final"}"#,
            r#"{"kind":"artifact","seq":11,"path":"out/report.md","h":"b3:1111111111111111111111111111111111111111111111111111111111111111","bytes":2,"text":"ok"}"#,
            r#"{"kind":"final_answer","seq":12,"text":"done"}"#,
            r#"{"kind":"run_end","seq":13,"status":"completed"}"#,
        ];
        let mut text = String::from(
            r#"{"kind":"header","format":"tracereplay.trace","version":1,"scenario":"fuzz.probe","case":"default","privacy":{"prompts":"hashed","hash":"blake3"}}"#,
        );
        for line in lines {
            json(line); // each line is JSON
            text.push('\n');
            text.push_str(line);
        }
        text.push('\n');
        let file = TraceFile::from_bytes(PATH, text.into_bytes(), false);
        let seal = file.verify_seal(false).expect("the full trace verifies");
        let parsed = parse_trace(&file, &seal, Limits::default()).expect("the full trace reads");
        rewrite(&parsed.trace)
    })
}

/// Judges `scenario` against an empty trace and the full one. A scenario with a configured
/// `expr` oracle is loaded (its jq program parsed and compiled) but not judged here: the binary
/// runs jq programs in a helper process because a program that recurses without end overflows
/// the evaluating thread's stack (see `oracle::expr`), which in the fuzzer's own process would be
/// reported as a crash of the program under test rather than of tracereplay.
fn judge_scenario(scenario: &Scenario) {
    let _ = oracle::misconfigurations(&scenario.oracles);
    let _ = crate::gates::scenario_problems(scenario);
    let runs_jq = scenario.oracles.iter().any(|o| {
        match (&o.oracle, oracle::registry::lookup(o.type_name())) {
            (Some(Ok(configured)), Some(t)) => {
                oracle::compose::leaf_kinds(t.name, configured).contains(&"expr")
            }
            _ => false,
        }
    });
    if runs_jq {
        return;
    }
    let full = full_trace();
    let file = TraceFile::from_bytes(PATH, full.bytes.clone(), false);
    let seal = file.verify_seal(true).expect("the full trace verifies");
    let parsed = parse_trace(&file, &seal, Limits::default()).expect("the full trace reads");
    let empty = Trace {
        header: Header::new(scenario.id.clone(), "default"),
        events: Vec::new(),
    };
    for trace in [&parsed.trace, &empty] {
        let results = oracle::judge(&scenario.oracles, trace);
        assert!(!results.is_empty(), "every judged trace has a result");
        let _ = oracle::overall(&results);
    }
}

/// The scenario loader (scenario files of one object or an array of them). A scenario that loads
/// is judged against an empty and a full trace.
pub fn scenario(bytes: &[u8]) {
    let path = Utf8Path::new("fuzz/scenario.json");
    let Ok(scenarios) = crate::scenario::load::parse_file(path, bytes, Some(NO_ROOT.as_ref()))
    else {
        return;
    };
    for scenario in scenarios.into_iter().flatten() {
        judge_scenario(&scenario);
    }
}

/// The Harness Contract reader. A contract that loads is judged (`contract-conformant`) against
/// an empty and a full trace.
pub fn contract(bytes: &[u8]) {
    let path = Utf8Path::new("fuzz/contract.json");
    let Ok(contract) = crate::scenario::contract::parse_contract_bytes(path, bytes) else {
        return;
    };
    let mut scenario: Scenario =
        r#"{"id":"fuzz.contract","risk":"High","oracles":[{"type":"contract-conformant"}]}"#
            .parse()
            .expect("the contract scenario loads");
    scenario.contract = Some("contract.json".into());
    scenario.contract_loaded = Some(Ok(contract));
    scenario.configure_oracles();
    judge_scenario(&scenario);
}

/// The baseline reader. A baseline that reads finds no drift against itself, and prints to a
/// fixed point (printed, read and printed again: the same text).
pub fn baseline(bytes: &[u8]) {
    let path = Utf8Path::new("fuzz/baseline.json");
    let Ok(file) = BaselineFile::parse(path, bytes) else {
        return;
    };
    for mode in [DriftMode::Default, DriftMode::Strict] {
        assert!(compare(&file.behaviour, &file.behaviour, 0.2, mode).is_empty());
    }
    let text = file.to_text();
    let again = BaselineFile::parse(path, text.as_bytes()).expect("a printed baseline reads");
    assert_eq!(again.to_text(), text);
}

/// The result-cache reader ([`crate::eval`]'s cache file: framing and rows).
pub fn cache(bytes: &[u8]) {
    let _ = crate::eval::fuzz_read_cache(bytes);
}

/// The report reader `merge` uses. A report that reads serialises and reads back the same, and
/// merging it (alone, or with itself) is refused or succeeds without panicking.
pub fn report(bytes: &[u8]) {
    let Ok(report) = serde_json::from_slice::<Report>(bytes) else {
        return;
    };
    let text = serde_json::to_string(&report).expect("a report serialises");
    let again: Report = serde_json::from_str(&text).expect("a serialised report reads");
    assert_eq!(
        serde_json::to_string(&again).expect("a report serialises"),
        text
    );
    let _ = crate::eval::merge(vec![("a.json".into(), report.clone())]);
    let _ = crate::eval::merge(vec![
        ("a.json".into(), report.clone()),
        ("b.json".into(), report),
    ]);
}

/// `merge` of up to four reports (the input split at `\0` bytes). Besides "no panic": a merge
/// that succeeds says the run fails exactly when one of its rows or findings blocks, whatever
/// the shares' own summaries said, and its counts are those of its rows.
pub fn merge(data: &[u8]) {
    let reports: Vec<(String, Report)> = (data.split(|b| *b == 0).take(4).enumerate())
        .filter_map(|(i, part)| Some((format!("{i}.json"), serde_json::from_slice(part).ok()?)))
        .collect();
    if reports.is_empty() {
        return;
    }
    let Ok(merged) = crate::eval::merge(reports) else {
        return;
    };
    let blocks = merged.results.metas().any(|m| m.blocking)
        || merged.privacy.iter().any(|f| f.fails)
        || merged.obsolete.iter().any(|o| o.finding.fails);
    assert_eq!(
        merged.is_failure(),
        blocks,
        "the exit code follows the rows"
    );
    let rows = merged.results.metas().count();
    let s = &merged.summary;
    assert_eq!(
        s.passed + s.failed + s.errors,
        rows,
        "the counts are the rows'"
    );
}

/// An importer. Every run it builds reads back, sealed, with the content hash it was given.
pub fn ingest(format: InputFormat, bytes: &[u8]) {
    let opts = IngestOptions {
        hasher: PromptHasher::unkeyed(),
        raw_opt_in: false,
        scenario: None,
        case: None,
        name: None,
        file_stem: Some("fuzz".into()),
        allow_empty: true,
    };
    let _ = crate::ingest::detect(bytes);
    let outcome = crate::ingest::ingest(format, bytes, &opts);
    for run in &outcome.runs {
        let file = TraceFile::from_bytes(PATH, run.trace.bytes.clone(), false);
        let seal = file.verify_seal(true).expect("an ingested trace verifies");
        assert_eq!(seal.content_hash, run.trace.content_hash);
        let parsed = parse_trace(&file, &seal, Limits::default()).unwrap_or_else(|e| {
            panic!(
                "an ingested trace reads: {e}\n{}",
                String::from_utf8_lossy(&file.bytes)
            )
        });
        assert_eq!(parsed.trace.header.scenario.as_str(), run.scenario);
        assert_eq!(parsed.trace.header.case.as_str(), run.case);
        assert!(
            !parsed
                .trace
                .events
                .iter()
                .any(|e| matches!(e.body, EventBody::Unknown { .. })),
            "an importer writes only kinds the reader knows"
        );
        judge_everything(&parsed.trace);
    }
}

#[cfg(test)]
mod tests;
