//! Checking and building an event of a known kind from its typed line: required fields, enum
//! values, prompt hashes, planned calls and arguments; each problem named by line (the order
//! rules, message ids among them, are `super::order`'s).

use serde_json::value::RawValue;

use super::error::TraceError;
use super::json::{Json, Str};
use super::model::*;
use super::parse::Parser;
use super::raw::*;
use super::seal::is_hash;
use super::shape::{self, describe};

impl Parser<'_> {
    pub(super) fn body<'a>(
        &self,
        n: usize,
        kind: &'static str,
        raw: &mut RawEvent<'a>,
    ) -> Result<EventBody<'a>, TraceError> {
        let need = |v: Option<Str<'a>>, field: &str| {
            v.ok_or_else(|| self.malformed(n, format!("`{kind}` lacks required field `{field}`")))
        };
        let need_bool = |v: Option<bool>, field: &str| {
            v.ok_or_else(|| self.malformed(n, format!("`{kind}` lacks required field `{field}`")))
        };
        let prompt_hash = |v: Option<Str<'a>>,
                           field: &str|
         -> Result<Option<Str<'a>>, TraceError> {
            match v {
                // Whatever else stands there may be the raw text itself.
                Some(h) if !is_hash(&h, true) => Err(self.privacy(
                    n,
                    format!("`{field}` is not a prompt hash (`b3:` or `b3k:` followed by 64 lowercase hex digits); prompts are recorded only as hashes"),
                )),
                other => Ok(other),
            }
        };
        Ok(match kind {
            "user_message" => {
                let p = raw.prompt.take().ok_or_else(|| {
                    self.malformed(n, "`user_message` lacks required field `prompt`")
                })?;
                if p.text.is_some() {
                    return Err(self.privacy(n, "a prompt object carries a `text` field; prompts are recorded only as hashes (raw text belongs in a `.prompts.ndjson` sidecar behind the developer opt-in)"));
                }
                let h = prompt_hash(Some(p.h), "prompt.h")?.unwrap_or_default();
                EventBody::UserMessage {
                    prompt: PromptRef { h, len: p.len },
                    id: raw.id.take(),
                }
            }
            "inference" => {
                let output = match raw.output {
                    None => None,
                    Some(o) => {
                        // Read by the trace's own reader, else by `serde_json` (as the line).
                        let o = match crate::fast_line::output(o.0) {
                            Some(o) => o,
                            None => serde_json::from_str::<RawOutput>(o.0).map_err(|e| {
                                let what = describe(o.0, &e, shape::OUTPUT);
                                self.malformed(n, format!("`inference.output`: {what}"))
                            })?,
                        };
                        let tool_calls = match o.tool_calls {
                            None => None,
                            Some(calls) => Some(
                                calls
                                    .into_iter()
                                    .map(|c| {
                                        Ok(PlannedCall {
                                            args: self.args(n, c.args)?,
                                            call_id: c.call_id,
                                            tool: c.tool,
                                        })
                                    })
                                    .collect::<Result<Vec<_>, TraceError>>()?,
                            ),
                        };
                        Some(InferenceOutput {
                            text: o.text,
                            tool_calls,
                        })
                    }
                };
                let finish = match raw.finish.take() {
                    None => None,
                    Some(f) => Some(
                        Finish::parse(&f)
                            .ok_or_else(|| self.bad_enum(n, "finish", &f, Finish::ALL))?,
                    ),
                };
                if let Some(c) = raw.usage.and_then(|u| u.cost_usd) {
                    if !(c >= 0.0 && c.is_finite()) {
                        return Err(
                            self.malformed(n, "`usage.cost_usd` must be a non-negative number")
                        );
                    }
                }
                EventBody::Inference(Box::new(Inference {
                    request_id: raw.request_id.take(),
                    model: raw.model.take(),
                    input_h: prompt_hash(raw.input_h.take(), "input_h")?,
                    system_h: prompt_hash(raw.system_h.take(), "system_h")?,
                    tools_offered: raw.tools_offered.take(),
                    consumes: raw.consumes.take(),
                    output,
                    usage: raw.usage,
                    finish,
                    latency_ms: raw.latency_ms,
                    truncated: raw.truncated == Some(true),
                    llm_calls: match raw.llm_calls {
                        Some(0) => {
                            return Err(self.malformed(
                                n,
                                "`llm_calls` must be at least 1 (an inference stands for at least one request)",
                            ));
                        }
                        c => c,
                    },
                    request_h: match raw.request_h {
                        None => None,
                        Some(r) => Some(request_parts(r.0).ok_or_else(|| {
                            self.privacy(n, "`request_h` must be an object of JSON pointers (`/messages/…`, `/tools/…`) to prompt hashes (`b3:` or `b3k:` followed by 64 lowercase hex digits)")
                        })?),
                    },
                }))
            }
            "tool_call" => {
                let args = raw
                    .args
                    .ok_or_else(|| self.malformed(n, "`tool_call` lacks required field `args`"))?;
                EventBody::ToolCall {
                    call_id: need(raw.call_id.take(), "call_id")?,
                    tool: need(raw.tool.take(), "tool")?,
                    args: self.args(n, args)?,
                }
            }
            "tool_result" => EventBody::ToolResult {
                call_id: need(raw.call_id.take(), "call_id")?,
                ok: need_bool(raw.ok, "ok")?,
                output: raw.output.map(|t| Json::read(t.0)),
                output_h: raw.output_h.take(),
                error: raw.error.take(),
            },
            "approval_request" => EventBody::ApprovalRequest {
                tool: raw.tool.take(),
                call_id: raw.call_id.take(),
                approval_id: raw.approval_id.take(),
                reason: raw.reason.take(),
            },
            "approval_decision" => EventBody::ApprovalDecision {
                granted: need_bool(raw.granted, "granted")?,
                approval_id: raw.approval_id.take(),
                call_id: raw.call_id.take(),
                tool: raw.tool.take(),
                by: raw.by.take(),
            },
            "message" => {
                let id = need(raw.id.take(), "id")?;
                let phase = self.phase(n, need(raw.phase.take(), "phase")?)?;
                EventBody::Message {
                    id,
                    phase,
                    text: need(raw.text.take(), "text")?,
                    reply_to: raw.reply_to.take(),
                    channel: raw.channel.take(),
                }
            }
            "message_edit" | "message_delete" => {
                let id = need(raw.id.take(), "id")?;
                if kind == "message_delete" {
                    EventBody::MessageDelete { id }
                } else {
                    EventBody::MessageEdit {
                        id,
                        text: need(raw.text.take(), "text")?,
                        phase: raw.phase.take().map(|p| self.phase(n, p)).transpose()?,
                    }
                }
            }
            "artifact" => EventBody::Artifact {
                path: need(raw.path.take(), "path")?,
                h: need(raw.h.take(), "h")?,
                bytes: raw
                    .bytes
                    .ok_or_else(|| self.malformed(n, "`artifact` lacks required field `bytes`"))?,
                text: raw.text.take(),
                mtime_ms: raw.mtime_ms,
            },
            "state_change" => EventBody::StateChange {
                path: need(raw.path.take(), "path")?,
                from: raw.from.map(|t| Json::read(t.0)),
                to: raw.to.map(|t| Json::read(t.0)),
            },
            "error" => EventBody::Error {
                message: need(raw.message.take(), "message")?,
                code: raw.code.map(|t| Json::read(t.0)),
                input_h: prompt_hash(raw.input_h.take(), "input_h")?,
            },
            "note" => EventBody::Note {
                text: need(raw.text.take(), "text")?,
            },
            "final_answer" => EventBody::FinalAnswer {
                text: need(raw.text.take(), "text")?,
            },
            "run_end" => {
                let status = need(raw.status.take(), "status")?;
                EventBody::RunEnd {
                    status: RunStatus::parse(&status)
                        .ok_or_else(|| self.bad_enum(n, "status", &status, RunStatus::ALL))?,
                    error: raw.error.take(),
                }
            }
            other => unreachable!("normalize_kind returned unhandled kind {other}"),
        })
    }

    fn phase(&self, n: usize, p: Str<'_>) -> Result<Phase, TraceError> {
        Phase::parse(&p).ok_or_else(|| self.bad_enum(n, "phase", &p, Phase::ALL))
    }

    /// An enum field whose value is not one of `allowed` (the value itself is not quoted).
    fn bad_enum(&self, n: usize, field: &str, value: &str, allowed: &[&str]) -> TraceError {
        self.malformed(
            n,
            format!(
                "`{field}` is not one of: {} (found a string of {} characters)",
                allowed.join(", "),
                value.chars().count()
            ),
        )
    }

    /// `args`: a JSON object; a string holding a JSON object is parsed; any other string is kept.
    fn args<'a>(&self, n: usize, raw: RawText<'a>) -> Result<Args<'a>, TraceError> {
        let text = raw.0;
        match text.as_bytes().first() {
            Some(b'{') => Ok(Args::Object(Json::read(text))),
            Some(b'"') => {
                let s: Str<'a> = serde_json::from_str(text).map_err(|e| {
                    self.malformed(n, format!("`args`: {}", describe(text, &e, &[])))
                })?;
                let trimmed = s.trim_start();
                if trimmed.starts_with('{') {
                    if let Ok(obj) = serde_json::from_str::<Box<RawValue>>(&s) {
                        return Ok(Args::Object(Json::from_raw(obj)));
                    }
                }
                Ok(Args::Text(s))
            }
            _ => Err(self.malformed(n, "`args` must be a JSON object or a string")),
        }
    }
}

/// Whether `seg` may be a segment of a `request_h` pointer: an index or a field name — short,
/// no spaces — never a place to carry text.
pub fn request_part_segment(seg: &str) -> bool {
    !seg.is_empty()
        && seg.len() <= 64
        && seg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.$~".contains(&b))
}

/// An inference's `request_h`: JSON pointers into the canonical request, each to a prompt hash;
/// `None` when anything else stands there (which may be the raw text itself).
fn request_parts<'a>(raw: &str) -> Option<Vec<(Str<'a>, Str<'a>)>> {
    let map: std::collections::BTreeMap<String, String> = serde_json::from_str(raw).ok()?;
    map.into_iter()
        .map(|(k, v)| {
            let segment_ok = request_part_segment;
            let pointer = ["/messages", "/tools"].iter().any(|root| {
                k.strip_prefix(root).is_some_and(|r| {
                    r.is_empty() || (r.starts_with('/') && r[1..].split('/').all(segment_ok))
                })
            });
            (pointer && is_hash(&v, true)).then(|| (Str::from(k), Str::from(v)))
        })
        .collect()
}
