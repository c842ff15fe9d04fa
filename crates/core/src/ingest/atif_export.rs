//! A trace as an ATIF trajectory (`tracereplay export --to atif`): the inverse of the `atif`
//! importer where the trace holds what ATIF wants, and a count of what it leaves out.
//!
//! Prompts are hashes in a trace, so a `user` or `system` step's `message` is the prompt's hash
//! (`b3:…`), never its text. Inferences are `agent` steps (text, tool calls, metrics, model,
//! timestamp, `llm_call_count` from `llm_calls`), each with the results of its calls as its
//! `observation`; a note that says `reasoning: …` is the next agent step's `reasoning_content`,
//! any other note a `system` step's observation; a tool call no inference planned, a final
//! `message`, and a final answer that is not the last inference's text are `agent` steps with
//! `llm_call_count: 0`. `final_metrics` adds up the inferences' usage. The ids and notes an ATIF
//! import kept as labels come back as they were. Approvals, message edits, artifacts, state
//! changes, errors and the run's end have no place in ATIF: they are counted as dropped.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::trace::{Args, Event, EventBody, Header, Inference, Phase, Trace};

/// The schema version written when the trace does not name the one it was imported from.
const SCHEMA_VERSION: &str = "ATIF-v1.6";

/// The trajectory of `trace`, and what was dropped, by event kind or field, with counts.
pub fn export(trace: &Trace<'_>) -> (Value, BTreeMap<String, usize>) {
    let h = &trace.header;
    let mut w = Steps::default();
    // The system prompt comes first, as ATIF has it: the first inference's, before any step.
    let first_system = (trace.events.iter()).find_map(|e| match &e.body {
        EventBody::Inference(i) => Some(i.system_h.as_ref().map(|s| s.to_string())),
        _ => None,
    });
    if let Some(Some(sh)) = first_system {
        w.push(None, json!({"source": "system", "message": sh}));
        w.system_h = Some(sh);
    }
    for e in &trace.events {
        w.event(h, e);
    }
    if w.reasoning.is_some() {
        w.drop("reasoning note after the last inference");
    }
    let label = |k: &str| h.labels.get(k).cloned();
    let mut agent = json!({
        "name": label("atif.agent").or_else(|| h.runtime.as_ref().map(|r| r.name.to_string())).unwrap_or_else(|| "unknown".to_owned()),
        "version": label("atif.agent_version").or_else(|| h.runtime.as_ref().and_then(|r| r.version.as_ref()).map(|v| v.to_string())).unwrap_or_else(|| "unknown".to_owned()),
    });
    if let Some(m) = &h.model {
        agent["model_name"] = json!(m.to_string());
    }
    let offered = (trace.events.iter()).find_map(|e| match &e.body {
        EventBody::Inference(i) => i.tools_offered.as_ref(),
        _ => None,
    });
    if let Some(tools) = offered {
        let defs: Vec<Value> = (tools.iter())
            .map(|t| json!({"type": "function", "function": {"name": t.to_string()}}))
            .collect();
        agent["tool_definitions"] = json!(defs);
    }
    let mut doc = json!({
        "schema_version": label("atif.schema_version").unwrap_or_else(|| SCHEMA_VERSION.to_owned()),
    });
    // An ATIF run gives back the ids it had; any other is named by its scenario and case.
    let session = match h.source.as_deref() {
        Some("atif") => label("atif.session_id"),
        _ => Some(label("atif.session_id").unwrap_or_else(|| {
            let mut s = format!("{}/{}", h.scenario, h.case);
            if let Some(t) = &h.trial {
                s.push_str(&format!("/{t}"));
            }
            s
        })),
    };
    if let Some(s) = session {
        doc["session_id"] = json!(s);
    }
    if let Some(t) = label("atif.trajectory_id") {
        doc["trajectory_id"] = json!(t);
    }
    doc["agent"] = agent;
    let totals = final_metrics(trace, w.steps.len());
    doc["steps"] = Value::Array(w.steps);
    for key in ["notes", "continued_trajectory_ref"] {
        if let Some(v) = label(&format!("atif.{key}")) {
            doc[key] = json!(v);
        }
    }
    doc["final_metrics"] = totals;
    (doc, w.dropped)
}

/// The steps as they are written, and what the events before left open.
#[derive(Default)]
struct Steps {
    steps: Vec<Value>,
    dropped: BTreeMap<String, usize>,
    system_h: Option<String>,
    /// A reasoning note waiting for the next agent step.
    reasoning: Option<String>,
    /// The text of the last agent step (a final answer equal to it is that step).
    last_text: Option<String>,
    /// The step each call id is on, to put its result there.
    call_step: BTreeMap<String, usize>,
}

impl Steps {
    fn drop(&mut self, what: &str) {
        *self.dropped.entry(what.to_owned()).or_default() += 1;
    }

    /// Appends a step made from `e` (its time and copied mark), numbered; returns its index.
    fn push(&mut self, e: Option<&Event<'_>>, mut s: Value) -> usize {
        if let Some(e) = e {
            if let Some(ms) = e.ts_ms {
                let t = crate::common::stamp::rfc3339_sub_ms(ms, e.ts_sub_ns.unwrap_or(0));
                s["timestamp"] = json!(t);
            }
            if e.copied {
                s["is_copied_context"] = json!(true);
            }
        }
        s["step_id"] = json!(self.steps.len() + 1);
        self.steps.push(s);
        self.steps.len() - 1
    }

    /// Writes the step(s) one event makes, or joins it to the step it belongs to.
    fn event(&mut self, h: &Header<'_>, e: &Event<'_>) {
        match &e.body {
            EventBody::UserMessage { prompt, .. } => {
                self.push(
                    Some(e),
                    json!({"source": "user", "message": prompt.h.to_string()}),
                );
            }
            EventBody::Inference(i) => self.inference(h, e, i),
            EventBody::ToolCall {
                call_id,
                tool,
                args,
            } => {
                if self.call_step.contains_key(&call_id.to_string()) {
                    return;
                }
                let call = json!({"tool_call_id": call_id.to_string(), "function_name": tool.to_string(), "arguments": arguments(args)});
                // Calls no inference planned join the step before when it is such a dispatch
                // still waiting for its results (the calls of one ATIF step).
                let joins = self.steps.last().is_some_and(|s| {
                    s["llm_call_count"] == json!(0) && s.get("observation").is_none()
                });
                let at = match joins {
                    true => {
                        let at = self.steps.len() - 1;
                        let step = &mut self.steps[at];
                        match step.get_mut("tool_calls").and_then(Value::as_array_mut) {
                            Some(calls) => calls.push(call),
                            None => step["tool_calls"] = json!([call]),
                        }
                        at
                    }
                    false => self.push(
                        Some(e),
                        json!({"source": "agent", "message": "", "llm_call_count": 0, "tool_calls": [call]}),
                    ),
                };
                self.call_step.insert(call_id.to_string(), at);
                self.last_text = None;
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
                match self.call_step.get(&call_id.to_string()) {
                    Some(&at) => observe(&mut self.steps[at], result),
                    None => self.drop("tool_result of a call never made"),
                }
            }
            EventBody::Note { text } => match text.strip_prefix("reasoning: ") {
                Some(r) => self.reasoning = Some(r.to_owned()),
                None => {
                    self.push(
                        Some(e),
                        json!({"source": "system", "message": "", "observation": {"results": [{"content": text.to_string()}]}}),
                    );
                }
            },
            EventBody::Message {
                phase: Phase::Final,
                text,
                ..
            } => {
                self.push(
                    Some(e),
                    json!({"source": "agent", "message": text.to_string(), "llm_call_count": 0}),
                );
                self.last_text = Some(text.to_string());
            }
            EventBody::Message { .. } => self.drop("message (preview)"),
            EventBody::FinalAnswer { text } => {
                if self.last_text.as_deref() != Some(&text.to_string()) {
                    self.push(
                        Some(e),
                        json!({"source": "agent", "message": text.to_string(), "llm_call_count": 0}),
                    );
                }
            }
            other => self.drop(other.kind()),
        }
    }

    /// An inference: an agent step, after a system step when its system prompt changed.
    fn inference(&mut self, h: &Header<'_>, e: &Event<'_>, i: &Inference<'_>) {
        if let Some(sh) = i.system_h.as_ref().map(|s| s.to_string()) {
            if self.system_h.as_deref() != Some(sh.as_str()) {
                self.push(None, json!({"source": "system", "message": sh}));
                self.system_h = Some(sh);
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
        // A step's model is written where it is not the agent's (ATIF's fallback).
        if let Some(m) = i.model.as_ref().filter(|m| h.model.as_ref() != Some(m)) {
            s["model_name"] = json!(m.to_string());
        }
        if let Some(r) = self.reasoning.take() {
            s["reasoning_content"] = json!(r);
        }
        if !calls.is_empty() {
            s["tool_calls"] = json!(calls);
        }
        if let Some(u) = i.usage {
            let mut m =
                json!({"prompt_tokens": u.input_tokens, "completion_tokens": u.output_tokens});
            if let Some(c) = u.cache_read_tokens {
                m["cached_tokens"] = json!(c);
            }
            if let Some(c) = u.cost_usd.filter(|_| !u.priced) {
                m["cost_usd"] = json!(c);
            }
            s["metrics"] = m;
        }
        if let Some(n) = i.llm_calls {
            s["llm_call_count"] = json!(n);
        }
        let at = self.push(Some(e), s);
        for c in &calls {
            let id = c["tool_call_id"].as_str().unwrap_or("").to_owned();
            self.call_step.insert(id, at);
        }
        self.last_text = (calls.is_empty() && !text.is_empty()).then_some(text);
    }
}

/// Adds a result to a step's observation.
fn observe(step: &mut Value, result: Value) {
    let results = (step.get_mut("observation"))
        .and_then(|o| o.get_mut("results"))
        .and_then(Value::as_array_mut);
    match results {
        Some(r) => r.push(result),
        None => step["observation"] = json!({"results": [result]}),
    }
}

/// `final_metrics`: the inferences' usage added up (token totals when any inference has usage,
/// the cost when every one with usage has a recorded cost) and the number of steps.
fn final_metrics(trace: &Trace<'_>, steps: usize) -> Value {
    let mut m = json!({});
    let usage: Vec<_> = (trace.events.iter())
        .filter_map(|e| match &e.body {
            EventBody::Inference(i) => i.usage,
            _ => None,
        })
        .collect();
    if !usage.is_empty() {
        m["total_prompt_tokens"] = json!(usage.iter().map(|u| u.input_tokens).sum::<u64>());
        m["total_completion_tokens"] = json!(usage.iter().map(|u| u.output_tokens).sum::<u64>());
        if usage.iter().any(|u| u.cache_read_tokens.is_some()) {
            let cached: u64 = usage.iter().filter_map(|u| u.cache_read_tokens).sum();
            m["total_cached_tokens"] = json!(cached);
        }
        let costs: Option<Vec<f64>> = (usage.iter())
            .map(|u| u.cost_usd.filter(|_| !u.priced))
            .collect();
        if let Some(costs) = costs {
            m["total_cost_usd"] = json!(costs.iter().sum::<f64>());
        }
    }
    m["total_steps"] = json!(steps);
    m
}

/// Tool-call arguments as ATIF wants them: an object (a string that is not one, as `{"value"}`).
fn arguments(args: &Args<'_>) -> Value {
    match args {
        Args::Object(j) => j.value(),
        Args::Text(t) => json!({"value": t.to_string()}),
    }
}
