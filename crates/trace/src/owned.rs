//! Events that outlive the bytes they were read from, and a walk over every text an event
//! holds: what a recorder needs to keep typed events it checked with the reader, and to redact a
//! credential from all of them before it writes the trace.

use super::json::{Json, Str};
use super::model::*;

/// A text an event holds, handed to [`Event::texts_mut`]: a string field, or a JSON value
/// (a tool's output, a call's arguments, a state) as its raw text.
#[derive(Debug)]
pub enum TextMut<'e, 'a> {
    /// A string field.
    Str(&'e mut Str<'a>),
    /// A JSON value.
    Json(&'e mut Json<'a>),
}

fn own(s: Str<'_>) -> Str<'static> {
    s.into_owned()
}

fn own_opt(s: Option<Str<'_>>) -> Option<Str<'static>> {
    s.map(Str::into_owned)
}

fn own_json(j: Option<Json<'_>>) -> Option<Json<'static>> {
    j.map(Json::into_owned)
}

impl Args<'_> {
    /// An owned copy.
    pub fn into_owned(self) -> Args<'static> {
        match self {
            Args::Object(j) => Args::Object(j.into_owned()),
            Args::Text(s) => Args::Text(own(s)),
        }
    }

    fn texts_mut<'e, 'a>(this: &'e mut Args<'a>, f: &mut dyn FnMut(TextMut<'e, 'a>)) {
        match this {
            Args::Object(j) => f(TextMut::Json(j)),
            Args::Text(s) => f(TextMut::Str(s)),
        }
    }
}

impl PromptRef<'_> {
    /// An owned copy.
    pub fn into_owned(self) -> PromptRef<'static> {
        PromptRef {
            h: own(self.h),
            len: self.len,
        }
    }
}

impl Inference<'_> {
    /// An owned copy.
    pub fn into_owned(self) -> Inference<'static> {
        let strs = |v: Option<Vec<Str<'_>>>| v.map(|v| v.into_iter().map(own).collect());
        Inference {
            request_id: own_opt(self.request_id),
            model: own_opt(self.model),
            input_h: own_opt(self.input_h),
            system_h: own_opt(self.system_h),
            tools_offered: strs(self.tools_offered),
            consumes: strs(self.consumes),
            output: self.output.map(|o| InferenceOutput {
                text: own_opt(o.text),
                tool_calls: o.tool_calls.map(|calls| {
                    (calls.into_iter())
                        .map(|c| PlannedCall {
                            call_id: own(c.call_id),
                            tool: own(c.tool),
                            args: c.args.into_owned(),
                        })
                        .collect()
                }),
            }),
            usage: self.usage,
            finish: self.finish,
            latency_ms: self.latency_ms,
            request_h: (self.request_h)
                .map(|parts| parts.into_iter().map(|(k, v)| (own(k), own(v))).collect()),
            truncated: self.truncated,
            llm_calls: self.llm_calls,
        }
    }
}

impl Event<'_> {
    /// An owned copy, borrowing nothing from the bytes it was read from.
    pub fn into_owned(self) -> Event<'static> {
        use EventBody as B;
        let body = match self.body {
            B::UserMessage { prompt, id } => B::UserMessage {
                prompt: prompt.into_owned(),
                id: own_opt(id),
            },
            B::Inference(i) => B::Inference(Box::new(i.into_owned())),
            B::ToolCall {
                call_id,
                tool,
                args,
            } => B::ToolCall {
                call_id: own(call_id),
                tool: own(tool),
                args: args.into_owned(),
            },
            B::ToolResult {
                call_id,
                ok,
                output,
                output_h,
                error,
            } => B::ToolResult {
                call_id: own(call_id),
                ok,
                output: own_json(output),
                output_h: own_opt(output_h),
                error: own_opt(error),
            },
            B::ApprovalRequest {
                tool,
                call_id,
                approval_id,
                reason,
            } => B::ApprovalRequest {
                tool: own_opt(tool),
                call_id: own_opt(call_id),
                approval_id: own_opt(approval_id),
                reason: own_opt(reason),
            },
            B::ApprovalDecision {
                granted,
                approval_id,
                call_id,
                tool,
                by,
            } => B::ApprovalDecision {
                granted,
                approval_id: own_opt(approval_id),
                call_id: own_opt(call_id),
                tool: own_opt(tool),
                by: own_opt(by),
            },
            B::Message {
                id,
                phase,
                text,
                reply_to,
                channel,
            } => B::Message {
                id: own(id),
                phase,
                text: own(text),
                reply_to: own_opt(reply_to),
                channel: own_opt(channel),
            },
            B::MessageEdit { id, text, phase } => B::MessageEdit {
                id: own(id),
                text: own(text),
                phase,
            },
            B::MessageDelete { id } => B::MessageDelete { id: own(id) },
            B::Artifact {
                path,
                h,
                bytes,
                text,
                mtime_ms,
            } => B::Artifact {
                path: own(path),
                h: own(h),
                bytes,
                text: own_opt(text),
                mtime_ms,
            },
            B::StateChange { path, from, to } => B::StateChange {
                path: own(path),
                from: own_json(from),
                to: own_json(to),
            },
            B::Error {
                message,
                code,
                input_h,
            } => B::Error {
                message: own(message),
                code: own_json(code),
                input_h: own_opt(input_h),
            },
            B::Note { text } => B::Note { text: own(text) },
            B::FinalAnswer { text } => B::FinalAnswer { text: own(text) },
            B::RunEnd { status, error } => B::RunEnd {
                status,
                error: own_opt(error),
            },
            B::Unknown { kind } => B::Unknown { kind },
        };
        Event {
            seq: self.seq,
            ts_ms: self.ts_ms,
            ts_sub_ns: self.ts_sub_ns,
            copied: self.copied,
            line: self.line,
            body,
        }
    }
}

impl<'a> Event<'a> {
    /// Hands `f` every text the event holds but its kind: each string field (ids, names,
    /// hashes, messages) and each JSON value, so that a recorder can redact a credential from
    /// all of them.
    pub fn texts_mut<'e>(&'e mut self, f: &mut dyn FnMut(TextMut<'e, 'a>)) {
        use EventBody as B;
        let opt = |s: &'e mut Option<Str<'a>>, f: &mut dyn FnMut(TextMut<'e, 'a>)| {
            if let Some(s) = s {
                f(TextMut::Str(s));
            }
        };
        fn json<'e, 'a>(j: &'e mut Option<Json<'a>>, f: &mut dyn FnMut(TextMut<'e, 'a>)) {
            if let Some(j) = j {
                f(TextMut::Json(j));
            }
        }
        match &mut self.body {
            B::UserMessage { prompt, id } => {
                f(TextMut::Str(&mut prompt.h));
                opt(id, f);
            }
            B::Inference(i) => {
                let i = &mut **i;
                for s in [
                    &mut i.request_id,
                    &mut i.model,
                    &mut i.input_h,
                    &mut i.system_h,
                ] {
                    opt(s, f);
                }
                let lists = [&mut i.tools_offered, &mut i.consumes];
                for s in lists.into_iter().flatten().flatten() {
                    f(TextMut::Str(s));
                }
                if let Some(o) = &mut i.output {
                    opt(&mut o.text, f);
                    for c in o.tool_calls.iter_mut().flatten() {
                        f(TextMut::Str(&mut c.call_id));
                        f(TextMut::Str(&mut c.tool));
                        Args::texts_mut(&mut c.args, f);
                    }
                }
                for (k, v) in i.request_h.iter_mut().flatten() {
                    f(TextMut::Str(k));
                    f(TextMut::Str(v));
                }
            }
            B::ToolCall {
                call_id,
                tool,
                args,
            } => {
                f(TextMut::Str(call_id));
                f(TextMut::Str(tool));
                Args::texts_mut(args, f);
            }
            B::ToolResult {
                call_id,
                output,
                output_h,
                error,
                ..
            } => {
                f(TextMut::Str(call_id));
                json(output, f);
                opt(output_h, f);
                opt(error, f);
            }
            B::ApprovalRequest {
                tool,
                call_id,
                approval_id,
                reason,
            } => [tool, call_id, approval_id, reason]
                .into_iter()
                .for_each(|s| opt(s, f)),
            B::ApprovalDecision {
                approval_id,
                call_id,
                tool,
                by,
                ..
            } => [approval_id, call_id, tool, by]
                .into_iter()
                .for_each(|s| opt(s, f)),
            B::Message {
                id,
                text,
                reply_to,
                channel,
                ..
            } => {
                f(TextMut::Str(id));
                f(TextMut::Str(text));
                opt(reply_to, f);
                opt(channel, f);
            }
            B::MessageEdit { id, text, .. } => {
                f(TextMut::Str(id));
                f(TextMut::Str(text));
            }
            B::MessageDelete { id } => f(TextMut::Str(id)),
            B::Artifact { path, h, text, .. } => {
                f(TextMut::Str(path));
                f(TextMut::Str(h));
                opt(text, f);
            }
            B::StateChange { path, from, to } => {
                f(TextMut::Str(path));
                json(from, f);
                json(to, f);
            }
            B::Error {
                message,
                code,
                input_h,
            } => {
                f(TextMut::Str(message));
                json(code, f);
                opt(input_h, f);
            }
            B::Note { text } | B::FinalAnswer { text } => f(TextMut::Str(text)),
            B::RunEnd { error, .. } => opt(error, f),
            B::Unknown { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owned_event_writes_the_same_line_and_every_text_is_walked() {
        let h = format!("b3:{}", "0".repeat(64));
        let line = r#"{"kind":"inference","seq":3,"ts_ms":5,"model":"m","input_h":"H","tools_offered":["t"],"consumes":["c0"],"output":{"text":"hi","tool_calls":[{"call_id":"c1","tool":"w","args":{"k":"v"}}]},"finish":"tool_call","request_h":{"/messages/0":"H"}}"#
            .replace('H', &h);
        let text = format!(
            "{{\"kind\":\"header\",\"format\":\"tracereplay.trace\",\"version\":1,\"scenario\":\"s\",\"case\":\"c\"}}\n{{\"kind\":\"user_message\",\"seq\":1,\"prompt\":{{\"h\":\"{h}\",\"len\":1}}}}\n{line}\n{{\"kind\":\"tool_result\",\"seq\":4,\"call_id\":\"c1\",\"ok\":false,\"output\":{{\"x\":1}},\"error\":\"boom\"}}\n"
        );
        let file = crate::TraceFile::from_bytes("t", text.into_bytes(), false);
        let seal = file.verify_seal(false).unwrap();
        let parsed = crate::parse_trace(&file, &seal, crate::Limits::default()).unwrap();
        let written = |e: &Event<'_>| serde_json::to_string(e).unwrap();
        let mut owned: Vec<Event<'static>> = Vec::new();
        for e in &parsed.trace.events {
            owned.push(e.clone().into_owned());
            assert_eq!(written(e), written(owned.last().unwrap()));
        }
        let mut seen = Vec::new();
        for e in &mut owned {
            e.texts_mut(&mut |t| match t {
                TextMut::Str(s) => seen.push(s.to_string()),
                TextMut::Json(j) => seen.push(j.raw().to_owned()),
            });
        }
        for want in [
            "m",
            h.as_str(),
            "t",
            "c0",
            "hi",
            "c1",
            "w",
            r#"{"k":"v"}"#,
            "/messages/0",
        ] {
            assert!(
                seen.iter().any(|s| s == want),
                "{want} not walked: {seen:?}"
            );
        }
        assert!(seen.iter().any(|s| s == "boom") && seen.iter().any(|s| s == r#"{"x":1}"#));
        // A text changed through the walk is what is written.
        owned[1].texts_mut(&mut |t| {
            if let TextMut::Str(s) = t
                && s.as_str() == "hi"
            {
                *s = Str::from("[redacted]");
            }
        });
        assert!(written(&owned[1]).contains(r#""text":"[redacted]""#));
    }
}
