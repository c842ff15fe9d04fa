//! Replay, then live: `replay serve --upstream` serves a session's recording up to a point — a
//! request number, the first divergence, or the recording's end — then forwards the rest to a
//! loopback upstream and records its answers as `record` does, in the same run, with a `note`
//! saying where it went live. The recording (two identical requests answered `answer 1` and
//! `answer 2`) is made with `record`; the live upstream counts from `answer 1` again.

use super::record_faults::fake_upstream;
use super::replay::Server;
use super::replay_divergence::{ask, content, recorded_twice};
use crate::util::*;

/// Serves `out/` going live to a fresh counting upstream with `flags`, asks `asks` in turn, and
/// returns the answers, the server's report and the recorded trace.
fn live(flags: &[&str], asks: &[String]) -> (Vec<String>, i32, String, String) {
    let env = Env::new();
    recorded_twice(&env);
    let up = format!("{}/count", fake_upstream());
    let mut args = vec![
        "out/",
        "--record",
        "replayed",
        "--upstream",
        &up,
        "--exit-when-finished",
    ];
    args.extend_from_slice(flags);
    let server = Server::start(&env, &args);
    let answers = (asks.iter())
        .map(|a| {
            let (status, body) = server.post("/v1/chat/completions", &[], a);
            assert_eq!(status, 200, "{body}");
            content(&body)
        })
        .collect();
    let (code, rest) = server.finish(&["s/twice"]);
    let trace = env
        .run(&["cat", "replayed/s/twice.trace.ndjson.zst"])
        .stdout;
    (answers, code, rest, trace)
}

#[test]
fn live_from_n_serves_the_recording_before_n_and_the_upstream_from_n() {
    let same = ask("Paris?", "city");
    let (answers, code, rest, trace) =
        live(&["--live-from", "2"], &[same.clone(), same.clone(), same]);
    assert_eq!(answers, ["answer 1", "answer 1", "answer 2"], "{rest}");
    assert_eq!(code, 0, "{rest}");
    assert!(
        rest.contains("went live at request 2: 2 request(s) forwarded to the upstream"),
        "{rest}"
    );
    assert!(
        trace.contains(r#""kind":"note","seq":3,"text":"replay went live at request 2: --live-from 2; from here on the run is the upstream's""#),
        "{trace}"
    );
    // The served prefix and the live suffix are one run: three inferences, the live ones timed.
    assert_eq!(trace.matches(r#""kind":"inference""#).count(), 3, "{trace}");
    assert_eq!(trace.matches(r#""latency_ms""#).count(), 2, "{trace}");
    assert_eq!(trace.matches(r#""ts_ms""#).count(), 2, "{trace}");
}

#[test]
fn the_end_of_the_recording_and_a_divergence_go_live_when_asked() {
    let same = ask("Paris?", "city");
    let (answers, code, rest, trace) = live(&[], &[same.clone(), same.clone(), same.clone()]);
    assert_eq!(answers, ["answer 1", "answer 2", "answer 1"], "{rest}");
    assert_eq!(code, 0, "{rest}");
    assert!(
        trace
            .contains("replay went live at request 3: the recording's 2 responses were all served"),
        "{trace}"
    );
    assert!(!trace.contains("replay exhausted"), "{trace}");

    let other = ask("Lyon?", "city");
    let (answers, code, rest, trace) =
        live(&["--live-on-divergence"], &[same.clone(), other, same]);
    assert_eq!(answers, ["answer 1", "answer 1", "answer 2"], "{rest}");
    assert_eq!(code, 0, "{rest}");
    assert!(
        trace.contains("replay went live at request 2: it diverged (request 2: input_h differs at /messages/1/content"),
        "{trace}"
    );
    assert!(!trace.contains(r#""code":"replay-divergence""#), "{trace}");
}

#[test]
fn an_upstream_in_the_clear_is_refused_and_live_flags_need_an_upstream() {
    let env = Env::new();
    recorded_twice(&env);
    let out = env.run(&[
        "replay",
        "serve",
        "out/",
        "--upstream",
        "http://models.example.com",
    ]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("--allow-insecure-upstream"),
        "{}",
        out.stderr
    );
    let out = env.run(&["replay", "serve", "out/", "--live-from", "2"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("--upstream"), "{}", out.stderr);
}

/// The five-line agent of the recording docs' replay-then-live example, run as written against
/// the docs' `replay serve` line (its upstream a loopback model that counts): the recording's
/// first inference, a note, then the model's answer, in one run.
#[test]
fn the_recording_docs_replay_then_live_example_runs_as_written() {
    let (line, example) = recording_docs_example("## Same start, then live");
    let args: Vec<String> = (line.split_whitespace().skip(3))
        .map(|a| match a {
            a if a.starts_with("https:") => format!("{}/count", fake_upstream()),
            a => a.to_owned(),
        })
        .collect();
    assert!(line.starts_with("tracereplay replay serve "), "{line}");
    let env = Env::new();
    copy_demo(&env, false);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Server::start(&env, &args);
    let [openai, _] = super::record::key_vars();
    let vars = [
        ("REPLAY", server.url.as_str()),
        (&openai, "replay-needs-no-key"),
    ];
    let python = super::record::python();
    let what = "the replay-then-live example";
    run_python(
        &python,
        &example,
        env.root(),
        &vars,
        &["OPENAI_BASE_URL"],
        what,
    );
    let (code, said) = server.finish(&[]);
    assert_eq!(code, 0, "{said}");
    let trace = (env.run(&["cat", "relived/agent.replay.weather/paris.trace.ndjson.zst"])).stdout;
    let kinds: Vec<String> = (trace.lines())
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["kind"].to_string())
        .collect();
    assert_eq!(
        kinds[1..5],
        [
            r#""user_message""#,
            r#""inference""#,
            r#""tool_call""#,
            r#""tool_result""#
        ]
        .map(str::to_owned),
        "{trace}"
    );
    assert!(
        trace.contains("replay went live at request 2: --live-from 2"),
        "{trace}"
    );
    // The live model's answer ends the loop.
    assert!(trace.contains(r#""text":"answer 1""#), "{trace}");
}

/// A live exchange still in flight when the runtime reports the run's end (the client gave up
/// on a slow upstream, then finished) is recorded as the request it was — a failed inference,
/// `stream-truncated` — and the run fails closed: never written as completed.
#[test]
fn a_live_request_in_flight_at_finish_is_recorded_and_fails_the_run_closed() {
    let env = Env::new();
    recorded_twice(&env);
    let up = format!("{}/slow", fake_upstream());
    let args = [
        "out/",
        "--record",
        "replayed",
        "--upstream",
        &up,
        "--live-from",
        "1",
    ];
    let server = Server::start(&env, &args);
    // The client sends the live request and gives up after its first piece.
    let url = server.url.strip_prefix("http://").unwrap().to_owned();
    let body = ask("Paris?", "city");
    let mut conn = std::net::TcpStream::connect(&url).unwrap();
    use std::io::{Read, Write};
    write!(
        conn,
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut first = [0u8; 64];
    assert!(conn.read(&mut first).unwrap() > 0);
    // Then reports the run completed, while the answer is still coming.
    let done = r#"[{"kind":"run_end","status":"completed"}]"#;
    let (status, said) = server.post(
        "/tracereplay/v1/finish",
        &[("x-tracereplay-case", "s/twice")],
        done,
    );
    assert_eq!(status, 200, "{said}");
    drop(conn);
    let (code, rest) = server.finish(&[]);
    assert_eq!(code, 0, "{rest}");
    let trace = env
        .run(&["cat", "replayed/s/twice.trace.ndjson.zst"])
        .stdout;
    assert!(
        trace.contains(r#""finish":"error""#) && trace.contains(r#""code":"stream-truncated""#),
        "{trace}"
    );
    assert!(trace.contains("still in flight"), "{trace}");
    assert!(
        trace.contains(r#""kind":"run_end""#) && trace.contains(r#""status":"failed""#),
        "{trace}"
    );
    assert!(!trace.contains(r#""status":"completed""#), "{trace}");
}

/// A live answer's client reads `[DONE]` and hands the tool result back at once, while the
/// answer's body is still open (so not recorded yet): as under `record`, the call is recorded
/// as the answer planned it, not as an unknown tool.
#[test]
fn a_tool_result_sent_before_a_live_answers_body_ended_is_recorded_with_its_call() {
    let env = Env::new();
    recorded_twice(&env);
    let up = format!("{}/lingering", fake_upstream());
    let args = [
        "out/",
        "--record",
        "replayed",
        "--upstream",
        &up,
        "--live-from",
        "1",
    ];
    let server = Server::start(&env, &args);
    let first = crate::record_faults::streamed_until_done(&server.url, "/v1/chat/completions");
    let again = crate::record_faults::HANDED_BACK;
    let (status, body) = server.post("/v1/chat/completions", &[], again);
    assert_eq!(status, 200, "{body}");
    let done = r#"[{"kind":"run_end","status":"completed"}]"#;
    let (status, said) = server.post("/tracereplay/v1/finish", &[], done);
    assert_eq!(status, 200, "{said}");
    drop(first);
    let (code, rest) = server.finish(&[]);
    assert_eq!(code, 0, "{rest}");
    let trace = env
        .run(&["cat", "replayed/s/twice.trace.ndjson.zst"])
        .stdout;
    let call = (trace.lines())
        .find(|l| l.contains(r#""kind":"tool_call""#))
        .unwrap_or_else(|| panic!("{trace}"));
    assert!(
        call.contains(r#""tool":"weather""#) && call.contains(r#""city":"Paris""#),
        "{trace}"
    );
}
