//! Building an explanation of one trace for a person auditing it: the verified identity, every
//! oracle's verdict, the events, and drift from the approved baseline.

use camino::Utf8Path;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::baseline::{BaselineFile, BaselineStore, Behaviour};
use crate::diff::{DriftFinding, DriftMode, compare};
use crate::discover::display_path;
use crate::oracle::{self, OracleResult};
use crate::scenario::Scenario;
use crate::trace::{Limits, TraceFile, parse_trace};

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
}

fn to_values(items: &[crate::trace::Event<'_>]) -> Vec<Value> {
    items.iter().map(super::row::event_value).collect()
}

/// Reads, verifies and judges `path` for an explanation. `scenario_for` finds the scenario by the
/// header's id; `store` enables drift from the approved baseline.
pub fn explain_trace<'s>(
    path: &Utf8Path,
    limits: Limits,
    scenario_for: impl Fn(&str) -> Option<&'s Scenario>,
    store: Option<&BaselineStore>,
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
    };
    let file = match TraceFile::open(path, limits) {
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
    let seal = match file.verify_seal(false) {
        Ok(s) => s,
        Err(err) => {
            e.error = Some(super::error_chain(&err));
            return e;
        }
    };
    e.content_hash = Some(seal.content_hash.clone());
    e.sealed = Some(seal.sealed);
    let parsed = match parse_trace(&file, &seal, limits) {
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
        return e;
    };
    e.scenario = Some(scenario.id.clone());
    let facts = oracle::Facts::new(&parsed.trace);
    let results: Vec<OracleResult> = oracle::judge_facts(scenario, &facts);
    if let Some(store) = store {
        let approved = store.approved_path(&scenario.id, &header.case);
        let findings: Vec<DriftFinding> = match BaselineFile::read(&approved) {
            Ok(b) => compare(
                &b.behaviour,
                &Behaviour::from_facts(&facts, &results),
                0.2,
                DriftMode::Default,
            ),
            Err(_) if !approved.exists() => Vec::new(),
            Err(err) => vec![DriftFinding::new(
                crate::diff::DriftCategory::BaselineInvalid,
                super::error_chain(&err),
                None,
                DriftMode::Default,
            )],
        };
        e.drift = findings;
    }
    e.oracles = results;
    e
}
