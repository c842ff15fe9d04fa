//! Scenarios from a benchmark's own expectations (`ingest --emit-scenarios`): one per task, a
//! starting point a person reviews (its title says so and it is tagged `generated`).
//!
//! - **tau2-bench** (`tasks[].evaluation_criteria.actions`): one oracle per expected action,
//!   reproducing tau2's own action check — an action matches if *any* call, whoever made it,
//!   has its name and arguments equal on `compare_args`: `null` compares the keys of the actual
//!   call (`tool-args`, `argsMatch: subset`), `[]` the name only (`tool-args`, `ignore`), a list
//!   those keys (`tool-sequence` `superset` of that one call, the keys as override paths). A
//!   task with no expected action gets `status-is completed` only.
//! - **tau-bench** (`info.task.actions`, `info.task.outputs`): one `tool-args` oracle per
//!   expected action with exact arguments, and a `final-answer-contains` per expected output.
//!
//! Scenario ids are the names the task's runs get (see `super::naming`), so the traces and
//! their scenarios meet; naming that puts two tasks in one scenario is refused.

use std::collections::BTreeMap;

use rayon::prelude::*;
use serde_json::{Value, json};

use super::IngestOptions;
use super::naming::{Position, RunIds, name};

/// One task's expectations.
struct Task {
    ids: RunIds,
    oracles: Vec<Value>,
    source: &'static str,
}

/// The parts of a results file that hold a benchmark's expectations, read without building the
/// runs' trajectories (most of the file) as JSON values.
enum Expectations {
    /// tau2-bench: the document besides its simulations.
    Tau2(Tau2Doc),
    /// tau-bench: each run besides its trajectory (`None` for an element that is no object).
    TauBench(Vec<Option<TauBenchRun>>),
}

/// What a tau2-bench results document holds besides its simulations (whose key marks it).
#[derive(serde::Deserialize)]
struct Tau2Doc {
    #[serde(default)]
    simulations: Present,
    tasks: Option<Value>,
    info: Option<Value>,
}

/// Whether a key is there, whatever its value (`null` included); the value is skipped.
#[derive(Default)]
struct Present(bool);

impl<'de> serde::Deserialize<'de> for Present {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Present, D::Error> {
        serde::de::IgnoredAny::deserialize(d)?;
        Ok(Present(true))
    }
}

/// What a tau-bench run holds besides its trajectory: what names its task's scenario, and the
/// task's expectations.
#[derive(serde::Deserialize)]
struct TauBenchRun {
    task_id: Option<Value>,
    trial: Option<Value>,
    info: Option<Value>,
}

/// Reads `bytes` as a tau2-bench document or a tau-bench array; `None` for anything else (or
/// JSON that does not parse).
fn expectations(bytes: &[u8]) -> Option<Expectations> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace())?;
    match first {
        b'{' => {
            let doc: Tau2Doc = serde_json::from_slice(bytes).ok()?;
            doc.simulations.0.then_some(Expectations::Tau2(doc))
        }
        b'[' => {
            // Each element as its raw text (checked as JSON, nothing built), then only its
            // keys read; an element that is no object gives none, as the ingest skips it.
            let raw: Vec<&serde_json::value::RawValue> = serde_json::from_slice(bytes).ok()?;
            let runs = (raw.par_iter())
                .map(|r| serde_json::from_str::<TauBenchRun>(r.get()).ok())
                .collect();
            Some(Expectations::TauBench(runs))
        }
        _ => None,
    }
}

fn id_text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// One tau2 expected action as an oracle. `compare_args: null` → `tool-args` with `argsMatch:
/// subset` (the actual call's keys compared); `[]` → `tool-args` with `ignore`; a list of keys →
/// `tool-sequence` in `superset` mode with that one call and the keys as its tool's
/// `argsMatchOverrides` paths (compared when present on either side).
/// A ground-truth tool name as an oracle's `tool`: glob characters escaped, so the name matches
/// that tool alone (a task action `refund*` must not match `refund_everything_to_attacker`).
fn literal_tool(name: Option<&Value>) -> Value {
    match name {
        Some(Value::String(s)) => Value::String(crate::oracle::names::escape_glob(s)),
        Some(other) => other.clone(),
        None => Value::Null,
    }
}

fn tau2_action(a: &Value) -> Value {
    let tool = literal_tool(a.get("name"));
    let args = a.get("arguments").cloned().unwrap_or_else(|| json!({}));
    let metadata = json!({
        "action_id": a.get("action_id").cloned().unwrap_or(Value::Null),
        "requestor": a.get("requestor").cloned().unwrap_or(Value::Null),
    });
    match a.get("compare_args") {
        Some(Value::Array(keys)) if !keys.is_empty() => {
            let kept: serde_json::Map<String, Value> = keys
                .iter()
                .filter_map(Value::as_str)
                .filter_map(|k| Some((k.to_owned(), args.get(k)?.clone())))
                .collect();
            let mut overrides = serde_json::Map::new();
            if let Some(name) = tool.as_str() {
                overrides.insert(name.to_owned(), Value::Array(keys.clone()));
            }
            json!({
                "type": "tool-sequence",
                "mode": "superset",
                "calls": [{"tool": tool, "args": kept}],
                "argsMatchOverrides": overrides,
                "metadata": metadata,
            })
        }
        Some(Value::Array(_)) => json!({
            "type": "tool-args", "tool": tool, "args": {}, "argsMatch": "ignore", "metadata": metadata,
        }),
        _ => json!({
            "type": "tool-args", "tool": tool, "args": args, "argsMatch": "subset", "metadata": metadata,
        }),
    }
}

fn tau2_tasks(doc: &Tau2Doc) -> Vec<Task> {
    let domain =
        (doc.info.as_ref()).and_then(|i| id_text(i.pointer("/environment_info/domain_name")));
    (doc.tasks
        .as_ref()
        .and_then(Value::as_array)
        .into_iter()
        .flatten())
    .filter_map(|t| {
        let task = id_text(t.get("id"))?;
        let actions = t
            .pointer("/evaluation_criteria/actions")
            .and_then(Value::as_array);
        let mut oracles: Vec<Value> = actions.into_iter().flatten().map(tau2_action).collect();
        if oracles.is_empty() {
            oracles.push(json!({"type": "status-is", "value": "completed"}));
        }
        Some(Task {
            ids: RunIds {
                source: Some("tau2".into()),
                domain: domain.clone(),
                task: Some(task),
                trial: Some("0".into()),
                ..RunIds::default()
            },
            oracles,
            source: "tau2-bench",
        })
    })
    .collect()
}

fn tau_bench_tasks(runs: &[Option<TauBenchRun>]) -> Vec<Task> {
    let mut by_task: BTreeMap<String, Task> = BTreeMap::new();
    for r in runs.iter().flatten() {
        let spec = r.info.as_ref().and_then(|i| i.get("task"));
        let (Some(task), Some(spec)) = (id_text(r.task_id.as_ref()), spec) else {
            continue;
        };
        by_task.entry(task.clone()).or_insert_with(|| {
            let mut oracles: Vec<Value> = (spec["actions"].as_array().into_iter().flatten())
                .map(|a| {
                    json!({
                        "type": "tool-args",
                        "tool": literal_tool(a.get("name")),
                        "args": a.get("kwargs").cloned().unwrap_or_else(|| json!({})),
                        "argsMatch": "exact",
                    })
                })
                .collect();
            oracles.extend(
                (spec["outputs"].as_array().into_iter().flatten())
                    .filter_map(Value::as_str)
                    .map(|o| json!({"type": "final-answer-contains", "value": o})),
            );
            if oracles.is_empty() {
                oracles.push(json!({"type": "status-is", "value": "completed"}));
            }
            Task {
                ids: RunIds {
                    source: Some("tau-bench".into()),
                    task: Some(task),
                    trial: id_text(r.trial.as_ref()).or(Some("0".into())),
                    ..RunIds::default()
                },
                oracles,
                source: "tau-bench",
            }
        });
    }
    by_task.into_values().collect()
}

/// The scenarios of the tasks in `bytes` (tau-bench or tau2-bench results): `(id, file text)`,
/// or why they cannot be emitted under these naming options.
pub fn scenarios(bytes: &[u8], opts: &IngestOptions) -> Result<Vec<(String, String)>, String> {
    let tasks = match expectations(bytes) {
        Some(Expectations::Tau2(doc)) => tau2_tasks(&doc),
        Some(Expectations::TauBench(runs)) => tau_bench_tasks(&runs),
        None => Vec::new(),
    };
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    let mut tasks_of: BTreeMap<String, String> = BTreeMap::new();
    for t in tasks {
        let task = t.ids.task.clone().unwrap_or_default();
        let (id, _) = name(&t.ids, Position { n: 1, of: 1 }, opts)?;
        if let Some(other) = tasks_of.insert(id.clone(), task.clone()) {
            if other != task {
                return Err(format!(
                    "tasks `{other}` and `{task}` would share the scenario `{id}`: `--emit-scenarios` needs one scenario per task (drop `--scenario`, or name by task with `--name`)"
                ));
            }
        }
        let domain = t
            .ids
            .domain
            .as_deref()
            .map(|d| format!(" {d}"))
            .unwrap_or_default();
        let mut tags = vec!["generated", "needs-review", t.source];
        if t.oracles.iter().any(|o| o["type"] != "status-is") {
            tags.push("tool-use");
        }
        let scenario = json!({
            "id": id,
            "title": format!("{}{domain} task {task}: generated from the benchmark's expected actions, review before relying on it", t.source),
            "risk": "Medium",
            "tags": tags,
            "oracles": t.oracles,
        });
        let mut text = serde_json::to_string_pretty(&scenario).expect("a scenario serialises");
        text.push('\n');
        out.insert(id, text);
    }
    Ok(out.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> IngestOptions {
        IngestOptions {
            hasher: crate::trace::PromptHasher::keyed(b"k"),
            raw_opt_in: false,
            scenario: None,
            case: None,
            name: None,
            file_stem: Some("results".into()),
            allow_empty: false,
        }
    }

    fn ids(bytes: &str) -> Vec<String> {
        let got = scenarios(bytes.as_bytes(), &opts()).expect("scenarios");
        got.into_iter().map(|(id, _)| id).collect()
    }

    #[test]
    fn a_tau_bench_array_gives_each_tasks_scenario_and_skips_what_is_no_run() {
        let run = |task: u32| {
            format!(
                r#"{{"task_id": {task}, "trial": 0, "traj": [{{"role": "user", "content": "hi"}}], "info": {{"task": {{"actions": [{{"name": "find", "kwargs": {{"id": {task}}}}}]}}}}}}"#
            )
        };
        let text = format!("[{}, 7, \"x\", {}, {}]", run(1), run(2), run(1));
        assert_eq!(ids(&text).len(), 2, "tasks 1 and 2: {:?}", ids(&text));
        // A run whose `info` is no object, or that has no task, names nothing.
        let text = format!(
            r#"[{}, {{"task_id": 3, "info": null}}, {{"info": {{}}}}]"#,
            run(1)
        );
        assert_eq!(ids(&text).len(), 1);
        assert!(
            ids("[1, 2").is_empty(),
            "JSON that does not parse gives none"
        );
        assert!(ids(r#"{"runs": []}"#).is_empty());
    }

    #[test]
    fn a_tau_bench_tasks_scenario_is_named_from_its_first_runs_ids_trial_included() {
        let text = r#"[{"task_id": 1, "trial": 3, "info": {"task": {"actions": []}}, "traj": []}]"#;
        let named = IngestOptions {
            name: Some("t{task}-{trial}/c".into()),
            ..opts()
        };
        let got = scenarios(text.as_bytes(), &named).expect("scenarios");
        let ids: Vec<&str> = got.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["t1-3"]);
    }

    #[test]
    fn a_tau2_document_is_known_by_its_simulations_key_whatever_its_value() {
        let doc = |simulations: &str| {
            format!(
                r#"{{"info": {{"environment_info": {{"domain_name": "telecom"}}}}, "tasks": [{{"id": "t1", "evaluation_criteria": {{"actions": []}}}}], "simulations": {simulations}}}"#
            )
        };
        assert_eq!(ids(&doc("[]")).len(), 1);
        assert_eq!(ids(&doc("null")).len(), 1);
        let without = r#"{"tasks": [{"id": "t1"}]}"#;
        assert!(ids(without).is_empty());
    }
}
