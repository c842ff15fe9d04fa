//! `replay serve --chunking`: every way of cutting a streamed answer into writes — one per
//! event, one per line, N-byte pieces that cut through UTF-8 sequences and `data:` lines, one
//! write for all — decodes to the same content in each official SDK, and the run replays with
//! no divergence (the tool call's arguments arrived whole and exact).

use super::record::agent;
use super::replay::{Server, ingest_log};
use crate::util::*;

/// The demo's weather run, with text and arguments outside ASCII.
fn recorded(env: &Env) {
    let log = serde_json::json!([
        {"role": "system", "content": "You answer weather questions."},
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Zürich — 東京\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 C"},
        {"role": "assistant", "content": "Il fait beau à Zürich, 21 °C ☀️ — 晴れ."}
    ]);
    ingest_log(env, &log);
}

fn every_mode_decodes_alike(api: &str) {
    for mode in ["recorded", "whole", "bytes:1", "bytes:7", "coalesce"] {
        let env = Env::new();
        recorded(&env);
        let server = Server::start(
            &env,
            &["traces/", "--chunking", mode, "--exit-when-finished"],
        );
        // The recording is `weather/paris`; the agent's session path names it.
        let base = format!("{}/replay/weather/paris", server.url);
        let (code, out, stderr) = agent(&env, &base, api, "stream", "sunny, 21 C");
        assert_eq!(code, 0, "{api} {mode}: {out} {stderr}");
        assert_eq!(
            out["final"], "Il fait beau à Zürich, 21 °C ☀️ — 晴れ.",
            "{api} {mode}"
        );
        let (code, rest) = server.child_wait();
        assert_eq!(code, 0, "{api} {mode}: {rest}");
        assert!(!rest.contains("divergence"), "{api} {mode}: {rest}");
    }
}

#[test]
fn chat_completions_streams_decode_alike_however_they_are_cut() {
    every_mode_decodes_alike("chat");
}

#[test]
fn responses_streams_decode_alike_however_they_are_cut() {
    every_mode_decodes_alike("responses");
}

#[test]
fn anthropic_streams_decode_alike_however_they_are_cut() {
    every_mode_decodes_alike("anthropic");
}

#[test]
fn a_chunking_that_is_none_is_refused() {
    let env = Env::new();
    recorded(&env);
    let out = env.run(&["replay", "serve", "traces/", "--chunking", "bytes:0"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("is not a chunking"), "{}", out.stderr);
}
