//! ATIF both ways: trajectories built with the published `atif` Pydantic models are ingested
//! (`ingest --from atif`, and detected without it), the trace exported back (`export --to atif`)
//! validates against the same models, and the round trip keeps what the trace format holds and
//! says what it dropped. The models come from `scripts/install-test-deps` (`target/test-venv`).

use std::process::Command;

use crate::util::*;

fn python() -> std::path::PathBuf {
    test_python("atif", "the `atif` Python package (ATIF's Pydantic models)")
}

/// A trajectory built with the models: a system prompt, a user turn, an agent step that reasons,
/// calls `weather` and observes its result, a final answer, and one embedded subagent.
const BUILD: &str = r#"
import json
from atif import Trajectory, Agent, Step, ToolCall, Observation, ObservationResult, Metrics
sub = Trajectory(schema_version="ATIF-v1.8", trajectory_id="geo", agent=Agent(name="geo", version="1"),
                 steps=[Step(step_id=1, source="user", message="Where is Paris?"),
                        Step(step_id=2, source="agent", message="In France.")])
t = Trajectory(
    schema_version="ATIF-v1.8", session_id="run-7",
    agent=Agent(name="weather-bot", version="2.1", model_name="gpt-4.1-mini"),
    steps=[
        Step(step_id=1, source="system", message="You answer weather questions."),
        Step(step_id=2, source="user", message="What is the weather in Paris?", timestamp="2026-12-01T10:00:00Z"),
        Step(step_id=3, source="agent", message="", reasoning_content="I should look it up.",
             tool_calls=[ToolCall(tool_call_id="call_1", function_name="weather", arguments={"city": "Paris"})],
             observation=Observation(results=[ObservationResult(source_call_id="call_1", content="sunny, 21 C")]),
             metrics=Metrics(prompt_tokens=50, completion_tokens=10, cached_tokens=20, cost_usd=0.001),
             timestamp="2026-12-01T10:00:01Z", extra={"latency": 1}),
        Step(step_id=4, source="agent", message="It is sunny in Paris, 21 C.",
             metrics=Metrics(prompt_tokens=70, completion_tokens=12)),
    ],
    subagent_trajectories=[sub],
)
print(json.dumps(t.to_json_dict()))
"#;

/// Validates ATIF JSON on stdin with the models; prints the step count.
const VALIDATE: &str = r#"
import json, sys
from atif import Trajectory
t = Trajectory.model_validate(json.load(sys.stdin))
print(json.dumps(t.to_json_dict()))
"#;

fn py(script: &str, stdin: Option<&str>) -> String {
    use std::io::Write;
    let mut child = Command::new(python())
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.unwrap_or("").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn an_atif_trajectory_ingests_hashed_and_its_subagent_is_a_run_of_its_own() {
    let env = Env::new();
    env.write("run.json", py(BUILD, None));
    for from in [&["--from", "atif"][..], &[][..]] {
        let mut args = vec![
            "ingest",
            "--unkeyed",
            "--scenario",
            "weather",
            "-o",
            "traces",
        ];
        args.extend_from_slice(from);
        args.push("run.json");
        let out = env.run(&args);
        assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
        // What the trace format has no place for is counted.
        assert!(
            out.stdout.contains("skipped: 1 atif step `extra`"),
            "{}",
            out.stdout
        );
    }
    let trace = env
        .run(&["cat", "traces/weather/run-7.trace.ndjson.zst"])
        .stdout;
    for want in [
        r#""source":"atif""#,
        r#""model":"gpt-4.1-mini""#,
        r#""atif.agent":"weather-bot""#,
        r#""kind":"note","seq":2,"ts_ms":1796119201000,"text":"reasoning: I should look it up.""#,
        // The conversation hashes as the demo's weather run (ingested from OpenAI messages)
        // hashes the same conversation: one canonical form across formats.
        r#""input_h":"b3:1cc86adc3a8707b2c5a9477c058330e97a09014044158cd0f2beac7ca2f7bc3e""#,
        r#""tool_calls":[{"call_id":"call_1","tool":"weather","args":{"city":"Paris"}}]"#,
        r#""usage":{"input_tokens":50,"output_tokens":10,"cache_read_tokens":20,"cost_usd":0.001}"#,
        r#""kind":"tool_result","seq":5,"call_id":"call_1","ok":true,"output":"sunny, 21 C""#,
        r#""kind":"final_answer","seq":7,"text":"It is sunny in Paris, 21 C.""#,
        r#""kind":"run_end","seq":8,"status":"completed""#,
    ] {
        assert!(trace.contains(want), "{want}\n{trace}");
    }
    // Prompts are hashes: neither the system prompt nor the user's question is in the trace.
    assert!(
        !trace.contains("You answer weather") && !trace.contains("What is the weather"),
        "{trace}"
    );
    let sub = env.run(&["cat", "traces/weather/run-7.geo.trace.ndjson.zst"]);
    assert!(
        sub.stdout.contains(r#""text":"In France.""#),
        "{}{}",
        sub.stdout,
        sub.stderr
    );
}

#[test]
fn an_exported_trace_is_a_valid_atif_trajectory_and_the_round_trip_keeps_what_a_trace_holds() {
    let env = Env::new();
    let original = py(BUILD, None);
    env.write("run.json", &original);
    let out = env.run(&[
        "ingest",
        "--unkeyed",
        "--scenario",
        "weather",
        "--from",
        "atif",
        "-o",
        "traces",
        "run.json",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let exported = env.run(&[
        "export",
        "--to",
        "atif",
        "traces/weather/run-7.trace.ndjson.zst",
    ]);
    assert_eq!(exported.code, 0, "{}", exported.stderr);
    assert!(
        exported.stderr.contains("dropped: 1 run_end"),
        "{}",
        exported.stderr
    );
    let back: serde_json::Value =
        serde_json::from_str(&py(VALIDATE, Some(&exported.stdout))).unwrap();
    let original: serde_json::Value = serde_json::from_str(&original).unwrap();
    let (a, b) = (
        original["steps"].as_array().unwrap(),
        back["steps"].as_array().unwrap(),
    );
    assert_eq!(a.len(), b.len(), "{back:#}");
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x["source"], y["source"]);
        // What the trace holds comes back as it was; prompts come back as their hashes.
        for k in [
            "tool_calls",
            "observation",
            "metrics",
            "reasoning_content",
            "timestamp",
        ] {
            let want = match (k, &x[k]) {
                ("timestamp", serde_json::Value::String(t)) => {
                    serde_json::json!(t.replace("Z", ".000Z"))
                }
                (_, v) => v.clone(),
            };
            assert_eq!(want, y[k], "{k}: {x} vs {y}");
        }
        match x["source"].as_str() {
            Some("agent") => assert_eq!(x["message"], y["message"]),
            _ => assert!(y["message"].as_str().unwrap().starts_with("b3:"), "{y}"),
        }
    }
    assert_eq!(back["session_id"], "run-7");
    assert_eq!(back["agent"]["name"], "weather-bot");
    assert_eq!(back["agent"]["model_name"], "gpt-4.1-mini");
}

#[test]
fn the_recording_docs_atif_example_runs_as_written() {
    let docs = recording_docs_from("## Trajectories in ATIF");
    let block = fenced_blocks(&docs, "```sh\n").remove(0);
    let env = Env::new();
    env.write("trajectory.json", py(BUILD, None));
    // A scenario for the run, so that `check` judges it.
    env.write(
        "traces/weather/weather.scenario.json",
        r#"{"id": "weather", "title": "weather", "risk": "Low", "type": "agent", "oracles": [{"type": "final-answer-contains", "value": "sunny"}]}"#,
    );
    let bin = env.binary().parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for line in block.lines() {
        let out = Command::new("sh")
            .args(["-c", line])
            .current_dir(env.root())
            .env("PATH", &path)
            .env("CI", "true")
            .env_remove("TRACEREPLAY_HASH_KEY")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{line}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let again: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("again.json")).unwrap()).unwrap();
    assert_eq!(again["session_id"], "run-7");
    py(VALIDATE, Some(&again.to_string()));
}

/// A run named with control characters (an ATIF `session_id` of `a\n::error::x\x1b[2J`) is
/// printed escaped: no line of `ingest`'s output starts a CI annotation, none holds a raw ESC.
#[test]
fn run_names_are_printed_escaped() {
    let env = Env::new();
    let doc = serde_json::json!({
        "schema_version": "ATIF-v1.8", "session_id": "a\n::error::x\u{1b}[2J",
        "agent": {"name": "weather", "version": "1"},
        "steps": [{"step_id": 1, "source": "user", "message": "hi"},
                  {"step_id": 2, "source": "agent", "message": "hello"}],
    });
    env.write("run.json", doc.to_string());
    let out = env.run(&[
        "ingest",
        "--unkeyed",
        "--from",
        "atif",
        "-o",
        "traces",
        "run.json",
    ]);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(!all.contains('\u{1b}'), "{all:?}");
    assert!(!all.lines().any(|l| l.starts_with("::error::")), "{all:?}");
}

/// Every step's `timestamp` is read by the one parser: an offset without a colon is hours and
/// minutes (never 530 hours), an impossible date is refused and counted under `skipped:`, never
/// shifted, and digits below the millisecond are counted.
#[test]
fn step_timestamps_are_read_exactly_or_counted() {
    let env = Env::new();
    let doc = serde_json::json!({
        "schema_version": "ATIF-v1.8", "session_id": "stamps",
        "agent": {"name": "weather", "version": "1"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "hi", "timestamp": "2026-01-01T05:30:10+0530"},
            {"step_id": 2, "source": "agent", "message": "one", "timestamp": "2026-02-31T00:00:00Z"},
            {"step_id": 3, "source": "user", "message": "again", "timestamp": "20260101T000100Z"},
            {"step_id": 4, "source": "agent", "message": "two", "timestamp": "2026-01-01T00:01:08.280365+00:00"},
        ],
    });
    env.write("run.json", doc.to_string());
    let out = env.run(&[
        "ingest",
        "--unkeyed",
        "--from",
        "atif",
        "-o",
        "traces",
        "run.json",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(
        all.contains("atif step `timestamp` (not an ISO 8601 time: refused)")
            && !all.contains("below the millisecond"),
        "{all}"
    );
    let trace = files_under(&env.path("traces"))
        .into_iter()
        .find(|f| f.ends_with(".trace.ndjson.zst"))
        .unwrap();
    let text =
        String::from_utf8(zstd::decode_all(&env.read(&format!("traces/{trace}"))[..]).unwrap())
            .unwrap();
    let stamps: Vec<i64> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|e| e["ts_ms"].as_i64())
        .collect();
    // 2026-01-01T00:00:10Z, 00:01:00Z and 00:01:08.280Z; the impossible date gave no time.
    for want in [1_767_225_610_000, 1_767_225_660_000, 1_767_225_668_280] {
        assert!(stamps.contains(&want), "{want} not in {stamps:?}\n{text}");
    }
    assert!(stamps.iter().all(|t| *t >= 1_767_225_610_000), "{stamps:?}");
    // The digits below the millisecond are kept beside `ts_ms`, and come back on export.
    assert!(
        text.contains(r#""ts_ms":1767225668280,"ts_sub_ns":365000"#),
        "{text}"
    );
    let exported = env.run(&["export", "--to", "atif", &format!("traces/{trace}")]);
    assert!(
        exported
            .stdout
            .contains(r#""timestamp": "2026-01-01T00:01:08.280365Z""#),
        "{}{}",
        exported.stdout,
        exported.stderr
    );
}
