//! Agent runs for property tests, drawn by proptest: a user turn, inferences each planning a
//! batch of calls, the batch's executions in some order with their results, an approval,
//! messages, an answer and the end. A [`Layout`] says how the recording spells what a baseline
//! must not depend on (call ids, timestamps); a run's batches carry their execution order.

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::trace::{
    Args, Event, EventBody, Header, Inference, InferenceOutput, Json, Phase, PlannedCall,
    PromptRef, RunStatus, Str, Trace, TraceWriter, Usage, content_hash,
};

/// The tools runs call.
pub(crate) const TOOLS: &[&str] = &["search", "deploy", "read_file", "shell"];

/// The fixed property-test configuration: a fixed seed (the same cases on every machine), no
/// failure files written into the repository, and `cases` cases.
pub(crate) fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x7472_6163_6572_6570),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// One planned call.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub(crate) tool: &'static str,
    pub(crate) args: Value,
    pub(crate) ok: bool,
}

/// A batch: the calls one inference planned, and the order they ran in.
#[derive(Debug, Clone)]
pub(crate) struct Batch {
    pub(crate) calls: Vec<Call>,
    pub(crate) order: Vec<usize>,
}

/// A run.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    pub(crate) batches: Vec<Batch>,
    pub(crate) approval: Option<bool>,
    pub(crate) messages: Vec<(String, Phase)>,
    pub(crate) answer: Option<String>,
    pub(crate) status: RunStatus,
    pub(crate) tokens: (u64, u64),
}

/// How a recording spells what a baseline ignores.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    /// Prefix of every call id.
    pub(crate) ids: String,
    /// Timestamp of the first event, in ms.
    pub(crate) t0: i64,
}

impl Default for Layout {
    fn default() -> Self {
        Layout {
            ids: "call_".into(),
            t0: 1_764_417_600_000,
        }
    }
}

fn args() -> impl Strategy<Value = Value> {
    let scalar = prop_oneof![
        any::<i32>().prop_map(Value::from),
        // Integral floats are written canonically as integers.
        (-50i32..50).prop_map(|n| json!(f64::from(n))),
        "[a-z ]{0,8}".prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
    ];
    proptest::collection::btree_map(
        prop_oneof![Just("q"), Just("path"), Just("n"), Just("env")],
        scalar,
        0..3,
    )
    .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()))
}

fn batch() -> impl Strategy<Value = Batch> {
    proptest::collection::vec(
        (proptest::sample::select(TOOLS), args(), any::<bool>())
            .prop_map(|(tool, args, ok)| Call { tool, args, ok }),
        1..4,
    )
    .prop_flat_map(|calls| {
        let order: Vec<usize> = (0..calls.len()).collect();
        (Just(calls), Just(order).prop_shuffle())
    })
    .prop_map(|(calls, order)| Batch { calls, order })
}

/// A run of up to four batches.
pub(crate) fn run() -> impl Strategy<Value = Run> {
    (
        proptest::collection::vec(batch(), 0..5),
        proptest::option::of(any::<bool>()),
        proptest::collection::vec(
            (
                "[a-zA-Z .]{1,12}",
                prop_oneof![Just(Phase::Preview), Just(Phase::Final)],
            ),
            0..3,
        ),
        proptest::option::of("[a-z ]{0,16}"),
        prop_oneof![
            Just(RunStatus::Completed),
            Just(RunStatus::Failed),
            Just(RunStatus::Cancelled)
        ],
        (0u64..5000, 0u64..2000),
    )
        .prop_map(
            |(batches, approval, messages, answer, status, tokens)| Run {
                batches,
                approval,
                messages,
                answer,
                status,
                tokens,
            },
        )
}

impl Run {
    /// The run's events as `layout` records them.
    pub(crate) fn events(&self, layout: &Layout) -> Vec<Event<'static>> {
        let mut bodies: Vec<EventBody<'static>> = vec![EventBody::UserMessage {
            prompt: PromptRef {
                h: Str::from(content_hash(b"the task")),
                len: Some(8),
            },
            id: Some(Str::from(format!("{}in", layout.ids))),
        }];
        let id = |b: usize, i: usize| Str::from(format!("{}{b}_{i}", layout.ids));
        let obj = |v: &Value| Args::Object(Json::from_value(v));
        for (b, batch) in self.batches.iter().enumerate() {
            let planned = (batch.calls.iter().enumerate())
                .map(|(i, c)| PlannedCall {
                    call_id: id(b, i),
                    tool: Str::from(c.tool),
                    args: obj(&c.args),
                })
                .collect();
            bodies.push(EventBody::Inference(Box::new(Inference {
                request_id: Some(Str::from(format!("{}req{b}", layout.ids))),
                output: Some(InferenceOutput {
                    text: None,
                    tool_calls: Some(planned),
                }),
                usage: Some(Usage {
                    input_tokens: self.tokens.0,
                    output_tokens: self.tokens.1,
                    ..Usage::default()
                }),
                ..Inference::default()
            })));
            for &i in &batch.order {
                let c = &batch.calls[i];
                if c.tool == "deploy" {
                    if let Some(granted) = self.approval {
                        bodies.push(EventBody::ApprovalRequest {
                            tool: Some(Str::from("deploy")),
                            call_id: Some(id(b, i)),
                            approval_id: Some(Str::from(format!("{}ap{b}_{i}", layout.ids))),
                            reason: None,
                        });
                        bodies.push(EventBody::ApprovalDecision {
                            granted,
                            approval_id: Some(Str::from(format!("{}ap{b}_{i}", layout.ids))),
                            call_id: None,
                            tool: None,
                            by: None,
                        });
                    }
                }
                bodies.push(EventBody::ToolCall {
                    call_id: id(b, i),
                    tool: Str::from(c.tool),
                    args: obj(&c.args),
                });
                bodies.push(EventBody::ToolResult {
                    call_id: id(b, i),
                    ok: c.ok,
                    output: c.ok.then(|| Json::from_value(&json!({"result": c.tool}))),
                    output_h: None,
                    error: (!c.ok).then(|| Str::from("failed")),
                });
            }
        }
        for (m, (text, phase)) in self.messages.iter().enumerate() {
            bodies.push(EventBody::Message {
                id: Str::from(format!("{}m{m}", layout.ids)),
                phase: *phase,
                text: Str::from(text.clone()),
                reply_to: None,
                channel: None,
            });
        }
        if let Some(answer) = &self.answer {
            bodies.push(EventBody::FinalAnswer {
                text: Str::from(answer.clone()),
            });
        }
        bodies.push(EventBody::RunEnd {
            status: self.status,
            error: None,
        });
        (bodies.into_iter().enumerate())
            .map(|(n, body)| Event::new(n as u64 + 1, Some(layout.t0 + 7 * n as i64), body))
            .collect()
    }

    /// The run as an in-memory trace.
    pub(crate) fn trace(&self, scenario: &str, case: &str, layout: &Layout) -> Trace<'static> {
        Trace {
            header: Header::new(scenario.to_owned(), case.to_owned()),
            events: self.events(layout),
        }
    }

    /// The run written and sealed (uncompressed bytes).
    pub(crate) fn sealed(&self, scenario: &str, case: &str, layout: &Layout) -> Vec<u8> {
        let mut w = TraceWriter::new(Header::new(scenario.to_owned(), case.to_owned()));
        for e in self.events(layout) {
            w.push_event(&e);
        }
        w.finish()
            .expect("a generated run keeps the order rules")
            .bytes
    }
}
