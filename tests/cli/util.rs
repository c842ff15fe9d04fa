//! Runs the real binary in a temporary directory; every run sets `CI` explicitly.
//!
//! The binary is the one the README builds — the default features, `cargo build --bin
//! tracereplay`, kept in `target/readme/` ([`readme_binary`]) — so that every documented path is
//! tested as a user gets it. Only the object-storage tests (`remote*`) run the test build's
//! binary, which has the non-default `remote` feature ([`Env::with_remote`]).

use std::path::{Path, PathBuf};
use std::process::Command;

use tracereplay::trace::{Limits, Packed, TraceFile, pack};

pub(crate) struct Env {
    dir: tempfile::TempDir,
    /// The binary its commands run.
    binary: PathBuf,
    /// The user's cache directory for the runs (where the result cache's key is kept), outside
    /// the working directory and never the real one.
    user_cache: tempfile::TempDir,
}

#[derive(Debug)]
pub(crate) struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Env {
    /// A temporary directory whose commands run the binary the README builds.
    pub(crate) fn new() -> Env {
        Env {
            dir: tempfile::tempdir().unwrap(),
            binary: readme_binary(),
            user_cache: tempfile::tempdir().unwrap(),
        }
    }

    /// A temporary directory whose commands run the build with the `remote` feature (object
    /// storage), which the default build leaves out: for the `remote*` tests only.
    pub(crate) fn with_remote() -> Env {
        Env {
            binary: PathBuf::from(env!("CARGO_BIN_EXE_tracereplay")),
            ..Env::new()
        }
    }

    /// The binary its commands run.
    pub(crate) fn binary(&self) -> &Path {
        &self.binary
    }

    pub(crate) fn root(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub(crate) fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }

    pub(crate) fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.path(rel)).unwrap()
    }

    /// Runs `tracereplay ARGS` in the temp dir under CI (`CI=true`), without colours.
    pub(crate) fn run(&self, args: &[&str]) -> Output {
        self.run_with(args, &[("CI", "true")])
    }

    pub(crate) fn run_with(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let out = self.command(args, env).output().unwrap();
        Output {
            code: out.status.code().expect("the binary exited by signal"),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
        }
    }
}

impl Env {
    /// The command `run_with` runs, to spawn (and kill) it instead: `CI` and the fault hooks
    /// cleared unless `env` sets them.
    pub(crate) fn command(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut cmd = Command::new(&self.binary);
        cmd.args(args)
            .current_dir(self.root())
            .env_remove("CI")
            .env_remove("TF_BUILD")
            .env_remove("TRACEREPLAY_CACHE_KEY")
            .env_remove("TRACEREPLAY_FAULT_FULL_DISK")
            .env_remove("TRACEREPLAY_FAULT_SYNC")
            .env_remove("TRACEREPLAY_FAULT_UNWRITTEN")
            .env("XDG_CACHE_HOME", self.user_cache.path())
            .env("NO_COLOR", "1");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd
    }
}

/// The binary the README builds (`cargo run --release -- …`: the default features), built as
/// `cargo build --locked --bin tracereplay --target-dir target/readme` — by
/// `scripts/install-test-deps`, which the README's test command runs first, or here when it is
/// missing or older than the test build (the sources changed since). The test build's own
/// binary has the `remote` feature the tests' dev-dependency turns on, so it is not what users
/// run.
pub(crate) fn readme_binary() -> PathBuf {
    static BINARY: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BINARY
        .get_or_init(|| {
            let root = Path::new(env!("CARGO_MANIFEST_DIR"));
            let dir = root.join("target/readme");
            let binary = dir.join("debug/tracereplay");
            let built = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
            let test_build = built(Path::new(env!("CARGO_BIN_EXE_tracereplay")));
            if built(&binary).is_none() || built(&binary) < test_build {
                // Concurrent tests wait on cargo's lock of the directory; the first builds.
                let status = Command::new(option_env!("CARGO").unwrap_or("cargo"))
                    .args(["build", "--locked", "--bin", "tracereplay", "--target-dir"])
                    .arg(&dir)
                    .current_dir(root)
                    .status();
                assert!(
                    status.is_ok_and(|s| s.success()),
                    "the binary the README builds could not be built: run `cargo build --locked --bin tracereplay --target-dir target/readme` (scripts/install-test-deps does)"
                );
                // Built, or found up to date: newer than the test build from now on.
                let now = std::time::SystemTime::now();
                let _ = std::fs::File::options()
                    .write(true)
                    .open(&binary)
                    .and_then(|f| f.set_modified(now));
            }
            binary
        })
        .clone()
}

pub(crate) const END: &str = r#"{"kind":"run_end","status":"completed"}"#;

/// NDJSON trace text for `scenario`/`case` with the given event lines (seq added when absent).
pub(crate) fn trace_text(scenario: &str, case: &str, events: &[&str]) -> String {
    let mut text = format!(
        "{{\"kind\":\"header\",\"format\":\"tracereplay.trace\",\"version\":1,\"scenario\":\"{scenario}\",\"case\":\"{case}\"}}\n"
    );
    for (i, e) in events.iter().enumerate() {
        let mut v: serde_json::Value = serde_json::from_str(e).unwrap();
        if v.get("seq").is_none() {
            v["seq"] = serde_json::json!(i + 1);
        }
        text.push_str(&v.to_string());
        text.push('\n');
    }
    text
}

/// Sealed decompressed bytes of an NDJSON trace.
pub(crate) fn sealed_bytes(text: &str) -> Vec<u8> {
    let file = TraceFile::from_bytes("t.trace.ndjson", text.as_bytes().to_vec(), false);
    match pack(&file, Limits::default()).unwrap() {
        Packed::Sealed { bytes, .. } => bytes,
        Packed::AlreadySealed { .. } => text.as_bytes().to_vec(),
    }
}

/// A sealed, compressed trace.
pub(crate) fn sealed_zst(text: &str) -> Vec<u8> {
    zstd::bulk::compress(&sealed_bytes(text), 3).unwrap()
}

pub(crate) fn call(id: &str, tool: &str) -> String {
    format!(r#"{{"kind":"tool_call","call_id":"{id}","tool":"{tool}","args":{{"q":"x"}}}}"#)
}

/// A scenario file body with one `tool-called` oracle.
pub(crate) fn scenario(id: &str, risk: &str, tool: &str) -> String {
    format!(
        r#"{{"id":"{id}","title":"t","risk":"{risk}","oracles":[{{"type":"tool-called","tool":"{tool}"}}]}}"#
    )
}

/// Lays out `traces/ID/`: a scenario `id` of `risk` expecting a call of `tool`, and one sealed
/// trace (case `case`) whose run called `search` and completed.
pub(crate) fn one_trace_suite(env: &Env, id: &str, risk: &str, tool: &str, case: &str) {
    env.write(
        &format!("traces/{id}/{id}.scenario.json"),
        scenario(id, risk, tool),
    );
    let c = call("c1", "search");
    env.write(
        &format!("traces/{id}/{case}.trace.ndjson.zst"),
        sealed_zst(&trace_text(id, case, &[&c, END])),
    );
}

/// Lays out a suite with a passing scenario `good` (one sealed trace).
pub(crate) fn good_suite(env: &Env) {
    one_trace_suite(env, "good", "High", "search", "default");
}

pub(crate) fn json(out: &Output) -> serde_json::Value {
    serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", out.stdout))
}

/// The JSON result row whose path ends with `suffix`.
pub(crate) fn row<'a>(report: &'a serde_json::Value, suffix: &str) -> &'a serde_json::Value {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"].as_str().is_some_and(|p| p.ends_with(suffix)))
        .unwrap_or_else(|| panic!("no row for {suffix} in {report:#}"))
}

pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// Copies the shipped demo traces (and, with `baselines`, its approved baselines) into `env`.
pub(crate) fn copy_demo(env: &Env, baselines: bool) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    copy_dir(&root.join("traces"), &env.path("traces"));
    if baselines {
        copy_dir(&root.join("baselines"), &env.path("baselines"));
    }
}

/// Every file under `dir`, relative, sorted.
pub(crate) fn files_under(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                out.push(
                    p.strip_prefix(base)
                        .unwrap()
                        .to_string_lossy()
                        .replace('\\', "/"),
                );
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Decompressed text of a sealed trace in `env`.
pub(crate) fn trace_body(env: &Env, rel: &str) -> String {
    let text = String::from_utf8(zstd::decode_all(&env.read(rel)[..]).unwrap()).unwrap();
    // Drop the footer: callers edit the body and re-seal it.
    let mut lines: Vec<&str> = text.lines().collect();
    lines.pop();
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// Edits the trace `rel` in `env`: its body with `from` replaced by `to` (which must occur),
/// sealed again.
pub(crate) fn edit_trace(env: &Env, rel: &str, from: &str, to: &str) {
    let body = trace_body(env, rel);
    assert!(body.contains(from), "`{from}` is not in `{rel}`");
    reseal(env, rel, &body.replace(from, to));
}

/// Re-seals edited trace text into `rel`.
pub(crate) fn reseal(env: &Env, rel: &str, text: &str) {
    env.write(rel, sealed_zst(text));
}

/// Seals without validating (pack refuses malformed input), as a buggy recorder might.
pub(crate) fn sealed_zst_unchecked(text: &str) -> Vec<u8> {
    let hash = tracereplay::trace::content_hash(text.as_bytes());
    let events = text.lines().count() - 1;
    let full = format!(
        "{text}{}",
        tracereplay::trace::footer_line(events as u64, &hash)
    );
    zstd::bulk::compress(full.as_bytes(), 3).unwrap()
}

/// The test Python (`TRACEREPLAY_PYTHON`, else `target/test-venv`, where
/// `scripts/install-test-deps` puts it), checked to import `modules`; without them the test
/// fails and says how to install `what`.
pub(crate) fn test_python(modules: &str, what: &str) -> PathBuf {
    let candidate = std::env::var_os("TRACEREPLAY_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-venv/bin/python")
        });
    let ok = Command::new(&candidate)
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "these tests need {what}: run `scripts/install-test-deps` (it installs it into \
         target/test-venv), or set TRACEREPLAY_PYTHON to a Python that has it (`import {modules}`)"
    );
    candidate
}

/// Runs `python -c code` in `dir` with `vars` set and the variables `unset` removed; asserts it
/// succeeded (naming `what`, with its standard error) and returns its standard output.
pub(crate) fn run_python(
    python: &Path,
    code: &str,
    dir: &Path,
    vars: &[(&str, &str)],
    unset: &[&str],
    what: &str,
) -> String {
    let mut cmd = Command::new(python);
    cmd.args(["-c", code]).current_dir(dir);
    cmd.envs(vars.iter().copied());
    for name in unset {
        cmd.env_remove(name);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The bodies of the fenced blocks in `text` that open with `fence` (` ```yaml\n `, say).
pub(crate) fn fenced_blocks(text: &str, fence: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(fence) {
        let body = &rest[start + fence.len()..];
        let end = body.find("```").expect("a fenced block is closed");
        found.push(body[..end].to_owned());
        rest = &body[end..];
    }
    found
}

/// The text of `docs/recording.md` from the section headed `heading` on.
pub(crate) fn recording_docs_from(heading: &str) -> String {
    let docs = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/recording.md"),
    )
    .unwrap();
    let start = docs
        .find(heading)
        .unwrap_or_else(|| panic!("no `{heading}` in recording.md"));
    docs[start..].to_owned()
}

/// The first shell line and the agent (at most five lines, as the docs promise) of the section
/// of `docs/recording.md` headed `heading`.
pub(crate) fn recording_docs_example(heading: &str) -> (String, String) {
    let section = recording_docs_from(heading);
    let shell = fenced_blocks(&section, "```sh\n").remove(0);
    let example = fenced_blocks(&section, "```python\n").remove(0);
    assert!(example.lines().count() <= 5, "{example}");
    (shell.lines().next().unwrap().to_owned(), example)
}

/// One request an upstream of a test received: its path (with the query), headers (names
/// lowercased) and body.
pub(crate) struct Received {
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

/// A loopback upstream that reads each request (head and `Content-Length` body) and hands it,
/// with the connection to answer on, to `answer`, each on a thread of its own. Returns its
/// base URL (plain HTTP, on loopback).
pub(crate) fn loopback_upstream(
    answer: fn(std::net::TcpStream, Received) -> std::io::Result<()>,
) -> String {
    use std::io::{BufRead, Read};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || -> std::io::Result<()> {
                let mut reader = std::io::BufReader::new(stream.try_clone()?);
                let mut line = String::new();
                if reader.read_line(&mut line)? == 0 {
                    return Ok(());
                }
                let path = line.split(' ').nth(1).unwrap_or("").to_owned();
                let mut headers = Vec::new();
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
                        break;
                    }
                    if let Some((name, value)) = h.split_once(':') {
                        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
                    }
                }
                let length = (headers.iter())
                    .find(|(n, _)| n == "content-length")
                    .and_then(|(_, v)| v.parse().ok())
                    .unwrap_or(0);
                let mut body = vec![0; length];
                reader.read_exact(&mut body)?;
                answer(
                    stream,
                    Received {
                        path,
                        headers,
                        body,
                    },
                )
            });
        }
    });
    format!("http://{addr}")
}

/// Sends `head` (a request head, its blank line included, and whatever part of a body follows)
/// to the server at `base` (its URL, as it printed it) and waits, at most 60 s, for the answer's status
/// line: the line, and how long it took.
pub(crate) fn status_after_head(base: &str, head: &str) -> (String, std::time::Duration) {
    use std::io::{BufRead, Write};
    let addr = base.rsplit("//").next().unwrap_or(base);
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    let start = std::time::Instant::now();
    conn.write_all(head.as_bytes()).unwrap();
    let mut line = String::new();
    let _ = std::io::BufReader::new(conn).read_line(&mut line);
    (line.trim_end().to_owned(), start.elapsed())
}
