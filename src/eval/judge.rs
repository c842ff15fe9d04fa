//! Judging a single trace file outside a full `check`: read, verify, parse, judge against its
//! scenario (when one is known), and normalise. Used by `diff --from/--to` and by tools
//! embedding the library.

use camino::Utf8Path;

use crate::baseline::Behaviour;
use crate::oracle::{self, OracleResult};
use crate::scenario::Scenario;
use crate::trace::{Limits, TraceError, TraceFile, parse_trace};

/// A trace read and judged.
#[derive(Debug, Clone)]
pub struct JudgedTrace {
    /// Scenario id from the header.
    pub scenario: String,
    /// Case from the header.
    pub case: String,
    /// Verified content hash.
    pub content_hash: String,
    /// Oracle results (empty when no scenario was given).
    pub results: Vec<OracleResult>,
    /// The normalised behaviour.
    pub behaviour: Behaviour,
}

/// Reads and judges one trace; `scenario_for` maps the header's scenario id to its scenario.
pub fn judge_trace_file<'s>(
    path: &Utf8Path,
    limits: Limits,
    scenario_for: impl Fn(&str) -> Option<&'s Scenario>,
) -> Result<JudgedTrace, TraceError> {
    let file = TraceFile::open(path, limits)?;
    let seal = file.verify_seal(false)?;
    let parsed = parse_trace(&file, &seal, limits)?;
    let header = &parsed.trace.header;
    let scenario = scenario_for(&header.scenario);
    let facts = oracle::Facts::new(&parsed.trace);
    let results = scenario
        .map(|s| oracle::judge_facts(s, &facts))
        .unwrap_or_default();
    Ok(JudgedTrace {
        scenario: scenario.map_or_else(|| header.scenario.to_string(), |s| s.id.clone()),
        case: header.case.to_string(),
        content_hash: seal.content_hash.clone(),
        behaviour: Behaviour::from_facts(&facts, &results),
        results,
    })
}
