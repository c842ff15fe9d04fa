//! Oracles about files the run wrote: `artifact-contains`, `artifact-before-reply`.

use serde_json::{Value, json};

use super::facts::Facts;
use super::params;
use super::result::{OracleResult, shorten};
use crate::baseline::normalize_artifact_path;
use crate::scenario::OracleSpec;
use crate::trace::json::contains_ci;
use crate::trace::{Event, EventBody, Phase};

fn path_param(spec: &OracleSpec) -> Option<String> {
    spec.get("path")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(normalize_artifact_path)
}

/// The last `artifact` event at `path`.
fn last_artifact<'t, 'a>(facts: &'t Facts<'t, 'a>, path: &str) -> Option<&'t Event<'a>> {
    facts.trace.events.iter().rev().find(|e| matches!(&e.body, EventBody::Artifact { path: p, .. } if normalize_artifact_path(p) == path))
}

/// `artifact-contains`: the last artifact at `path` has `text` containing every value.
pub fn artifact_contains(spec: &OracleSpec, facts: &Facts<'_, '_>) -> OracleResult {
    let Some(path) = path_param(spec) else {
        return OracleResult::misconfigured("no `path`");
    };
    let mut values = params::string_list(spec, "values");
    if values.is_empty() {
        values.extend(params::text(spec));
    }
    if values.is_empty() {
        return OracleResult::misconfigured("no `values` to look for");
    }
    let Some(event) = last_artifact(facts, &path) else {
        return OracleResult::fail(
            format!("no artifact at `{path}`"),
            Vec::new(),
            json!({"path": path}),
            Value::Null,
        );
    };
    let EventBody::Artifact { text, .. } = &event.body else {
        unreachable!("last_artifact returns artifacts")
    };
    let Some(text) = text else {
        return OracleResult::not_evaluable(
            format!(
                "the artifact `{path}` at seq {} was recorded without `text`",
                event.seq
            ),
            vec![event.seq],
        );
    };
    let missing: Vec<&String> = values.iter().filter(|v| !contains_ci(text, v)).collect();
    if missing.is_empty() {
        OracleResult::pass(format!("`{path}` contains every value"), vec![event.seq])
    } else {
        OracleResult::fail(
            format!(
                "`{path}` lacks {}",
                missing
                    .iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            vec![event.seq],
            json!({"path": path, "contains": missing}),
            json!(shorten(text, 400)),
        )
    }
}

/// `artifact-before-reply`: the artifact's `mtime_ms` is at most the time of every standing
/// final message.
pub fn artifact_before_reply(spec: &OracleSpec, facts: &Facts<'_, '_>) -> OracleResult {
    let Some(path) = path_param(spec) else {
        return OracleResult::misconfigured("no `path`");
    };
    let Some(event) = last_artifact(facts, &path) else {
        return OracleResult::fail(
            format!("no artifact at `{path}`"),
            Vec::new(),
            json!({"path": path}),
            Value::Null,
        );
    };
    let EventBody::Artifact { mtime_ms, .. } = &event.body else {
        unreachable!("last_artifact returns artifacts")
    };
    let Some(mtime) = *mtime_ms else {
        return OracleResult::not_evaluable(
            format!(
                "the artifact `{path}` at seq {} has no `mtime_ms`",
                event.seq
            ),
            vec![event.seq],
        );
    };
    let mut finals: Vec<_> = facts
        .standing()
        .filter(|m| m.phase == Phase::Final)
        .collect();
    finals.sort_by_key(|m| m.seq);
    if finals.is_empty() {
        return OracleResult::fail(
            "no final message stands",
            vec![event.seq],
            json!({"path": path}),
            Value::Null,
        );
    }
    let untimed: Vec<u64> = finals
        .iter()
        .filter(|m| m.ts_ms.is_none())
        .map(|m| m.seq)
        .collect();
    if !untimed.is_empty() {
        return OracleResult::not_evaluable(
            format!("{} standing final message(s) lack `ts_ms`", untimed.len()),
            untimed,
        );
    }
    let early: Vec<&&super::facts::MessageState> = finals
        .iter()
        .filter(|m| m.ts_ms.is_some_and(|t| t < mtime))
        .collect();
    let mut evidence = vec![event.seq];
    if early.is_empty() {
        evidence.extend(finals.iter().map(|m| m.seq));
        evidence.sort_unstable();
        OracleResult::pass(
            format!("`{path}` was written at {mtime}, before every final reply"),
            evidence,
        )
    } else {
        evidence.extend(early.iter().map(|m| m.seq));
        evidence.sort_unstable();
        OracleResult::fail(
            format!(
                "the final message `{}` (seq {}) was sent before `{path}` was written",
                early[0].id, early[0].seq
            ),
            evidence,
            json!({"artifact_mtime_ms": mtime, "replies_at_or_after": mtime}),
            json!({"seq": early[0].seq, "ts_ms": early[0].ts_ms}),
        )
    }
}
