//! `diff --from/--to`'s view of one trace file outside a full `check`: the one sequencer's
//! [`FileOutcome`] mapped to the behaviour two recordings are compared on (a trace whose scenario
//! is unknown is compared on its behaviour alone).

use camino::Utf8Path;

use super::ScenarioIndex;
use super::pipeline::{self, FileOutcome, JudgeOptions};
use crate::baseline::Behaviour;
use crate::oracle::{self, OracleResult};
use crate::trace::{TraceError, TraceFile};

/// A trace read and judged.
#[derive(Debug, Clone)]
pub struct JudgedTrace {
    /// Scenario id (the scenario's, else the header's).
    pub scenario: String,
    /// Case from the header.
    pub case: String,
    /// Trial from the header.
    pub trial: Option<String>,
    /// Verified content hash.
    pub content_hash: String,
    /// Oracle results (empty when no loaded scenario has the header's id).
    pub results: Vec<OracleResult>,
    /// The normalised behaviour.
    pub behaviour: Behaviour,
}

/// Why a trace could not be judged for a comparison.
#[derive(Debug, thiserror::Error)]
pub enum NotJudged {
    /// The trace does not open, verify or parse.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// Its scenario has problems that keep it from being judged (as in `check`).
    #[error("{0}")]
    ScenarioInvalid(String),
}

/// Reads and judges one trace with `judging` against the scenario `scenarios` has for its
/// header's id.
pub fn judge_trace_file(
    path: &Utf8Path,
    judging: &JudgeOptions,
    scenarios: &ScenarioIndex<'_>,
) -> Result<JudgedTrace, NotJudged> {
    judge_opened_file(TraceFile::open(path, judging.limits), judging, scenarios)
}

/// [`judge_trace_file`] of a trace read already (from disk or from object storage, see
/// [`crate::remote::open`]).
pub fn judge_opened_file(
    opened: Result<TraceFile, TraceError>,
    judging: &JudgeOptions,
    scenarios: &ScenarioIndex<'_>,
) -> Result<JudgedTrace, NotJudged> {
    let file = opened?;
    let lookup = |id: &str| scenarios.lookup(id);
    let (scenario, read, results, behaviour) =
        match pipeline::judge_file(&file, judging, true, lookup) {
            FileOutcome::Unreadable { error, .. } => return Err(error.into()),
            FileOutcome::OutOfScope { .. } => {
                unreachable!("the index never puts a trace out of scope")
            }
            FileOutcome::ScenarioInvalid {
                scenario, problems, ..
            } => {
                let message = pipeline::scenario_invalid_message(scenario, problems);
                return Err(NotJudged::ScenarioInvalid(message));
            }
            // Without a scenario a trace is compared on its behaviour alone.
            FileOutcome::UnknownScenario(read) => {
                let trace = read.parsed.trace.judged(false);
                let facts = oracle::Facts::new(&trace);
                let behaviour = Behaviour::from_facts(&facts, &[]);
                let id = read.parsed.trace.header.scenario.to_string();
                (id, read, Vec::new(), behaviour)
            }
            FileOutcome::Judged {
                scenario,
                read,
                judgement,
            } => {
                let Some(behaviour) = judgement.behaviour else {
                    unreachable!("asked for")
                };
                (scenario.id.clone(), read, judgement.results, behaviour)
            }
        };
    let header = &read.parsed.trace.header;
    Ok(JudgedTrace {
        scenario,
        case: header.case.to_string(),
        trial: header.trial.as_ref().map(|t| t.as_str().to_owned()),
        content_hash: read.seal.content_hash.clone(),
        behaviour,
        results,
    })
}
