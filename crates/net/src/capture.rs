//! What a request to the model is, as the recorders see it: its conversation captured in the
//! canonical form (the hashes `input_h`, `system_h`, `request_h`, its user turns, the tools it
//! offers, the results it hands back, where each message sits in the request the client sent),
//! and how it departs from the recorded request a replay serves in its place.

use std::collections::BTreeSet;

use serde_json::Value;

use super::canonical::Api;
use super::script::Step;
use crate::trace::PromptHasher;

/// A request as the capture sees it.
#[derive(Debug, Default, Clone)]
pub struct Captured {
    /// `input_h` of the request's conversation (in the canonical form of
    /// [`super::canonical`], whichever API carried it).
    pub input_h: Option<String>,
    /// The tool names offered.
    pub tools: Option<Vec<String>>,
    /// Tool results handed back: (call id, content, whether the call succeeded).
    pub results: Vec<(String, Value, bool)>,
    /// The model asked for.
    pub model: Option<String>,
    /// The hashed input's raw text, only under the developer opt-in (for the sidecar).
    pub raw_input: Option<String>,
    /// The request's parts, hashed (`request_h`: see `crate::ingest::identity::request_parts`).
    pub parts: std::collections::BTreeMap<String, String>,
    /// The user turns of the conversation, in order, the first [`MAX_USER_TURNS`] of them:
    /// (prompt object, raw text under the developer opt-in). The recording writes the ones it
    /// has not seen as `user_message`s.
    pub users: Vec<(crate::trace::PromptRef<'static>, Option<String>)>,
    /// How many user turns the conversation has (`users` holds the first of them).
    pub users_total: usize,
    /// `system_h`: the hash of the conversation's system text (and the text, under the opt-in).
    pub system: Option<(String, Option<String>)>,
    /// Where each canonical message came from in the request the client sent.
    pub origins: Vec<super::canonical::Origin>,
}

/// The most user turns one request's capture keeps: a conversation of more (520,000 one-letter
/// messages, say) records its first ones and says how many it had.
pub const MAX_USER_TURNS: usize = 1000;

/// Reads what the capture needs from a request of `api` (the raw input text too when `raw` —
/// the developer opt-in).
pub fn capture(api: Api, request: &Value, hasher: &PromptHasher, raw: bool) -> Captured {
    let (messages, origins) = super::canonical::messages_with_origins(api, request);
    let results = (messages.iter())
        .filter(|m| {
            matches!(
                m.get("role").and_then(Value::as_str),
                Some("tool" | "function")
            )
        })
        .filter_map(|m| {
            let id = (m.get("tool_call_id").or_else(|| m.get("id")))?.as_str()?;
            let content = m.get("content").cloned().unwrap_or(Value::Null);
            let ok = m.get("is_error") != Some(&Value::Bool(true));
            Some((id.to_owned(), content, ok))
        })
        .collect();
    let raw_input = raw.then(|| crate::ingest::identity::conversation_text(&messages));
    let tools = super::canonical::tool_definitions(request);
    let prompt = |text: String| (hasher.prompt(&text), raw.then_some(text));
    let turns = (messages.iter())
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .filter(|m| m.get("content").is_some_and(|c| !c.is_null()));
    // Counted without reading their text: only the first ones are hashed.
    let users_total = turns.clone().count();
    let users = (turns.take(MAX_USER_TURNS))
        .filter_map(|m| m.get("content").and_then(crate::ingest::content_text))
        .map(prompt)
        .collect();
    let system = crate::ingest::identity::system_text(&messages).map(|t| {
        let (p, raw) = prompt(t);
        (p.h.to_string(), raw)
    });
    Captured {
        users,
        users_total,
        system,
        origins,
        input_h: Some(crate::ingest::identity::input_hash(hasher, &messages)),
        parts: crate::ingest::identity::request_parts(&messages, Some(&tools), hasher),
        tools: super::canonical::tools_of(request),
        results,
        model: request
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_owned),
        raw_input,
    }
}

/// Why request `n` cannot be matched against its recording, when the recording has no
/// conversation for it (a door that did not capture the content wrote no `input_h`).
pub fn unmatchable(n: usize, step: &Step) -> Option<String> {
    step.input_h.is_none().then(|| format!(
        "request {n}: the recording has no conversation for this request (content was not captured where it was recorded, so it carries no `input_h`): it cannot be matched, only served in order"
    ))
}

/// How a request departs from the recording, one sentence per field; empty when it does not.
/// Where the recording keeps its request's parts, the sentence names the first differing field
/// by its JSON pointer into the canonical request, with both values' hashes.
pub fn divergences(n: usize, step: &Step, now: &Captured) -> Vec<String> {
    let mut out = Vec::new();
    let part = |under: &str| {
        let recorded = step.request_h.as_ref()?;
        let (at, was, is) = super::canonical::first_differing_part(recorded, &now.parts, under)?;
        let sent = super::canonical::told_as_sent(at, &now.origins)
            .map_or_else(String::new, |s| format!(" ({s})"));
        Some(format!(
            " at {at}{sent}: recorded {}, now {}",
            was.unwrap_or("absent"),
            is.unwrap_or("absent")
        ))
    };
    if let (Some(recorded), Some(now_h)) = (&step.input_h, &now.input_h) {
        if recorded != now_h {
            out.push(match part("/messages") {
                Some(at) => format!("request {n}: input_h differs{at}"),
                None => format!("request {n}: input_h differs: recorded {recorded}, now {now_h}"),
            });
        }
    }
    let mut tools_differ = false;
    if let Some(recorded) = &step.tools_offered {
        // A request that offers no tools (`tools` absent or `null`) where the recording offered
        // some differs as much as one offering others.
        let empty = Vec::new();
        let now_t = now.tools.as_ref().unwrap_or(&empty);
        let (a, b): (BTreeSet<&str>, BTreeSet<&str>) = (
            recorded.iter().map(String::as_str).collect(),
            now_t.iter().map(String::as_str).collect(),
        );
        if a != b {
            tools_differ = true;
            let list = |s: BTreeSet<&str>| match s.is_empty() {
                true => "none".to_owned(),
                false => s.into_iter().collect::<Vec<_>>().join(", "),
            };
            out.push(format!(
                "request {n}: tools offered differ: recorded {}, now {}",
                list(a),
                list(b)
            ));
        }
    }
    // The same tools by name, defined otherwise (a parameter made required, say) — where the
    // recording knows the definitions (a collected span may not).
    let defined =
        (step.request_h.as_ref()).is_some_and(|r| r.keys().any(|k| k.starts_with("/tools")));
    if !tools_differ && defined {
        if let Some(at) = part("/tools") {
            out.push(format!("request {n}: tool definitions differ{at}"));
        }
    }
    out
}
