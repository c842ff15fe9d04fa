//! ATIF field by field: every field of the published `atif` models is mapped (and given back by
//! `export --to atif`) or counted under `skipped:` by the name `docs/ingest.md`'s table gives it;
//! random trajectories come back as they were, but for what that table says changes; copied
//! context is not judged unless a scenario asks; tool definitions are what `tools-offered`
//! judges.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::util::*;

fn python() -> std::path::PathBuf {
    test_python("atif", "the `atif` Python package (ATIF's Pydantic models)")
}

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/atif/{name}"))
}

/// Runs a fixture script with `args`; its standard output.
fn script(name: &str, args: &[&str]) -> String {
    let out = std::process::Command::new(python())
        .arg(fixture(name))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The values at a field path (`steps[].metrics.logprobs`) of a document, in document order;
/// `null` is absent.
fn values_at(doc: &Value, path: &str) -> Vec<Value> {
    let mut vals = vec![doc.clone()];
    for seg in path.split('.') {
        let (key, many) = match seg.strip_suffix("[]") {
            Some(k) => (k, true),
            None => (seg, false),
        };
        vals = (vals.iter())
            .filter_map(|v| v.get(key).filter(|x| !x.is_null()))
            .flat_map(|x| match (many, x) {
                (true, Value::Array(items)) => items.clone(),
                (true, _) => Vec::new(),
                (false, x) => vec![x.clone()],
            })
            .collect();
    }
    vals
}

/// A list of content parts as the one string ingest keeps (its text parts joined).
fn joined(v: &Value) -> Value {
    match v {
        Value::Array(parts) if parts.iter().all(|p| p.get("type").is_some()) => {
            let texts: Vec<&str> = parts.iter().filter_map(|p| p["text"].as_str()).collect();
            json!(texts.join("\n"))
        }
        other => other.clone(),
    }
}

/// `docs/ingest.md`'s ATIF table: field path → (where it goes, what export gives back).
fn documented() -> BTreeMap<String, (String, String)> {
    let docs = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ingest.md"),
    )
    .unwrap();
    let start = docs
        .find("| ATIF field |")
        .expect("docs/ingest.md has the ATIF table");
    (docs[start..].lines().skip(2))
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split(" | ").map(str::trim).collect();
            assert_eq!(cells.len(), 3, "{l}");
            let path = cells[0].trim_matches('`').to_owned();
            (path, (cells[1].to_owned(), cells[2].to_owned()))
        })
        .collect()
}

/// The names a table cell says a field is counted under (its ``…`` spans after `counted`).
fn counted_names(cell: &str) -> Vec<String> {
    let parts: Vec<&str> = cell.split("``").collect();
    (parts.iter().skip(1).step_by(2))
        .map(|s| s.trim().to_owned())
        .collect()
}

fn ingest(env: &Env, file: &str) -> String {
    let out = env.run(&[
        "ingest",
        "--unkeyed",
        "--from",
        "atif",
        "--scenario",
        "weather",
        "-o",
        "traces",
        file,
    ]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    out.stdout
}

fn export(env: &Env, trace: &str) -> Value {
    let out = env.run(&["export", "--to", "atif", trace]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

/// Fields the table says change on the way back, each checked on its own below.
const CHANGED: [&str; 14] = [
    "agent.tool_definitions",
    "steps[].timestamp",
    "steps[].message",
    "steps[].message[].type",
    "steps[].message[].text",
    "steps[].observation.results[].content[].type",
    "steps[].observation.results[].content[].text",
    "final_metrics",
    "final_metrics.total_prompt_tokens",
    "final_metrics.total_completion_tokens",
    "final_metrics.total_cached_tokens",
    "final_metrics.total_cost_usd",
    "final_metrics.total_steps",
    "subagent_trajectories",
];

#[test]
fn every_field_of_the_atif_models_is_given_back_or_counted_as_the_docs_say() {
    // A trajectory that sets every field of the models (the script fails if one is unset).
    let built: Value = serde_json::from_str(&script("maximal.py", &[])).unwrap();
    let (doc, paths) = (&built["doc"], built["paths"].as_array().unwrap());
    let env = Env::new();
    env.write("max.json", doc.to_string());
    let summary = ingest(&env, "max.json");
    let back = export(&env, "traces/weather/run-9.trace.ndjson.zst");
    let table = documented();
    let paths: Vec<&str> = paths.iter().map(|p| p.as_str().unwrap()).collect();
    for row in table.keys() {
        assert!(
            paths.contains(&row.as_str()),
            "docs/ingest.md's ATIF table has `{row}`, which the models do not"
        );
    }
    let has_children = |p: &str| {
        (paths.iter()).any(|q| q.starts_with(&format!("{p}.")) || q.starts_with(&format!("{p}[].")))
    };
    for path in &paths {
        let Some((into, out)) = table.get(*path) else {
            panic!(
                "`{path}`, a field of the ATIF models, is neither in docs/ingest.md's ATIF table nor handled"
            );
        };
        if out == "absent" {
            let names = counted_names(into);
            assert!(
                !names.is_empty(),
                "`{path}` is absent on export but its row names no count: {into}"
            );
            for name in names {
                assert!(
                    summary.contains(&name),
                    "`{path}` is documented as counted under `{name}`, which ingest did not say:\n{summary}"
                );
            }
            assert!(
                values_at(&back, path).is_empty(),
                "`{path}` came back: {back:#}"
            );
        } else if out == "the same" || out.starts_with("the same (") {
            if has_children(path) && *path != "steps[].observation.results[].content" {
                continue; // its fields are checked one by one
            }
            let norm = |d: &Value| values_at(d, path).iter().map(joined).collect::<Vec<_>>();
            assert_eq!(
                norm(doc),
                norm(&back),
                "`{path}` did not come back the same"
            );
        } else {
            assert!(
                CHANGED.contains(path),
                "`{path}`: the table says it comes back as `{out}`, which this test does not check"
            );
        }
    }
    // What comes back changed, field by field.
    let names = |d: &Value| {
        values_at(d, "agent.tool_definitions")
            .iter()
            .map(|t| t["function"]["name"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(doc), names(&back));
    assert!(
        summary.contains("atif agent tool definition beyond its name"),
        "{summary}"
    );
    assert_eq!(
        values_at(&back, "steps[].timestamp"),
        built["timestamps"].as_array().unwrap().clone()
    );
    let (a, b) = (
        doc["steps"].as_array().unwrap(),
        back["steps"].as_array().unwrap(),
    );
    assert_eq!(a.len(), b.len(), "{back:#}");
    for (x, y) in a.iter().zip(b) {
        match x["source"].as_str() {
            Some("agent") => assert_eq!(joined(&x["message"]), y["message"]),
            _ => assert!(
                y["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("b3:") && m.len() == 67),
                "{y}"
            ),
        }
    }
    assert!(summary.contains("atif content given as parts"), "{summary}");
    let mut totals = doc["final_metrics"].clone();
    totals.as_object_mut().unwrap().remove("extra");
    assert_eq!(totals, back["final_metrics"]);
    let sub = export(&env, "traces/weather/run-9.geo.trace.ndjson.zst");
    assert_eq!(sub["trajectory_id"], "geo");
    assert_eq!(sub["steps"].as_array().unwrap().len(), 2, "{sub:#}");
    // And what the export writes is an ATIF trajectory the models accept.
    let ok = std::process::Command::new(python())
        .args(["-c", "import json,sys; from atif import Trajectory; Trajectory.model_validate(json.load(sys.stdin))"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(back.to_string().as_bytes())?;
            c.wait()
        })
        .unwrap();
    assert!(ok.success());
}

/// An original trajectory as export gives it back: the documented changes applied.
fn as_given_back(original: &Value, stamps: &[Value], exported: &Value) -> Value {
    let mut want = original.clone();
    let agent_model = original["agent"]["model_name"].clone();
    if want.get("final_metrics").is_none() {
        want["final_metrics"] = exported["final_metrics"].clone();
    } else {
        let m = want["final_metrics"].as_object_mut().unwrap();
        m.retain(|_, v| !v.is_null());
    }
    for (step, stamp) in want["steps"].as_array_mut().unwrap().iter_mut().zip(stamps) {
        let s = step.as_object_mut().unwrap();
        if s.get("llm_call_count") == Some(&json!(1)) {
            s.remove("llm_call_count");
        }
        if s.get("is_copied_context") == Some(&json!(false)) {
            s.remove("is_copied_context");
        }
        if s.get("model_name") == Some(&agent_model) {
            s.remove("model_name");
        }
        if !stamp.is_null() {
            s.insert("timestamp".into(), stamp.clone());
        }
    }
    want
}

/// Random trajectories built with the models → `ingest` → `export` → the same trajectories,
/// but for what docs/ingest.md says changes (prompts as their hashes, instants in UTC, defaults
/// left out, `final_metrics` written) — and nothing is counted as skipped.
#[test]
fn random_trajectories_come_back_as_they_were() {
    let env = Env::new();
    let lines = script("random_trajectories.py", &["20261206", "60"]);
    let runs: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let docs: Vec<String> = runs.iter().map(|r| r["doc"].to_string()).collect();
    env.write("runs.jsonl", docs.join("\n"));
    let summary = ingest(&env, "runs.jsonl");
    assert!(
        !summary.contains("skipped:"),
        "only kept fields were used, yet: {summary}"
    );
    for run in &runs {
        let doc = &run["doc"];
        let id = doc["session_id"].as_str().unwrap();
        let mut back = export(&env, &format!("traces/weather/{id}.trace.ndjson.zst"));
        let want = as_given_back(doc, run["timestamps"].as_array().unwrap(), &back);
        // Prompts come back as their hashes.
        for (x, y) in
            (doc["steps"].as_array().unwrap().iter()).zip(back["steps"].as_array_mut().unwrap())
        {
            if x["source"] != "agent" {
                let m = y["message"].as_str().unwrap_or_default();
                assert!(m.starts_with("b3:") && m.len() == 67, "{id}: {y}");
                y["message"] = x["message"].clone();
            }
        }
        assert_eq!(
            want, back,
            "{id}: the trajectory did not come back as it was"
        );
    }
}

/// Steps copied from an earlier run are context: a scenario judges only the run's own steps
/// unless it says `judgeCopiedContext`; the agent's tool definitions are what it was offered.
#[test]
fn copied_context_is_judged_only_when_asked_and_tool_definitions_are_offered_tools() {
    let env = Env::new();
    let step = |n: u64, source: &str, extra: Value| {
        let mut s = json!({"step_id": n, "source": source, "message": format!("m{n}")});
        s.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        s
    };
    let call = |id: &str, tool: &str| json!({"tool_calls": [{"tool_call_id": id, "function_name": tool, "arguments": {}}], "observation": {"results": [{"source_call_id": id, "content": "done"}]}});
    let mut copied = call("old-1", "delete_file");
    copied["is_copied_context"] = json!(true);
    let doc = json!({
        "schema_version": "ATIF-v1.8", "session_id": "resumed",
        "agent": {"name": "bot", "version": "1", "tool_definitions": [
            {"type": "function", "function": {"name": "weather", "description": "d"}},
            {"type": "function", "function": {"name": "delete_file"}}]},
        "steps": [
            step(1, "user", json!({"is_copied_context": true})),
            step(2, "agent", copied),
            step(3, "user", json!({})),
            step(4, "agent", call("new-1", "weather")),
            step(5, "agent", json!({})),
        ],
    });
    env.write("run.json", doc.to_string());
    for scenario in ["own-steps", "with-context"] {
        let out = env.run(&[
            "ingest",
            "--unkeyed",
            "--from",
            "atif",
            "--scenario",
            scenario,
            "-o",
            "traces",
            "run.json",
        ]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let judge = if scenario == "with-context" {
            r#", "judgeCopiedContext": true"#
        } else {
            ""
        };
        env.write(
            &format!("traces/{scenario}/{scenario}.scenario.json"),
            format!(
                r#"{{"id": "{scenario}", "title": "t", "risk": "High"{judge}, "oracles": [
                {{"type": "tool-not-called", "tool": "delete_file"}},
                {{"type": "tool-called", "tool": "weather"}},
                {{"type": "tools-offered", "tools": ["weather", "delete_file"]}}]}}"#
            ),
        );
    }
    let out = env.run(&["check", "traces", "--format", "json"]);
    let report = json(&out);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let verdicts = |suffix: &str| -> Vec<(String, String)> {
        (row(&report, suffix)["oracles"].as_array().unwrap().iter())
            .map(|o| {
                (
                    o["type"].as_str().unwrap().to_owned(),
                    o["verdict"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let own = verdicts("own-steps/resumed.trace.ndjson.zst");
    assert!(own.iter().all(|(_, v)| v == "pass"), "{own:?}");
    assert!(own.iter().any(|(t, _)| t == "tools-offered"), "{own:?}");
    let with = verdicts("with-context/resumed.trace.ndjson.zst");
    assert!(
        with.contains(&("tool-not-called".to_owned(), "fail".to_owned())),
        "{with:?}"
    );
}

/// What ATIF allows only in raw JSON, and what no model could express, is counted too: tool
/// calls on a user step, an agent step with nothing in it, a total that is not the sum.
#[test]
fn what_the_models_forbid_is_counted_not_dropped() {
    let env = Env::new();
    let doc = json!({
        "schema_version": "ATIF-v1.8", "session_id": "odd",
        "agent": {"name": "bot", "version": "1"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "hi", "tool_calls": [{"tool_call_id": "u1", "function_name": "f", "arguments": {}}]},
            {"step_id": 2, "source": "agent", "message": "", "llm_call_count": 0},
            {"step_id": 7, "source": "agent", "message": "hello", "metrics": {"prompt_tokens": 3}},
        ],
        "final_metrics": {"total_prompt_tokens": 99, "total_steps": 3},
    });
    env.write("odd.json", doc.to_string());
    let summary = ingest(&env, "odd.json");
    for counted in [
        "atif `tool_calls` on a user step",
        "atif agent step with nothing to record",
        "atif step `step_id` out of sequence",
        "atif step `metrics` without both `prompt_tokens` and `completion_tokens`",
        "atif `final_metrics.total_prompt_tokens` that is not the steps' sum",
    ] {
        assert!(summary.contains(counted), "{counted}: {summary}");
    }
    assert!(!summary.contains("total_steps"), "{summary}");
}
