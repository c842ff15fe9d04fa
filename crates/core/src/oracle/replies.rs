//! Oracles about what reached the user: `no-preview-left`, `final-after-tool`,
//! `final-answer-matches`.

use crate::oracle::ConfigError;
use serde_json::{Value, json};

use super::facts::Facts;
use super::params;
use super::result::{FOUND_CHARS, OracleResult, shorten};
use super::typed::{Fallbacks, Oracle, Pattern};
use crate::oracle::spec::OracleSpec;
use crate::trace::json::contains_ci;
use crate::trace::{EventBody, Phase};

/// Configures `no-preview-left`.
pub(crate) fn configure_no_preview_left(
    spec: &OracleSpec,
    _: &Fallbacks<'_>,
) -> Result<Oracle, ConfigError> {
    let require = match spec.get("require") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(ConfigError::value(
                "require",
                format!("`require` must be true or false, got `{other}`"),
            ));
        }
    };
    Ok(Oracle::NoPreviewLeft { require })
}

/// `no-preview-left`: every preview was deleted or promoted before the run ended; with
/// `require: true`, at least one preview existed.
pub(crate) fn no_preview_left(require: bool, facts: &Facts<'_, '_>) -> OracleResult {
    let end = facts.trace.run_end().map_or(u64::MAX, |(e, _)| e.seq);
    // Replay message events up to the end of the run.
    let mut previews: Vec<(String, u64, bool)> = Vec::new(); // id, first seq, resolved
    for e in facts.trace.events.iter().take_while(|e| e.seq <= end) {
        match &e.body {
            EventBody::Message { id, phase, .. } => {
                previews.retain(|(p, _, _)| p != id.as_str());
                if *phase == Phase::Preview {
                    previews.push((id.to_string(), e.seq, false));
                }
            }
            EventBody::MessageEdit {
                id,
                phase: Some(Phase::Final),
                ..
            }
            | EventBody::MessageDelete { id } => {
                if let Some(p) = previews.iter_mut().find(|(p, _, _)| p == id.as_str()) {
                    p.2 = true;
                }
            }
            _ => {}
        }
    }
    if require && previews.is_empty() {
        return OracleResult::fail(
            "no preview was sent, and `require` asks for one",
            Vec::new(),
            json!({"previews": "at least 1"}),
            json!({"previews": 0}),
        );
    }
    let left: Vec<u64> = previews
        .iter()
        .filter(|(_, _, done)| !done)
        .map(|(_, s, _)| *s)
        .collect();
    if left.is_empty() {
        OracleResult::pass(
            format!("{} preview(s), all deleted or promoted", previews.len()),
            previews.iter().map(|(_, s, _)| *s).collect(),
        )
    } else {
        OracleResult::fail(
            format!(
                "{} preview(s) left standing, the first sent at seq {}",
                left.len(),
                left[0]
            ),
            left.clone(),
            json!("every preview deleted or promoted before the run ended"),
            json!({"standing_previews": left}),
        )
    }
}

/// Configures `final-after-tool`.
pub(crate) fn configure_final_after_tool(
    spec: &OracleSpec,
    _: &Fallbacks<'_>,
) -> Result<Oracle, ConfigError> {
    let tool =
        params::string(spec, "tool").ok_or_else(|| ConfigError::value("tool", "no `tool`"))?;
    let phase = super::params::phase(spec)?;
    let value = params::text(spec);
    Ok(Oracle::FinalAfterTool { tool, phase, value })
}

/// `final-after-tool`: no `message`/`message_edit` (of `phase`, containing `value`, if given)
/// comes before the first successful result of `tool`; fails if `tool` never succeeded.
pub(crate) fn final_after_tool(
    tool: &str,
    phase: Option<Phase>,
    value: Option<&str>,
    facts: &Facts<'_, '_>,
) -> OracleResult {
    let tool_of = facts.tool_of_results();
    let success = facts.trace.events.iter().find(|e| match &e.body {
        EventBody::ToolResult { ok, error, .. } => {
            *ok && error.as_deref().is_none_or(str::is_empty)
                && tool_of
                    .get(&e.seq)
                    .is_some_and(|t| super::names::tool_matches(tool, t))
        }
        _ => false,
    });
    let Some(success) = success else {
        return OracleResult::fail(
            format!("`{tool}` never succeeded"),
            Vec::new(),
            json!({"tool": tool, "succeeded": true}),
            json!({"succeeded": false}),
        );
    };
    // Track each message's phase as edits change it, to judge edits by their effective phase.
    let mut phase_of: foldhash::HashMap<&str, Phase> = foldhash::HashMap::default();
    for e in facts
        .trace
        .events
        .iter()
        .take_while(|e| e.seq < success.seq)
    {
        let (id, text, effective) = match &e.body {
            EventBody::Message {
                id, phase, text, ..
            } => {
                phase_of.insert(id.as_str(), *phase);
                (id.as_str(), text.as_str(), *phase)
            }
            EventBody::MessageEdit {
                id,
                text,
                phase: edit_phase,
            } => {
                let p = edit_phase
                    .or_else(|| phase_of.get(id.as_str()).copied())
                    .unwrap_or(Phase::Final);
                phase_of.insert(id.as_str(), p);
                (id.as_str(), text.as_str(), p)
            }
            _ => continue,
        };
        if phase.is_none_or(|p| p == effective) && value.is_none_or(|v| contains_ci(text, v)) {
            return OracleResult::fail(
                format!(
                    "message `{id}` at seq {} came before `{tool}` first succeeded at seq {}",
                    e.seq, success.seq
                ),
                vec![e.seq, success.seq],
                json!({"after_seq": success.seq}),
                json!({"seq": e.seq, "phase": effective.as_str(), "text": shorten(text, 200)}),
            );
        }
    }
    OracleResult::pass(
        format!(
            "nothing matching was sent before `{tool}` succeeded at seq {}",
            success.seq
        ),
        vec![success.seq],
    )
}

/// Configures `final-answer-matches`: the pattern compiled once.
pub(crate) fn configure_final_answer_matches(
    spec: &OracleSpec,
    _: &Fallbacks<'_>,
) -> Result<Oracle, ConfigError> {
    Ok(Oracle::FinalAnswerMatches {
        pattern: Pattern(compile_pattern(spec)?),
    })
}

/// `final-answer-matches`: the final answer matches a Rust regular expression (unanchored).
pub(crate) fn final_answer_matches(re: &regex::Regex, facts: &Facts<'_, '_>) -> OracleResult {
    let answer = &facts.final_answer;
    let evidence = match answer.required(json!({"matches": re.as_str()})) {
        Ok(evidence) => evidence,
        Err(fail) => return fail,
    };
    if re.is_match(&answer.text) {
        OracleResult::pass(
            format!("the final answer matches `{}`", re.as_str()),
            evidence,
        )
    } else {
        OracleResult::fail(
            format!("the final answer does not match `{}`", re.as_str()),
            evidence,
            json!({"matches": re.as_str()}),
            json!(shorten(&answer.text, FOUND_CHARS)),
        )
    }
}

/// Compiles `pattern`; an invalid or missing pattern is a misconfiguration.
pub(crate) fn compile_pattern(spec: &OracleSpec) -> Result<regex::Regex, ConfigError> {
    let Some(pattern) = spec
        .get("pattern")
        .and_then(Value::as_str)
        .filter(|p| !p.trim().is_empty())
    else {
        return Err(ConfigError::value("pattern", "no `pattern`"));
    };
    regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| {
            // regex's message draws a caret under the pattern; its last line says what is wrong.
            let text = e.to_string();
            let what = text
                .lines()
                .last()
                .unwrap_or("")
                .trim()
                .trim_start_matches("error: ")
                .to_owned();
            ConfigError::value(
                "pattern",
                format!("`pattern` `{pattern}` is not a valid regular expression: {what}"),
            )
        })
}
