//! What a model answered, read from an upstream response of any of the three APIs — a JSON body,
//! or a server-sent-event stream fed piece by piece as it passes through the recorder
//! ([`StreamReader`](super::stream_reader::StreamReader)), whatever the chunking.

use serde_json::{Value, json};

use super::canonical::Api;
use super::script::{PlannedCall, Step};
use crate::trace::{Finish, Usage};

/// One answer: the recorded step it becomes, and whether it arrived whole.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    /// The model that answered.
    pub model: Option<String>,
    /// Assistant text.
    pub text: Option<String>,
    /// Tool calls planned (one batch).
    pub tool_calls: Vec<PlannedCall>,
    /// Why the model stopped.
    pub finish: Option<Finish>,
    /// Token usage.
    pub usage: Option<Usage>,
    /// Whether the answer arrived whole: the JSON body parsed, or the stream's final event seen.
    pub complete: bool,
    /// An error the stream itself carried (Anthropic's `error` event, `response.failed`).
    pub error: Option<String>,
}

impl Answer {
    /// The answer as a script step (for [`super::record::Recording::inference`]).
    pub fn step(&self) -> Step {
        Step {
            seq: 0,
            ts_ms: None,
            model: self.model.clone(),
            text: self.text.clone().filter(|t| !t.is_empty()),
            tool_calls: self.tool_calls.clone(),
            finish: self.finish,
            usage: self.usage,
            input_h: None,
            tools_offered: None,
            request_h: None,
        }
    }

    /// Bytes of text and tool calls the answer holds.
    fn size(&self) -> usize {
        self.text.as_ref().map_or(0, String::len)
            + (self.tool_calls.iter())
                .map(|c| c.id.len() + c.name.len() + c.arguments.len())
                .sum::<usize>()
    }

    /// Cuts the answer to at most `limit` bytes of text and tool calls (the text at a character
    /// boundary; calls that do not fit left out); `true` when it was larger.
    pub fn bound(&mut self, limit: usize) -> bool {
        if self.size() <= limit {
            return false;
        }
        let mut room = limit;
        if let Some(t) = &mut self.text {
            let mut cut = t.len().min(room);
            while !t.is_char_boundary(cut) {
                cut -= 1;
            }
            t.truncate(cut);
            room -= cut;
        }
        self.tool_calls.retain(|c| {
            let n = c.id.len() + c.name.len() + c.arguments.len();
            let fits = n <= room;
            room -= if fits { n } else { 0 };
            fits
        });
        true
    }

    /// What arrived, in a sentence (for a truncated answer's `error` event).
    pub fn arrived(&self) -> String {
        let text = self.text.as_deref().unwrap_or("");
        let mut parts = vec![format!("{} characters of text", text.chars().count())];
        if !self.tool_calls.is_empty() {
            let names: Vec<&str> = self.tool_calls.iter().map(|c| c.name.as_str()).collect();
            parts.push(format!("tool calls {}", names.join(", ")));
        }
        if let Some(u) = self.usage {
            parts.push(format!(
                "usage {} input / {} output tokens",
                u.input_tokens, u.output_tokens
            ));
        }
        let mut s = parts.join(", ");
        if !text.is_empty() {
            let excerpt: String = text.chars().take(2000).collect();
            s.push_str(&format!("; text so far: {}", json!(excerpt)));
        }
        s
    }

    /// Reads a whole (not streamed) response body of `api`.
    pub fn from_json(api: Api, body: &Value) -> Answer {
        let mut a = match api {
            Api::Chat => chat_json(body),
            Api::Responses => responses_json(body),
            Api::Anthropic => anthropic_json(body),
        };
        a.complete = true;
        a
    }
}

pub(super) fn string(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str).map(str::to_owned)
}

pub(super) fn arguments_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// Usage in any of the three APIs' names. Anthropic counts cache reads and writes apart from
/// `input_tokens`; the trace counts them in it (as OpenAI does).
pub(super) fn usage(api: Api, u: &Value) -> Option<Usage> {
    let n = |k: &str| u.get(k).and_then(Value::as_u64);
    let detail = |a: &str, k: &str| u.get(a).and_then(|d| d.get(k)).and_then(Value::as_u64);
    Some(match api {
        Api::Anthropic => {
            let (read, write) = (
                n("cache_read_input_tokens"),
                n("cache_creation_input_tokens"),
            );
            Usage {
                input_tokens: n("input_tokens")?
                    .saturating_add(read.unwrap_or(0))
                    .saturating_add(write.unwrap_or(0)),
                output_tokens: n("output_tokens").unwrap_or(0),
                cache_read_tokens: read,
                cache_write_tokens: write,
                ..Usage::default()
            }
        }
        Api::Chat | Api::Responses => Usage {
            input_tokens: n("prompt_tokens").or_else(|| n("input_tokens"))?,
            output_tokens: n("completion_tokens").or_else(|| n("output_tokens"))?,
            cache_read_tokens: detail("prompt_tokens_details", "cached_tokens")
                .or_else(|| detail("input_tokens_details", "cached_tokens")),
            reasoning_tokens: detail("completion_tokens_details", "reasoning_tokens")
                .or_else(|| detail("output_tokens_details", "reasoning_tokens")),
            ..Usage::default()
        },
    })
}

pub(super) fn chat_finish(reason: &str) -> Option<Finish> {
    match reason {
        "stop" => Some(Finish::Stop),
        "tool_calls" | "function_call" => Some(Finish::ToolCall),
        "length" => Some(Finish::Length),
        "content_filter" => Some(Finish::ContentFilter),
        _ => None,
    }
}

pub(super) fn anthropic_finish(reason: &str) -> Option<Finish> {
    match reason {
        "end_turn" | "stop_sequence" | "pause_turn" => Some(Finish::Stop),
        "tool_use" => Some(Finish::ToolCall),
        "max_tokens" | "model_context_window_exceeded" => Some(Finish::Length),
        "refusal" => Some(Finish::ContentFilter),
        _ => None,
    }
}

fn chat_json(body: &Value) -> Answer {
    let choice = body.pointer("/choices/0");
    let message = choice.and_then(|c| c.get("message"));
    Answer {
        model: string(body.get("model")),
        text: message.and_then(|m| string(m.get("content"))),
        tool_calls: (message
            .and_then(|m| m.get("tool_calls"))
            .and_then(Value::as_array))
        .into_iter()
        .flatten()
        .map(|c| PlannedCall {
            id: string(c.get("id")).unwrap_or_default(),
            name: string(c.pointer("/function/name")).unwrap_or_default(),
            arguments: arguments_text(c.pointer("/function/arguments")),
        })
        .collect(),
        finish: (choice
            .and_then(|c| c.get("finish_reason"))
            .and_then(Value::as_str))
        .and_then(chat_finish),
        usage: body.get("usage").and_then(|u| usage(Api::Chat, u)),
        ..Answer::default()
    }
}

fn responses_json(body: &Value) -> Answer {
    let mut text = String::new();
    let mut calls = Vec::new();
    for item in (body.get("output").and_then(Value::as_array))
        .into_iter()
        .flatten()
    {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                for part in (item.get("content").and_then(Value::as_array))
                    .into_iter()
                    .flatten()
                {
                    if part.get("type").and_then(Value::as_str) == Some("output_text") {
                        text.push_str(part.get("text").and_then(Value::as_str).unwrap_or(""));
                    }
                }
            }
            Some("function_call") => calls.push(PlannedCall {
                id: string(item.get("call_id")).unwrap_or_default(),
                name: string(item.get("name")).unwrap_or_default(),
                arguments: arguments_text(item.get("arguments")),
            }),
            _ => {}
        }
    }
    let finish = match body.get("status").and_then(Value::as_str) {
        Some("completed") if !calls.is_empty() => Some(Finish::ToolCall),
        Some("completed") => Some(Finish::Stop),
        Some("incomplete") => match body
            .pointer("/incomplete_details/reason")
            .and_then(Value::as_str)
        {
            Some("content_filter") => Some(Finish::ContentFilter),
            _ => Some(Finish::Length),
        },
        Some("failed") => Some(Finish::Error),
        _ => None,
    };
    Answer {
        model: string(body.get("model")),
        text: (!text.is_empty()).then_some(text),
        tool_calls: calls,
        finish,
        usage: body.get("usage").and_then(|u| usage(Api::Responses, u)),
        error: (body.get("status").and_then(Value::as_str) == Some("failed")).then(|| {
            body.pointer("/error/message")
                .and_then(Value::as_str)
                .unwrap_or("the response failed")
                .to_owned()
        }),
        ..Answer::default()
    }
}

fn anthropic_json(body: &Value) -> Answer {
    let mut text = String::new();
    let mut calls = Vec::new();
    for block in (body.get("content").and_then(Value::as_array))
        .into_iter()
        .flatten()
    {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(block.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("tool_use") => calls.push(PlannedCall {
                id: string(block.get("id")).unwrap_or_default(),
                name: string(block.get("name")).unwrap_or_default(),
                arguments: block
                    .get("input")
                    .map_or_else(|| "{}".to_owned(), Value::to_string),
            }),
            _ => {}
        }
    }
    Answer {
        model: string(body.get("model")),
        text: (!text.is_empty()).then_some(text),
        tool_calls: calls,
        finish: body
            .get("stop_reason")
            .and_then(Value::as_str)
            .and_then(anthropic_finish),
        usage: body.get("usage").and_then(|u| usage(Api::Anthropic, u)),
        ..Answer::default()
    }
}
