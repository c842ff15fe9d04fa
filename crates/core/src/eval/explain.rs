//! Building an explanation of one trace for a person auditing it: the verified identity, every
//! oracle's verdict, the events, and drift from the approved baseline.

use camino::Utf8Path;
use serde_json::Value;

use super::ScenarioIndex;
use super::pipeline::{self, BaselinePolicy, FileOutcome, JudgeOptions};
use crate::paths::display_path;
pub use crate::report::explain::Explanation;
use crate::trace::TraceFile;

fn to_values(items: &[crate::trace::Event<'_>]) -> Vec<Value> {
    items.iter().map(crate::trace::json::event_value).collect()
}

/// Reads, verifies and judges `path` for an explanation, through the one sequencer and with
/// the same options as `check`: `scenarios` finds the scenario by the header's id (a scenario
/// with problems is not judged, as in `check`); `policy` enables drift from the approved
/// baseline.
pub fn explain_trace(
    path: &Utf8Path,
    judging: &JudgeOptions,
    scenarios: &ScenarioIndex<'_>,
    policy: Option<&BaselinePolicy>,
) -> Explanation {
    let opened = TraceFile::open(path, judging.limits);
    explain_opened(path, opened, judging, scenarios, policy)
}

/// [`explain_trace`] of a trace read already (from disk or from object storage, see
/// [`crate::remote::open`]).
pub fn explain_opened(
    path: &Utf8Path,
    opened: Result<TraceFile, crate::trace::TraceError>,
    judging: &JudgeOptions,
    scenarios: &ScenarioIndex<'_>,
    policy: Option<&BaselinePolicy>,
) -> Explanation {
    let mut e = Explanation {
        path: display_path(path),
        scenario: None,
        case: None,
        content_hash: None,
        sealed: None,
        error: None,
        oracles: Vec::new(),
        drift: Vec::new(),
        events: Vec::new(),
        not_judged: false,
    };
    let file = match opened {
        Ok(file) => file,
        Err(error) => {
            e.error = Some(super::error_chain(&error));
            return e;
        }
    };
    if let Some((s, c)) = crate::trace::probe_header(&file.bytes) {
        e.scenario = Some(s);
        e.case = Some(c);
    }
    let lookup = |id: &str| scenarios.lookup(id);
    let outcome = pipeline::judge_file(&file, judging, policy.is_some(), lookup);
    let read = match &outcome {
        FileOutcome::Unreadable { error, seal } => {
            e.content_hash = seal.as_ref().map(|s| s.content_hash.clone());
            e.sealed = seal.as_ref().map(|s| s.sealed);
            e.error = Some(super::error_chain(error));
            return e;
        }
        FileOutcome::OutOfScope { .. } => unreachable!("the index never puts a trace out of scope"),
        FileOutcome::UnknownScenario(read)
        | FileOutcome::ScenarioInvalid { read, .. }
        | FileOutcome::Judged { read, .. } => read,
    };
    e.content_hash = Some(read.seal.content_hash.clone());
    e.sealed = Some(read.seal.sealed);
    e.events = to_values(&read.parsed.trace.events);
    match outcome {
        FileOutcome::Unreadable { .. } | FileOutcome::OutOfScope { .. } => {
            unreachable!("mapped above")
        }
        FileOutcome::UnknownScenario(read) => {
            let id = &read.parsed.trace.header.scenario;
            e.error = Some(scenarios.unknown_message(&e.path, id));
            e.not_judged = true;
        }
        FileOutcome::ScenarioInvalid {
            scenario, problems, ..
        } => {
            e.scenario = Some(scenario.id.clone());
            e.error = Some(pipeline::scenario_invalid_message(scenario, problems));
            e.not_judged = true;
        }
        FileOutcome::Judged {
            scenario,
            read,
            judgement,
        } => {
            e.scenario = Some(scenario.id.clone());
            if let (Some(policy), Some(behaviour)) = (policy, judgement.behaviour) {
                let (case, hash) = (&read.parsed.trace.header.case, &read.seal.content_hash);
                let compared = pipeline::compare(policy, &scenario.id, case, hash, behaviour);
                // Like `check`'s JSON report, `explain` tells a missing baseline apart (`new`).
                e.drift = compared.findings;
            }
            e.oracles = judgement.results;
        }
    }
    e
}
