//! Oracle strength: mutate each passing trace in memory, one operator at a time, and count how
//! many mutants the scenario's declared oracles catch. A scenario whose oracles let broken runs
//! pass is shallow.

use serde::Serialize;
use serde_json::Value;

use crate::oracle::budget::RunBudget;
use crate::oracle::{Facts, Verdict, judge_facts};
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
    /// Traces whose mutants were sampled: (trace, judged, of all).
    pub sampled: Vec<(String, usize, usize)>,
    /// Oracles that pass below a full score, which lets partial mutants survive: one sentence
    /// each.
    pub weakened: Vec<String>,
    /// Mutants some oracle could not judge (an `expr` program out of time or budget): counted
    /// neither as caught nor as tried, so they never raise the score.
    pub unjudged: usize,
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

/// The most mutants judged per trace: beyond it, this many are sampled, evenly spread over the
/// whole list in its order (so every operator keeps its share), and the output says so. A
/// 2,000-call trace has some 8,000 mutants, each as long as the trace; judging them all grew
/// with the square of the calls.
pub const MUTANTS_PER_TRACE: usize = 400;

/// One mutation of a trace, described by position: a mutant costs memory only while it is
/// built and judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mutation {
    DropCall(usize),
    Swap(usize, usize),
    Duplicate(usize),
    AddShell,
    DropApproval(usize),
    ReplaceFinalAnswer,
    MarkFailed,
    /// A call's argument (by position among its keys) changed as [`ArgChange`] says.
    Argument {
        at: usize,
        key: usize,
        change: ArgChange,
    },
    /// Three more copies of a call and its result right after its result; with `failing`,
    /// every one of them (the original's included) failed: a loop, or a retry spiral.
    LoopCall {
        at: usize,
        failing: bool,
    },
    /// A call's result (the event at this position) turned into a failure.
    FailResult(usize),
    /// Every inference's usage (tokens and recorded cost) ten times what was recorded: a run
    /// that got expensive.
    InflateUsage,
    /// The call at this position sends and gets back hostile text ([`super::hostile`]).
    HostileCall(usize),
    /// The answer and the model's text are hostile text.
    HostileAnswer,
}

/// How a mutation changes a call's first argument: each kills what an argument matcher
/// checks (`$oneOf`, `$text`, `$approx`: changed; a required key: dropped; `$type`: retyped;
/// `$regex`: replaced by unrelated text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArgChange {
    /// `"x"` → `"x-mutated"`, `n` → `n + 1`, `b` → `!b`.
    Change,
    /// The key left out.
    Drop,
    /// An integer given as the float of the same value (`3` → `3.0`).
    Retype,
    /// A string replaced by unrelated text.
    Replace,
}

impl ArgChange {
    /// Whether the change applies to `v` (and makes a different call).
    fn applies(self, v: &Value) -> bool {
        match self {
            ArgChange::Change | ArgChange::Drop => true,
            ArgChange::Retype => v.is_i64() || v.is_u64(),
            ArgChange::Replace => v.as_str().is_some_and(|s| s != UNRELATED),
        }
    }

    fn name(self) -> &'static str {
        match self {
            ArgChange::Change => "change-argument",
            ArgChange::Drop => "drop-argument",
            ArgChange::Retype => "retype-argument",
            ArgChange::Replace => "replace-argument",
        }
    }
}

/// The result of the call at `i`: the first `tool_result` after it with its call id.
fn result_of(events: &[Event<'_>], i: usize) -> Option<usize> {
    let id = call_id_of(&events[i])?;
    (i + 1..events.len()).find(|&j| {
        matches!(&events[j].body, EventBody::ToolResult { call_id, .. } if call_id.as_str() == id)
    })
}

/// The mutations the behaviour oracles catch, made only for scenarios that declare one (so
/// other scenarios' strength is measured as it always was): for each call with a result, a
/// loop of it, a retry spiral of it, and its result failed.
fn behaviour_mutations(events: &[Event<'_>]) -> Vec<Mutation> {
    let mut out = Vec::new();
    for i in call_positions(events) {
        if let Some(r) = result_of(events, i) {
            out.push(Mutation::LoopCall {
                at: i,
                failing: false,
            });
            out.push(Mutation::LoopCall {
                at: i,
                failing: true,
            });
            out.push(Mutation::FailResult(r));
        }
    }
    out
}

/// A result turned into a failure.
fn failed_result<'a>(e: &Event<'a>) -> Event<'a> {
    let mut e = e.clone();
    if let EventBody::ToolResult { call_id, .. } = &e.body {
        e.body = EventBody::ToolResult {
            call_id: call_id.clone(),
            ok: false,
            output: None,
            output_h: None,
            error: Some(Str::from("mutant: the tool failed")),
        };
    }
    e
}

/// Every mutation of `events` that gives a trace different from the original, in operator
/// order.
fn mutations(events: &[Event<'_>]) -> Vec<Mutation> {
    let calls = call_positions(events);
    let mut out: Vec<Mutation> = calls.iter().map(|&i| Mutation::DropCall(i)).collect();
    let tool = |k: usize| match &events[k].body {
        EventBody::ToolCall { tool, .. } => tool.to_lowercase(),
        _ => String::new(),
    };
    out.extend(
        (calls.windows(2))
            .filter(|p| tool(p[0]) != tool(p[1]))
            .map(|p| Mutation::Swap(p[0], p[1])),
    );
    out.extend(calls.iter().map(|&i| Mutation::Duplicate(i)));
    out.push(Mutation::AddShell);
    out.extend(
        (events.iter().enumerate())
            .filter(|(_, e)| matches!(e.body, EventBody::ApprovalRequest { .. }))
            .map(|(i, _)| Mutation::DropApproval(i)),
    );
    // Skipped when the mutant would equal the original.
    let final_text = events.iter().any(|e| match &e.body {
        EventBody::FinalAnswer { text } | EventBody::MessageEdit { text, .. } => {
            text.as_str() != UNRELATED
        }
        EventBody::Message {
            text,
            phase: crate::trace::Phase::Final,
            ..
        } => text.as_str() != UNRELATED,
        _ => false,
    });
    if final_text {
        out.push(Mutation::ReplaceFinalAnswer);
    }
    let failed_already = events.iter().any(|e| {
        matches!(
            e.body,
            EventBody::RunEnd {
                status: RunStatus::Failed,
                error: None
            }
        )
    });
    if !failed_already {
        out.push(Mutation::MarkFailed);
    }
    out.extend(argument_mutations(events, &[ArgChange::Change], false));
    out
}

/// The mutations `changes` make of each call's first argument (of every argument, with
/// `every`), where they apply.
fn argument_mutations(events: &[Event<'_>], changes: &[ArgChange], every: bool) -> Vec<Mutation> {
    let calls = call_positions(events);
    let mut out = Vec::new();
    for &change in changes {
        for &at in &calls {
            let Some(obj) = arguments(&events[at]) else {
                continue;
            };
            let keys = if every { obj.len() } else { obj.len().min(1) };
            out.extend(
                (obj.values().take(keys).enumerate())
                    .filter(|(_, v)| change.applies(v))
                    .map(|(key, _)| Mutation::Argument { at, key, change }),
            );
        }
    }
    out
}

/// A call's arguments, when they are an object.
fn arguments(e: &Event<'_>) -> Option<serde_json::Map<String, Value>> {
    let EventBody::ToolCall { args, .. } = &e.body else {
        return None;
    };
    match args.value() {
        Value::Object(obj) => Some(obj),
        _ => None,
    }
}

/// Builds the mutant `m` of `events`: (operator description, events renumbered).
fn mutant<'a>(events: &[Event<'a>], m: Mutation) -> (String, Vec<Event<'a>>) {
    let mut out = events.to_vec();
    let name = match m {
        Mutation::DropCall(i) => {
            let id = call_id_of(&events[i]).unwrap_or_default().to_owned();
            out = (events.iter().enumerate())
                .filter(|(j, e)| *j != i && !matches!(&e.body, EventBody::ToolResult { call_id, .. } if call_id.as_str() == id))
                .map(|(_, e)| e.clone())
                .collect();
            format!("drop-call (seq {})", events[i].seq)
        }
        Mutation::Swap(a, b) => {
            let body_a = out[a].body.clone();
            out[a].body = out[b].body.clone();
            out[b].body = body_a;
            format!(
                "swap-adjacent-calls (seq {} and {})",
                events[a].seq, events[b].seq
            )
        }
        Mutation::Duplicate(i) => {
            out.insert(i + 1, events[i].clone());
            format!("duplicate-call (seq {})", events[i].seq)
        }
        Mutation::AddShell => {
            let at = (events.iter())
                .position(|e| matches!(e.body, EventBody::FinalAnswer { .. }))
                .or_else(|| {
                    (events.iter()).position(|e| matches!(e.body, EventBody::RunEnd { .. }))
                })
                .unwrap_or(events.len());
            out.insert(
                at,
                Event::new(
                    0,
                    None,
                    EventBody::ToolCall {
                        call_id: Str::from("mutant-shell"),
                        tool: Str::from("shell"),
                        args: Args::Object(Json::from_value(
                            &serde_json::json!({"command": "rm -rf /"}),
                        )),
                    },
                ),
            );
            "add-unapproved-shell".to_owned()
        }
        Mutation::DropApproval(i) => {
            out.remove(i);
            format!("drop-approval-request (seq {})", events[i].seq)
        }
        Mutation::ReplaceFinalAnswer => {
            for e in &mut out {
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
            "replace-final-answer".to_owned()
        }
        Mutation::MarkFailed => {
            let failed = EventBody::RunEnd {
                status: RunStatus::Failed,
                error: None,
            };
            match (out.iter_mut()).find(|e| matches!(e.body, EventBody::RunEnd { .. })) {
                Some(e) => e.body = failed,
                None => out.push(Event::new(0, None, failed)),
            }
            "mark-failed".to_owned()
        }
        Mutation::Argument { at: i, key, change } => {
            let mut obj = arguments(&events[i]).expect("listed with arguments");
            let first = obj.keys().nth(key).expect("listed with this key").clone();
            let old = &obj[&first];
            match change {
                ArgChange::Change => {
                    let new = changed(old);
                    obj.insert(first.clone(), new);
                }
                ArgChange::Drop => {
                    obj.remove(&first);
                }
                ArgChange::Retype => {
                    let f = old.as_f64().unwrap_or(0.0);
                    obj.insert(first.clone(), serde_json::json!(f));
                }
                ArgChange::Replace => {
                    obj.insert(first.clone(), Value::String(UNRELATED.to_owned()));
                }
            }
            if let EventBody::ToolCall { call_id, tool, .. } = &events[i].body {
                out[i].body = EventBody::ToolCall {
                    call_id: call_id.clone(),
                    tool: tool.clone(),
                    args: Args::Object(Json::from_value(&obj)),
                };
            }
            format!("{} (seq {}, `{first}`)", change.name(), events[i].seq)
        }
        Mutation::LoopCall { at, failing } => {
            let r = result_of(events, at).expect("listed with a result");
            let result = if failing {
                failed_result(&events[r])
            } else {
                events[r].clone()
            };
            if failing {
                out[r] = result.clone();
            }
            let copies = (0..3).flat_map(|_| [events[at].clone(), result.clone()]);
            out.splice(r + 1..r + 1, copies);
            let what = if failing { "retry-spiral" } else { "loop-call" };
            format!("{what} (seq {})", events[at].seq)
        }
        Mutation::FailResult(r) => {
            out[r] = failed_result(&events[r]);
            format!("fail-result (seq {})", events[r].seq)
        }
        Mutation::HostileCall(i) => {
            super::hostile::into_call(&mut out, i);
            format!("hostile-call (seq {})", events[i].seq)
        }
        Mutation::HostileAnswer => {
            super::hostile::into_answer(&mut out);
            "hostile-answer".to_owned()
        }
        Mutation::InflateUsage => {
            for e in &mut out {
                if let EventBody::Inference(i) = &mut e.body {
                    if let Some(u) = i.usage.as_mut() {
                        u.input_tokens = u.input_tokens.saturating_mul(10);
                        u.output_tokens = u.output_tokens.saturating_mul(10);
                        u.cost_usd = u.cost_usd.map(|c| c * 10.0);
                    }
                }
            }
            "inflate-usage".to_owned()
        }
    };
    (name, renumber(out))
}

/// Whether an oracle is, or holds (in a composition), a `pattern` or `hosts` oracle.
fn looks_for_patterns(o: &crate::scenario::OracleSpec) -> bool {
    let (Some(t), Some(Ok(oracle))) = (crate::oracle::registry::lookup(o.type_name()), &o.oracle)
    else {
        return false;
    };
    (crate::oracle::compose::leaf_kinds(t.name, oracle).into_iter())
        .any(|k| matches!(k, "pattern" | "hosts"))
}

/// Every mutant of a trace: (operator description, events). Builds them all at once: for
/// tests; [`Strength::add_trace`] builds and judges one at a time.
pub fn mutants<'a>(events: &[Event<'a>]) -> Vec<(String, Vec<Event<'a>>)> {
    mutations(events)
        .into_iter()
        .map(|m| mutant(events, m))
        .collect()
}

/// One sentence per threshold below 1 in the scenario's oracles: such an oracle passes on a
/// partial score, so a mutant that breaks part of what it checks can survive.
fn weakened(scenario: &Scenario) -> Vec<String> {
    let mut out = Vec::new();
    for spec in &scenario.oracles {
        let (Some(Ok(oracle)), Some(t)) = (
            &spec.oracle,
            crate::oracle::registry::lookup(spec.type_name()),
        ) else {
            continue;
        };
        for (kind, threshold) in crate::oracle::compose::thresholds(t.name, oracle) {
            out.push(format!(
                "oracle {} (`{kind}`{}) passes at threshold {threshold}: a run that keeps {:.0} % of its score passes it",
                spec.index,
                if kind == t.name { String::new() } else { format!(" inside `{}`", t.name) },
                threshold * 100.0
            ));
        }
    }
    out
}

/// Whether the scenario's declared oracles (not `run-completed`) all pass on `trace`; `None`
/// when some oracle could not judge it.
fn declared_pass(scenario: &Scenario, trace: &Trace<'_>, run: Option<RunBudget>) -> Option<bool> {
    let trace = &*trace.judged(scenario.judge_copied_context);
    let results = match run {
        Some(run) => judge_facts(&scenario.oracles, &Facts::with_run_budget(trace, run)),
        None => judge_facts(&scenario.oracles, &Facts::new(trace)),
    };
    let declared = || results.iter().filter(|r| r.index.is_some());
    if declared().any(|r| r.could_not_judge() && !r.misconfigured) {
        return None;
    }
    Some(declared().all(|r| r.verdict == Verdict::Pass))
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
            sampled: Vec::new(),
            weakened: weakened(scenario),
            unjudged: 0,
        }
    }

    /// Mutates one passing trace of the scenario (named `name` in reports) and counts catches:
    /// one mutant at a time (memory linear in the trace), at most [`MUTANTS_PER_TRACE`] of
    /// them (sampled evenly beyond that, and recorded in `sampled`). The mutants' `expr`
    /// programs run within `run`, the whole measurement's budget, when given.
    pub fn add_trace(
        &mut self,
        scenario: &Scenario,
        name: &str,
        trace: &Trace<'_>,
        run: Option<RunBudget>,
    ) {
        self.traces += 1;
        let mut all = mutations(&trace.events);
        let declares = |o: &crate::scenario::OracleSpec| {
            let t = o.type_name();
            crate::oracle::behaviour::ORACLES
                .iter()
                .any(|b| t.eq_ignore_ascii_case(b))
        };
        if scenario.oracles.iter().any(declares) {
            all.extend(behaviour_mutations(&trace.events));
        }
        // Made only for scenarios with oracles that look for patterns in what a run did.
        if scenario.oracles.iter().any(looks_for_patterns) {
            all.extend(
                call_positions(&trace.events)
                    .into_iter()
                    .map(Mutation::HostileCall),
            );
            all.push(Mutation::HostileAnswer);
        }
        // Made only for scenarios whose oracles compare arguments with matchers: an argument
        // left out (a required key), retyped (`$type`), replaced by unrelated text (`$regex`).
        let matched = |o: &crate::scenario::OracleSpec| {
            o.params.values().any(crate::oracle::argmatch::has_matchers)
        };
        if scenario.oracles.iter().any(matched) {
            let changes = [ArgChange::Drop, ArgChange::Retype, ArgChange::Replace];
            all.extend(argument_mutations(&trace.events, &changes, true));
            // The first argument is changed already; the others too.
            let others = argument_mutations(&trace.events, &[ArgChange::Change], true);
            all.extend(
                (others.into_iter()).filter(|m| !matches!(m, Mutation::Argument { key: 0, .. })),
            );
        }
        // Made only for scenarios that hold runs to their usage, and traces that record some.
        let metered = |o: &crate::scenario::OracleSpec| {
            matches!(
                crate::oracle::canonical_type(o.type_name()),
                Some("max-tokens" | "max-cost")
            )
        };
        let has_usage = (trace.events.iter())
            .any(|e| matches!(&e.body, EventBody::Inference(i) if i.usage.is_some()));
        if has_usage && scenario.oracles.iter().any(metered) {
            all.push(Mutation::InflateUsage);
        }
        let chosen: Vec<Mutation> = if all.len() > MUTANTS_PER_TRACE {
            self.sampled
                .push((name.to_owned(), MUTANTS_PER_TRACE, all.len()));
            (0..MUTANTS_PER_TRACE)
                .map(|k| all[k * all.len() / MUTANTS_PER_TRACE])
                .collect()
        } else {
            all
        };
        for m in chosen {
            let (op, events) = mutant(&trace.events, m);
            let mutant = Trace {
                header: trace.header.clone(),
                events,
            };
            match declared_pass(scenario, &mutant, run) {
                None => self.unjudged += 1,
                Some(true) => {
                    self.total += 1;
                    self.survived.push(format!("{op} in `{name}`"));
                }
                Some(false) => {
                    self.total += 1;
                    self.caught += 1;
                }
            }
        }
    }
}
