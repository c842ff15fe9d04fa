//! `atif`: Harbor's Agent Trajectory Interchange Format (ATIF v1.x) — one trajectory per
//! document (or JSON Lines of them, or an array). Prompt text is hashed on the way in, as every
//! importer hashes it.
//!
//! Every field of the format is either mapped or counted in the import's summary by name
//! (`docs/ingest.md` has the table, field by field):
//!
//! | ATIF | trace |
//! |---|---|
//! | `schema_version`, `session_id`, `trajectory_id`, `notes`, `continued_trajectory_ref`, `agent.name`, `agent.version` | labels `atif.…` (the run is named from `session_id`, else `trajectory_id`) |
//! | `agent.model_name` | header `model` |
//! | `agent.tool_definitions` | the names: every inference's `tools_offered` (the rest counted) |
//! | `final_metrics` | recomputed by `export` from the steps (a total that is not their sum counted) |
//! | `system` step | hashed: the `system_h` of the inferences after it |
//! | `user` step | `user_message` (hashed) |
//! | `agent` step | `inference` (`llm_call_count` > 1 as its `llm_calls`), its `reasoning_content` a `note` before it, its `tool_calls` `tool_call` events; with `llm_call_count: 0`, no inference and its message a `message` |
//! | `observation.results` | `tool_result` of their `source_call_id`; a result of no call a `note` |
//! | `timestamp` | `ts_ms`, and `ts_sub_ns` for the digits below the millisecond |
//! | `is_copied_context` | the step's events marked `copied` (judged only when a scenario asks) |
//! | `subagent_trajectories` | runs of their own, case `<case>.<trajectory_id>` |
//!
//! Counted, as the trace format has no place for them: every `extra` object, `reasoning_effort`,
//! token ids and log probabilities, non-text content parts, a subagent reference in a result.

mod step;
mod totals;

use std::collections::BTreeMap;

use serde_json::Value;

use super::naming::{self, Position, RunIds};
use super::{IngestOptions, IngestOutcome, InputFormat, RunBuilder};
use crate::ingest::identity::Conversation;
use crate::trace::{RunStatus, Str};

/// Imports ATIF trajectories.
pub(crate) fn ingest(bytes: &[u8], opts: &IngestOptions) -> IngestOutcome {
    let mut outcome = IngestOutcome::default();
    let mut docs = Vec::new();
    for (i, raw) in serde_json::Deserializer::from_slice(bytes)
        .into_iter::<Box<serde_json::value::RawValue>>()
        .enumerate()
    {
        // An object holding a key twice (`steps` twice, say) is refused, never resolved
        // last-wins: which one a reader takes is not the input's to leave open.
        let v = raw.and_then(|raw| {
            crate::trace::json::no_duplicate_keys(raw.get().as_bytes())?;
            serde_json::from_str::<Value>(raw.get())
        });
        match v {
            Ok(Value::Array(items)) => docs.extend(items),
            Ok(v) => docs.push(v),
            Err(e) => {
                outcome.reject(
                    format!("line {}, column {}", e.line(), e.column()),
                    format!(
                        "document {}: not JSON: {}",
                        i + 1,
                        crate::trace::json::message_without_position(&e)
                    ),
                );
                return outcome;
            }
        }
    }
    let of = docs.len();
    for (i, doc) in docs.iter().enumerate() {
        let at = format!("trajectory {}", i + 1);
        let ids = RunIds {
            source: Some("atif".to_owned()),
            agent: doc
                .pointer("/agent/name")
                .and_then(Value::as_str)
                .map(str::to_owned),
            id: (doc.get("session_id").or_else(|| doc.get("trajectory_id")))
                .and_then(Value::as_str)
                .map(str::to_owned),
            ..RunIds::default()
        };
        let named = naming::name(&ids, Position { n: i + 1, of }, opts);
        let (scenario, case) = match named {
            Ok(n) => n,
            Err(e) => {
                outcome.reject(&at, e);
                continue;
            }
        };
        run(doc, (&scenario, &case), &at, opts, &mut outcome);
    }
    outcome
}

/// The trajectory's fields kept as header labels, with the pointer each is read from.
const LABELS: [(&str, &str); 7] = [
    ("atif.schema_version", "/schema_version"),
    ("atif.session_id", "/session_id"),
    ("atif.trajectory_id", "/trajectory_id"),
    ("atif.notes", "/notes"),
    ("atif.continued_trajectory_ref", "/continued_trajectory_ref"),
    ("atif.agent", "/agent/name"),
    ("atif.agent_version", "/agent/version"),
];

/// Imports one trajectory (and its embedded subagents, as runs of their own).
fn run(
    doc: &Value,
    (scenario, case): (&str, &str),
    at: &str,
    opts: &IngestOptions,
    outcome: &mut IngestOutcome,
) {
    let Some(steps) = doc.get("steps").and_then(Value::as_array) else {
        outcome.reject(at, "not an ATIF trajectory: it has no `steps` list");
        return;
    };
    for (what, pointer) in [("trajectory", "/extra"), ("agent", "/agent/extra")] {
        if present(doc.pointer(pointer)) {
            skip(outcome, &format!("atif {what} `extra`"));
        }
    }
    let mut labels = BTreeMap::new();
    for (label, pointer) in LABELS {
        match doc.pointer(pointer) {
            None | Some(Value::Null) => {}
            Some(Value::String(v)) => {
                labels.insert(label.to_owned(), v.clone());
            }
            Some(_) => skip(
                outcome,
                &format!("atif `{}` (not a string)", &pointer[1..].replace('/', ".")),
            ),
        }
    }
    let model = doc.pointer("/agent/model_name").and_then(Value::as_str);
    totals::check(doc, steps, outcome);
    let mut b = RunBuilder::with_labels(
        InputFormat::Atif,
        (scenario, case, None),
        model,
        labels,
        opts,
    );
    let mut state = step::State {
        messages: Conversation::new(&opts.hasher),
        system_h: None,
        system_unused: false,
        final_answer: None,
        tools_offered: tools_offered(doc, outcome),
        model: model.map(str::to_owned),
    };
    for (n, s) in steps.iter().enumerate() {
        if let Err(e) = step::step(&mut b, &mut state, (n + 1, s), outcome) {
            outcome.reject(format!("{at}, step {}", n + 1), e);
            return;
        }
    }
    if state.system_unused {
        skip(
            outcome,
            "atif system step with no model request after it (its hash is kept by none)",
        );
    }
    let status = match state.final_answer.is_some() {
        true => (RunStatus::Completed, None),
        false => (
            RunStatus::Failed,
            Some("the trajectory ends without an answer from the agent".to_owned()),
        ),
    };
    b.finish_into(outcome, at, opts, (state.final_answer, status.0, status.1));
    for (i, sub) in (doc.get("subagent_trajectories").and_then(Value::as_array))
        .into_iter()
        .flatten()
        .enumerate()
    {
        let id = sub
            .get("trajectory_id")
            .and_then(Value::as_str)
            .map_or_else(|| format!("sub-{}", i + 1), str::to_owned);
        run(
            sub,
            (scenario, &format!("{case}.{id}")),
            &format!("{at}, subagent `{id}`"),
            opts,
            outcome,
        );
    }
}

/// The names of `agent.tool_definitions` (OpenAI-style `{"type": "function", "function":
/// {"name"}}`, or a bare `{"name"}`), which every inference offered; a definition with more than
/// its name (a description, parameters) is counted, as is one without a name.
fn tools_offered(doc: &Value, outcome: &mut IngestOutcome) -> Option<Vec<Str<'static>>> {
    let defs = doc.pointer("/agent/tool_definitions")?.as_array()?;
    let mut names = Vec::new();
    for d in defs {
        let name = (d.pointer("/function/name").or_else(|| d.get("name")))
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty());
        let Some(name) = name else {
            skip(outcome, "atif agent tool definition without a name");
            continue;
        };
        let bare = serde_json::json!({"type": "function", "function": {"name": name}});
        if *d != bare {
            skip(
                outcome,
                "atif agent tool definition beyond its name (the name is kept, as `tools_offered`)",
            );
        }
        names.push(Str::from(name.to_owned()));
    }
    Some(names)
}

/// Whether a field is there with a value (`null` is absent).
fn present(v: Option<&Value>) -> bool {
    v.is_some_and(|v| !v.is_null())
}

fn skip(outcome: &mut IngestOutcome, what: &str) {
    *outcome.skipped.entry(what.to_owned()).or_default() += 1;
}
