//! One conversation, one identity through every door: the same three-turn weather loop, driven
//! by the official OpenAI Python SDK, captured
//!
//! - by `record` (the SDK's requests, through the proxy),
//! - by `collect` from the OpenTelemetry Python SDK's default OTLP/HTTP exporter (protobuf),
//!   with the openai-v2 instrumentation's content on the spans, and as log events,
//! - by `ingest` of the same spans written to a file, of the message list the loop kept, and of
//!   an ATIF trajectory built from it with the published `atif` models,
//!
//! gives every request the same `input_h` at every door, and `replay serve --strict` of the
//! collected run answers the identical loop with no divergence. The packages come from
//! `scripts/install-test-deps` (`target/test-venv`).

use std::process::Command;

use super::replay::Server;
use crate::util::*;

/// The loop. Arguments: the model's base URL, the OTLP receiver's URL (`-`: not instrumented),
/// where to write the spans and the message list, and `events` to send the content as log
/// events. Prints the messages the loop ended with.
const AGENT: &str = r#"
import json, os, sys
from openai import OpenAI
base, collector, spans_file, messages_file, content = sys.argv[1:6]
if collector != "-":
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    kept = []
    class Keep(SpanExporter):
        def export(self, spans):
            kept.extend(spans)
            return SpanExportResult.SUCCESS
        def shutdown(self):
            pass
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{collector}/v1/traces")))
    provider.add_span_processor(SimpleSpanProcessor(Keep()))
    trace.set_tracer_provider(provider)
    if content == "events":
        from opentelemetry import _logs
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        logs = LoggerProvider()
        logs.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(endpoint=f"{collector}/v1/logs")))
        _logs.set_logger_provider(logs)
    OpenAIInstrumentor().instrument()
    span = trace.get_tracer("weather-agent").start_as_current_span(
        "invoke_agent weather", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"})
else:
    import contextlib
    span = contextlib.nullcontext()
client = OpenAI(base_url=base, api_key="not-a-key", max_retries=0)
tools = [{"type": "function", "function": {"name": "weather",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
messages = [{"role": "system", "content": "You answer weather questions."},
            {"role": "user", "content": "What is the weather in Paris?"}]
with span:
    while True:
        msg = client.chat.completions.create(model="gpt-4.1-mini", messages=messages, tools=tools).choices[0].message
        messages.append(msg.model_dump(exclude_none=True))
        if not msg.tool_calls:
            break
        for call in msg.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 C"})
if collector != "-":
    provider.shutdown()
    if content == "events":
        logs.shutdown()
    with open(spans_file, "wb") as f:
        f.write(encode_spans(kept).SerializeToString())
if "/record/" in base:
    import urllib.request
    events = [{"kind": "final_answer", "text": msg.content}, {"kind": "run_end", "status": "completed"}]
    urllib.request.urlopen(urllib.request.Request(base.removesuffix("/v1") + "/tracereplay/v1/finish",
        data=json.dumps(events).encode(), headers={"content-type": "application/json"}, method="POST")).read()
with open(messages_file, "w") as f:
    json.dump(messages, f)
print(json.dumps(messages))
"#;

/// An ATIF trajectory of the message list (on stdin), built with the `atif` models: the
/// system and user turns, an agent step per assistant message (its calls observed with the
/// tool results that follow it).
const TO_ATIF: &str = r#"
import json, sys
from atif import Trajectory, Agent, Step, ToolCall, Observation, ObservationResult
messages = json.load(sys.stdin)
steps, results = [], {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
for m in messages:
    n = len(steps) + 1
    if m["role"] in ("system", "user"):
        steps.append(Step(step_id=n, source=m["role"], message=m["content"]))
    elif m["role"] == "assistant":
        calls = [ToolCall(tool_call_id=c["id"], function_name=c["function"]["name"],
                          arguments=json.loads(c["function"]["arguments"])) for c in m.get("tool_calls", [])]
        observation = Observation(results=[ObservationResult(source_call_id=c.tool_call_id, content=results[c.tool_call_id])
                                           for c in calls]) if calls else None
        steps.append(Step(step_id=n, source="agent", message=m.get("content") or "",
                          tool_calls=calls or None, observation=observation))
t = Trajectory(schema_version="ATIF-v1.8", session_id="paris", agent=Agent(name="weather", version="1"), steps=steps)
print(json.dumps(t.to_json_dict()))
"#;

fn python() -> std::path::PathBuf {
    test_python(
        "openai, atif, opentelemetry.sdk, opentelemetry.exporter.otlp.proto.http, opentelemetry.instrumentation.openai_v2",
        "the OpenAI Python SDK, the `atif` models, the OpenTelemetry Python SDK, its OTLP/HTTP exporter and the openai-v2 instrumentation",
    )
}

/// Runs the loop against `base`, exporting to `collector` (`-`: none) with its `content`
/// (`spans` or `events`); the spans go to `spans.binpb`, the messages to `messages.json`.
fn run_loop(env: &Env, base: &str, collector: &str, content: &str) -> String {
    let mut cmd = Command::new(python());
    cmd.args(["-c", AGENT, base, collector, "spans.binpb", "messages.json"])
        .arg(content)
        .current_dir(env.root())
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OPENAI_BASE_URL")
        .env(
            "OTEL_SEMCONV_STABILITY_OPT_IN",
            "gen_ai_latest_experimental",
        )
        .env(
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
            match content {
                "events" => "EVENT_ONLY",
                _ => "SPAN_ONLY",
            },
        );
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The `input_h` of each inference of the one trace under `dir`, in order.
fn input_hashes(env: &Env, dir: &str) -> Vec<String> {
    let traces = files_under(&env.path(dir));
    assert_eq!(traces.len(), 1, "{dir}: {traces:?}");
    let text = env.run(&["cat", &format!("{dir}/{}", traces[0])]).stdout;
    (text.lines())
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["kind"] == "inference")
        .map(|e| e["input_h"].as_str().unwrap_or("(none)").to_owned())
        .collect()
}

/// The events of the one trace under `dir`, each as its kind and what every door can say of
/// it (the prompt and conversation hashes, the calls, results and answers), without what only
/// some doors know (times, latency, the provider's request id, the tools offered, the parts).
fn events(env: &Env, dir: &str) -> Vec<serde_json::Value> {
    let traces = files_under(&env.path(dir));
    let text = env.run(&["cat", &format!("{dir}/{}", traces[0])]).stdout;
    (text.lines())
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| !matches!(e["kind"].as_str(), Some("header" | "footer")))
        .map(|mut e| {
            let o = e.as_object_mut().unwrap();
            for k in [
                "ts_ms",
                "latency_ms",
                "request_id",
                "model",
                "tools_offered",
                "request_h",
            ] {
                o.remove(k);
            }
            e
        })
        .collect()
}

fn ingest(env: &Env, from: &str, input: &str, out: &str) {
    let run = env.run(&["ingest", "--unkeyed", "--from", from, "-o", out, input]);
    assert_eq!(run.code, 0, "{from}: {}{}", run.stdout, run.stderr);
}

#[test]
fn one_conversation_has_one_input_hash_at_every_door_and_a_collected_run_replays_strictly() {
    let env = Env::new();
    copy_demo(&env, false);
    // Through `record` (its upstream a replay of the demo's weather run) and `collect` at once.
    let model = Server::start(&env, &["traces/agent.replay.weather"]);
    let record = super::record::recorder(&env, &model.url, "recorded", &[]);
    let collect = Server::spawn(
        &env,
        &[
            "collect",
            "--out",
            "collected",
            "--unkeyed",
            "--settle",
            "0.2",
        ],
        &[],
    );
    let base = format!("{}/record/agent.replay.weather/paris/v1", record.url);
    run_loop(&env, &base, &collect.url, "spans");
    std::thread::sleep(std::time::Duration::from_millis(800));
    let (code, said) = collect.finish(&[]);
    assert_eq!(code, 0, "{said}");
    let (code, said) = record.finish(&[]);
    assert_eq!(code, 0, "{said}");
    model.finish(&[]);
    ingest(&env, "otlp-proto", "spans.binpb", "ingested-spans");
    ingest(
        &env,
        "openai-messages",
        "messages.json",
        "ingested-messages",
    );
    let messages = env.read("messages.json");
    let atif = {
        use std::io::Write;
        let mut child = Command::new(python())
            .args(["-c", TO_ATIF])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&messages).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        out.stdout
    };
    env.write("trajectory.json", atif);
    ingest(&env, "atif", "trajectory.json", "ingested-atif");

    // The same loop again, its content sent as log events (`EVENT_ONLY`).
    let model = Server::start(&env, &["traces/agent.replay.weather"]);
    let collect = Server::spawn(
        &env,
        &[
            "collect",
            "--out",
            "collected-events",
            "--unkeyed",
            "--settle",
            "0.2",
        ],
        &[],
    );
    run_loop(&env, &format!("{}/v1", model.url), &collect.url, "events");
    std::thread::sleep(std::time::Duration::from_millis(800));
    let (code, said) = collect.finish(&[]);
    assert_eq!(code, 0, "{said}");
    model.finish(&[]);

    let recorded = input_hashes(&env, "recorded");
    assert_eq!(recorded.len(), 2, "{recorded:?}");
    assert!(
        recorded.iter().all(|h| h.starts_with("b3:")),
        "{recorded:?}"
    );
    for door in [
        "collected",
        "collected-events",
        "ingested-spans",
        "ingested-messages",
        "ingested-atif",
    ] {
        assert_eq!(input_hashes(&env, door), recorded, "{door}");
    }
    // And the same events: kind by kind, what each says of the conversation and the calls.
    let recorded = events(&env, "recorded");
    assert_eq!(recorded.len(), 7, "{recorded:#?}");
    for door in [
        "collected",
        "collected-events",
        "ingested-spans",
        "ingested-messages",
        "ingested-atif",
    ] {
        assert_eq!(events(&env, door), recorded, "{door}");
    }

    // The collected run, replayed strictly into the identical loop: no divergence.
    let collected = files_under(&env.path("collected"));
    let replay = Server::start(
        &env,
        &[
            &format!("collected/{}", collected[0]),
            "--strict",
            "--unkeyed",
        ],
    );
    let printed = run_loop(&env, &format!("{}/v1", replay.url), "-", "none");
    assert!(printed.contains("It is sunny in Paris, 21 C."), "{printed}");
    let (code, said) = replay.finish(&[]);
    assert_eq!(code, 0, "{said}");
    assert!(!said.contains("diverg"), "{said}");
}
