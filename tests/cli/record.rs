//! `tracereplay record` with real clients: the official OpenAI Python SDK (Chat Completions and
//! Responses) and Anthropic Python SDK run a small tool-calling loop through the recorder, whose
//! upstream is a `replay serve` of the demo's weather recording — streamed and not, for each
//! API. The SDKs come from `scripts/install-test-deps` (into `target/test-venv`).

use std::path::PathBuf;
use std::process::Command;

use super::replay::Server;
use crate::util::*;

pub(super) fn python() -> PathBuf {
    test_python("openai, anthropic", "the OpenAI and Anthropic Python SDKs")
}

pub(super) const SESSION: &str = "agent.replay.weather/paris";
/// The API key every SDK sends: it must appear nowhere the recorder writes or prints. (Built
/// at run time, as every key-shaped string of the suite is, so that no file of it holds one.)
pub(super) fn sentinel() -> String {
    ["sk-", "test-", "SENTINEL", &"0123456789abcdef".repeat(2)].concat()
}

/// The SDKs' key variables, set to the sentinel (and never read).
pub(super) fn key_vars() -> [String; 2] {
    [
        ["OPENAI", "_API_KEY"].concat(),
        ["ANTHROPIC", "_API_KEY"].concat(),
    ]
}

/// The agent loop, in each API: the model decides, the loop runs `weather` (answering with
/// FORECAST), hands the results back, and at the end reports the final answer and the run's
/// end with `finish`. Prints `{"final": …}`, or `{"status", "message"}` and exits 3 on an
/// error answer.
pub(super) const AGENT: &str = r#"
import json, sys, urllib.request

base, api, mode, forecast, key = sys.argv[1:6]
# Only the SDK this run drives is imported: the other would add one to two seconds to each run.
sdk = __import__("anthropic" if api == "anthropic" else "openai")
SYSTEM, USER = "You answer weather questions.", "What is the weather in Paris?"
schema = {"type": "object", "properties": {"city": {"type": "string"}}}
stream = mode == "stream"

def chat():
    client = sdk.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0)
    tools = [{"type": "function", "function": {"name": "weather", "parameters": schema}}]
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}]
    while True:
        if not stream:
            msg = client.chat.completions.create(model="m", messages=messages, tools=tools).choices[0].message.model_dump(exclude_none=True)
        else:
            msg, calls = {"role": "assistant"}, {}
            for chunk in client.chat.completions.create(model="m", messages=messages, tools=tools, stream=True, stream_options={"include_usage": True}):
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
        messages.append(msg)
        if not msg.get("tool_calls"):
            return msg.get("content", "")
        for c in msg["tool_calls"]:
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": forecast})

def responses():
    client = sdk.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0)
    tools = [{"type": "function", "name": "weather", "parameters": schema}]
    items = [{"role": "user", "content": USER}]
    while True:
        if not stream:
            resp = client.responses.create(model="m", instructions=SYSTEM, input=items, tools=tools)
        else:
            resp = None
            for event in client.responses.create(model="m", instructions=SYSTEM, input=items, tools=tools, stream=True):
                if event.type == "response.completed":
                    resp = event.response
        calls = [o for o in resp.output if o.type == "function_call"]
        if not calls:
            return resp.output_text
        for c in calls:
            items.append({"type": "function_call", "call_id": c.call_id, "name": c.name, "arguments": c.arguments})
            items.append({"type": "function_call_output", "call_id": c.call_id, "output": forecast})

def messages_api():
    client = sdk.Anthropic(base_url=base, api_key=key, max_retries=0)
    tools = [{"name": "weather", "input_schema": schema}]
    messages = [{"role": "user", "content": USER}]
    while True:
        args = dict(model="m", max_tokens=256, system=SYSTEM, messages=messages, tools=tools)
        if not stream:
            msg = client.messages.create(**args)
        else:
            with client.messages.stream(**args) as s:
                msg = s.get_final_message()
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in msg.content]})
        uses = [b for b in msg.content if b.type == "tool_use"]
        if not uses:
            return "".join(b.text for b in msg.content if b.type == "text")
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": b.id, "content": forecast} for b in uses]})

try:
    final = {"chat": chat, "responses": responses, "anthropic": messages_api}[api]()
except sdk.APIStatusError as e:
    print(json.dumps({"status": e.status_code, "message": str(e.body)}))
    sys.exit(3)
events = [{"kind": "final_answer", "text": final}, {"kind": "run_end", "status": "completed"}]
req = urllib.request.Request(f"{base}/tracereplay/v1/finish", data=json.dumps(events).encode(),
                             headers={"content-type": "application/json"}, method="POST")
urllib.request.urlopen(req).read()
print(json.dumps({"final": final}))
"#;

/// Runs the agent loop in `api` (`chat`, `responses`, `anthropic`) and `mode` (`plain`,
/// `stream`) against `base`; its exit code, what it printed, and its stderr.
pub(super) fn agent(
    env: &Env,
    base: &str,
    api: &str,
    mode: &str,
    forecast: &str,
) -> (i32, serde_json::Value, String) {
    let out = Command::new(python())
        .arg("-c")
        .arg(AGENT)
        .args([base, api, mode, forecast, &sentinel()])
        .current_dir(env.root())
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove(&key_vars()[0])
        .env_remove(&key_vars()[1])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|_| panic!("agent printed {stdout:?}, stderr {stderr}"));
    (out.status.code().unwrap_or(-1), value, stderr)
}

/// `replay serve` of the demo's weather recording, the upstream.
pub(super) fn upstream(env: &Env) -> Server {
    Server::start(env, &["traces/agent.replay.weather"])
}

/// `record` forwarding to `upstream`, writing under `out`, with `extra` flags.
pub(super) fn recorder(env: &Env, upstream: &str, out: &str, extra: &[&str]) -> Server {
    let mut args = vec!["record", "--upstream", upstream, "--out", out, "--unkeyed"];
    args.extend_from_slice(extra);
    Server::spawn(env, &args, &[])
}

/// Every file under `dir`, decompressed where it is a trace, as one text.
pub(super) fn everything_under(env: &Env, dir: &str) -> String {
    let mut all = String::new();
    for f in files_under(&env.path(dir)) {
        let bytes = std::fs::read(env.path(dir).join(&f)).unwrap();
        let text = if f.ends_with(".zst") {
            zstd::decode_all(&bytes[..]).unwrap()
        } else {
            bytes
        };
        all.push_str(&String::from_utf8_lossy(&text));
    }
    all
}

#[test]
fn chat_completions_record_through_the_proxy_with_no_divergence_no_drift_and_no_key() {
    records_with_no_divergence_no_drift_and_no_key("chat");
}

#[test]
fn responses_record_through_the_proxy_with_no_divergence_no_drift_and_no_key() {
    records_with_no_divergence_no_drift_and_no_key("responses");
}

#[test]
fn anthropic_messages_record_through_the_proxy_with_no_divergence_no_drift_and_no_key() {
    records_with_no_divergence_no_drift_and_no_key("anthropic");
}

/// The SDK's loop through `record` to a replay of the demo recording, streamed and not: the
/// recording replays and diffs clean, passes `check`, and holds no trace of the API key.
fn records_with_no_divergence_no_drift_and_no_key(api: &str) {
    {
        for mode in ["plain", "stream"] {
            let env = Env::new();
            copy_demo(&env, true);
            let up = upstream(&env);
            // The raw-prompt sidecar too (the developer opt-in) must not hold the key.
            let rec = recorder(&env, &up.url, "recorded", &["--dev-raw-prompts"]);
            let base = format!("{}/record/{SESSION}", rec.url);
            let (code, out, stderr) = agent(&env, &base, api, mode, "sunny, 21 C");
            assert_eq!(code, 0, "{api} {mode}: {out} {stderr}");
            assert_eq!(out["final"], "It is sunny in Paris, 21 C.", "{api} {mode}");
            let (code, printed) = rec.finish(&[]);
            assert_eq!(code, 0, "{api} {mode}: {printed}");
            let path = "recorded/agent.replay.weather/paris.trace.ndjson.zst";
            assert!(
                printed.contains(&format!(
                    "recorded {SESSION}: 2 request(s) (completed) -> {path}"
                )),
                "{api} {mode}: {printed}"
            );
            let (_, served) = up.finish(&[]);
            assert!(!served.contains("divergence"), "{api} {mode}: {served}");
            // The key is nowhere: not in what was written (the sidecar with the prompts'
            // text included), nor in what was printed.
            let sidecar = env.path("recorded/agent.replay.weather/paris.prompts.ndjson");
            let raw = std::fs::read_to_string(&sidecar).unwrap_or_else(|e| panic!("{api}: {e}"));
            assert!(raw.contains("What is the weather in Paris?"), "{raw}");
            assert!(
                !everything_under(&env, "recorded").contains("SENTINEL"),
                "{api} {mode}"
            );
            assert!(!printed.contains("SENTINEL"), "{api} {mode}: {printed}");
            let trace = env.run(&["cat", path]);
            assert!(
                trace.stdout.contains(r#""source":"record""#),
                "{}",
                trace.stdout
            );
            assert!(trace.stdout.contains(r#""latency_ms""#), "{}", trace.stdout);

            // (The developer opted in to the sidecar, so `check` is told it may be there.)
            let check = env.run(&["check", "recorded/", "--allow-raw-prompts"]);
            assert_eq!(
                check.code, 0,
                "{api} {mode}: {}{}",
                check.stdout, check.stderr
            );
            let diff = env.run(&[
                "diff",
                "--from",
                "traces/agent.replay.weather",
                "--to",
                "recorded/",
            ]);
            assert_eq!(diff.code, 0, "{api} {mode}: {}", diff.stdout);
            // The recording replays as it was recorded.
            let again = Server::start(&env, &["recorded/", "--exit-when-finished"]);
            let (code, out, stderr) = agent(
                &env,
                &format!("{}/replay/{SESSION}", again.url),
                api,
                mode,
                "sunny, 21 C",
            );
            assert_eq!(code, 0, "{api} {mode}: {out} {stderr}");
            let (code, rest) = again.child_wait();
            assert_eq!(code, 0, "{api} {mode}: {rest}");
            assert!(!rest.contains("divergence"), "{api} {mode}: {rest}");
        }
    }
}
