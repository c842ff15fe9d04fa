//! Judging a single trace file outside a full `check`, through the same pipeline: read,
//! verify, parse, judge against its scenario (when one is known), and normalise. Used by
//! `diff --from/--to`.

use camino::Utf8Path;

use super::pipeline::{self, JudgeOptions};
use crate::baseline::Behaviour;
use crate::oracle::{self, OracleResult};
use crate::scenario::Scenario;
use crate::trace::{TraceError, TraceFile};

/// A trace read and judged.
#[derive(Debug, Clone)]
pub struct JudgedTrace {
    /// Scenario id from the header.
    pub scenario: String,
    /// Case from the header.
    pub case: String,
    /// Trial from the header.
    pub trial: Option<String>,
    /// Verified content hash.
    pub content_hash: String,
    /// Oracle results (empty when no scenario was given).
    pub results: Vec<OracleResult>,
    /// The normalised behaviour.
    pub behaviour: Behaviour,
}

/// Reads and judges one trace with `judging`; `scenario_for` maps the header's scenario id to its scenario.
pub fn judge_trace_file<'s>(
    path: &Utf8Path,
    judging: &JudgeOptions,
    scenario_for: impl Fn(&str) -> Option<&'s Scenario>,
) -> Result<JudgedTrace, TraceError> {
    let file = TraceFile::open(path, judging.limits)?;
    let (seal, parsed) = pipeline::verify_and_parse(&file, judging)?;
    let header = &parsed.trace.header;
    let scenario = scenario_for(&header.scenario);
    let (results, behaviour) = match scenario {
        Some(s) => {
            let judged = pipeline::judge(s, &parsed.trace, true);
            let behaviour = judged.behaviour.expect("asked for");
            (judged.results, behaviour)
        }
        // Without a scenario a trace is compared on its behaviour alone.
        None => (
            Vec::new(),
            Behaviour::from_facts(&oracle::Facts::new(&parsed.trace), &[]),
        ),
    };
    Ok(JudgedTrace {
        scenario: scenario.map_or_else(|| header.scenario.to_string(), |s| s.id.clone()),
        case: header.case.to_string(),
        trial: header.trial.as_ref().map(|t| t.as_str().to_owned()),
        content_hash: seal.content_hash.clone(),
        behaviour,
        results,
    })
}
