//! A request's identity: the canonical form of a conversation's messages and the `input_h`
//! hash of it, shared by `ingest --from openai-messages` (a recorded message list) and `replay
//! serve` (a live request), so that a replayed request and the recording it replays hash alike.

use serde_json::{Map, Value, json};

use super::content_text;

/// A tool call an assistant message makes, as the canonical form reads it.
pub struct Call {
    /// The call id (empty when the message gives none).
    pub id: String,
    /// The tool's name.
    pub tool: String,
    /// The arguments, parsed when they were JSON text.
    pub args: Value,
}

/// The tool calls an assistant message makes, in order.
pub fn calls_of(m: &Value) -> Vec<Call> {
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
    let id = super::id_str(c.get("id"));
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
    // Written straight into one buffer: serde_json's compact text of each part, as its
    // `Display` writes it, without cloning the strings into values first.
    let mut out = Vec::with_capacity(128);
    let role = m.get("role").and_then(Value::as_str).unwrap_or("");
    out.extend_from_slice(b"{\"role\":");
    compact(&mut out, role);
    let content = m.get("content");
    if let Some(text) = content.and_then(text_of).filter(|t| !t.is_empty()) {
        out.extend_from_slice(b",\"content\":");
        compact(&mut out, text.as_ref());
    }
    let calls = m.get("tool_calls").and_then(Value::as_array);
    if let Some(calls) = calls.filter(|c| !c.is_empty()) {
        out.extend_from_slice(b",\"tool_calls\":[");
        for (i, c) in calls.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            let (id, tool, args) = call_parts(c);
            out.extend_from_slice(b"{\"id\":");
            compact(&mut out, id.unwrap_or_default());
            out.extend_from_slice(b",\"name\":");
            compact(&mut out, tool);
            out.extend_from_slice(b",\"arguments\":");
            match args {
                Value::String(s) => match serde_json::from_str::<Value>(s) {
                    Ok(parsed) => compact(&mut out, &parsed),
                    Err(_) => compact(&mut out, s),
                },
                other => compact(&mut out, other),
            }
            out.push(b'}');
        }
        out.push(b']');
    }
    if matches!(role, "tool" | "function") {
        if let Some(id) = (m.get("tool_call_id").or_else(|| m.get("id"))).and_then(Value::as_str) {
            out.extend_from_slice(b",\"tool_call_id\":");
            compact(&mut out, id);
        }
    }
    out.push(b'}');
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// A message's `content` as [`content_text`] reads it, borrowed when it is a plain string.
fn text_of(content: &Value) -> Option<std::borrow::Cow<'_, str>> {
    match content {
        Value::String(s) => Some(std::borrow::Cow::Borrowed(s)),
        other => content_text(other).map(std::borrow::Cow::Owned),
    }
}

/// Appends `value` as compact JSON, as its `Display` (`to_string`) writes it.
fn compact(out: &mut Vec<u8>, value: &(impl serde::Serialize + ?Sized)) {
    serde_json::to_writer(out, value).expect("writing JSON into memory");
}

/// The text `input_h` hashes: `canonical_message` of each message, as a compact JSON array
/// (what the raw-prompt sidecar keeps, under the developer opt-in).
pub fn conversation_text(messages: &[Value]) -> String {
    let parts: Vec<String> = messages.iter().map(canonical_message).collect();
    format!("[{}]", parts.join(","))
}

/// What `system_h` hashes, whichever door: the text of the conversation's last `system` or
/// `developer` message (its parts joined with newlines), if it has one.
pub fn system_text(messages: &[Value]) -> Option<String> {
    (messages.iter().rev())
        .find(|m| {
            matches!(
                m.get("role").and_then(Value::as_str),
                Some("system" | "developer")
            )
        })
        .and_then(|m| m.get("content").and_then(content_text))
        .filter(|t| !t.is_empty())
}

/// A conversation as it grows, its `input_h` kept current: each message's canonical form is
/// hashed once, when it is added — so a run of n turns costs O(n), not the O(n²) of hashing the
/// whole conversation again at every inference.
pub(crate) struct Conversation {
    messages: Vec<Value>,
    hash: crate::trace::hash::GrowingPrompt,
}

impl Conversation {
    pub(crate) fn new(hasher: &crate::trace::hash::PromptHasher) -> Conversation {
        let mut hash = hasher.growing();
        hash.push("[");
        Conversation {
            messages: Vec::new(),
            hash,
        }
    }

    /// Adds a message.
    pub(crate) fn push(&mut self, m: Value) {
        if !self.messages.is_empty() {
            self.hash.push(",");
        }
        self.hash.push(&canonical_message(&m));
        self.messages.push(m);
    }

    /// The messages so far.
    pub(crate) fn messages(&self) -> &[Value] {
        &self.messages
    }

    /// `input_h` of the conversation so far: what [`input_hash`] gives for its messages.
    pub(crate) fn input_h(&self) -> String {
        self.hash.prompt_with("]").h.to_string()
    }
}

/// The hash `input_h` of a conversation so far: `canonical_message` of each message, as a
/// compact JSON array.
pub fn input_hash(hasher: &crate::trace::hash::PromptHasher, messages: &[Value]) -> String {
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

/// The tool definitions of a request in one shape, Chat Completions' (`{"type": "function",
/// "function": {"name", "description"?, "parameters"?}}`; Anthropic's `input_schema` is the
/// `parameters`), in the order offered: what a divergence compares besides the names.
pub fn tool_definitions(request: &Value) -> Vec<Value> {
    (request
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten())
    .map(|t| {
        let f = t.get("function").unwrap_or(t);
        let mut d = Map::new();
        for (k, from) in [
            ("name", "name"),
            ("description", "description"),
            ("parameters", "parameters"),
            ("parameters", "input_schema"),
            ("parameters", "inputSchema"),
        ] {
            if let Some(v) = f.get(from).filter(|v| !v.is_null()) {
                d.insert(k.into(), v.clone());
            }
        }
        json!({"type": "function", "function": Value::Object(d)})
    })
    .collect()
}

/// The canonical request: `{"messages": [each message as `input_h` hashes it, parsed back to
/// JSON], "tools": [definitions]}` — `tools` left out when the door does not know what was
/// offered (so no `/tools` part is recorded, and none is compared).
pub fn canonical_request(messages: &[Value], tools: Option<&[Value]>) -> Value {
    let messages: Vec<Value> = (messages.iter())
        .map(|m| serde_json::from_str(&canonical_message(m)).unwrap_or(Value::Null))
        .collect();
    let mut out = json!({"messages": messages});
    if let Some(t) = tools {
        out["tools"] = Value::Array(t.to_vec());
    }
    out
}

/// How deep [`parts`] goes: `/tools/1/function/parameters/required` and
/// `/messages/3/tool_calls/0/arguments` are parts; what lies below them is hashed whole.
const PART_DEPTH: usize = 5;

/// The most parts [`parts`] gives one request: a container whose children would take it past
/// this is hashed whole, so that whatever a request holds (520,000 one-letter messages, say) its
/// `request_h` stays a few hundred kilobytes and its inference a line the trace reader takes.
pub const MAX_PARTS: usize = 4096;

/// The parts of the request whose conversation is `messages` (and whose tool definitions are
/// `tools`, when the door knows them): [`parts`] of its [`canonical_request`] — or, for a
/// conversation too long to open (`MAX_PARTS` messages or more), its messages as one part,
/// `/messages`, hashed as `input_h` hashes them (no tree of it is built).
pub fn request_parts(
    messages: &[Value],
    tools: Option<&[Value]>,
    hasher: &crate::trace::PromptHasher,
) -> std::collections::BTreeMap<String, String> {
    if messages.len() < MAX_PARTS {
        return parts(&canonical_request(messages, tools), hasher);
    }
    let mut out = match tools {
        Some(t) => parts(&json!({"tools": t}), hasher),
        None => std::collections::BTreeMap::new(),
    };
    out.insert("/messages".to_owned(), input_hash(hasher, messages));
    out
}

/// The parts of a canonical request, hashed: each value at most five steps down (a
/// scalar, an empty container, or a container at that depth, hashed as compact JSON), by its
/// JSON pointer — at most [`MAX_PARTS`] of them: a container opened in document order while its
/// children fit, hashed whole once they would not.
pub fn parts(
    canonical: &Value,
    hasher: &crate::trace::PromptHasher,
) -> std::collections::BTreeMap<String, String> {
    fn walk(
        v: &Value,
        at: &mut String,
        (depth, budget): (usize, &mut usize),
        hasher: &crate::trace::PromptHasher,
        out: &mut std::collections::BTreeMap<String, String>,
    ) {
        // An object whose keys could not be pointer segments (see the trace reader's rule) is
        // hashed whole, as a value at the depth limit is.
        let named = |m: &serde_json::Map<String, Value>| {
            (m.keys()).all(|k| {
                crate::trace::request_part_segment(&k.replace('~', "~0").replace('/', "~1"))
            })
        };
        // This value's own slot is in the budget already; its children would take one each.
        let fits = |n: usize, budget: &usize| n <= *budget + 1;
        let children: Vec<(String, &Value)> = match v {
            Value::Object(m)
                if depth < PART_DEPTH && !m.is_empty() && fits(m.len(), budget) && named(m) =>
            {
                (m.iter())
                    .map(|(k, v)| (k.replace('~', "~0").replace('/', "~1"), v))
                    .collect()
            }
            Value::Array(a) if depth < PART_DEPTH && !a.is_empty() && fits(a.len(), budget) => a
                .iter()
                .enumerate()
                .map(|(i, v)| (i.to_string(), v))
                .collect(),
            _ => {
                out.insert(at.clone(), hasher.hash(&v.to_string()));
                return;
            }
        };
        *budget = (*budget + 1) - children.len();
        for (k, child) in children {
            let len = at.len();
            at.push('/');
            at.push_str(&k);
            walk(child, at, (depth + 1, &mut *budget), hasher, out);
            at.truncate(len);
        }
    }
    let mut out = std::collections::BTreeMap::new();
    let mut budget = MAX_PARTS - 2;
    for key in ["messages", "tools"] {
        if let Some(v) = canonical.get(key) {
            walk(
                v,
                &mut format!("/{key}"),
                (1, &mut budget),
                hasher,
                &mut out,
            );
        }
    }
    out
}

#[cfg(test)]
mod canonical_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_request_of_any_size_has_at_most_max_parts() {
        let hasher = crate::trace::PromptHasher::unkeyed();
        let many: Vec<Value> = (0..100_000)
            .map(|i| json!({"role": "user", "content": format!("m{i}")}))
            .collect();
        let request = canonical_request(&many, Some(&[]));
        let p = parts(&request, &hasher);
        assert!(p.len() <= MAX_PARTS, "{}", p.len());
        // Too many messages to open: the list is one part.
        assert!(p.contains_key("/messages"), "{:?}", p.keys().next());
        // A conversation that fits is opened message by message, field by field.
        let few = canonical_request(&many[..1000], Some(&[]));
        let p = parts(&few, &hasher);
        assert!(p.len() <= MAX_PARTS && p.contains_key("/messages/999/content"));
        // Near the bound, the first messages are opened, the rest hashed whole.
        let near = canonical_request(&many[..3000], Some(&[]));
        let p = parts(&near, &hasher);
        assert!(p.len() <= MAX_PARTS, "{}", p.len());
        assert!(p.contains_key("/messages/0/content") && p.contains_key("/messages/2999"));
    }

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

    /// The canonical text of messages of every shape, pinned: escapes, content parts, numbers,
    /// arguments as JSON text, as text that is not JSON, as an object (keys sorted), absent ids.
    #[test]
    fn the_canonical_form_of_each_shape_of_message() {
        let cases = [
            (
                json!({"role": "user", "content": "line\n\"quoted\" é \u{1}"}),
                r#"{"role":"user","content":"line\n\"quoted\" é \u0001"}"#,
            ),
            (
                json!({"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}),
                r#"{"role":"user","content":"a\nb"}"#,
            ),
            (
                json!({"role": "user", "content": [{"type": "image"}]}),
                r#"{"role":"user","content":"[{\"type\":\"image\"}]"}"#,
            ),
            (
                json!({"role": "user", "content": 2.5}),
                r#"{"role":"user","content":"2.5"}"#,
            ),
            (
                json!({"role": "system", "content": ""}),
                r#"{"role":"system"}"#,
            ),
            (
                json!({"content": "no role"}),
                r#"{"role":"","content":"no role"}"#,
            ),
            (
                json!({"role": "assistant", "content": "x", "tool_calls": [
                    {"function": {"name": "f", "arguments": "not json"}},
                    {"id": "c2", "name": "g", "arguments": {"z": 1, "a": [true, null]}},
                    {"id": "c3", "function": {"name": "h"}}
                ]}),
                r#"{"role":"assistant","content":"x","tool_calls":[{"id":"","name":"f","arguments":"not json"},{"id":"c2","name":"g","arguments":{"a":[true,null],"z":1}},{"id":"c3","name":"h","arguments":null}]}"#,
            ),
            (
                json!({"role": "assistant", "tool_calls": []}),
                r#"{"role":"assistant"}"#,
            ),
            (
                json!({"role": "tool", "id": "t9", "content": "ok"}),
                r#"{"role":"tool","content":"ok","tool_call_id":"t9"}"#,
            ),
            (
                json!({"role": "user", "tool_call_id": "ignored"}),
                r#"{"role":"user"}"#,
            ),
        ];
        for (message, canonical) in cases {
            assert_eq!(canonical_message(&message), canonical, "{message}");
        }
    }
}
