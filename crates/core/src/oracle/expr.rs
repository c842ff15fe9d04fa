//! `expr`: a jq program over `{"header": …, "events": […]}` of the trace being judged — the same
//! parsed, kind-normalised events the other oracles see, prompts as their hashes. It passes when
//! the program's only output is `true` (or `{"pass": true, "seq": [...]}`, whose `seq` numbers
//! become the evidence); `false` fails; any other output, more than one output, or an error
//! fails with the jq message.
//!
//! The engine is `jaq`, embedded: no jq binary is run. It is sandboxed: the standard library
//! without the filters that reach outside the trace (`env`/`$ENV`, `input`/`inputs`, `now`,
//! `localtime`/`strflocaltime`, `halt`, `debug`/`stderr`: they fail when called), so a program
//! can read no file, environment or clock and gives the same answer on every machine.
//!
//! It is bounded: each run has [`TIME_BUDGET`] and at most [`OUTPUT_BYTES`] of output, and a
//! program that exceeds either fails with that message while the run goes on. jaq cannot be
//! interrupted, and a program that recurses without end overflows its stack, which aborts a
//! process; so the `tracereplay` binary evaluates programs in a child process of itself (one
//! per judging thread, reused across traces, its address space capped at [`WORKER_MEMORY`] past
//! what it maps at start),
//! and kills and replaces the child when a program runs out of time or crashes it. A library
//! user that has not called [`use_worker`] gets in-process evaluation on a helper thread
//! instead: the time budget still holds (a runaway program is left running on its thread, and
//! after [`MAX_RUNAWAYS`] of them `expr` fails at once), but a stack overflow is not contained.

use crate::oracle::ConfigError;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars, data};
use jaq_json::Val;
use serde_json::{Value, json};

use super::facts::Facts;
use super::result::OracleResult;
use super::typed::{Fallbacks, Oracle};
use crate::oracle::spec::OracleSpec;

/// How long one program may run on one trace.
pub const TIME_BUDGET: Duration = Duration::from_secs(2);
/// The most output (as JSON text) one run may produce.
pub const OUTPUT_BYTES: usize = 1 << 20;
/// Runaway programs tolerated per process (in-process evaluation) before `expr` stops starting
/// new runs.
pub const MAX_RUNAWAYS: usize = 4;
/// How much a worker process's address space may grow past what it maps at start.
pub const WORKER_MEMORY: u64 = 512 << 20;
/// The first argument that starts the binary as an `expr` worker.
pub const WORKER_ARG: &str = "__expr-worker";

static WORKER_EXE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// Evaluates `expr` programs in child processes running `exe` with [`WORKER_ARG`] (which must
/// call [`worker_main`]). Set once; later calls are ignored.
pub fn use_worker(exe: std::path::PathBuf) {
    let _ = WORKER_EXE.set(exe);
}
/// The longest program accepted.
const PROGRAM_BYTES: usize = 64 * 1024;

static RUNAWAYS: AtomicUsize = AtomicUsize::new(0);

/// Native filters left out: everything that reads outside the trace or stops the process.
const DENIED: &[&str] = &[
    "env",
    "now",
    "localtime",
    "strflocaltime",
    "halt",
    "input",
    "inputs",
    "debug_empty",
    "stderr_empty",
];

/// A configured `expr`: the program text (compiled once at load to find its errors, and again
/// on the thread that runs it: compiled programs are not shareable between threads).
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    /// The jq source.
    pub jq: String,
}

/// Configures `expr`.
pub fn configure(spec: &OracleSpec, _: &Fallbacks<'_>) -> Result<Oracle, ConfigError> {
    let jq = super::params::string(spec, "jq")
        .ok_or_else(|| ConfigError::value("jq", "no `jq` program"))?;
    if jq.len() > PROGRAM_BYTES {
        return Err(ConfigError::value(
            "jq",
            format!("the `jq` program is longer than {PROGRAM_BYTES} bytes"),
        ));
    }
    compile(&jq).map(|_| ())?;
    Ok(Oracle::Expr(Box::new(Program { jq })))
}

type Filter = jaq_core::Filter<data::JustLut<Val>>;

fn compile(code: &str) -> Result<Filter, ConfigError> {
    let defs = jaq_core::defs()
        .chain(jaq_std::defs())
        .chain(jaq_json::defs());
    // The denied filters stay defined (the standard library's own definitions use some of
    // them) but fail when run.
    let funs = (jaq_core::funs()
        .chain(jaq_std::funs())
        .chain(jaq_json::funs()))
    .map(|(name, arity, native)| {
        // The regex natives are Unicode-aware ones (the standard library's are ASCII-only).
        if let Some(native) = super::expr_regex::replacing(name) {
            (name, arity, native)
        } else if DENIED.contains(&name) {
            (
                name,
                arity,
                jaq_core::Native::<data::JustLut<Val>>::new(unavailable),
            )
        } else {
            (name, arity, native)
        }
    });
    let loader = Loader::new(defs);
    let arena = Arena::default();
    let program = File { code, path: () };
    let modules = loader.load(&arena, program).map_err(|errs| {
        let mut out = Vec::new();
        for (_, e) in errs {
            match e {
                jaq_core::load::Error::Io(items) => {
                    out.extend(items.into_iter().map(|(_, m)| m));
                }
                jaq_core::load::Error::Lex(items) => out
                    .extend((items.into_iter()).map(|(exp, at)| {
                        format!("expected {} at `{}`", exp.as_str(), snippet(at))
                    })),
                jaq_core::load::Error::Parse(items) => out
                    .extend((items.into_iter()).map(|(exp, at)| {
                        format!("expected {} at `{}`", exp.as_str(), snippet(at))
                    })),
            }
        }
        format!("the jq program does not parse: {}", out.join("; "))
    })?;
    Compiler::default()
        .with_funs(funs)
        .compile(modules)
        .map_err(|errs| {
            let out: Vec<String> = (errs.into_iter())
                .flat_map(|(_, es)| es)
                .map(|(name, undefined)| {
                    let denied = name == "$ENV" || name == "ENV" || name == "$__prog_args";
                    format!(
                        "undefined {} `{name}`{}",
                        undefined.as_str(),
                        if denied {
                            " (not available: `expr` reads only the trace)"
                        } else {
                            ""
                        }
                    )
                })
                .collect();
            ConfigError::value(
                "jq",
                format!("the jq program does not compile: {}", out.join("; ")),
            )
        })
}

fn unavailable(_: jaq_core::Cv<'_, data::JustLut<Val>>) -> jaq_core::ValXs<'_, Val> {
    Box::new(std::iter::once(Err(jaq_core::Exn::from(
        jaq_core::Error::str(
            "not available in `expr`, which reads only the trace (no environment, input, clock or exit)",
        ),
    ))))
}

fn snippet(at: &str) -> String {
    at.chars().take(20).collect()
}

/// What one run produced.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum RunOutput {
    /// The outputs (at most two are taken) as JSON.
    Outputs(Vec<Value>),
    /// A jq error.
    Error(String),
}

/// The worker: reads requests (program and input, each a little-endian u64 length and its
/// bytes) from standard input and answers each with one JSON line on standard output, until
/// standard input ends. Returns the exit code.
pub fn worker_main() -> i32 {
    use std::io::{BufWriter, Read, Write};
    #[cfg(unix)]
    {
        // The cap is on growth past what is mapped at start. The allocator reserves address
        // space before `main` (mimalloc: a 1 GiB arena), and a cap below what is mapped already
        // fails every later mapping, which the allocator needs when it gives pages back and
        // takes them again: programs then crashed now and then, as timing had it.
        let cap = mapped_bytes().unwrap_or(0).saturating_add(WORKER_MEMORY);
        let cap = rustix::process::Rlimit {
            current: Some(cap),
            maximum: Some(cap),
        };
        let _ = rustix::process::setrlimit(rustix::process::Resource::As, cap);
    }
    let mut input = std::io::stdin().lock();
    let mut output = BufWriter::new(std::io::stdout().lock());
    let mut read_frame = |max: u64| -> Option<Vec<u8>> {
        let mut len = [0u8; 8];
        input.read_exact(&mut len).ok()?;
        let len = u64::from_le_bytes(len);
        if len > max {
            return None;
        }
        let mut buf = vec![0u8; usize::try_from(len).ok()?];
        input.read_exact(&mut buf).ok()?;
        Some(buf)
    };
    loop {
        let Some(code) = read_frame(PROGRAM_BYTES as u64) else {
            return 0;
        };
        let Some(trace) = read_frame(u64::MAX >> 1) else {
            return 0;
        };
        let outcome = match String::from_utf8(code) {
            Ok(code) => run(&code, &trace),
            Err(_) => RunOutput::Error("the program is not UTF-8".into()),
        };
        let line = serde_json::to_string(&outcome)
            .unwrap_or_else(|_| "{\"error\":\"unencodable output\"}".into());
        if writeln!(output, "{line}")
            .and_then(|()| output.flush())
            .is_err()
        {
            return 0;
        }
    }
}

/// The address space this process has mapped (`VmSize` of `/proc/self/status`), where the
/// system says.
#[cfg(unix)]
fn mapped_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    crate::fsutil::kib_field(&status, "VmSize")
}

/// A worker process and the thread that reads its answers.
struct Worker {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    answers: mpsc::Receiver<Option<String>>,
}

impl Worker {
    fn start(exe: &std::path::Path) -> std::io::Result<Worker> {
        use std::io::BufRead;
        use std::process::{Command, Stdio};
        let mut child = Command::new(exe)
            .arg(WORKER_ARG)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .env_clear()
            .spawn()?;
        let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
        let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
            let _ = child.kill();
            return Err(std::io::Error::other("no pipes to the worker"));
        };
        let (tx, answers) = mpsc::channel();
        std::thread::Builder::new()
            .name("tracereplay-expr-reader".into())
            .spawn(move || {
                for line in std::io::BufReader::new(stdout).lines() {
                    match line {
                        Ok(l) => {
                            if tx.send(Some(l)).is_err() {
                                return;
                            }
                        }
                        Err(_) => break,
                    }
                }
                let _ = tx.send(None);
            })?;
        Ok(Worker {
            child,
            stdin,
            answers,
        })
    }

    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

thread_local! {
    static WORKER: std::cell::RefCell<Option<Worker>> = const { std::cell::RefCell::new(None) };
}

/// Evaluates in this thread's worker process, starting (or replacing) it as needed.
fn in_worker(exe: &std::path::Path, code: &str, input: &[u8], allowed: Duration) -> RunOutput {
    use std::io::Write;
    WORKER.with(|slot| {
        let mut slot = slot.borrow_mut();
        if slot.is_none() {
            match Worker::start(exe) {
                Ok(w) => *slot = Some(w),
                Err(e) => {
                    return RunOutput::Error(format!("the jq worker could not be started: {e}"));
                }
            }
        }
        let Some(worker) = slot.as_mut() else {
            return RunOutput::Error("the jq worker could not be started".into());
        };
        let mut frame = Vec::with_capacity(code.len() + input.len() + 16);
        frame.extend_from_slice(&(code.len() as u64).to_le_bytes());
        frame.extend_from_slice(code.as_bytes());
        frame.extend_from_slice(&(input.len() as u64).to_le_bytes());
        frame.extend_from_slice(input);
        let sent = worker
            .stdin
            .write_all(&frame)
            .and_then(|()| worker.stdin.flush());
        let answer = if sent.is_ok() {
            worker.answers.recv_timeout(allowed)
        } else {
            Ok(None)
        };
        match answer {
            Ok(Some(line)) => serde_json::from_str(&line)
                .unwrap_or_else(|_| RunOutput::Error("the jq worker answered garbage".into())),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Some(w) = slot.take() {
                    w.stop();
                }
                RunOutput::Error(super::budget::out_of_time(allowed, TIME_BUDGET))
            }
            Ok(None) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                if let Some(w) = slot.take() {
                    w.stop();
                }
                RunOutput::Error(
                    "the jq program crashed its evaluator (recursion too deep, or memory exhausted)"
                        .into(),
                )
            }
        }
    })
}

fn run(code: &str, input: &[u8]) -> RunOutput {
    let filter = match compile(code) {
        Ok(f) => f,
        Err(e) => return RunOutput::Error(e.to_string()),
    };
    let input = match jaq_json::read::parse_single(input) {
        Ok(v) => v,
        Err(e) => return RunOutput::Error(format!("the trace is not readable as jq input: {e}")),
    };
    let ctx = Ctx::<data::JustLut<Val>>::new(&filter.lut, Vars::new([]));
    let mut outputs = Vec::new();
    for out in filter.id.run((ctx, input)).take(2) {
        match out {
            Ok(v) => {
                let text = v.to_string();
                if text.len() > OUTPUT_BYTES {
                    return RunOutput::Error(format!(
                        "the program's output is larger than {OUTPUT_BYTES} bytes"
                    ));
                }
                match serde_json::from_str(&text) {
                    Ok(v) => outputs.push(v),
                    // Not JSON (NaN, a byte string): shown as jq wrote it.
                    Err(_) => outputs.push(Value::String(text)),
                }
            }
            Err(e) => {
                return RunOutput::Error(match e.get_err() {
                    Ok(err) => format!("jq error: {err}"),
                    Err(_) => "jq error: the program halted".to_owned(),
                });
            }
        }
    }
    RunOutput::Outputs(outputs)
}

impl Program {
    /// Runs the program on the trace, within its budgets.
    pub fn judge(&self, facts: &Facts<'_, '_>) -> OracleResult {
        let allowed = match facts.budget.allowance(TIME_BUDGET) {
            Ok(d) => d,
            Err(why) => {
                return OracleResult::fail(why, Vec::new(), json!({"jq": self.jq}), Value::Null)
                    .unjudged();
            }
        };
        let started = std::time::Instant::now();
        let result = self.judge_within(facts, allowed);
        facts.budget.spend(started.elapsed());
        result
    }

    /// Runs the program within `allowed` (its own budget, or what is left of the trace's).
    fn judge_within(&self, facts: &Facts<'_, '_>, allowed: Duration) -> OracleResult {
        let input = facts.document();
        if let Some(exe) = WORKER_EXE.get() {
            return self.verdict(in_worker(exe, &self.jq, input.as_bytes(), allowed));
        }
        if RUNAWAYS.load(Ordering::Relaxed) >= MAX_RUNAWAYS {
            return OracleResult::fail(
                format!(
                    "not run: {MAX_RUNAWAYS} `expr` programs already exceeded their time budget in this run"
                ),
                Vec::new(),
                json!({"jq": self.jq}),
                Value::Null,
            )
            .unjudged();
        }
        let (tx, rx) = mpsc::channel();
        let code = self.jq.clone();
        let input = input.to_owned();
        let spawned = std::thread::Builder::new()
            .name("tracereplay-expr".into())
            .spawn(move || {
                let _ = tx.send(run(&code, input.as_bytes()));
            });
        if let Err(e) = spawned {
            return OracleResult::fail(
                format!("the jq program could not be started: {e}"),
                Vec::new(),
                json!({"jq": self.jq}),
                Value::Null,
            )
            .unjudged();
        }
        let outcome = match rx.recv_timeout(allowed) {
            Ok(o) => o,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                RUNAWAYS.fetch_add(1, Ordering::Relaxed);
                RunOutput::Error(super::budget::out_of_time(allowed, TIME_BUDGET))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                RunOutput::Error("the jq program stopped without a result".to_owned())
            }
        };
        self.verdict(outcome)
    }

    fn verdict(&self, outcome: RunOutput) -> OracleResult {
        let expected = json!({"jq": self.jq, "output": true});
        let outputs = match outcome {
            RunOutput::Error(e) => {
                return OracleResult::fail(e, Vec::new(), expected, Value::Null).unjudged();
            }
            RunOutput::Outputs(o) => o,
        };
        let [only] = outputs.as_slice() else {
            let n = if outputs.is_empty() {
                "no output"
            } else {
                "more than one output"
            };
            return OracleResult::fail(
                format!("the jq program gave {n}; it must output exactly one boolean"),
                Vec::new(),
                expected,
                json!(outputs),
            )
            .unjudged();
        };
        let (pass, evidence) = match only {
            Value::Bool(b) => (*b, Vec::new()),
            Value::Object(m) if m.get("pass").is_some_and(Value::is_boolean) => {
                let seqs = m.get("seq").and_then(Value::as_array).map(|a| {
                    let mut s: Vec<u64> = a.iter().filter_map(Value::as_u64).collect();
                    s.sort_unstable();
                    s.dedup();
                    s
                });
                (m["pass"] == Value::Bool(true), seqs.unwrap_or_default())
            }
            other => {
                return OracleResult::fail(
                    "the jq program's output is not a boolean (nor `{\"pass\": bool, \"seq\": [...]}`)",
                    Vec::new(),
                    expected,
                    other.clone(),
                )
                .unjudged();
            }
        };
        if pass {
            OracleResult::pass("the jq program output true", evidence)
        } else {
            OracleResult::fail("the jq program output false", evidence, expected, false)
        }
    }
}

#[cfg(test)]
#[path = "expr_tests.rs"]
mod tests;
