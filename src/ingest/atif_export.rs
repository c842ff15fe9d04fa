//! A trace as an ATIF trajectory (`tracereplay export --to atif`): the inverse of the `atif`
//! importer where the trace holds what ATIF wants, and a count of what it leaves out.
//!
//! Prompts are hashes in a trace, so a `user` or `system` step's `message` is the prompt's hash
//! (`b3:…`), never its text. Inferences are `agent` steps (text, tool calls, metrics, model,
//! timestamp), each with the results of its calls as its `observation`; a note that says
//! `reasoning: …` is the next agent step's `reasoning_content`, any other note a `system` step's
//! observation; a tool call no inference planned is an `agent` step with `llm_call_count: 0`, as
//! is a final answer that is not the last inference's text. Approvals, messages, artifacts,
//! state changes, errors and the run's end have no place in ATIF: they are counted as dropped.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::trace::{Args, EventBody, Trace};

/// The trajectory of `trace`, and what was dropped, by event kind or field, with counts.
pub fn export(trace: &Trace<'_>) -> (Value, BTreeMap<String, usize>) {
    let h = &trace.header;
    let label = |k: &str| h.labels.get(k).cloned();
    let mut agent = json!({
        "name": label("atif.agent").or_else(|| h.runtime.as_ref().map(|r| r.name.to_string())).unwrap_or_else(|| "unknown".to_owned()),
        "version": label("atif.agent_version").or_else(|| h.runtime.as_ref().and_then(|r| r.version.as_ref()).map(|v| v.to_string())).unwrap_or_else(|| "unknown".to_owned()),
    });
    if let Some(m) = &h.model {
        agent["model_name"] = json!(m.to_string());
    }
    let mut steps: Vec<Value> = Vec::new();
    let mut dropped: BTreeMap<String, usize> = BTreeMap::new();
    let mut drop = |what: &str| *dropped.entry(what.to_owned()).or_default() += 1;
    let mut system_h: Option<String> = None;
    // The system prompt comes first, as ATIF has it: the first inference's, before any step.
    let first_system = (trace.events.iter()).find_map(|e| match &e.body {
        EventBody::Inference(i) => Some(i.system_h.as_ref().map(|s| s.to_string())),
        _ => None,
    });
    if let Some(Some(sh)) = first_system {
        steps.push(json!({"step_id": 1, "source": "system", "message": sh}));
        system_h = Some(sh);
    }
    let mut reasoning: Option<String> = None;
    let mut last_text: Option<String> = None;
    // The step each call id is on, to put its result there.
    let mut call_step: BTreeMap<String, usize> = BTreeMap::new();
    for e in &trace.events {
        let ts = e.ts_ms.map(crate::common::stamp::rfc3339_ms);
        let step = |mut s: Value, steps: &mut Vec<Value>| {
            if let Some(t) = &ts {
                s["timestamp"] = json!(t);
            }
            s["step_id"] = json!(steps.len() + 1);
            steps.push(s);
            steps.len() - 1
        };
        match &e.body {
            EventBody::UserMessage { prompt, .. } => {
                step(
                    json!({"source": "user", "message": prompt.h.to_string()}),
                    &mut steps,
                );
            }
            EventBody::Inference(i) => {
                if let Some(sh) = i.system_h.as_ref().map(|s| s.to_string()) {
                    if system_h.as_deref() != Some(sh.as_str()) {
                        step(json!({"source": "system", "message": sh}), &mut steps);
                        system_h = Some(sh);
                    }
                }
                let output = i.output.as_ref();
                let text = output
                    .and_then(|o| o.text.as_ref())
                    .map(|t| t.to_string())
                    .unwrap_or_default();
                let calls: Vec<Value> = (output.and_then(|o| o.tool_calls.as_ref()).into_iter().flatten())
                    .map(|c| json!({"tool_call_id": c.call_id.to_string(), "function_name": c.tool.to_string(), "arguments": arguments(&c.args)}))
                    .collect();
                let mut s = json!({"source": "agent", "message": text});
                if let Some(m) = &i.model {
                    s["model_name"] = json!(m.to_string());
                }
                if let Some(r) = reasoning.take() {
                    s["reasoning_content"] = json!(r);
                }
                if !calls.is_empty() {
                    s["tool_calls"] = json!(calls);
                }
                if let Some(u) = i.usage {
                    let mut m = json!({"prompt_tokens": u.input_tokens, "completion_tokens": u.output_tokens});
                    if let Some(c) = u.cache_read_tokens {
                        m["cached_tokens"] = json!(c);
                    }
                    if let Some(c) = u.cost_usd.filter(|_| !u.priced) {
                        m["cost_usd"] = json!(c);
                    }
                    s["metrics"] = m;
                }
                let at = step(s, &mut steps);
                for c in &calls {
                    call_step.insert(c["tool_call_id"].as_str().unwrap_or("").to_owned(), at);
                }
                last_text = (calls.is_empty() && !text.is_empty()).then_some(text);
            }
            EventBody::ToolCall {
                call_id,
                tool,
                args,
            } => {
                if let std::collections::btree_map::Entry::Vacant(slot) =
                    call_step.entry(call_id.to_string())
                {
                    let call = json!({"tool_call_id": call_id.to_string(), "function_name": tool.to_string(), "arguments": arguments(args)});
                    let at = step(
                        json!({"source": "agent", "message": "", "llm_call_count": 0, "tool_calls": [call]}),
                        &mut steps,
                    );
                    slot.insert(at);
                }
            }
            EventBody::ToolResult {
                call_id,
                output,
                error,
                ..
            } => {
                let content = match (output, error) {
                    (Some(o), _) => match o.value() {
                        Value::String(s) => s,
                        other => other.to_string(),
                    },
                    (None, Some(err)) => format!("error: {err}"),
                    (None, None) => String::new(),
                };
                let result = json!({"source_call_id": call_id.to_string(), "content": content});
                match call_step.get(&call_id.to_string()) {
                    Some(&at) => {
                        let results = steps[at]
                            .get_mut("observation")
                            .and_then(|o| o.get_mut("results"))
                            .and_then(Value::as_array_mut);
                        match results {
                            Some(r) => r.push(result),
                            None => steps[at]["observation"] = json!({"results": [result]}),
                        }
                    }
                    None => drop("tool_result of a call never made"),
                }
            }
            EventBody::Note { text } => match text.strip_prefix("reasoning: ") {
                Some(r) => reasoning = Some(r.to_owned()),
                None => {
                    step(
                        json!({"source": "system", "message": "", "observation": {"results": [{"content": text.to_string()}]}}),
                        &mut steps,
                    );
                }
            },
            EventBody::FinalAnswer { text } => {
                if last_text.as_deref() != Some(&text.to_string()) {
                    step(
                        json!({"source": "agent", "message": text.to_string(), "llm_call_count": 0}),
                        &mut steps,
                    );
                }
            }
            other => drop(other.kind()),
        }
    }
    if reasoning.is_some() {
        drop("reasoning note after the last inference");
    }
    let mut session = format!("{}/{}", h.scenario, h.case);
    if let Some(t) = &h.trial {
        session.push_str(&format!("/{t}"));
    }
    let doc = json!({
        "schema_version": "ATIF-v1.6",
        "session_id": label("atif.session_id").unwrap_or(session),
        "agent": agent,
        "steps": steps,
    });
    (doc, dropped)
}

/// Tool-call arguments as ATIF wants them: an object (a string that is not one, as `{"value"}`).
fn arguments(args: &Args<'_>) -> Value {
    match args {
        Args::Object(j) => j.value(),
        Args::Text(t) => json!({"value": t.to_string()}),
    }
}
