//! `ingest` of OpenTelemetry in every dialect and form (fixtures written by hand from each
//! convention's documentation), format detection, stable names, no silent loss, no overwrites.

use crate::util::*;

fn fixture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/ingest/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Every trace written under `dir`, decoded: (relative path, event lines).
fn traces(env: &Env, dir: &str) -> Vec<(String, Vec<serde_json::Value>)> {
    files_under(&env.path(dir))
        .into_iter()
        .filter(|f| f.ends_with(".trace.ndjson.zst"))
        .map(|f| {
            let bytes = zstd::decode_all(&env.read(&format!("{dir}/{f}"))[..]).unwrap();
            let text = String::from_utf8(bytes).unwrap();
            let lines = text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            (f, lines)
        })
        .collect()
}

/// The tool calls of a trace: (tool, args).
fn calls(events: &[serde_json::Value]) -> Vec<(String, serde_json::Value)> {
    events
        .iter()
        .filter(|e| e["kind"] == "tool_call")
        .map(|e| (e["tool"].as_str().unwrap().to_owned(), e["args"].clone()))
        .collect()
}

fn kinds(events: &[serde_json::Value]) -> Vec<&str> {
    events.iter().map(|e| e["kind"].as_str().unwrap()).collect()
}

fn ingest(env: &Env, args: &[&str]) -> Output {
    let mut all = vec!["ingest", "--unkeyed"];
    all.extend(args);
    env.run_with(&all, &[("CI", "true")])
}

#[test]
fn every_otel_dialect_keeps_its_calls_and_is_detected() {
    // (fixture, detected format, scenario/case, tool calls, whether executed)
    let cases: &[(&str, &str, &str, serde_json::Value)] = &[
        (
            "openinference.otlp.json",
            "otlp-json",
            "agent/11111111111111111111111111111111",
            serde_json::json!([["get_time", "{'tz': 'UTC'}"]]),
        ),
        (
            "vercel.otlp.json",
            "otlp-json",
            "order_status/22222222222222222222222222222222",
            serde_json::json!([["lookup_order", {"order_id": "A-1"}]]),
        ),
        (
            "traceloop.otlp.json",
            "otlp-json",
            "triage/33333333333333333333333333333333",
            serde_json::json!([["close_ticket", {"ticket": "T-9"}]]),
        ),
        (
            "sdk-envelope.json",
            "otel-spans",
            "year_agent/4bedea77bb33b9c5f280371eae21ea97",
            serde_json::json!([
                ["get_current_time", {"timezone": "America/New_York"}],
                ["write_file", {"text": "2025"}]
            ]),
        ),
        (
            "sdk-console.json",
            "otel-spans",
            "agent%20workflow/8670d923e10571522f6db768e6afc32a",
            serde_json::json!([["search_web", {"query": "brewery near Aspinwall"}]]),
        ),
    ];
    for (file, format, name, want) in cases {
        let env = Env::new();
        let out = ingest(&env, &["-o", "t", &fixture(file)]);
        assert_eq!(out.code, 0, "{file}: {}", out.stderr);
        assert!(
            out.stderr.contains(&format!("read as {format}")),
            "{file}: {}",
            out.stderr
        );
        let written = traces(&env, "t");
        assert_eq!(written.len(), 1, "{file}");
        let (path, events) = &written[0];
        assert_eq!(path, &format!("{name}.trace.ndjson.zst"), "{file}");
        let got: Vec<serde_json::Value> = calls(events)
            .into_iter()
            .map(|(t, a)| serde_json::json!([t, a]))
            .collect();
        assert_eq!(serde_json::Value::Array(got), *want, "{file}");
        // Every execution has its result, after it.
        let k = kinds(events);
        for (i, kind) in k.iter().enumerate() {
            if *kind == "tool_call" {
                assert_eq!(k[i + 1], "tool_result", "{file}: {k:?}");
            }
        }
        assert_eq!(k[1], "user_message", "{file}: {k:?}");
        assert!(out.stdout.contains("1 trace(s) written"), "{}", out.stdout);
    }
}

#[test]
fn a_python_repr_is_kept_as_recorded_and_said() {
    let env = Env::new();
    let out = ingest(&env, &["-o", "t", &fixture("openinference.otlp.json")]);
    assert!(
        out.stderr
            .contains("the arguments of `get_time` are not JSON; kept as the string recorded"),
        "{}",
        out.stderr
    );
    // Skipped spans are counted by kind.
    assert!(
        out.stdout
            .contains("skipped: 1 OpenInference CHAIN spans (not mapped)"),
        "{}",
        out.stdout
    );
}

#[test]
fn planned_calls_without_execution_stay_on_their_inference() {
    // The OpenInference LLM span plans `get_time`, the TOOL span runs it; without the TOOL
    // span the call stays planned only.
    let env = Env::new();
    let text = std::fs::read_to_string(fixture("openinference.otlp.json")).unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array_mut()
        .unwrap();
    spans.retain(|s| s["name"] != "get_time");
    env.write("planned.json", doc.to_string());
    let out = ingest(&env, &["-o", "t", "planned.json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (_, events) = &traces(&env, "t")[0];
    assert!(calls(events).is_empty());
    let planned = &events[2]["output"]["tool_calls"];
    assert_eq!(planned[0]["tool"], "get_time");
    assert_eq!(planned[0]["args"], serde_json::json!({"tz": "UTC"}));
}

#[test]
fn an_export_without_agent_events_is_refused_unless_allowed() {
    let env = Env::new();
    let out = ingest(&env, &["-o", "t", &fixture("http-only.otlp.json")]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("no agent event") && out.stderr.contains("--allow-empty"),
        "{}",
        out.stderr
    );
    assert!(traces(&env, "t").is_empty(), "nothing written");
    let out = ingest(
        &env,
        &["-o", "t", "--allow-empty", &fixture("http-only.otlp.json")],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (_, events) = &traces(&env, "t")[0];
    assert_eq!(kinds(events), ["header", "run_end", "footer"]);
}

#[test]
fn an_unknown_format_says_what_was_looked_for() {
    let env = Env::new();
    env.write("mystery.json", r#"{"hello":"world"}"#);
    let out = ingest(&env, &["-o", "t", "mystery.json"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("cannot tell its format: looked for an OTLP/JSON export")
            && out.stderr.contains("pass `--from`"),
        "{}",
        out.stderr
    );
}

#[test]
fn ingesting_again_changes_nothing_and_a_different_trace_is_not_replaced() {
    let env = Env::new();
    let input = fixture("vercel.otlp.json");
    assert_eq!(ingest(&env, &["-o", "t", &input]).code, 0);
    let path = "t/order_status/22222222222222222222222222222222.trace.ndjson.zst";
    let first = env.read(path);
    let again = ingest(&env, &["-o", "t", &input]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again.stdout.contains("0 trace(s) written, 1 unchanged"),
        "{}",
        again.stdout
    );
    assert_eq!(env.read(path), first);
    // The same trace id with other content: refused, the old file kept.
    let changed = std::fs::read_to_string(&input)
        .unwrap()
        .replace("shipped", "lost");
    env.write("changed.json", changed);
    let out = ingest(&env, &["-o", "t", "changed.json"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("holds a different trace") && out.stderr.contains("--force"),
        "{}",
        out.stderr
    );
    assert_eq!(env.read(path), first);
    let out = ingest(&env, &["-o", "t", "--force", "changed.json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_ne!(env.read(path), first);
}

/// A tau2-shaped results file, written by hand: two tasks, three simulations.
const TAU2: &str = r##"{
 "info": {"environment_info": {"domain_name": "shop"}},
 "tasks": [
  {"id": "1", "evaluation_criteria": {"actions": [
    {"action_id": "1_0", "requestor": "assistant", "name": "find_order", "arguments": {"order": "#1", "verbose": true}, "compare_args": null},
    {"action_id": "1_1", "requestor": "assistant", "name": "refund", "arguments": {"order": "#1", "amount": 5}, "compare_args": ["order"]},
    {"action_id": "1_2", "requestor": "assistant", "name": "notify", "arguments": {"text": "done"}, "compare_args": []}]}},
  {"id": "2", "evaluation_criteria": {"actions": []}}
 ],
 "simulations": [
  {"id": "s1", "task_id": "1", "trial": 0, "messages": [
    {"role": "user", "content": "Refund order 1."},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "name": "find_order", "arguments": {"order": "#1"}, "requestor": "assistant"}]},
    {"role": "tool", "id": "c1", "content": "{\"order\": \"#1\"}", "requestor": "assistant"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "c2", "name": "refund", "arguments": {"order": "#1", "amount": 7}, "requestor": "assistant"}, {"id": "c3", "name": "notify", "arguments": {"text": "other words"}, "requestor": "assistant"}]},
    {"role": "tool", "id": "c2", "content": "ok", "requestor": "assistant"},
    {"role": "tool", "id": "c3", "content": "ok", "requestor": "assistant"},
    {"role": "assistant", "content": "Refunded."}]},
  {"id": "s2", "task_id": "1", "trial": 1, "messages": [
    {"role": "user", "content": "Refund order 1."},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "name": "find_order", "arguments": {"order": "#1", "extra": 1}, "requestor": "assistant"}]},
    {"role": "tool", "id": "c1", "content": "no", "requestor": "assistant"},
    {"role": "assistant", "content": "I cannot."}]},
  {"id": "s3", "task_id": "2", "trial": 0, "messages": [
    {"role": "user", "content": "Hello."},
    {"role": "assistant", "content": "Hi."}]}
 ]}"##;

#[test]
fn benchmark_runs_are_named_by_task_and_trial_and_scenarios_come_from_ground_truth() {
    let env = Env::new();
    env.write("results.json", TAU2);
    let out = ingest(&env, &["-o", "t", "--emit-scenarios", "results.json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let files = files_under(&env.path("t"));
    assert_eq!(
        files,
        [
            "tau2.shop.task-1/results/0.trace.ndjson.zst",
            "tau2.shop.task-1/results/1.trace.ndjson.zst",
            "tau2.shop.task-1/tau2.shop.task-1.scenario.json",
            "tau2.shop.task-2/results/0.trace.ndjson.zst",
            "tau2.shop.task-2/tau2.shop.task-2.scenario.json",
        ]
    );
    // The generated scenarios pass the quality gates, and reproduce tau2's action check:
    // `null` compares the actual call's keys, a list those keys, `[]` the name only.
    let gates = env.run(&["gates", "t"]);
    assert_eq!(gates.code, 0, "{}{}", gates.stdout, gates.stderr);
    let report = json(&env.run(&["check", "t", "--format", "json", "--fail-on", "none"]));
    let verdicts = |suffix: &str| -> Vec<String> {
        row(&report, suffix)["oracles"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o["type"] != "run-completed")
            .map(|o| o["verdict"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        verdicts("task-1/results/0.trace.ndjson.zst"),
        ["pass", "pass", "pass"]
    );
    assert_eq!(
        verdicts("task-1/results/1.trace.ndjson.zst"),
        ["fail", "fail", "fail"]
    );
    // Emitting again changes nothing; a reviewed (edited) scenario is never overwritten.
    let again = ingest(&env, &["-o", "t", "--emit-scenarios", "results.json"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    let scenario = "t/tau2.shop.task-2/tau2.shop.task-2.scenario.json";
    env.write(scenario, "{\"reviewed\": true}");
    let out = ingest(&env, &["-o", "t", "--emit-scenarios", "results.json"]);
    assert_eq!(out.code, 1);
    assert_eq!(env.read(scenario), b"{\"reviewed\": true}");
}

/// `--emit-scenarios` over an input whose format holds no ground truth (an OTel export) says
/// so and still writes its traces; a benchmark's results given with it get their scenarios.
#[test]
fn emitting_scenarios_from_an_input_without_ground_truth_says_so_and_writes_its_traces() {
    let env = Env::new();
    env.write("results.json", TAU2);
    let input = fixture("vercel.otlp.json");
    let out = ingest(
        &env,
        &["-o", "t", "--emit-scenarios", &input, "results.json"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("`--emit-scenarios` reads tau-bench and tau2-bench results; this input has no ground truth to emit"),
        "{}",
        out.stderr
    );
    let files = files_under(&env.path("t"));
    assert!(
        files
            .contains(&"order_status/22222222222222222222222222222222.trace.ndjson.zst".to_owned()),
        "{files:?}"
    );
    let scenarios = files.iter().filter(|f| f.ends_with(".scenario.json"));
    assert_eq!(scenarios.count(), 2, "{files:?}");
}

#[test]
fn one_scenario_for_two_result_files_refuses_to_replace() {
    let env = Env::new();
    // Two result files of one name (their stem is the runs' agent) in two directories.
    env.write("a/shop.json", TAU2);
    env.write("b/shop.json", TAU2.replace("Refunded.", "Refunded twice."));
    let out = ingest(&env, &["-o", "t", "--scenario", "all", "a/shop.json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let before = env.read("t/all/task-1.shop/0.trace.ndjson.zst");
    let out = ingest(&env, &["-o", "t", "--scenario", "all", "b/shop.json"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("holds a different trace"),
        "{}",
        out.stderr
    );
    assert_eq!(env.read("t/all/task-1.shop/0.trace.ndjson.zst"), before);
    // A naming template tells them apart (and, naming the trial, makes each trial a case).
    let out = ingest(
        &env,
        &["-o", "t", "--name", "other/{task}-{trial}", "b/shop.json"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(env.path("t/other/1-0.trace.ndjson.zst").exists());
}

#[test]
fn an_attribute_given_twice_is_said_not_silently_overwritten() {
    let env = Env::new();
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("vercel.otlp.json")).unwrap())
            .unwrap();
    let span = &mut doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
    let first = span["attributes"][0].clone();
    span["attributes"]
        .as_array_mut()
        .unwrap()
        .push(first.clone());
    env.write("dup.otlp.json", serde_json::to_vec(&doc).unwrap());
    let out = ingest(&env, &["-o", "t", "dup.otlp.json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let key = first["key"].as_str().unwrap();
    let said = format!("attribute(s) `{key}` given more than once; the last value of each is kept");
    assert!(
        out.stdout.contains(&said) || out.stderr.contains(&said),
        "{out:?}"
    );
}

#[test]
fn cache_writes_are_read_under_both_names_the_conventions_gave_them() {
    for name in [
        "gen_ai.usage.cache_creation.input_tokens",
        "gen_ai.usage.cache_write.input_tokens",
    ] {
        let env = Env::new();
        let text = std::fs::read_to_string(fixture("otlp.jsonl")).unwrap();
        let mut doc: serde_json::Value =
            serde_json::from_str(text.lines().next().unwrap()).unwrap();
        let span = &mut doc["resourceSpans"][0]["scopeSpans"][0]["spans"][1];
        span["attributes"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"key": name, "value": {"intValue": "30"}}));
        env.write("export.json", doc.to_string());
        let out = ingest(&env, &["--from", "otlp-json", "-o", "t", "export.json"]);
        assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
        let (_, events) = traces(&env, "t").remove(0);
        let usage = &events.iter().find(|e| e["kind"] == "inference").unwrap()["usage"];
        assert_eq!(usage["cache_write_tokens"], 30, "{name}: {usage}");
    }
}

/// Content sent as OTLP log records, in an export of its own: read before the span export of
/// the same command, whatever their order; alone, it is refused with what to pass.
#[test]
fn a_logs_export_gives_its_content_to_the_spans_of_the_other_inputs() {
    let env = Env::new();
    let kv = |k: &str, v: &str| serde_json::json!({"key": k, "value": {"stringValue": v}});
    let (trace, span) = ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
    let spans = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": trace, "spanId": span, "name": "chat m", "startTimeUnixNano": "1",
        "endTimeUnixNano": "2", "attributes": [kv("gen_ai.operation.name", "chat")]}]}]}]});
    let logs = serde_json::json!({"resourceLogs": [{"scopeLogs": [{"logRecords": [
        {"eventName": "gen_ai.user.message", "traceId": trace, "spanId": span,
         "body": {"kvlistValue": {"values": [
            {"key": "content", "value": {"stringValue": "What is the weather in Paris?"}}]}}},
        {"eventName": "gen_ai.choice", "traceId": trace, "spanId": span,
         "body": {"kvlistValue": {"values": [
            {"key": "finish_reason", "value": {"stringValue": "stop"}},
            {"key": "message", "value": {"kvlistValue": {"values": [
                {"key": "content", "value": {"stringValue": "Sunny."}}]}}}]}}},
        {"body": {"stringValue": "a plain log line"}}]}]}]});
    env.write("spans.json", spans.to_string());
    env.write("logs.json", logs.to_string());
    let alone = env.run(&["ingest", "--unkeyed", "-o", "out", "logs.json"]);
    assert_eq!(alone.code, 2, "{}{}", alone.stdout, alone.stderr);
    assert!(
        alone.stderr.contains("only OTLP logs exports were given"),
        "{}",
        alone.stderr
    );
    let both = env.run(&[
        "ingest",
        "--unkeyed",
        "-o",
        "out",
        "logs.json",
        "spans.json",
    ]);
    assert_eq!(both.code, 0, "{}{}", both.stdout, both.stderr);
    assert!(
        both.stderr.contains(
            "`logs.json`: read as OTLP logs: 2 record(s) of inference content for the spans of the other inputs, 1 other record(s) not used"
        ),
        "{}",
        both.stderr
    );
    let written = traces(&env, "out");
    assert_eq!(written.len(), 1);
    let inference = written[0]
        .1
        .iter()
        .find(|e| e["kind"] == "inference")
        .unwrap();
    assert!(inference["input_h"].as_str().unwrap().starts_with("b3:"));
    assert_eq!(inference["output"]["text"], "Sunny.");
    assert_eq!(inference["finish"], "stop");
    let text = serde_json::to_string(&written[0].1).unwrap();
    assert!(!text.contains("weather in Paris"), "{text}");
}
