//! The documented flows end green, as a new user follows `docs/recording.md` word for word in a
//! project made by `init`: record with the documented examples (into the suite, no `finish`
//! call), check, review, accept, check green; change the agent's tool result, record again with
//! `--replace`, check shows the drift, accept, check green. And a check of a directory outside
//! the project's paths writes no pending baseline into it.

use super::record::{everything_under, key_vars, python, sentinel};
use super::replay::Server;
use crate::util::*;

/// The recorder's documented examples, one per SDK, as docs/recording.md writes them.
fn examples() -> Vec<String> {
    let docs = recording_docs_from("# Record an agent's runs");
    let end = docs.find("## What is recorded").unwrap();
    let examples = fenced_blocks(&docs[..end], "```python\n");
    assert_eq!(examples.len(), 3, "one example per SDK");
    examples
}

/// A project made by `init`, with the demo weather scenario's file in its suite (`traces/`),
/// as a user writes scenario files there.
fn project() -> Env {
    let env = Env::new();
    assert_eq!(env.run(&["init"]).code, 0);
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let scenario = "agent.replay.weather/agent.replay.weather.scenario.json";
    env.write(
        &format!("traces/{scenario}"),
        std::fs::read(root.join("traces").join(scenario)).unwrap(),
    );
    env
}

/// `record` as the docs start it (no `--out`: into the suite), with `extra` flags.
fn record(env: &Env, upstream: &str, extra: &[&str]) -> Server {
    let mut args = vec!["record", "--upstream", upstream, "--unkeyed"];
    args.extend_from_slice(extra);
    Server::spawn(env, &args, &[])
}

/// Runs a documented example against the recorder; its standard output.
fn run_example(env: &Env, rec: &Server, example: &str, what: &str) -> String {
    let [openai, anthropic] = key_vars();
    let key = sentinel();
    let vars = [
        ("RECORDER", rec.url.as_str()),
        (&openai, &key),
        (&anthropic, &key),
    ];
    let unset = ["OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"];
    run_python(&python(), example, env.root(), &vars, &unset, what)
}

const OFF_CI: [(&str, &str); 1] = [("CI", "false")];
const RECORDED: &str = "traces/agent.replay.weather/paris.trace.ndjson.zst";

#[test]
fn each_sdks_example_records_a_run_that_passes_its_scenario() {
    for (i, example) in examples().iter().enumerate() {
        assert!(example.lines().count() <= 5, "{example}");
        let what = format!("example {i}");
        let env = project();
        // The model: the demo's weather run replayed, from outside the suite.
        copy_dir(
            &std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("traces/agent.replay.weather"),
            &env.path("model/agent.replay.weather"),
        );
        let up = Server::start(&env, &["model/agent.replay.weather"]);
        let rec = record(&env, &up.url, &[]);
        let stdout = run_example(&env, &rec, example, &what);
        assert!(stdout.contains("sunny"), "{what}: {stdout}");
        let (code, printed) = rec.finish(&[]);
        assert_eq!(code, 0, "{what}: {printed}");
        assert!(
            printed.contains("(completed, end inferred from the final answer) -> traces/"),
            "{what}: {printed}"
        );
        let (_, served) = up.finish(&[]);
        assert!(!served.contains("divergence"), "{what}: {served}");
        assert!(!everything_under(&env, "traces").contains("SENTINEL"));
        // Judged where it was recorded: every oracle of the scenario passes.
        let check = env.run_with(&["check", "--format", "json"], &OFF_CI);
        let report = json(&check);
        let row = row(&report, "paris.trace.ndjson.zst");
        assert_eq!(row["verdict"], "pass", "{what}: {row}");
        // Accepted, the project is green, under CI too.
        assert_eq!(env.run_with(&["baseline", "accept"], &OFF_CI).code, 0);
        let green = env.run_with(&["check"], &OFF_CI);
        assert_eq!(green.code, 0, "{what}: {}{}", green.stdout, green.stderr);
        assert_eq!(env.run(&["check"]).code, 0, "{what}: under CI");
    }
}

/// A model that asks for the weather, then answers from the tool's result: what the agent
/// hands back may change without the conversation diverging from a recording.
fn weather_model() -> String {
    loopback_upstream(|mut out, r| {
        use std::io::Write;
        let body = String::from_utf8_lossy(&r.body);
        let message = if body.contains(r#""role":"tool""#) {
            serde_json::json!({"role": "assistant", "content": "It is sunny in Paris, 21 C."})
        } else {
            serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}]})
        };
        let finish = if message["tool_calls"].is_null() {
            "stop"
        } else {
            "tool_calls"
        };
        let answer = serde_json::json!({
            "id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4.1-mini",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
        })
        .to_string();
        write!(
            out,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
            answer.len()
        )
    })
}

/// Records the Chat example (its tool answering `forecast`) into the suite.
fn record_chat(env: &Env, model: &str, forecast: &str, extra: &[&str]) -> String {
    let example = examples()[0].replace(r#""sunny, 21 C""#, forecast);
    let rec = record(env, model, extra);
    run_example(env, &rec, &example, "the Chat example");
    let (code, printed) = rec.finish(&[]);
    assert_eq!(code, 0, "{printed}");
    assert!(env.path(RECORDED).exists(), "{printed}");
    // In logs (not a terminal), a line as the session opens.
    assert!(
        printed.contains("opened agent.replay.weather/paris"),
        "{printed}"
    );
    printed
}

/// The whole loop of docs/recording.md: record → check → review → accept → check green; the
/// agent's tool result changes → record again (`--replace`) → check shows the two values →
/// review → accept → check green. No step turns the project red but the agent's change.
#[test]
fn the_documented_loop_ends_green_and_drift_shows_what_changed() {
    let env = project();
    let model = weather_model();
    record_chat(&env, &model, r#""sunny, 21 C""#, &[]);
    // New: a pending baseline, reviewed and accepted.
    let first = env.run_with(&["check"], &OFF_CI);
    assert!(
        first.stdout.contains("pending baseline(s)"),
        "{}",
        first.stdout
    );
    let pending = env.run_with(&["baseline", "pending"], &OFF_CI);
    assert_eq!(pending.code, 0, "{}{}", pending.stdout, pending.stderr);
    assert!(
        pending.stdout.contains("agent.replay.weather"),
        "{}",
        pending.stdout
    );
    assert_eq!(env.run_with(&["baseline", "accept"], &OFF_CI).code, 0);
    let green = env.run_with(&["check"], &OFF_CI);
    assert_eq!(green.code, 0, "{}{}", green.stdout, green.stderr);

    // The agent changes what its tool returns; the same case is recorded again.
    let refused = record(&env, &model, &[]);
    let (status, said) = refused.post(
        "/record/agent.replay.weather/paris/v1/chat/completions",
        &[],
        r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#,
    );
    assert_eq!(status, 409, "{said}");
    assert!(said.contains("--replace"), "{said}");
    let _ = refused.finish(&[]);
    let json = r#"'{"city": "Paris", "sky": "sunny", "temp_c": 21}'"#;
    record_chat(&env, &model, json, &["--replace"]);
    let drifted = env.run_with(&["check"], &OFF_CI);
    assert_eq!(drifted.code, 1, "{}{}", drifted.stdout, drifted.stderr);
    // The reviewer reads the two values, not two hashes: in check, in diff, in the pending
    // baseline's review and in the baseline file itself.
    let old = r#"-call#1 weather {"city":"Paris"} => "sunny, 21 C""#;
    let new = r#"+call#1 weather {"city":"Paris"} => "{\"city\": \"Paris\", \"sky\": \"sunny\", \"temp_c\": 21}""#;
    for (what, shown) in [
        ("check", drifted.stdout.clone()),
        ("diff", env.run_with(&["diff"], &OFF_CI).stdout),
        (
            "baseline pending",
            env.run_with(&["baseline", "pending", "--diff"], &OFF_CI)
                .stdout,
        ),
    ] {
        assert!(
            shown.contains(old) && shown.contains(new),
            "{what}: {shown}"
        );
    }
    // The HTML report's drift panel too.
    let html = env.run_with(&["check", "--html", "drift.html"], &OFF_CI);
    assert_eq!(html.code, 1, "{}", html.stderr);
    let page = String::from_utf8(env.read("drift.html")).unwrap();
    assert!(
        page.contains("sunny, 21 C") && page.contains("temp_c"),
        "no values in the HTML"
    );
    let pending =
        String::from_utf8(env.read("baselines/agent.replay.weather/paris.baseline.json.new"))
            .unwrap();
    assert!(
        pending.contains(r#""result_text": "\"{\\\"city\\\": "#),
        "{pending}"
    );
    // Reviewed and accepted, the project is green again.
    assert_eq!(env.run_with(&["baseline", "accept"], &OFF_CI).code, 0);
    let green = env.run_with(&["check"], &OFF_CI);
    assert_eq!(green.code, 0, "{}{}", green.stdout, green.stderr);
    assert_eq!(env.run(&["check"]).code, 0, "under CI");
}

/// A check of a directory outside the project's `paths` (another checkout, a replay's output)
/// compares with the approved baselines but proposes none into the project, and says so once;
/// `-q` silences its notes. The project stays green.
#[test]
fn a_check_outside_the_projects_paths_writes_no_pending_baseline_and_says_so() {
    let env = Env::new();
    assert_eq!(env.run(&["init"]).code, 0);
    copy_dir(
        &std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("traces"),
        &env.path("elsewhere/traces"),
    );
    let before = files_under(&env.path("baselines"));
    let out = env.run_with(&["check", "elsewhere/traces"], &OFF_CI);
    assert!(
        out.stderr
            .contains("`elsewhere/traces` is outside the project's paths (`traces`)")
            && out.stderr.contains("no pending baseline is written"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.matches("note:").count(), 1, "{}", out.stderr);
    assert_eq!(
        files_under(&env.path("baselines")),
        before,
        "nothing proposed"
    );
    let quiet = env.run_with(&["check", "-q", "elsewhere/traces"], &OFF_CI);
    assert!(!quiet.stderr.contains("note:"), "{}", quiet.stderr);
    let green = env.run_with(&["check"], &OFF_CI);
    assert_eq!(green.code, 0, "{}{}", green.stdout, green.stderr);
    // A look-up of the suite's scenarios is one note, not one line per scenario.
    let replayed = env.run_with(
        &["check", "traces/", "elsewhere/traces/agent.replay.weather"],
        &OFF_CI,
    );
    assert!(
        replayed.stderr.matches("note:").count() <= 1,
        "{}",
        replayed.stderr
    );
}

/// On a terminal, `record` keeps a status line of what is open and what was written (no line
/// per opening: that is for logs).
#[test]
fn record_shows_what_is_open_on_a_terminal() {
    let env = project();
    let model = weather_model();
    let pty = super::review::Pty::spawn(&env, &["record", "--upstream", &model, "--unkeyed"]);
    let at = pty.wait_for(0, "listening on ");
    let end = pty.wait_for(at, "\n");
    let url = pty.text()[at..end].trim().to_owned();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let session = format!("{url}/record/agent.replay.weather/paris");
    let ask =
        r#"{"model":"m","messages":[{"role":"user","content":"What is the weather in Paris?"}]}"#;
    let resp = (agent.post(&format!("{session}/v1/chat/completions")))
        .header("content-type", "application/json")
        .send(ask)
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let at = pty.wait_for(end, "recording: 1 session(s) open, 0 written");
    let resp = (agent.post(&format!("{session}/tracereplay/v1/finish")))
        .header("content-type", "application/json")
        .send("{}")
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let at = pty.wait_for(at, "recorded agent.replay.weather/paris");
    pty.wait_for(at, "recording: 0 session(s) open, 1 written");
    assert!(!pty.text().contains("opened "), "{}", pty.text());
}

/// A run recorded without its messages (an instrumentation whose content capture is off) can
/// still end `completed` and pass what it can: `check` says its oracles saw no messages.
#[test]
fn a_run_recorded_without_content_is_said_to_be() {
    let env = Env::new();
    env.write("traces/s/s.scenario.json", scenario("s", "High", "weather"));
    let blind = trace_text(
        "s",
        "blind",
        &[
            r#"{"kind":"inference","output":{}}"#,
            r#"{"kind":"tool_call","call_id":"c1","tool":"weather","args":{"city":"Paris"}}"#,
            r#"{"kind":"tool_result","call_id":"c1","ok":true}"#,
            r#"{"kind":"inference"}"#,
            END,
        ],
    );
    env.write("traces/s/blind.trace.ndjson.zst", sealed_zst(&blind));
    let out = env.run(&["check", "traces/"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains("its 2 model request(s) carry no content"),
        "{}",
        out.stderr
    );
    // A run with its messages says nothing of the kind.
    let seen = trace_text(
        "s",
        "seen",
        &[
            &format!(
                r#"{{"kind":"inference","input_h":"b3:{}","output":{{"text":"ok"}}}}"#,
                "0".repeat(64)
            ),
            r#"{"kind":"tool_call","call_id":"c1","tool":"weather","args":{"city":"Paris"}}"#,
            END,
        ],
    );
    env.write("traces/s/blind.trace.ndjson.zst", sealed_zst(&seen));
    let out = env.run(&["check", "traces/"]);
    assert!(!out.stderr.contains("carry no content"), "{}", out.stderr);
}

/// `record` without `--out` needs a suite on disk to record into: without a project file, or
/// with a suite in object storage, it says to give `--out`, and writes nothing.
#[test]
fn record_without_out_needs_a_suite_on_disk() {
    let env = Env::new();
    let out = env.run(&["record", "--upstream", "http://127.0.0.1:9", "--unkeyed"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("needs `--out DIR`"), "{}", out.stderr);
    env.write("tracereplay.toml", "paths = [\"s3://bucket/traces\"]\n");
    let out = env.run(&["record", "--upstream", "http://127.0.0.1:9", "--unkeyed"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("in object storage"), "{}", out.stderr);
    assert!(!env.path("s3:").exists());
}
