//! The replay server with a real client: the official OpenAI Python SDK, running a small
//! tool-calling agent loop written here, pointed at the server with `base_url`. The SDK comes
//! from `scripts/install-test-deps`, which installs it into `target/test-venv` (or `TRACEREPLAY_PYTHON`
//! names a Python that has it); without it these tests fail and say how to install it.

use std::path::PathBuf;
use std::process::Command;

use super::replay::{Server, ingest_log, ingested, recorded_log};
use crate::util::*;

fn python() -> PathBuf {
    test_python("openai", "the OpenAI Python SDK")
}

/// The agent loop: the model decides, the loop runs `weather` (answering with FORECAST), hands
/// results back, and reports the final answer and the run's end to the replay server.
const AGENT: &str = r#"
import json, sys, urllib.request
import openai
from openai import OpenAI

base, case, forecast, mode = sys.argv[1:5]
client = OpenAI(base_url=f"{base}/replay/{case}/v1", api_key="replay-needs-no-key", max_retries=0)
tools = [{"type": "function", "function": {"name": "weather",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
messages = [{"role": "system", "content": "You answer weather questions."},
            {"role": "user", "content": "What is the weather in Paris?"}]

def ask():
    if mode != "stream":
        return client.chat.completions.create(model="m", messages=messages, tools=tools).choices[0].message.model_dump(exclude_none=True)
    msg, calls = {"role": "assistant"}, {}
    for chunk in client.chat.completions.create(model="m", messages=messages, tools=tools, stream=True):
        if not chunk.choices:
            continue
        d = chunk.choices[0].delta
        if d.content:
            msg["content"] = msg.get("content", "") + d.content
        for tc in d.tool_calls or []:
            c = calls.setdefault(tc.index, {"id": tc.id, "type": "function", "function": {"name": "", "arguments": ""}})
            if tc.function.name:
                c["function"]["name"] = tc.function.name
            c["function"]["arguments"] += tc.function.arguments or ""
    if calls:
        msg["tool_calls"] = [calls[i] for i in sorted(calls)]
    return msg

def report(events):
    req = urllib.request.Request(f"{base}/replay/{case}/tracereplay/v1/events", data=json.dumps(events).encode(),
                                 headers={"content-type": "application/json"}, method="POST")
    urllib.request.urlopen(req).read()

while True:
    try:
        msg = ask()
    except openai.APIStatusError as e:
        print(json.dumps({"status": e.status_code, "message": e.body["message"] if isinstance(e.body, dict) else str(e.body)}))
        sys.exit(3)
    messages.append(msg)
    if not msg.get("tool_calls"):
        report([{"kind": "final_answer", "text": msg.get("content", "")}, {"kind": "run_end", "status": "completed"}])
        break
    for c in msg["tool_calls"]:
        messages.append({"role": "tool", "tool_call_id": c["id"], "content": forecast})
print(json.dumps({"messages": messages}))
"#;

/// Runs the agent loop against the session `weather/paris` of `server`; its exit code and what
/// it printed.
fn agent(server: &Server, env: &Env, forecast: &str, mode: &str) -> (i32, serde_json::Value) {
    let out = Command::new(python())
        .arg("-c")
        .arg(AGENT)
        .args([server.url.as_str(), "weather/paris", forecast, mode])
        .current_dir(env.root())
        .env_remove("OPENAI_BASE_URL")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let value = serde_json::from_str(stdout.trim()).unwrap_or_else(|_| {
        panic!(
            "agent printed {stdout:?}, stderr {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), value)
}

/// Serves `traces/` until every session is finished, with `extra` flags.
fn serve(env: &Env, extra: &[&str]) -> Server {
    let mut args = vec!["traces/", "--exit-when-finished"];
    args.extend_from_slice(extra);
    Server::start(env, &args)
}

#[test]
fn the_sdk_loop_replays_with_no_divergence_and_no_drift_streamed_or_not() {
    for mode in ["plain", "stream"] {
        let env = Env::new();
        ingested(&env);
        let server = serve(&env, &["--record", "replayed"]);
        let (code, out) = agent(&server, &env, "sunny, 21 C", mode);
        assert_eq!(code, 0, "{out}");
        assert_eq!(out["messages"].as_array().unwrap().len(), 5, "{out}");
        assert_eq!(out["messages"][4]["content"], "It is sunny in Paris, 21 C.");
        let (code, rest) = server.finish(&["weather/paris"]);
        assert_eq!(code, 0, "{mode}: {rest}");
        assert!(!rest.contains("divergence"), "{mode}: {rest}");
        let diff = env.run(&["diff", "--from", "traces/", "--to", "replayed/"]);
        assert_eq!(diff.code, 0, "{mode}: {}", diff.stdout);
    }
}

#[test]
fn the_sdk_sees_a_divergence_and_strict_ends_the_run_failed() {
    let env = Env::new();
    ingested(&env);
    let server = serve(&env, &["--record", "replayed"]);
    let (code, _) = agent(&server, &env, "rain, 12 C", "plain");
    assert_eq!(code, 0);
    let (code, rest) = server.finish(&["weather/paris"]);
    assert_eq!(code, 1, "{rest}");
    assert!(
        rest.contains("divergence: request 2: input_h differs"),
        "{rest}"
    );

    let strict = serve(&env, &["--record", "strict", "--strict"]);
    let (code, out) = agent(&strict, &env, "rain, 12 C", "plain");
    assert_eq!(code, 3, "{out}");
    assert_eq!(out["status"], 409, "{out}");
    strict.finish(&["weather/paris"]);
    let diff = env.run(&["diff", "--from", "traces/", "--to", "strict/"]);
    assert_eq!(diff.code, 1, "{}", diff.stdout);
    assert!(diff.stdout.contains("status-changed"), "{}", diff.stdout);
}

#[test]
fn asking_once_more_than_recorded_gets_the_exhaustion_error_with_the_count() {
    let env = Env::new();
    // A recording that ends after the tool call: the loop asks once more than it holds.
    let short = recorded_log().as_array().unwrap()[..4].to_vec();
    ingest_log(&env, &serde_json::Value::Array(short));
    let server = serve(&env, &[]);
    let (code, out) = agent(&server, &env, "sunny, 21 C", "plain");
    assert_eq!(code, 3, "{out}");
    assert_eq!(out["status"], 410);
    assert_eq!(
        out["message"],
        "replay exhausted: 1 of 1 recorded model responses served"
    );
}

#[test]
fn the_readme_example_runs_as_written_against_the_demo_recording() {
    let readme =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/replay.md"))
            .unwrap();
    let start = readme
        .find("```python\n")
        .expect("the replay doc's example")
        + "```python\n".len();
    let example = &readme[start..start + readme[start..].find("```").unwrap()];
    let env = Env::new();
    copy_demo(&env, true);
    let server = Server::start(
        &env,
        &[
            "traces/agent.replay.weather",
            "--record",
            "replayed/",
            "--exit-when-finished",
        ],
    );
    let url = server.url.clone();
    let base = format!("{url}/v1");
    let vars = [("OPENAI_BASE_URL", base.as_str())];
    run_python(
        &python(),
        example,
        env.root(),
        &vars,
        &[],
        "the README example",
    );
    let (code, rest) = server.child_wait();
    assert_eq!(code, 0, "{rest}");
    assert!(
        rest.contains("agent.replay.weather/paris: 2 of 2 responses served"),
        "{rest}"
    );
    let check = env.run(&[
        "check",
        "replayed/",
        "--scenarios",
        "traces/agent.replay.weather",
    ]);
    assert_eq!(check.code, 0, "{}", check.stdout);
    assert!(check.stdout.contains("1 passed"), "{}", check.stdout);
    let diff = env.run(&[
        "diff",
        "--from",
        "traces/agent.replay.weather",
        "--to",
        "replayed/",
    ]);
    assert_eq!(diff.code, 0, "{}", diff.stdout);
}
