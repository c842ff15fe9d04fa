//! Approval coverage: which decision answers which request, and whether a call was covered by an
//! approval request that was not denied before it ran.

use crate::trace::json::eq_ci;
use crate::trace::{EventBody, Trace};

/// An `approval_request` and the decisions that answered it.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Its `seq`.
    pub seq: u64,
    /// The tool it names (`None`: a blanket request).
    pub tool: Option<String>,
    /// The call it names.
    pub call_id: Option<String>,
    /// Its approval id.
    pub approval_id: Option<String>,
    /// `(seq, granted)` of each decision that answered it.
    pub answers: Vec<(u64, bool)>,
}

/// Every approval request of a trace, with its answers.
#[derive(Debug, Clone, Default)]
pub struct Approvals {
    /// Requests in order.
    pub requests: Vec<Request>,
    /// `seq` of decisions that answered no request.
    pub unmatched_decisions: Vec<u64>,
}

impl Approvals {
    /// Pairs decisions with requests. A decision answers the request with the same
    /// `approval_id`; failing that, the request with the same `call_id`; failing that, the latest
    /// earlier unanswered request with the same tool (a decision without a tool: the latest
    /// earlier unanswered request of any tool).
    pub fn new(trace: &Trace<'_>) -> Approvals {
        let mut out = Approvals::default();
        for e in &trace.events {
            match &e.body {
                EventBody::ApprovalRequest {
                    tool,
                    call_id,
                    approval_id,
                    ..
                } => out.requests.push(Request {
                    seq: e.seq,
                    tool: tool.as_ref().map(|t| t.to_string()),
                    call_id: call_id.as_ref().map(|c| c.to_string()),
                    approval_id: approval_id.as_ref().map(|a| a.to_string()),
                    answers: Vec::new(),
                }),
                EventBody::ApprovalDecision {
                    granted,
                    approval_id,
                    call_id,
                    tool,
                    ..
                } => {
                    let reqs = &out.requests;
                    let latest = |pred: &dyn Fn(&Request) -> bool| reqs.iter().rposition(pred);
                    let target = approval_id
                        .as_ref()
                        .and_then(|a| latest(&|r| r.approval_id.as_deref() == Some(a.as_str())))
                        .or_else(|| {
                            call_id
                                .as_ref()
                                .and_then(|c| latest(&|r| r.call_id.as_deref() == Some(c.as_str())))
                        })
                        .or_else(|| match tool {
                            Some(t) => latest(&|r| {
                                r.answers.is_empty()
                                    && r.tool.as_deref().is_some_and(|rt| eq_ci(rt, t))
                            }),
                            None => latest(&|r| r.answers.is_empty()),
                        });
                    match target {
                        Some(i) => out.requests[i].answers.push((e.seq, *granted)),
                        None => out.unmatched_decisions.push(e.seq),
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// The latest request that covers a call of `tool` with `call_id` at `seq`: made before the
    /// call, naming the tool or none, naming this call id or none, and not denied before the call.
    /// A request with no answer still covers.
    pub fn covering(&self, tool: &str, call_id: &str, seq: u64) -> Option<&Request> {
        self.requests.iter().rev().find(|r| {
            r.seq < seq
                && r.tool.as_deref().is_none_or(|t| eq_ci(t, tool))
                && r.call_id.as_deref().is_none_or(|c| c == call_id)
                && !r.answers.iter().any(|&(s, granted)| s < seq && !granted)
        })
    }
}
