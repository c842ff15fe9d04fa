//! A recorded run as a script of model responses: the trace's `inference` events, in order —
//! but for failed requests (`finish: "error"`: the upstream's error, an answer cut short),
//! which got no answer to serve; the agent's retry that followed is the next step.

use camino::{Utf8Path, Utf8PathBuf};

use crate::trace::{Args, EventBody, Finish, Limits, TraceFile, Usage, parse_trace};

/// One tool call a recorded inference planned.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedCall {
    /// The call id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as the JSON text a client receives.
    pub arguments: String,
}

/// One recorded model response.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Step {
    /// The recorded event's `seq`.
    pub seq: u64,
    /// When it was recorded, if it was (the response's `created`).
    pub ts_ms: Option<i64>,
    /// The model that answered.
    pub model: Option<String>,
    /// Assistant text.
    pub text: Option<String>,
    /// Planned tool calls (one batch).
    pub tool_calls: Vec<PlannedCall>,
    /// Why the model stopped.
    pub finish: Option<Finish>,
    /// Token usage.
    pub usage: Option<Usage>,
    /// The recorded input hash (`input_h`), for divergence.
    pub input_h: Option<String>,
    /// The tools offered, for divergence.
    pub tools_offered: Option<Vec<String>>,
    /// The recorded request's parts, hashed, by JSON pointer (when the recording kept them).
    pub request_h: Option<std::collections::BTreeMap<String, String>>,
}

/// A recorded run's script.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    /// The trace file it came from.
    pub path: Utf8PathBuf,
    /// Its content hash.
    pub content_hash: String,
    /// The scenario id.
    pub scenario: String,
    /// The case.
    pub case: String,
    /// The trial, when the recording is one of its case's trials.
    pub trial: Option<crate::trace::TrialId>,
    /// The model the header names.
    pub model: Option<String>,
    /// How its prompts were hashed (`header.privacy`): `blake3` or `blake3-keyed`, and the key
    /// id of a keyed hash.
    pub hash_scheme: (String, Option<String>),
    /// The responses, in recorded order.
    pub steps: Vec<Step>,
}

impl Script {
    /// `scenario/case`, and ` trial T` for a trial: how a session is named.
    pub fn key(&self) -> String {
        let trial = self.trial.as_ref().map(crate::trace::TrialId::as_str);
        super::named::key(&self.scenario, &self.case, trial)
    }
}

/// Reads a trace (its seal verified) into a script.
pub fn load(path: &Utf8Path, limits: Limits) -> anyhow::Result<Script> {
    let file = TraceFile::open(path, limits)?;
    let seal = file.verify_seal(false)?;
    let parsed = parse_trace(&file, &seal, limits)?;
    let trace = &parsed.trace;
    let steps = (trace.events.iter())
        .filter_map(|e| match &e.body {
            EventBody::Inference(i) if i.finish != Some(Finish::Error) => Some(Step {
                seq: e.seq,
                ts_ms: e.ts_ms,
                model: i.model.as_ref().map(|m| m.to_string()),
                text: (i.output.as_ref())
                    .and_then(|o| o.text.as_ref())
                    .map(|t| t.to_string()),
                tool_calls: (i.output.iter())
                    .flat_map(|o| o.tool_calls.iter().flatten())
                    .map(|c| PlannedCall {
                        id: c.call_id.to_string(),
                        name: c.tool.to_string(),
                        arguments: match &c.args {
                            Args::Object(j) => j.value().to_string(),
                            Args::Text(t) => t.to_string(),
                        },
                    })
                    .collect(),
                finish: i.finish,
                usage: i.usage,
                input_h: i.input_h.as_ref().map(|h| h.to_string()),
                tools_offered: (i.tools_offered.as_ref())
                    .map(|t| t.iter().map(|s| s.to_string()).collect()),
                request_h: (i.request_h.as_ref()).map(|parts| {
                    (parts.iter())
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect()
                }),
            }),
            _ => None,
        })
        .collect();
    Ok(Script {
        path: path.to_owned(),
        content_hash: seal.content_hash.clone(),
        scenario: trace.header.scenario.to_string(),
        case: trace.header.case.to_string(),
        trial: trace.header.trial.clone(),
        model: trace.header.model.as_ref().map(|m| m.to_string()),
        hash_scheme: (
            trace.header.privacy.hash.to_string(),
            trace.header.privacy.kid.as_ref().map(|k| k.to_string()),
        ),
        steps,
    })
}

/// Every trace under `paths` (files or directories), as scripts; a trace that does not read
/// is an error naming it, and two traces of one `scenario/case` (and trial) are refused (a
/// session would not know which to serve).
pub fn load_all(paths: &[Utf8PathBuf], limits: Limits) -> anyhow::Result<Vec<Script>> {
    let found = crate::discover::discover(paths, &[])?;
    let mut scripts: Vec<Script> = Vec::new();
    for p in &found.trace_files {
        let s = load(p, limits).map_err(|e| anyhow::anyhow!("`{p}`: {e:#}"))?;
        if let Some(other) = scripts.iter().find(|o| o.key() == s.key()) {
            anyhow::bail!(
                "`{}` and `{p}` are both `{}`: serve one recording per scenario, case and trial",
                other.path,
                s.key()
            );
        }
        scripts.push(s);
    }
    if scripts.is_empty() {
        anyhow::bail!("no trace found to serve");
    }
    scripts.sort_by_key(Script::key);
    Ok(scripts)
}
