//! `replay serve`: the binary serving recorded model outputs over HTTP, driven with a real HTTP
//! client (ureq).

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};

use crate::util::*;

/// A `replay serve` process (also driven by the Python SDK tests, `replay_python.rs`).
pub(super) struct Server {
    child: Child,
    pub(super) url: String,
    stdout: BufReader<std::process::ChildStdout>,
    stderr: Option<std::process::ChildStderr>,
    exits: bool,
}

impl Server {
    pub(super) fn start(env: &Env, args: &[&str]) -> Server {
        Server::start_with(env, args, &[])
    }

    pub(super) fn start_with(env: &Env, args: &[&str], vars: &[(&str, &str)]) -> Server {
        let mut full = vec!["replay", "serve"];
        full.extend_from_slice(args);
        Server::spawn(env, &full, vars)
    }

    /// Starts `tracereplay ARGS` (a server that prints `listening on URL` first), with CI set.
    pub(super) fn spawn(env: &Env, full: &[&str], vars: &[(&str, &str)]) -> Server {
        let args = full;
        let full = full.to_vec();
        let mut vars = vars.to_vec();
        vars.push(("CI", "true"));
        let mut child = env
            .command(&full, &vars)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut stderr = child.stderr.take();
        let exits = args.iter().any(|a| a.starts_with("--exit-when"));
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let url = match line.trim().strip_prefix("listening on ") {
            Some(url) => url.to_owned(),
            None => {
                let mut logs = String::new();
                if let Some(e) = stderr.as_mut() {
                    let _ = std::io::Read::read_to_string(e, &mut logs);
                }
                panic!("first line: {line:?}; stderr: {logs}")
            }
        };
        Server {
            child,
            url,
            stdout,
            stderr,
            exits,
        }
    }

    /// POSTs `body` to `path`; returns the status and the body text.
    pub(super) fn post(&self, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let mut req = agent
            .post(&format!("{}{path}", self.url))
            .header("content-type", "application/json");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let mut resp = req.send(body).unwrap();
        let status = resp.status().as_u16();
        (status, resp.body_mut().read_to_string().unwrap())
    }

    /// GETs `path`; returns the status and the body text.
    pub(super) fn get(&self, path: &str) -> (u16, String) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let mut resp = agent.get(&format!("{}{path}", self.url)).call().unwrap();
        let status = resp.status().as_u16();
        (status, resp.body_mut().read_to_string().unwrap())
    }

    /// Finishes every named session and waits for the process; returns its exit code and the
    /// lines it printed after `listening on`.
    pub(super) fn finish(mut self, sessions: &[&str]) -> (i32, String) {
        for s in sessions {
            let (status, _) =
                self.post("/tracereplay/v1/finish", &[("x-tracereplay-case", s)], "{}");
            assert_eq!(status, 200);
        }
        if !self.exits {
            // Stopped as SIGTERM stops it: it records every session, then exits.
            let _ = rustix::process::kill_process(
                rustix::process::Pid::from_child(&self.child),
                rustix::process::Signal::TERM,
            );
        }
        let status = self.child.wait().unwrap();
        let code = status.code().unwrap_or(-1);
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.stdout, &mut rest).unwrap();
        let mut logs = String::new();
        if let Some(mut e) = self.stderr.take() {
            std::io::Read::read_to_string(&mut e, &mut logs).unwrap();
        }
        (code, rest + &logs)
    }
}

impl Server {
    /// The most memory the server's process has held so far (its peak resident set, `VmHWM`),
    /// in bytes.
    pub(super) fn peak_rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
        let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        kb * 1024
    }

    /// Waits for a server that stops by itself; its exit code and everything it printed.
    pub(super) fn child_wait(mut self) -> (i32, String) {
        let code = self.child.wait().unwrap().code().unwrap_or(-1);
        let mut all = String::new();
        std::io::Read::read_to_string(&mut self.stdout, &mut all).unwrap();
        if let Some(mut e) = self.stderr.take() {
            std::io::Read::read_to_string(&mut e, &mut all).unwrap();
        }
        (code, all)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(super) const ON_TARGET: &str = "traces/agent.migrated.checks/on-target.trace.ndjson.zst";

fn json_of(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn serves_the_recorded_responses_in_order_then_says_it_is_exhausted() {
    let env = Env::new();
    copy_demo(&env, false);
    let server = Server::start(&env, &[ON_TARGET, "--exit-when-finished"]);
    let ask = || {
        server.post(
            "/v1/chat/completions",
            &[],
            r#"{"model":"whatever","messages":[{"role":"user","content":"anything"}]}"#,
        )
    };
    let (status, first) = ask();
    assert_eq!(status, 200, "{first}");
    let first = json_of(&first);
    assert_eq!(first["choices"][0]["finish_reason"], "tool_calls");
    let call = &first["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(
        (call["id"].as_str(), call["function"]["name"].as_str()),
        (Some("c1"), Some("search_flights"))
    );
    assert_eq!(
        json_of(call["function"]["arguments"].as_str().unwrap()),
        serde_json::json!({"to": "PAR", "day": "Friday"})
    );
    assert_eq!(first["usage"]["prompt_tokens"], 300);
    assert_eq!(first["model"], "demo-model");
    let second = json_of(&ask().1);
    assert_eq!(
        second["choices"][0]["message"]["content"],
        "There are two flights to Paris on Friday."
    );
    // The third response plans two calls at once: one message, as recorded.
    let third = json_of(&ask().1);
    assert_eq!(
        third["choices"][0]["message"]["tool_calls"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(ask().0, 200);
    let (status, exhausted) = ask();
    assert_eq!(status, 410);
    assert_eq!(
        json_of(&exhausted)["error"]["message"],
        "replay exhausted: 4 of 4 recorded model responses served"
    );
    let (code, rest) = server.finish(&["agent.migrated.checks/on-target"]);
    assert_eq!(code, 1, "a session asked past its end is diverged: {rest}");
    assert!(rest.contains("agent.migrated.checks/on-target: 4 of 4 responses served, 1 request(s) past the end (diverged)"), "{rest}");
}

/// Reassembles a streamed chat completion into the non-streamed message.
fn assemble(sse: &str) -> (serde_json::Value, String) {
    let mut content = String::new();
    let mut calls: Vec<serde_json::Value> = Vec::new();
    let mut finish = String::new();
    let mut done = false;
    for line in sse.lines().filter_map(|l| l.strip_prefix("data: ")) {
        assert!(!done, "nothing after [DONE]");
        if line == "[DONE]" {
            done = true;
            continue;
        }
        let chunk = json_of(line);
        let Some(choice) = chunk["choices"].get(0) else {
            continue;
        };
        if let Some(t) = choice["delta"]["content"].as_str() {
            content.push_str(t);
        }
        for tc in choice["delta"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let i = tc["index"].as_u64().unwrap() as usize;
            if calls.len() <= i {
                calls.push(serde_json::json!({"id": tc["id"], "type": "function", "function": {"name": tc["function"]["name"], "arguments": ""}}));
            }
            let args = calls[i]["function"]["arguments"]
                .as_str()
                .unwrap()
                .to_owned()
                + tc["function"]["arguments"].as_str().unwrap_or("");
            calls[i]["function"]["arguments"] = serde_json::json!(args);
        }
        if let Some(f) = choice["finish_reason"].as_str() {
            finish = f.to_owned();
        }
    }
    assert!(done, "the stream ends with [DONE]");
    let mut message = serde_json::json!({"content": if content.is_empty() { serde_json::Value::Null } else { serde_json::json!(content) }});
    if !calls.is_empty() {
        message["tool_calls"] = serde_json::json!(calls);
    }
    (message, finish)
}

#[test]
fn a_streamed_response_carries_the_same_content_as_a_plain_one() {
    let env = Env::new();
    copy_demo(&env, false);
    let plain = Server::start(&env, &[ON_TARGET]);
    let streamed = Server::start(&env, &[ON_TARGET]);
    for _ in 0..4 {
        let (_, p) = plain.post("/v1/chat/completions", &[], "{}");
        let (status, s) = streamed.post("/v1/chat/completions", &[], r#"{"stream":true}"#);
        assert_eq!(status, 200);
        let p = json_of(&p);
        let (message, finish) = assemble(&s);
        assert_eq!(
            message["content"], p["choices"][0]["message"]["content"],
            "{s}"
        );
        assert_eq!(
            message.get("tool_calls"),
            p["choices"][0]["message"].get("tool_calls"),
            "{s}"
        );
        assert_eq!(finish, p["choices"][0]["finish_reason"].as_str().unwrap());
    }
}

#[test]
fn the_responses_endpoint_and_byte_stable_bodies() {
    let env = Env::new();
    copy_demo(&env, false);
    let bodies = |server: &Server| -> Vec<String> {
        (0..4)
            .map(|_| server.post("/v1/responses", &[], r#"{"input":"x"}"#).1)
            .collect()
    };
    let a = bodies(&Server::start(&env, &[ON_TARGET]));
    let b = bodies(&Server::start(&env, &[ON_TARGET]));
    assert_eq!(
        a, b,
        "the same trace served twice gives identical bodies, ids included"
    );
    let first = json_of(&a[0]);
    assert_eq!(first["object"], "response");
    assert_eq!(first["output"][0]["type"], "function_call");
    assert_eq!(
        (
            first["output"][0]["call_id"].as_str(),
            first["output"][0]["name"].as_str()
        ),
        (Some("c1"), Some("search_flights"))
    );
    let second = json_of(&a[1]);
    assert_eq!(
        second["output"][0]["content"][0]["text"],
        "There are two flights to Paris on Friday."
    );
    assert_eq!(second["usage"]["input_tokens"], 400);
}

#[test]
fn sessions_are_independent_and_run_concurrently() {
    let env = Env::new();
    copy_demo(&env, false);
    let server = Server::start(&env, &["traces/", "--record", "recorded"]);
    // Unnamed requests are refused when several recordings are served.
    let (status, body) = server.post("/v1/chat/completions", &[], "{}");
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("name one with the path prefix"), "{body}");
    let (status, _) = server.post("/replay/no.such/case/v1/chat/completions", &[], "{}");
    assert_eq!(status, 404);
    std::thread::scope(|s| {
        let on = s.spawn(|| {
            (0..4)
                .map(|_| {
                    json_of(
                        &server
                            .post(
                                "/replay/agent.migrated.checks/on-target/v1/chat/completions",
                                &[],
                                "{}",
                            )
                            .1,
                    )
                })
                .collect::<Vec<_>>()
        });
        let off = s.spawn(|| {
            (0..5)
                .map(|_| {
                    json_of(
                        &server
                            .post(
                                "/v1/chat/completions",
                                &[("x-tracereplay-case", "agent.migrated.checks/off-target")],
                                "{}",
                            )
                            .1,
                    )
                })
                .collect::<Vec<_>>()
        });
        let (on, off) = (on.join().unwrap(), off.join().unwrap());
        assert_eq!(
            on[3]["choices"][0]["message"]["content"],
            "Your flight to Paris is booked and the receipt is on its way."
        );
        assert_eq!(
            off[1]["choices"][0]["message"]["content"],
            "I found something."
        );
        assert_eq!(
            off[4]["choices"][0]["message"]["content"],
            "Something went wrong; I cancelled it."
        );
    });
    // Each session records its own run (the server is stopped, as a signal would stop it).
    let (_, closing) = server.finish(&[
        "agent.migrated.checks/on-target",
        "agent.migrated.checks/off-target",
    ]);
    assert!(
        closing.contains("recorded recorded/agent.migrated.checks/on-target.trace.ndjson.zst"),
        "{closing}"
    );
    for (case, inferences) in [("on-target", 4), ("off-target", 5)] {
        let text = env
            .run(&[
                "cat",
                &format!("recorded/agent.migrated.checks/{case}.trace.ndjson.zst"),
            ])
            .stdout;
        assert_eq!(
            text.matches("\"kind\":\"inference\"").count(),
            inferences,
            "{case}: {text}"
        );
        assert!(text.contains(&format!("\"case\":\"{case}\"")), "{text}");
    }
}

#[test]
fn bounded_bodies_loopback_by_default_and_unreadable_traces_named() {
    let env = Env::new();
    copy_demo(&env, false);
    let server = Server::start(&env, &[ON_TARGET]);
    // A body announced larger than the limit is refused before it is read.
    let addr = server.url.split("//").nth(1).unwrap().to_owned();
    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{{",
        17 << 20
    );
    std::io::Write::write_all(&mut stream, head.as_bytes()).unwrap();
    let mut status_line = String::new();
    BufReader::new(&stream).read_line(&mut status_line).unwrap();
    assert!(status_line.starts_with("HTTP/1.1 413"), "{status_line}");
    // Nothing was served by the refused request.
    let (_, first) = server.post("/v1/chat/completions", &[], "{}");
    assert!(
        first.contains("chatcmpl-replay-agent.migrated.checks-on-target-1"),
        "{first}"
    );
    let out = env.run(&[
        "replay",
        "serve",
        "--unkeyed",
        ON_TARGET,
        "--listen",
        "0.0.0.0:0",
    ]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("not a loopback address") && out.stderr.contains("--allow-remote"),
        "{}",
        out.stderr
    );
    env.write("traces/broken/x.trace.ndjson", "{\"kind\":\"header\"");
    let out = env.run(&["replay", "serve", "--unkeyed", "traces/broken"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("traces/broken/x.trace.ndjson"),
        "{}",
        out.stderr
    );
}

/// A small tool-calling agent loop, as a runtime would run it: ask the model, run the tools it
/// asks for (`weather(city)` answers from `forecast`), hand the results back, until it answers;
/// then report the final answer and the run's end. Returns the message log.
pub(super) fn agent_loop(
    server: &Server,
    session: &str,
    forecast: &str,
    report: bool,
) -> Vec<serde_json::Value> {
    let tools = serde_json::json!([{"type": "function", "function": {"name": "weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]);
    let mut messages = vec![
        serde_json::json!({"role": "system", "content": "You answer weather questions."}),
        serde_json::json!({"role": "user", "content": "What is the weather in Paris?"}),
    ];
    // A session is `scenario/case` (named by header), or a path prefix (`/replay/…`).
    let (prefix, case) = match session.starts_with('/') {
        true => (session, vec![]),
        false => ("", vec![("x-tracereplay-case", session)]),
    };
    loop {
        let body =
            serde_json::json!({"model": "m", "messages": messages, "tools": tools}).to_string();
        let (status, text) = server.post(&format!("{prefix}/v1/chat/completions"), &case, &body);
        if status != 200 {
            messages.push(serde_json::json!({"error": json_of(&text)["error"]["message"]}));
            break;
        }
        let message = json_of(&text)["choices"][0]["message"].clone();
        messages.push(message.clone());
        let calls = message["tool_calls"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if calls.is_empty() {
            if report {
                let events = serde_json::json!([
                    {"kind": "final_answer", "text": message["content"]},
                    {"kind": "run_end", "status": "completed"}
                ]);
                let at = format!("{prefix}/tracereplay/v1/events");
                let (status, body) = server.post(&at, &case, &events.to_string());
                assert_eq!(status, 200, "{body}");
            }
            break;
        }
        for c in calls {
            messages.push(
                serde_json::json!({"role": "tool", "tool_call_id": c["id"], "content": forecast}),
            );
        }
    }
    messages
}

/// The recorded run the loop above makes with the model's answers: the message log as an
/// OpenAI-compatible client keeps it.
pub(super) fn recorded_log() -> serde_json::Value {
    serde_json::json!([
        {"role": "system", "content": "You answer weather questions."},
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 C"},
        {"role": "assistant", "content": "It is sunny in Paris, 21 C."}
    ])
}

pub(super) fn ingested(env: &Env) {
    ingest_log(env, &recorded_log());
}

/// Ingests a message log as the recording `weather/paris` (unkeyed) under `traces/`.
pub(super) fn ingest_log(env: &Env, log: &serde_json::Value) {
    env.write("log.json", log.to_string());
    let out = env.run(&[
        "ingest",
        "--from",
        "openai-messages",
        "--unkeyed",
        "--scenario",
        "weather",
        "--case",
        "paris",
        "-o",
        "traces",
        "log.json",
    ]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
}

#[test]
fn the_same_loop_replays_without_divergence_and_records_the_same_behaviour() {
    let env = Env::new();
    ingested(&env);
    let server = Server::start(
        &env,
        &["traces/", "--record", "replayed", "--exit-when-finished"],
    );
    let log = agent_loop(&server, "weather/paris", "sunny, 21 C", true);
    assert_eq!(log.len(), 5, "{log:?}");
    let (code, rest) = server.finish(&["weather/paris"]);
    assert_eq!(code, 0, "{rest}");
    assert!(
        rest.contains("weather/paris: 2 of 2 responses served"),
        "{rest}"
    );
    assert!(
        rest.contains("recorded replayed/weather/paris.trace.ndjson.zst"),
        "{rest}"
    );
    // The recorded replay is a sealed trace like any other, and behaves as the original did.
    let verify = env.run(&["verify", "replayed/"]);
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
    let diff = env.run(&["diff", "--from", "traces/", "--to", "replayed/"]);
    assert_eq!(diff.code, 0, "{}{}", diff.stdout, diff.stderr);
    assert!(diff.stdout.contains("0 drifted"), "{}", diff.stdout);
    let text = env
        .run(&["cat", "replayed/weather/paris.trace.ndjson.zst"])
        .stdout;
    assert!(text.contains("\"source\":\"replay\""), "{text}");
    assert!(
        !text.contains("What is the weather"),
        "no raw prompt text: {text}"
    );
}

#[test]
fn a_recorded_replay_can_be_a_trial_of_its_case() {
    let env = Env::new();
    ingested(&env);
    for trial in ["0", "1"] {
        let server = Server::start(
            &env,
            &[
                "traces/",
                "--record",
                "replayed",
                "--trial",
                trial,
                "--exit-when-finished",
            ],
        );
        agent_loop(&server, "weather/paris", "sunny, 21 C", true);
        let (code, rest) = server.finish(&["weather/paris"]);
        assert_eq!(code, 0, "{rest}");
        assert!(
            rest.contains(&format!(
                "recorded replayed/weather/paris/{trial}.trace.ndjson.zst"
            )),
            "{rest}"
        );
    }
    let text = env
        .run(&["cat", "replayed/weather/paris/1.trace.ndjson.zst"])
        .stdout;
    assert!(
        text.lines().next().unwrap().contains("\"trial\":1"),
        "{text}"
    );
    // The two recordings are two trials of one case.
    env.write(
        "scenarios/weather.scenario.json",
        r#"{"id":"weather","title":"t","risk":"High","oracles":[{"type":"tool-called","tool":"weather"}]}"#,
    );
    let report = json(&env.run(&[
        "check",
        "replayed/",
        "--scenarios",
        "scenarios/",
        "--format",
        "json",
    ]));
    let cases = report["cases"].as_array().expect("a case of two trials");
    assert_eq!(
        (cases[0]["trials"].as_u64(), cases[0]["passed"].as_u64()),
        (Some(2), Some(2))
    );
    // A trial id must be one.
    let bad = env.run(&[
        "replay", "serve", "traces/", "--record", "r", "--trial", "a b",
    ]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    // The trial set served: each trial is a session of its own, named by path (or by the
    // X-Tracereplay-Trial header), and recorded as the trial it replays.
    let server = Server::start(&env, &["replayed/", "--record", "again"]);
    let (status, body) = server.post("/v1/chat/completions", &[], "{}");
    assert_eq!(status, 400, "two sessions, none named: {body}");
    assert!(body.contains("/trial/<trial>/"), "{body}");
    let (status, body) = server.post(
        "/v1/chat/completions",
        &[("x-tracereplay-case", "weather/paris")],
        "{}",
    );
    assert_eq!(status, 404, "the case alone names no trial: {body}");
    assert!(
        body.contains("served: weather/paris trial 0, weather/paris trial 1"),
        "{body}"
    );
    agent_loop(
        &server,
        "/replay/weather/paris/trial/0",
        "sunny, 21 C",
        true,
    );
    let (status, body) = server.post(
        "/tracereplay/v1/finish",
        &[
            ("x-tracereplay-case", "weather/paris"),
            ("x-tracereplay-trial", "0"),
        ],
        "{}",
    );
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains(r#""session":"weather/paris trial 0""#),
        "{body}"
    );
    agent_loop(
        &server,
        "/replay/weather/paris/trial/1",
        "sunny, 21 C",
        true,
    );
    let (status, body) = server.post(
        "/replay/weather/paris/trial/1/tracereplay/v1/finish",
        &[],
        "{}",
    );
    assert_eq!(status, 200, "{body}");
    let (code, rest) = server.finish(&[]);
    assert_eq!(code, 0, "{rest}");
    for trial in ["0", "1"] {
        let text = env
            .run(&[
                "cat",
                &format!("again/weather/paris/{trial}.trace.ndjson.zst"),
            ])
            .stdout;
        let header = text.lines().next().unwrap();
        assert!(header.contains(&format!("\"trial\":{trial}")), "{header}");
    }
}

#[test]
fn a_tool_returning_something_else_diverges_at_the_next_request() {
    let env = Env::new();
    ingested(&env);
    let server = Server::start(
        &env,
        &["traces/", "--record", "replayed", "--exit-when-finished"],
    );
    agent_loop(&server, "weather/paris", "rain, 12 C", true);
    let (code, rest) = server.finish(&["weather/paris"]);
    assert_eq!(code, 1, "{rest}");
    assert!(
        rest.contains("divergence: request 2: input_h differs: recorded b3:"),
        "{rest}"
    );
    // The recording shows it: the changed tool result, and the divergence as an error event.
    let text = env
        .run(&["cat", "replayed/weather/paris.trace.ndjson.zst"])
        .stdout;
    assert!(
        text.contains("rain, 12 C") && text.contains("replay-divergence"),
        "{text}"
    );
    // With --strict, the diverging request gets an error instead of the recorded output, and
    // the run ends failed.
    let strict = Server::start(
        &env,
        &[
            "traces/",
            "--record",
            "strict",
            "--strict",
            "--exit-when-finished",
        ],
    );
    let log = agent_loop(&strict, "weather/paris", "rain, 12 C", false);
    let last = log.last().unwrap();
    assert!(
        last["error"]
            .as_str()
            .unwrap()
            .starts_with("replay diverged (--strict): request 2: input_h differs"),
        "{last}"
    );
    let (code, _) = strict.finish(&["weather/paris"]);
    assert_eq!(code, 1);
    let text = env
        .run(&["cat", "strict/weather/paris.trace.ndjson.zst"])
        .stdout;
    assert!(text.contains("\"status\":\"failed\""), "{text}");
    let diff = env.run(&["diff", "--from", "traces/", "--to", "strict/"]);
    assert_eq!(diff.code, 1, "{}", diff.stdout);
    assert!(diff.stdout.contains("status-changed"), "{}", diff.stdout);
}

#[test]
fn reported_events_are_checked_like_trace_lines() {
    let env = Env::new();
    ingested(&env);
    let server = Server::start(&env, &["traces/"]);
    let case = [("x-tracereplay-case", "weather/paris")];
    let (status, body) = server.post(
        "/tracereplay/v1/events",
        &case,
        r#"{"kind":"user_message","text":"raw prompt text"}"#,
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("event 0 refused"), "{body}");
    let (status, body) = server.post("/tracereplay/v1/events", &case, r#"{"kind":"inference"}"#);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("recorded by the server"), "{body}");
    let (status, _) = server.post(
        "/tracereplay/v1/events",
        &case,
        r#"{"kind":"note","text":"fine"}"#,
    );
    assert_eq!(status, 200);
}

#[test]
fn raw_prompts_reach_only_the_opted_in_sidecar_and_exhaustion_ends_the_server() {
    let env = Env::new();
    ingested(&env);
    let server = Server::start(
        &env,
        &[
            "traces/",
            "--record",
            "replayed",
            "--exit-when-exhausted",
            "--dev-raw-prompts",
        ],
    );
    agent_loop(&server, "weather/paris", "sunny, 21 C", true);
    // The loop reported the run's end after the last recorded response: the server stops by
    // itself and records the run.
    let status = server.child_wait();
    assert_eq!(status.0, 0, "{}", status.1);
    assert!(
        !status.1.contains("What is the weather"),
        "no raw prompt text in the server's output: {}",
        status.1
    );
    let trace = env
        .run(&["cat", "replayed/weather/paris.trace.ndjson.zst"])
        .stdout;
    assert!(!trace.contains("What is the weather"), "{trace}");
    let sidecar = String::from_utf8(env.read("replayed/weather/paris.prompts.ndjson")).unwrap();
    assert!(
        sidecar.contains("What is the weather in Paris?"),
        "{sidecar}"
    );
    // Without the opt-in there is no sidecar.
    let plain = Server::start(
        &env,
        &["traces/", "--record", "plain", "--exit-when-exhausted"],
    );
    agent_loop(&plain, "weather/paris", "sunny, 21 C", true);
    assert_eq!(plain.child_wait().0, 0);
    assert!(!env.path("plain/weather/paris.prompts.ndjson").exists());
}

#[test]
fn each_session_hashes_as_its_recording_was_hashed() {
    let env = Env::new();
    let key = ("TRACEREPLAY_HASH_KEY", "replay-test-key");
    env.write("log.json", recorded_log().to_string());
    let out = env.run_with(
        &[
            "ingest",
            "--from",
            "openai-messages",
            "--scenario",
            "weather",
            "--case",
            "paris",
            "-o",
            "traces",
            "log.json",
        ],
        &[key],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    // A keyed recording needs its key: without it the server refuses to start.
    let out = env.run(&["replay", "serve", "traces/"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("recorded with keyed prompt hashes")
            && out.stderr.contains("TRACEREPLAY_HASH_KEY"),
        "{}",
        out.stderr
    );
    let out = env.run_with(
        &["replay", "serve", "traces/"],
        &[("TRACEREPLAY_HASH_KEY", "another-key")],
    );
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("was hashed with key"), "{}", out.stderr);
    // With it, the same loop replays without a divergence.
    let server = Server::start_with(
        &env,
        &["traces/", "--record", "replayed", "--exit-when-finished"],
        &[key],
    );
    agent_loop(&server, "weather/paris", "sunny, 21 C", true);
    let (code, rest) = server.finish(&["weather/paris"]);
    assert_eq!(code, 0, "{rest}");
    assert!(!rest.contains("divergence"), "{rest}");
    let text = env
        .run(&["cat", "replayed/weather/paris.trace.ndjson.zst"])
        .stdout;
    assert!(
        text.contains("\"hash\":\"blake3-keyed\"") && text.contains("b3k:"),
        "{text}"
    );
}

#[test]
fn a_trial_spelt_in_other_letter_case_never_replaces_a_recording() {
    let env = Env::new();
    ingested(&env);
    let start = |trial: &str| {
        let args = [
            "traces/",
            "--record",
            "replayed",
            "--trial",
            trial,
            "--exit-when-finished",
        ];
        let server = Server::start(&env, &args);
        agent_loop(&server, "weather/paris", "sunny, 21 C", true);
        server
    };
    let (code, rest) = start("A").finish(&["weather/paris"]);
    assert_eq!(code, 0, "{rest}");
    let file = "replayed/weather/paris/a.trace.ndjson.zst";
    let first = env.read(file);
    // Trial `a` shares trial `A`'s file name: its finish is refused, and says why.
    let server = start("a");
    let (status, body) = server.post(
        "/tracereplay/v1/finish",
        &[("x-tracereplay-case", "weather/paris")],
        "{}",
    );
    assert_eq!(status, 500, "{body}");
    assert!(body.contains("differs only in letter case"), "{body}");
    drop(server);
    assert_eq!(env.read(file), first, "the first recording was replaced");
    // The same trial recorded again replaces it, as before.
    let (code, rest) = start("A").finish(&["weather/paris"]);
    assert_eq!(code, 0, "{rest}");
}

#[test]
fn sighup_records_the_open_session_before_the_server_stops() {
    use rustix::process::Signal;
    // SIGQUIT and SIGUSR1 used to end it with the session unwritten.
    for (signal, name) in [
        (Signal::HUP, "SIGHUP"),
        (Signal::QUIT, "SIGQUIT"),
        (Signal::USR1, "SIGUSR1"),
    ] {
        let env = Env::new();
        ingested(&env);
        let mut server = Server::start(&env, &["traces/", "--record", "replayed"]);
        agent_loop(&server, "weather/paris", "sunny, 21 C", true);
        // The terminal closes (or another signal comes): the session was never finished.
        let _ =
            rustix::process::kill_process(rustix::process::Pid::from_child(&server.child), signal);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while server.child.try_wait().unwrap().is_none() {
            assert!(
                std::time::Instant::now() < deadline,
                "the server did not stop on {name}"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(
            env.path("replayed/weather/paris.trace.ndjson.zst")
                .is_file(),
            "{name}: the open session was lost"
        );
    }
}

/// `replay serve DIR --record DIR` would write a diverged replay over the recording it serves:
/// refused before anything is served, the recording left as it was.
#[test]
fn recording_over_the_recording_being_served_is_refused() {
    let env = Env::new();
    copy_demo(&env, false);
    let served = "traces/agent.replay.weather/paris.trace.ndjson.zst";
    let before = env.read(served);
    let out = env.run(&[
        "replay",
        "serve",
        "traces/agent.replay.weather",
        "--record",
        "traces",
    ]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("over the recording being served"),
        "{}",
        out.stderr
    );
    assert_eq!(env.read(served), before);
}
