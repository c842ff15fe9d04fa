//! The normalised behaviour of a run: what a person approves and what drift is measured against.
//!
//! Normalisation keeps what the run *did* and drops what varies between identical runs:
//! timestamps, durations, request/message/approval ids, `reply_to`, `mtime_ms` and header metadata
//! are dropped; call ids are renamed `call#1`, `call#2`… in order of first appearance anywhere in
//! the trace, so links between calls, results and approvals survive; calls planned together by one
//! inference (a batch) are sorted by tool then canonical arguments, since they may run in any
//! order; numbers are written canonically (`6.0` is `6`, `-0` is `0`).

use std::collections::BTreeMap;

use foldhash::{HashMap, HashMapExt};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::oracle::{Facts, OracleResult};
use crate::trace::{EventBody, Trace};

/// One tool call as approved.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallRecord {
    /// Tool name.
    pub tool: String,
    /// Canonical arguments.
    pub args: Value,
    /// Renamed call id (`call#N`).
    pub call: String,
    /// `ok` of its result (`null` when no result was recorded).
    pub ok: Option<bool>,
    /// `error` of its result.
    pub error: Option<String>,
    /// `b3:` of the result's canonical content (its `output`, else its recorded `output_h`);
    /// absent when no result content was recorded, and in baselines written before results
    /// were compared (such a baseline is not drift for that reason alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// What the result's content reads, for whoever reviews drift (`git diff baselines/`, the
    /// drift's lines): its text as JSON (a string quoted, anything else canonical and compact),
    /// at most 400 characters (a longer one cut, saying how long it was),
    /// secrets masked. Information only, as the tool version is: never compared (`result` is),
    /// and absent where no content was recorded (a result recorded only as `output_h`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_text: Option<String>,
}

/// Calls compare on what they did; `result_text` only shows what `result` stands for.
impl PartialEq for CallRecord {
    fn eq(&self, other: &Self) -> bool {
        (self.tool == other.tool)
            && self.args == other.args
            && self.call == other.call
            && self.ok == other.ok
            && self.error == other.error
            && self.result == other.result
    }
}

/// The most characters of a result's content a baseline keeps to show ([`CallRecord::result_text`]).
pub(crate) const RESULT_TEXT_CHARS: usize = 400;

/// [`CallRecord::result_text`] of a recorded result's content.
pub(crate) fn result_text(output: &crate::trace::Json<'_>) -> String {
    let raw = output.raw();
    // A string is shown as written (quoted); anything else in its canonical form, unless it is
    // too large to be worth making canonical only to be cut.
    let text = if raw.starts_with('"') || raw.len() > 64 << 10 {
        std::borrow::Cow::Borrowed(raw)
    } else {
        std::borrow::Cow::Owned(canonical(&output.value()).to_string())
    };
    let masked = crate::privacy::mask::mask_secrets(&text, &Default::default());
    // Cut where the character after the last one kept starts, if there is one.
    match masked.char_indices().nth(RESULT_TEXT_CHARS) {
        None => masked.into_owned(),
        Some((cut, _)) => {
            let total = masked.chars().count();
            format!("{}… ({total} characters)", &masked[..cut])
        }
    }
}

/// An approval request and its decisions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRecord {
    /// The tool it names (`null`: a blanket request).
    pub tool: Option<String>,
    /// The call it names (renamed).
    pub call: Option<String>,
    /// Whether a request was recorded (`false` for a decision that answered no request).
    pub requested: bool,
    /// `granted` of each decision, in order.
    pub decisions: Vec<bool>,
}

/// A message standing at the end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageRecord {
    /// `preview` or `final`.
    pub phase: String,
    /// Text after edits.
    pub text: String,
}

/// An artifact as last written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactRecord {
    /// Normalised path.
    pub path: String,
    /// Hash of its bytes.
    pub h: String,
}

/// Token usage totals and request count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageRecord {
    /// Sum of `input_tokens`.
    pub input_tokens: u64,
    /// Sum of `output_tokens`.
    pub output_tokens: u64,
    /// Number of `inference` events.
    pub requests: u64,
    /// The run's cost in US dollars, when every inference's is known (recorded, or priced with
    /// the run's price table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// The normalised behaviour of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Behaviour {
    /// Tool calls in order (batches sorted).
    pub tool_calls: Vec<CallRecord>,
    /// Approvals requested and decided.
    pub approvals: Vec<ApprovalRecord>,
    /// Messages standing at the end, by position.
    pub messages: Vec<MessageRecord>,
    /// The final answer (`null` when empty).
    pub final_answer: Option<String>,
    /// `completed`, `failed`, `cancelled` or `unknown`.
    pub status: String,
    /// Artifacts, last write per path, sorted by path.
    pub artifacts: Vec<ArtifactRecord>,
    /// Usage totals.
    pub usage: UsageRecord,
    /// Every oracle verdict, keyed `<index>:<type>`, and `run-completed`.
    pub oracles: BTreeMap<String, String>,
}

/// Approvals of calls of one batch, asked one after another, follow their calls' sorted order
/// rather than the order the calls ran in (which a baseline does not record).
fn order_batch_approvals(records: &mut [(u64, ApprovalRecord)], calls: &[(usize, CallRecord)]) {
    let place: HashMap<&str, (usize, usize)> = (calls.iter().enumerate())
        .map(|(i, (group, c))| (c.call.as_str(), (*group, i)))
        .collect();
    let of = |r: &(u64, ApprovalRecord)| r.1.call.as_deref().and_then(|c| place.get(c)).copied();
    let mut start = 0;
    while start < records.len() {
        let group = of(&records[start]).map(|(g, _)| g);
        let mut end = start + 1;
        while group.is_some() && end < records.len() && of(&records[end]).map(|(g, _)| g) == group {
            end += 1;
        }
        records[start..end].sort_by_key(|r| of(r).map(|(_, i)| i));
        start = end;
    }
}

/// The number of a renamed call id (`call#12` → 12), so `call#10` sorts after `call#9`.
fn call_number(name: &str) -> u64 {
    name.strip_prefix("call#")
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX)
}

pub(crate) use crate::trace::values::make_canonical;
pub use crate::trace::values::{
    canonical, normalize_artifact_path, recorded_result_hash, result_hash,
};

/// The key an oracle result is stored under: `<index>:<type>`, or the type for synthetic ones.
pub fn oracle_key(r: &OracleResult) -> String {
    match r.index {
        Some(i) => format!("{i}:{}", r.kind),
        None => r.kind.to_string(),
    }
}

struct CallIds(HashMap<String, String>);

impl CallIds {
    fn name(&mut self, id: &str) -> String {
        let n = self.0.len() + 1;
        self.0
            .entry(id.to_owned())
            .or_insert_with(|| format!("call#{n}"))
            .clone()
    }
}

impl Behaviour {
    /// Normalises a judged trace (without the events copied from an earlier run as context).
    pub fn from_trace(trace: &Trace<'_>, results: &[OracleResult]) -> Behaviour {
        Behaviour::from_facts(&Facts::new(&trace.judged(false)), results)
    }

    /// [`Behaviour::from_trace`] over facts already derived for judging.
    pub fn from_facts(facts: &Facts<'_, '_>, results: &[OracleResult]) -> Behaviour {
        let trace = facts.trace;
        let mut ids = CallIds(HashMap::new());
        let mut artifacts: BTreeMap<String, String> = BTreeMap::new();
        // First pass: name call ids in order of first appearance anywhere.
        for e in &trace.events {
            match &e.body {
                EventBody::Inference(i) => {
                    for c in i.consumes.iter().flatten() {
                        ids.name(c);
                    }
                    for c in i.output.iter().flat_map(|o| o.tool_calls.iter().flatten()) {
                        ids.name(&c.call_id);
                    }
                }
                EventBody::ToolCall { call_id, .. } => {
                    ids.name(call_id);
                }
                EventBody::ToolResult { call_id, .. } => {
                    ids.name(call_id);
                }
                EventBody::ApprovalRequest {
                    call_id: Some(c), ..
                }
                | EventBody::ApprovalDecision {
                    call_id: Some(c), ..
                } => {
                    ids.name(c);
                }
                EventBody::Artifact { path, h, .. } => {
                    artifacts.insert(normalize_artifact_path(path), h.to_string());
                }
                _ => {}
            }
        }
        let mut calls: Vec<(usize, CallRecord)> = Vec::new();
        let mut group_start: HashMap<u64, usize> = HashMap::new();
        for (i, (c, batch)) in facts.calls.iter().zip(facts.batches()).enumerate() {
            let group = match batch {
                Some(b) => *group_start.entry(*b).or_insert(i),
                None => i,
            };
            // Its own result (a reused call id pairs each call with the result after it).
            let outcome = (facts.call_results()[i]).and_then(|j| match &trace.events[j].body {
                EventBody::ToolResult {
                    ok,
                    error,
                    output,
                    output_h,
                    ..
                } => {
                    let (result, text) = match (output, output_h) {
                        (Some(o), _) => (Some(recorded_result_hash(o)), Some(result_text(o))),
                        (None, Some(h)) => (Some(h.to_string()), None),
                        (None, None) => (None, None),
                    };
                    Some((
                        Some(*ok),
                        error.as_ref().map(|s| s.to_string()),
                        (result, text),
                    ))
                }
                _ => None,
            });
            let (ok, error, (result, result_text)) = outcome.unwrap_or((None, None, (None, None)));
            calls.push((
                group,
                CallRecord {
                    tool: c.tool.to_string(),
                    args: {
                        let mut args = c.args.value();
                        make_canonical(&mut args);
                        args
                    },
                    call: ids.name(c.call_id),
                    ok,
                    error,
                    result,
                    result_text,
                },
            ));
        }
        // Calls of one batch sort by tool then canonical arguments, and calls equal in both by
        // outcome and then name, so the order they ran in never shows; batches keep their order.
        // With groups strictly rising (no batch of two calls), the order is the sorted one.
        if !calls.windows(2).all(|w| w[0].0 < w[1].0) {
            calls.sort_by_cached_key(|(group, c)| {
                (
                    *group,
                    c.tool.clone(),
                    c.args.to_string(),
                    c.ok,
                    c.error.clone(),
                    c.result.clone(),
                    call_number(&c.call),
                )
            });
        }
        let approvals = facts.approvals();
        let mut approval_records: Vec<(u64, ApprovalRecord)> = approvals
            .requests
            .iter()
            .map(|r| {
                (
                    r.seq,
                    ApprovalRecord {
                        tool: r.tool.clone(),
                        call: r.call_id.as_deref().map(|c| ids.name(c)),
                        requested: true,
                        decisions: r.answers.iter().map(|(_, g)| *g).collect(),
                    },
                )
            })
            .collect();
        for e in &trace.events {
            if let EventBody::ApprovalDecision {
                granted,
                call_id,
                tool,
                ..
            } = &e.body
            {
                if approvals.unmatched_decisions.contains(&e.seq) {
                    approval_records.push((
                        e.seq,
                        ApprovalRecord {
                            tool: tool.as_ref().map(|t| t.to_string()),
                            call: call_id.as_deref().map(|c| ids.name(c)),
                            requested: false,
                            decisions: vec![*granted],
                        },
                    ));
                }
            }
        }
        approval_records.sort_by_key(|(seq, _)| *seq);
        order_batch_approvals(&mut approval_records, &calls);
        let mut standing: Vec<_> = facts.standing().collect();
        standing.sort_by_key(|m| m.seq);
        Behaviour {
            tool_calls: calls.into_iter().map(|(_, c)| c).collect(),
            approvals: approval_records.into_iter().map(|(_, a)| a).collect(),
            messages: standing
                .into_iter()
                .map(|m| MessageRecord {
                    phase: m.phase.as_str().to_owned(),
                    text: m.text.clone(),
                })
                .collect(),
            final_answer: Some(facts.final_answer.text.clone()).filter(|t| !t.is_empty()),
            status: trace
                .run_end()
                .map_or("unknown", |(_, s)| s.as_str())
                .to_owned(),
            artifacts: artifacts
                .into_iter()
                .map(|(path, h)| ArtifactRecord { path, h })
                .collect(),
            // The same totals the report's rows hold (counts saturating: they are untrusted).
            usage: super::usage::RunUsage::of(trace).record(),
            oracles: results
                .iter()
                .map(|r| (oracle_key(r), r.verdict.as_str().to_owned()))
                .collect(),
        }
    }
}

#[cfg(test)]
#[path = "behaviour_tests.rs"]
mod tests;
