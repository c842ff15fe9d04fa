//! The OpenAI API's response shapes, built from a recorded step. Every field is derived from
//! the recording and the session (ids from the scenario, case and request number; `created`
//! from the recorded time), so the same trace served twice gives byte-identical bodies.

use serde_json::{Value, json};

use super::script::{Script, Step};
use crate::trace::Finish;

/// The Chat Completions `finish_reason` of a recorded finish.
pub(crate) fn finish_reason(step: &Step) -> &'static str {
    match step.finish {
        Some(Finish::ToolCall) => "tool_calls",
        Some(Finish::Length) => "length",
        Some(Finish::ContentFilter) => "content_filter",
        Some(Finish::Stop) | Some(Finish::Error) => "stop",
        None if !step.tool_calls.is_empty() => "tool_calls",
        None => "stop",
    }
}

pub(super) fn id(prefix: &str, script: &Script, n: usize) -> String {
    // Stable and readable: the session and the request number, with characters an id should
    // not hold replaced.
    let clean: String = format!("{}-{}", script.scenario, script.case)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{prefix}-replay-{clean}-{n}")
}

pub(super) fn created(step: &Step) -> i64 {
    step.ts_ms.map_or(0, |t| t.div_euclid(1000))
}

pub(super) fn model(script: &Script, step: &Step) -> String {
    (step.model.clone())
        .or_else(|| script.model.clone())
        .unwrap_or_else(|| "tracereplay-replay".to_owned())
}

fn usage_chat(step: &Step) -> Value {
    match step.usage {
        Some(u) => json!({
            "prompt_tokens": u.input_tokens,
            "completion_tokens": u.output_tokens,
            "total_tokens": u.input_tokens.saturating_add(u.output_tokens),
        }),
        None => Value::Null,
    }
}

fn tool_calls(step: &Step) -> Vec<Value> {
    (step.tool_calls.iter())
        .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
        .collect()
}

/// `POST /v1/chat/completions`, not streamed: request `n` (1-based) answered with `step`.
pub(crate) fn chat_completion(script: &Script, step: &Step, n: usize) -> Value {
    let mut message = json!({"role": "assistant", "content": step.text, "refusal": null});
    if !step.tool_calls.is_empty() {
        message["tool_calls"] = json!(tool_calls(step));
    }
    let mut body = json!({
        "id": id("chatcmpl", script, n),
        "object": "chat.completion",
        "created": created(step),
        "model": model(script, step),
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason(step)}],
    });
    let usage = usage_chat(step);
    if !usage.is_null() {
        body["usage"] = usage;
    }
    body
}

/// The same response as server-sent events in the standard chunk format: the role, the text,
/// each tool call (id and name, then its arguments), the finish reason, the usage when
/// recorded, then `[DONE]`.
pub(crate) fn chat_completion_stream(script: &Script, step: &Step, n: usize) -> String {
    let base = |delta: Value, finish: Value| {
        json!({
            "id": id("chatcmpl", script, n),
            "object": "chat.completion.chunk",
            "created": created(step),
            "model": model(script, step),
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        })
    };
    let mut chunks = vec![base(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    if let Some(text) = step.text.as_deref().filter(|t| !t.is_empty()) {
        chunks.push(base(json!({"content": text}), Value::Null));
    }
    for (i, c) in step.tool_calls.iter().enumerate() {
        chunks.push(base(
            json!({"tool_calls": [{"index": i, "id": c.id, "type": "function", "function": {"name": c.name, "arguments": ""}}]}),
            Value::Null,
        ));
        chunks.push(base(
            json!({"tool_calls": [{"index": i, "function": {"arguments": c.arguments}}]}),
            Value::Null,
        ));
    }
    chunks.push(base(json!({}), json!(finish_reason(step))));
    let usage = usage_chat(step);
    if !usage.is_null() {
        let mut last = base(json!({}), Value::Null);
        last["choices"] = json!([]);
        last["usage"] = usage;
        chunks.push(last);
    }
    let mut out = String::new();
    for c in chunks {
        out.push_str("data: ");
        out.push_str(&c.to_string());
        out.push_str("\n\n");
    }
    out.push_str("data: [DONE]\n\n");
    out
}

/// `POST /v1/responses`, not streamed.
pub(crate) fn response(script: &Script, step: &Step, n: usize) -> Value {
    let mut output = Vec::new();
    if let Some(text) = &step.text {
        output.push(json!({
            "type": "message",
            "id": id("msg", script, n),
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }));
    }
    for (i, c) in step.tool_calls.iter().enumerate() {
        output.push(json!({
            "type": "function_call",
            "id": format!("{}-{i}", id("fc", script, n)),
            "call_id": c.id,
            "name": c.name,
            "arguments": c.arguments,
            "status": "completed",
        }));
    }
    let mut body = json!({
        "id": id("resp", script, n),
        "object": "response",
        "created_at": created(step),
        "status": "completed",
        "model": model(script, step),
        "output": output,
    });
    if let Some(u) = step.usage {
        body["usage"] = json!({
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "total_tokens": u.input_tokens.saturating_add(u.output_tokens),
        });
    }
    body
}

/// The error body every non-2xx answer carries, in the API's shape.
pub(crate) fn error(message: &str, kind: &str) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": kind}})
}

/// The same response as the Responses API streams it: typed events (`response.created`, an
/// `output_item.added`/`done` pair per item with the text's and each call's argument deltas
/// between), ending with `response.completed`, which carries the whole response.
pub(crate) fn response_stream(script: &Script, step: &Step, n: usize) -> String {
    let whole = response(script, step, n);
    let mut events: Vec<Value> = Vec::new();
    let mut started = whole.clone();
    started["status"] = json!("in_progress");
    started["output"] = json!([]);
    started.as_object_mut().expect("an object").remove("usage");
    events.push(json!({"type": "response.created", "response": started}));
    for (i, item) in whole["output"].as_array().into_iter().flatten().enumerate() {
        let item_id = item["id"].clone();
        let mut opened = item.clone();
        opened["status"] = json!("in_progress");
        if item["type"] == "message" {
            opened["content"] = json!([]);
            events.push(
                json!({"type": "response.output_item.added", "output_index": i, "item": opened}),
            );
            let text = item["content"][0]["text"].clone();
            let part = json!({"type": "output_text", "text": "", "annotations": []});
            events.push(json!({"type": "response.content_part.added", "item_id": item_id, "output_index": i, "content_index": 0, "part": part}));
            events.push(json!({"type": "response.output_text.delta", "item_id": item_id, "output_index": i, "content_index": 0, "delta": text}));
            events.push(json!({"type": "response.output_text.done", "item_id": item_id, "output_index": i, "content_index": 0, "text": text}));
            events.push(json!({"type": "response.content_part.done", "item_id": item_id, "output_index": i, "content_index": 0, "part": item["content"][0]}));
        } else {
            opened["arguments"] = json!("");
            events.push(
                json!({"type": "response.output_item.added", "output_index": i, "item": opened}),
            );
            events.push(json!({"type": "response.function_call_arguments.delta", "item_id": item_id, "output_index": i, "delta": item["arguments"]}));
            events.push(json!({"type": "response.function_call_arguments.done", "item_id": item_id, "output_index": i, "arguments": item["arguments"]}));
        }
        events.push(json!({"type": "response.output_item.done", "output_index": i, "item": item}));
    }
    events.push(json!({"type": "response.completed", "response": whole}));
    for (i, e) in events.iter_mut().enumerate() {
        e["sequence_number"] = json!(i);
    }
    typed_events(&events)
}

/// Server-sent events, each named by its `type` (`event: T`, `data: JSON`, a blank line), as
/// the Responses and Anthropic Messages APIs stream them.
pub(super) fn typed_events(events: &[Value]) -> String {
    let mut out = String::new();
    for e in events {
        out.push_str("event: ");
        out.push_str(e["type"].as_str().unwrap_or(""));
        out.push_str("\ndata: ");
        out.push_str(&e.to_string());
        out.push_str("\n\n");
    }
    out
}
