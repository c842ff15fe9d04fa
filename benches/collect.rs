//! `tracereplay collect` under a steady load: a loopback client sends OTLP/JSON at 10,000 spans
//! per second (every 10 ms, 10 runs of 10 spans each, root span last) for 30 seconds (or
//! `BENCH_SECS`); it reports the spans accepted per second, the share of requests answered 503,
//! the peak memory of the process (receiver and client), and the runs written.
//!
//! `cargo bench --bench collect` (figures in docs/performance.md).

use std::time::{Duration, Instant};

const RUNS_PER_BATCH: usize = 10;
const SPANS_PER_RUN: usize = 10;
const EVERY: Duration = Duration::from_millis(10);

/// One request: `RUNS_PER_BATCH` runs of `SPANS_PER_RUN` spans, numbered from `first`.
fn batch(first: usize) -> String {
    let mut spans = Vec::new();
    for r in 0..RUNS_PER_BATCH {
        let trace = format!("{:032x}", first + r + 1);
        let root = format!("{:016x}", 1);
        for s in 1..SPANS_PER_RUN {
            spans.push(serde_json::json!({
                "traceId": trace, "spanId": format!("{:016x}", s + 1), "parentSpanId": root,
                "name": "chat gpt-4.1", "startTimeUnixNano": format!("{}", 1_764_417_600_000_000_000u128 + s as u128),
                "endTimeUnixNano": format!("{}", 1_764_417_600_000_000_500u128 + s as u128),
                "attributes": [
                    {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                    {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4.1"}},
                    {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "120"}},
                    {"key": "gen_ai.usage.output_tokens", "value": {"intValue": "40"}},
                ],
            }));
        }
        spans.push(serde_json::json!({
            "traceId": trace, "spanId": root, "name": "invoke_agent bench",
            "startTimeUnixNano": "1764417600000000000", "endTimeUnixNano": "1764417601000000000",
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
                {"key": "gen_ai.agent.name", "value": {"stringValue": "bench"}},
            ],
        }));
    }
    serde_json::json!({"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}]}]}).to_string()
}

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    (status.lines())
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let secs: u64 = std::env::var("BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let out = camino::Utf8PathBuf::from_path_buf(
        std::env::temp_dir().join(format!("tracereplay-bench-collect-{}", std::process::id())),
    )
    .unwrap();
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let options = tracereplay_net::collect::CollectOptions {
        out: out.clone(),
        ingest: tracereplay_core::ingest::IngestOptions {
            hasher: tracereplay::trace::PromptHasher::unkeyed(),
            raw_opt_in: false,
            scenario: None,
            case: None,
            name: None,
            file_stem: None,
            allow_empty: false,
        },
        idle: None,
        settle: Duration::from_millis(200),
        max_open_runs: 10_000,
        max_buffered: 256 << 20,
        body_limit: 64 << 20,
        limits: tracereplay::trace::Limits::default(),
        waived: Default::default(),
    };
    let receiving =
        tracereplay_net::collect::spawn("127.0.0.1:0".parse().unwrap(), options).unwrap();
    let url = format!("http://{}/v1/traces", receiving.addr);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let (mut sent, mut accepted, mut refused, mut requests) = (0usize, 0usize, 0usize, 0usize);
    let started = Instant::now();
    let mut next = started;
    while started.elapsed() < Duration::from_secs(secs) {
        let body = batch(requests * RUNS_PER_BATCH);
        let status = agent
            .post(&url)
            .header("content-type", "application/json")
            .send(body.as_str())
            .map(|r| r.status().as_u16())
            .unwrap_or(0);
        requests += 1;
        sent += RUNS_PER_BATCH * SPANS_PER_RUN;
        match status {
            200 => accepted += RUNS_PER_BATCH * SPANS_PER_RUN,
            503 => refused += 1,
            other => panic!("answered {other}"),
        }
        next += EVERY;
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let peak = peak_rss_mb();
    // Stop as a signal would, writing what is open.
    let mut written = 0usize;
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(500));
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::TERM);
    });
    receiving.wait(|h| {
        if let tracereplay_net::collect::Heard::Run(c) = h {
            written += usize::from(c.outcome.is_ok());
        }
    });
    println!(
        "collect: OTLP/JSON at {} spans/s offered for {elapsed:.1} s ({requests} requests of {} spans)",
        (sent as f64 / elapsed) as u64,
        RUNS_PER_BATCH * SPANS_PER_RUN
    );
    println!(
        "  accepted {:.0} spans/s; {refused} of {requests} requests answered 503 ({:.2} %)",
        accepted as f64 / elapsed,
        100.0 * refused as f64 / requests.max(1) as f64
    );
    println!(
        "  peak memory (receiver and client): {peak:.0} MB; runs written: {written} of {}",
        accepted / SPANS_PER_RUN
    );
    let _ = std::fs::remove_dir_all(&out);
}
