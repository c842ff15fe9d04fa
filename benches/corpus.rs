//! A deterministic, seeded corpus of spec-conformant sealed traces with their scenarios, for
//! benchmarks and scale measurements. Shared by `benches/pipeline.rs` and
//! `examples/gen_corpus.rs`.

#![allow(dead_code)] // each includer uses part of it

use std::path::Path;

use tracereplay::trace::PromptHasher;
use tracereplay::trace::{
    Args, EventBody, Header, Inference, InferenceOutput, Json, PlannedCall, RunStatus, Str,
    TraceWriter, Usage,
};

/// What to generate.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spec {
    /// Number of traces.
    pub traces: usize,
    /// Number of scenarios they are spread over.
    pub scenarios: usize,
    /// Tool-call rounds per trace (three events each).
    pub rounds: usize,
    /// Approximate bytes of each tool result.
    pub output_bytes: usize,
    /// PRNG seed.
    pub seed: u64,
}

/// 20,000 traces of ~30 events and ~17 KB over 200 scenarios.
pub(crate) const SMALL: Spec = Spec {
    traces: 20_000,
    scenarios: 200,
    rounds: 9,
    output_bytes: 1_500,
    seed: 7,
};
/// 200 traces of ~1 MB.
pub(crate) const LARGE: Spec = Spec {
    traces: 200,
    scenarios: 20,
    rounds: 100,
    output_bytes: 9_800,
    seed: 11,
};

/// splitmix64: small, fast, and the same on every machine.
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A number below `n`.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

const WORDS: &[&str] = &[
    "ledger", "status", "report", "pending", "done", "blocked", "review", "deploy", "invoice",
    "customer", "order", "refund", "shipment", "note", "draft",
];

fn prose(rng: &mut Rng, bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 16);
    while s.len() < bytes {
        s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
        s.push(if rng.below(12) == 0 { '\n' } else { ' ' });
    }
    s
}

/// The scenario id of scenario `i`.
pub(crate) fn scenario_id(i: usize) -> String {
    format!("corpus.s{i:03}")
}

/// The scenario JSON of scenario `i`: the harness oracles plus a `tool-sequence`.
pub(crate) fn scenario_json(i: usize) -> String {
    serde_json::json!({
        "id": scenario_id(i),
        "title": format!("corpus scenario {i}"),
        "risk": "High",
        "tags": ["tool-use"],
        "oracles": [
            {"type": "tool-called", "tool": "read"},
            {"type": "tool-not-called", "tool": "shell"},
            {"type": "max-tool-calls", "limit": 200},
            {"type": "final-answer-contains", "value": "done"},
            {"type": "approval-not-required"},
            {"type": "no-unsafe-tool"},
            {"type": "tool-sequence", "mode": "in-order", "tools": ["read", "write"]}
        ]
    })
    .to_string()
}

/// The decompressed bytes of trace `n`.
pub(crate) fn trace_bytes(spec: &Spec, n: usize) -> Vec<u8> {
    let header = Header::new(scenario_id(n % spec.scenarios), format!("run-{n:06}"));
    trace_bytes_with(spec, n, header)
}

/// The decompressed bytes of trace `n` under `header` (its content is trace `n`'s whatever
/// the header names).
pub(crate) fn trace_bytes_with(spec: &Spec, n: usize, header: Header<'static>) -> Vec<u8> {
    let mut rng = Rng::new(spec.seed ^ (n as u64).wrapping_mul(0x2545_F491_4F6C_DD1D));
    let hasher = PromptHasher::keyed(b"corpus-key");
    let mut w = TraceWriter::with_prompts(header, hasher, false);
    let t0 = 1_764_417_600_000 + n as i64 * 60_000;
    w.user_message(
        Some(t0),
        Some("in1"),
        &format!("please process the ledger for order {}", rng.below(100_000)),
    );
    for r in 0..spec.rounds {
        let tool = if r % 3 == 2 { "write" } else { "read" };
        let call_id = format!("c{r}");
        let args = serde_json::json!({"path": format!("docs/{}-{r}.md", WORDS[rng.below(15) as usize]), "limit": rng.below(500), "filters": {"kind": "markdown", "recursive": r % 2 == 0}});
        let args = Args::Object(Json::from_value(&args));
        w.push(
            Some(t0 + r as i64 * 1000),
            EventBody::Inference(Box::new(Inference {
                request_id: Some(Str::from(format!("r{r}"))),
                tools_offered: Some(vec![Str::from("read"), Str::from("write")]),
                consumes: (r > 0).then(|| vec![Str::from(format!("c{}", r - 1))]),
                output: Some(InferenceOutput {
                    text: None,
                    tool_calls: Some(vec![PlannedCall {
                        call_id: Str::from(call_id.clone()),
                        tool: Str::from(tool),
                        args: args.clone(),
                    }]),
                }),
                usage: Some(Usage {
                    input_tokens: 800 + rng.below(400),
                    output_tokens: 20 + rng.below(80),
                    ..Usage::default()
                }),
                finish: Some(tracereplay::trace::Finish::ToolCall),
                ..Inference::default()
            })),
        );
        w.push(
            Some(t0 + r as i64 * 1000 + 100),
            EventBody::ToolCall {
                call_id: Str::from(call_id.clone()),
                tool: Str::from(tool),
                args,
            },
        );
        let size = spec.output_bytes / 2 + rng.below(spec.output_bytes as u64) as usize;
        w.push(
            Some(t0 + r as i64 * 1000 + 600),
            EventBody::ToolResult {
                call_id: Str::from(call_id),
                ok: true,
                output: Some(Json::from_value(&prose(&mut rng, size))),
                output_h: None,
                error: None,
            },
        );
    }
    w.push(
        None,
        EventBody::FinalAnswer {
            text: Str::from(format!("Done: processed {} files for run {n}", spec.rounds)),
        },
    );
    w.push(
        None,
        EventBody::RunEnd {
            status: RunStatus::Completed,
            error: None,
        },
    );
    w.finish()
        .expect("a corpus run keeps the order rules")
        .bytes
}

/// Writes the corpus: `DIR/<scenario>/<scenario>.scenario.json` and
/// `DIR/<scenario>/<case>.trace.ndjson.zst`.
pub(crate) fn write(dir: &Path, spec: &Spec) -> std::io::Result<()> {
    for i in 0..spec.scenarios {
        let d = dir.join(scenario_id(i));
        std::fs::create_dir_all(&d)?;
        std::fs::write(
            d.join(format!("{}.scenario.json", scenario_id(i))),
            scenario_json(i),
        )?;
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
        for w in 0..workers {
            let tx = tx.clone();
            s.spawn(move || {
                for n in (w..spec.traces).step_by(workers) {
                    let bytes = trace_bytes(spec, n);
                    let z = zstd::bulk::compress(&bytes, 3).expect("compress in memory");
                    let path = dir
                        .join(scenario_id(n % spec.scenarios))
                        .join(format!("run-{n:06}.trace.ndjson.zst"));
                    tx.send(std::fs::write(path, z))
                        .expect("the receiver lives");
                }
            });
        }
        drop(tx);
        rx.iter().collect::<std::io::Result<Vec<()>>>().map(|_| ())
    })
}

/// `runs` tau-bench-shaped runs (tasks of 4 trials each: a 6 KB system prompt and 12 tool calls
/// a run, and the task's 12 expected actions in its `info`, from which `ingest
/// --emit-scenarios` writes its scenario), as one JSON document: what `benches/ingest.rs` and
/// `benches/floors.rs` ingest.
pub(crate) fn tau_bench_runs(runs: usize) -> Vec<u8> {
    use serde_json::{Value, json};
    let policy = "Follow the airline policy carefully. ".repeat(160);
    let runs: Vec<Value> = (0..runs)
        .map(|r| {
            let mut traj = vec![
                json!({"role": "system", "content": policy}),
                json!({"role": "user", "content": format!("I want to change my flight {r}.")}),
            ];
            for t in 0..12 {
                let id = format!("call_{r}_{t}");
                traj.push(json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": id, "type": "function", "function": {"name": "get_reservation_details",
                     "arguments": format!("{{\"reservation_id\":\"R{t}\"}}")}}]}));
                traj.push(json!({"role": "tool", "tool_call_id": id, "name": "get_reservation_details",
                    "content": "{\"status\": \"confirmed\", \"flights\": [\"HAT136\", \"HAT039\"]}"}));
            }
            traj.push(json!({"role": "assistant", "content": "Your flight is changed."}));
            let actions: Vec<Value> = (0..12)
                .map(|t| json!({"name": "get_reservation_details", "kwargs": {"reservation_id": format!("R{t}")}}))
                .collect();
            let info = json!({"task": {"user_id": format!("user_{}", r / 4), "actions": actions}});
            json!({"task_id": r / 4, "trial": r % 4, "reward": 1.0, "info": info, "traj": traj})
        })
        .collect();
    serde_json::to_vec(&runs).expect("JSON")
}
