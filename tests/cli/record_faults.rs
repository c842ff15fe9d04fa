//! `tracereplay record` when things go wrong, and its sessions: an upstream that fails, refuses
//! connections or cuts a stream, a client that leaves mid-stream, SIGTERM with sessions open,
//! sessions that made no request or were cancelled, two runs of one case, a secret in a tool
//! result. The upstream here is a loopback server written for the test, told per request path
//! what to do.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use super::replay::Server;
use crate::util::*;

/// A loopback upstream: `/ok/…` answers a Chat Completion (text `hello`), `/count/…` one whose
/// text counts the requests (`answer 1`, `answer 2`…), `/fail/…` a 500,
/// `/stream/…` the same streamed with a usage frame, `/cut/…` two stream chunks and then closes, `/slow/…` one chunk, then another a second
/// later, then the rest; `/hang/…` nothing for 5 seconds.
pub(super) fn fake_upstream() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let count = count.clone();
            std::thread::spawn(move || {
                let _ = answer(stream, &count);
            });
        }
    });
    format!("http://{addr}")
}

const COMPLETION: &str = r#"{"id":"c1","object":"chat.completion","created":1,"model":"fake-model","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":1,"total_tokens":8}}"#;

fn chunk(text: &str) -> String {
    format!(
        "data: {{\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"fake-model\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{}}},\"finish_reason\":null}}]}}\n\n",
        serde_json::json!(text)
    )
}

fn answer(
    stream: std::net::TcpStream,
    count: &std::sync::atomic::AtomicUsize,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let path = line.split(' ').nth(1).unwrap_or("").to_owned();
        let mut length = 0usize;
        let mut key = String::new();
        loop {
            let mut h = String::new();
            reader.read_line(&mut h)?;
            if h.trim().is_empty() {
                break;
            }
            if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
            if let Some(v) = h.strip_prefix("authorization: Bearer ") {
                key = v.trim().to_owned();
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        let mut out = stream.try_clone()?;
        let sse = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
        if path.starts_with("/count/") {
            let n = count.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            let body = COMPLETION.replace("\"hello\"", &format!("\"answer {n}\""));
            write!(
                out,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            )?;
        } else if path.starts_with("/ok/") {
            write!(
                out,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{COMPLETION}",
                COMPLETION.len()
            )?;
        } else if path.starts_with("/stream/") {
            let usage = r#"data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"fake-model","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11,"prompt_tokens_details":{"cached_tokens":4}}}"#;
            let stop = r#"data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"fake-model","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
            write!(
                out,
                "{sse}{}{}{stop}\n\n{usage}\n\ndata: [DONE]\n\n",
                chunk("hel"),
                chunk("lo")
            )?;
            return Ok(());
        } else if path.starts_with("/fail/") {
            // As providers do, the error echoes the key it was sent.
            let body = format!(
                r#"{{"error":{{"message":"the upstream broke; key {key}","type":"server_error"}}}}"#
            );
            write!(
                out,
                "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            )?;
        } else if path.starts_with("/cut/") {
            write!(out, "{sse}{}{}", chunk("Hel"), chunk("lo, wor"))?;
            return Ok(());
        } else if path.starts_with("/hang/") {
            std::thread::sleep(Duration::from_secs(5));
            return Ok(());
        } else if path.starts_with("/lingering/") {
            // A tool call streamed whole, `[DONE]` sent, and the body left open a while: the
            // client has all it needs before the answer has ended.
            if String::from_utf8_lossy(&body).contains("tool_call_id") {
                write!(
                    out,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{COMPLETION}",
                    COMPLETION.len()
                )?;
                continue;
            }
            let call = r#"data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"fake-model","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_9","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":null}]}"#;
            let stop = r#"data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"fake-model","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#;
            write!(out, "{sse}{call}\n\n{stop}\n\ndata: [DONE]\n\n")?;
            out.flush()?;
            std::thread::sleep(Duration::from_millis(600));
            return Ok(());
        } else if path.starts_with("/slow/") {
            write!(out, "{sse}{}", chunk("one "))?;
            out.flush()?;
            for piece in ["two ", "three "] {
                std::thread::sleep(Duration::from_millis(700));
                write!(out, "{}", chunk(piece))?;
                out.flush()?;
            }
            write!(out, "data: [DONE]\n\n")?;
            return Ok(());
        }
    }
}

pub(super) fn recorder(env: &Env, upstream: &str, extra: &[&str]) -> Server {
    let mut args = vec![
        "record",
        "--upstream",
        upstream,
        "--out",
        "out",
        "--unkeyed",
    ];
    args.extend_from_slice(extra);
    Server::spawn(env, &args, &[])
}

pub(super) const ASK: &str = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;

/// The decompressed trace at `path` under the environment.
pub(super) fn trace_text(env: &Env, path: &str) -> String {
    let bytes = std::fs::read(env.path(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    String::from_utf8(zstd::decode_all(&bytes[..]).unwrap()).unwrap()
}

#[test]
fn upstream_failures_pass_through_and_are_recorded_as_errors() {
    let env = Env::new();
    let up = fake_upstream();
    let rec = recorder(&env, &up, &[]);
    let key = &["sk-", "proj-", "ECHOED", &"0123456789abcdef".repeat(2)].concat();
    let auth = format!("Bearer {key}");
    let headers = [("authorization", auth.as_str())];
    let (status, body) = rec.post("/record/s/fail/fail/v1/chat/completions", &headers, ASK);
    assert_eq!(status, 500, "{body}");
    // Passed to the agent as it came; recorded with the key redacted.
    assert!(
        body.contains("the upstream broke") && body.contains(key),
        "{body}"
    );
    // Nothing listens on port 9 of loopback: the connection is refused.
    let refused = recorder(&env, "http://127.0.0.1:9", &[]);
    let (status, body) = refused.post("/record/s/refused/v1/chat/completions", &[], ASK);
    assert_eq!(status, 502, "{body}");
    assert!(body.contains("could not be reached"), "{body}");
    let (code, said) = rec.finish(&[]);
    assert_eq!(code, 0, "{said}");
    let (code, printed) = refused.finish(&[]);
    assert_eq!(code, 0, "{printed}");
    assert!(
        printed.contains("recorded s/refused: 1 request(s) (failed: upstream-unreachable)"),
        "{printed}"
    );
    let failed = trace_text(&env, "out/s/fail.trace.ndjson.zst");
    assert!(failed.contains(r#""code":"upstream-error""#), "{failed}");
    assert!(failed.contains("500 Internal Server Error"), "{failed}");
    assert!(
        failed.contains("key [redacted]") && !failed.contains("ECHOED"),
        "{failed}"
    );
    // A failed request is a request, as everywhere: one inference (`finish: "error"`, nothing
    // answered), then the error, both with the conversation's hash.
    let inference = failed
        .lines()
        .find(|l| l.contains(r#""kind":"inference""#))
        .unwrap_or_else(|| panic!("{failed}"));
    assert!(
        inference.contains(r#""output":{},"finish":"error""#),
        "{failed}"
    );
    let input_h = &inference[inference.find(r#""input_h":"#).unwrap()..][..76];
    let error = failed.lines().find(|l| l.contains(r#""kind":"error""#));
    assert!(error.is_some_and(|e| e.contains(input_h)), "{failed}");
    assert!(
        said.contains("recorded s/fail: 1 request(s) (failed: upstream-error)"),
        "{said}"
    );
    let refused = trace_text(&env, "out/s/refused.trace.ndjson.zst");
    assert!(
        refused.contains(r#""code":"upstream-unreachable""#),
        "{refused}"
    );
    // `request-count` counts each failed request, as the recorder's line did.
    env.write(
        "out/s/s.scenario.json",
        r#"{"id": "s", "title": "t", "risk": "High", "oracles": [{"type": "request-count", "count": 1}]}"#,
    );
    let check = env.run_with(&["check", "out/s", "--no-cache"], &[("CI", "true")]);
    // The run failed (the harness's `run-completed` says so); `request-count` 1 passed.
    assert!(
        check.stdout.contains("fail run-completed") && !check.stdout.contains("request-count"),
        "{}{}",
        check.stdout,
        check.stderr
    );
}

#[test]
fn a_cut_stream_and_a_client_that_leaves_are_recorded_as_truncated() {
    let env = Env::new();
    let up = fake_upstream();
    let rec = recorder(&env, &up, &[]);
    let streamed = r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let (status, body) = rec.post("/record/s/cut/cut/v1/chat/completions", &[], streamed);
    assert_eq!(status, 200);
    assert!(
        body.contains("lo, wor") && !body.contains("[DONE]"),
        "{body}"
    );
    // The client reads the first piece of a slow stream, then hangs up.
    let url = rec.url.strip_prefix("http://").unwrap().to_owned();
    let mut conn = std::net::TcpStream::connect(&url).unwrap();
    write!(
        conn,
        "POST /record/s/left/slow/v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{streamed}",
        streamed.len()
    )
    .unwrap();
    let mut first = [0u8; 64];
    let n = conn.read(&mut first).unwrap();
    assert!(n > 0);
    drop(conn);
    std::thread::sleep(Duration::from_millis(2000));
    let (code, printed) = rec.finish(&[]);
    assert_eq!(code, 0, "{printed}");
    let cut = trace_text(&env, "out/s/cut.trace.ndjson.zst");
    assert!(cut.contains(r#""code":"stream-truncated""#), "{cut}");
    assert!(
        cut.contains("no final event") && cut.contains("Hello, wor"),
        "{cut}"
    );
    // What arrived is the answer's output, marked truncated.
    assert!(
        cut.contains(r#""output":{"text":"Hello, wor"},"finish":"error","#)
            && cut.contains(r#""truncated":true"#),
        "{cut}"
    );
    let left = trace_text(&env, "out/s/left.trace.ndjson.zst");
    assert!(
        left.contains("the client closed the connection before the answer ended"),
        "{left}"
    );
    assert!(
        left.contains(r#""output":{"text":"one "#)
            && left.contains(r#""finish":"error","#)
            && left.contains(r#""truncated":true"#),
        "{left}"
    );
}

#[test]
fn sigterm_writes_every_open_session_and_a_usage_frame_is_kept() {
    let env = Env::new();
    let up = fake_upstream();
    let rec = recorder(&env, &format!("{up}/ok"), &[]);
    for case in ["a", "b", "c"] {
        let header = ("x-tracereplay-case", format!("s/{case}"));
        let (status, body) = rec.post("/v1/chat/completions", &[(header.0, &header.1)], ASK);
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&body).unwrap()["choices"][0]["message"]["content"],
            "hello"
        );
    }
    let streamed =
        r#"{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[]}"#;
    let header = [("x-tracereplay-case", "s/streamed")];
    let stream_up = recorder(&env, &format!("{up}/stream"), &[]);
    let (status, body) = stream_up.post("/v1/chat/completions", &header, streamed);
    assert_eq!(status, 200, "{body}");
    assert!(body.ends_with("data: [DONE]\n\n"), "{body}");
    assert_eq!(stream_up.finish(&[]).0, 0);
    let text = trace_text(&env, "out/s/streamed.trace.ndjson.zst");
    assert!(
        text.contains(r#""output":{"text":"hello"},"usage":{"input_tokens":9,"output_tokens":2,"cache_read_tokens":4},"finish":"stop""#),
        "{text}"
    );
    let (code, printed) = rec.finish(&[]);
    assert_eq!(code, 0, "{printed}");
    for case in ["a", "b", "c"] {
        let path = format!("out/s/{case}.trace.ndjson.zst");
        assert!(
            printed.contains(&format!(
                "recorded s/{case}: 1 request(s) (completed, end inferred from the final answer) -> {path}"
            )),
            "{printed}"
        );
        let text = trace_text(&env, &path);
        assert!(
            text.contains(r#""usage":{"input_tokens":7,"output_tokens":1}"#),
            "{text}"
        );
        assert!(text.contains(r#""model":"fake-model""#), "{text}");
        // The runtime never said how the run ended, but its last answer was final text: the
        // end is inferred, and the trace says how it was known.
        assert!(
            text.contains(r#""kind":"note","seq":3,"text":"run end inferred by the record server"#)
                && text.contains(r#""kind":"final_answer","seq":4,"text":"hello""#)
                && text.contains(r#""kind":"run_end","seq":5,"status":"completed""#),
            "{text}"
        );
        let verify = env.run(&["verify", &path]);
        assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
    }
}

#[test]
fn sessions_that_made_no_request_or_were_cancelled_are_not_written_and_none_is_written_twice() {
    let env = Env::new();
    let up = fake_upstream();
    let rec = recorder(&env, &format!("{up}/ok"), &["--idle", "0.3"]);
    let (status, body) = rec.post("/record/s/nothing/tracereplay/v1/finish", &[], "");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("no model request was made"), "{body}");
    // Cancelled by the endpoint, and by a `run_end` of `cancelled` before any tool ran.
    assert_eq!(
        rec.post("/record/s/cancelled/v1/chat/completions", &[], ASK)
            .0,
        200
    );
    let (status, body) = rec.post("/record/s/cancelled/tracereplay/v1/cancel", &[], "");
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        rec.post("/record/s/gave-up/v1/chat/completions", &[], ASK)
            .0,
        200
    );
    let end = r#"[{"kind":"run_end","status":"cancelled"}]"#;
    let (status, body) = rec.post("/record/s/gave-up/tracereplay/v1/finish", &[], end);
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("cancelled the run before any tool ran"),
        "{body}"
    );
    // A finished run; a second run of the same case is refused before anything is forwarded;
    // as trials, two runs of one case are two files.
    assert_eq!(
        rec.post("/record/s/once/v1/chat/completions", &[], ASK).0,
        200
    );
    let done =
        r#"[{"kind":"final_answer","text":"hello"},{"kind":"run_end","status":"completed"}]"#;
    assert_eq!(
        rec.post("/record/s/once/tracereplay/v1/finish", &[], done)
            .0,
        200
    );
    let (status, body) = rec.post("/record/s/once/v1/chat/completions", &[], ASK);
    assert_eq!(status, 409, "{body}");
    assert!(
        body.contains("is recorded already: nothing was forwarded"),
        "{body}"
    );
    for trial in ["1", "2"] {
        let h = [("x-tracereplay-trial", trial)];
        assert_eq!(
            rec.post("/record/s/twice/v1/chat/completions", &h, ASK).0,
            200
        );
    }
    // A trial named in the path; one that is no trial id is refused, naming why.
    let (status, body) = rec.post("/record/s/twice/trial/3/v1/chat/completions", &[], ASK);
    assert_eq!(status, 200, "{body}");
    let (status, body) = rec.post("/record/s/twice/trial/a%20b/v1/chat/completions", &[], ASK);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("must be 1-64 characters"), "{body}");
    // Idle sessions are written without being finished.
    std::thread::sleep(Duration::from_millis(1200));
    let (code, printed) = rec.finish(&[]);
    assert_eq!(code, 0, "{printed}");
    let files = files_under(&env.path("out"));
    assert_eq!(
        files,
        [
            "s/once.trace.ndjson.zst",
            "s/twice/1.trace.ndjson.zst",
            "s/twice/2.trace.ndjson.zst",
            "s/twice/3.trace.ndjson.zst"
        ],
        "{printed}"
    );
    let once = trace_text(&env, "out/s/once.trace.ndjson.zst");
    assert!(once.contains(r#""status":"completed""#), "{once}");
    let trial = trace_text(&env, "out/s/twice/2.trace.ndjson.zst");
    assert!(trial.contains(r#""trial":2"#), "{trial}");
    assert!(
        printed.contains("s/cancelled: not recorded: cancelled by the runtime"),
        "{printed}"
    );
}

#[test]
fn a_secret_in_a_tool_result_refuses_the_write_naming_the_session_not_the_secret() {
    let env = Env::new();
    let up = fake_upstream();
    let rec = recorder(&env, &format!("{up}/ok"), &[]);
    let secret = &["ghp", "_", "0123456789abcdefghijABCDEFGHIJ012345"].concat();
    let ask = serde_json::json!({"model": "m", "messages": [
        {"role": "user", "content": "read the config"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": format!("token = {secret}")},
    ]});
    assert_eq!(
        rec.post("/record/s/leaky/v1/chat/completions", &[], &ask.to_string())
            .0,
        200
    );
    let (status, body) = rec.post("/record/s/leaky/tracereplay/v1/finish", &[], "");
    assert_eq!(status, 422, "{body}");
    assert!(
        body.contains("session s/leaky") && body.contains("github-token"),
        "{body}"
    );
    assert!(
        !body.contains(secret.as_str()) && !body.contains(&secret[..4]),
        "{body}"
    );
    let (code, printed) = rec.finish(&[]);
    assert_eq!(code, 1, "{printed}");
    assert!(printed.contains("error: s/leaky: not written"), "{printed}");
    assert!(!printed.contains(&secret[..4]), "{printed}");
    assert!(!env.path("out/s/leaky.trace.ndjson.zst").exists());
}

#[test]
fn an_upstream_in_the_clear_or_with_credentials_in_its_url_is_refused() {
    let env = Env::new();
    let run = |upstream: &str, extra: &[&str]| {
        let mut args = vec!["record", "--upstream", upstream, "--out", "o", "--unkeyed"];
        args.extend_from_slice(extra);
        env.run(&args)
    };
    let clear = run("http://models.example.com", &[]);
    assert_eq!(clear.code, 2, "{}", clear.stderr);
    assert!(
        clear.stderr.contains("--allow-insecure-upstream"),
        "{}",
        clear.stderr
    );
    let with_password = run("https://user:hunter2secret@models.example.com", &[]);
    assert_eq!(with_password.code, 2);
    assert!(
        with_password.stderr.contains("carries credentials"),
        "{}",
        with_password.stderr
    );
    assert!(
        !with_password.stderr.contains("hunter2"),
        "{}",
        with_password.stderr
    );
    let remote = run("https://models.example.com", &["--listen", "0.0.0.0:0"]);
    assert_eq!(remote.code, 2);
    assert!(
        remote.stderr.contains("--allow-remote"),
        "{}",
        remote.stderr
    );
    let unkeyed_missing = env.run(&[
        "record",
        "--upstream",
        "https://models.example.com",
        "--out",
        "o",
    ]);
    assert_eq!(unkeyed_missing.code, 2);
    assert!(
        unkeyed_missing.stderr.contains("TRACEREPLAY_HASH_KEY"),
        "{}",
        unkeyed_missing.stderr
    );
}

#[test]
fn an_upstream_that_falls_silent_times_out_as_the_flag_says() {
    let env = Env::new();
    let up = fake_upstream();
    let rec = recorder(&env, &up, &["--upstream-timeout", "0.3"]);
    let (status, body) = rec.post("/record/s/hung/hang/v1/chat/completions", &[], ASK);
    assert_eq!(status, 504, "{body}");
    assert!(body.contains("upstream_timeout"), "{body}");
    // The stream's upstream falls silent: the client sees the stream cut, not ended.
    let streamed = r#"{"model":"m","stream":true,"messages":[]}"#;
    let url = rec.url.strip_prefix("http://").unwrap().to_owned();
    let mut conn = std::net::TcpStream::connect(&url).unwrap();
    write!(
        conn,
        "POST /record/s/stalled/slow/v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{streamed}",
        streamed.len()
    )
    .unwrap();
    let mut got = Vec::new();
    let _ = conn.read_to_end(&mut got);
    let got = String::from_utf8_lossy(&got);
    assert!(got.contains("one ") && !got.contains("[DONE]"), "{got}");
    assert!(
        !got.ends_with("0\r\n\r\n"),
        "a cut stream never ends cleanly: {got}"
    );
    let (code, printed) = rec.finish(&[]);
    assert_eq!(code, 0, "{printed}");
    let hung = trace_text(&env, "out/s/hung.trace.ndjson.zst");
    assert!(hung.contains(r#""code":"upstream-timeout""#), "{hung}");
    let stalled = trace_text(&env, "out/s/stalled.trace.ndjson.zst");
    assert!(
        stalled.contains(r#""code":"stream-truncated""#),
        "{stalled}"
    );
    assert!(stalled.contains("silent for 0.3 s"), "{stalled}");
}

/// A request whose JSON holds a key twice (`messages` twice: the upstream may read the first,
/// the recording the last) is refused by `record` (nothing forwarded) and by `replay serve`;
/// an ATIF trajectory with `steps` twice is refused by `ingest`.
#[test]
fn a_key_given_twice_is_refused_at_every_door() {
    let env = Env::new();
    let twice = r#"{"model":"m","messages":[{"role":"user","content":"a"}],"messages":[{"role":"user","content":"b"}]}"#;
    let rec = recorder(&env, &fake_upstream(), &[]);
    let (status, body) = rec.post("/record/s/twice/ok/v1/chat/completions", &[], twice);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("duplicate key `messages`"), "{body}");
    let (code, printed) = rec.finish(&[]);
    assert_eq!(code, 0, "{printed}");
    assert!(
        !env.path("out/s/twice.trace.ndjson.zst").exists(),
        "{printed}"
    );
    copy_demo(&env, false);
    let replay = Server::start(&env, &["traces/agent.replay.weather"]);
    let (status, body) = replay.post("/v1/chat/completions", &[], twice);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("duplicate key `messages`"), "{body}");
    replay.finish(&[]);
    let steps = r#"[{"step_id":1,"source":"user","message":"hi"}]"#;
    env.write(
        "twice.json",
        format!(r#"{{"schema_version":"ATIF-v1.8","session_id":"t","agent":{{"name":"a","version":"1"}},"steps":{steps},"steps":{steps}}}"#),
    );
    let out = env.run(&[
        "ingest",
        "--unkeyed",
        "--from",
        "atif",
        "-o",
        "in",
        "twice.json",
    ]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("duplicate key `steps`"),
        "{}",
        out.stderr
    );
}

/// An answer with an empty body (a 502, a 307) that the client has read is recorded before the
/// client sees its end: a `finish` sent right after it never finds the request in flight (9–13 %
/// of such sessions used to say "still in flight … not recorded").
#[test]
fn an_empty_answer_read_by_the_client_is_recorded_before_its_finish() {
    let up = loopback_upstream(|mut out, _| {
        write!(
            out,
            "HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        )
    });
    let env = Env::new();
    let rec = recorder(&env, &up, &[]);
    for i in 0..30 {
        let path = format!("/record/s/e{i}/v1/chat/completions");
        let (status, _) = rec.post(&path, &[], ASK);
        assert_eq!(status, 502);
        let (status, said) = rec.post(&format!("/record/s/e{i}/tracereplay/v1/finish"), &[], "[]");
        assert_eq!(status, 200, "{said}");
    }
    let (code, printed) = rec.finish(&[]);
    assert_eq!(code, 0, "{printed}");
    assert_eq!(
        printed
            .matches("1 request(s) (failed: upstream-error)")
            .count(),
        30,
        "{printed}"
    );
    assert!(!printed.contains("in flight"), "{printed}");
}

/// A head announcing a body larger than the limit (`Content-Length: 2^63`) is answered 413 at
/// once, before a byte of the body is read (it used to get no answer at all).
#[test]
fn an_announced_oversized_body_is_answered_at_once() {
    let env = Env::new();
    let rec = recorder(&env, &fake_upstream(), &[]);
    let url = rec.url.strip_prefix("http://").unwrap().to_owned();
    let mut conn = std::net::TcpStream::connect(&url).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        conn,
        "POST /record/s/big/ok/v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 9223372036854775808\r\n\r\n{{"
    )
    .unwrap();
    let mut answer = [0u8; 64];
    let n = conn.read(&mut answer).unwrap();
    let head = String::from_utf8_lossy(&answer[..n]).into_owned();
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    drop(conn);
    let (code, printed) = rec.finish(&[]);
    assert_eq!(code, 0, "{printed}");
}

/// A runtime cannot hash a user turn itself (it lacks the key): one it reports as text is
/// hashed by the recorder into the `prompt` the format holds, never written raw; other raw
/// prompt-side text is refused with advice that names what `record` takes (not `check`'s flag).
#[test]
fn a_user_turn_reported_as_text_is_hashed_by_the_recorder() {
    let env = Env::new();
    let up = fake_upstream();
    let rec = recorder(&env, &format!("{up}/ok"), &[]);
    assert_eq!(rec.post("/record/s/u/v1/chat/completions", &[], ASK).0, 200);
    let turn = r#"{"kind":"user_message","text":"a private follow-up question"}"#;
    let (status, body) = rec.post("/record/s/u/tracereplay/v1/events", &[], turn);
    assert_eq!(status, 200, "{body}");
    let raw = r#"{"kind":"user_message","prompt":{"h":"b3:00","len":1},"content":"raw words"}"#;
    let (status, body) = rec.post("/record/s/u/tracereplay/v1/events", &[], raw);
    assert_eq!(status, 400, "{body}");
    assert!(
        !body.contains("--allow-raw-prompts") && body.contains("the recorder hashes it"),
        "record has no such flag: {body}"
    );
    let (code, printed) = rec.finish(&[]);
    assert_eq!(code, 0, "{printed}");
    let text = trace_text(&env, "out/s/u.trace.ndjson.zst");
    assert!(!text.contains("private follow-up"), "{text}");
    let hashed = tracereplay::trace::PromptHasher::unkeyed().hash("a private follow-up question");
    assert!(
        text.contains(r#""kind":"user_message","seq":3"#)
            && text.contains(&format!(r#""prompt":{{"h":"{hashed}","len":28}}"#)),
        "{text}"
    );
}

#[test]
fn a_tool_result_sent_before_its_answers_body_ended_is_recorded_with_its_call() {
    // The SDKs stop reading a stream at `[DONE]` and ask again at once, while the answer's
    // body may still be open (and so not yet recorded): the call the answer planned must still
    // be recorded as planned, not as an unknown tool.
    let env = Env::new();
    let up = fake_upstream();
    let rec = recorder(&env, &format!("{up}/lingering"), &[]);
    let _first = streamed_until_done(&rec.url, "/record/s/linger/v1/chat/completions");
    let (status, body) = rec.post("/record/s/linger/v1/chat/completions", &[], HANDED_BACK);
    assert_eq!(status, 200, "{body}");
    let (status, body) = rec.post("/record/s/linger/tracereplay/v1/finish", &[], "");
    assert_eq!(status, 200, "{body}");
    let (code, printed) = rec.finish(&[]);
    assert_eq!(code, 0, "{printed}");
    let trace = trace_text(&env, "out/s/linger.trace.ndjson.zst");
    let call = (trace.lines())
        .find(|l| l.contains(r#""kind":"tool_call""#))
        .unwrap_or_else(|| panic!("{trace}"));
    assert!(
        call.contains(r#""tool":"weather""#) && call.contains(r#""city":"Paris""#),
        "{trace}"
    );
}

/// Asks the weather, streamed, on a connection of its own, and reads the answer up to its
/// `[DONE]` — the client has all it needs, the answer's body may still be open. The connection,
/// to keep open as long as the test needs it.
pub(super) fn streamed_until_done(url: &str, path: &str) -> std::net::TcpStream {
    let ask = r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"weather?"}]}"#;
    let address = url.trim_start_matches("http://").to_owned();
    let mut conn = std::net::TcpStream::connect(&address).unwrap();
    write!(
        conn,
        "POST {path} HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{ask}",
        ask.len()
    )
    .unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("[DONE]") {
        let n = conn.read(&mut buf).unwrap();
        assert!(n > 0, "{}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    conn
}

/// The next request of that conversation: the tool result of the call the answer planned.
pub(super) const HANDED_BACK: &str = r#"{"model":"m","messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_9","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"call_9","content":"sunny"}]}"#;
