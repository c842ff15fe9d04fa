//! Oracles of how an agent behaves, which no scenario author has to foresee: `no-repeated-call`,
//! `no-retry-spiral`, `tool-errors-handled` and `step-status`.
//!
//! They read the run as a list of steps: each executed call with its canonical arguments, its
//! result (the first `tool_result` after it with its call id), and what the agent did next.

use crate::oracle::ConfigError;
use serde_json::{Value, json};

use super::facts::Facts;
use super::names::ToolSet;
use super::params;
use super::result::OracleResult;
use super::typed::{Fallbacks, Oracle};
use crate::oracle::spec::OracleSpec;
use crate::trace::json::contains_normalised;
use crate::trace::{EventBody, Phase};

/// One executed call.
struct Step<'t> {
    seq: u64,
    tool: &'t str,
    /// The tool (lowercased) and the hash of the arguments' canonical JSON: equal for the
    /// same call.
    key: String,
    /// The `seq` of its result and whether that result failed (`ok: false` or an error).
    result: Option<(u64, bool)>,
}

impl Step<'_> {
    fn failed(&self) -> bool {
        self.result.is_some_and(|(_, failed)| failed)
    }
}

fn steps<'t>(facts: &'t Facts<'t, '_>) -> Vec<Step<'t>> {
    let mut steps: Vec<Step<'t>> = (facts.calls.iter())
        .map(|c| {
            // The arguments' canonical JSON, hashed as baselines hash tool results.
            let key = format!(
                "{}\u{0}{}",
                c.tool.to_lowercase(),
                crate::trace::values::result_hash(&c.args.value())
            );
            Step {
                seq: c.event.seq,
                tool: c.tool.as_str(),
                key,
                result: None,
            }
        })
        .collect();
    let outcome = |e: &crate::trace::Event<'_>| match &e.body {
        EventBody::ToolResult { ok, error, .. } => Some((
            e.seq,
            !*ok || error.as_deref().is_some_and(|e| !e.is_empty()),
        )),
        _ => None,
    };
    let paired = facts.call_results();
    for (step, r) in steps.iter_mut().zip(paired) {
        step.result = r.and_then(|j| outcome(&facts.trace.events[j]));
    }
    // A result written before its call (out of order) still tells how the call went: paired
    // with the first call of its id left without one, so a failure cannot hide by coming first.
    let taken: std::collections::HashSet<usize> = paired.iter().flatten().copied().collect();
    for (j, e) in facts.trace.events.iter().enumerate() {
        let EventBody::ToolResult { call_id, .. } = &e.body else {
            continue;
        };
        if taken.contains(&j) {
            continue;
        }
        let orphan = (facts.calls.iter().zip(steps.iter_mut()))
            .find(|(c, s)| s.result.is_none() && c.call_id.as_str() == &**call_id);
        if let Some((_, s)) = orphan {
            s.result = outcome(e);
        }
    }
    steps
}

/// Configures `no-repeated-call`.
pub fn configure_no_repeated_call(
    spec: &OracleSpec,
    _: &Fallbacks<'_>,
) -> Result<Oracle, ConfigError> {
    let max = params::count(spec, "max")?.unwrap_or(2);
    if max == 0 {
        return Err(ConfigError::value(
            "max",
            "`max` is 0, which no call can meet; give at least 1",
        ));
    }
    Ok(Oracle::NoRepeatedCall {
        max,
        consecutive: params::flag(spec, "consecutive"),
        tools: tools_of(spec),
    })
}

fn tools_of(spec: &OracleSpec) -> Vec<String> {
    let mut tools = params::string_list(spec, "tools");
    tools.extend(params::tool(spec));
    tools
}

fn in_scope(tools: &[String]) -> impl Fn(&str) -> bool + '_ {
    let set = ToolSet::new(tools.iter().map(String::as_str));
    move |tool| tools.is_empty() || set.matches(tool)
}

/// `no-repeated-call`: no call (the same tool with the same canonical arguments) is made more
/// than `max` times in the run (with `consecutive`, in a row). Scores the share of calls that
/// are not over the limit.
pub fn no_repeated_call(
    max: u64,
    consecutive: bool,
    tools: &[String],
    facts: &Facts<'_, '_>,
) -> OracleResult {
    let scope = in_scope(tools);
    let all = steps(facts);
    let steps: Vec<&Step> = all.iter().filter(|s| scope(s.tool)).collect();
    // Groups of the same call: all of them, or each run of them in a row.
    let mut groups: Vec<Vec<&Step>> = Vec::new();
    if consecutive {
        for s in &steps {
            match groups.last_mut() {
                Some(g) if g[0].key == s.key => g.push(s),
                _ => groups.push(vec![s]),
            }
        }
    } else {
        let mut index: foldhash::HashMap<&str, usize> = Default::default();
        for s in &steps {
            let at = *index.entry(s.key.as_str()).or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            });
            groups[at].push(s);
        }
    }
    let over: Vec<&Vec<&Step>> = groups.iter().filter(|g| g.len() as u64 > max).collect();
    let how = if consecutive { " in a row" } else { "" };
    let Some(worst) = over.iter().max_by_key(|g| g.len()) else {
        return OracleResult::pass(
            format!(
                "no call was made more than {max} time(s){how} ({} call(s))",
                steps.len()
            ),
            Vec::new(),
        );
    };
    let excess: u64 = over.iter().map(|g| g.len() as u64 - max).sum();
    let score = 1.0 - excess as f64 / steps.len() as f64;
    OracleResult::fail(
        format!(
            "`{}` was called with the same arguments {} times{how} (at most {max} allowed), at seq {}",
            worst[0].tool,
            worst.len(),
            seqs(worst.iter().map(|s| s.seq))
        ),
        worst.iter().map(|s| s.seq).collect(),
        json!({"max": max, "consecutive": consecutive}),
        json!({"tool": worst[0].tool, "times": worst.len(), "repeated_calls": over.len()}),
    )
    .with_score(score)
}

/// The `seq`s of a message: at most ten, then how many more.
fn seqs(seqs: impl ExactSizeIterator<Item = u64>) -> String {
    let n = seqs.len();
    let shown: Vec<String> = seqs.take(10).map(|s| s.to_string()).collect();
    match n.saturating_sub(10) {
        0 => shown.join(", "),
        more => format!("{}, and {more} more", shown.join(", ")),
    }
}

/// Configures `no-retry-spiral`.
pub fn configure_no_retry_spiral(
    spec: &OracleSpec,
    _: &Fallbacks<'_>,
) -> Result<Oracle, ConfigError> {
    Ok(Oracle::NoRetrySpiral {
        max: params::count(spec, "max")?.unwrap_or(2),
        tools: tools_of(spec),
    })
}

/// `no-retry-spiral`: after a call failed, the agent does not make the same call again (same
/// tool, same canonical arguments) more than `max` times in a row while it keeps failing. A
/// call with other arguments, another tool, or a user turn in between ends the streak.
pub fn no_retry_spiral(max: u64, tools: &[String], facts: &Facts<'_, '_>) -> OracleResult {
    let scope = in_scope(tools);
    let all = steps(facts);
    let user_turns: Vec<u64> = (facts.trace.events.iter())
        .filter(|e| matches!(e.body, EventBody::UserMessage { .. }))
        .map(|e| e.seq)
        .collect();
    // Turns are in `seq` order: the first after `a` tells.
    let turn_between = |a: u64, b: u64| {
        let k = user_turns.partition_point(|&u| u <= a);
        user_turns.get(k).is_some_and(|&u| u < b)
    };
    // The longest streak: a failed call and the identical calls after it, each after a
    // failure, with nothing else in between.
    // Streaks are runs of the calls in scope: kept as (start, length) in that list.
    let in_scope: Vec<&Step> = all.iter().filter(|s| scope(s.tool)).collect();
    let (mut worst, mut start) = ((0, 0), 0);
    for (k, s) in in_scope.iter().enumerate() {
        let continues = k > 0 && {
            let last = in_scope[k - 1];
            last.failed() && last.key == s.key && !turn_between(last.seq, s.seq)
        };
        if !continues {
            start = k;
        }
        if k + 1 - start > worst.1 {
            worst = (start, k + 1 - start);
        }
    }
    let worst = &in_scope[worst.0..worst.0 + worst.1];
    let retries = worst.len().saturating_sub(1) as u64;
    if retries <= max {
        return OracleResult::pass(
            format!("no failed call was retried unchanged more than {max} time(s)"),
            Vec::new(),
        );
    }
    OracleResult::fail(
        format!(
            "`{}` failed and was retried with the same arguments {retries} times (at most {max} allowed), at seq {}",
            worst[0].tool,
            seqs(worst.iter().map(|s| s.seq))
        ),
        worst.iter().map(|s| s.seq).collect(),
        json!({"max_retries": max}),
        json!({"tool": worst[0].tool, "retries": retries}),
    )
}

/// Configures `tool-errors-handled`.
pub fn configure_tool_errors_handled(
    spec: &OracleSpec,
    _: &Fallbacks<'_>,
) -> Result<Oracle, ConfigError> {
    let written = spec.get("success").and_then(Value::as_array);
    if written.is_some_and(|w| {
        w.iter()
            .any(|p| p.as_str().is_some_and(|p| p.trim().is_empty()))
    }) {
        return Err(ConfigError::value(
            "success",
            "an empty `success` phrase would be found in every answer",
        ));
    }
    let success = params::string_list(spec, "success");
    Ok(Oracle::ToolErrorsHandled {
        success,
        tools: tools_of(spec),
    })
}

/// What the agent did after a failed call.
enum After {
    /// Called a tool: the index of the step.
    Call(usize),
    /// Answered or sent a final message: its `seq` and text.
    Answer(u64, String),
    /// Nothing: the run ended.
    Nothing,
}

/// What came first after step `i`'s result (calls of the same batch made before it do not
/// count): the next call, or an answer before it. `answers[k]` is the index of the first answer
/// event at or after event `k` (see [`answers_from`]); both lookups are binary searches, so a
/// hostile trace of many failed calls stays linear.
fn after(steps: &[Step<'_>], i: usize, facts: &Facts<'_, '_>, answers: &[usize]) -> After {
    let events = &facts.trace.events;
    let from = steps[i].result.map_or(steps[i].seq, |(seq, _)| seq);
    let next = i + 1 + steps[i + 1..].partition_point(|s| s.seq <= from);
    let next = (next < steps.len()).then_some(next);
    let until = next.map_or(u64::MAX, |j| steps[j].seq);
    let start = events.partition_point(|e| e.seq <= from);
    let answer = (answers.get(start).copied())
        .filter(|&k| k < events.len() && events[k].seq < until)
        .and_then(|k| answer_text(&events[k].body).map(|t| (events[k].seq, t)));
    match (answer, next) {
        (Some((seq, text)), _) => After::Answer(seq, text),
        (None, Some(j)) => After::Call(j),
        (None, None) => After::Nothing,
    }
}

/// An answer's text: a final answer's, or a final message's.
fn answer_text(body: &EventBody<'_>) -> Option<String> {
    match body {
        EventBody::FinalAnswer { text } => Some(text.to_string()),
        EventBody::Message {
            phase: Phase::Final,
            text,
            ..
        } => Some(text.to_string()),
        _ => None,
    }
}

/// For each event index, the index of the first answer at or after it (`len` when none).
fn answers_from(facts: &Facts<'_, '_>) -> Vec<usize> {
    let events = &facts.trace.events;
    let mut out = vec![events.len(); events.len() + 1];
    for k in (0..events.len()).rev() {
        out[k] = if answer_text(&events[k].body).is_some() {
            k
        } else {
            out[k + 1]
        };
    }
    out
}

/// Whether a failed call was handled; when not, the evidence and why.
type Handled = Result<(), (Vec<u64>, String)>;

/// The first answer after event `seq` (a final answer or final message): its `seq` and text.
fn answer_after(seq: u64, facts: &Facts<'_, '_>, answers: &[usize]) -> Option<(u64, String)> {
    let events = &facts.trace.events;
    let start = events.partition_point(|e| e.seq <= seq);
    let k = answers.get(start).copied().filter(|&k| k < events.len())?;
    answer_text(&events[k].body).map(|t| (events[k].seq, t))
}

/// The `seq`s of the results of each tool's (lowercased) successful calls, sorted.
fn successes_by_tool(all: &[Step<'_>]) -> foldhash::HashMap<String, Vec<u64>> {
    let mut out: foldhash::HashMap<String, Vec<u64>> = Default::default();
    for s in all {
        if let Some((seq, false)) = s.result {
            out.entry(s.tool.to_lowercase()).or_default().push(seq);
        }
    }
    out.values_mut().for_each(|v| v.sort_unstable());
    out
}

/// `tool-errors-handled`: every failed call is followed by a retry with other arguments, a call
/// of another tool, or an answer (a final answer or final message) — and, with `success`
/// phrases, no answer after it claims success with one until a call of the same tool succeeds
/// (calls of other tools in between do not make a claim of success true). An unchanged retry
/// hands the question on to the retry: handled when it succeeds, else as its own failure is.
/// Phrases are matched on normalised text ([`crate::trace::json::normalise_text`]). Scores the
/// share of failed calls handled.
pub fn tool_errors_handled(
    success: &[String],
    tools: &[String],
    facts: &Facts<'_, '_>,
) -> OracleResult {
    let scope = in_scope(tools);
    let all = steps(facts);
    let failed: Vec<usize> = (0..all.len())
        .filter(|&i| all[i].failed() && scope(all[i].tool))
        .collect();
    if failed.is_empty() {
        return OracleResult::pass("no tool call failed", Vec::new());
    }
    // Whether the failure of each failed call was handled, and the evidence when it was not:
    // worked out from the last one back, so an unchanged retry's verdict is there when its
    // predecessor hands the question on to it.
    let answers = answers_from(facts);
    let succeeded = successes_by_tool(&all);
    // A claim of success in the first answer after the failure, made before any call of the
    // failed tool succeeded: the failure was covered up, whatever was called in between.
    let claimed = |i: usize, error_seq: u64| -> Option<(u64, String)> {
        let (seq, text) = answer_after(error_seq, facts, &answers)?;
        let phrase = success.iter().find(|p| contains_normalised(&text, p))?;
        let retried = (succeeded.get(&all[i].tool.to_lowercase()))
            .is_some_and(|s| s.iter().any(|&r| r > error_seq && r < seq));
        (!retried).then(|| (seq, phrase.clone()))
    };
    let mut memo: foldhash::HashMap<usize, Handled> = Default::default();
    for &i in failed.iter().rev() {
        let s = &all[i];
        let error_seq = s.result.map_or(s.seq, |(seq, _)| seq);
        let verdict = match after(&all, i, facts, &answers) {
            After::Call(j) if all[j].key == s.key && all[j].failed() => {
                memo.get(&j).cloned().unwrap_or(Ok(()))
            }
            After::Call(_) => match claimed(i, error_seq) {
                Some((seq, p)) => Err((
                    vec![error_seq, seq],
                    format!(
                        "the answer at seq {seq} claims success (`{p}`), though no call of `{}` succeeded after it failed",
                        s.tool
                    ),
                )),
                None => Ok(()),
            },
            After::Answer(seq, text) => {
                match success.iter().find(|p| contains_normalised(&text, p)) {
                    Some(p) => Err((
                        vec![error_seq, seq],
                        format!("the answer at seq {seq} claims success (`{p}`)"),
                    )),
                    None => Ok(()),
                }
            }
            After::Nothing => Err((vec![error_seq], "nothing followed it".to_owned())),
        };
        memo.insert(i, verdict);
    }
    let verdicts: Vec<(usize, Handled)> = (failed.iter())
        .map(|&i| (i, memo.remove(&i).unwrap_or(Ok(()))))
        .collect();
    let unhandled: Vec<&(usize, Handled)> = verdicts.iter().filter(|(_, v)| v.is_err()).collect();
    let score = 1.0 - unhandled.len() as f64 / failed.len() as f64;
    let Some((i, Err((evidence, why)))) = unhandled.first() else {
        return OracleResult::pass(
            format!("each of the {} failed call(s) was handled", failed.len()),
            failed
                .iter()
                .filter_map(|&i| all[i].result.map(|r| r.0))
                .collect(),
        );
    };
    OracleResult::fail(
        format!(
            "{} of {} failed call(s) went unhandled; the first, `{}` at seq {}: {why}",
            unhandled.len(),
            failed.len(),
            all[*i].tool,
            all[*i].seq
        ),
        evidence.clone(),
        json!(
            "a retry with other arguments, another tool, or an answer that does not claim success"
        ),
        json!({"tool": all[*i].tool, "unhandled": unhandled.len(), "failed": failed.len()}),
    )
    .with_score(score)
}

/// Configures `step-status`.
pub fn configure_step_status(spec: &OracleSpec, _: &Fallbacks<'_>) -> Result<Oracle, ConfigError> {
    let tools = tools_of(spec);
    if tools.is_empty() {
        return Err(ConfigError::value(
            "tool",
            "no `tool` or `tools` whose calls to check",
        ));
    }
    Ok(Oracle::StepStatus {
        tools,
        max_errors: params::count(spec, "max_errors")?.unwrap_or(0),
    })
}

/// `step-status`: every call of `tools` (globs) ended with a result that is ok — or at most
/// `max_errors` did not. A call without a result did not end ok. Scores the share that did.
pub fn step_status(tools: &[String], max_errors: u64, facts: &Facts<'_, '_>) -> OracleResult {
    let scope = in_scope(tools);
    let all = steps(facts);
    let calls: Vec<&Step> = all.iter().filter(|s| scope(s.tool)).collect();
    let names = tools.join("`, `");
    if calls.is_empty() {
        return OracleResult::pass(format!("no call of `{names}` was made"), Vec::new());
    }
    let bad: Vec<&&Step> = calls
        .iter()
        .filter(|s| s.result.is_none_or(|(_, failed)| failed))
        .collect();
    let score = 1.0 - bad.len() as f64 / calls.len() as f64;
    let evidence: Vec<u64> = bad
        .iter()
        .map(|s| s.result.map_or(s.seq, |(seq, _)| seq))
        .collect();
    if bad.len() as u64 <= max_errors {
        return OracleResult::pass(
            format!(
                "{} of {} call(s) of `{names}` ended ok ({} error(s), at most {max_errors} allowed)",
                calls.len() - bad.len(),
                calls.len(),
                bad.len()
            ),
            evidence,
        );
    }
    let first = bad[0];
    let how = if first.result.is_some() {
        "failed"
    } else {
        "has no result"
    };
    OracleResult::fail(
        format!(
            "{} of {} call(s) of `{names}` did not end ok (at most {max_errors} allowed); the first, `{}` at seq {}, {how}",
            bad.len(),
            calls.len(),
            first.tool,
            first.seq
        ),
        evidence,
        json!({"max_errors": max_errors}),
        json!({"errors": bad.len(), "calls": calls.len()}),
    )
    .with_score(score)
}

/// Every behaviour oracle.
pub const ORACLES: [&str; 4] = [
    "no-repeated-call",
    "no-retry-spiral",
    "tool-errors-handled",
    "step-status",
];

/// The behaviour oracles `lint --behaviour` runs over a suite, with their defaults.
pub const LINTED: [&str; 3] = ["no-repeated-call", "no-retry-spiral", "tool-errors-handled"];

/// What the oracles of [`LINTED`], with their defaults, find wrong in a trace: each failing one
/// with its result.
pub fn lint(trace: &crate::trace::Trace<'_>) -> Vec<(&'static str, OracleResult)> {
    let trace = trace.judged(false);
    let facts = Facts::new(&trace);
    let oracles = [
        Oracle::NoRepeatedCall {
            max: 2,
            consecutive: false,
            tools: Vec::new(),
        },
        Oracle::NoRetrySpiral {
            max: 2,
            tools: Vec::new(),
        },
        Oracle::ToolErrorsHandled {
            success: Vec::new(),
            tools: Vec::new(),
        },
    ];
    (LINTED.into_iter().zip(oracles))
        .map(|(name, o)| (name, o.judge(&facts)))
        .filter(|(_, r)| r.verdict == super::Verdict::Fail)
        .collect()
}
