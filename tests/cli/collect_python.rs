//! `collect` with a real client: the OpenTelemetry Python SDK with its OTLP/HTTP exporter and
//! the `opentelemetry-instrumentation-openai-v2` instrumentation around the official OpenAI SDK,
//! which talks to a `replay serve` of the demo's weather run. The run `collect` writes is the
//! trace `ingest` makes of the same spans written to a file (the SDK's own protobuf encoding).
//! The packages come from `scripts/install-test-deps` (`target/test-venv`).

use std::process::Command;

use super::replay::Server;
use crate::util::*;

const AGENT: &str = r#"
import json, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from openai import OpenAI

collector, replay, spans_file = sys.argv[1:4]
if len(sys.argv) > 4:
    # Content as log records (the instrumentation's `EVENT_ONLY`), exported to the receiver.
    from opentelemetry import _logs
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    logs = LoggerProvider()
    logs.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(endpoint=f"{collector}/v1/logs")))
    _logs.set_logger_provider(logs)
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
OpenAIInstrumentor().instrument()
tracer = trace.get_tracer("weather-agent")
client = OpenAI(base_url=f"{replay}/v1", api_key="replay-needs-no-key", max_retries=0)
tools = [{"type": "function", "function": {"name": "weather",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
messages = [{"role": "system", "content": "You answer weather questions."},
            {"role": "user", "content": "What is the weather in Paris?"}]
agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"}
with tracer.start_as_current_span("invoke_agent weather", attributes=agent):
    while True:
        msg = client.chat.completions.create(model="gpt-4.1-mini", messages=messages, tools=tools).choices[0].message
        messages.append(msg.model_dump(exclude_none=True))
        if not msg.tool_calls:
            break
        for call in msg.tool_calls:
            attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.function.name,
                     "gen_ai.tool.call.id": call.id, "gen_ai.tool.call.arguments": call.function.arguments}
            with tracer.start_as_current_span("execute_tool " + call.function.name, attributes=attrs):
                messages.append({"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 C"})
provider.shutdown()
if len(sys.argv) > 4:
    logs.shutdown()
with open(spans_file, "wb") as f:
    f.write(encode_spans(kept).SerializeToString())
print(json.dumps({"spans": len(kept), "final": msg.content}))
"#;

/// Runs the instrumented agent against a `replay serve` of the demo recording, exporting to a
/// `collect` with `--settle SETTLE` (and its content as log records with `logs`), and stops both.
/// Returns what the agent printed, the receiver's exit code and output, and the traces under
/// `collected/` (relative path, decompressed bytes).
fn run_agent(
    env: &Env,
    settle: &str,
    logs: bool,
) -> (serde_json::Value, i32, String, Vec<(String, Vec<u8>)>) {
    let python = test_python(
        "opentelemetry.sdk, opentelemetry.exporter.otlp.proto.http, opentelemetry.instrumentation.openai_v2, openai",
        "the OpenTelemetry Python SDK, its OTLP/HTTP exporter and the openai-v2 instrumentation",
    );
    copy_demo(env, false);
    let replay = Server::start(env, &["traces/agent.replay.weather"]);
    let collect = Server::spawn(
        env,
        &[
            "collect",
            "--out",
            "collected",
            "--unkeyed",
            "--settle",
            settle,
        ],
        &[],
    );
    let mut cmd = Command::new(python);
    cmd.args(["-c", AGENT, &collect.url, &replay.url, "spans.binpb"])
        .current_dir(env.root())
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT");
    if logs {
        cmd.arg("logs")
            .env(
                "OTEL_SEMCONV_STABILITY_OPT_IN",
                "gen_ai_latest_experimental",
            )
            .env(
                "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
                "EVENT_ONLY",
            );
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    // The run is written once its root span settled (the receiver is not stopped for it).
    std::thread::sleep(std::time::Duration::from_millis(900));
    let (code, said) = collect.finish(&[]);
    replay.finish(&[]);
    (printed, code, said, traces(env, "collected"))
}

/// The traces under `dir`: (relative path, decompressed bytes).
fn traces(env: &Env, dir: &str) -> Vec<(String, Vec<u8>)> {
    (files_under(&env.path(dir)).into_iter())
        .map(|f| {
            let bytes = zstd::decode_all(&env.read(&format!("{dir}/{f}"))[..]).unwrap();
            (f, bytes)
        })
        .collect()
}

#[test]
fn the_python_sdk_exports_to_collect_and_the_run_is_what_ingest_makes_of_the_same_spans() {
    let env = Env::new();
    let (printed, code, said, collected) = run_agent(&env, "0.2", false);
    assert_eq!(printed["final"], "It is sunny in Paris, 21 C.");
    assert_eq!(printed["spans"], 4, "the agent, two chats and a tool");
    assert_eq!(code, 0, "{said}");
    let ingested = env.run(&[
        "ingest",
        "--unkeyed",
        "--from",
        "otlp-proto",
        "-o",
        "ingested",
        "spans.binpb",
    ]);
    assert_eq!(ingested.code, 0, "{}{}", ingested.stdout, ingested.stderr);
    assert_eq!(collected.len(), 1, "{said}");
    assert_eq!(collected, traces(&env, "ingested"));
    let text = String::from_utf8_lossy(&collected[0].1).into_owned();
    for want in [
        r#""kind":"inference""#,
        r#""tool":"weather""#,
        r#""args":{"city":"Paris"}"#,
    ] {
        assert!(text.contains(want), "{want}\n{text}");
    }
}

#[test]
fn content_sent_as_log_records_reaches_its_inference_hashed() {
    let env = Env::new();
    let (_, code, said, collected) = run_agent(&env, "0.5", true);
    assert_eq!(code, 0, "{said}");
    assert_eq!(collected.len(), 1, "{said}");
    let text = String::from_utf8(collected[0].1.clone()).unwrap();
    // The conversation arrived only through the log records: the inferences carry its hash and
    // the answer's text, and no prompt text is anywhere.
    assert_eq!(text.matches(r#""input_h":"b3:"#).count(), 2, "{text}");
    assert!(text.contains("It is sunny in Paris, 21 C."), "{text}");
    assert!(
        !text.contains("What is the weather") && !text.contains("You answer weather"),
        "{text}"
    );
}
