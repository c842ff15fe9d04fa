//! Generated traces: an event list drawn from unstructured bytes (every kind, unusual strings,
//! optional fields present or not), written through [`TraceWriter`]. Used by the `trace_written`
//! fuzz target, which then mutates the written bytes, and by the round-trip property tests.

use arbitrary::{Result, Unstructured};
use serde_json::{Map, Value};

use crate::trace::{
    Args, Event, EventBody, Finish, Header, Inference, InferenceOutput, Json, Phase, PlannedCall,
    PromptRef, RunStatus, Runtime, SealedTrace, Str, TraceWriter, Usage, content_hash,
};

/// Pieces that tend to break writers and readers: escapes, NUL, line and paragraph separators,
/// astral characters, a byte-order mark, terminal escapes, bidi overrides.
pub(crate) const PIECES: &[&str] = &[
    "\0",
    "\u{2028}",
    "\u{2029}",
    "𝄞",
    "😀",
    "\"",
    "\\",
    "\\u0000",
    "\n",
    "\r\n",
    "\t",
    "\u{7f}",
    "\u{1b}[31m",
    "\u{202e}",
    "\u{feff}",
    "é",
    "/",
    "</script>",
    "{",
    "}",
    " ",
    "a",
    "tool",
    "b3:",
];

/// A generated trace: what was written and how many events it holds.
#[derive(Debug)]
pub struct WrittenTrace {
    /// The sealed bytes the writer produced.
    pub sealed: SealedTrace,
    /// Events written.
    pub events: usize,
}

/// Draws a trace from `u`. With `big`, a value may be 1 MiB long.
pub fn written_trace(u: &mut Unstructured<'_>, big: bool) -> Result<WrittenTrace> {
    let mut g = Gen {
        u,
        big,
        messages: Vec::new(),
    };
    let mut header = Header::new(g.nonblank()?, g.nonblank()?);
    if g.u.arbitrary()? {
        header.runtime = Some(Runtime {
            name: g.str()?,
            version: g.opt_str()?,
        });
    }
    header.model = g.opt_str()?;
    header.recorded_at = g.opt_str()?;
    header.source = g.opt_str()?;
    for _ in 0..g.u.int_in_range(0..=2)? {
        header.labels.insert(g.text()?, g.text()?);
    }
    let mut w = TraceWriter::new(header);
    let count = g.u.int_in_range(0..=24)?;
    let mut seq = 0u64;
    let (mut answered, mut ended) = (false, false);
    for _ in 0..count {
        seq += g.u.int_in_range(1..=3)?;
        let ts_ms = if g.u.arbitrary()? {
            Some(g.u.arbitrary()?)
        } else {
            None
        };
        let mut body = g.body()?;
        match body {
            EventBody::FinalAnswer { .. } if answered => body = EventBody::Note { text: g.str()? },
            EventBody::FinalAnswer { .. } => answered = true,
            EventBody::RunEnd { .. } if ended => body = EventBody::Note { text: g.str()? },
            EventBody::RunEnd { .. } => ended = true,
            _ => {}
        }
        w.push_event(&Event {
            ts_sub_ns: match g.u.arbitrary::<Option<u32>>()? {
                Some(ns) => Some(ns % 1_000_000).filter(|ns| *ns > 0),
                None => None,
            },
            copied: g.u.arbitrary()?,
            ..Event::new(seq, ts_ms, body)
        });
    }
    Ok(WrittenTrace {
        sealed: w.finish().expect("the generator keeps the order rules"),
        events: count,
    })
}

struct Gen<'u, 'd> {
    u: &'u mut Unstructured<'d>,
    big: bool,
    /// Ids of the messages sent so far (an edit or delete must name one).
    messages: Vec<String>,
}

impl Gen<'_, '_> {
    /// A string of unusual pieces and arbitrary text; rarely (with `big`) 1 MiB long.
    fn text(&mut self) -> Result<String> {
        if self.big && self.u.ratio(1, 32)? {
            let piece = *self.u.choose(PIECES)?;
            return Ok(format!("{}{piece}", "x".repeat(1 << 20)));
        }
        let mut s = String::new();
        for _ in 0..self.u.int_in_range(0..=4)? {
            if self.u.arbitrary()? {
                s.push_str(self.u.choose(PIECES)?);
            } else {
                let free: &str = self.u.arbitrary()?;
                s.push_str(&free[..free.floor_char_boundary_compat(24)]);
            }
        }
        Ok(s)
    }

    fn str(&mut self) -> Result<Str<'static>> {
        Ok(Str::from(self.text()?))
    }

    fn opt_str(&mut self) -> Result<Option<Str<'static>>> {
        Ok(if self.u.arbitrary()? {
            Some(self.str()?)
        } else {
            None
        })
    }

    /// A string that is not blank (header fields require one).
    fn nonblank(&mut self) -> Result<Str<'static>> {
        let s = self.text()?;
        Ok(Str::from(if s.trim().is_empty() {
            format!("s{s}")
        } else {
            s
        }))
    }

    fn hash(&mut self) -> Result<Str<'static>> {
        let seed: u64 = self.u.arbitrary()?;
        Ok(Str::from(content_hash(&seed.to_le_bytes())))
    }

    fn opt_hash(&mut self) -> Result<Option<Str<'static>>> {
        Ok(if self.u.arbitrary()? {
            Some(self.hash()?)
        } else {
            None
        })
    }

    fn prompt(&mut self) -> Result<PromptRef<'static>> {
        Ok(PromptRef {
            h: self.hash()?,
            len: self.u.arbitrary()?,
        })
    }

    /// A JSON value of bounded depth.
    fn value(&mut self, depth: u32) -> Result<Value> {
        let pick = self.u.int_in_range(0..=if depth == 0 { 4 } else { 6 })?;
        Ok(match pick {
            0 => Value::Null,
            1 => Value::Bool(self.u.arbitrary()?),
            2 => Value::from(self.u.arbitrary::<i64>()?),
            3 => {
                serde_json::Number::from_f64(self.u.arbitrary()?).map_or(Value::Null, Value::Number)
            }
            4 => Value::String(self.text()?),
            5 => Value::Array(
                (0..self.u.int_in_range(0..=3)?)
                    .map(|_| self.value(depth - 1))
                    .collect::<Result<_>>()?,
            ),
            _ => Value::Object(self.object(depth - 1)?),
        })
    }

    fn object(&mut self, depth: u32) -> Result<Map<String, Value>> {
        let mut m = Map::new();
        for _ in 0..self.u.int_in_range(0..=3)? {
            m.insert(self.text()?, self.value(depth)?);
        }
        Ok(m)
    }

    fn json(&mut self) -> Result<Json<'static>> {
        Ok(Json::from_value(&self.value(2)?))
    }

    fn opt_json(&mut self) -> Result<Option<Json<'static>>> {
        Ok(if self.u.arbitrary()? {
            Some(self.json()?)
        } else {
            None
        })
    }

    /// Arguments: an object, or text that does not itself hold one (the reader would read such
    /// text as the object).
    fn args(&mut self) -> Result<Args<'static>> {
        Ok(if self.u.arbitrary()? {
            Args::Object(Json::from_value(&Value::Object(self.object(2)?)))
        } else {
            let t = self.text()?;
            let t = if t.trim_start().starts_with('{') {
                format!("x{t}")
            } else {
                t
            };
            Args::Text(Str::from(t))
        })
    }

    /// The id of a message sent earlier.
    fn sent(&mut self) -> Result<Str<'static>> {
        Ok(Str::from(self.u.choose(&self.messages)?.clone()))
    }

    fn phase(&mut self) -> Result<Phase> {
        Ok(*self.u.choose(&[Phase::Preview, Phase::Final])?)
    }

    fn body(&mut self) -> Result<EventBody<'static>> {
        Ok(match self.u.int_in_range(0..=15)? {
            0 => EventBody::UserMessage {
                prompt: self.prompt()?,
                id: self.opt_str()?,
            },
            1 => {
                let tool_calls = if self.u.arbitrary()? {
                    Some(
                        (0..self.u.int_in_range(0..=3)?)
                            .map(|_| {
                                Ok(PlannedCall {
                                    call_id: self.str()?,
                                    tool: self.str()?,
                                    args: self.args()?,
                                })
                            })
                            .collect::<Result<_>>()?,
                    )
                } else {
                    None
                };
                let output = if self.u.arbitrary()? {
                    Some(InferenceOutput {
                        text: self.opt_str()?,
                        tool_calls,
                    })
                } else {
                    None
                };
                let strs = |g: &mut Self| -> Result<Option<Vec<Str<'static>>>> {
                    Ok(if g.u.arbitrary()? {
                        Some(
                            (0..g.u.int_in_range(0..=3)?)
                                .map(|_| g.str())
                                .collect::<Result<_>>()?,
                        )
                    } else {
                        None
                    })
                };
                EventBody::Inference(Box::new(Inference {
                    request_id: self.opt_str()?,
                    model: self.opt_str()?,
                    input_h: self.opt_hash()?,
                    system_h: self.opt_hash()?,
                    tools_offered: strs(self)?,
                    consumes: strs(self)?,
                    output,
                    usage: if self.u.arbitrary()? {
                        Some(Usage {
                            input_tokens: self.u.arbitrary()?,
                            output_tokens: self.u.arbitrary()?,
                            cache_read_tokens: self.u.arbitrary()?,
                            cache_write_tokens: self.u.arbitrary()?,
                            reasoning_tokens: self.u.arbitrary()?,
                            // Whole cents: a cost that round-trips through JSON text exactly.
                            cost_usd: self
                                .u
                                .arbitrary::<Option<u32>>()?
                                .map(|c| f64::from(c) / 100.0),
                            priced: false,
                        })
                    } else {
                        None
                    },
                    finish: if self.u.arbitrary()? {
                        Some(*self.u.choose(&[
                            Finish::Stop,
                            Finish::ToolCall,
                            Finish::Length,
                            Finish::ContentFilter,
                            Finish::Error,
                        ])?)
                    } else {
                        None
                    },
                    latency_ms: self.u.arbitrary()?,
                    request_h: None,
                    truncated: self.u.arbitrary()?,
                    llm_calls: self.u.arbitrary::<Option<u32>>()?.map(|n| n.max(1)),
                }))
            }
            2 => EventBody::ToolCall {
                call_id: self.str()?,
                tool: self.str()?,
                args: self.args()?,
            },
            3 => EventBody::ToolResult {
                call_id: self.str()?,
                ok: self.u.arbitrary()?,
                output: self.opt_json()?,
                output_h: self.opt_hash()?,
                error: self.opt_str()?,
            },
            4 => EventBody::ApprovalRequest {
                tool: self.opt_str()?,
                call_id: self.opt_str()?,
                approval_id: self.opt_str()?,
                reason: self.opt_str()?,
            },
            5 => EventBody::ApprovalDecision {
                granted: self.u.arbitrary()?,
                approval_id: self.opt_str()?,
                call_id: self.opt_str()?,
                tool: self.opt_str()?,
                by: self.opt_str()?,
            },
            6 => EventBody::Message {
                id: {
                    let id = self.text()?;
                    self.messages.push(id.clone());
                    Str::from(id)
                },
                phase: self.phase()?,
                text: self.str()?,
                reply_to: self.opt_str()?,
                channel: self.opt_str()?,
            },
            7 | 8 if self.messages.is_empty() => EventBody::Note { text: self.str()? },
            7 => EventBody::MessageEdit {
                id: self.sent()?,
                text: self.str()?,
                phase: if self.u.arbitrary()? {
                    Some(self.phase()?)
                } else {
                    None
                },
            },
            8 => EventBody::MessageDelete { id: self.sent()? },
            9 => EventBody::Artifact {
                path: self.str()?,
                h: self.hash()?,
                bytes: self.u.arbitrary()?,
                text: self.opt_str()?,
                mtime_ms: self.u.arbitrary()?,
            },
            10 => EventBody::StateChange {
                path: self.str()?,
                from: self.opt_json()?,
                to: self.opt_json()?,
            },
            11 => EventBody::Error {
                message: self.str()?,
                code: self.opt_json()?,
                input_h: self.opt_hash()?,
            },
            12 => EventBody::Note { text: self.str()? },
            13 => EventBody::FinalAnswer { text: self.str()? },
            14 => EventBody::RunEnd {
                status: *self.u.choose(&[
                    RunStatus::Completed,
                    RunStatus::Failed,
                    RunStatus::Cancelled,
                ])?,
                error: self.opt_str()?,
            },
            _ => EventBody::Unknown {
                kind: format!("x_custom_{}", self.u.int_in_range(0..=3u8)?),
            },
        })
    }
}

/// `floor_char_boundary` for stable Rust: the largest char boundary at or below `max`.
trait FloorCharBoundary {
    fn floor_char_boundary_compat(&self, max: usize) -> usize;
}

impl FloorCharBoundary for str {
    fn floor_char_boundary_compat(&self, max: usize) -> usize {
        if max >= self.len() {
            return self.len();
        }
        (0..=max)
            .rev()
            .find(|&i| self.is_char_boundary(i))
            .unwrap_or(0)
    }
}
