//! Building an explanation of one trace for a person auditing it: the verified identity, every
//! oracle's verdict, the events, and drift from the approved baseline.

use camino::Utf8Path;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::pipeline::{self, BaselinePolicy, JudgeOptions};
use crate::diff::DriftFinding;
use crate::oracle::OracleResult;
use crate::paths::display_path;
use crate::scenario::Scenario;
use crate::trace::TraceFile;

/// Everything `explain` shows about one trace. Also the shape of a run folder's evidence file
/// (which holds only the cited events).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    /// The trace file.
    pub path: String,
    /// Scenario id (from the scenario, else the header).
    pub scenario: Option<String>,
    /// Case.
    pub case: Option<String>,
    /// The verified content hash (`null` when the seal does not hold).
    pub content_hash: Option<String>,
    /// Whether the trace is sealed.
    pub sealed: Option<bool>,
    /// Why the trace could not be judged (integrity failure, malformed…).
    pub error: Option<String>,
    /// Every oracle result.
    #[serde(default)]
    pub oracles: Vec<OracleResult>,
    /// Drift from the approved baseline.
    #[serde(default)]
    pub drift: Vec<DriftFinding>,
    /// Events, in order (all of them, or the cited ones in an evidence file).
    #[serde(default)]
    pub events: Vec<Value>,
    /// No loaded scenario has the id the trace names: nothing could be judged.
    #[serde(skip)]
    pub unknown_scenario: bool,
}

fn to_values(items: &[crate::trace::Event<'_>]) -> Vec<Value> {
    items.iter().map(super::row::event_value).collect()
}

/// Reads, verifies and judges `path` for an explanation, through the same pipeline and with the
/// same options as `check`: `scenario_for` finds the scenario by the header's id; `policy`
/// enables drift from the approved baseline.
pub fn explain_trace<'s>(
    path: &Utf8Path,
    judging: &JudgeOptions,
    scenario_for: impl Fn(&str) -> Option<&'s Scenario>,
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
        unknown_scenario: false,
    };
    let file = match TraceFile::open(path, judging.limits) {
        Ok(f) => f,
        Err(err) => {
            e.error = Some(super::error_chain(&err));
            return e;
        }
    };
    if let Some((s, c)) = crate::trace::probe_header(&file.bytes) {
        e.scenario = Some(s);
        e.case = Some(c);
    }
    let seal = match file.verify_seal(judging.require_sealed) {
        Ok(s) => s,
        Err(err) => {
            e.error = Some(super::error_chain(&err));
            return e;
        }
    };
    e.content_hash = Some(seal.content_hash.clone());
    e.sealed = Some(seal.sealed);
    let parsed = match pipeline::parse(&file, &seal, judging) {
        Ok(p) => p,
        Err(err) => {
            e.error = Some(super::error_chain(&err));
            return e;
        }
    };
    let header = &parsed.trace.header;
    e.events = to_values(&parsed.trace.events);
    let Some(scenario) = scenario_for(&header.scenario) else {
        e.error = Some(format!(
            "no loaded scenario has id `{}`; pass its directory with `--scenarios`",
            header.scenario
        ));
        e.unknown_scenario = true;
        return e;
    };
    e.scenario = Some(scenario.id.clone());
    let judged = pipeline::judge(scenario, &parsed.trace, policy.is_some());
    if let (Some(policy), Some(behaviour)) = (policy, judged.behaviour) {
        let compared = pipeline::compare(
            policy,
            &scenario.id,
            &header.case,
            &seal.content_hash,
            behaviour,
        );
        // Like `check`'s JSON report, `explain` tells a missing baseline apart (`new`).
        e.drift = compared.findings;
    }
    e.oracles = judged.results;
    e
}
