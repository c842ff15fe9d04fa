//! `ingest`: each format becomes sealed traces the existing oracles judge; prompts never appear.

use crate::util::*;

fn fixture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/ingest/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn events(env: &Env, rel: &str) -> Vec<serde_json::Value> {
    let text = String::from_utf8(zstd::decode_all(&env.read(rel)[..]).unwrap()).unwrap();
    assert!(
        !text.contains("SECRET"),
        "prompt text leaked into {rel}:\n{text}"
    );
    text.lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn kinds(events: &[serde_json::Value]) -> Vec<&str> {
    events.iter().map(|e| e["kind"].as_str().unwrap()).collect()
}

const KEY: (&str, &str) = ("TRACEREPLAY_HASH_KEY", "ingest-test-key");

/// `tracereplay ingest --from FROM INPUT -o OUT EXTRA…` with `vars` set.
fn ingest(
    env: &Env,
    from: &str,
    input: &str,
    out: &str,
    extra: &[&str],
    vars: &[(&str, &str)],
) -> Output {
    let mut args = vec!["ingest", "--from", from, input, "-o", out];
    args.extend(extra);
    env.run_with(&args, vars)
}

#[test]
fn chat_completions_with_parallel_calls() {
    let env = Env::new();
    let out = ingest(
        &env,
        "openai-messages",
        &fixture("chat-parallel.json"),
        "traces",
        &["--scenario", "travel"],
        &[KEY, ("CI", "true")],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let ev = events(&env, "traces/travel/chat-parallel.trace.ndjson.zst");
    assert_eq!(
        kinds(&ev),
        [
            "user_message",
            "inference",
            "tool_call",
            "tool_call",
            "tool_result",
            "tool_result",
            "inference",
            "final_answer",
            "run_end",
            "footer"
        ]
    );
    assert!(ev[0]["prompt"]["h"].as_str().unwrap().starts_with("b3k:"));
    assert_eq!(
        ev[1]["output"]["tool_calls"][1],
        serde_json::json!({"call_id":"call_bergen","tool":"get_weather","args":{"city":"Bergen","unit":"C"}})
    );
    assert_eq!(
        ev[1]["usage"],
        serde_json::json!({"input_tokens":120,"output_tokens":40})
    );
    assert_eq!(
        ev[6]["consumes"],
        serde_json::json!(["call_oslo", "call_bergen"])
    );
    assert_eq!(
        ev[7]["text"],
        "Oslo: -3 °C and snow. Bergen: 4 °C and rain."
    );
    // Judged by the existing oracles.
    env.write(
        "traces/travel/travel.scenario.json",
        r#"{"id":"travel","title":"t","risk":"Low","oracles":[{"type":"tool-sequence","mode":"exact","calls":[{"tool":"get_weather","args":{"city":"Bergen","unit":"C"}},{"tool":"get_weather","args":{"city":"Oslo"}}]},{"type":"call-result-linked"},{"type":"final-answer-contains","value":"Bergen"}]}"#,
    );
    let out = env.run(&["check", "traces", "--fail-on", "any"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    // Same input, same key: identical bytes.
    let first = env.read("traces/travel/chat-parallel.trace.ndjson.zst");
    let again = ingest(
        &env,
        "openai-messages",
        &fixture("chat-parallel.json"),
        "again",
        &["--scenario", "travel"],
        &[KEY],
    );
    assert_eq!(again.code, 0);
    assert_eq!(
        zstd::decode_all(&first[..]).unwrap(),
        zstd::decode_all(&env.read("again/travel/chat-parallel.trace.ndjson.zst")[..]).unwrap()
    );
}

#[test]
fn multi_turn_jsonl_keeps_going_past_a_bad_run() {
    let env = Env::new();
    let bad = format!(
        "{}\nnot json at all\n",
        std::fs::read_to_string(fixture("multiturn.jsonl")).unwrap()
    );
    env.write("in.jsonl", bad);
    let out = ingest(
        &env,
        "openai-messages",
        "in.jsonl",
        "traces",
        &["--scenario", "booking"],
        &[KEY],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("error: `in.jsonl`, line 4, column 2: not JSON: expected ident\n"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("warning: `in.jsonl`, line 2, message 2: the arguments of call `c1` are not valid JSON; kept as a string"), "{}", out.stderr);
    let one = events(&env, "traces/booking/in-1.trace.ndjson.zst");
    assert_eq!(
        kinds(&one),
        [
            "user_message",
            "inference",
            "user_message",
            "inference",
            "tool_call",
            "tool_result",
            "inference",
            "final_answer",
            "run_end",
            "footer"
        ]
    );
    let two = events(&env, "traces/booking/in-2.trace.ndjson.zst");
    assert_eq!(two[2]["args"], "{not json");
    // A tool result for an unknown call id rejects that run only.
    env.write("unknown.json", r#"[[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"ghost","content":"x"}],[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]]"#);
    let out = ingest(
        &env,
        "openai-messages",
        "unknown.json",
        "u",
        &["--scenario", "s"],
        &[KEY],
    );
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains(
            "`unknown.json`, document, run 1, message 2: a tool result for unknown call id `ghost`"
        ),
        "{}",
        out.stderr
    );
    assert!(
        env.path("u/s/unknown-2.trace.ndjson.zst").exists()
            && !env.path("u/s/unknown-1.trace.ndjson.zst").exists()
    );
}

#[test]
fn responses_api_items() {
    let env = Env::new();
    let out = ingest(
        &env,
        "openai-messages",
        &fixture("responses.json"),
        "traces",
        &["--scenario", "fx", "--case", "r1"],
        &[KEY],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let ev = events(&env, "traces/fx/r1.trace.ndjson.zst");
    assert_eq!(
        kinds(&ev),
        [
            "user_message",
            "note",
            "inference",
            "tool_call",
            "tool_result",
            "inference",
            "final_answer",
            "run_end",
            "footer"
        ]
    );
    assert!(
        ev[1]["text"]
            .as_str()
            .unwrap()
            .starts_with("reasoning b3k:"),
        "reasoning kept only as a hash"
    );
    assert!(ev[2]["system_h"].as_str().unwrap().starts_with("b3k:"));
    assert_eq!(ev[3]["args"], serde_json::json!({"from":"EUR","to":"NOK"}));
    assert_eq!(ev[5]["consumes"], serde_json::json!(["fc_1"]));
}

#[test]
fn otlp_spans_with_a_failing_parallel_call() {
    let env = Env::new();
    let out = ingest(
        &env,
        "otlp-json",
        &fixture("otlp.jsonl"),
        "traces",
        &[],
        &[KEY],
    );
    assert_eq!(out.code, 1, "the span without a trace id is reported");
    assert!(
        out.stderr
            .contains("otlp.jsonl`, line 2, span 1: a span without a readable `traceId`"),
        "{}",
        out.stderr
    );
    let ev = events(
        &env,
        "traces/travel.weather/5b8efff798038103d269b633813fc60c.trace.ndjson.zst",
    );
    assert_eq!(
        kinds(&ev),
        [
            "user_message",
            "inference",
            "tool_call",
            "tool_result",
            "tool_call",
            "tool_result",
            "inference",
            "final_answer",
            "run_end",
            "footer"
        ]
    );
    assert_eq!(
        ev[1]["usage"],
        serde_json::json!({"input_tokens":120,"output_tokens":40}),
        "legacy usage names"
    );
    assert_eq!(ev[1]["finish"], "tool_call");
    assert_eq!(
        ev[5],
        serde_json::json!({"kind":"tool_result","seq":6,"ts_ms":1764417602900i64,"call_id":"call_bergen","ok":false,"error":"weather service timeout"})
    );
    assert_eq!(
        ev[6]["consumes"],
        serde_json::json!(["call_oslo", "call_bergen"])
    );
    env.write(
        "traces/travel.weather/s.scenario.json",
        r#"{"id":"travel.weather","title":"t","risk":"Low","oracles":[{"type":"tool-sequence","mode":"unordered","tools":["get_weather","get_weather"]},{"type":"tool-succeeded","tool":"get_weather"}]}"#,
    );
    let out = env.run(&["check", "traces", "--fail-on", "any", "--format", "json"]);
    let r = json(&out);
    assert_eq!(r["results"][0]["oracles"][0]["verdict"], "pass");
    assert_eq!(
        r["results"][0]["oracles"][1]["verdict"], "fail",
        "the failed call is seen"
    );
}

#[test]
fn openclaw_scenarios_and_check_scripted() {
    let env = Env::new();
    let out = ingest(
        &env,
        "openclaw-scenario",
        &fixture("scenario-scripted.json"),
        "traces",
        &[],
        &[KEY],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let ev = events(
        &env,
        "traces/agent.scripted.search/scripted.trace.ndjson.zst",
    );
    assert_eq!(
        kinds(&ev),
        [
            "user_message",
            "note",
            "tool_call",
            "tool_result",
            "state_change",
            "final_answer",
            "run_end",
            "footer"
        ]
    );
    assert_eq!(ev[2]["ts_ms"], 1_795_953_601_250i64);
    assert_eq!(ev[2]["args"], serde_json::json!({"query":"demo page"}));
    // `check --scripted` judges the scriptedTrace of a scenario without a stored trace.
    let env = Env::new();
    env.write(
        "traces/s.scenario.json",
        std::fs::read(fixture("scenario-scripted.json")).unwrap(),
    );
    let out = env.run(&["check", "traces", "--format", "json"]);
    assert_eq!(json(&out)["results"][0]["error"]["category"], "no-trace");
    let out = env.run(&[
        "check",
        "traces",
        "--scripted",
        "--format",
        "json",
        "--fail-on",
        "any",
    ]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let r = json(&out);
    assert_eq!(
        (
            r["results"][0]["source"].as_str(),
            r["results"][0]["verdict"].as_str(),
            r["results"][0]["case"].as_str()
        ),
        (Some("scripted"), Some("pass"), Some("scripted"))
    );
    assert!(!out.stdout.contains("SECRET"));
}

#[test]
fn keys_opt_in_and_errors() {
    let env = Env::new();
    let out = ingest(
        &env,
        "openai-messages",
        &fixture("chat-parallel.json"),
        "t",
        &["--scenario", "s"],
        &[("TRACEREPLAY_HASH_KEY", "")],
    );
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("set `TRACEREPLAY_HASH_KEY`") && out.stderr.contains("--unkeyed"),
        "{}",
        out.stderr
    );
    let out = ingest(
        &env,
        "openai-messages",
        &fixture("chat-parallel.json"),
        "t",
        &[],
        &[KEY],
    );
    // No scenario named: the file's stem names it, as it names the case.
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        env.path("t/chat-parallel/chat-parallel.trace.ndjson.zst")
            .exists()
    );
    let out = ingest(
        &env,
        "openai-messages",
        "missing.json",
        "t",
        &["--scenario", "s"],
        &[KEY],
    );
    assert_eq!(out.code, 2);
    // The developer opt-in writes a sidecar and changes no trace byte.
    let plain = ingest(
        &env,
        "openai-messages",
        &fixture("chat-parallel.json"),
        "plain",
        &["--scenario", "s"],
        &[KEY],
    );
    let raw = ingest(
        &env,
        "openai-messages",
        &fixture("chat-parallel.json"),
        "raw",
        &["--scenario", "s"],
        &[KEY, ("TRACEREPLAY_DEV_RAW_PROMPTS", "1")],
    );
    assert_eq!((plain.code, raw.code), (0, 0));
    assert_eq!(
        env.read("plain/s/chat-parallel.trace.ndjson.zst"),
        env.read("raw/s/chat-parallel.trace.ndjson.zst")
    );
    assert!(
        String::from_utf8(env.read("raw/s/chat-parallel.prompts.ndjson"))
            .unwrap()
            .contains("USER-PROMPT-SECRET")
    );
    assert!(!env.path("plain/s/chat-parallel.prompts.ndjson").exists());
}

/// A reader that goes away (`tracereplay ingest … 2>&1 | head -1`) ends the command quietly:
/// its diagnostics are dropped, never a panic (exit 101).
#[test]
fn a_closed_pipe_ends_ingest_quietly() {
    let env = Env::new();
    let bad = format!(
        "{}\nnot json at all\n",
        std::fs::read_to_string(fixture("multiturn.jsonl")).unwrap()
    );
    env.write("in.jsonl", bad);
    for round in 0..20 {
        let args = [
            "ingest",
            "--from",
            "openai-messages",
            "in.jsonl",
            "-o",
            "traces",
            "--scenario",
            "booking",
        ];
        let mut child = env
            .command(&args, &[KEY])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Close both ends the command writes to before it writes.
        drop(child.stdout.take());
        drop(child.stderr.take());
        let status = child.wait().unwrap();
        assert!(
            matches!(status.code(), Some(0..=2)),
            "round {round}: {status:?}"
        );
    }
}

/// The one trace writer's secret rule holds for `ingest` as for the recorders: an input one of
/// whose runs would write a secret writes nothing, names the secret by kind and fingerprint
/// only, and goes through once the fingerprint is waived.
#[test]
fn an_input_whose_run_would_write_a_secret_writes_nothing_until_it_is_waived() {
    let env = Env::new();
    let key = ["sk-", "proj-", "INGESTED", &"0123456789abcdef".repeat(2)].concat();
    let runs = serde_json::json!([
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": format!("use {key}")}],
    ]);
    env.write("leaky.json", runs.to_string());
    let run = || {
        let vars = [KEY, ("CI", "true")];
        ingest(
            &env,
            "openai-messages",
            "leaky.json",
            "traces",
            &["--scenario", "s"],
            &vars,
        )
    };
    let out = run();
    assert_eq!(out.code, 1, "{}", out.stderr);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(!all.contains("INGESTED"), "{all}");
    assert!(
        out.stderr.contains("scenario `s` case `leaky-2`: not written: what would be written holds a secret (openai-key b3:"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("error: `leaky.json`: nothing of it was written (1 of its 2 run(s) would write a secret)"),
        "{}",
        out.stderr
    );
    assert!(!env.path("traces/s").exists());
    let fingerprint = out.stderr.split("openai-key ").nth(1).unwrap()[..15].to_owned();
    assert!(fingerprint.starts_with("b3:"), "{fingerprint}");
    env.write(".tracereplay-allow", format!("{fingerprint}\n"));
    let out = run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(env.path("traces/s/leaky-1.trace.ndjson.zst").exists());
    assert!(env.path("traces/s/leaky-2.trace.ndjson.zst").exists());
}

/// Runs refused alike are a few lines and a count, not a line each: 200 runs of one export all
/// named `--case c` collide, and stderr says three of them and how many more.
#[test]
fn many_runs_refused_alike_are_said_once_with_a_count() {
    let env = Env::new();
    let spans: Vec<serde_json::Value> = (1..=200)
        .map(|t| {
            serde_json::json!({
                "traceId": format!("{t:032x}"), "spanId": format!("{t:016x}"), "name": "chat m",
                "kind": 3, "startTimeUnixNano": "1000000", "endTimeUnixNano": "2000000",
                "attributes": [
                    {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                    {"key": "gen_ai.request.model", "value": {"stringValue": "m"}},
                ],
            })
        })
        .collect();
    let export = serde_json::json!({"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": spans}]}]});
    env.write("export.json", export.to_string());
    let out = ingest(
        &env,
        "otlp-json",
        "export.json",
        "traces",
        &["--unkeyed", "--scenario", "s", "--case", "c"],
        &[],
    );
    assert_ne!(out.code, 0, "{}", out.stderr);
    let errors = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("error:"))
        .count();
    assert!(errors <= 6, "{errors} error lines:\n{}", out.stderr);
    assert!(
        out.stderr.contains("more of the kind above"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("nothing of it was written"),
        "{}",
        out.stderr
    );
}
