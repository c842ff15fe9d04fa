//! What `tracereplay record` adds to a model request: 100 concurrent sessions × 10 requests
//! each, sent to a loopback upstream directly and then through the recorder (in this process,
//! as `record` runs it), with the latency of each request, the added latency (median and p99),
//! and the time to the first byte of a streamed answer whose upstream pauses after its first
//! event. It checks that the 100 traces are written, each with its 10 inferences.
//!
//! `cargo bench --bench record` (figures in docs/performance.md).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

const SESSIONS: usize = 100;
const REQUESTS: usize = 10;
const ANSWER: &str = r#"{"id":"c1","object":"chat.completion","created":1,"model":"bench-model","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":1,"total_tokens":8}}"#;
const FIRST: &str = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"bench-model\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hel\"},\"finish_reason\":null}]}\n\n";
const REST: &str = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"bench-model\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
/// How long the streamed answer's upstream pauses after its first event.
const PAUSE: Duration = Duration::from_millis(50);

/// A loopback upstream (keep-alive, one write per answer, no Nagle delay): a Chat Completion
/// for `"stream": false`, and for `"stream": true` a first event, a pause, then the rest.
fn upstream() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let _ = stream.set_nodelay(true);
            std::thread::spawn(move || {
                let _ = serve(stream);
            });
        }
    });
    format!("http://{addr}")
}

fn serve(stream: std::net::TcpStream) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let mut length = 0usize;
        loop {
            let mut h = String::new();
            reader.read_line(&mut h)?;
            if h.trim().is_empty() {
                break;
            }
            if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        if body.windows(14).any(|w| w == b"\"stream\":true") {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
            out.write_all(format!("{head}{:x}\r\n{FIRST}\r\n", FIRST.len()).as_bytes())?;
            std::thread::sleep(PAUSE);
            out.write_all(format!("{:x}\r\n{REST}\r\n0\r\n\r\n", REST.len()).as_bytes())?;
        } else {
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{ANSWER}",
                ANSWER.len()
            );
            out.write_all(answer.as_bytes())?;
        }
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into()
}

/// Each request's latency (ms), `sessions` sessions at once, 10 requests each (named
/// `<prefix>/s<N>`).
fn run(base: &str, through_recorder: bool, sessions: usize, prefix: &'static str) -> Vec<f64> {
    let handles: Vec<_> = (0..sessions)
        .map(|s| {
            let base = base.to_owned();
            std::thread::spawn(move || {
                let agent = agent();
                let mut out = Vec::new();
                let mut messages =
                    vec![serde_json::json!({"role": "user", "content": format!("session {s}")})];
                for _ in 0..REQUESTS {
                    let body = serde_json::json!({"model": "m", "messages": messages}).to_string();
                    let url = match through_recorder {
                        true => format!("{base}/record/{prefix}/s{s}/v1/chat/completions"),
                        false => format!("{base}/v1/chat/completions"),
                    };
                    let started = Instant::now();
                    let mut resp = agent
                        .post(&url)
                        .header("content-type", "application/json")
                        .send(&body)
                        .unwrap();
                    let text = resp.body_mut().read_to_string().unwrap();
                    out.push(started.elapsed().as_secs_f64() * 1e3);
                    assert!(text.contains("hello"), "{text}");
                    messages.push(serde_json::json!({"role": "assistant", "content": "hello"}));
                    messages.push(serde_json::json!({"role": "user", "content": "again"}));
                }
                out
            })
        })
        .collect();
    handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect()
}

/// Each request's latency (ms), one request at a time: `n` requests of one session.
fn sequential(base: &str, through_recorder: bool, n: usize) -> Vec<f64> {
    let agent = agent();
    let url = match through_recorder {
        true => format!("{base}/record/bench-one/s0/v1/chat/completions"),
        false => format!("{base}/v1/chat/completions"),
    };
    let body = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
    (0..n)
        .map(|_| {
            let started = Instant::now();
            let mut resp = agent
                .post(&url)
                .header("content-type", "application/json")
                .send(body)
                .unwrap();
            let _ = resp.body_mut().read_to_string().unwrap();
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect()
}

/// Time to the first byte of the streamed answer (ms), over `n` requests one after another.
fn first_bytes(base: &str, through_recorder: bool, n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let url = match through_recorder {
                true => format!("{base}/record/bench-stream/s{i}/v1/chat/completions"),
                false => format!("{base}/v1/chat/completions"),
            };
            let body = r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
            let started = Instant::now();
            let mut resp = agent()
                .post(&url)
                .header("content-type", "application/json")
                .send(body)
                .unwrap();
            let mut reader = resp.body_mut().as_reader();
            let mut first = [0u8; 1];
            reader.read_exact(&mut first).unwrap();
            let at = started.elapsed().as_secs_f64() * 1e3;
            let mut rest = Vec::new();
            reader.read_to_end(&mut rest).unwrap();
            at
        })
        .collect()
}

fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let up = upstream();
    let out = camino::Utf8PathBuf::from_path_buf(
        std::env::temp_dir().join(format!("tracereplay-bench-record-{}", std::process::id())),
    )
    .unwrap();
    let _ = std::fs::remove_dir_all(&out);
    let options = tracereplay_net::proxy::Options {
        upstream: up.clone(),
        out: out.clone(),
        hasher: tracereplay::trace::PromptHasher::unkeyed(),
        raw_prompts: false,
        trial: None,
        idle: None,
        upstream_timeout: Duration::from_secs(60),
        limits: tracereplay::trace::Limits::default(),
        signer: None,
        replace: false,
        waived: Default::default(),
        next: None,
    };
    let server = tracereplay_net::proxy::spawn("127.0.0.1:0".parse().unwrap(), options).unwrap();
    let recorder = format!("http://{}", server.addr);
    // Warm both paths (connections, the recorder's first session).
    run(&up, false, SESSIONS, "warm");
    let _ = first_bytes(&up, false, 3);
    let mut one_direct = sequential(&up, false, 300);
    let mut one_through = sequential(&recorder, true, 300);
    let mut ten_direct = run(&up, false, 10, "ten");
    let mut ten_through = run(&recorder, true, 10, "ten");
    let mut direct = run(&up, false, SESSIONS, "bench");
    let mut through = run(&recorder, true, SESSIONS, "bench");
    let mut ttfb_direct = first_bytes(&up, false, 20);
    let mut ttfb_through = first_bytes(&recorder, true, 20);
    let ends = server.stop();
    let written = ends.iter().filter(|e| e.recorded_to.is_some()).count();
    // A correct trace: sealed, every request an inference with its answer, no error.
    let bench_traces = (ends.iter())
        .filter(|e| e.session.starts_with("bench/"))
        .filter_map(|e| e.recorded_to.as_ref())
        .filter(|path| {
            let bytes = zstd::decode_all(&std::fs::read(path).unwrap()[..]).unwrap();
            let text = String::from_utf8(bytes).unwrap();
            text.matches(r#""kind":"inference""#).count() == REQUESTS
                && text.matches(r#""output":{"text":"hello"}"#).count() == REQUESTS
                && !text.contains(r#""kind":"error""#)
                && text.contains(r#""kind":"footer""#)
        })
        .count();
    let (dm, dp) = (quantile(&mut direct, 0.5), quantile(&mut direct, 0.99));
    let (tm, tp) = (quantile(&mut through, 0.5), quantile(&mut through, 0.99));
    let (fd, ft) = (
        quantile(&mut ttfb_direct, 0.5),
        quantile(&mut ttfb_through, 0.5),
    );
    let (om, op) = (
        quantile(&mut one_direct, 0.5),
        quantile(&mut one_direct, 0.99),
    );
    let (rm, rp) = (
        quantile(&mut one_through, 0.5),
        quantile(&mut one_through, 0.99),
    );
    println!("record: one request at a time (300), loopback upstream");
    println!("  direct          median {om:.3} ms   p99 {op:.3} ms");
    println!("  through record  median {rm:.3} ms   p99 {rp:.3} ms");
    println!(
        "  added           median {:.3} ms   p99 {:.3} ms",
        rm - om,
        rp - op
    );
    let (em, ep) = (
        quantile(&mut ten_direct, 0.5),
        quantile(&mut ten_direct, 0.99),
    );
    let (xm, xp) = (
        quantile(&mut ten_through, 0.5),
        quantile(&mut ten_through, 0.99),
    );
    println!("record: 10 concurrent sessions x {REQUESTS} requests, loopback upstream");
    println!("  direct          median {em:.3} ms   p99 {ep:.3} ms");
    println!("  through record  median {xm:.3} ms   p99 {xp:.3} ms");
    println!(
        "  added           median {:.3} ms   p99 {:.3} ms",
        xm - em,
        xp - ep
    );
    println!("record: {SESSIONS} concurrent sessions x {REQUESTS} requests, loopback upstream");
    println!("  direct          median {dm:.3} ms   p99 {dp:.3} ms");
    println!("  through record  median {tm:.3} ms   p99 {tp:.3} ms");
    println!(
        "  added           median {:.3} ms   p99 {:.3} ms",
        tm - dm,
        tp - dp
    );
    println!(
        "  first byte of a streamed answer (median of 20): direct {fd:.3} ms, through record {ft:.3} ms, added {:.3} ms",
        ft - fd
    );
    println!(
        "  traces written: {written} ({bench_traces} of the {SESSIONS} sessions with all {REQUESTS} inferences)"
    );
    assert_eq!(bench_traces, SESSIONS, "every session is a correct trace");
    let _ = std::fs::remove_dir_all(&out);
}
