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
logs_file = sys.argv[4] if len(sys.argv) > 4 else None
if logs_file:
    # Content as log records, exported to the receiver and kept for a file.
    from opentelemetry import _logs
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor, InMemoryLogRecordExporter
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    logs = LoggerProvider()
    logs.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(endpoint=f"{collector}/v1/logs")))
    kept_logs = InMemoryLogRecordExporter()
    logs.add_log_record_processor(SimpleLogRecordProcessor(kept_logs))
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
if len(sys.argv) > 5 and sys.argv[5] == "per-message":
    # The instrumentation's legacy path (the per-message events `gen_ai.user.message`…
    # `gen_ai.choice` as log records, message content captured), which this release keeps but
    # no longer selects: installed as `instrument()` installed it before.
    from wrapt import wrap_function_wrapper
    from opentelemetry import _logs, metrics
    from opentelemetry.instrumentation.openai_v2.instruments import Instruments
    from opentelemetry.instrumentation.openai_v2.patch import chat_completions_create_v_old
    wrap_function_wrapper("openai.resources.chat.completions", "Completions.create",
        chat_completions_create_v_old(trace.get_tracer("openai_v2"), _logs.get_logger("openai_v2"),
                                      Instruments(metrics.get_meter("openai_v2")), True))
else:
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
with open(spans_file, "wb") as f:
    f.write(encode_spans(kept).SerializeToString())
if logs_file:
    with open(logs_file, "wb") as f:
        f.write(encode_logs(kept_logs.get_finished_logs()).SerializeToString())
    logs.shutdown()
print(json.dumps({"spans": len(kept), "final": msg.content}))
"#;

/// How the instrumented agent sends its conversation.
#[derive(Clone, Copy, PartialEq)]
enum Content {
    /// Not at all: spans only.
    None,
    /// As `gen_ai.client.inference.operation.details` log records (the current conventions).
    Details,
    /// As the older per-message events (`gen_ai.user.message`, `gen_ai.choice`…), log records.
    PerMessage,
}

/// Runs the instrumented agent against a `replay serve` of the demo recording, exporting to a
/// `collect` with `--settle SETTLE` (and its `content` as log records, also written to
/// `logs.binpb`), and stops both. Returns what the agent printed, the receiver's exit code and
/// output, and the traces under `collected/` (relative path, decompressed bytes).
fn run_agent(
    env: &Env,
    settle: &str,
    content: Content,
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
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_SEMCONV_STABILITY_OPT_IN")
        .env_remove("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT");
    match content {
        Content::None => {}
        Content::Details => {
            cmd.arg("logs.binpb")
                .env(
                    "OTEL_SEMCONV_STABILITY_OPT_IN",
                    "gen_ai_latest_experimental",
                )
                .env(
                    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
                    "EVENT_ONLY",
                );
        }
        Content::PerMessage => {
            cmd.args(["logs.binpb", "per-message"]);
        }
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
pub(super) fn traces(env: &Env, dir: &str) -> Vec<(String, Vec<u8>)> {
    (files_under(&env.path(dir)).into_iter())
        .map(|f| {
            let bytes = zstd::decode_all(&env.read(&format!("{dir}/{f}"))[..]).unwrap();
            (f, bytes)
        })
        .collect()
}

/// What `ingest` makes of the agent's exports written to files (`inputs`), under `ingested/`.
fn ingested(env: &Env, inputs: &[&str]) -> Vec<(String, Vec<u8>)> {
    let mut args = vec![
        "ingest",
        "--unkeyed",
        "--from",
        "otlp-proto",
        "-o",
        "ingested",
    ];
    args.extend(inputs);
    let ingested = env.run(&args);
    assert_eq!(ingested.code, 0, "{}{}", ingested.stdout, ingested.stderr);
    traces(env, "ingested")
}

#[test]
fn the_python_sdk_exports_to_collect_and_the_run_is_what_ingest_makes_of_the_same_spans() {
    let env = Env::new();
    let (printed, code, said, collected) = run_agent(&env, "0.2", Content::None);
    assert_eq!(printed["final"], "It is sunny in Paris, 21 C.");
    assert_eq!(printed["spans"], 4, "the agent, two chats and a tool");
    assert_eq!(code, 0, "{said}");
    assert_eq!(collected.len(), 1, "{said}");
    assert_eq!(collected, ingested(&env, &["spans.binpb"]));
    let text = String::from_utf8_lossy(&collected[0].1).into_owned();
    for want in [
        r#""kind":"inference""#,
        r#""tool":"weather""#,
        r#""args":{"city":"Paris"}"#,
    ] {
        assert!(text.contains(want), "{want}\n{text}");
    }
}

/// The conversation arrived only through log records: the run's two inferences carry its hash
/// and the answer's text, no prompt text is anywhere, and `ingest` of the same spans and
/// records written to files makes the same trace.
fn content_arrived_through_log_records(env: &Env, content: Content) -> String {
    let (_, code, said, collected) = run_agent(env, "0.5", content);
    assert_eq!(code, 0, "{said}");
    assert_eq!(collected.len(), 1, "{said}");
    let text = String::from_utf8(collected[0].1.clone()).unwrap();
    assert_eq!(text.matches(r#""input_h":"b3:"#).count(), 2, "{text}");
    assert!(text.contains("It is sunny in Paris, 21 C."), "{text}");
    assert!(
        !text.contains("What is the weather") && !text.contains("You answer weather"),
        "{text}"
    );
    assert_eq!(collected, ingested(env, &["spans.binpb", "logs.binpb"]));
    text
}

#[test]
fn content_sent_as_details_log_records_reaches_its_inference_hashed() {
    content_arrived_through_log_records(&Env::new(), Content::Details);
}

#[test]
fn content_sent_as_the_older_per_message_events_reaches_its_inference_hashed() {
    let text = content_arrived_through_log_records(&Env::new(), Content::PerMessage);
    // The planned call came from the `gen_ai.choice` record, the tool result went back to the
    // model in a `gen_ai.tool.message` one.
    for want in [r#""finish":"tool_call""#, r#""consumes":["#] {
        assert!(text.contains(want), "{want}\n{text}");
    }
}

/// The five-line agent of the recording docs' `collect` example, run as written: exporting to
/// the docs' `collect` line through `OTEL_EXPORTER_OTLP_ENDPOINT`, talking to a replay of the
/// demo's weather run through `OPENAI_BASE_URL`. Stopping the receiver writes its run.
#[test]
fn the_recording_docs_collect_example_runs_as_written() {
    let (line, example) = recording_docs_example("## Receive OpenTelemetry");
    assert!(line.starts_with("tracereplay collect "), "{line}");
    let env = Env::new();
    copy_demo(&env, false);
    let replay = Server::start(&env, &["traces/agent.replay.weather"]);
    let args: Vec<&str> = line.split_whitespace().skip(1).collect();
    let collect = Server::spawn(&env, &args, &[]);
    let python = test_python(
        "opentelemetry.sdk, opentelemetry.exporter.otlp.proto.http, opentelemetry.instrumentation.openai_v2, openai",
        "the OpenTelemetry Python SDK, its OTLP/HTTP exporter and the openai-v2 instrumentation",
    );
    let [openai, _] = super::record::key_vars();
    let base = format!("{}/v1", replay.url);
    let vars = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collect.url.as_str()),
        ("OPENAI_BASE_URL", &base),
        (&openai, "replay-needs-no-key"),
    ];
    let unset = ["OTEL_SEMCONV_STABILITY_OPT_IN"];
    let what = "the collect example";
    let stdout = run_python(&python, &example, env.root(), &vars, &unset, what);
    assert!(stdout.contains("weather"), "{stdout}");
    let (code, said) = collect.finish(&[]);
    replay.finish(&[]);
    assert_eq!(code, 0, "{said}");
    let collected = traces(&env, "collected");
    assert_eq!(collected.len(), 1, "{said}");
    let text = String::from_utf8_lossy(&collected[0].1);
    assert!(text.contains(r#""kind":"inference""#), "{text}");
    assert!(said.contains("collected "), "{said}");
}
