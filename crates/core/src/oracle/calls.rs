//! Oracles about individual calls and results: `tool-args`, `tool-succeeded`,
//! `tool-result-contains`, `call-result-linked`.

use crate::oracle::ConfigError;
use foldhash::{HashMap, HashMapExt};

use serde_json::{Value, json};

use super::facts::Facts;
use super::jsoneq::{ArgsMatch, args_match, describe_differences, differences, differing_keys};
use super::names::tool_matches;
use super::params;
use super::result::{OracleResult, shorten};
use super::sequence::{Of, args_mode};
use super::typed::{Fallbacks, Oracle};
use crate::oracle::spec::OracleSpec;
use crate::trace::json::contains_ci;
use crate::trace::{EventBody, Json};

/// Configures `tool-args`.
pub(crate) fn configure_tool_args(
    spec: &OracleSpec,
    _: &Fallbacks<'_>,
) -> Result<Oracle, ConfigError> {
    let tool = params::tool(spec).ok_or_else(|| ConfigError::value("tool", "no `tool`"))?;
    let args = match spec.get("args") {
        None | Some(Value::Null) => return Err(ConfigError::value("args", "no `args` to compare")),
        Some(v) => v.clone(),
    };
    super::argmatch::validate(&args, "args")?;
    let mode = args_mode(spec)?;
    let of = Of::read(spec)?;
    Ok(Oracle::ToolArgs {
        tool,
        args,
        mode,
        of,
    })
}

/// `tool-args`: some call of `tool` (executed, or planned with `of: planned`) matches `args`
/// under `argsMatch` (default `exact`).
pub(crate) fn tool_args(
    tool: &str,
    expected: &Value,
    mode: &ArgsMatch,
    of: Of,
    facts: &Facts<'_, '_>,
) -> OracleResult {
    let calls: Vec<(u64, Value)> = match of {
        Of::Executed => (facts.calls.iter())
            .filter(|c| tool_matches(tool, c.tool))
            .map(|c| (c.event.seq, c.args.value()))
            .collect(),
        Of::Planned => (facts.planned().iter())
            .filter(|c| tool_matches(tool, &c.tool))
            .map(|c| (c.seq, c.args.clone()))
            .collect(),
    };
    let verb = match of {
        Of::Executed => "called",
        Of::Planned => "planned",
    };
    if calls.is_empty() {
        return OracleResult::fail(
            format!("`{tool}` was never {verb}"),
            Vec::new(),
            json!({"tool": tool, "args": expected}),
            json!({"calls": 0}),
        );
    }
    let mut closest: Option<(Vec<String>, u64, Value)> = None;
    for (seq, actual) in calls {
        if args_match(mode, expected, &actual) {
            // Which matcher decided, where one did: "`sport`: "TENNIS" matched "tennis" after
            // normalisation".
            let decided = super::argmatch::decisions(expected, &actual);
            let how = match decided.is_empty() {
                true => String::new(),
                false => format!(" ({})", decided.join("; ")),
            };
            return OracleResult::pass(
                format!("`{tool}` at seq {seq} has the expected arguments{how}"),
                vec![seq],
            );
        }
        let diff = differing_keys(expected, &actual);
        // Fewest differing keys; among equals the later call (calls come in `seq` order).
        if closest
            .as_ref()
            .is_none_or(|(d, _, _)| diff.len() <= d.len())
        {
            closest = Some((diff, seq, actual));
        }
    }
    let (diff, seq, actual) = closest.expect("at least one call");
    let differences = differences(expected, &actual);
    OracleResult::fail(
        format!(
            "no call of `{tool}` has the expected arguments; the closest is seq {seq}, differing in {}",
            describe_differences(&differences)
        ),
        vec![seq],
        json!({"tool": tool, "args": expected}),
        json!({"seq": seq, "args": actual, "differs": diff, "differences": differences}),
    )
}

/// A `tool_result` with the tool of its call.
struct ResultView<'t, 'a> {
    seq: u64,
    tool: Option<&'t str>,
    ok: bool,
    output: Option<&'t Json<'a>>,
    error: Option<&'t str>,
}

fn results<'t, 'a>(facts: &'t Facts<'t, 'a>) -> Vec<ResultView<'t, 'a>> {
    let tool_of = facts.tool_of_results();
    facts
        .trace
        .events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ToolResult {
                ok, output, error, ..
            } => Some(ResultView {
                seq: e.seq,
                tool: tool_of.get(&e.seq).copied(),
                ok: *ok,
                output: output.as_ref(),
                error: error.as_deref(),
            }),
            _ => None,
        })
        .collect()
}

/// `tool-succeeded`: every result (of `tool`, if given) has `ok: true` and no non-empty `error`.
pub(crate) fn tool_succeeded(tool: Option<&str>, facts: &Facts<'_, '_>) -> OracleResult {
    let all = results(facts);
    let subject: Vec<&ResultView> = all
        .iter()
        .filter(|r| tool.is_none_or(|t| r.tool.is_some_and(|rt| tool_matches(t, rt))))
        .collect();
    let what = tool.map_or_else(|| "any tool".to_owned(), |t| format!("`{t}`"));
    if subject.is_empty() {
        return OracleResult::fail(
            format!("no result of {what}"),
            Vec::new(),
            json!("a successful result"),
            json!({"results": 0}),
        );
    }
    let failed: Vec<&&ResultView> = subject
        .iter()
        .filter(|r| !r.ok || r.error.is_some_and(|e| !e.is_empty()))
        .collect();
    if failed.is_empty() {
        return OracleResult::pass(
            format!("{} result(s) of {what} succeeded", subject.len()),
            subject.iter().map(|r| r.seq).collect(),
        );
    }
    let first = failed[0];
    OracleResult::fail(
        format!(
            "{} of {} result(s) of {what} failed; the first at seq {}",
            failed.len(),
            subject.len(),
            first.seq
        ),
        failed.iter().map(|r| r.seq).collect(),
        json!("every result ok with no error"),
        json!({"seq": first.seq, "ok": first.ok, "error": first.error}),
    )
}

/// Configures `tool-result-contains`.
pub(crate) fn configure_tool_result_contains(
    spec: &OracleSpec,
    _: &Fallbacks<'_>,
) -> Result<Oracle, ConfigError> {
    let tool =
        params::string(spec, "tool").ok_or_else(|| ConfigError::value("tool", "no `tool`"))?;
    let value =
        params::text(spec).ok_or_else(|| ConfigError::value("value", "no `value` to look for"))?;
    Ok(Oracle::ToolResultContains { tool, value })
}

/// `tool-result-contains`: some result of `tool` contains `value` (in a string output as is,
/// else in the output's compact JSON, or in `error`).
pub(crate) fn tool_result_contains(tool: &str, value: &str, facts: &Facts<'_, '_>) -> OracleResult {
    let all = results(facts);
    let subject: Vec<&ResultView> = all
        .iter()
        .filter(|r| r.tool.is_some_and(|t| tool_matches(tool, t)))
        .collect();
    if subject.is_empty() {
        return OracleResult::fail(
            format!("no result of `{tool}`"),
            Vec::new(),
            json!({"contains": value}),
            json!({"results": 0}),
        );
    }
    let mut texts = Vec::new();
    for r in &subject {
        let mut hay = Vec::new();
        if let Some(o) = r.output {
            let raw = o.raw();
            // A string output is searched as the text it holds, not its JSON escaping.
            hay.push(if raw.starts_with('"') {
                serde_json::from_str::<String>(raw).unwrap_or_else(|_| raw.to_owned())
            } else {
                raw.to_owned()
            });
        }
        if let Some(e) = r.error {
            hay.push(e.to_owned());
        }
        if hay.iter().any(|h| contains_ci(h, value)) {
            return OracleResult::pass(
                format!("the result at seq {} contains `{value}`", r.seq),
                vec![r.seq],
            );
        }
        texts.extend(hay);
    }
    if texts.is_empty() {
        return OracleResult::not_evaluable(
            format!("no result of `{tool}` has an `output` or `error`"),
            subject.iter().map(|r| r.seq).collect(),
        );
    }
    OracleResult::fail(
        format!("no result of `{tool}` contains `{value}`"),
        subject.iter().map(|r| r.seq).collect(),
        json!({"contains": value}),
        json!(texts.iter().map(|t| shorten(t, 200)).collect::<Vec<_>>()),
    )
}

/// `call-result-linked`: call ids are non-empty and distinct, every result follows its call,
/// every call has exactly one result, every planned call id is executed, and (when any inference
/// declares `consumes`) every result is consumed exactly once, later, and nothing unknown is.
pub(crate) fn call_result_linked(facts: &Facts<'_, '_>) -> OracleResult {
    let events = &facts.trace.events;
    let mut problems: Vec<(u64, String)> = Vec::new();
    let mut call_at: HashMap<&str, u64> = HashMap::new();
    for c in &facts.calls {
        if c.call_id.is_empty() {
            problems.push((
                c.event.seq,
                format!("the call at seq {} has an empty call id", c.event.seq),
            ));
        } else if call_at.contains_key(c.call_id.as_str()) {
            problems.push((
                c.event.seq,
                format!(
                    "call id `{}` is used by more than one call (again at seq {})",
                    c.call_id, c.event.seq
                ),
            ));
        } else {
            call_at.insert(c.call_id.as_str(), c.event.seq);
        }
    }
    if facts.calls.is_empty() {
        return OracleResult::fail(
            "the trace has no tool call to link",
            Vec::new(),
            json!("tool calls linked to their results"),
            json!({"tool_calls": 0}),
        );
    }
    let mut results_of: HashMap<&str, Vec<u64>> = HashMap::new();
    let mut result_at: HashMap<&str, u64> = HashMap::new();
    let mut planned: Vec<(u64, &str)> = Vec::new();
    let mut consumed: HashMap<&str, Vec<u64>> = HashMap::new();
    let mut any_consumes = false;
    for e in events {
        match &e.body {
            EventBody::ToolResult { call_id, .. } => {
                match call_at.get(call_id.as_str()) {
                    Some(&at) if at < e.seq => {}
                    Some(_) => problems.push((
                        e.seq,
                        format!(
                            "the result at seq {} comes before its call `{call_id}`",
                            e.seq
                        ),
                    )),
                    None => problems.push((
                        e.seq,
                        format!(
                            "the result at seq {} names call id `{call_id}`, which no call has",
                            e.seq
                        ),
                    )),
                }
                results_of.entry(call_id.as_str()).or_default().push(e.seq);
                result_at.entry(call_id.as_str()).or_insert(e.seq);
            }
            EventBody::Inference(i) => {
                for c in i.output.iter().flat_map(|o| o.tool_calls.iter().flatten()) {
                    planned.push((e.seq, c.call_id.as_str()));
                }
                if let Some(list) = &i.consumes {
                    any_consumes = true;
                    for id in list {
                        match result_at.get(id.as_str()) {
                            Some(_) => consumed.entry(id.as_str()).or_default().push(e.seq),
                            None => problems.push((e.seq, format!("the inference at seq {} consumes `{id}`, which has no earlier result", e.seq))),
                        }
                    }
                }
            }
            _ => {}
        }
    }
    for c in &facts.calls {
        match results_of.get(c.call_id.as_str()).map_or(0, Vec::len) {
            1 => {}
            0 => problems.push((
                c.event.seq,
                format!(
                    "the call `{}` at seq {} has no result",
                    c.call_id, c.event.seq
                ),
            )),
            n => problems.push((
                c.event.seq,
                format!(
                    "the call `{}` at seq {} has {n} results",
                    c.call_id, c.event.seq
                ),
            )),
        }
    }
    for (seq, id) in &planned {
        if !call_at.contains_key(id) {
            problems.push((*seq, format!("the inference at seq {seq} planned call `{id}`, which was never executed with that id")));
        }
    }
    if any_consumes {
        for (id, at) in &result_at {
            match consumed.get(id).map_or(0, Vec::len) {
                1 => {}
                0 => problems.push((
                    *at,
                    format!(
                        "the result at seq {at} (`{id}`) is never consumed by a later inference"
                    ),
                )),
                n => problems.push((
                    *at,
                    format!("the result at seq {at} (`{id}`) is consumed {n} times"),
                )),
            }
        }
    }
    if problems.is_empty() {
        let mut seqs: Vec<u64> = call_at
            .values()
            .chain(result_at.values())
            .copied()
            .collect();
        seqs.sort_unstable();
        return OracleResult::pass(
            format!(
                "{} call(s) each linked to exactly one result",
                facts.calls.len()
            ),
            seqs,
        );
    }
    problems.sort();
    problems.dedup();
    OracleResult::fail(
        format!(
            "{} link problem(s): {}",
            problems.len(),
            problems
                .iter()
                .take(3)
                .map(|(_, m)| m.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        ),
        problems.iter().map(|(s, _)| *s).collect(),
        json!("every call linked to exactly one later result"),
        json!(problems.iter().map(|(_, m)| m.as_str()).collect::<Vec<_>>()),
    )
}
