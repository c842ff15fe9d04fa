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

/// A message in the shared shape: role, text, tool calls, the call a tool message answers.
#[derive(Debug, Default)]
pub(super) struct Message {
    pub(super) role: String,
    pub(super) text: Option<String>,
    /// Planned calls: (call id, tool, arguments).
    pub(super) calls: Vec<(Option<String>, String, Value)>,
    /// The call a tool result answers (`tool_call_id`, a `tool_call_response` part's `id`).
    pub(super) answers: Option<String>,
    /// Whether the message carries its content (text, calls, a result) — not when the
    /// instrumentation recorded only its role (content capture off).
    pub(super) captured: bool,
}

/// A planned call of a message, as a [`Message`] holds it.
fn planned(c: &Value) -> (Option<String>, String, Value) {
    let (id, tool, args) = crate::ingest::identity::call_parts(c);
    (id.map(str::to_owned), tool.to_owned(), args.clone())
}

/// The text of a tool result as a message's content: a string as it is, else compact JSON (a
/// result the instrumentation recorded as a JSON value; the Vercel AI SDK's `{type, value}`
/// output is its value).
fn result_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Object(o) if o.contains_key("type") && o.contains_key("value") => {
            result_text(&o["value"])
        }
        other => content_text(other),
    }
}

/// Messages in the conventions' `{role, parts}`, OpenAI's `{role, content, tool_calls}` or the
/// Vercel AI SDK's `{role, content: [text, tool-call, tool-result parts]}`. A result part
/// (`tool_call_response`, `tool-result`) is a `tool` message of its own, placed before the
/// text of the message that carried it — as the canonical form reads an Anthropic request.
fn messages_of(v: &Value) -> Vec<Message> {
    let mut out = Vec::new();
    for m in v.as_array().into_iter().flatten() {
        let role = m["role"].as_str().unwrap_or("").to_owned();
        let mut msg = Message {
            role: role.clone(),
            ..Message::default()
        };
        let mut texts = Vec::new();
        let parts = m["parts"]
            .as_array()
            .or_else(|| m["content"].as_array().filter(|_| is_vercel(m)));
        for p in parts.into_iter().flatten() {
            match p["type"].as_str() {
                Some("text") => {
                    texts.extend((p["content"].as_str().or(p["text"].as_str())).map(str::to_owned))
                }
                Some("tool_call") => msg.calls.push((
                    crate::ingest::id_str(p.get("id")).map(str::to_owned),
                    p["name"].as_str().unwrap_or("").to_owned(),
                    p.get("arguments").cloned().unwrap_or(Value::Null),
                )),
                Some("tool-call") => msg.calls.push((
                    crate::ingest::id_str(p.get("toolCallId")).map(str::to_owned),
                    p["toolName"].as_str().unwrap_or("").to_owned(),
                    (p.get("args").or(p.get("input")))
                        .cloned()
                        .unwrap_or(Value::Null),
                )),
                Some("tool_call_response" | "tool-result") => {
                    let result = (p.get("response").or(p.get("result")).or(p.get("output")))
                        .unwrap_or(&Value::Null);
                    out.push(Message {
                        role: "tool".into(),
                        text: result_text(result),
                        answers: (crate::ingest::id_str(p.get("id")))
                            .or(crate::ingest::id_str(p.get("toolCallId")))
                            .map(str::to_owned),
                        captured: !result.is_null(),
                        ..Message::default()
                    });
                }
                _ => {}
            }
        }
        if parts.is_none() {
            texts.extend(content_text(&m["content"]));
            if matches!(role.as_str(), "tool" | "function") {
                msg.answers = (crate::ingest::id_str(m.get("tool_call_id")))
                    .or(crate::ingest::id_str(m.get("id")))
                    .map(str::to_owned);
            }
        }
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            msg.calls.push(planned(c));
        }
        msg.captured = !texts.is_empty()
            || !msg.calls.is_empty()
            || (parts.is_none() && !m["content"].is_null());
        msg.text = Some(texts.join("\n")).filter(|t| !t.is_empty());
        // A message that carried only results is those results. One whose parts are of kinds
        // the canonical form does not read (an image alone, say) stays, not captured: the
        // conversation then has no `input_h`, rather than the hash of another one.
        let only_results = parts.is_some_and(|p| {
            !p.is_empty()
                && p.iter().all(|x| {
                    matches!(
                        x["type"].as_str(),
                        Some("tool_call_response" | "tool-result")
                    )
                })
        });
        if !only_results {
            out.push(msg);
        }
    }
    out
}

/// Whether a message is the Vercel AI SDK's (`content` a list of typed parts that include a
/// `tool-call` or `tool-result`, or plain `text` parts with no `parts` key).
fn is_vercel(m: &Value) -> bool {
    m.get("parts").is_none()
        && (m["content"].as_array().into_iter().flatten())
            .any(|p| matches!(p["type"].as_str(), Some("tool-call" | "tool-result")))
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
                let calls: Vec<(Option<String>, String, Value)> =
                    (m.get("tool_calls").map(indexed).into_iter().flatten())
                        .map(|c| planned(c.get("tool_call").unwrap_or(c)))
                        .collect();
                let text = m["content"].as_str().map(str::to_owned).or_else(|| {
                    let parts: Vec<&str> = (m.get("contents").map(indexed).into_iter().flatten())
                        .filter_map(|c| c.pointer("/message_content/text").and_then(Value::as_str))
                        .collect();
                    (!parts.is_empty()).then(|| parts.join("\n"))
                });
                let text = text.filter(|t| !t.is_empty());
                let role = m["role"].as_str().unwrap_or("").to_owned();
                let answers = matches!(role.as_str(), "tool" | "function")
                    .then(|| crate::ingest::id_str(m.get("tool_call_id")).map(str::to_owned))
                    .flatten();
                Message {
                    role,
                    captured: text.is_some() || !calls.is_empty(),
                    text,
                    calls,
                    answers,
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
            crate::ingest::id_str(c.get("toolCallId")).map(str::to_owned),
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
        ..Message::default()
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
            ..Message::default()
        });
    }
    Some(Message {
        role: "assistant".into(),
        text: Some(raw.to_owned()),
        calls: Vec::new(),
        ..Message::default()
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

/// A message as Chat Completions writes it (`role`, `content`, `tool_calls`, `tool_call_id`):
/// what the canonical form reads.
fn chat_message(m: &Message) -> Value {
    let mut out = Map::new();
    out.insert("role".into(), Value::String(m.role.clone()));
    if let Some(t) = &m.text {
        out.insert("content".into(), Value::String(t.clone()));
    }
    if !m.calls.is_empty() {
        let calls = (m.calls.iter())
            .map(|(id, name, args)| {
                serde_json::json!({"id": id, "type": "function",
                                   "function": {"name": name, "arguments": args}})
            })
            .collect();
        out.insert("tool_calls".into(), Value::Array(calls));
    }
    if let Some(id) = &m.answers {
        out.insert("tool_call_id".into(), Value::String(id.clone()));
    }
    Value::Object(out)
}

/// The system instructions recorded apart from the messages (`gen_ai.system_instructions`: a
/// list of parts, or text), as text.
pub(super) fn system_instructions(s: &Span) -> Option<String> {
    let v = s.json_attr("gen_ai.system_instructions").or_else(|| {
        (s.get("gen_ai.system_instructions")?.as_str()).map(|t| Value::String(t.to_owned()))
    })?;
    content_text(&v).filter(|t| !t.is_empty())
}

/// The conversation an inference span was sent, as Chat Completions messages — the one
/// canonical conversation every door hashes (`input_h`), so a run collected from spans, recorded
/// through the proxy or ingested from a message log hashes alike. System instructions recorded
/// apart lead it, as a `system` message, when no message is one. `None` when the span does not
/// give the conversation: no messages (content capture off, or only a plain input text that
/// is not a request), or messages recorded without their content.
pub(super) fn conversation(
    s: &Span,
    input: &[Message],
    input_text: Option<&str>,
) -> Option<Vec<Value>> {
    let mut out = Vec::new();
    if !input
        .iter()
        .any(|m| m.role == "system" || m.role == "developer")
    {
        if let Some(text) = system_instructions(s) {
            out.push(serde_json::json!({"role": "system", "content": text}));
        }
    }
    if input.is_empty() {
        // A plain input that is a Chat Completions request (OpenInference's `input.value`).
        let request: Value = serde_json::from_str(input_text?).ok()?;
        let messages = request.get("messages")?.as_array()?;
        return (!messages.is_empty()).then(|| messages.clone());
    }
    if input.iter().any(|m| !m.captured) {
        return None;
    }
    out.extend(input.iter().map(chat_message));
    Some(out)
}

/// The tools an inference span offered, as definitions (see
/// [`tool_definitions`](crate::ingest::identity::tool_definitions)), when the span records
/// them: the conventions' `gen_ai.tool.definitions`, OpenInference's
/// `llm.tools.N.tool.json_schema`, the Vercel AI SDK's `ai.prompt.tools`, Traceloop's
/// `llm.request.functions.N.*`.
pub(super) fn tools_offered(s: &Span) -> Option<Vec<Value>> {
    let decoded = |v: &Value| match v {
        Value::String(t) => serde_json::from_str(t).unwrap_or(Value::Null),
        other => other.clone(),
    };
    let list: Vec<Value> = if let Some(v) = s.json_attr("gen_ai.tool.definitions") {
        v.as_array()?.iter().map(decoded).collect()
    } else if let Some(v) = s.json_attr("ai.prompt.tools") {
        v.as_array()?.iter().map(decoded).collect()
    } else if let Some(tree) = unflatten(s, "llm.tools") {
        (indexed(&tree).into_iter())
            .map(|t| decoded(t.pointer("/tool/json_schema").unwrap_or(&Value::Null)))
            .collect()
    } else {
        let tree = unflatten(s, "llm.request.functions")?;
        (indexed(&tree).into_iter())
            .map(|f| {
                let mut f = f.clone();
                if let Some(p) = f.get("parameters").map(decoded) {
                    f["parameters"] = p;
                }
                f
            })
            .collect()
    };
    let list: Vec<Value> = list.into_iter().filter(Value::is_object).collect();
    let definitions =
        crate::ingest::identity::tool_definitions(&serde_json::json!({"tools": list}));
    Some(definitions)
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn span(attrs: Value) -> Span {
        Span {
            trace_id: "t".into(),
            span_id: "s".into(),
            parent_id: None,
            name: "chat m".into(),
            start_ns: 0,
            end_ns: 0,
            attrs: attrs.as_object().cloned().unwrap_or_default(),
            error: None,
            read: Default::default(),
        }
    }

    #[test]
    fn the_conventions_parts_read_as_the_chat_conversation() {
        let input = json!([
            {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]},
            {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "weather", "arguments": {"city": "Paris"}}]},
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "sunny"}]},
        ]);
        let s =
            span(json!({"gen_ai.system_instructions": [{"type": "text", "content": "Be brief."}]}));
        let c = conversation(&s, &messages_of(&input), None).unwrap();
        let chat = [
            json!({"role": "system", "content": "Be brief."}),
            json!({"role": "user", "content": "Weather in Paris?"}),
            json!({"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "sunny"}),
        ];
        let hasher = crate::trace::PromptHasher::unkeyed();
        let ours = crate::ingest::identity::input_hash(&hasher, &c);
        assert_eq!(ours, crate::ingest::identity::input_hash(&hasher, &chat));
    }

    #[test]
    fn a_conversation_not_captured_has_no_identity() {
        let s = span(json!({}));
        // Roles only (content capture off), and an image alone: neither is hashed as if it
        // were the conversation.
        let roles = json!([{"role": "user"}, {"role": "assistant"}]);
        assert!(conversation(&s, &messages_of(&roles), None).is_none());
        let image = json!([{"role": "user", "parts": [{"type": "blob", "modality": "image"}]}]);
        assert!(conversation(&s, &messages_of(&image), None).is_none());
        // No messages, and a plain input that is not a request: none either.
        assert!(conversation(&s, &[], Some("hello")).is_none());
        let request = r#"{"messages": [{"role": "user", "content": "hi"}]}"#;
        assert_eq!(conversation(&s, &[], Some(request)).unwrap().len(), 1);
    }
}
