//! The Anthropic Messages API's response shapes, built from a recorded step as
//! [`super::openai`] builds the OpenAI ones: every field derived from the recording and the
//! session, so the same trace served twice gives byte-identical bodies.

use serde_json::{Value, json};

use super::openai::{id, model};
use super::script::{Script, Step};
use crate::trace::Finish;

/// The Messages API's `stop_reason` of a recorded finish.
fn stop_reason(step: &Step) -> &'static str {
    match step.finish {
        Some(Finish::ToolCall) => "tool_use",
        Some(Finish::Length) => "max_tokens",
        Some(Finish::ContentFilter) => "refusal",
        Some(Finish::Stop) | Some(Finish::Error) => "end_turn",
        None if !step.tool_calls.is_empty() => "tool_use",
        None => "end_turn",
    }
}

/// The usage in Anthropic's terms: `input_tokens` without the cache reads and writes, which
/// the trace counts in it.
fn usage(step: &Step) -> Value {
    let Some(u) = step.usage else {
        return json!({"input_tokens": 0, "output_tokens": 0});
    };
    let (read, write) = (
        u.cache_read_tokens.unwrap_or(0),
        u.cache_write_tokens.unwrap_or(0),
    );
    let mut out = json!({
        "input_tokens": u.input_tokens.saturating_sub(read).saturating_sub(write),
        "output_tokens": u.output_tokens,
    });
    if let Some(r) = u.cache_read_tokens {
        out["cache_read_input_tokens"] = json!(r);
    }
    if let Some(w) = u.cache_write_tokens {
        out["cache_creation_input_tokens"] = json!(w);
    }
    out
}

/// The content blocks: the text, then each tool call (`input` its arguments as an object).
fn content(step: &Step) -> Vec<Value> {
    let mut blocks = Vec::new();
    if let Some(text) = step.text.as_deref().filter(|t| !t.is_empty()) {
        blocks.push(json!({"type": "text", "text": text}));
    }
    for c in &step.tool_calls {
        let input = serde_json::from_str::<Value>(&c.arguments)
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}));
        blocks.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
    }
    blocks
}

/// `POST /v1/messages`, not streamed: request `n` (1-based) answered with `step`.
pub(crate) fn message(script: &Script, step: &Step, n: usize) -> Value {
    json!({
        "id": id("msg", script, n),
        "type": "message",
        "role": "assistant",
        "model": model(script, step),
        "content": content(step),
        "stop_reason": stop_reason(step),
        "stop_sequence": null,
        "usage": usage(step),
    })
}

/// The same message as the Messages API streams it: `message_start`, a `ping`, each content
/// block opened, filled (`text_delta`, `input_json_delta`) and closed, `message_delta` with the
/// stop reason and output tokens, `message_stop`.
pub(crate) fn message_stream(script: &Script, step: &Step, n: usize) -> String {
    let whole = message(script, step, n);
    let mut start = whole.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    start["usage"]["output_tokens"] = json!(0);
    let mut events = vec![
        json!({"type": "message_start", "message": start}),
        json!({"type": "ping"}),
    ];
    for (i, block) in content(step).into_iter().enumerate() {
        let (opened, delta) = if block["type"] == "text" {
            (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            )
        } else {
            let mut opened = block.clone();
            opened["input"] = json!({});
            (
                opened,
                json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
            )
        };
        events.push(json!({"type": "content_block_start", "index": i, "content_block": opened}));
        events.push(json!({"type": "content_block_delta", "index": i, "delta": delta}));
        events.push(json!({"type": "content_block_stop", "index": i}));
    }
    events.push(json!({
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason(step), "stop_sequence": null},
        "usage": {"output_tokens": whole["usage"]["output_tokens"]},
    }));
    events.push(json!({"type": "message_stop"}));
    super::openai::typed_events(&events)
}

/// The error body of a non-2xx answer, in the Messages API's shape.
pub(crate) fn error(message: &str, kind: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}
