//! `pip install` of the wheel built here (`scripts/install-test-deps` builds it with maturin
//! into target/wheels) into a fresh virtual environment, without the network, and the pytest
//! plugin on the example project (examples/pytest-weather) with the real OpenAI SDK: the first
//! run records through a loopback model, the second replays under CI with the model gone, and a
//! changed agent fails with the oracle's evidence; `python -m tracereplay` and the console
//! script are the installed command; the metadata passes `twine check`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::*;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The newest modification time of the files under `dir` (recursively).
fn newest(dir: &Path) -> std::time::SystemTime {
    let mut latest = std::time::SystemTime::UNIX_EPOCH;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let t = match path.is_dir() {
            true => newest(&path),
            false => (entry.metadata().and_then(|m| m.modified())).unwrap_or(latest),
        };
        latest = latest.max(t);
    }
    latest
}

/// The wheel install-test-deps built, current with the sources.
fn wheel() -> PathBuf {
    let built = std::fs::read_dir(root().join("target/wheels"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"));
    let fix = "run `scripts/install-test-deps` (it builds the wheel with maturin: `target/test-venv/bin/maturin build --profile dev --strip --out target/wheels`)";
    let wheel = built.unwrap_or_else(|| panic!("no wheel in target/wheels: {fix}"));
    let at = std::fs::metadata(&wheel)
        .and_then(|m| m.modified())
        .unwrap();
    for sources in ["src", "python/tracereplay"] {
        assert!(
            newest(&root().join(sources)) <= at,
            "the wheel in target/wheels is older than {sources}/: {fix}"
        );
    }
    wheel
}

fn run(cmd: &mut Command, what: &str) -> (i32, String) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// A loopback model: a tool call of `weather` for Paris, then, once the tool's result is
/// handed back, the answer.
fn model(mut conn: std::net::TcpStream, req: Received) -> std::io::Result<()> {
    use std::io::Write;
    let body: serde_json::Value = serde_json::from_slice(&req.body).unwrap_or_default();
    let last = body["messages"].as_array().and_then(|m| m.last()).cloned();
    let message = match last.as_ref().and_then(|m| m["role"].as_str()) {
        Some("tool") => {
            serde_json::json!({"role": "assistant", "content": "It is sunny in Paris, 21 C."})
        }
        _ => serde_json::json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Paris\"}"}}]}),
    };
    let finish = if message["tool_calls"].is_null() {
        "stop"
    } else {
        "tool_calls"
    };
    let answer = serde_json::json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1,
        "model": body["model"], "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 6, "total_tokens": 18}})
    .to_string();
    write!(
        conn,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
        answer.len()
    )
}

/// A fresh virtual environment under `dir` with the wheel, pytest and the OpenAI and Anthropic
/// SDKs installed from the local wheelhouse: no network.
fn fresh_venv(dir: &Path, wheel: &Path) -> PathBuf {
    let venv = dir.join("venv");
    let (code, text) = run(
        Command::new("python3").args(["-m", "venv"]).arg(&venv),
        "venv",
    );
    assert_eq!(code, 0, "{text}");
    let (code, text) = run(
        Command::new(venv.join("bin/pip"))
            .args([
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-index",
            ])
            .arg("--find-links")
            .arg(root().join("target/wheelhouse"))
            .arg(wheel)
            .args(["pytest", "pytest-xdist", "openai", "anthropic"]),
        "pip install",
    );
    assert_eq!(
        code, 0,
        "pip install of the wheel: {text} (the wheelhouse comes from scripts/install-test-deps)"
    );
    venv
}

/// The plugin's own tests (`python/tests/test_plugin.py`, with pytest's `pytester`) against the
/// installed wheel: each record mode, CI, a failing oracle's message, drift to a pending
/// baseline, the Anthropic SDK, streamed and not, pytest-xdist workers, trials judged as one
/// set, and a server that dies mid-session.
#[test]
fn the_plugins_own_tests_pass_against_the_installed_wheel() {
    let wheel = wheel();
    let dir = tempfile::tempdir().unwrap();
    let venv = fresh_venv(dir.path(), &wheel);
    let mut cmd = Command::new(venv.join("bin/pytest"));
    cmd.args(["-p", "pytester", "-q", "-p", "no:cacheprovider"])
        .arg(root().join("python/tests/test_plugin.py"))
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir.path());
    let (code, text) = run(&mut cmd, "pytest");
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("12 passed"), "{text}");
}

#[test]
fn the_wheel_installs_the_command_and_its_plugin_records_replays_and_fails_with_evidence() {
    let wheel = wheel();
    let python = test_python(
        "maturin, twine",
        "maturin and twine (the wheel's build and check)",
    );
    let dir = tempfile::tempdir().unwrap();
    // The metadata is complete.
    let (code, text) = run(
        Command::new(&python)
            .args(["-m", "twine", "check", "--strict"])
            .arg(&wheel),
        "twine check",
    );
    assert_eq!(code, 0, "{text}");
    let venv = fresh_venv(dir.path(), &wheel);
    // The console script and `python -m tracereplay` are the command, at the crate's version.
    let version = format!("tracereplay {}", env!("CARGO_PKG_VERSION"));
    for cmd in [
        Command::new(venv.join("bin/tracereplay"))
            .arg("--version")
            .env_remove("CI"),
        Command::new(venv.join("bin/python"))
            .args(["-m", "tracereplay", "--version"])
            .env_remove("CI"),
    ] {
        let (code, text) = run(cmd, "--version");
        assert_eq!((code, text.trim()), (0, version.as_str()));
    }
    // The README's demo check, with the installed command.
    let demo = dir.path().join("demo");
    copy_dir(&root().join("traces"), &demo.join("traces"));
    copy_dir(&root().join("baselines"), &demo.join("baselines"));
    let (code, text) = run(
        Command::new(venv.join("bin/tracereplay"))
            .args(["check", "traces/"])
            .current_dir(&demo)
            .env("CI", "true"),
        "demo check",
    );
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("20 traces, 15 scenarios: 11 passed, 9 failed")
            && text.contains("0 blocking"),
        "{text}"
    );

    let project = dir.path().join("project");
    copy_dir(&root().join("examples/pytest-weather"), &project);
    let pytest = |args: &[&str], envs: &[(&str, &str)]| {
        let mut cmd = Command::new(venv.join("bin/pytest"));
        cmd.args(["-q", "-p", "no:cacheprovider"])
            .args(args)
            .current_dir(&project);
        // Only what a shell needs: no key, no CI, no base URL from the calling environment.
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default());
        cmd.env("HOME", dir.path());
        cmd.envs(envs.iter().copied());
        run(&mut cmd, "pytest")
    };
    // First run, off CI: no recording, so it records through the model.
    let upstream = loopback_upstream(model);
    let (code, text) = pytest(&["--tracereplay-upstream", &upstream], &[]);
    assert_eq!(code, 0, "{text}");
    let recording = project.join("traces/weather/test_paris.trace.ndjson.zst");
    assert!(recording.is_file(), "{text}");
    let installed = venv.join("bin/tracereplay");
    let (code, text) = run(
        Command::new(&installed)
            .args(["baseline", "approve"])
            .current_dir(&project)
            .env_remove("CI"),
        "approve",
    );
    assert_eq!(code, 0, "{text}");
    // Under CI (mode none), with the model gone: it replays.
    let gone = "http://127.0.0.1:9";
    let (code, text) = pytest(&["--tracereplay-upstream", gone], &[("CI", "true")]);
    assert_eq!(code, 0, "{text}");
    // The agent changed (its tool now fails): the test fails with the oracle and its evidence.
    let (code, text) = pytest(&[], &[("CI", "true"), ("WEATHER_SERVICE_DOWN", "1")]);
    assert_eq!(code, 1, "{text}");
    for want in [
        "tracereplay: weather/test_paris fail",
        "fail replay-divergence: the replay diverged from its recording: request 2: input_h differs at /messages/3/content (the tool result of call_1)",
        "deciding events: seq",
        "trace .tracereplay/pytest/replayed/weather/test_paris.trace.ndjson.zst (b3:",
    ] {
        assert!(text.contains(want), "{want}\n{text}");
    }
    // A missing recording under CI fails naming the file to record.
    std::fs::remove_file(&recording).unwrap();
    let (code, text) = pytest(&[], &[("CI", "true")]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("no recording of weather/test_paris at")
            && text.contains("--tracereplay-mode=once"),
        "{text}"
    );
}
