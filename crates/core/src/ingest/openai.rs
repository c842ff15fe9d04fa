//! `openai-messages`: Chat Completions message lists (a JSON array, `{"messages": […]}`, arrays of
//! runs with `messages`/`traj` as tau-bench writes them, tau2-bench result files with
//! `simulations`, or JSON Lines of any of these) and Responses API item lists.
//!
//! | input | trace |
//! |---|---|
//! | `system` / `developer` content | `system_h` of the next `inference` |
//! | `user` content | `user_message` with the hashed prompt (tool calls a simulated user makes become `tool_call`s) |
//! | assistant message | `inference`: `input_h` = hash of the conversation so far, `output.text`, `output.tool_calls` (a batch), `usage`, `finish` |
//! | assistant `tool_calls` with a result | `tool_call` right after the inference, `tool_result` where the result appears |
//! | `tool` message (`tool_call_id`, or tau2's `id`) | `tool_result` (`ok: false` when it says `"error": true`, or for a tau-bench run when its content starts `Error: `) |
//! | last assistant text | `final_answer` |
//! | Responses `function_call` / `function_call_output` | the same, joined by `call_id` |
//! | Responses `reasoning` | a `note` holding only its hash |

use std::collections::{HashMap, HashSet};

use serde_json::Value;

mod array;
mod document;
mod split;

use split::{finish, read_whole};

use super::identity::{calls_of, canonical_message};
use super::naming::{self, RunIds};
use super::{
    IngestOptions, IngestOutcome, IngestedRun, InputFormat, RunBuilder, args_from, content_text,
};
use crate::trace::{
    EventBody, Finish, Inference, InferenceOutput, Json, PlannedCall, RunStatus, Str, Usage,
};

/// One run found in the input: its messages (or items), where it came from, and the
/// identifiers it carries.
struct RawRun {
    position: String,
    ids: RunIds,
    model: Option<String>,
    items: Vec<Value>,
    /// What the run's object held besides its messages, never read: kept only to be dropped with
    /// the run, by the worker that builds it, rather than one run after another as the input
    /// is split (a tau-bench run's `info` is most of its bytes).
    _rest: Option<serde_json::Map<String, Value>>,
}

/// A scalar as an identifier (`3`, `"12"`).
fn id_text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn runs_of(
    value: Value,
    position: String,
    inherited: &RunIds,
    out: &mut Vec<RawRun>,
    outcome: &mut IngestOutcome,
) {
    match value {
        Value::Array(items)
            if items
                .iter()
                .all(|i| i.get("role").is_some() || i.get("type").is_some()) =>
        {
            out.push(RawRun {
                position,
                ids: inherited.clone(),
                model: None,
                items,
                _rest: None,
            });
        }
        Value::Array(runs) => {
            for (i, r) in runs.into_iter().enumerate() {
                let at = format!("{position}, run {}", i + 1);
                runs_of(r, at, inherited, out, outcome);
            }
        }
        Value::Object(mut o) if o.get("simulations").is_some_and(Value::is_array) => {
            // tau2-bench results: `{info, tasks, simulations: [{task_id, trial, messages, …}]}`.
            let ids = RunIds {
                source: Some("tau2".into()),
                domain: id_text(
                    o.get("info")
                        .and_then(|i| i.pointer("/environment_info/domain_name")),
                ),
                // The agent's model, so two models' runs of one task are two cases.
                agent: id_text(o.get("info").and_then(|i| i.pointer("/agent_info/llm"))),
                ..inherited.clone()
            };
            let llm = o
                .get("info")
                .and_then(|i| i.pointer("/agent_info/llm"))
                .cloned();
            if let Some(Value::Array(sims)) = o.remove("simulations") {
                for (i, mut sim) in sims.into_iter().enumerate() {
                    let at = format!("{position}, simulation {}", i + 1);
                    // The agent's model is the header's (a simulation names none itself).
                    if let (Some(sim), Some(llm @ Value::String(_))) = (sim.as_object_mut(), &llm) {
                        sim.entry("model").or_insert_with(|| llm.clone());
                    }
                    runs_of(sim, at, &ids, out, outcome);
                }
            }
        }
        Value::Object(mut o) => {
            let items = o
                .remove("messages")
                .or_else(|| o.remove("traj"))
                .or_else(|| o.remove("input"));
            let mut ids = inherited.clone();
            ids.scenario = id_text(o.get("scenario")).or(ids.scenario);
            ids.task = id_text(o.get("task_id")).or(ids.task);
            ids.trial = id_text(o.get("trial")).or(ids.trial);
            if ids.task.is_some() && ids.source.is_none() {
                // tau-bench runs: `{task_id, trial, info, traj}`.
                ids.source = Some("tau-bench".into());
            }
            if ids.task.is_none() {
                ids.id = id_text(o.get("run_id")).or_else(|| id_text(o.get("id")));
            }
            match items {
                Some(Value::Array(items)) => out.push(RawRun {
                    position,
                    ids,
                    model: o.get("model").and_then(Value::as_str).map(str::to_owned),
                    items,
                    _rest: Some(o),
                }),
                _ => outcome.reject(position, "not a message list: expected an array of messages or an object with `messages`"),
            }
        }
        _ => outcome.reject(position, "not a message list"),
    }
}

/// Whether `--name` puts the trial in the name (then it is not the header's `trial`).
fn names_trial(opts: &IngestOptions) -> bool {
    opts.name.as_deref().is_some_and(|n| n.contains("{trial}"))
}

/// Imports Chat Completions or Responses API recordings; runs are built in parallel.
pub(crate) fn ingest(bytes: &[u8], opts: &IngestOptions) -> IngestOutcome {
    // A benchmark's array of runs is read, split and built element by element, in parallel.
    let pieces = array::pieces(bytes, opts).unwrap_or_else(|| vec![read_whole(bytes)]);
    finish(pieces, opts)
}

/// Builds one run, named `named`, into `outcome`.
fn build(
    run: &RawRun,
    named: Result<(String, String), String>,
    opts: &IngestOptions,
    outcome: &mut IngestOutcome,
) {
    let (scenario, case) = match named {
        Ok(n) => n,
        Err(e) => return outcome.reject(&run.position, e),
    };
    let responses = run
        .items
        .iter()
        .any(|m| m.get("role").is_none() && m.get("type").is_some());
    let built = if responses {
        responses_run(run, &scenario, &case, opts, outcome)
    } else {
        chat_run(run, &scenario, &case, opts, outcome)
    };
    if let Some(trace) = built {
        let run_out = IngestedRun::new(scenario, case, trace);
        outcome.add(run_out, &run.position, opts);
    }
}

/// One model turn: an inference whose tool calls form a batch.
struct Turn {
    model: Option<String>,
    /// The hash of the conversation so far (`input_h`).
    input: Str<'static>,
    system: Option<Str<'static>>,
    consumes: Vec<Str<'static>>,
    text: Option<String>,
    planned: Vec<PlannedCall<'static>>,
    usage: Option<Usage>,
}

/// Records a turn: the inference, then a `tool_call` for each planned call that got a result.
/// Returns the turn's text, the final answer so far.
fn push_turn(b: &mut RunBuilder, turn: Turn, answered: impl Fn(&str) -> bool) -> Option<String> {
    let input_h = Some(turn.input);
    let calls = (!turn.planned.is_empty()).then(|| turn.planned.clone());
    b.push(
        None,
        EventBody::Inference(Box::new(Inference {
            model: turn.model.map(Str::from),
            input_h,
            system_h: turn.system,
            consumes: (!turn.consumes.is_empty()).then_some(turn.consumes),
            output: Some(InferenceOutput {
                text: turn.text.clone().map(Str::from),
                tool_calls: calls,
            }),
            usage: turn.usage,
            finish: Some(if turn.planned.is_empty() {
                Finish::Stop
            } else {
                Finish::ToolCall
            }),
            ..Inference::default()
        })),
    );
    for p in turn
        .planned
        .into_iter()
        .filter(|p| answered(p.call_id.as_str()))
    {
        b.push(
            None,
            EventBody::ToolCall {
                call_id: p.call_id,
                tool: p.tool,
                args: p.args,
            },
        );
    }
    turn.text
}

/// What both message shapes (Chat Completions, Responses) build a run from: the trace being
/// written and the conversation's state as it is read, message by message.
struct Conversation<'o> {
    b: RunBuilder,
    outcome: &'o mut IngestOutcome,
    /// The hash of the latest system or developer text, for the next inference.
    system: Option<Str<'static>>,
    /// Call ids seen so far (planned or executed), with their tools.
    known: HashMap<String, String>,
    /// Results not yet handed back to the model (the next inference's `consumes`).
    pending_consumes: Vec<Str<'static>>,
    final_answer: Option<String>,
    /// Where the run is in its input, for a problem sealing it.
    position: String,
}

impl<'o> Conversation<'o> {
    fn new(
        run: &RawRun,
        scenario: &str,
        case: &str,
        opts: &IngestOptions,
        outcome: &'o mut IngestOutcome,
    ) -> Self {
        Conversation {
            b: RunBuilder::new(
                InputFormat::OpenaiMessages,
                // A `--name` that spells the trial out makes each trial its own case.
                (
                    scenario,
                    case,
                    run.ids.trial.as_deref().filter(|_| !names_trial(opts)),
                ),
                run.model.as_deref(),
                opts,
            ),
            outcome,
            system: None,
            known: HashMap::new(),
            pending_consumes: Vec::new(),
            final_answer: None,
            position: run.position.clone(),
        }
    }

    /// System or developer text: hashed, for the next inference.
    fn system(&mut self, content: &Value) {
        self.system = content_text(content).map(|t| self.b.prompt(&t).h);
    }

    /// A user turn: its text hashed into a `user_message`.
    fn user(&mut self, content: &Value) {
        if let Some(t) = content_text(content) {
            let prompt = self.b.prompt(&t);
            self.b
                .push(None, EventBody::UserMessage { prompt, id: None });
        }
    }

    /// A call the model planned (arguments that are not JSON are kept as a string, with a
    /// warning at `at`).
    fn planned(
        &mut self,
        at: &str,
        id: &str,
        tool: &str,
        arguments: Option<&Value>,
    ) -> PlannedCall<'static> {
        let (args, invalid) = args_from(arguments);
        if invalid {
            self.outcome.warn(
                at,
                format!("the arguments of call `{id}` are not valid JSON; kept as a string"),
            );
        }
        self.known.insert(id.to_owned(), tool.to_owned());
        PlannedCall {
            call_id: Str::from(id),
            tool: Str::from(tool),
            args,
        }
    }

    /// One model response (an inference, and the calls it planned that were executed).
    fn turn(
        &mut self,
        model: Option<String>,
        input: Str<'static>,
        text: Option<String>,
        planned: Vec<PlannedCall<'static>>,
        usage: Option<Usage>,
        answered: impl Fn(&str) -> bool,
    ) {
        let turn = Turn {
            model,
            input,
            system: self.system.clone(),
            consumes: std::mem::take(&mut self.pending_consumes),
            text,
            planned,
            usage,
        };
        if let Some(t) = push_turn(&mut self.b, turn, answered) {
            self.final_answer = Some(t);
        }
    }

    /// A tool result (`what`, in messages) for call `id`; `false` (and the run rejected at
    /// `at`) when no call has that id.
    fn result(
        &mut self,
        (at, what): (&str, &str),
        id: String,
        ok: bool,
        output: &Value,
        error: Option<String>,
    ) -> bool {
        if !self.known.contains_key(&id) {
            self.outcome
                .reject(at, format!("{what} for unknown call id `{id}`"));
            return false;
        }
        self.b.push(
            None,
            EventBody::ToolResult {
                call_id: Str::from(id.clone()),
                ok,
                output: Some(Json::from_value(output)),
                output_h: None,
                error: error.map(Str::from),
            },
        );
        self.pending_consumes.push(Str::from(id));
        true
    }

    /// The run sealed; `None` when it cannot be (refused, with why).
    fn finish(self) -> Option<crate::trace::SealedTrace> {
        let sealed = self.b.finish(self.final_answer, RunStatus::Completed, None);
        let outcome = self.outcome;
        sealed
            .map_err(|e| outcome.reject(self.position, e.to_string()))
            .ok()
    }
}

fn chat_run(
    run: &RawRun,
    scenario: &str,
    case: &str,
    opts: &IngestOptions,
    outcome: &mut IngestOutcome,
) -> Option<crate::trace::SealedTrace> {
    let items = &run.items;
    let tau_bench = run.ids.source.as_deref() == Some("tau-bench");
    // Which calls get a result (tau2 links results by `id`, OpenAI by `tool_call_id`).
    let result_id = |m: &Value| {
        (super::id_str(m.get("tool_call_id")).or_else(|| super::id_str(m.get("id"))))
            .map(str::to_owned)
    };
    let answered: HashSet<String> = items
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(result_id)
        .collect();
    let mut c = Conversation::new(run, scenario, case, opts, outcome);
    // The conversation so far in its canonical form (`[m1,m2,…]`, see `canonical_message`),
    // hashed as it grows, one message at a time, without hashing every earlier message again
    // at each turn. (The raw text is kept only for the developer opt-in's sidecar.)
    let mut so_far = opts.hasher.growing();
    so_far.push("[");
    let mut text_so_far = opts.raw_opt_in.then(|| String::from("["));
    for (i, m) in items.iter().enumerate() {
        if i > 0 {
            let piece = canonical_message(&items[i - 1]);
            let sep = if i > 1 { "," } else { "" };
            so_far.push(sep);
            so_far.push(&piece);
            if let Some(t) = &mut text_so_far {
                t.push_str(sep);
                t.push_str(&piece);
            }
        }
        let at = format!("{}, message {}", run.position, i + 1);
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        match role {
            "system" | "developer" => c.system(&m["content"]),
            "user" => {
                c.user(&m["content"]);
                // tau2's user simulator calls tools itself: record them as calls, with no inference.
                for call in calls_of(m) {
                    let (args, _) = args_from(Some(&call.args));
                    c.known.insert(call.id.clone(), call.tool.clone());
                    if answered.contains(&call.id) {
                        c.b.push(
                            None,
                            EventBody::ToolCall {
                                call_id: Str::from(call.id),
                                tool: Str::from(call.tool),
                                args,
                            },
                        );
                    }
                }
            }
            "assistant" => {
                let conversation = match &text_so_far {
                    Some(t) => c.b.prompt(&format!("{t}]")).h,
                    None => so_far.prompt_with("]").h,
                };
                let planned = (calls_of(m).iter())
                    .map(|call| c.planned(&at, &call.id, &call.tool, Some(&call.args)))
                    .collect();
                let text = content_text(&m["content"]).filter(|t| !t.is_empty());
                let model = m.get("model").and_then(Value::as_str).map(str::to_owned);
                c.turn(
                    model,
                    conversation,
                    text,
                    planned,
                    super::usage::usage_of(m),
                    |id| answered.contains(id),
                );
            }
            "tool" | "function" => {
                let Some(id) = result_id(m) else {
                    c.outcome
                        .reject(&at, "a tool result without `tool_call_id`");
                    return None;
                };
                let output = m.get("content").cloned().unwrap_or(Value::Null);
                // tau-bench's environment answers a tool that raised with `Error: <message>`
                // as the tool's content, and marks nothing else.
                let tau_error =
                    tau_bench && (output.as_str()).is_some_and(|t| t.starts_with("Error: "));
                let failed = tau_error || m.get("error").and_then(Value::as_bool).unwrap_or(false);
                let error = failed.then(|| content_text(&output).unwrap_or_default());
                if !c.result((&at, "a tool result"), id, !failed, &output, error) {
                    return None;
                }
            }
            other => c
                .outcome
                .warn(&at, format!("message role `{other}` ignored")),
        }
    }
    c.finish()
}

fn responses_run(
    run: &RawRun,
    scenario: &str,
    case: &str,
    opts: &IngestOptions,
    outcome: &mut IngestOutcome,
) -> Option<crate::trace::SealedTrace> {
    let items = &run.items;
    let answered: HashSet<&str> = items
        .iter()
        .filter(|m| m["type"] == "function_call_output")
        .filter_map(|m| m["call_id"].as_str())
        .collect();
    let mut c = Conversation::new(run, scenario, case, opts, outcome);
    let mut i = 0;
    while i < items.len() {
        let m = &items[i];
        let at = format!("{}, item {}", run.position, i + 1);
        let kind = m.get("type").and_then(Value::as_str).unwrap_or("message");
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        let is_output = |m: &Value| {
            matches!(m["type"].as_str(), Some("function_call" | "reasoning"))
                || (m["type"] == "message" && m["role"] == "assistant")
        };
        if is_output(m) {
            // Consecutive model output items form one inference (its calls are a batch).
            let start = i;
            while i < items.len() && is_output(&items[i]) {
                i += 1;
            }
            let mut planned = Vec::new();
            let mut texts = Vec::new();
            for g in &items[start..i] {
                match g["type"].as_str() {
                    Some("function_call") => {
                        let id = g["call_id"].as_str().unwrap_or_default();
                        let tool = g["name"].as_str().unwrap_or_default();
                        planned.push(c.planned(&at, id, tool, g.get("arguments")));
                    }
                    Some("reasoning") => {
                        // Reasoning is kept only as a hash.
                        let h = c.b.prompt(&g.to_string()).h;
                        c.b.push(
                            None,
                            EventBody::Note {
                                text: Str::from(format!("reasoning {h}")),
                            },
                        );
                    }
                    _ => texts.extend(content_text(&g["content"])),
                }
            }
            let text = Some(texts.join("\n")).filter(|t| !t.is_empty());
            let input = serde_json::to_string(&items[..start]).unwrap_or_default();
            let input = c.b.prompt(&input).h;
            c.turn(None, input, text, planned, None, |id| answered.contains(id));
            continue;
        }
        match (kind, role) {
            ("function_call_output", _) => {
                let id = m["call_id"].as_str().unwrap_or_default().to_owned();
                if !c.result(
                    (&at, "a function_call_output"),
                    id,
                    true,
                    &m["output"],
                    None,
                ) {
                    return None;
                }
            }
            ("message", "system" | "developer") => c.system(&m["content"]),
            ("message", "user") => c.user(&m["content"]),
            (other, _) => c.outcome.warn(&at, format!("item type `{other}` ignored")),
        }
        i += 1;
    }
    c.finish()
}
