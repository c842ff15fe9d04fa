//! Reading a streamed answer as it passes (server-sent events of each API), bounded: what it
//! keeps of an answer never passes [`ANSWER_KEEP`].

use serde_json::Value;

use super::answer::{Answer, anthropic_finish, arguments_text, chat_finish, string, usage};
use super::canonical::Api;
use super::script::PlannedCall;
use crate::trace::Usage;

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
    /// Whether the answer outgrew [`ANSWER_KEEP`]: from then on nothing more is read or kept
    /// (the bytes still pass to the client).
    over: bool,
}

/// The most of an answer's text and tool calls recorded, in bytes: an inference must stay a
/// line the trace reader takes (16 MiB), with room for its request's hashes. A larger answer
/// is recorded up to here, as too large.
pub const ANSWER_KEEP: usize = 8 << 20;

impl StreamReader {
    /// A reader for a stream of `api`.
    pub fn new(api: Api) -> StreamReader {
        StreamReader {
            api,
            sse: Sse::default(),
            answer: Answer::default(),
            calls: Default::default(),
            input_usage: None,
            over: false,
        }
    }

    /// Whether the answer outgrew [`ANSWER_KEEP`] (what was kept is its first part).
    pub fn over(&self) -> bool {
        self.over
    }

    /// Bytes of text and tool calls kept so far, and the SSE line and event being read.
    fn held(&self) -> usize {
        self.answer.text.as_ref().map_or(0, String::len)
            + (self.calls.values())
                .map(|c| c.id.len() + c.name.len() + c.arguments.len())
                .sum::<usize>()
            + self.sse.line.len()
            + self.sse.data.as_ref().map_or(0, String::len)
    }

    /// Reads the next piece of the stream.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.over {
            return;
        }
        // A line or an event that never ends is read no further than the budget.
        let room = ANSWER_KEEP.saturating_sub(self.held());
        let bytes = match bytes.len() > room {
            true => {
                self.over = true;
                &bytes[..room]
            }
            false => bytes,
        };
        let mut events = Vec::new();
        self.sse.feed(bytes, |event, data| {
            events.push((event.map(str::to_owned), data.to_owned()))
        });
        for (event, data) in events {
            self.event(event.as_deref(), &data);
        }
    }

    /// The answer as far as it arrived, and whether it outgrew [`ANSWER_KEEP`] (then it is its
    /// first part).
    pub fn finish(mut self) -> (Answer, bool) {
        // A stream may end without a blank line after its last event.
        if !self.over {
            self.feed(b"\n\n");
        }
        self.answer.tool_calls = std::mem::take(&mut self.calls).into_values().collect();
        let over = self.answer.bound(ANSWER_KEEP) || self.over;
        (self.answer, over)
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
        // An error the stream carries in its data (`{"error": {"message": …}}`), whatever the
        // API: kept, so the recording says what went wrong.
        if let Some(e) = v.get("error").filter(|e| e.is_object()) {
            let message = (e.get("message").and_then(Value::as_str))
                .map_or_else(|| e.to_string(), str::to_owned);
            self.answer.error.get_or_insert(message);
        }
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
