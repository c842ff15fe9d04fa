//! `otlp-json`: OpenTelemetry trace exports (`TracesData` / `ExportTraceServiceRequest` as JSON,
//! one document or JSON Lines) using the GenAI semantic conventions. One trace per trace id.
//!
//! | span (`gen_ai.operation.name`) | trace |
//! |---|---|
//! | `invoke_agent` (root) | the run: `gen_ai.agent.name` names the scenario unless `--scenario`; status error → `run_end: failed` |
//! | `chat`, `text_completion`, `generate_content` | `inference`: model, usage (also legacy `prompt_tokens`/`completion_tokens`), finish reasons normalised, `gen_ai.input.messages` → `input_h`, `gen_ai.system_instructions` → `system_h`, `gen_ai.output.messages` → `output` (text, tool calls as a batch), `consumes` from the tool responses in its input |
//! | `execute_tool` | `tool_call` + `tool_result` (`gen_ai.tool.name`, `gen_ai.tool.call.id`, `.arguments` — taken from the inference output when missing — and `.result`; status error → `ok: false` with the message) |
//! | the first user message of the first inference | `user_message` (hashed) |
//!
//! Spans are ordered by start time, then span id; ids may be hex or base64; times string or
//! number nanoseconds.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value};

use super::{Format, IngestOptions, IngestOutcome, IngestedRun, RunBuilder, args_from, case_name};
use crate::trace::{
    EventBody, Finish, Inference, InferenceOutput, Json, PlannedCall, RunStatus, Str, Usage,
};

/// A span, attributes flattened to plain JSON.
struct Span {
    trace_id: String,
    span_id: String,
    name: String,
    start_ns: u128,
    end_ns: u128,
    attrs: Map<String, Value>,
    error: Option<String>,
}

fn any_value(v: &Value) -> Value {
    let Some(o) = v.as_object() else {
        return v.clone();
    };
    if let Some(s) = o.get("stringValue") {
        return s.clone();
    }
    if let Some(i) = o.get("intValue") {
        return match i {
            Value::String(s) => s
                .parse::<i64>()
                .map(Value::from)
                .unwrap_or_else(|_| i.clone()),
            other => other.clone(),
        };
    }
    if let Some(d) = o.get("doubleValue").or_else(|| o.get("boolValue")) {
        return d.clone();
    }
    if let Some(a) = o.get("arrayValue") {
        return Value::Array(
            a.get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(any_value)
                .collect(),
        );
    }
    if let Some(kv) = o.get("kvlistValue") {
        return Value::Object(attributes(kv.get("values")));
    }
    Value::Null
}

fn attributes(list: Option<&Value>) -> Map<String, Value> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|kv| {
            Some((
                kv.get("key")?.as_str()?.to_owned(),
                any_value(kv.get("value").unwrap_or(&Value::Null)),
            ))
        })
        .collect()
}

fn nanos(v: Option<&Value>) -> u128 {
    match v {
        Some(Value::String(s)) => s.parse().unwrap_or(0),
        Some(Value::Number(n)) => n.as_u64().map(u128::from).unwrap_or(0),
        _ => 0,
    }
}

fn collect(doc: &Value, at: &str, spans: &mut Vec<Span>, outcome: &mut IngestOutcome) {
    let resource_spans = doc.get("resourceSpans").and_then(Value::as_array);
    let Some(resource_spans) = resource_spans else {
        outcome.reject(at, "not an OTLP trace export (no `resourceSpans`)");
        return;
    };
    let mut n = 0;
    for rs in resource_spans {
        let scopes = rs
            .get("scopeSpans")
            .or_else(|| rs.get("instrumentationLibrarySpans"))
            .and_then(Value::as_array);
        for ss in scopes.into_iter().flatten() {
            for s in ss
                .get("spans")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                n += 1;
                let position = format!("{at}, span {n}");
                let trace_id = s
                    .get("traceId")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                if trace_id.is_empty() {
                    outcome.reject(position, "a span without a trace id");
                    continue;
                }
                let status = s.get("status");
                let code = status.and_then(|st| st.get("code"));
                let is_error = matches!(code, Some(Value::String(c)) if c == "STATUS_CODE_ERROR")
                    || matches!(code, Some(Value::Number(c)) if c.as_u64() == Some(2));
                spans.push(Span {
                    trace_id,
                    span_id: s
                        .get("spanId")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    name: s
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    start_ns: nanos(s.get("startTimeUnixNano")),
                    end_ns: nanos(s.get("endTimeUnixNano")),
                    attrs: attributes(s.get("attributes")),
                    error: is_error.then(|| {
                        status
                            .and_then(|st| st.get("message"))
                            .and_then(Value::as_str)
                            .unwrap_or("error")
                            .to_owned()
                    }),
                });
            }
        }
    }
}

/// Imports OTLP/JSON exports.
pub fn ingest(bytes: &[u8], opts: &IngestOptions) -> IngestOutcome {
    let mut outcome = IngestOutcome::default();
    let mut spans = Vec::new();
    match serde_json::from_slice::<Value>(bytes) {
        Ok(doc) => collect(&doc, "document", &mut spans, &mut outcome),
        Err(_) => {
            for (i, line) in String::from_utf8_lossy(bytes).lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                match serde_json::from_str::<Value>(line) {
                    Ok(doc) => collect(&doc, &format!("line {}", i + 1), &mut spans, &mut outcome),
                    Err(e) => outcome.reject(
                        format!("line {}, column {}", i + 1, e.column()),
                        format!(
                            "not JSON: {}",
                            crate::trace::json::message_without_position(&e)
                        ),
                    ),
                }
            }
        }
    }
    let mut by_trace: BTreeMap<String, Vec<Span>> = BTreeMap::new();
    for s in spans {
        by_trace.entry(s.trace_id.clone()).or_default().push(s);
    }
    // Runs are ordered by their first span's start, then trace id, so cases are stable.
    let mut traces: Vec<(String, Vec<Span>)> = by_trace.into_iter().collect();
    for (_, spans) in &mut traces {
        spans.sort_by(|a, b| (a.start_ns, &a.span_id).cmp(&(b.start_ns, &b.span_id)));
    }
    traces.sort_by(|a, b| (a.1[0].start_ns, &a.0).cmp(&(b.1[0].start_ns, &b.0)));
    let count = traces.len();
    for (i, (trace_id, spans)) in traces.iter().enumerate() {
        let case = case_name(opts, i, count);
        if let Some(run) = build_run(trace_id, spans, &case, opts, &mut outcome) {
            outcome.runs.push(run);
        }
    }
    outcome
}

fn operation(s: &Span) -> String {
    s.attrs
        .get("gen_ai.operation.name")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| s.name.split_whitespace().next().unwrap_or("").to_owned())
}

fn str_attr<'s>(s: &'s Span, names: &[&str]) -> Option<&'s str> {
    names
        .iter()
        .find_map(|n| s.attrs.get(*n).and_then(Value::as_str))
}

fn u64_attr(s: &Span, names: &[&str]) -> Option<u64> {
    names.iter().find_map(|n| {
        s.attrs.get(*n).and_then(|v| {
            v.as_u64()
                .or_else(|| v.as_str().and_then(|t| t.parse().ok()))
        })
    })
}

/// A JSON-valued attribute that may be recorded as a JSON string.
fn json_attr(s: &Span, name: &str) -> Option<Value> {
    match s.attrs.get(name)? {
        Value::String(t) => serde_json::from_str(t).ok(),
        other => Some(other.clone()),
    }
}

fn finish_of(reason: &str) -> Option<Finish> {
    Some(match reason.to_ascii_lowercase().as_str() {
        "stop" | "end_turn" | "completed" => Finish::Stop,
        "tool_calls" | "tool_call" | "function_call" | "tool_use" => Finish::ToolCall,
        "length" | "max_tokens" => Finish::Length,
        "content_filter" => Finish::ContentFilter,
        "error" => Finish::Error,
        _ => return None,
    })
}

fn build_run(
    trace_id: &str,
    spans: &[Span],
    case: &str,
    opts: &IngestOptions,
    outcome: &mut IngestOutcome,
) -> Option<IngestedRun> {
    let at = format!("trace {trace_id}");
    let root = spans.iter().find(|s| operation(s) == "invoke_agent");
    let scenario = opts.scenario.clone().or_else(|| {
        root.and_then(|r| str_attr(r, &["gen_ai.agent.name"]))
            .map(str::to_owned)
    });
    let Some(scenario) = scenario else {
        outcome.reject(
            at,
            "the trace names no agent (`gen_ai.agent.name`); pass `--scenario ID`",
        );
        return None;
    };
    let model = spans
        .iter()
        .find_map(|s| str_attr(s, &["gen_ai.response.model", "gen_ai.request.model"]));
    let mut b = RunBuilder::new(Format::OtlpJson, &scenario, case, model, opts);
    let mut planned: HashMap<String, (String, Value)> = HashMap::new();
    let mut unexecuted: Vec<String> = Vec::new();
    let mut results: Vec<String> = Vec::new();
    let mut final_answer = None;
    let mut first = true;
    for (n, s) in spans.iter().enumerate() {
        let ts = Some((s.start_ns / 1_000_000) as i64);
        match operation(s).as_str() {
            "chat" | "text_completion" | "generate_content" | "call_llm" => {
                let input = s
                    .attrs
                    .get("gen_ai.input.messages")
                    .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned));
                let input_msgs = json_attr(s, "gen_ai.input.messages");
                if first {
                    first = false;
                    let user = input_msgs
                        .as_ref()
                        .and_then(Value::as_array)
                        .and_then(|msgs| msgs.iter().find(|m| m["role"] == "user"))
                        .and_then(message_text);
                    if let Some(text) = user {
                        let prompt = b.prompt(&text);
                        b.push(ts, EventBody::UserMessage { prompt, id: None });
                    }
                }
                let consumes: Vec<Str<'static>> = input_msgs
                    .as_ref()
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
                    .filter(|p| p["type"] == "tool_call_response")
                    .filter_map(|p| p["id"].as_str().map(str::to_owned))
                    .filter(|id| results.contains(id))
                    .map(Str::from)
                    .collect();
                results.retain(|r| !consumes.iter().any(|c| c.as_str() == r));
                let system = s
                    .attrs
                    .get("gen_ai.system_instructions")
                    .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned));
                let mut texts = Vec::new();
                let mut calls = Vec::new();
                let mut finish = None;
                for m in json_attr(s, "gen_ai.output.messages")
                    .as_ref()
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    finish = finish.or_else(|| m["finish_reason"].as_str().and_then(finish_of));
                    for p in m["parts"].as_array().into_iter().flatten() {
                        match p["type"].as_str() {
                            Some("text") => texts.extend(
                                p["content"]
                                    .as_str()
                                    .or(p["text"].as_str())
                                    .map(str::to_owned),
                            ),
                            Some("tool_call") => {
                                let id = p["id"].as_str().unwrap_or_default().to_owned();
                                let tool = p["name"].as_str().unwrap_or_default().to_owned();
                                let (args, invalid) = args_from(p.get("arguments"));
                                if invalid {
                                    outcome.warn(format!("{at}, span {}", n + 1), format!("the arguments of call `{id}` are not valid JSON; kept as a string"));
                                }
                                planned.insert(
                                    id.clone(),
                                    (
                                        tool.clone(),
                                        p.get("arguments").cloned().unwrap_or(Value::Null),
                                    ),
                                );
                                unexecuted.push(id.clone());
                                calls.push(PlannedCall {
                                    call_id: Str::from(id),
                                    tool: Str::from(tool),
                                    args,
                                });
                            }
                            _ => {}
                        }
                    }
                }
                let reasons = s.attrs.get("gen_ai.response.finish_reasons");
                let finish = reasons
                    .and_then(|r| {
                        r.as_array()
                            .and_then(|a| a.first())
                            .and_then(Value::as_str)
                            .or(r.as_str())
                    })
                    .and_then(finish_of)
                    .or(finish);
                let usage = match (
                    u64_attr(
                        s,
                        &["gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"],
                    ),
                    u64_attr(
                        s,
                        &[
                            "gen_ai.usage.output_tokens",
                            "gen_ai.usage.completion_tokens",
                        ],
                    ),
                ) {
                    (Some(i), Some(o)) => Some(Usage {
                        input_tokens: i,
                        output_tokens: o,
                        cache_read_tokens: None,
                        reasoning_tokens: None,
                    }),
                    _ => None,
                };
                let text = Some(texts.join("\n")).filter(|t| !t.is_empty());
                let input_h = input.map(|i| b.prompt(&i).h);
                let system_h = system.map(|t| b.prompt(&t).h);
                b.push(
                    ts,
                    EventBody::Inference(Box::new(Inference {
                        request_id: str_attr(s, &["gen_ai.response.id"]).map(Str::from),
                        model: str_attr(s, &["gen_ai.response.model", "gen_ai.request.model"])
                            .map(Str::from),
                        input_h,
                        system_h,
                        consumes: (!consumes.is_empty()).then_some(consumes),
                        output: Some(InferenceOutput {
                            text: text.clone().map(Str::from),
                            tool_calls: (!calls.is_empty()).then_some(calls),
                        }),
                        usage,
                        finish,
                        ..Inference::default()
                    })),
                );
                if text.is_some() {
                    final_answer = text;
                }
            }
            "execute_tool" => {
                let tool = str_attr(s, &["gen_ai.tool.name"])
                    .map(str::to_owned)
                    .or_else(|| s.name.split_whitespace().nth(1).map(str::to_owned))
                    .unwrap_or_default();
                let id = str_attr(s, &["gen_ai.tool.call.id"])
                    .map(str::to_owned)
                    .or_else(|| {
                        // No id on the span: the first planned, unexecuted call of this tool.
                        let pos = unexecuted
                            .iter()
                            .position(|u| planned.get(u).is_some_and(|(t, _)| *t == tool))?;
                        Some(unexecuted.remove(pos))
                    });
                let id = id.unwrap_or_else(|| format!("span-{}", s.span_id));
                unexecuted.retain(|u| *u != id);
                let raw_args = s
                    .attrs
                    .get("gen_ai.tool.call.arguments")
                    .cloned()
                    .or_else(|| planned.get(&id).map(|(_, a)| a.clone()));
                let (args, _) = args_from(raw_args.as_ref());
                b.push(
                    ts,
                    EventBody::ToolCall {
                        call_id: Str::from(id.clone()),
                        tool: Str::from(tool),
                        args,
                    },
                );
                let output = s.attrs.get("gen_ai.tool.call.result").map(|v| match v {
                    Value::String(t) => {
                        serde_json::from_str::<Value>(t).unwrap_or_else(|_| v.clone())
                    }
                    other => other.clone(),
                });
                b.push(
                    Some((s.end_ns / 1_000_000) as i64),
                    EventBody::ToolResult {
                        call_id: Str::from(id.clone()),
                        ok: s.error.is_none(),
                        output: output.as_ref().map(Json::from_value),
                        output_h: None,
                        error: s.error.clone().map(Str::from),
                    },
                );
                results.push(id);
            }
            _ => {}
        }
    }
    let (status, error) = match root.and_then(|r| r.error.clone()) {
        Some(e) => (RunStatus::Failed, Some(e)),
        None => (RunStatus::Completed, None),
    };
    Some(IngestedRun {
        scenario,
        case: case.to_owned(),
        trace: b.finish(final_answer, status, error),
    })
}

fn message_text(m: &Value) -> Option<String> {
    let parts = m["parts"].as_array()?;
    let texts: Vec<&str> = parts
        .iter()
        .filter(|p| p["type"] == "text")
        .filter_map(|p| p["content"].as_str().or(p["text"].as_str()))
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}
