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
        trace.contains(r#""kind":"note","seq":2,"text":"replay went live at request 2: --live-from 2; from here on the run is the upstream's""#),
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
