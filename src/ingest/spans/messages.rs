//! The messages, finish reason and usage of an inference span, in whichever dialect of
//! [`DIALECTS`](super::dialects::DIALECTS) its attributes use: the readers of each message shape, and the lookups of the
//! dialects' keys.

use serde_json::{Map, Value};

use super::Span;
use super::dialects::{KEYS, Messages};
use crate::ingest::content_text;
use crate::trace::{Finish, Usage};

/// `prefix.N.…` attributes as a JSON tree, numeric segments as object keys.
fn unflatten(span: &Span, prefix: &str) -> Option<Value> {
    span.read_prefix(prefix);
    let mut root = Map::new();
    let mut any = false;
    for (k, v) in &span.attrs {
        let Some(rest) = k.strip_prefix(prefix).and_then(|r| r.strip_prefix('.')) else {
            continue;
        };
        any = true;
        let mut node = &mut root;
        let parts: Vec<&str> = rest.split('.').collect();
        for (i, p) in parts.iter().enumerate() {
            if i + 1 == parts.len() {
                node.insert((*p).to_owned(), v.clone());
            } else {
                let next = node
                    .entry((*p).to_owned())
                    .or_insert_with(|| Value::Object(Map::new()));
                if !next.is_object() {
                    *next = Value::Object(Map::new());
                }
                node = next.as_object_mut().expect("an object");
            }
        }
    }
    any.then_some(Value::Object(root))
}

/// The children of a node keyed `0`, `1`… in numeric order.
fn indexed(v: &Value) -> Vec<&Value> {
    let mut items: Vec<(u64, &Value)> = (v.as_object().into_iter().flatten())
        .filter_map(|(k, v)| Some((k.parse().ok()?, v)))
        .collect();
    items.sort_by_key(|(i, _)| *i);
    items.into_iter().map(|(_, v)| v).collect()
}

/// A message in the shared shape: role, text, tool calls.
#[derive(Debug, Default)]
pub(super) struct Message {
    pub(super) role: String,
    pub(super) text: Option<String>,
    /// Planned calls: (call id, tool, arguments).
    pub(super) calls: Vec<(Option<String>, String, Value)>,
}

/// A planned call of a message, as a [`Message`] holds it.
fn planned(c: &Value) -> (Option<String>, String, Value) {
    let (id, tool, args) = crate::ingest::identity::call_parts(c);
    (id.map(str::to_owned), tool.to_owned(), args.clone())
}

/// Messages in the conventions' `{role, parts}` or OpenAI's `{role, content, tool_calls}`.
fn messages_of(v: &Value) -> Vec<Message> {
    (v.as_array().into_iter().flatten())
        .map(|m| {
            let mut msg = Message {
                role: m["role"].as_str().unwrap_or("").to_owned(),
                ..Message::default()
            };
            let mut texts = Vec::new();
            for p in m["parts"].as_array().into_iter().flatten() {
                match p["type"].as_str() {
                    Some("text") => texts
                        .extend((p["content"].as_str().or(p["text"].as_str())).map(str::to_owned)),
                    Some("tool_call") => msg.calls.push((
                        p["id"].as_str().map(str::to_owned),
                        p["name"].as_str().unwrap_or("").to_owned(),
                        p.get("arguments").cloned().unwrap_or(Value::Null),
                    )),
                    _ => {}
                }
            }
            if m.get("parts").is_none() {
                texts.extend(content_text(&m["content"]));
            }
            for c in m["tool_calls"].as_array().into_iter().flatten() {
                msg.calls.push(planned(c));
            }
            msg.text = Some(texts.join("\n")).filter(|t| !t.is_empty());
            msg
        })
        .collect()
}

/// OpenInference's flattened `llm.*_messages.N.message.*`, and OpenLLMetry's
/// `gen_ai.prompt.N.*` / `gen_ai.completion.N.*`.
fn flattened_messages(s: &Span, prefix: &str) -> Option<Vec<Message>> {
    let tree = unflatten(s, prefix)?;
    Some(
        indexed(&tree)
            .into_iter()
            .map(|m| {
                let m = m.get("message").unwrap_or(m);
                let calls = (m.get("tool_calls").map(indexed).into_iter().flatten())
                    .map(|c| planned(c.get("tool_call").unwrap_or(c)))
                    .collect();
                let text = m["content"].as_str().map(str::to_owned).or_else(|| {
                    let parts: Vec<&str> = (m.get("contents").map(indexed).into_iter().flatten())
                        .filter_map(|c| c.pointer("/message_content/text").and_then(Value::as_str))
                        .collect();
                    (!parts.is_empty()).then(|| parts.join("\n"))
                });
                Message {
                    role: m["role"].as_str().unwrap_or("").to_owned(),
                    text: text.filter(|t| !t.is_empty()),
                    calls,
                }
            })
            .collect(),
    )
}

/// The input messages of an inference span, and the text they were recorded as: the first
/// shape of [`DIALECTS`](super::dialects::DIALECTS) order the span has, else a dialect's plain input text.
pub(super) fn input_of(s: &Span) -> (Vec<Message>, Option<String>) {
    for &shape in &KEYS.input {
        match shape {
            Messages::Json(key) => {
                if let Some(v) = s.json_attr(key) {
                    let text = (s.attrs.get(key))
                        .map(|r| r.as_str().map_or_else(|| r.to_string(), str::to_owned));
                    return (messages_of(&v), text);
                }
            }
            Messages::Flattened(prefix) => {
                if let Some(m) = flattened_messages(s, prefix) {
                    let text = unflatten(s, prefix).map(|t| t.to_string());
                    return (m, text);
                }
            }
            Messages::VercelResponse | Messages::AnyAgentOutput => {}
        }
    }
    let text = s.str_attr(&KEYS.input_text).map(str::to_owned);
    (Vec::new(), text)
}

/// The output of an inference span (text and planned calls): the first shape of [`DIALECTS`](super::dialects::DIALECTS)
/// order the span has.
pub(super) fn output_of(s: &Span) -> Message {
    for &shape in &KEYS.output {
        let found = match shape {
            Messages::Json(key) => s.json_attr(key).map(|v| merge(messages_of(&v))),
            Messages::Flattened(prefix) => flattened_messages(s, prefix).map(merge),
            Messages::VercelResponse => vercel_response(s),
            Messages::AnyAgentOutput => any_agent_output(s),
        };
        if let Some(m) = found {
            return m;
        }
    }
    Message::default()
}

/// The Vercel AI SDK's `ai.response.text` and `ai.response.toolCalls`.
fn vercel_response(s: &Span) -> Option<Message> {
    if !(s.has("ai.response.text") || s.has("ai.response.toolCalls")) {
        return None;
    }
    let calls = (s
        .json_attr("ai.response.toolCalls")
        .as_ref()
        .and_then(Value::as_array))
    .into_iter()
    .flatten()
    .map(|c| {
        (
            c["toolCallId"].as_str().map(str::to_owned),
            c["toolName"].as_str().unwrap_or("").to_owned(),
            c.get("args")
                .or(c.get("input"))
                .cloned()
                .unwrap_or(Value::Null),
        )
    })
    .collect();
    Some(Message {
        role: "assistant".into(),
        text: s.str_attr(&["ai.response.text"]).map(str::to_owned),
        calls,
    })
}

/// any-agent's `gen_ai.output`, typed by `gen_ai.output.type`; a list of `{tool.name,
/// tool.args}` is the calls planned.
fn any_agent_output(s: &Span) -> Option<Message> {
    let raw = s.str_attr(&["gen_ai.output"])?;
    if let Ok(Value::Array(items)) = serde_json::from_str::<Value>(raw)
        && !items.is_empty()
        && items.iter().all(|i| i.get("tool.name").is_some())
    {
        let calls = items
            .iter()
            .map(|i| {
                (
                    None,
                    i["tool.name"].as_str().unwrap_or("").to_owned(),
                    i.get("tool.args").cloned().unwrap_or(Value::Null),
                )
            })
            .collect();
        return Some(Message {
            role: "assistant".into(),
            text: None,
            calls,
        });
    }
    Some(Message {
        role: "assistant".into(),
        text: Some(raw.to_owned()),
        calls: Vec::new(),
    })
}

fn merge(messages: Vec<Message>) -> Message {
    let mut out = Message {
        role: "assistant".into(),
        ..Message::default()
    };
    let mut texts = Vec::new();
    for m in messages {
        texts.extend(m.text);
        out.calls.extend(m.calls);
    }
    out.text = Some(texts.join("\n")).filter(|t| !t.is_empty());
    out
}

fn finish_of(reason: &str) -> Option<Finish> {
    Some(
        match reason.to_ascii_lowercase().replace('-', "_").as_str() {
            "stop" | "end_turn" | "completed" => Finish::Stop,
            "tool_calls" | "tool_call" | "function_call" | "tool_use" => Finish::ToolCall,
            "length" | "max_tokens" => Finish::Length,
            "content_filter" => Finish::ContentFilter,
            "error" => Finish::Error,
            _ => return None,
        },
    )
}

pub(super) fn finish_attr(s: &Span) -> Option<Finish> {
    KEYS.finish.iter().find_map(|k| {
        let v = s.get(k)?;
        v.as_array()
            .and_then(|a| a.first())
            .and_then(Value::as_str)
            .or(v.as_str())
            .and_then(finish_of)
    })
}

pub(super) fn usage_of(s: &Span) -> Option<Usage> {
    let input = s.u64_attr(&KEYS.usage_input)?;
    let output = s.u64_attr(&KEYS.usage_output)?;
    Some(Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: s.u64_attr(&KEYS.cache_read),
        cache_write_tokens: s.u64_attr(&KEYS.cache_write),
        reasoning_tokens: s.u64_attr(&KEYS.reasoning),
        cost_usd: s.amount_attr(&KEYS.cost),
        priced: false,
    })
}
