//! `collect` fed OTLP/JSON by a real client: the OpenTelemetry JS SDK's OTLP/HTTP exporters
//! (JSON is their default encoding; the Python SDK exports protobuf only), spans and log
//! records. The agent's spans follow the GenAI conventions; its conversation goes only as
//! `gen_ai.client.inference.operation.details` log records. The run `collect` writes is the
//! trace `ingest` makes of the same spans and records serialized by the SDK's own JSON
//! serializer to one file (a spans document and a logs document, one per line, as the
//! collector's `file` exporter writes them). The packages come from `scripts/install-test-deps`
//! (`target/test-node`).

use std::path::PathBuf;
use std::process::Command;

use super::collect_python::traces;
use super::replay::Server;
use crate::util::*;

const AGENT: &str = r#"
const { trace, context } = require("@opentelemetry/api");
const { BasicTracerProvider, SimpleSpanProcessor, InMemorySpanExporter } = require("@opentelemetry/sdk-trace-base");
const { OTLPTraceExporter } = require("@opentelemetry/exporter-trace-otlp-http");
const { LoggerProvider, SimpleLogRecordProcessor, InMemoryLogRecordExporter } = require("@opentelemetry/sdk-logs");
const { OTLPLogExporter } = require("@opentelemetry/exporter-logs-otlp-http");
const { JsonTraceSerializer, JsonLogsSerializer } = require("@opentelemetry/otlp-transformer");
const fs = require("fs");
const [collector, file] = process.argv.slice(1);
const keptSpans = new InMemorySpanExporter(), keptLogs = new InMemoryLogRecordExporter();
const traces = new BasicTracerProvider({ spanProcessors: [
  new SimpleSpanProcessor(new OTLPTraceExporter({ url: collector + "/v1/traces" })), new SimpleSpanProcessor(keptSpans)] });
const logs = new LoggerProvider({ processors: [
  new SimpleLogRecordProcessor(new OTLPLogExporter({ url: collector + "/v1/logs" })), new SimpleLogRecordProcessor(keptLogs)] });
const tracer = traces.getTracer("weather-agent"), logger = logs.getLogger("weather-agent");
const system = [{ type: "text", content: "You answer weather questions." }];
const user = { role: "user", parts: [{ type: "text", content: "What is the weather in Paris?" }] };
const call = { type: "tool_call", id: "call_1", name: "weather", arguments: { city: "Paris" } };
function chat(parent, input, output, finish) {
  const span = tracer.startSpan("chat gpt-4.1-mini", { attributes: {
    "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4.1-mini",
    "gen_ai.usage.input_tokens": 20, "gen_ai.usage.output_tokens": 5,
    "gen_ai.response.finish_reasons": [finish] } }, parent);
  logger.emit({ eventName: "gen_ai.client.inference.operation.details", context: trace.setSpan(parent, span),
    attributes: { "gen_ai.system_instructions": JSON.stringify(system),
      "gen_ai.input.messages": JSON.stringify(input), "gen_ai.output.messages": JSON.stringify(output) } });
  span.end();
}
const agent = tracer.startSpan("invoke_agent weather", { attributes: {
  "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather" } });
const inside = trace.setSpan(context.active(), agent);
chat(inside, [user], [{ role: "assistant", parts: [call] }], "tool_calls");
const tool = tracer.startSpan("execute_tool weather", { attributes: {
  "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "weather",
  "gen_ai.tool.call.id": "call_1", "gen_ai.tool.call.arguments": '{"city":"Paris"}' } }, inside);
tool.end();
const result = { role: "tool", parts: [{ type: "tool_call_response", id: "call_1", response: "sunny, 21 C" }] };
chat(inside, [user, { role: "assistant", parts: [call] }, result],
  [{ role: "assistant", parts: [{ type: "text", content: "It is sunny in Paris, 21 C." }] }], "stop");
agent.end();
(async () => {
  await traces.forceFlush(); await logs.forceFlush();
  const text = (bytes) => Buffer.from(bytes).toString("utf8");
  fs.writeFileSync(file, text(JsonTraceSerializer.serializeRequest(keptSpans.getFinishedSpans())) + "\n" +
    text(JsonLogsSerializer.serializeRequest(keptLogs.getFinishedLogRecords())) + "\n");
  console.log(JSON.stringify({ spans: keptSpans.getFinishedSpans().length }));
  await traces.shutdown(); await logs.shutdown();
})();
"#;

/// Where the JS SDK's packages are: `target/test-node/node_modules` (`scripts/install-test-deps`).
fn node_modules() -> PathBuf {
    let modules = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-node/node_modules");
    assert!(
        modules
            .join("@opentelemetry/exporter-logs-otlp-http/package.json")
            .is_file(),
        "this test needs the OpenTelemetry JS SDK and its OTLP/HTTP exporters: run `scripts/install-test-deps` (it installs them with npm into target/test-node)"
    );
    modules
}

#[test]
fn the_js_sdk_exports_json_spans_and_log_records_to_collect_and_the_run_is_what_ingest_makes_of_them()
 {
    let modules = node_modules();
    let env = Env::new();
    let collect = Server::spawn(
        &env,
        &[
            "collect",
            "--out",
            "collected",
            "--unkeyed",
            "--settle",
            "0.3",
        ],
        &[],
    );
    let out = Command::new("node")
        .args(["-e", AGENT, &collect.url, "export.jsonl"])
        .env("NODE_PATH", &modules)
        .current_dir(env.root())
        .output()
        .unwrap_or_else(|e| {
            panic!("this test needs Node.js (`apt-get install nodejs`; `scripts/install-test-deps` does): {e}")
        });
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(r#""spans":4"#), "{stdout}");
    std::thread::sleep(std::time::Duration::from_millis(900));
    let (code, said) = collect.finish(&[]);
    assert_eq!(code, 0, "{said}");
    let collected = traces(&env, "collected");
    assert_eq!(collected.len(), 1, "{said}");
    let ingested = env.run(&[
        "ingest",
        "--unkeyed",
        "--from",
        "otlp-json",
        "-o",
        "ingested",
        "export.jsonl",
    ]);
    assert_eq!(ingested.code, 0, "{}{}", ingested.stdout, ingested.stderr);
    // The same bytes but for the importer's name: `collect` of JSON says `otlp-json` too.
    assert_eq!(collected, traces(&env, "ingested"));
    let text = String::from_utf8(collected[0].1.clone()).unwrap();
    assert_eq!(text.matches(r#""input_h":"b3:"#).count(), 2, "{text}");
    assert_eq!(text.matches(r#""system_h":"b3:"#).count(), 2, "{text}");
    for want in [
        r#""tool":"weather""#,
        r#""args":{"city":"Paris"}"#,
        "It is sunny in Paris, 21 C.",
    ] {
        assert!(text.contains(want), "{want}\n{text}");
    }
    assert!(
        !text.contains("What is the weather") && !text.contains("You answer weather"),
        "{text}"
    );
}
