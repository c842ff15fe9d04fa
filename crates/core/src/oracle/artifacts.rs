//! Oracles about files the run wrote: `artifact-contains`, `artifact-before-reply`.

use crate::oracle::ConfigError;
use serde_json::{Value, json};

use super::facts::Facts;
use super::params;
use super::result::{FOUND_CHARS, OracleResult, shorten};
use super::typed::{Fallbacks, Oracle};
use crate::oracle::spec::OracleSpec;
use crate::trace::json::contains_ci;
use crate::trace::values::normalize_artifact_path;
use crate::trace::{EventBody, Phase};

fn path_param(spec: &OracleSpec) -> Option<String> {
    params::string(spec, "path").map(|p| normalize_artifact_path(&p))
}

/// The last artifact at `path`: its `seq`, `text` and `mtime_ms`; without one, the failing
/// result (a missing subject fails).
fn artifact_at<'t>(
    facts: &'t Facts<'t, '_>,
    path: &str,
) -> Result<(u64, Option<&'t str>, Option<i64>), OracleResult> {
    facts
        .trace
        .events
        .iter()
        .rev()
        .find_map(|e| match &e.body {
            EventBody::Artifact {
                path: p,
                text,
                mtime_ms,
                ..
            } if normalize_artifact_path(p) == path => Some((e.seq, text.as_deref(), *mtime_ms)),
            _ => None,
        })
        .ok_or_else(|| {
            OracleResult::fail(
                format!("no artifact at `{path}`"),
                Vec::new(),
                json!({"path": path}),
                Value::Null,
            )
        })
}

/// Configures `artifact-contains`: `values`, else `value`.
pub(crate) fn configure_artifact_contains(
    spec: &OracleSpec,
    _: &Fallbacks<'_>,
) -> Result<Oracle, ConfigError> {
    let path = path_param(spec).ok_or_else(|| ConfigError::value("path", "no `path`"))?;
    let mut values = params::string_list(spec, "values");
    if values.is_empty() {
        values.extend(params::text(spec));
    }
    if values.is_empty() {
        return Err(ConfigError::value("values", "no `values` to look for"));
    }
    Ok(Oracle::ArtifactContains { path, values })
}

/// Configures `artifact-before-reply`.
pub(crate) fn configure_artifact_before_reply(
    spec: &OracleSpec,
    _: &Fallbacks<'_>,
) -> Result<Oracle, ConfigError> {
    let path = path_param(spec).ok_or_else(|| ConfigError::value("path", "no `path`"))?;
    Ok(Oracle::ArtifactBeforeReply { path })
}

/// `artifact-contains`: the last artifact at `path` has `text` containing every value.
pub(crate) fn artifact_contains(
    path: &str,
    values: &[String],
    facts: &Facts<'_, '_>,
) -> OracleResult {
    let (seq, text) = match artifact_at(facts, path) {
        Ok((seq, text, _)) => (seq, text),
        Err(missing) => return missing,
    };
    let Some(text) = text else {
        return OracleResult::not_evaluable(
            format!("the artifact `{path}` at seq {seq} was recorded without `text`"),
            vec![seq],
        );
    };
    let missing: Vec<&String> = values.iter().filter(|v| !contains_ci(text, v)).collect();
    if missing.is_empty() {
        OracleResult::pass(format!("`{path}` contains every value"), vec![seq])
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
            vec![seq],
            json!({"path": path, "contains": missing}),
            json!(shorten(text, FOUND_CHARS)),
        )
    }
}

/// `artifact-before-reply`: the artifact's `mtime_ms` is at most the time of every standing
/// final message.
pub(crate) fn artifact_before_reply(path: &str, facts: &Facts<'_, '_>) -> OracleResult {
    let (seq, mtime) = match artifact_at(facts, path) {
        Ok((seq, _, mtime)) => (seq, mtime),
        Err(missing) => return missing,
    };
    let Some(mtime) = mtime else {
        return OracleResult::not_evaluable(
            format!("the artifact `{path}` at seq {seq} has no `mtime_ms`"),
            vec![seq],
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
            vec![seq],
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
    let mut evidence = vec![seq];
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
