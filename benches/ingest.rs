//! Ingest benchmarks, in memory (no file is written): 200 tau-bench-shaped runs (a 6 KB system
//! prompt, 12 assistant turns with a tool call each) through `openai-messages`, and one OTLP/JSON
//! export of 50 agent traces through the span model.
//!
//! `cargo bench --bench ingest`. CI only compiles it (clippy `--all-targets`). The end-to-end
//! figure (ingest of the real tau-bench file against `check` of what it wrote) is measured on
//! the command line (see docs/performance.md).

#[path = "corpus.rs"]
mod corpus;

use serde_json::{Value, json};
use tracereplay::trace::PromptHasher;
use tracereplay_core::ingest::{IngestOptions, InputFormat, ingest};

fn main() {
    divan::main();
}

fn opts() -> IngestOptions {
    IngestOptions {
        hasher: PromptHasher::keyed(b"bench"),
        raw_opt_in: false,
        scenario: None,
        case: None,
        name: None,
        file_stem: Some("bench".into()),
        allow_empty: false,
    }
}

/// One OTLP/JSON export of 50 traces, each an agent, two chat spans and a tool span.
fn otlp() -> Vec<u8> {
    let kv = |k: &str, v: &str| json!({"key": k, "value": {"stringValue": v}});
    let mut spans = Vec::new();
    for t in 0..50u64 {
        let tid = format!("{t:032x}");
        let span = |id: u64, parent: Option<u64>, name: &str, attrs: Vec<Value>| {
            let mut s = json!({"traceId": tid, "spanId": format!("{:016x}", t * 16 + id), "name": name,
                "startTimeUnixNano": format!("{}", 1_700_000_000_000_000_000u64 + t * 1_000_000 + id),
                "endTimeUnixNano": format!("{}", 1_700_000_000_000_000_000u64 + t * 1_000_000 + id + 10),
                "attributes": attrs});
            if let Some(p) = parent {
                s["parentSpanId"] = json!(format!("{:016x}", t * 16 + p));
            }
            s
        };
        spans.push(span(
            1,
            None,
            "invoke_agent support",
            vec![
                kv("gen_ai.operation.name", "invoke_agent"),
                kv("gen_ai.agent.name", "support"),
            ],
        ));
        spans.push(span(2, Some(1), "chat", vec![kv("gen_ai.operation.name", "chat"),
            kv("gen_ai.input.messages", r#"[{"role":"user","parts":[{"type":"text","content":"Where is my order?"}]}]"#),
            kv("gen_ai.output.messages", r#"[{"role":"assistant","parts":[{"type":"tool_call","id":"c1","name":"lookup_order","arguments":{"order_id":"A-1"}}]}]"#)]));
        spans.push(span(
            3,
            Some(1),
            "execute_tool lookup_order",
            vec![
                kv("gen_ai.operation.name", "execute_tool"),
                kv("gen_ai.tool.name", "lookup_order"),
                kv("gen_ai.tool.call.id", "c1"),
                kv("gen_ai.tool.call.result", r#"{"status":"shipped"}"#),
            ],
        ));
        spans.push(span(
            4,
            Some(1),
            "chat",
            vec![
                kv("gen_ai.operation.name", "chat"),
                kv(
                    "gen_ai.output.messages",
                    r#"[{"role":"assistant","parts":[{"type":"text","content":"It shipped."}]}]"#,
                ),
            ],
        ));
    }
    serde_json::to_vec(&json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})).unwrap()
}

#[divan::bench]
fn tau_bench_200_runs(bencher: divan::Bencher) {
    let bytes = corpus::tau_bench_runs(200);
    bencher.bench(|| {
        let out = ingest(InputFormat::OpenaiMessages, &bytes, &opts());
        assert_eq!(out.runs.len(), 200);
        out
    });
}

#[divan::bench]
fn otlp_50_traces(bencher: divan::Bencher) {
    let bytes = otlp();
    bencher.bench(|| {
        let out = ingest(InputFormat::OtlpJson, &bytes, &opts());
        assert_eq!(out.runs.len(), 50);
        out
    });
}

/// One ATIF trajectory of 20,000 agent steps (each a tool call observed, then the next step):
/// the conversation is hashed as it grows, so this is linear (it was quadratic: 2,500 steps
/// took 3.2 s, 10,000 took 68.6 s).
fn atif_long() -> Vec<u8> {
    let mut steps = vec![
        json!({"step_id": 1, "source": "system", "message": "You are a careful agent."}),
        json!({"step_id": 2, "source": "user", "message": "Count to twenty thousand."}),
    ];
    for i in 0..20_000 {
        let id = format!("call_{i}");
        steps.push(json!({
            "step_id": i + 3, "source": "agent", "message": "",
            "tool_calls": [{"tool_call_id": id, "function_name": "count", "arguments": {"n": i}}],
            "observation": {"results": [{"source_call_id": id, "content": format!("{i}")}]},
        }));
    }
    steps.push(json!({"step_id": 20_003, "source": "agent", "message": "Done."}));
    serde_json::to_vec(&json!({
        "schema_version": "ATIF-v1.8", "session_id": "long",
        "agent": {"name": "counter", "version": "1"}, "steps": steps,
    }))
    .unwrap()
}

#[divan::bench(sample_count = 3)]
fn atif_20000_steps(bencher: divan::Bencher) {
    let bytes = atif_long();
    bencher.bench(|| {
        let out = ingest(InputFormat::Atif, &bytes, &opts());
        assert_eq!(out.runs.len(), 1);
        out
    });
}
