//! The replay server with a real client: the official OpenAI Python SDK, running a small
//! tool-calling agent loop written here, pointed at the server with `base_url`. The SDK comes
//! from `scripts/test`, which installs it into `target/test-venv` (or `TRACEREPLAY_PYTHON`
//! names a Python that has it); without it these tests fail and say how to install it.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::util::*;

fn python() -> PathBuf {
    let candidate = std::env::var_os("TRACEREPLAY_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-venv/bin/python")
        });
    let ok = Command::new(&candidate)
        .args(["-c", "import openai"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "the replay tests need the OpenAI Python SDK: run `scripts/test` (it installs it into \
         target/test-venv), or set TRACEREPLAY_PYTHON to a Python with `openai` installed"
    );
    candidate
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

const LOG: &str = r#"[
  {"role": "system", "content": "You answer weather questions."},
  {"role": "user", "content": "What is the weather in Paris?"},
  {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Paris\"}"}}]},
  {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 C"},
  {"role": "assistant", "content": "It is sunny in Paris, 21 C."}
]"#;

struct Serve {
    child: std::process::Child,
    url: String,
}

impl Serve {
    fn start(env: &Env, extra: &[&str]) -> Serve {
        let mut args = vec![
            "replay",
            "serve",
            "--unkeyed",
            "traces/",
            "--exit-when-finished",
        ];
        args.extend_from_slice(extra);
        let mut child = env
            .command(&args, &[("CI", "true")])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap()
            .to_owned();
        Serve { child, url }
    }

    fn agent(&self, env: &Env, forecast: &str, mode: &str) -> (i32, serde_json::Value) {
        let out = Command::new(python())
            .arg("-c")
            .arg(AGENT)
            .args([self.url.as_str(), "weather/paris", forecast, mode])
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

    /// Finishes the session and returns the server's exit code and closing lines.
    fn finish(mut self, env: &Env) -> (i32, String) {
        let finish = format!(
            "import urllib.request; urllib.request.urlopen(urllib.request.Request('{}/replay/weather/paris/tracereplay/v1/finish', data=b'{{}}', method='POST')).read()",
            self.url
        );
        let status = Command::new(python())
            .arg("-c")
            .arg(&finish)
            .current_dir(env.root())
            .status()
            .unwrap();
        assert!(status.success());
        let code = self.child.wait().unwrap().code().unwrap();
        let mut rest = String::new();
        std::io::Read::read_to_string(self.child.stdout.as_mut().unwrap(), &mut rest).unwrap();
        (code, rest)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn recording(env: &Env) {
    env.write("log.json", LOG);
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
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn the_sdk_loop_replays_with_no_divergence_and_no_drift_streamed_or_not() {
    for mode in ["plain", "stream"] {
        let env = Env::new();
        recording(&env);
        let server = Serve::start(&env, &["--record", "replayed"]);
        let (code, out) = server.agent(&env, "sunny, 21 C", mode);
        assert_eq!(code, 0, "{out}");
        assert_eq!(out["messages"].as_array().unwrap().len(), 5, "{out}");
        assert_eq!(out["messages"][4]["content"], "It is sunny in Paris, 21 C.");
        let (code, rest) = server.finish(&env);
        assert_eq!(code, 0, "{mode}: {rest}");
        assert!(!rest.contains("divergence"), "{mode}: {rest}");
        let diff = env.run(&["diff", "--from", "traces/", "--to", "replayed/"]);
        assert_eq!(diff.code, 0, "{mode}: {}", diff.stdout);
    }
}

#[test]
fn the_sdk_sees_a_divergence_and_strict_ends_the_run_failed() {
    let env = Env::new();
    recording(&env);
    let server = Serve::start(&env, &["--record", "replayed"]);
    let (code, _) = server.agent(&env, "rain, 12 C", "plain");
    assert_eq!(code, 0);
    let (code, rest) = server.finish(&env);
    assert_eq!(code, 1, "{rest}");
    assert!(
        rest.contains("divergence: request 2: input_h differs"),
        "{rest}"
    );

    let strict = Serve::start(&env, &["--record", "strict", "--strict"]);
    let (code, out) = strict.agent(&env, "rain, 12 C", "plain");
    assert_eq!(code, 3, "{out}");
    assert_eq!(out["status"], 409, "{out}");
    strict.finish(&env);
    let diff = env.run(&["diff", "--from", "traces/", "--to", "strict/"]);
    assert_eq!(diff.code, 1, "{}", diff.stdout);
    assert!(diff.stdout.contains("status-changed"), "{}", diff.stdout);
}

#[test]
fn asking_once_more_than_recorded_gets_the_exhaustion_error_with_the_count() {
    let env = Env::new();
    // A recording that ends after the tool call: the loop asks once more than it holds.
    let short: Vec<serde_json::Value> =
        serde_json::from_str::<Vec<serde_json::Value>>(LOG).unwrap()[..4].to_vec();
    env.write("log.json", serde_json::Value::Array(short).to_string());
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
    assert_eq!(out.code, 0, "{}", out.stderr);
    let server = Serve::start(&env, &[]);
    let (code, out) = server.agent(&env, "sunny, 21 C", "plain");
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
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("README.md"))
            .unwrap();
    let start = readme.find("```python\n").expect("the README's example") + "```python\n".len();
    let example = &readme[start..start + readme[start..].find("```").unwrap()];
    let env = Env::new();
    copy_demo(&env, true);
    let mut child = env
        .command(
            &[
                "replay",
                "serve",
                "--unkeyed",
                "traces/agent.replay.weather",
                "--record",
                "replayed/",
                "--exit-when-finished",
            ],
            &[("CI", "true")],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_owned();
    let out = Command::new(python())
        .arg("-c")
        .arg(example)
        .env("OPENAI_BASE_URL", format!("{url}/v1"))
        .current_dir(env.root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let code = child.wait().unwrap().code().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
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
