//! What a model answered, read from an upstream response of any of the three APIs — a JSON body,
//! or a server-sent-event stream fed piece by piece as it passes through the recorder
//! ([`StreamReader`]), whatever the chunking.

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

fn string(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str).map(str::to_owned)
}

fn arguments_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// Usage in any of the three APIs' names. Anthropic counts cache reads and writes apart from
/// `input_tokens`; the trace counts them in it (as OpenAI does).
fn usage(api: Api, u: &Value) -> Option<Usage> {
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

fn chat_finish(reason: &str) -> Option<Finish> {
    match reason {
        "stop" => Some(Finish::Stop),
        "tool_calls" | "function_call" => Some(Finish::ToolCall),
        "length" => Some(Finish::Length),
        "content_filter" => Some(Finish::ContentFilter),
        _ => None,
    }
}

fn anthropic_finish(reason: &str) -> Option<Finish> {
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

/// Splits a server-sent-event stream into events (`event:` and `data:` fields; a blank line
/// ends one), whatever pieces it arrives in: a line cut in two, or a UTF-8 sequence.
#[derive(Debug, Default)]
struct Sse {
    line: Vec<u8>,
    event: Option<String>,
    data: Option<String>,
}

impl Sse {
    fn feed(&mut self, bytes: &[u8], mut on: impl FnMut(Option<&str>, &str)) {
        for &b in bytes {
            if b != b'\n' {
                self.line.push(b);
                continue;
            }
            let mut line = std::mem::take(&mut self.line);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line = String::from_utf8_lossy(&line);
            if line.is_empty() {
                if let Some(data) = self.data.take() {
                    on(self.event.as_deref(), &data);
                }
                self.event = None;
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((&line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => self.event = Some(value.to_owned()),
                "data" => match &mut self.data {
                    Some(d) => {
                        d.push('\n');
                        d.push_str(value);
                    }
                    None => self.data = Some(value.to_owned()),
                },
                _ => {}
            }
        }
    }
}

/// Reads a streamed answer as it passes, piece by piece.
#[derive(Debug)]
pub struct StreamReader {
    api: Api,
    sse: Sse,
    answer: Answer,
    /// Tool calls being assembled, by their index in the stream (Chat's `index`, Anthropic's
    /// content block, Responses' output index).
    calls: std::collections::BTreeMap<u64, PlannedCall>,
    /// Anthropic: input usage from `message_start`, output from `message_delta`.
    input_usage: Option<Usage>,
}

impl StreamReader {
    /// A reader for a stream of `api`.
    pub fn new(api: Api) -> StreamReader {
        StreamReader {
            api,
            sse: Sse::default(),
            answer: Answer::default(),
            calls: Default::default(),
            input_usage: None,
        }
    }

    /// Reads the next piece of the stream.
    pub fn feed(&mut self, bytes: &[u8]) {
        let mut events = Vec::new();
        self.sse.feed(bytes, |event, data| {
            events.push((event.map(str::to_owned), data.to_owned()))
        });
        for (event, data) in events {
            self.event(event.as_deref(), &data);
        }
    }

    /// The answer as far as it arrived.
    pub fn finish(mut self) -> Answer {
        // A stream may end without a blank line after its last event.
        self.feed(b"\n\n");
        self.answer.tool_calls = std::mem::take(&mut self.calls).into_values().collect();
        self.answer
    }

    fn text(&mut self, piece: &str) {
        self.answer
            .text
            .get_or_insert_with(String::new)
            .push_str(piece);
    }

    fn event(&mut self, event: Option<&str>, data: &str) {
        if self.api == Api::Chat && data.trim() == "[DONE]" {
            self.answer.complete = true;
            return;
        }
        let Ok(v) = serde_json::from_str::<Value>(data) else {
            return;
        };
        let kind = (v.get("type").and_then(Value::as_str))
            .map(str::to_owned)
            .or_else(|| event.map(str::to_owned))
            .unwrap_or_default();
        match self.api {
            Api::Chat => self.chat(&v),
            Api::Responses => self.responses(&kind, &v),
            Api::Anthropic => self.anthropic(&kind, &v),
        }
    }

    fn chat(&mut self, v: &Value) {
        if let Some(m) = string(v.get("model")) {
            self.answer.model = Some(m);
        }
        if let Some(u) = v.get("usage").filter(|u| !u.is_null()) {
            self.answer.usage = usage(Api::Chat, u);
        }
        if let Some(e) = v.pointer("/error/message").and_then(Value::as_str) {
            self.answer.error = Some(e.to_owned());
        }
        let Some(choice) = v.pointer("/choices/0") else {
            return;
        };
        if let Some(t) = choice.pointer("/delta/content").and_then(Value::as_str) {
            self.text(t);
        }
        for tc in (choice
            .pointer("/delta/tool_calls")
            .and_then(Value::as_array))
        .into_iter()
        .flatten()
        {
            let index = tc.get("index").and_then(Value::as_u64).unwrap_or(0);
            let c = self.calls.entry(index).or_insert_with(|| PlannedCall {
                id: String::new(),
                name: String::new(),
                arguments: String::new(),
            });
            if let Some(id) = tc.get("id").and_then(Value::as_str) {
                c.id = id.to_owned();
            }
            if let Some(n) = tc.pointer("/function/name").and_then(Value::as_str) {
                c.name.push_str(n);
            }
            if let Some(a) = tc.pointer("/function/arguments").and_then(Value::as_str) {
                c.arguments.push_str(a);
            }
        }
        if let Some(f) = choice.get("finish_reason").and_then(Value::as_str) {
            self.answer.finish = chat_finish(f);
        }
    }

    fn responses(&mut self, kind: &str, v: &Value) {
        let index = v.get("output_index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "response.output_text.delta" => {
                if let Some(d) = v.get("delta").and_then(Value::as_str) {
                    self.text(d);
                }
            }
            "response.output_item.added" | "response.output_item.done"
                if v.pointer("/item/type").and_then(Value::as_str) == Some("function_call") =>
            {
                let item = &v["item"];
                let c = self.calls.entry(index).or_insert_with(|| PlannedCall {
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                });
                c.id = string(item.get("call_id")).unwrap_or_else(|| c.id.clone());
                c.name = string(item.get("name")).unwrap_or_else(|| c.name.clone());
                if kind == "response.output_item.done" {
                    c.arguments = arguments_text(item.get("arguments"));
                }
            }
            "response.function_call_arguments.delta" => {
                if let (Some(c), Some(d)) = (
                    self.calls.get_mut(&index),
                    v.get("delta").and_then(Value::as_str),
                ) {
                    c.arguments.push_str(d);
                }
            }
            "response.created" | "response.in_progress" => {
                self.answer.model = string(v.pointer("/response/model"));
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                // The final event carries the whole response: it is the answer.
                let whole = Answer::from_json(Api::Responses, &v["response"]);
                self.calls = whole
                    .tool_calls
                    .iter()
                    .cloned()
                    .enumerate()
                    .map(|(i, c)| (i as u64, c))
                    .collect();
                self.answer = Answer {
                    tool_calls: Vec::new(),
                    ..whole
                };
            }
            "error" => {
                self.answer.error = Some(string(v.get("message")).unwrap_or_else(|| v.to_string()));
            }
            _ => {}
        }
    }

    fn anthropic(&mut self, kind: &str, v: &Value) {
        let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "message_start" => {
                self.answer.model = string(v.pointer("/message/model"));
                self.input_usage = v
                    .pointer("/message/usage")
                    .and_then(|u| usage(Api::Anthropic, u));
                self.answer.usage = self.input_usage;
            }
            "content_block_start" => {
                let block = &v["content_block"];
                match block.get("type").and_then(Value::as_str) {
                    Some("tool_use") => {
                        self.calls.insert(
                            index,
                            PlannedCall {
                                id: string(block.get("id")).unwrap_or_default(),
                                name: string(block.get("name")).unwrap_or_default(),
                                arguments: String::new(),
                            },
                        );
                    }
                    Some("text") => {
                        if let Some(t) = block.get("text").and_then(Value::as_str) {
                            self.text(t);
                        }
                    }
                    _ => {}
                }
            }
            "content_block_delta" => match v.pointer("/delta/type").and_then(Value::as_str) {
                Some("text_delta") => {
                    if let Some(t) = v.pointer("/delta/text").and_then(Value::as_str) {
                        self.text(t);
                    }
                }
                Some("input_json_delta") => {
                    if let (Some(c), Some(p)) = (
                        self.calls.get_mut(&index),
                        v.pointer("/delta/partial_json").and_then(Value::as_str),
                    ) {
                        c.arguments.push_str(p);
                    }
                }
                _ => {}
            },
            "content_block_stop" => {
                // A tool call with no input deltas has an empty object for arguments.
                if let Some(c) = self
                    .calls
                    .get_mut(&index)
                    .filter(|c| c.arguments.is_empty())
                {
                    c.arguments = "{}".to_owned();
                }
            }
            "message_delta" => {
                if let Some(r) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.answer.finish = anthropic_finish(r);
                }
                if let Some(u) = v.get("usage") {
                    let mut merged = self.input_usage.unwrap_or_default();
                    if let Some(o) = u.get("output_tokens").and_then(Value::as_u64) {
                        merged.output_tokens = o;
                    }
                    // Later API versions repeat the input counts here; they win.
                    if let Some(full) = usage(Api::Anthropic, u) {
                        if u.get("input_tokens").is_some() {
                            merged = Usage {
                                output_tokens: merged.output_tokens,
                                ..full
                            };
                        }
                    }
                    self.answer.usage = Some(merged);
                }
            }
            "message_stop" => self.answer.complete = true,
            "error" => {
                self.answer.error =
                    Some(string(v.pointer("/error/message")).unwrap_or_else(|| v.to_string()));
            }
            _ => {}
        }
    }
}
