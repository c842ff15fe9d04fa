//! One canonical request for every API: a Responses or Anthropic Messages request read as the
//! Chat Completions conversation it is, so that `input_h` (the hash of
//! the canonical form of each message, as `ingest` hashes a recorded conversation) is the same whichever API
//! carried the conversation — and so that a divergence can name the first field that differs
//! ([`canonical_request`], [`first_difference`]).
//!
//! - Responses: `instructions` is a leading `system` message; a string `input` one `user`
//!   message; `message` items keep their role and text; consecutive `function_call` items (and
//!   the assistant message before them) are one assistant message with `tool_calls`;
//!   `function_call_output` is a `tool` message.
//! - Anthropic Messages: `system` (a string or text blocks) is a leading `system` message; in a
//!   message, `text` blocks are its content, `tool_use` blocks its `tool_calls` (their `input`
//!   the arguments), and each `tool_result` block a `tool` message of its own, placed before the
//!   message's text.

use serde_json::{Map, Value, json};

use crate::ingest::content_text;

/// Which API a request was made to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// OpenAI Chat Completions (`POST /v1/chat/completions`).
    Chat,
    /// The OpenAI Responses API (`POST /v1/responses`).
    Responses,
    /// The Anthropic Messages API (`POST /v1/messages`).
    Anthropic,
}

impl Api {
    /// The API a request path ends with, if it is one of the three.
    pub fn of_path(path: &str) -> Option<Api> {
        let path = path.trim_end_matches('/');
        if path.ends_with("/v1/chat/completions") || path == "/chat/completions" {
            Some(Api::Chat)
        } else if path.ends_with("/v1/responses") || path == "/responses" {
            Some(Api::Responses)
        } else if path.ends_with("/v1/messages") || path == "/messages" {
            Some(Api::Anthropic)
        } else {
            None
        }
    }

    /// The API's request path.
    pub fn path(self) -> &'static str {
        match self {
            Api::Chat => "/v1/chat/completions",
            Api::Responses => "/v1/responses",
            Api::Anthropic => "/v1/messages",
        }
    }

    /// Whether a request body is this API's: an object, with its conversation where the API
    /// keeps it (`messages` a list; `input` a string or a list).
    pub fn shaped(self, request: &Value) -> bool {
        request.is_object()
            && match self {
                Api::Chat | Api::Anthropic => request.get("messages").is_none_or(Value::is_array),
                Api::Responses => {
                    (request.get("input")).is_none_or(|i| i.is_array() || i.is_string())
                }
            }
    }

    /// What [`Api::shaped`] wants, in words.
    pub fn shape_wanted(self) -> &'static str {
        match self {
            Api::Chat => "a Chat Completions request: an object, whose `messages` is a list",
            Api::Responses => "a Responses request: an object, whose `input` is a string or a list",
            Api::Anthropic => "a Messages request: an object, whose `messages` is a list",
        }
    }
}

/// Where a canonical message came from in the request the client sent: what it is, and the
/// JSON pointers of its content and of each of its calls' arguments there — so that a miss
/// found at `/messages/3/content` can also be told as the SDK wrote it (Anthropic's
/// `/messages/2/content/0/content`, Responses' `/input/3/output`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origin {
    /// The message's role in the canonical form.
    pub role: String,
    /// The call a tool result answers.
    pub answers: Option<String>,
    /// The pointer of its content in the request.
    pub content: String,
    /// For each call it plans: (call id, pointer of its arguments in the request).
    pub calls: Vec<(String, String)>,
}

impl Origin {
    fn new(role: &str, content: String) -> Origin {
        Origin {
            role: role.to_owned(),
            content,
            ..Origin::default()
        }
    }
}

/// The conversation of a request as Chat Completions messages.
pub fn messages_of(api: Api, request: &Value) -> Vec<Value> {
    messages_with_origins(api, request).0.into_owned()
}

/// [`messages_of`], with where each message came from in the request (a Chat Completions
/// request's own messages are borrowed, not copied).
pub fn messages_with_origins(
    api: Api,
    request: &Value,
) -> (std::borrow::Cow<'_, [Value]>, Vec<Origin>) {
    use std::borrow::Cow;
    match api {
        Api::Chat => {
            let messages: &[Value] =
                (request.get("messages").and_then(Value::as_array)).map_or(&[], Vec::as_slice);
            // Where each message sits names a part of `request_h`; a conversation too long to
            // open into parts needs none (and 520,000 of them would cost 100 MB).
            let opened = messages.len() < crate::ingest::identity::MAX_PARTS;
            let origins = (messages.iter().enumerate())
                .take_while(|_| opened)
                .map(|(i, m)| {
                    let role = m.get("role").and_then(Value::as_str).unwrap_or("");
                    let mut o = Origin::new(role, format!("/messages/{i}/content"));
                    o.answers = (m.get("tool_call_id").and_then(Value::as_str)).map(str::to_owned);
                    o.calls = (crate::ingest::identity::calls_of(m).into_iter().enumerate())
                        .map(|(j, c)| {
                            (
                                c.id,
                                format!("/messages/{i}/tool_calls/{j}/function/arguments"),
                            )
                        })
                        .collect();
                    o
                })
                .collect();
            (Cow::Borrowed(messages), origins)
        }
        Api::Responses => {
            let (m, o) = responses_messages(request);
            (Cow::Owned(m), o)
        }
        Api::Anthropic => {
            let (m, o) = anthropic_messages(request);
            (Cow::Owned(m), o)
        }
    }
}

fn responses_messages(request: &Value) -> (Vec<Value>, Vec<Origin>) {
    let mut out = Vec::new();
    let mut origins = Vec::new();
    if let Some(text) = request.get("instructions").and_then(content_text) {
        out.push(json!({"role": "system", "content": text}));
        origins.push(Origin::new("system", "/instructions".into()));
    }
    let items = match request.get("input") {
        Some(Value::String(s)) => {
            out.push(json!({"role": "user", "content": s}));
            origins.push(Origin::new("user", "/input".into()));
            return (out, origins);
        }
        Some(Value::Array(items)) => items,
        _ => return (out, origins),
    };
    for (k, item) in items.iter().enumerate() {
        let kind = item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message");
        match kind {
            "function_call" => {
                let id = item.get("call_id").cloned().unwrap_or(Value::Null);
                let call = json!({
                    "id": id,
                    "type": "function",
                    "function": {"name": item.get("name").cloned().unwrap_or(Value::Null),
                                 "arguments": item.get("arguments").cloned().unwrap_or(Value::Null)},
                });
                let at = (
                    id.as_str().unwrap_or("").to_owned(),
                    format!("/input/{k}/arguments"),
                );
                // Calls planned together are one assistant message, as Chat Completions has it.
                match out.last_mut() {
                    Some(last) if is_assistant(last) => {
                        let calls = last.as_object_mut().expect("an object").entry("tool_calls");
                        match calls.or_insert_with(|| json!([])) {
                            Value::Array(a) => a.push(call),
                            other => *other = json!([call]),
                        }
                        if let Some(o) = origins.last_mut() {
                            o.calls.push(at);
                        }
                    }
                    _ => {
                        out.push(json!({"role": "assistant", "tool_calls": [call]}));
                        let mut o = Origin::new("assistant", format!("/input/{k}"));
                        o.calls.push(at);
                        origins.push(o);
                    }
                }
            }
            "function_call_output" => {
                let id = item.get("call_id").cloned().unwrap_or(Value::Null);
                let mut o = Origin::new("tool", format!("/input/{k}/output"));
                o.answers = id.as_str().map(str::to_owned);
                origins.push(o);
                out.push(json!({
                    "role": "tool",
                    "tool_call_id": id,
                    "content": item.get("output").cloned().unwrap_or(Value::Null),
                }));
            }
            "message" => {
                let role = item.get("role").and_then(Value::as_str).unwrap_or("user");
                let role = if role == "developer" { "system" } else { role };
                let mut m = json!({"role": role});
                if let Some(c) = item.get("content") {
                    m["content"] = c.clone();
                }
                out.push(m);
                origins.push(Origin::new(role, format!("/input/{k}/content")));
            }
            // Reasoning items and the like carry no conversation text the hash covers.
            _ => {}
        }
    }
    (out, origins)
}

fn is_assistant(m: &Value) -> bool {
    m.get("role").and_then(Value::as_str) == Some("assistant")
}

fn anthropic_messages(request: &Value) -> (Vec<Value>, Vec<Origin>) {
    let mut out = Vec::new();
    let mut origins = Vec::new();
    if let Some(text) = request.get("system").and_then(content_text) {
        out.push(json!({"role": "system", "content": text}));
        origins.push(Origin::new("system", "/system".into()));
    }
    for (i, m) in (request.get("messages").and_then(Value::as_array))
        .into_iter()
        .flatten()
        .enumerate()
    {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
        let blocks = match m.get("content") {
            Some(Value::Array(blocks)) => blocks.as_slice(),
            Some(other) => {
                out.push(json!({"role": role, "content": other}));
                origins.push(Origin::new(role, format!("/messages/{i}/content")));
                continue;
            }
            None => {
                out.push(json!({"role": role}));
                origins.push(Origin::new(role, format!("/messages/{i}/content")));
                continue;
            }
        };
        let mut texts = Vec::new();
        let mut calls = Vec::new();
        let mut origin = Origin::new(role, format!("/messages/{i}/content"));
        for (j, b) in blocks.iter().enumerate() {
            match b.get("type").and_then(Value::as_str) {
                Some("tool_result") => {
                    let id = b.get("tool_use_id").cloned().unwrap_or(Value::Null);
                    let mut o = Origin::new("tool", format!("/messages/{i}/content/{j}/content"));
                    o.answers = id.as_str().map(str::to_owned);
                    origins.push(o);
                    let mut t = json!({
                        "role": "tool",
                        "tool_call_id": id,
                        "content": b.get("content").cloned().unwrap_or(Value::Null),
                    });
                    if b.get("is_error") == Some(&Value::Bool(true)) {
                        t["is_error"] = json!(true);
                    }
                    out.push(t);
                }
                Some("tool_use") => {
                    let id = b.get("id").cloned().unwrap_or(Value::Null);
                    origin.calls.push((
                        id.as_str().unwrap_or("").to_owned(),
                        format!("/messages/{i}/content/{j}/input"),
                    ));
                    calls.push(json!({
                        "id": id,
                        "type": "function",
                        "function": {"name": b.get("name").cloned().unwrap_or(Value::Null),
                                     "arguments": b.get("input").cloned().unwrap_or(Value::Null)},
                    }));
                }
                Some("text") => texts.push(
                    json!({"type": "text", "text": b.get("text").cloned().unwrap_or(Value::Null)}),
                ),
                // Images, documents and thinking blocks: kept whole, so a change in them
                // changes the hash.
                _ => texts.push(b.clone()),
            }
        }
        if texts.is_empty() && calls.is_empty() {
            continue;
        }
        let mut msg = Map::new();
        msg.insert("role".into(), json!(role));
        if !texts.is_empty() {
            msg.insert("content".into(), Value::Array(texts));
        }
        if !calls.is_empty() {
            msg.insert("tool_calls".into(), Value::Array(calls));
        }
        out.push(Value::Object(msg));
        origins.push(origin);
    }
    (out, origins)
}

/// A pointer into the canonical request (`/messages/3/content`) told as what it is and, where
/// the client's request has it elsewhere, where: `the tool result of call_paris_1; in the
/// request: /messages/2/content/0/content`; `None` when the pointer is not into a message.
pub fn told_as_sent(at: &str, origins: &[Origin]) -> Option<String> {
    let rest = at.strip_prefix("/messages/")?;
    let (index, field) = rest.split_once('/').unwrap_or((rest, ""));
    let o = origins.get(index.parse::<usize>().ok()?)?;
    let call = |j: &str| o.calls.get(j.parse::<usize>().ok()?);
    let (what, pointer) = match field.split('/').collect::<Vec<_>>().as_slice() {
        ["tool_calls", j, ..] => {
            let (id, pointer) = call(j)?;
            (format!("the arguments of call {id}"), pointer.clone())
        }
        _ => {
            let what = match (o.role.as_str(), &o.answers) {
                ("tool", Some(id)) => format!("the tool result of {id}"),
                ("tool", None) => "a tool result".to_owned(),
                ("system", _) => "the system text".to_owned(),
                (role, _) => format!("the {role} message"),
            };
            (what, o.content.clone())
        }
    };
    // Below the part the canonical form names (an Anthropic block's own fields), the pointer
    // goes on as the canonical one does.
    let below = field.split_once('/').map_or("", |(_, r)| r);
    let pointer = match field.starts_with("tool_calls/") {
        true => pointer,
        false if below.is_empty() => pointer,
        false => format!("{pointer}/{below}"),
    };
    Some(match pointer == at {
        true => what,
        false => format!("{what}; in the request: {pointer}"),
    })
}

/// The tools a request offers, by name (Chat's `function.name`, or the `name` of Responses and
/// Anthropic tools); `None` when it offers none.
pub fn tools_of(request: &Value) -> Option<Vec<String>> {
    let tools = request.get("tools")?.as_array()?;
    Some(
        (tools.iter())
            .filter_map(|t| {
                (t.pointer("/function/name").or_else(|| t.get("name")))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .collect(),
    )
}

pub(crate) use crate::ingest::identity::tool_definitions;

/// The canonical request a divergence is told in: `{"messages": [canonical messages],
/// "tools": [definitions]}` — each message as `input_h` hashes it (parsed back to JSON).
pub fn canonical_request(api: Api, request: &Value) -> Value {
    crate::ingest::identity::canonical_request(
        &messages_of(api, request),
        Some(&tool_definitions(request)),
    )
}

/// The first pointer, in document order, where two requests' parts (`crate::ingest::identity::parts`) differ — a part one
/// side lacks counts — with each side's hash (`None` where a side has no such part).
pub fn first_differing_part<'m>(
    recorded: &'m std::collections::BTreeMap<String, String>,
    now: &'m std::collections::BTreeMap<String, String>,
    under: &str,
) -> Option<(&'m str, Option<&'m str>, Option<&'m str>)> {
    let order = |p: &str| -> Vec<(u64, String)> {
        // Numeric segments compare as numbers (`/messages/10` after `/messages/9`).
        (p.split('/'))
            .map(|s| {
                s.parse::<u64>()
                    .map_or((u64::MAX, s.to_owned()), |n| (n, String::new()))
            })
            .collect()
    };
    (recorded.keys().chain(now.keys()))
        .filter(|k| k.starts_with(under))
        .filter(|k| recorded.get(*k) != now.get(*k))
        .min_by_key(|k| order(k))
        .map(|k| {
            (
                k.as_str(),
                recorded.get(k).map(String::as_str),
                now.get(k).map(String::as_str),
            )
        })
}

/// The JSON pointer of the first place where `a` and `b` differ (depth first, object keys in
/// order, a missing key or element a difference at its own pointer), or `None` when equal.
pub fn first_difference(a: &Value, b: &Value) -> Option<String> {
    fn walk(a: &Value, b: &Value, at: &mut String) -> bool {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
                keys.sort();
                keys.dedup();
                for k in keys {
                    let len = at.len();
                    at.push('/');
                    at.push_str(&k.replace('~', "~0").replace('/', "~1"));
                    match (x.get(k), y.get(k)) {
                        (Some(p), Some(q)) if !walk(p, q, at) => return false,
                        (Some(_), Some(_)) => {}
                        _ => return false,
                    }
                    at.truncate(len);
                }
                true
            }
            (Value::Array(x), Value::Array(y)) => {
                for i in 0..x.len().max(y.len()) {
                    let len = at.len();
                    at.push_str(&format!("/{i}"));
                    match (x.get(i), y.get(i)) {
                        (Some(p), Some(q)) if !walk(p, q, at) => return false,
                        (Some(_), Some(_)) => {}
                        _ => return false,
                    }
                    at.truncate(len);
                }
                true
            }
            _ => a == b,
        }
    }
    let mut at = String::new();
    (!walk(a, b, &mut at)).then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::identity::parts;

    fn hash(api: Api, request: &Value) -> String {
        let hasher = crate::trace::PromptHasher::unkeyed();
        crate::ingest::identity::input_hash(&hasher, &messages_of(api, request))
    }

    #[test]
    fn one_conversation_hashes_alike_in_all_three_apis() {
        let chat = json!({"messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        ]});
        let responses = json!({"instructions": "Be brief.", "input": [
            {"role": "user", "content": "Weather in Paris?"},
            {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{\"city\": \"Paris\"}"},
            {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        ]});
        let anthropic = json!({"system": "Be brief.", "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "weather", "input": {"city": "Paris"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": [{"type": "text", "text": "sunny"}]}]},
        ]});
        let h = hash(Api::Chat, &chat);
        assert_eq!(hash(Api::Responses, &responses), h);
        assert_eq!(hash(Api::Anthropic, &anthropic), h);
        let mut other = anthropic.clone();
        other["messages"][2]["content"][0]["content"][0]["text"] = json!("rain");
        assert_ne!(hash(Api::Anthropic, &other), h);
    }

    #[test]
    fn parts_name_the_first_differing_field_in_document_order() {
        let hasher = crate::trace::PromptHasher::unkeyed();
        let mut messages: Vec<Value> = (0..12)
            .map(|i| json!({"role": "user", "content": format!("m{i}")}))
            .collect();
        let tools = json!([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "required": ["x"]}}}]);
        let a = json!({"messages": messages.clone(), "tools": tools.clone()});
        messages[10]["content"] = json!("changed");
        messages[9]["content"] = json!("changed too");
        let mut b = json!({"messages": messages, "tools": tools});
        let (pa, pb) = (parts(&a, &hasher), parts(&b, &hasher));
        assert_eq!(pa.len(), 12 * 2 + 4);
        let (at, was, now) = first_differing_part(&pa, &pb, "/messages").unwrap();
        assert_eq!(at, "/messages/9/content");
        assert_eq!(was, Some(hasher.hash("\"m9\"").as_str()));
        assert_ne!(was, now);
        assert_eq!(first_differing_part(&pa, &pb, "/tools"), None);
        b["tools"][0]["function"]["parameters"]["required"] = json!(["y"]);
        let pb = parts(&b, &hasher);
        let (at, _, _) = first_differing_part(&pa, &pb, "/tools").unwrap();
        assert_eq!(at, "/tools/0/function/parameters/required");
    }

    #[test]
    fn the_first_difference_is_named_by_its_json_pointer() {
        let a = json!({"messages": [{"role": "user", "content": "a"}], "tools": [{"function": {"name": "f", "parameters": {"required": ["x"]}}}]});
        let mut b = a.clone();
        assert_eq!(first_difference(&a, &b), None);
        b["tools"][0]["function"]["parameters"]["required"] = json!(["y"]);
        assert_eq!(
            first_difference(&a, &b).as_deref(),
            Some("/tools/0/function/parameters/required/0")
        );
        // An object whose keys are no field names is one part.
        let odd = json!({"tools": [{"function": {"parameters": {"my key": 1}}}]});
        let p = parts(&odd, &crate::trace::PromptHasher::unkeyed());
        assert!(p.contains_key("/tools/0/function/parameters"), "{p:?}");
        b["messages"][0]["content"] = json!("b");
        assert_eq!(
            first_difference(&a, &b).as_deref(),
            Some("/messages/0/content")
        );
        let c = json!({"messages": [{"role": "user", "content": "a"}, {"role": "user"}]});
        assert_eq!(first_difference(&a, &c).as_deref(), Some("/messages/1"));
        let d = json!({"a/b~": 1});
        assert_eq!(
            first_difference(&d, &json!({"a/b~": 2})).as_deref(),
            Some("/a~1b~0")
        );
    }
}
