//! Benchmarks of inputs that used to cost quadratic or cubic time: `tool-sequence` matching
//! 3,000 expected against 3,000 actual calls, and `gates --strength` on one 2,000-call trace;
//! and, beside them, the common case the hostile-input defences must not tax (a ten-call
//! trajectory).
//!
//! `cargo bench --bench adversarial`. CI only compiles it (clippy `--all-targets`). Peak memory
//! is measured on the command line (see docs/performance.md).

use divan::Bencher;
use serde_json::json;
use tracereplay::trace::{Limits, TraceFile, parse_trace};
use tracereplay_core::gates::strength::Strength;
use tracereplay_core::oracle::{Facts, judge_oracle};
use tracereplay_core::scenario::{OracleSpec, Scenario};

fn main() {
    divan::main();
}

/// NDJSON for a trace of `n` calls of `tools` tools (`t0`, `t1`…), each with `{"n": i % 50}`.
fn trace_text(n: usize, tools: usize) -> String {
    let mut text = String::from(
        r#"{"kind":"header","format":"tracereplay.trace","version":1,"scenario":"s"}"#,
    );
    text.push('\n');
    for i in 0..n {
        text.push_str(&format!(
            "{{\"kind\":\"tool_call\",\"seq\":{},\"call_id\":\"c{i}\",\"tool\":\"t{}\",\"args\":{{\"n\":{}}}}}\n",
            i + 1,
            i % tools,
            i % 50
        ));
    }
    text.push_str(&format!(
        "{{\"kind\":\"final_answer\",\"seq\":{},\"text\":\"done\"}}\n{{\"kind\":\"run_end\",\"seq\":{},\"status\":\"completed\"}}\n",
        n + 1,
        n + 2
    ));
    text
}

fn scenario(oracle: serde_json::Value) -> Scenario {
    let dir = tempfile::tempdir().unwrap();
    let path = camino::Utf8PathBuf::from_path_buf(dir.path().join("s.scenario.json")).unwrap();
    std::fs::write(
        &path,
        json!({"id": "s", "title": "t", "risk": "High", "oracles": [oracle]}).to_string(),
    )
    .unwrap();
    tracereplay_core::scenario::load_file(&path)
        .unwrap()
        .remove(0)
        .unwrap()
}

/// `tool-sequence` over 3,000 calls: unordered by tool name, unordered with exact arguments
/// (3,001 expected: it fails, naming the extra one), and superset with `superset` arguments.
#[divan::bench(args = ["unordered-tools", "unordered-exact-args", "superset-superset-args"])]
fn sequence_3000(b: Bencher, case: &str) {
    let text = trace_text(3_000, 7);
    let file = TraceFile::from_bytes("t.trace.ndjson", text.into_bytes(), false);
    let seal = file.verify_seal(false).unwrap();
    let trace = parse_trace(&file, &seal, Limits::default()).unwrap().trace;
    let oracle = match case {
        "unordered-tools" => json!({"type": "tool-sequence", "mode": "unordered",
            "tools": (0..3_000).map(|i| format!("t{}", i % 7)).collect::<Vec<_>>()}),
        "unordered-exact-args" => json!({"type": "tool-sequence", "mode": "unordered",
            "calls": (0..3_001).map(|i| json!({"tool": format!("t{}", i % 7), "args": {"n": i % 50}})).collect::<Vec<_>>()}),
        _ => json!({"type": "tool-sequence", "mode": "superset", "argsMatch": "superset",
            "calls": (0..3_000).map(|i| json!({"tool": format!("t{}", i % 7), "args": {"n": i % 50}})).collect::<Vec<_>>()}),
    };
    let s = scenario(oracle);
    let spec: &OracleSpec = &s.oracles[0];
    b.bench(|| judge_oracle(spec, &Facts::new(&trace)).verdict);
}

/// The common case beside the hostile one: a ten-call trajectory (tau-bench's shape: objects of
/// ids and lists) judged by a `superset` `tool-sequence` of 8 expected calls with exact
/// arguments, passing and (one argument changed) failing. What the grouping must not tax.
#[divan::bench(args = ["passes", "fails"])]
fn sequence_ten_call_trajectory(b: Bencher, case: &str) {
    let tools = [
        "get_order_details",
        "get_user_details",
        "exchange_delivered_order_items",
    ];
    let args = |k: usize| {
        json!({"order_id": format!("#W{k}"), "item_ids": [format!("{}", 1_000_000 + k), "2000000"],
               "payment_method_id": "credit_card_7"})
    };
    let mut text = String::from(
        r#"{"kind":"header","format":"tracereplay.trace","version":1,"scenario":"s"}"#,
    );
    text.push('\n');
    for k in 0..10 {
        let mut a = args(k);
        if case == "fails" && k == 3 {
            a["order_id"] = json!("#W0");
        }
        let call = json!({"kind": "tool_call", "seq": k + 1, "call_id": format!("c{k}"),
                          "tool": tools[k % 3], "args": a});
        text.push_str(&format!("{call}\n"));
    }
    text.push_str("{\"kind\":\"run_end\",\"seq\":11,\"status\":\"completed\"}\n");
    let file = TraceFile::from_bytes("t.trace.ndjson", text.into_bytes(), false);
    let seal = file.verify_seal(false).unwrap();
    let trace = parse_trace(&file, &seal, Limits::default()).unwrap().trace;
    let s = scenario(
        json!({"type": "tool-sequence", "mode": "superset", "argsMatch": "exact",
        "calls": (0..8).map(|k| json!({"tool": tools[k % 3], "args": args(k)})).collect::<Vec<_>>()}),
    );
    let spec: &OracleSpec = &s.oracles[0];
    let want = if case == "passes" { "pass" } else { "fail" };
    assert_eq!(
        judge_oracle(spec, &Facts::new(&trace)).verdict.as_str(),
        want
    );
    b.bench(|| judge_oracle(spec, &Facts::new(&trace)).verdict);
}

/// `gates --strength` on one passing 2,000-call trace judged by an unordered `tool-sequence`:
/// mutants built and judged one at a time, at most `MUTANTS_PER_TRACE` of them.
#[divan::bench(sample_count = 5)]
fn strength_2000_calls(b: Bencher) {
    let text = trace_text(2_000, 2);
    let file = TraceFile::from_bytes("t.trace.ndjson", text.into_bytes(), false);
    let seal = file.verify_seal(false).unwrap();
    let trace = parse_trace(&file, &seal, Limits::default()).unwrap().trace;
    let s = scenario(json!({"type": "tool-sequence", "mode": "unordered",
        "tools": (0..2_000).map(|i| format!("t{}", i % 2)).collect::<Vec<_>>()}));
    b.bench(|| {
        let mut strength = Strength::new(&s);
        strength.add_trace(&s, "t", &trace, None);
        strength.caught
    });
}
