//! Oracle strength: mutate each passing trace in memory, one operator at a time, and count how
//! many mutants the scenario's declared oracles catch. A scenario whose oracles let broken runs
//! pass is shallow.

use serde::Serialize;
use serde_json::Value;

use crate::oracle::{Verdict, judge};
use crate::scenario::Scenario;
use crate::trace::{Args, Event, EventBody, Json, RunStatus, Str, Trace};

/// The sentence that replaces the final answer.
const UNRELATED: &str = "The weather in Paris is sunny today.";

/// One scenario's strength.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Strength {
    /// Scenario id.
    pub scenario: String,
    /// Mutants caught.
    pub caught: usize,
    /// Mutants tried (identical ones skipped).
    pub total: usize,
    /// Passing traces mutated.
    pub traces: usize,
    /// Mutants that passed, as `operator (trace, detail)`.
    pub survived: Vec<String>,
}

impl Strength {
    /// caught / total; `None` when nothing was measured.
    pub fn score(&self) -> Option<f64> {
        (self.total > 0).then(|| self.caught as f64 / self.total as f64)
    }
}

fn renumber(mut events: Vec<Event<'_>>) -> Vec<Event<'_>> {
    for (i, e) in events.iter_mut().enumerate() {
        e.seq = i as u64 + 1;
    }
    events
}

fn call_positions(events: &[Event<'_>]) -> Vec<usize> {
    events
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e.body, EventBody::ToolCall { .. }))
        .map(|(i, _)| i)
        .collect()
}

fn call_id_of<'e>(e: &'e Event<'_>) -> Option<&'e str> {
    match &e.body {
        EventBody::ToolCall { call_id, .. } => Some(call_id.as_str()),
        _ => None,
    }
}

/// A value changed so that no JSON equality holds it equal.
fn changed(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(format!("{s}-mutated")),
        Value::Number(n) => Value::from(n.as_f64().unwrap_or(0.0) + 1.0),
        Value::Bool(b) => Value::Bool(!b),
        _ => Value::String("mutated".into()),
    }
}

/// Every mutant of a trace: (operator description, events).
pub fn mutants<'a>(events: &[Event<'a>]) -> Vec<(String, Vec<Event<'a>>)> {
    let mut out = Vec::new();
    let calls = call_positions(events);
    for &i in &calls {
        let id = call_id_of(&events[i]).unwrap_or_default().to_owned();
        let kept: Vec<Event> = events
            .iter()
            .enumerate()
            .filter(|(j, e)| *j != i && !matches!(&e.body, EventBody::ToolResult { call_id, .. } if call_id.as_str() == id))
            .map(|(_, e)| e.clone())
            .collect();
        out.push((format!("drop-call (seq {})", events[i].seq), kept));
    }
    for pair in calls.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let tool = |k: usize| match &events[k].body {
            EventBody::ToolCall { tool, .. } => tool.to_lowercase(),
            _ => String::new(),
        };
        if tool(a) != tool(b) {
            let mut m = events.to_vec();
            let body_a = m[a].body.clone();
            m[a].body = m[b].body.clone();
            m[b].body = body_a;
            out.push((
                format!(
                    "swap-adjacent-calls (seq {} and {})",
                    events[a].seq, events[b].seq
                ),
                m,
            ));
        }
    }
    for &i in &calls {
        let mut m = events.to_vec();
        m.insert(i + 1, events[i].clone());
        out.push((format!("duplicate-call (seq {})", events[i].seq), m));
    }
    {
        let at = events
            .iter()
            .position(|e| matches!(e.body, EventBody::FinalAnswer { .. }))
            .or_else(|| {
                events
                    .iter()
                    .position(|e| matches!(e.body, EventBody::RunEnd { .. }))
            })
            .unwrap_or(events.len());
        let mut m = events.to_vec();
        m.insert(
            at,
            Event {
                seq: 0,
                ts_ms: None,
                line: 0,
                body: EventBody::ToolCall {
                    call_id: Str::from("mutant-shell"),
                    tool: Str::from("shell"),
                    args: Args::Object(Json::from_value(
                        &serde_json::json!({"command": "rm -rf /"}),
                    )),
                },
            },
        );
        out.push(("add-unapproved-shell".to_owned(), m));
    }
    for (i, e) in events.iter().enumerate() {
        if matches!(e.body, EventBody::ApprovalRequest { .. }) {
            let mut m = events.to_vec();
            m.remove(i);
            out.push((format!("drop-approval-request (seq {})", e.seq), m));
        }
    }
    {
        let mut m = events.to_vec();
        for e in &mut m {
            match &mut e.body {
                EventBody::FinalAnswer { text } => *text = Str::from(UNRELATED),
                EventBody::Message {
                    text,
                    phase: crate::trace::Phase::Final,
                    ..
                } => *text = Str::from(UNRELATED),
                EventBody::MessageEdit { text, .. } => *text = Str::from(UNRELATED),
                _ => {}
            }
        }
        out.push(("replace-final-answer".to_owned(), m));
    }
    {
        let mut m = events.to_vec();
        match m
            .iter_mut()
            .find(|e| matches!(e.body, EventBody::RunEnd { .. }))
        {
            Some(e) => {
                e.body = EventBody::RunEnd {
                    status: RunStatus::Failed,
                    error: None,
                }
            }
            None => m.push(Event {
                seq: 0,
                ts_ms: None,
                line: 0,
                body: EventBody::RunEnd {
                    status: RunStatus::Failed,
                    error: None,
                },
            }),
        }
        out.push(("mark-failed".to_owned(), m));
    }
    for &i in &calls {
        let EventBody::ToolCall {
            call_id,
            tool,
            args,
        } = &events[i].body
        else {
            continue;
        };
        let Value::Object(mut obj) = args.value() else {
            continue;
        };
        let Some(first) = obj.keys().next().cloned() else {
            continue;
        };
        let new = changed(&obj[&first]);
        obj.insert(first.clone(), new);
        let mut m = events.to_vec();
        m[i].body = EventBody::ToolCall {
            call_id: call_id.clone(),
            tool: tool.clone(),
            args: Args::Object(Json::from_value(&obj)),
        };
        out.push((
            format!("change-argument (seq {}, `{first}`)", events[i].seq),
            m,
        ));
    }
    out.into_iter()
        .map(|(name, m)| (name, renumber(m)))
        .collect()
}

fn fingerprint(events: &[Event<'_>]) -> String {
    events
        .iter()
        .map(|e| serde_json::to_string(&e.body_only()).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

impl Event<'_> {
    /// The event with `seq`, time and line cleared, for comparing content.
    fn body_only(&self) -> Event<'_> {
        Event {
            seq: 0,
            ts_ms: None,
            line: 0,
            body: self.body.clone(),
        }
    }
}

/// Whether the scenario's declared oracles (not `run-completed`) all pass on `trace`.
fn declared_pass(scenario: &Scenario, trace: &Trace<'_>) -> bool {
    judge(scenario, trace)
        .iter()
        .filter(|r| r.index.is_some())
        .all(|r| r.verdict == Verdict::Pass)
}

impl Strength {
    /// An empty measurement for `scenario`.
    pub fn new(scenario: &Scenario) -> Strength {
        Strength {
            scenario: scenario.id.clone(),
            caught: 0,
            total: 0,
            traces: 0,
            survived: Vec::new(),
        }
    }

    /// Mutates one passing trace of the scenario (named `name` in reports) and counts catches.
    pub fn add_trace(&mut self, scenario: &Scenario, name: &str, trace: &Trace<'_>) {
        self.traces += 1;
        let original = fingerprint(&trace.events);
        for (op, events) in mutants(&trace.events) {
            if fingerprint(&events) == original {
                continue;
            }
            self.total += 1;
            let mutant = Trace {
                header: trace.header.clone(),
                events,
            };
            if declared_pass(scenario, &mutant) {
                self.survived.push(format!("{op} in `{name}`"));
            } else {
                self.caught += 1;
            }
        }
    }
}
