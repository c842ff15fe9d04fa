//! `ingest` on real third-party recordings, read from the shared corpus directory beside the
//! repository (`../shared/corpora/real/`) when it is present: any-agent's OpenTelemetry SDK
//! span dumps, genai-interlingua's OTLP/JSON captures, tau-bench and tau2-bench results. The
//! corpus is not part of the repository; without it these tests say so and check nothing.

use std::path::{Path, PathBuf};

use crate::util::*;

pub(crate) fn corpus(sub: &str) -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpora/real");
    let path = dir.join(sub);
    if path.exists() {
        Some(path)
    } else {
        eprintln!(
            "note: `{}` is absent; this corpus test checks nothing",
            path.display()
        );
        None
    }
}

fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = files_under(dir)
        .into_iter()
        .filter(|f| f.ends_with(suffix))
        .map(|f| dir.join(f))
        .collect();
    out.sort();
    out
}

fn ingest(env: &Env, args: &[&str]) -> Output {
    let mut all = vec!["ingest", "--unkeyed"];
    all.extend(args);
    env.run_with(&all, &[("CI", "true")])
}

/// Every trace under `dir` in `env`: its events.
pub(crate) fn traces(env: &Env, dir: &str) -> Vec<Vec<serde_json::Value>> {
    files_under(&env.path(dir))
        .into_iter()
        .filter(|f| f.ends_with(".trace.ndjson.zst"))
        .map(|f| {
            let text =
                String::from_utf8(zstd::decode_all(&env.read(&format!("{dir}/{f}"))[..]).unwrap())
                    .unwrap();
            text.lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        })
        .collect()
}

fn tool_calls(events: &[serde_json::Value]) -> Vec<String> {
    (events.iter())
        .filter(|e| e["kind"] == "tool_call")
        .map(|e| e["tool"].as_str().unwrap().to_owned())
        .collect()
}

/// The tools of a span dump's execution spans (`execute_tool`, OpenInference `TOOL`) by start.
fn executed_tools(path: &Path) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let spans = v.get("spans").unwrap_or(&v).as_array().unwrap().clone();
    let mut tools: Vec<(String, String)> = spans
        .iter()
        .filter_map(|s| {
            let a = &s["attributes"];
            let tool = if a["gen_ai.operation.name"] == "execute_tool" {
                a["gen_ai.tool.name"].as_str()?
            } else if a["openinference.span.kind"] == "TOOL" {
                a["tool.name"].as_str()?
            } else {
                return None;
            };
            // Nanoseconds (zero-padded) or ISO-8601: both order as text.
            let start = match &s["start_time"] {
                serde_json::Value::Number(n) => format!("{:0>24}", n.to_string()),
                other => other.as_str().unwrap().to_owned(),
            };
            Some((start, tool.to_owned()))
        })
        .collect();
    tools.sort();
    tools.into_iter().map(|(_, t)| t).collect()
}

#[test]
fn any_agent_dumps_keep_every_tool_execution_in_order() {
    let Some(dir) = corpus("any-agent") else {
        return;
    };
    let dumps = files(&dir, ".json");
    assert_eq!(dumps.len(), 19);
    for dump in dumps {
        let env = Env::new();
        let out = ingest(&env, &["-o", "t", dump.to_str().unwrap()]);
        assert_eq!(out.code, 0, "{}: {}", dump.display(), out.stderr);
        assert!(out.stderr.contains("read as otel-spans"), "{}", out.stderr);
        let written = traces(&env, "t");
        assert_eq!(written.len(), 1, "{}", dump.display());
        let want = executed_tools(&dump);
        assert!(want.len() >= 2, "{}", dump.display());
        assert_eq!(tool_calls(&written[0]), want, "{}", dump.display());
    }
}

#[test]
fn genai_interlingua_captures_keep_lookup_order() {
    let Some(dir) = corpus("genai-interlingua") else {
        return;
    };
    for capture in files(&dir, "in.json") {
        let env = Env::new();
        let out = ingest(&env, &["-o", "t", capture.to_str().unwrap()]);
        assert_eq!(out.code, 0, "{}: {}", capture.display(), out.stderr);
        let events = &traces(&env, "t")[0];
        let planned: Vec<&serde_json::Value> = (events.iter())
            .filter(|e| e["kind"] == "inference")
            .flat_map(|e| e["output"]["tool_calls"].as_array().into_iter().flatten())
            .collect();
        assert_eq!(planned.len(), 1, "{}", capture.display());
        assert_eq!(planned[0]["tool"], "lookup_order");
        assert_eq!(
            planned[0]["args"],
            serde_json::json!({"order_id": "A-1187"})
        );
        let executed = tool_calls(events);
        let vercel = capture.to_str().unwrap().contains("vercel");
        assert_eq!(executed.len(), usize::from(vercel), "{}", capture.display());
    }
}

#[test]
fn tau_bench_gives_200_traces_over_50_scenarios_and_again_no_change() {
    let Some(dir) = corpus("tau-bench") else {
        return;
    };
    let input = dir.join("historical_trajectories/gpt-4o-airline.json");
    let env = Env::new();
    let out = ingest(&env, &["-o", "t", input.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let written = files_under(&env.path("t"));
    assert_eq!(written.len(), 200);
    let scenarios: std::collections::BTreeSet<&str> = written
        .iter()
        .map(|f| f.split('/').next().unwrap())
        .collect();
    assert_eq!(scenarios.len(), 50);
    // One case per agent (the file names it), the four trials inside it.
    assert!(written.contains(&"tau-bench.task-0/gpt-4o-airline/3.trace.ndjson.zst".to_owned()));
    let before: Vec<Vec<u8>> = written
        .iter()
        .map(|f| env.read(&format!("t/{f}")))
        .collect();
    let again = ingest(&env, &["-o", "t", input.to_str().unwrap()]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again.stdout.contains("0 trace(s) written, 200 unchanged"),
        "{}",
        again.stdout
    );
    let after: Vec<Vec<u8>> = written
        .iter()
        .map(|f| env.read(&format!("t/{f}")))
        .collect();
    assert!(before == after, "re-ingesting changed bytes");
}

/// The oracle verdicts (in declaration order, `run-completed` left out) of each trace, by
/// (scenario, case).
type RunKey = (String, String, String);

/// Each row's oracle outcomes by (scenario, case, trial).
fn verdicts(report: &serde_json::Value) -> std::collections::HashMap<RunKey, Vec<bool>> {
    (report["results"].as_array().unwrap().iter())
        .map(|r| {
            let v = (r["oracles"].as_array().unwrap().iter())
                .filter(|o| o["type"] != "run-completed")
                .map(|o| o["verdict"] == "pass")
                .collect();
            let key = |k: &str| r[k].as_str().unwrap_or("").to_owned();
            ((key("scenario"), key("case"), key("trial")), v)
        })
        .collect()
}

#[test]
fn tau2_scenarios_from_ground_truth_agree_with_tau2s_own_action_checks() {
    let Some(dir) = corpus("tau2-bench") else {
        return;
    };
    let results = files(&dir, ".json");
    assert_eq!(results.len(), 5);
    let (mut simulations, mut checks, mut agree) = (0, 0, 0);
    for (i, file) in results.iter().enumerate() {
        let env = Env::new();
        let out = ingest(
            &env,
            &["-o", "t", "--emit-scenarios", file.to_str().unwrap()],
        );
        assert_eq!(out.code, 0, "{}: {}", file.display(), out.stderr);
        let gates = env.run(&["gates", "t"]);
        assert_eq!(gates.code, 0, "{}", gates.stdout);
        let report = json(&env.run(&["check", "t", "--format", "json", "--fail-on", "none"]));
        let ours = verdicts(&report);
        let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
        let domain = doc["info"]["environment_info"]["domain_name"]
            .as_str()
            .unwrap();
        for sim in doc["simulations"].as_array().unwrap() {
            simulations += 1;
            let key = (
                format!("tau2.{domain}.task-{}", sim["task_id"].as_str().unwrap()),
                // The agent's model names the case, so two models' runs stay apart (#26); the
                // trial is the header's.
                doc["info"]["agent_info"]["llm"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
                sim["trial"].to_string(),
            );
            let theirs: Vec<bool> = (sim["reward_info"]["action_checks"].as_array())
                .into_iter()
                .flatten()
                .map(|c| c["action_match"].as_bool().unwrap())
                .collect();
            let mine = &ours[&key];
            if theirs.is_empty() {
                continue;
            }
            assert_eq!(mine.len(), theirs.len(), "file {i}, {key:?}");
            checks += theirs.len();
            agree += mine.iter().zip(&theirs).filter(|(a, b)| a == b).count();
        }
    }
    assert_eq!(simulations, 170);
    // docs/ingest.md states this figure.
    assert_eq!((agree, checks), (597, 597));
}

#[test]
fn tau2_airline_then_retail_into_one_scenario_refuses_to_replace() {
    let Some(dir) = corpus("tau2-bench/feature-gym-29510b1d") else {
        return;
    };
    let env = Env::new();
    let airline = dir.join("gpt-4.1_airline_default_gpt-4.1_1trials.json");
    let retail = dir.join("gpt-4.1_retail_defautl_gpt-4.1_1trials.json");
    let out = ingest(
        &env,
        &["-o", "t", "--scenario", "tau2", airline.to_str().unwrap()],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let before: Vec<(String, Vec<u8>)> = (files_under(&env.path("t")).into_iter())
        .map(|f| {
            let b = env.read(&format!("t/{f}"));
            (f, b)
        })
        .collect();
    let out = ingest(
        &env,
        &["-o", "t", "--scenario", "tau2", retail.to_str().unwrap()],
    );
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("holds a different trace"),
        "{}",
        out.stderr
    );
    for (f, b) in before {
        assert_eq!(env.read(&format!("t/{f}")), b, "{f} was replaced");
    }
}

/// Two models' runs of the same tau2 tasks, ingested together, are kept apart by default; and
/// an input some of whose runs cannot be written as named writes nothing, so a retry is safe.
#[test]
fn tau2_runs_of_two_agents_stay_apart_and_a_refused_input_writes_nothing() {
    let Some(a) = corpus("tau2-bench/feature-gym-29510b1d") else {
        return;
    };
    let Some(b) = corpus("tau2-bench/pr80-aide-platform-e8163a39") else {
        return;
    };
    let gpt = a.join("gpt-4.1_airline_default_gpt-4.1_1trials.json");
    let claude = b.join("claude-sonnet-4-5_airline_default_gpt4.1_1trials.json");
    let env = Env::new();
    let out = ingest(
        &env,
        &["-o", "t", gpt.to_str().unwrap(), claude.to_str().unwrap()],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let written = files_under(&env.path("t"));
    // 20 simulations of gpt-4.1, 50 of claude-sonnet-4-5.
    assert_eq!(written.len(), 70, "{written:?}");
    assert!(
        written
            .iter()
            .any(|f| f.ends_with("/gpt-4.1/0.trace.ndjson.zst"))
    );
    assert!(
        written
            .iter()
            .any(|f| f.ends_with("/claude-sonnet-4-5/0.trace.ndjson.zst"))
    );
    // A template that drops the agent makes the second file collide: none of it is written.
    let env = Env::new();
    let out = ingest(
        &env,
        &[
            "-o",
            "t",
            "--name",
            "{task}/{trial}",
            gpt.to_str().unwrap(),
            claude.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("nothing of it was written"),
        "{}",
        out.stderr
    );
    assert_eq!(files_under(&env.path("t")).len(), 20);
    // Named apart, the retry writes the refused file in full, and nothing twice.
    let out = ingest(
        &env,
        &[
            "-o",
            "t",
            "--name",
            "{task}/{agent}",
            claude.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(files_under(&env.path("t")).len(), 70);
}
