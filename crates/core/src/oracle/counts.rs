//! Counting oracles: `request-count`, `step-count`, `message-count`, `max-tokens`,
//! `tools-offered`.

use crate::oracle::ConfigError;
use serde_json::{Value, json};

use super::facts::Facts;
use super::names::tool_matches;
use super::params;
use super::result::OracleResult;
use super::sequence::Of;
use super::typed::{Fallbacks, Oracle, TokenKind};
use crate::oracle::spec::OracleSpec;
use crate::trace::json::contains_ci;
use crate::trace::{EventBody, Phase, normalize_kind, squash};

/// `count`, or `min`/`max` (inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Range {
    /// Exactly this many.
    Count(u64),
    /// Within bounds.
    Bounds(Option<u64>, Option<u64>),
}

fn bound(spec: &OracleSpec, name: &str) -> Result<Option<u64>, ConfigError> {
    match spec.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
            .or_else(|| {
                v.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                    .map(|f| f as u64)
            })
            .map(Some)
            .ok_or_else(|| {
                ConfigError::value(
                    name,
                    format!("`{name}` must be a non-negative integer, got `{v}`"),
                )
            }),
    }
}

/// Reads `count` or `min`/`max` (not both kinds).
pub(crate) fn range(spec: &OracleSpec) -> Result<Range, ConfigError> {
    let (count, min, max) = (
        bound(spec, "count")?,
        bound(spec, "min")?,
        bound(spec, "max")?,
    );
    match (count, min, max) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            Err("give `count` or `min`/`max`, not both".into())
        }
        (Some(c), None, None) => Ok(Range::Count(c)),
        (None, None, None) => Err("no bound: give `count`, `min` or `max`".into()),
        (None, Some(lo), Some(hi)) if lo > hi => Err(ConfigError::value(
            "min",
            format!("`min` {lo} is greater than `max` {hi}"),
        )),
        (None, lo, hi) => Ok(Range::Bounds(lo, hi)),
    }
}

impl Range {
    /// Whether `n` is in range.
    pub fn holds(self, n: u64) -> bool {
        match self {
            Range::Count(c) => n == c,
            Range::Bounds(lo, hi) => lo.is_none_or(|l| n >= l) && hi.is_none_or(|h| n <= h),
        }
    }

    fn describe(self) -> Value {
        match self {
            Range::Count(c) => json!({"count": c}),
            Range::Bounds(lo, hi) => json!({"min": lo, "max": hi}),
        }
    }
}

fn counted(what: &str, range: Range, seqs: Vec<u64>) -> OracleResult {
    let n = seqs.len() as u64;
    if range.holds(n) {
        OracleResult::pass(format!("{n} {what}, within {}", range.describe()), seqs)
    } else {
        OracleResult::fail(
            format!("{n} {what}, outside {}", range.describe()),
            seqs,
            range.describe(),
            json!({"count": n}),
        )
    }
}

/// Configures `tool-call-count`.
pub(crate) fn configure_tool_call_count(
    spec: &OracleSpec,
    _: &Fallbacks<'_>,
) -> Result<Oracle, ConfigError> {
    let tool = params::string(spec, "tool")
        .ok_or_else(|| ConfigError::value("tool", "no `tool` to count"))?;
    Ok(Oracle::ToolCallCount {
        tool,
        range: range(spec)?,
        of: Of::read(spec)?,
    })
}

/// `tool-call-count`: the number of calls of `tool` (a name or glob; executed, or planned) is in
/// range.
pub(crate) fn tool_call_count(
    tool: &str,
    range: Range,
    of: Of,
    facts: &Facts<'_, '_>,
) -> OracleResult {
    let (seqs, what): (Vec<u64>, String) = match of {
        Of::Executed => (
            (facts.calls.iter())
                .filter(|c| tool_matches(tool, c.tool))
                .map(|c| c.event.seq)
                .collect(),
            format!("call(s) of `{tool}`"),
        ),
        Of::Planned => (
            (facts.planned().iter())
                .filter(|c| tool_matches(tool, &c.tool))
                .map(|c| c.seq)
                .collect(),
            format!("planned call(s) of `{tool}`"),
        ),
    };
    counted(&what, range, seqs)
}

/// Configures `request-count`.
pub(crate) fn configure_request_count(
    spec: &OracleSpec,
    _: &Fallbacks<'_>,
) -> Result<Oracle, ConfigError> {
    Ok(Oracle::RequestCount {
        range: range(spec)?,
    })
}

/// `request-count`: the number of `inference` events is in range.
pub(crate) fn request_count(range: Range, facts: &Facts<'_, '_>) -> OracleResult {
    let seqs = facts
        .trace
        .events
        .iter()
        .filter(|e| matches!(e.body, EventBody::Inference(_)))
        .map(|e| e.seq)
        .collect();
    counted("model request(s)", range, seqs)
}

/// Configures `step-count`.
pub(crate) fn configure_step_count(
    spec: &OracleSpec,
    _: &Fallbacks<'_>,
) -> Result<Oracle, ConfigError> {
    let kind = params::string(spec, "kind")
        .ok_or_else(|| ConfigError::value("kind", "no `kind` to count"))?;
    let range = range(spec)?;
    // A kind the trace format does not define is never counted (unknown kinds are seen by no
    // oracle): naming one is a typo that would make any upper bound pass.
    let Some(known) = normalize_kind(&kind).filter(|k| !matches!(*k, "header" | "footer")) else {
        let meant =
            crate::oracle::registry::closest(&kind, crate::trace::KNOWN_KINDS.iter().copied())
                .map(|m| format!("; did you mean `{m}`?"))
                .unwrap_or_default();
        return Err(ConfigError::value(
            "kind",
            format!("`kind` `{kind}` is not an event kind of the trace format{meant}"),
        ));
    };
    Ok(Oracle::StepCount { kind, known, range })
}

/// `step-count`: the number of events of `kind` (normalised as `known`) is in range.
pub(crate) fn step_count(
    kind: &str,
    known: &str,
    range: Range,
    facts: &Facts<'_, '_>,
) -> OracleResult {
    let want = squash(known);
    let seqs = facts
        .trace
        .events
        .iter()
        // Unknown kinds are seen by no oracle.
        .filter(|e| !matches!(e.body, EventBody::Unknown { .. }) && squash(e.body.kind()) == want)
        .map(|e| e.seq)
        .collect();
    counted(&format!("`{kind}` event(s)"), range, seqs)
}

/// Configures `message-count`.
pub(crate) fn configure_message_count(
    spec: &OracleSpec,
    _: &Fallbacks<'_>,
) -> Result<Oracle, ConfigError> {
    let phase = params::phase(spec)?.unwrap_or(Phase::Final);
    let range = range(spec)?;
    let value = params::text(spec);
    Ok(Oracle::MessageCount {
        phase,
        value,
        range,
    })
}

/// `message-count`: standing messages of a phase (default `final`), containing `value` if given.
pub(crate) fn message_count(
    phase: Phase,
    value: Option<&str>,
    range: Range,
    facts: &Facts<'_, '_>,
) -> OracleResult {
    let mut standing: Vec<_> = facts
        .standing()
        .filter(|m| m.phase == phase && value.is_none_or(|v| contains_ci(&m.text, v)))
        .collect();
    standing.sort_by_key(|m| m.seq);
    let what = match value {
        Some(v) => format!("standing `{phase}` message(s) containing `{v}`"),
        None => format!("standing `{phase}` message(s)"),
    };
    counted(&what, range, standing.iter().map(|m| m.seq).collect())
}

/// Configures `max-tokens`.
pub(crate) fn configure_max_tokens(
    spec: &OracleSpec,
    _: &Fallbacks<'_>,
) -> Result<Oracle, ConfigError> {
    let limit = match params::limit(spec) {
        params::Limit::Valid(n) => n,
        params::Limit::Invalid(bad) => {
            return Err(ConfigError::value(
                "limit",
                format!("limit `{bad}` is not a non-negative integer"),
            ));
        }
        params::Limit::Missing => return Err(ConfigError::value("limit", "no `limit`")),
    };
    let kind = match spec
        .get("kind")
        .and_then(Value::as_str)
        .map(|k| k.trim().to_ascii_lowercase())
        .as_deref()
    {
        None | Some("total") => TokenKind::Total,
        Some("input") => TokenKind::Input,
        Some("output") => TokenKind::Output,
        Some(k) => {
            return Err(ConfigError::value(
                "kind",
                format!("`kind` `{k}` is not input, output or total"),
            ));
        }
    };
    super::cost::over_trials(spec, true)?;
    Ok(Oracle::MaxTokens { limit, kind })
}

/// `max-tokens`: summed usage of a kind (`input`, `output`, `total`) is at most `limit`.
pub(crate) fn max_tokens(limit: u64, kind: TokenKind, facts: &Facts<'_, '_>) -> OracleResult {
    let kind_name = kind.as_str();
    let mut total = 0u64;
    let mut seqs = Vec::new();
    let mut missing = Vec::new();
    for e in &facts.trace.events {
        if let EventBody::Inference(i) = &e.body {
            seqs.push(e.seq);
            match &i.usage {
                Some(u) => {
                    // Saturating: a wrapped sum of huge recorded counts would pass a limit.
                    total = total.saturating_add(match kind {
                        TokenKind::Input => u.input_tokens,
                        TokenKind::Output => u.output_tokens,
                        TokenKind::Total => u.input_tokens.saturating_add(u.output_tokens),
                    })
                }
                None => missing.push(e.seq),
            }
        }
    }
    if !missing.is_empty() {
        return OracleResult::not_evaluable(
            format!("{} inference(s) lack `usage`", missing.len()),
            missing,
        );
    }
    if total <= limit {
        OracleResult::pass(format!("{total} {kind_name} tokens, limit {limit}"), seqs)
            .found(json!({"tokens": total}))
    } else {
        OracleResult::fail(
            format!("{total} {kind_name} tokens exceed the limit of {limit}"),
            seqs,
            json!({"limit": limit, "kind": kind_name}),
            json!({"tokens": total}),
        )
    }
}

/// Configures `tools-offered`.
pub(crate) fn configure_tools_offered(
    spec: &OracleSpec,
    _: &Fallbacks<'_>,
) -> Result<Oracle, ConfigError> {
    let tools = params::string_list(spec, "tools");
    if spec.get("tools").and_then(Value::as_array).is_none() {
        return Err(ConfigError::value("tools", "no `tools` list"));
    }
    let subset = match spec
        .get("mode")
        .and_then(Value::as_str)
        .map(|m| m.trim().to_ascii_lowercase())
    {
        None => false,
        Some(m) if m == "exact" => false,
        Some(m) if m == "subset" => true,
        Some(m) => {
            return Err(ConfigError::value(
                "mode",
                format!("`mode` `{m}` is not exact or subset"),
            ));
        }
    };
    Ok(Oracle::ToolsOffered { tools, subset })
}

/// `tools-offered`: every inference offered exactly (or, with `mode: subset`, only) these tools.
pub(crate) fn tools_offered(want: &[String], subset: bool, facts: &Facts<'_, '_>) -> OracleResult {
    let mut seen = Vec::new();
    let mut lacking = Vec::new();
    for e in &facts.trace.events {
        let EventBody::Inference(i) = &e.body else {
            continue;
        };
        seen.push(e.seq);
        let Some(offered) = &i.tools_offered else {
            lacking.push(e.seq);
            continue;
        };
        let all_allowed = offered
            .iter()
            .all(|o| want.iter().any(|w| tool_matches(w, o)));
        let all_offered = want
            .iter()
            .all(|w| offered.iter().any(|o| tool_matches(w, o)));
        if !all_allowed || (!subset && !all_offered) {
            return OracleResult::fail(
                format!(
                    "the inference at seq {} offered a different tool set",
                    e.seq
                ),
                vec![e.seq],
                json!({"tools": want, "mode": if subset { "subset" } else { "exact" }}),
                json!({"tools_offered": offered.iter().map(|o| o.as_str()).collect::<Vec<_>>()}),
            );
        }
    }
    if seen.is_empty() {
        return OracleResult::fail(
            "the trace has no inference",
            Vec::new(),
            json!({"tools": want}),
            Value::Null,
        );
    }
    if !lacking.is_empty() {
        return OracleResult::not_evaluable(
            format!("{} inference(s) lack `tools_offered`", lacking.len()),
            lacking,
        );
    }
    OracleResult::pass(
        format!(
            "every inference offered {} tool set",
            if subset {
                "a subset of the"
            } else {
                "exactly the"
            }
        ),
        seen,
    )
}
