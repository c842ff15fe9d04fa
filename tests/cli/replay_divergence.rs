//! Replay that tells you why it missed: a request changed in one nested field is named by the
//! JSON pointer of that field in the canonical request, with both values' hashes; identical
//! requests are served in their recorded order; `--strict` fails a session that ends with
//! recorded responses left unserved. The recordings are made with `record`.

use super::record_faults::{fake_upstream, recorder};
use super::replay::Server;
use crate::util::*;

pub(super) fn ask(content: &str, required: &str) -> String {
    serde_json::json!({"model": "m", "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": content},
    ], "tools": [{"type": "function", "function": {"name": "weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": [required]}}}]})
    .to_string()
}

/// Records two identical requests, answered `answer 1` and `answer 2`, as `s/twice`.
pub(super) fn recorded_twice(env: &Env) {
    let up = fake_upstream();
    let rec = recorder(env, &format!("{up}/count"), &[]);
    for _ in 0..2 {
        let (status, body) = rec.post(
            "/record/s/twice/v1/chat/completions",
            &[],
            &ask("Paris?", "city"),
        );
        assert_eq!(status, 200, "{body}");
    }
    let done =
        r#"[{"kind":"final_answer","text":"answer 2"},{"kind":"run_end","status":"completed"}]"#;
    assert_eq!(
        rec.post("/record/s/twice/tracereplay/v1/finish", &[], done)
            .0,
        200
    );
    assert_eq!(rec.finish(&[]).0, 0);
}

pub(super) fn content(body: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    v["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

#[test]
fn identical_requests_replay_in_their_recorded_order() {
    let env = Env::new();
    recorded_twice(&env);
    let server = Server::start(&env, &["out/", "--exit-when-finished"]);
    let answers: Vec<String> = (0..2)
        .map(|_| {
            content(
                &server
                    .post("/v1/chat/completions", &[], &ask("Paris?", "city"))
                    .1,
            )
        })
        .collect();
    assert_eq!(answers, ["answer 1", "answer 2"]);
    let (code, rest) = server.finish(&["s/twice"]);
    assert_eq!(code, 0, "{rest}");
}

#[test]
fn a_changed_nested_field_is_named_by_its_json_pointer_with_both_hashes() {
    let env = Env::new();
    recorded_twice(&env);
    let strict = Server::start(&env, &["out/", "--strict", "--exit-when-finished"]);
    let (status, body) = strict.post("/v1/chat/completions", &[], &ask("Lyon?", "city"));
    assert_eq!(status, 409, "{body}");
    assert!(
        body.contains(
            "request 1: input_h differs at /messages/1/content (the user message): recorded b3:"
        ),
        "{body}"
    );
    assert!(body.contains(", now b3:"), "{body}");
    let (status, body) = strict.post("/v1/chat/completions", &[], &ask("Paris?", "country"));
    assert_eq!(status, 409, "{body}");
    assert!(
        body.contains("request 1: tool definitions differ at /tools/0/function/parameters/required: recorded b3:"),
        "{body}"
    );
    strict.finish(&["s/twice"]);

    // Without --strict the recorded output is served, and the divergence recorded with the
    // pointer.
    let lenient = Server::start(
        &env,
        &["out/", "--record", "replayed", "--exit-when-finished"],
    );
    let (status, _) = lenient.post("/v1/chat/completions", &[], &ask("Lyon?", "city"));
    assert_eq!(status, 200);
    let (code, rest) = lenient.finish(&["s/twice"]);
    assert_eq!(code, 1, "{rest}");
    assert!(
        rest.contains("divergence: request 1: input_h differs at /messages/1/content"),
        "{rest}"
    );
    let check = env.run(&["cat", "replayed/s/twice.trace.ndjson.zst"]);
    assert!(
        check
            .stdout
            .contains("input_h differs at /messages/1/content"),
        "{}",
        check.stdout
    );
}

#[test]
fn strict_fails_a_session_that_ends_with_recorded_responses_unserved() {
    let env = Env::new();
    recorded_twice(&env);
    let strict = Server::start(&env, &["out/", "--strict", "--exit-when-finished"]);
    let (status, body) = strict.post("/v1/chat/completions", &[], &ask("Paris?", "city"));
    assert_eq!(status, 200, "{body}");
    let (code, rest) = strict.finish(&["s/twice"]);
    assert_eq!(code, 1, "{rest}");
    assert!(
        rest.contains("the session ended with 1 of 2 recorded model responses unserved (--strict)"),
        "{rest}"
    );
    // Without --strict, stopping early is no divergence.
    let lenient = Server::start(&env, &["out/", "--exit-when-finished"]);
    assert_eq!(
        lenient
            .post("/v1/chat/completions", &[], &ask("Paris?", "city"))
            .0,
        200
    );
    assert_eq!(lenient.finish(&["s/twice"]).0, 0);
}

#[test]
fn a_claude_agent_past_the_end_gets_anthropics_error_shape() {
    let env = Env::new();
    recorded_twice(&env);
    let server = Server::start(&env, &["out/", "--exit-when-finished"]);
    let ask = r#"{"model":"claude","max_tokens":10,"system":"Be brief.","messages":[{"role":"user","content":"Paris?"}]}"#;
    for n in 1..=2 {
        let (status, body) = server.post("/v1/messages", &[], ask);
        assert_eq!(status, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["type"], "message");
        assert_eq!(v["content"][0]["text"], format!("answer {n}"), "{body}");
        assert_eq!(v["usage"]["input_tokens"], 7, "{body}");
    }
    let (status, body) = server.post("/v1/messages", &[], ask);
    assert_eq!(status, 410, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["type"], "error", "{body}");
    assert_eq!(v["error"]["type"], "replay_exhausted", "{body}");
    assert_eq!(
        v["error"]["message"],
        "replay exhausted: 2 of 2 recorded model responses served"
    );
    let (code, _) = server.finish(&["s/twice"]);
    assert_eq!(code, 1);
}

/// A changed tool result in a loop driven by the real SDKs is named at its canonical pointer
/// (`/messages/3/content`) and as the SDK sent it: the call it answers, and where the request
/// has it — Anthropic's `/messages/2/content/0/content`, Responses' `/input/2/output` (Chat
/// Completions keeps it where the canonical form does).
#[test]
fn a_changed_tool_result_is_named_by_its_call_and_where_the_sdk_sent_it() {
    use super::record::{SESSION, agent, recorder as record, upstream};
    for (api, sent) in [
        ("chat", "(the tool result of call_1)"),
        (
            "anthropic",
            "(the tool result of call_1; in the request: /messages/2/content/0/content)",
        ),
        (
            "responses",
            "(the tool result of call_1; in the request: /input/2/output)",
        ),
    ] {
        let env = Env::new();
        copy_demo(&env, false);
        let up = upstream(&env);
        let rec = record(&env, &up.url, "recorded", &[]);
        let base = format!("{}/record/{SESSION}", rec.url);
        let (code, out, stderr) = agent(&env, &base, api, "plain", "sunny, 21 C");
        assert_eq!(code, 0, "{api}: {out} {stderr}");
        assert_eq!(rec.finish(&[]).0, 0);
        up.finish(&[]);
        // The same loop, its tool now answering otherwise, replayed strictly.
        let strict = Server::start(&env, &["recorded/", "--strict"]);
        let base = format!("{}/replay/{SESSION}", strict.url);
        let (code, out, _) = agent(&env, &base, api, "plain", "rain, 12 C");
        assert_eq!(code, 3, "{api}: {out}");
        assert_eq!(out["status"], 409, "{api}: {out}");
        let message = out["message"].to_string();
        let want =
            format!("request 2: input_h differs at /messages/3/content {sent}: recorded b3:");
        assert!(message.contains(&want), "{api}: {want}\n{message}");
        let _ = strict.finish(&[]);
    }
}
