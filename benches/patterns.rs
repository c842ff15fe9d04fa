//! The pattern oracles on a large run: 5,000 tool calls and their results (tau-bench-shaped
//! arguments and JSON outputs, one URL each), judged by `pattern` (a regular expression, the
//! `pipe-to-shell` and `credential` presets) and `hosts`, beside `tool-called` on the same
//! facts — the floor: what judging a run costs before anything is read.
//!
//! `cargo bench --bench patterns`. Compare the ratios within one run (docs/performance.md).

use divan::Bencher;
use serde_json::json;
use tracereplay::trace::{Limits, TraceFile, parse_trace};
use tracereplay_core::oracle::{Facts, judge_oracle};
use tracereplay_core::scenario::{OracleSpec, Scenario};

fn main() {
    divan::main();
}

/// NDJSON for a run of `n` calls, each with a result.
fn trace_text(n: usize) -> String {
    let mut text = String::from(
        r#"{"kind":"header","format":"tracereplay.trace","version":1,"scenario":"s"}"#,
    );
    text.push('\n');
    for i in 0..n {
        let tool = ["get_order_details", "http_get", "shell"][i % 3];
        let call = json!({"kind": "tool_call", "seq": 2 * i + 1, "call_id": format!("c{i}"),
            "tool": tool,
            "args": {"order_id": format!("#W{i}"), "url": format!("https://api.example.com/orders/{i}"),
                     "command": format!("tar xzf release-{i}.tar.gz"), "items": [format!("{}", 1_000_000 + i)]}});
        let result = json!({"kind": "tool_result", "seq": 2 * i + 2, "call_id": format!("c{i}"), "ok": true,
            "output": {"status": "delivered", "address": {"city": "Zürich", "zip": "8001"},
                       "note": "Customer asked to leave the parcel at the door."}});
        text.push_str(&format!("{call}\n{result}\n"));
    }
    text.push_str(&format!(
        "{{\"kind\":\"run_end\",\"seq\":{},\"status\":\"completed\"}}\n",
        2 * n + 1
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

#[divan::bench(args = ["tool-called", "regex", "pipe-to-shell", "credential", "hosts"])]
fn run_of_5000_calls(b: Bencher, case: &str) {
    let text = trace_text(5_000);
    let file = TraceFile::from_bytes("t.trace.ndjson", text.into_bytes(), false);
    let seal = file.verify_seal(false).unwrap();
    let trace = parse_trace(&file, &seal, Limits::default()).unwrap().trace;
    let oracle = match case {
        "tool-called" => json!({"type": "tool-called", "tool": "shell"}),
        "regex" => json!({"type": "pattern", "pattern": "(?i)\\bpassword\\s*[:=]"}),
        "pipe-to-shell" => json!({"type": "pattern", "preset": "pipe-to-shell"}),
        "credential" => json!({"type": "pattern", "preset": "credential"}),
        _ => json!({"type": "hosts", "allow": ["api.example.com"]}),
    };
    let s = scenario(oracle);
    let spec: &OracleSpec = &s.oracles[0];
    assert_eq!(
        judge_oracle(spec, &Facts::new(&trace)).verdict.as_str(),
        "pass"
    );
    // The facts are derived in each iteration, for every oracle alike.
    b.bench(|| judge_oracle(spec, &Facts::new(&trace)).verdict);
}
