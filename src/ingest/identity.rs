//! A request's identity: the canonical form of a conversation's messages and the `input_h`
//! hash of it, shared by `ingest --from openai-messages` (a recorded message list) and `replay
//! serve` (a live request), so that a replayed request and the recording it replays hash alike.

use serde_json::Value;

use super::content_text;

/// A tool call an assistant message makes, as the canonical form reads it.
pub(crate) struct Call {
    pub(crate) id: String,
    pub(crate) tool: String,
    pub(crate) args: Value,
}

pub(crate) fn calls_of(m: &Value) -> Vec<Call> {
    (m.get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten())
    .map(|c| {
        let (id, tool, args) = call_parts(c);
        Call {
            id: id.unwrap_or_default().to_owned(),
            tool: tool.to_owned(),
            args: args.clone(),
        }
    })
    .collect()
}

/// A tool call object's id, tool name and arguments, in OpenAI's shape (`function.name`,
/// `function.arguments`) or the flat one (`name`, `arguments`); absent arguments are `null`.
pub(crate) fn call_parts(c: &Value) -> (Option<&str>, &str, &Value) {
    const NULL: &Value = &Value::Null;
    let id = c.get("id").and_then(Value::as_str);
    let tool = (c.pointer("/function/name").or_else(|| c.get("name")))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let args = (c
        .pointer("/function/arguments")
        .or_else(|| c.get("arguments")))
    .unwrap_or(NULL);
    (id, tool, args)
}

/// One message of a conversation in the canonical form that `input_h` hashes — the same for
/// `ingest --from openai-messages` (a recorded message list) and `replay serve` (a live request),
/// so that a replayed request and the recording it replays hash alike:
///
/// `{"role": …, "content"?: <text>, "tool_calls"?: [{"id", "name", "arguments"}], "tool_call_id"?: …}`
///
/// with keys in that order (compact JSON, no spaces). `content` is the message's text (parts
/// joined with newlines, as everywhere in ingest), left out when empty or absent; `arguments`
/// are parsed JSON when they parse (so `{"a":1}` and `{"a": 1}` hash alike), else the string;
/// `tool_call_id` (or tau2's `id`) only on tool results. Everything else a client adds (`name`,
/// `refusal`, `annotations`, `audio`, `null` fields…) is left out.
pub(crate) fn canonical_message(m: &Value) -> String {
    let role = m.get("role").and_then(Value::as_str).unwrap_or("");
    let mut out = String::from("{\"role\":");
    out.push_str(&Value::String(role.to_owned()).to_string());
    if let Some(text) = m
        .get("content")
        .and_then(content_text)
        .filter(|t| !t.is_empty())
    {
        out.push_str(",\"content\":");
        out.push_str(&Value::String(text).to_string());
    }
    let calls = calls_of(m);
    if !calls.is_empty() {
        out.push_str(",\"tool_calls\":[");
        for (i, c) in calls.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let arguments = match &c.args {
                Value::String(s) => {
                    serde_json::from_str::<Value>(s).unwrap_or_else(|_| c.args.clone())
                }
                other => other.clone(),
            };
            out.push_str(&format!(
                "{{\"id\":{},\"name\":{},\"arguments\":{}}}",
                Value::String(c.id.clone()),
                Value::String(c.tool.clone()),
                arguments
            ));
        }
        out.push(']');
    }
    if matches!(role, "tool" | "function") {
        if let Some(id) = (m.get("tool_call_id").or_else(|| m.get("id"))).and_then(Value::as_str) {
            out.push_str(",\"tool_call_id\":");
            out.push_str(&Value::String(id.to_owned()).to_string());
        }
    }
    out.push('}');
    out
}

/// The hash `input_h` of a conversation so far: [`canonical_message`] of each message, as a
/// compact JSON array.
#[cfg_attr(not(feature = "replay"), allow(dead_code))] // replay's, which records live requests
pub(crate) fn input_hash(hasher: &crate::trace::hash::PromptHasher, messages: &[Value]) -> String {
    let mut g = hasher.growing();
    g.push("[");
    for (i, m) in messages.iter().enumerate() {
        if i > 0 {
            g.push(",");
        }
        g.push(&canonical_message(m));
    }
    g.prompt_with("]").h.to_string()
}

#[cfg(test)]
mod canonical_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn client_extras_spacing_and_nulls_do_not_change_the_input_hash() {
        let hasher = crate::trace::PromptHasher::unkeyed();
        let recorded = [
            json!({"role": "user", "content": "hi"}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "ok"}),
        ];
        let live = [
            json!({"role": "user", "content": [{"type": "text", "text": "hi"}], "name": null}),
            json!({"role": "assistant", "refusal": null, "annotations": [], "tool_calls": [{"id": "c1", "type": "function", "function": {"arguments": "{\"a\":1}", "name": "f"}}]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "ok"}),
        ];
        assert_eq!(input_hash(&hasher, &recorded), input_hash(&hasher, &live));
        let changed = [
            live[0].clone(),
            live[1].clone(),
            json!({"role": "tool", "tool_call_id": "c1", "content": "not ok"}),
        ];
        assert_ne!(
            input_hash(&hasher, &recorded),
            input_hash(&hasher, &changed)
        );
        assert_eq!(
            canonical_message(&recorded[1]),
            r#"{"role":"assistant","tool_calls":[{"id":"c1","name":"f","arguments":{"a":1}}]}"#
        );
    }
}
