//! One large answer costs the recorder no more than a bounded amount of memory, and loses no
//! session: a 256 MiB SSE line without a newline, an event whose `data:` never ends, 256 MiB
//! of text deltas, and a 256 MiB pass-through `GET /v1/models` (streamed to the client, never
//! held) — each passed on whole to the client, the model answers recorded up to
//! `ANSWER_KEEP` (8 MiB) as too large, every open session written at the stop, and the
//! recorder's peak resident memory under the bound `docs/trust.md` gives.

use std::io::{Read, Write};

use super::record_faults::recorder;
use crate::util::*;

/// The size of each large answer.
const BIG: usize = 256 << 20;

/// An upstream whose answers are large in the shape its path names.
fn large_upstream() -> String {
    loopback_upstream(|out, r| answer(out, &r.path))
}

fn answer(mut out: std::net::TcpStream, path: &str) -> std::io::Result<()> {
    let block = vec![b'a'; 1 << 20];
    let sse = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
    if path.contains("/small/") {
        let body = r#"{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}"#;
        return write!(
            out,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
    }
    if path.contains("/models") {
        write!(
            out,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {BIG}\r\nconnection: close\r\n\r\n"
        )?;
    } else {
        out.write_all(sse.as_bytes())?;
    }
    if path.contains("/data/") {
        out.write_all(br#"data: {"choices":[{"index":0,"delta":{"content":""#)?;
    }
    if path.contains("/deltas/") {
        let text = "a".repeat(64 << 10);
        let event = format!(
            "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":null}}]}}\n\n"
        );
        for _ in 0..BIG / (64 << 10) {
            out.write_all(event.as_bytes())?;
        }
        return out.write_all(b"data: [DONE]\n\n");
    }
    for _ in 0..BIG / block.len() {
        out.write_all(&block)?;
    }
    Ok(())
}

/// Sends `body` to the recorder (`GET` when it is `None`) and reads the whole answer, counting
/// its bytes without keeping them.
fn read_all(url: &str, body: Option<&str>) -> (u16, u64) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut resp = match body {
        Some(b) => agent
            .post(url)
            .header("content-type", "application/json")
            .send(b)
            .unwrap(),
        None => agent.get(url).call().unwrap(),
    };
    let status = resp.status().as_u16();
    let mut reader = resp.body_mut().with_config().limit(u64::MAX).reader();
    let mut n = 0u64;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match reader.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k as u64,
        }
    }
    (status, n)
}

#[test]
fn large_answers_pass_whole_cost_bounded_memory_and_lose_no_session() {
    let env = Env::new();
    let up = large_upstream();
    let rec = recorder(&env, &up, &[]);
    let ask = |stream: bool| {
        serde_json::json!({"model": "m", "stream": stream, "messages": [{"role": "user", "content": "hi"}]})
            .to_string()
    };
    // A session opened before the large answers, and still open when they come.
    let (status, _) = read_all(
        &format!("{}/record/s/before/small/v1/chat/completions", rec.url),
        Some(&ask(false)),
    );
    assert_eq!(status, 200);
    for shape in ["line", "data", "deltas"] {
        let url = format!("{}/record/s/{shape}/{shape}/v1/chat/completions", rec.url);
        let (status, n) = read_all(&url, Some(&ask(true)));
        assert_eq!(status, 200, "{shape}");
        assert!(n >= BIG as u64, "{shape}: the client got {n} bytes");
    }
    let (status, n) = read_all(&format!("{}/record/s/list/v1/models", rec.url), None);
    assert_eq!((status, n), (200, BIG as u64), "the listing passed whole");
    let peak = rec.peak_rss();
    let (code, printed) = rec.finish(&[]);
    assert_eq!(code, 0, "{printed}");
    for case in ["before", "line", "data", "deltas"] {
        assert!(
            printed.contains(&format!("recorded s/{case}: 1 request(s)")),
            "{case}: {printed}"
        );
    }
    let deltas = trace_body(&env, "out/s/deltas.trace.ndjson.zst");
    assert!(
        deltas.contains(r#""code":"upstream-too-large""#) && deltas.contains(r#""truncated":true"#),
        "{}",
        &deltas[..2000.min(deltas.len())]
    );
    eprintln!("record: peak resident memory {} MiB", peak >> 20);
    // The bound of docs/trust.md: 160 MiB for the recorder, whatever the answers' size.
    assert!(peak < 160 << 20, "peak resident memory {} MiB", peak >> 20);
}

/// A request the recorder accepts always yields a writable trace, at a bounded cost: 520,000
/// one-letter messages (14.9 MiB, under the 16 MiB body limit) used to take 1.46 GB and leave a
/// `request_h` of a million pointers that made `finish` answer 422; now the run is written (its
/// `request_h` at most `MAX_PARTS` parts) and the recorder stays under the documented bound.
#[test]
fn a_request_of_many_messages_is_recorded_at_a_bounded_cost() {
    let env = Env::new();
    let up = large_upstream();
    let rec = recorder(&env, &up, &[]);
    let messages: Vec<String> = (0..520_000)
        .map(|_| r#"{"role":"user","content":"a"}"#.to_owned())
        .collect();
    let body = format!(r#"{{"model":"m","messages":[{}]}}"#, messages.join(","));
    assert!(body.len() < 16 << 20, "{}", body.len());
    let (status, _) = read_all(
        &format!("{}/record/s/many/small/v1/chat/completions", rec.url),
        Some(&body),
    );
    assert_eq!(status, 200);
    let (status, said) = rec.post(
        "/record/s/many/tracereplay/v1/finish",
        &[],
        r#"[{"kind":"run_end","status":"completed"}]"#,
    );
    assert_eq!(status, 200, "{said}");
    let peak = rec.peak_rss();
    eprintln!("record: peak resident memory {} MiB", peak >> 20);
    let (code, printed) = rec.finish(&[]);
    assert_eq!(code, 0, "{printed}");
    let trace = trace_body(&env, "out/s/many.trace.ndjson.zst");
    assert!(
        trace.contains(r#""request_h":{"/messages":"b3:"#),
        "{}",
        &trace[..1000]
    );
    // The bound of docs/trust.md for one maximal request.
    assert!(peak < 600 << 20, "peak resident memory {} MiB", peak >> 20);
}

/// Memory is bounded per server, not per request: 40 concurrent maximal requests (16 MiB
/// bodies, under the body limit) are read and captured at most `READERS` (2) at a time — the
/// others wait, their bodies unread — so the recorder's peak stays under the documented figure
/// however many arrive at once. Every one is answered and recorded.
#[test]
fn forty_concurrent_maximal_requests_cost_what_two_do() {
    let env = Env::new();
    let up = large_upstream();
    let rec = recorder(&env, &up, &[]);
    let text = "a".repeat((16 << 20) - 200);
    let body = format!(r#"{{"model":"m","messages":[{{"role":"user","content":"{text}"}}]}}"#);
    assert!(body.len() < 16 << 20);
    let body = std::sync::Arc::new(body);
    let threads: Vec<_> = (0..40)
        .map(|i| {
            let (body, url) = (
                body.clone(),
                format!("{}/record/s/c{i}/small/v1/chat/completions", rec.url),
            );
            std::thread::spawn(move || read_all(&url, Some(&body)).0)
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), 200);
    }
    let peak = rec.peak_rss();
    eprintln!("record: peak resident memory {} MiB", peak >> 20);
    let (code, printed) = rec.finish(&[]);
    assert_eq!(code, 0, "{printed}");
    assert_eq!(printed.matches("recorded s/c").count(), 40, "{printed}");
    // The bound of docs/trust.md for any number of concurrent maximal requests.
    assert!(peak < 600 << 20, "peak resident memory {} MiB", peak >> 20);
}

/// A request whose body never comes is answered 408 within the 30 s `replay serve` gives, and
/// holds no one else up meanwhile; a body announced past the limit (`Content-Length: 2^63`) is
/// refused at once. Before, both were held open for ever.
#[test]
fn a_body_that_never_comes_is_answered_in_thirty_seconds() {
    let env = Env::new();
    let up = large_upstream();
    let rec = recorder(&env, &up, &[]);
    let head = |path: &str, length: &str| {
        format!(
            "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {length}\r\n\r\n{{"
        )
    };
    let huge = status_after_head(
        &rec.url,
        &head("/record/s/huge/v1/chat/completions", "9223372036854775808"),
    );
    assert!(huge.0.starts_with("HTTP/1.1 413"), "{huge:?}");
    assert!(huge.1 < std::time::Duration::from_secs(5), "{huge:?}");
    let url = rec.url.clone();
    let slow = std::thread::spawn(move || {
        status_after_head(
            &url,
            &head("/record/s/slow/small/v1/chat/completions", "100"),
        )
    });
    // Meanwhile another session is answered and recorded.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (status, _) = read_all(
        &format!("{}/record/s/other/small/v1/chat/completions", rec.url),
        Some(super::record_faults::ASK),
    );
    assert_eq!(status, 200);
    let (line, took) = slow.join().unwrap();
    assert!(line.starts_with("HTTP/1.1 408"), "{line}");
    let secs = took.as_secs_f64();
    assert!((29.0..45.0).contains(&secs), "answered after {secs} s");
    let (code, printed) = rec.finish(&[]);
    assert_eq!(code, 0, "{printed}");
    assert!(
        printed.contains("recorded s/other: 1 request(s)"),
        "{printed}"
    );
}

/// `replay serve` shares the bound: 40 concurrent maximal requests (16 MiB bodies) to one
/// replayed session are read and compared at most `READERS` (2) at a time, and its peak stays
/// under the figure `docs/trust.md` gives. Every one is answered (the recording's answers, then
/// the session's divergence).
#[test]
fn replay_serve_answers_forty_concurrent_maximal_requests_at_a_bounded_cost() {
    let env = Env::new();
    copy_demo(&env, false);
    let server = super::replay::Server::start(&env, &[super::replay::ON_TARGET]);
    let text = "a".repeat((16 << 20) - 200);
    let body = format!(r#"{{"model":"m","messages":[{{"role":"user","content":"{text}"}}]}}"#);
    assert!(body.len() < 16 << 20);
    let body = std::sync::Arc::new(body);
    let threads: Vec<_> = (0..40)
        .map(|_| {
            let (body, url) = (body.clone(), format!("{}/v1/chat/completions", server.url));
            std::thread::spawn(move || read_all(&url, Some(&body)).0)
        })
        .collect();
    for t in threads {
        let status = t.join().unwrap();
        assert!(status == 200 || status >= 400, "{status}");
    }
    let peak = server.peak_rss();
    eprintln!("replay serve: peak resident memory {} MiB", peak >> 20);
    let _ = server.finish(&[]);
    // The bound of docs/trust.md for any number of concurrent maximal requests (it was 532 MiB
    // with every body read at once).
    assert!(peak < 350 << 20, "peak resident memory {} MiB", peak >> 20);
}
