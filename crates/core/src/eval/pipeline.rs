//! The one judging pipeline, used alike by `check`, `diff` and `explain`: verify and parse a
//! trace file, judge it against its scenario, and compare its behaviour with the approved
//! baseline. Pure: it reads, and never writes (pending baseline files are written later, by
//! the persist stage, once the whole run is in view).

use crate::baseline::{BaselineFile, BaselineStore, Behaviour};
use crate::diff::{DriftCategory, DriftFinding, DriftMode, compare as compare_behaviour};
use crate::oracle::{self, OracleResult, Verdict};
use crate::paths::display_path;
use crate::report::RowVerdict;
use crate::scenario::Scenario;
use crate::trace::{Limits, ParsedTrace, Seal, Trace, TraceError, TraceFile, parse_trace_with};

/// What judging a trace depends on besides the trace and its scenario: the same for every
/// command, so `check`, `diff` and `explain` judge a trace alike.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JudgeOptions {
    /// Size limits.
    pub limits: Limits,
    /// Unsealed traces are integrity failures.
    pub require_sealed: bool,
    /// The developer's raw-prompt opt-in (`--allow-raw-prompts`): admits prompt-side text in
    /// fields the trace format does not define (and raw-prompt sidecars).
    pub allow_raw_prompts: bool,
    /// What model requests cost (`prices.toml`, `--prices`): fills in the cost of every
    /// inference that records usage but no cost, before any oracle sees the trace.
    pub prices: Option<std::sync::Arc<crate::prices::PriceTable>>,
}

/// How a judged trace is compared with its approved baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct BaselinePolicy {
    /// Where the approved baselines are.
    pub store: BaselineStore,
    /// Which drift fails.
    pub mode: DriftMode,
    /// Usage tolerance as a fraction (0.2 = 20 %).
    pub tolerance: f64,
    /// Also write a pending baseline for a case that did not drift but whose approved file
    /// holds less than this run would write (tool result hashes it predates), so that
    /// `baseline approve` brings it up to date. `check` leaves such files alone.
    pub refresh: bool,
    /// The false discovery rate the drift tests of trial sets are held to (`--alpha`,
    /// default [`DEFAULT_ALPHA`]).
    pub alpha: f64,
}

/// The default `--alpha`.
pub const DEFAULT_ALPHA: f64 = 0.05;

/// The default usage tolerance (`usage-tolerance`), in percent.
pub const DEFAULT_TOLERANCE_PERCENT: f64 = 20.0;

/// [`DEFAULT_TOLERANCE_PERCENT`] as a fraction (0.2).
pub const DEFAULT_TOLERANCE: f64 = DEFAULT_TOLERANCE_PERCENT / 100.0;

/// Verifies a trace file's seal and parses it.
pub fn verify_and_parse<'f>(
    file: &'f TraceFile,
    opts: &JudgeOptions,
) -> Result<(Seal, ParsedTrace<'f>), TraceError> {
    let seal = file.verify_seal(opts.require_sealed)?;
    let parsed = parse(file, &seal, opts)?;
    Ok((seal, parsed))
}

/// Parses a trace file whose seal was verified, and prices its inferences (with a price
/// table).
pub fn parse<'f>(
    file: &'f TraceFile,
    seal: &Seal,
    opts: &JudgeOptions,
) -> Result<ParsedTrace<'f>, TraceError> {
    let mut parsed = parse_trace_with(file, seal, opts.limits, opts.allow_raw_prompts)?;
    if let Some(blind) = contentless(&parsed.trace) {
        parsed.warnings.push(blind);
    }
    if let Some(prices) = &opts.prices {
        prices.apply(&mut parsed.trace);
        // A usage that does not add up is priced as it can be, and said, never silently.
        let odd = (parsed.trace.events.iter()).find_map(|e| match &e.body {
            crate::trace::EventBody::Inference(i) => (i.usage.as_ref())
                .filter(|u| u.priced)
                .and_then(crate::prices::Price::inconsistent)
                .map(|why| (e.seq, why)),
            _ => None,
        });
        if let Some((seq, why)) = odd {
            parsed.warnings.push(format!("seq {seq}: {why}"));
        }
    }
    Ok(parsed)
}

/// What a trace whose model requests carry no content (no `input_h`, no output text or tool
/// call: recorded by an instrumentation whose content capture was off) cannot show, said once:
/// such a run may still end `completed`, and a reader must know its oracles saw no messages.
fn contentless(trace: &crate::trace::Trace<'_>) -> Option<String> {
    let mut n = 0;
    for e in &trace.events {
        if let crate::trace::EventBody::Inference(i) = &e.body {
            let said = (i.output.as_ref()).is_some_and(|o| {
                o.text.is_some() || o.tool_calls.as_ref().is_some_and(|c| !c.is_empty())
            });
            if i.input_h.is_some() || said {
                return None;
            }
            n += 1;
        }
    }
    (n > 0).then(|| {
        format!(
            "its {n} model request(s) carry no content (no `input_h`, no output text or tool call): the run was recorded without its messages — an OpenTelemetry instrumentation with content capture off, say (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`) — so no oracle saw what was asked or answered, and its status is only what was reported"
        )
    })
}

/// A trace judged against its scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// Every oracle result, in declaration order, then `run-completed` (unless the scenario
    /// declares `status-is`).
    pub results: Vec<OracleResult>,
    /// `pass` when every result passes, else `fail`.
    pub verdict: RowVerdict,
    /// The normalised behaviour (when asked for: it is what baselines hold).
    pub behaviour: Option<Behaviour>,
}

/// Judges `trace` against `scenario`, deriving the trace's facts once for the oracles and the
/// normalised behaviour (made only `with_behaviour`).
pub fn judge(scenario: &Scenario, trace: &Trace<'_>, with_behaviour: bool) -> Judgement {
    let trace = trace.judged(scenario.judge_copied_context);
    let facts = oracle::Facts::new(&trace);
    let results = oracle::judge_facts(&scenario.oracles, &facts);
    let verdict = match oracle::overall(&results) {
        Verdict::Pass => RowVerdict::Pass,
        Verdict::Fail | Verdict::NotEvaluable => RowVerdict::Fail,
    };
    let behaviour = with_behaviour.then(|| Behaviour::from_facts(&facts, &results));
    Judgement {
        results,
        verdict,
        behaviour,
    }
}

/// A behaviour compared with its approved baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// What drifted (`new` when there is no approved baseline; `baseline-invalid` when it does
    /// not read).
    pub findings: Vec<DriftFinding>,
    /// The baseline this run would approve (what a pending `.new` file holds).
    pub current: BaselineFile,
    /// No drift, but the approved behaviour differs from the current one (it predates
    /// something a baseline now records, such as tool result hashes).
    pub stale: bool,
    /// What the approved baseline's run used (when it is a single trace's and reads).
    pub approved_usage: Option<crate::baseline::UsageRecord>,
}

/// Compares `behaviour` of (scenario, case) with its approved baseline under `policy`. Reads
/// the approved file; writes nothing.
pub fn compare(
    policy: &BaselinePolicy,
    scenario: &str,
    case: &str,
    content_hash: &str,
    behaviour: Behaviour,
) -> Comparison {
    let approved_path = policy.store.approved_path(scenario, case);
    let current = BaselineFile::new(scenario, case, content_hash, behaviour);
    let finding =
        |category, detail: String| vec![DriftFinding::new(category, detail, None, policy.mode)];
    let mut stale = false;
    let mut approved_usage = None;
    let findings = match policy.store.read_approved(scenario, case) {
        Ok(crate::baseline::Approved::Set(set)) => finding(
            DriftCategory::TrialsChanged,
            format!(
                "the approved baseline `{}` is a set of {} trials and this run has one trace of the case; record the case's trials again, or review and accept the single trace with `tracereplay baseline accept`",
                display_path(&approved_path),
                set.trials.len()
            ),
        ),
        Ok(crate::baseline::Approved::Single(approved)) => {
            let findings = compare_behaviour(
                &approved.behaviour,
                &current.behaviour,
                policy.tolerance,
                policy.mode,
            );
            stale = findings.is_empty() && approved.behaviour != current.behaviour;
            approved_usage = Some(approved.behaviour.usage);
            findings
        }
        Err(crate::baseline::BaselineError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            finding(
                DriftCategory::New,
                format!(
                    "no approved baseline at `{}`; review and accept it with `tracereplay baseline accept`",
                    display_path(&approved_path)
                ),
            )
        }
        Err(e) => finding(DriftCategory::BaselineInvalid, super::error_chain(&e)),
    };
    Comparison {
        findings,
        current,
        stale,
        approved_usage,
    }
}

/// A trace file verified and parsed.
#[derive(Debug)]
pub struct ReadTrace<'f> {
    /// The verified seal (its hash is the trace's identity).
    pub seal: Seal,
    /// The parsed trace, priced.
    pub parsed: ParsedTrace<'f>,
}

/// What the scenario look-up of a trace found (by the header's scenario id).
pub enum Lookup<'s> {
    /// Outside the run's filters or partition share: not judged, no row.
    OutOfScope,
    /// No loaded scenario has the id.
    Unknown,
    /// The scenario, with what keeps it from being judged (quality-gate problems, a duplicate
    /// id); judged only when `problems` is empty.
    Found {
        /// The scenario.
        scenario: &'s Scenario,
        /// Why it cannot be judged.
        problems: &'s [String],
    },
}

/// What the one sequencer made of a trace file: every command (`check`, scripted traces,
/// `diff`, `explain`) maps this to its own output, and none orders the steps itself.
// Made once per trace and moved once into its caller's output: boxing the judged variant would
// cost an allocation per trace for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum FileOutcome<'f, 's> {
    /// The file does not open, its seal does not hold, or its body does not parse. `seal` is
    /// the seal when it held (the body did not parse).
    Unreadable {
        /// Why.
        error: TraceError,
        /// The seal, when it held.
        seal: Option<Seal>,
    },
    /// The trace belongs to a scenario outside the run's filters or partition share: not
    /// judged, no row (its seal still identifies it in the suite's fingerprint).
    OutOfScope {
        /// The verified seal.
        seal: Seal,
    },
    /// The trace names a scenario no loaded file defines.
    UnknownScenario(ReadTrace<'f>),
    /// The trace's scenario has problems that keep it from being judged.
    ScenarioInvalid {
        /// The scenario.
        scenario: &'s Scenario,
        /// Its problems.
        problems: &'s [String],
        /// The trace.
        read: ReadTrace<'f>,
    },
    /// Judged against its scenario.
    Judged {
        /// The scenario.
        scenario: &'s Scenario,
        /// The trace.
        read: ReadTrace<'f>,
        /// The oracle results, verdict and (asked for) behaviour.
        judgement: Judgement,
    },
}

impl<'f> FileOutcome<'f, '_> {
    /// The verified and parsed trace, unless it was unreadable.
    pub fn read(&self) -> Option<&ReadTrace<'f>> {
        match self {
            FileOutcome::Unreadable { .. } | FileOutcome::OutOfScope { .. } => None,
            FileOutcome::UnknownScenario(read)
            | FileOutcome::ScenarioInvalid { read, .. }
            | FileOutcome::Judged { read, .. } => Some(read),
        }
    }
}

/// The one sequencer: verifies `file`'s seal, parses it, looks its scenario up with `lookup`,
/// and judges it when the scenario can be, making the
/// normalised behaviour `with_behaviour`. Comparing with the approved baseline is the caller's
/// next step ([`compare`]): `check` does not compare a trial alone.
pub fn judge_file<'f, 's>(
    file: &'f TraceFile,
    opts: &JudgeOptions,
    with_behaviour: bool,
    lookup: impl FnOnce(&str) -> Lookup<'s>,
) -> FileOutcome<'f, 's> {
    let seal = match file.verify_seal(opts.require_sealed) {
        Ok(seal) => seal,
        Err(error) => return FileOutcome::Unreadable { error, seal: None },
    };
    let parsed = match parse(file, &seal, opts) {
        Ok(parsed) => parsed,
        Err(error) => {
            let seal = Some(seal);
            return FileOutcome::Unreadable { error, seal };
        }
    };
    let read = ReadTrace { seal, parsed };
    match lookup(&read.parsed.trace.header.scenario) {
        Lookup::OutOfScope => FileOutcome::OutOfScope { seal: read.seal },
        Lookup::Unknown => FileOutcome::UnknownScenario(read),
        Lookup::Found { scenario, problems } if !problems.is_empty() => {
            FileOutcome::ScenarioInvalid {
                scenario,
                problems,
                read,
            }
        }
        Lookup::Found { scenario, .. } => {
            let judgement = judge(scenario, &read.parsed.trace, with_behaviour);
            FileOutcome::Judged {
                scenario,
                read,
                judgement,
            }
        }
    }
}

/// The message of a scenario that cannot be judged, the same in every command.
pub fn scenario_invalid_message(scenario: &Scenario, problems: &[String]) -> String {
    format!(
        "`{}`: {}",
        display_path(&scenario.file),
        problems.join("; ")
    )
}
