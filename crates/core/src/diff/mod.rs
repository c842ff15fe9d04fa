//! Drift: how a run's normalised behaviour moved from its approved baseline, as findings with a
//! category and a readable unified diff.

pub mod group_drift;
pub(crate) mod render;
pub mod report;
pub mod sets;
pub mod trial_drift;

use serde::{Deserialize, Serialize};

use crate::baseline::{ApprovalRecord, Behaviour, CallRecord};

/// What kind of drift a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DriftCategory {
    /// An oracle verdict went pass → fail.
    Regression,
    /// An oracle verdict went fail → pass (the baseline is stale).
    Improvement,
    /// The scenario's oracle list changed.
    OraclesChanged,
    /// The sequence of tool names changed.
    ToolCallsChanged,
    /// Same tool names, different arguments or ok/error.
    ArgumentsChanged,
    /// Same calls, but a tool returned different content.
    ToolResultsChanged,
    /// Approvals requested or decided differently.
    ApprovalsChanged,
    /// Run status changed.
    StatusChanged,
    /// Artifact paths or hashes changed.
    ArtifactsChanged,
    /// Final answer text changed.
    FinalAnswerChanged,
    /// Standing messages changed.
    MessagesChanged,
    /// A usage total moved by more than the tolerance.
    UsageOutsideTolerance,
    /// A trace with no approved baseline.
    New,
    /// An approved baseline with no trace.
    Obsolete,
    /// Two traces share one (scenario, case): no comparison is possible.
    Ambiguous,
    /// The approved baseline could not be read.
    BaselineInvalid,
    /// A tool was called in a different share of the trials (sets of trials).
    ToolUsageChanged,
    /// A usage number's distribution moved (sets of trials).
    UsageChanged,
    /// The current trials did something no approved trial did (sets, `--drift strict`).
    UnseenBehaviour,
    /// A case is a single trace on one side and a set of trials on the other.
    TrialsChanged,
    /// A group-sequential regression test (`trials.drift`) has not reached a decision: more
    /// current trials are needed.
    DriftUndecided,
}

/// `--drift`: which categories fail the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DriftMode {
    /// Structural changes fail, wording and usage changes warn.
    #[default]
    Default,
    /// Every category fails.
    Strict,
    /// Nothing fails; everything is reported.
    Warn,
    /// No comparison at all.
    Ignore,
}

impl DriftCategory {
    /// The category id.
    pub fn as_str(self) -> &'static str {
        match self {
            DriftCategory::Regression => "regression",
            DriftCategory::Improvement => "improvement",
            DriftCategory::OraclesChanged => "oracles-changed",
            DriftCategory::ToolCallsChanged => "tool-calls-changed",
            DriftCategory::ArgumentsChanged => "arguments-changed",
            DriftCategory::ToolResultsChanged => "tool-results-changed",
            DriftCategory::ApprovalsChanged => "approvals-changed",
            DriftCategory::StatusChanged => "status-changed",
            DriftCategory::ArtifactsChanged => "artifacts-changed",
            DriftCategory::FinalAnswerChanged => "final-answer-changed",
            DriftCategory::MessagesChanged => "messages-changed",
            DriftCategory::UsageOutsideTolerance => "usage-outside-tolerance",
            DriftCategory::New => "new",
            DriftCategory::Obsolete => "obsolete",
            DriftCategory::Ambiguous => "ambiguous",
            DriftCategory::BaselineInvalid => "baseline-invalid",
            DriftCategory::ToolUsageChanged => "tool-usage-changed",
            DriftCategory::UsageChanged => "usage-changed",
            DriftCategory::UnseenBehaviour => "unseen-behaviour",
            DriftCategory::TrialsChanged => "trials-changed",
            DriftCategory::DriftUndecided => "drift-undecided",
        }
    }

    /// Whether a finding of this category fails the run under `mode`. A comparison that could
    /// not happen (`ambiguous`, `baseline-invalid`) is an error and fails in every mode.
    pub fn fails(self, mode: DriftMode) -> bool {
        match self {
            DriftCategory::Ambiguous | DriftCategory::BaselineInvalid => true,
            // Informational: a stochastic agent may always do something new.
            DriftCategory::UnseenBehaviour => false,
            _ => match mode {
                DriftMode::Strict => true,
                DriftMode::Warn | DriftMode::Ignore => false,
                DriftMode::Default => match self {
                    DriftCategory::Regression
                    | DriftCategory::OraclesChanged
                    | DriftCategory::ToolCallsChanged
                    | DriftCategory::ArgumentsChanged
                    | DriftCategory::ToolResultsChanged
                    | DriftCategory::ApprovalsChanged
                    | DriftCategory::StatusChanged
                    | DriftCategory::ArtifactsChanged
                    | DriftCategory::New
                    | DriftCategory::Obsolete
                    | DriftCategory::Ambiguous
                    | DriftCategory::BaselineInvalid
                    | DriftCategory::ToolUsageChanged
                    | DriftCategory::TrialsChanged
                    | DriftCategory::DriftUndecided => true,
                    DriftCategory::Improvement
                    | DriftCategory::UsageChanged
                    | DriftCategory::UnseenBehaviour
                    | DriftCategory::FinalAnswerChanged
                    | DriftCategory::MessagesChanged
                    | DriftCategory::UsageOutsideTolerance => false,
                },
            },
        }
    }
}

/// One difference from the approved baseline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriftFinding {
    /// Category id.
    pub category: DriftCategory,
    /// What moved, in a sentence.
    pub detail: String,
    /// A unified diff of the section that moved, when a diff helps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// Whether this finding fails the run under the `--drift` mode in force.
    pub fails: bool,
}

impl DriftFinding {
    /// Masks every secret the scan recognises (and `waived` does not list) in the detail and
    /// the diff.
    pub fn mask_secrets(&mut self, waived: &std::collections::HashSet<String>) {
        crate::privacy::mask::mask_string(&mut self.detail, waived);
        if let Some(diff) = &mut self.diff {
            crate::privacy::mask::mask_string(diff, waived);
        }
    }

    /// A finding, its `fails` flag set from `mode`.
    pub fn new(
        category: DriftCategory,
        detail: impl Into<String>,
        diff: Option<String>,
        mode: DriftMode,
    ) -> Self {
        DriftFinding {
            category,
            detail: detail.into(),
            diff: diff.filter(|d| !d.is_empty()),
            fails: category.fails(mode),
        }
    }
}

/// A call and its outcome, as a line of a calls diff.
fn call_line(c: &CallRecord) -> String {
    let outcome = match (c.ok, &c.error) {
        (Some(true), None) => "ok".to_owned(),
        (Some(ok), Some(e)) => format!(
            "{} error {}",
            if ok { "ok" } else { "failed" },
            serde_json::json!(e)
        ),
        (Some(false), None) => "failed".to_owned(),
        (None, _) => "no result".to_owned(),
    };
    format!("{} {} {} -> {outcome}", c.call, c.tool, wrapped(&c.args))
}

/// A call with what its tool returned — the text the baseline keeps, else its hash — as a line
/// of a results diff.
fn result_line(c: &CallRecord) -> String {
    let result = match (&c.result_text, c.result.as_deref()) {
        // A cut text is told apart from another cut the same by its hash.
        (Some(text), Some(h)) if text.ends_with(" characters)") => {
            format!("{text} [{}]", &h[..h.len().min(11)])
        }
        (Some(text), _) => text.clone(),
        (None, Some(h)) => format!(
            "{h} (no content to show: recorded as a hash, or approved before contents were kept)"
        ),
        (None, None) => "no content".to_owned(),
    };
    format!("{} {} {} => {result}", c.call, c.tool, wrapped(&c.args))
}

/// Whether two calls agree on everything but the content their tool returned.
fn same_call(a: &CallRecord, b: &CallRecord) -> bool {
    a.tool == b.tool && a.args == b.args && a.call == b.call && a.ok == b.ok && a.error == b.error
}

/// Whether a tool's result moved: only compared where the approved baseline recorded result
/// hashes (a baseline written before they were compared has none, and is not drift for that).
fn result_moved(approved: &CallRecord, current: &CallRecord) -> bool {
    approved.result.is_some() && approved.result != current.result
}

/// Canonical arguments on one line when short; a longer object one key per line, so that a
/// one-key change shows in a diff as a one-line change.
fn wrapped(args: &serde_json::Value) -> String {
    let text = args.to_string();
    match args {
        serde_json::Value::Object(m) if text.len() > WRAP_ARGS_AT && !m.is_empty() => {
            let mut out = String::from("{\n");
            for (k, v) in m {
                out.push_str(&format!("    {}: {v},\n", serde_json::json!(k)));
            }
            out.push('}');
            out
        }
        _ => text,
    }
}

/// Arguments longer than this (as canonical JSON) are written one key per line.
const WRAP_ARGS_AT: usize = 80;

fn approval_line(a: &ApprovalRecord) -> String {
    let what = match (&a.tool, &a.call) {
        (Some(t), Some(c)) => format!("{t} ({c})"),
        (Some(t), None) => t.clone(),
        (None, Some(c)) => format!("blanket ({c})"),
        (None, None) => "blanket".to_owned(),
    };
    let decisions: Vec<&str> = a
        .decisions
        .iter()
        .map(|g| if *g { "granted" } else { "denied" })
        .collect();
    let decided = if decisions.is_empty() {
        "unanswered".to_owned()
    } else {
        decisions.join(", ")
    };
    if a.requested {
        format!("request {what}: {decided}")
    } else {
        format!("decision without request {what}: {decided}")
    }
}

fn lines<T>(items: &[T], f: impl Fn(&T) -> String) -> String {
    items.iter().map(|i| f(i) + "\n").collect()
}

/// Compares current behaviour with the approved one. `tolerance` is a fraction (0.2 = 20 %).
pub fn compare(
    approved: &Behaviour,
    current: &Behaviour,
    tolerance: f64,
    mode: DriftMode,
) -> Vec<DriftFinding> {
    let mut out = Vec::new();
    let mut push = |c: DriftCategory, detail: String, diff: Option<String>| {
        out.push(DriftFinding::new(c, detail, diff, mode))
    };

    // Oracles: the list, then verdict moves of the keys present on both sides.
    let old_keys: Vec<&String> = approved.oracles.keys().collect();
    let new_keys: Vec<&String> = current.oracles.keys().collect();
    if old_keys != new_keys {
        push(
            DriftCategory::OraclesChanged,
            "the scenario's oracle list changed".into(),
            Some(render::unified(
                &lines(&old_keys, |k| k.to_string()),
                &lines(&new_keys, |k| k.to_string()),
            )),
        );
    }
    for (key, old) in &approved.oracles {
        let Some(new) = current.oracles.get(key) else {
            continue;
        };
        match (old.as_str() == "pass", new.as_str() == "pass") {
            (true, false) => push(
                DriftCategory::Regression,
                format!("`{key}` went {old} → {new}"),
                None,
            ),
            (false, true) => push(
                DriftCategory::Improvement,
                format!("`{key}` went {old} → {new}; the baseline is stale, accept the new one"),
                None,
            ),
            _ => {}
        }
    }

    let old_names: Vec<&str> = approved
        .tool_calls
        .iter()
        .map(|c| c.tool.as_str())
        .collect();
    let new_names: Vec<&str> = current.tool_calls.iter().map(|c| c.tool.as_str()).collect();
    let calls_diff = || {
        Some(render::unified(
            &lines(&approved.tool_calls, call_line),
            &lines(&current.tool_calls, call_line),
        ))
    };
    if old_names != new_names {
        push(
            DriftCategory::ToolCallsChanged,
            format!(
                "tool calls were [{}], now [{}]",
                old_names.join(", "),
                new_names.join(", ")
            ),
            calls_diff(),
        );
    } else {
        let pairs = || approved.tool_calls.iter().zip(&current.tool_calls);
        let changed = pairs().filter(|(a, b)| !same_call(a, b)).count();
        if changed > 0 {
            push(
                DriftCategory::ArgumentsChanged,
                format!("{changed} call(s) changed arguments or outcome"),
                calls_diff(),
            );
        }
        let moved = pairs().filter(|(a, b)| result_moved(a, b)).count();
        if moved > 0 {
            // Only the calls whose results are compared, so an old baseline's missing hashes
            // never show as a change.
            let (old, new): (Vec<_>, Vec<_>) = pairs().filter(|(a, _)| a.result.is_some()).unzip();
            let render = |calls: Vec<&CallRecord>| {
                calls
                    .into_iter()
                    .map(|c| result_line(c) + "\n")
                    .collect::<String>()
            };
            push(
                DriftCategory::ToolResultsChanged,
                format!("{moved} tool result(s) returned different content"),
                Some(render::unified(&render(old), &render(new))),
            );
        }
    }
    if approved.approvals != current.approvals {
        push(
            DriftCategory::ApprovalsChanged,
            format!(
                "{} approval record(s) approved, {} now",
                approved.approvals.len(),
                current.approvals.len()
            ),
            Some(render::unified(
                &lines(&approved.approvals, approval_line),
                &lines(&current.approvals, approval_line),
            )),
        );
    }
    if approved.status != current.status {
        push(
            DriftCategory::StatusChanged,
            format!(
                "run status was `{}`, now `{}`",
                approved.status, current.status
            ),
            None,
        );
    }
    if approved.artifacts != current.artifacts {
        let art = |a: &crate::baseline::ArtifactRecord| format!("{} {}", a.path, a.h);
        push(
            DriftCategory::ArtifactsChanged,
            "artifacts changed".into(),
            Some(render::unified(
                &lines(&approved.artifacts, art),
                &lines(&current.artifacts, art),
            )),
        );
    }
    if approved.final_answer != current.final_answer {
        let text = |t: &Option<String>| t.as_deref().map_or(String::new(), |t| format!("{t}\n"));
        push(
            DriftCategory::FinalAnswerChanged,
            "the final answer changed".into(),
            Some(render::unified(
                &text(&approved.final_answer),
                &text(&current.final_answer),
            )),
        );
    }
    if approved.messages != current.messages {
        let msg = |m: &crate::baseline::MessageRecord| {
            format!("{}: {}", m.phase, serde_json::json!(m.text))
        };
        push(
            DriftCategory::MessagesChanged,
            "the standing messages changed".into(),
            Some(render::unified(
                &lines(&approved.messages, msg),
                &lines(&current.messages, msg),
            )),
        );
    }
    let usage = [
        (
            "input_tokens",
            approved.usage.input_tokens,
            current.usage.input_tokens,
        ),
        (
            "output_tokens",
            approved.usage.output_tokens,
            current.usage.output_tokens,
        ),
        ("requests", approved.usage.requests, current.usage.requests),
    ];
    for (name, old, new) in usage {
        let allowed = (tolerance * old as f64).max(1.0);
        if (new as f64 - old as f64).abs() > allowed {
            push(
                DriftCategory::UsageOutsideTolerance,
                format!(
                    "{name} {old} → {new} (allowed ±{allowed:.0} at {:.0} %)",
                    tolerance * 100.0
                ),
                None,
            );
        }
    }
    // The cost, when both runs know theirs (allowed: the tolerance, at least a micro-dollar).
    if let (Some(old), Some(new)) = (approved.usage.cost_usd, current.usage.cost_usd) {
        let allowed = (tolerance * old).max(1e-6);
        if (new - old).abs() > allowed {
            push(
                DriftCategory::UsageOutsideTolerance,
                format!(
                    "cost_usd {} → {} (allowed ±{} at {:.0} %)",
                    crate::common::money::dollars(old),
                    crate::common::money::dollars(new),
                    crate::common::money::dollars(allowed),
                    tolerance * 100.0
                ),
                None,
            );
        }
    }
    out
}

#[cfg(test)]
mod compare_tests;
#[cfg(test)]
mod properties_tests;
