//! A signed record of a run (`check --attest FILE`): an in-toto Statement whose subjects are the
//! trace files judged (by SHA-256 of their bytes) and whose predicate says how they were judged
//! and what each verdict was, in a DSSE envelope signed with the signing key. Its fields are
//! documented in `docs/signing.md`.

use std::collections::BTreeMap;

use camino::Utf8Path;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sha2::Digest;

use super::dsse::{self, IN_TOTO_PAYLOAD_TYPE};
use super::keys::{SigningKey, TrustedKeys};
use crate::report::{Report, RowVerdict, Summary, ToolInfo};

/// The in-toto Statement type.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// The predicate type of a `check` run's record.
pub const PREDICATE_TYPE: &str = "https://tracereplay.dev/attestation/check/v1";

/// An in-toto Statement of a `check` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Statement {
    /// [`STATEMENT_TYPE`].
    #[serde(rename = "_type")]
    pub statement_type: String,
    /// The trace files judged whose seal held, by path and SHA-256.
    pub subject: Vec<Subject>,
    /// [`PREDICATE_TYPE`].
    #[serde(rename = "predicateType")]
    pub predicate_type: String,
    /// The run.
    pub predicate: Predicate,
}

/// A file the Statement is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subject {
    /// Its path, as the report shows it.
    pub name: String,
    /// Its digests (`sha256`: of the file's bytes as stored).
    pub digest: BTreeMap<String, String>,
}

/// What a run judged, how, and with what outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Predicate {
    /// The tool and its version.
    pub tool: ToolInfo,
    /// What changes judging: every judging setting with its value (`fail-on = any`, `alpha =
    /// 0.05`, `prices = prices.toml (blake3:…)`, …), then the command's own flags that do
    /// (`--scripted`, `--tag smoke`, …).
    pub options: Vec<String>,
    /// The key ids every trace's signature was checked against (`--require-signed`); empty
    /// when signatures were not required.
    pub trusted_keys: Vec<String>,
    /// The scenario files the run loaded, by path, with the BLAKE3 hash of their bytes.
    pub scenarios: Vec<ScenarioFile>,
    /// One entry per report row, in report order.
    pub results: Vec<AttestedResult>,
    /// The report's counts.
    pub summary: Summary,
    /// The exit code the run ended with (0 or 1): the run's outcome.
    pub exit_code: i32,
    /// When the run ended, in seconds since the Unix epoch (`SOURCE_DATE_EPOCH` when set);
    /// absent in records of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<u64>,
    /// The commit the run judged, where known (`GITHUB_SHA`, `CI_COMMIT_SHA`, or the checkout's
    /// `HEAD`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The run id the run was given (`--run-id`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}

/// A scenario file the run loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScenarioFile {
    /// Its path, as the report shows it.
    pub path: String,
    /// `b3:` and the BLAKE3 hash of its bytes (`null` when it could not be read again).
    pub blake3: Option<String>,
}

/// One row of the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttestedResult {
    /// The trace's path (absent for a scenario without a trace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Its seal's content hash, when the seal held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seal: Option<String>,
    /// The scenario.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    /// The case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
    /// The trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial: Option<String>,
    /// `pass`, `fail` or `error`.
    pub verdict: RowVerdict,
    /// Whether it counted against the exit code.
    pub blocking: bool,
}

/// The BLAKE3 hash of a file's bytes, as `b3:HEX`.
fn blake3_of(path: &Utf8Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    Some(format!("b3:{}", blake3::hash(&bytes).to_hex()))
}

/// The SHA-256 of a file's bytes, in hex.
pub fn sha256_of(bytes: &[u8]) -> String {
    let digest = sha2::Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a run's Statement says besides its report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFacts {
    /// What changed judging (see [`Predicate::options`]).
    pub options: Vec<String>,
    /// The trusted keys' ids, when signatures were required.
    pub trusted_keys: Vec<String>,
    /// The exit code the run ends with.
    pub exit_code: i32,
    /// When it ends (seconds since the Unix epoch).
    pub time: Option<u64>,
    /// The commit it judged, where known.
    pub commit: Option<String>,
    /// Its run id, if given.
    pub run_id: Option<String>,
}

/// The Statement of a run. Subjects are read again (in parallel) to take their digests.
pub fn statement(report: &Report, facts: RunFacts) -> Statement {
    let mut results = Vec::with_capacity(report.results.len());
    let mut scenario_files: Vec<String> = Vec::new();
    for row in report.results.iter() {
        if let Some(f) = &row.scenario_file {
            scenario_files.push(f.clone());
        }
        results.push(AttestedResult {
            path: row.path.clone(),
            seal: row.content_hash.clone(),
            scenario: row.scenario.clone(),
            case: row.case.clone(),
            trial: row.trial.clone(),
            verdict: row.verdict,
            blocking: row.blocking,
        });
    }
    scenario_files.sort();
    scenario_files.dedup();
    let scenarios = (scenario_files.into_par_iter())
        .map(|path| ScenarioFile {
            blake3: blake3_of(Utf8Path::new(&path)),
            path,
        })
        .collect();
    let mut subject: Vec<Subject> = (results.par_iter())
        .filter(|r| r.seal.is_some())
        .filter_map(|r| {
            let name = r.path.clone()?;
            let bytes = std::fs::read(&name).ok()?;
            let digest = BTreeMap::from([("sha256".to_owned(), sha256_of(&bytes))]);
            Some(Subject { name, digest })
        })
        .collect();
    subject.sort_by(|a, b| a.name.cmp(&b.name));
    subject.dedup_by(|a, b| a.name == b.name);
    Statement {
        statement_type: STATEMENT_TYPE.to_owned(),
        subject,
        predicate_type: PREDICATE_TYPE.to_owned(),
        predicate: Predicate {
            tool: report.tool.clone(),
            options: facts.options,
            trusted_keys: facts.trusted_keys,
            scenarios,
            results,
            summary: report.summary.clone(),
            exit_code: facts.exit_code,
            time: facts.time,
            commit: facts.commit,
            run_id: facts.run_id,
        },
    }
}

/// The signed envelope of a Statement, as the text `--attest` writes.
pub fn sign(statement: &Statement, key: &SigningKey) -> String {
    let payload = serde_json::to_vec(statement).expect("a statement serialises");
    let envelope = dsse::sign(key, IN_TOTO_PAYLOAD_TYPE, &payload);
    let mut text = serde_json::to_string_pretty(&envelope).expect("an envelope serialises");
    text.push('\n');
    text
}

/// Why an attestation does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttestationError {
    /// Its envelope does not verify.
    #[error(transparent)]
    Envelope(#[from] dsse::DsseError),
    /// Its payload is not a Statement of a `check` run.
    #[error("holds no Statement of a tracereplay check run: {0}")]
    NotAStatement(String),
}

/// An attestation that verified.
#[derive(Debug, Clone, PartialEq)]
pub struct Verified {
    /// Its Statement.
    pub statement: Statement,
    /// The trusted key that signed it.
    pub key_id: String,
}

/// Verifies an attestation's text: the envelope's signature by a trusted key, then that its
/// payload is a Statement of a `check` run.
pub fn verify(text: &str, trusted: &TrustedKeys) -> Result<Verified, AttestationError> {
    let opened = dsse::open(text, IN_TOTO_PAYLOAD_TYPE, trusted)?;
    let statement: Statement = serde_json::from_slice(&opened.payload)
        .map_err(|e| AttestationError::NotAStatement(e.to_string()))?;
    if statement.statement_type != STATEMENT_TYPE {
        return Err(AttestationError::NotAStatement(format!(
            "its `_type` is `{}`, not `{STATEMENT_TYPE}`",
            statement.statement_type
        )));
    }
    if statement.predicate_type != PREDICATE_TYPE {
        return Err(AttestationError::NotAStatement(format!(
            "its `predicateType` is `{}`, not `{PREDICATE_TYPE}`",
            statement.predicate_type
        )));
    }
    Ok(Verified {
        statement,
        key_id: opened.key_id,
    })
}

/// What a verified record must also say of its run before it is taken as evidence of a good
/// one (`verify-attestation`'s checks beyond the signature).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expectations {
    /// The run must have passed (exit code 0).
    pub passed: bool,
    /// The record must state when the run ended, and — with `max_age` — not longer ago than
    /// that many seconds before `now`.
    pub dated: bool,
    /// The most seconds between the run's end and `now`.
    pub max_age: Option<u64>,
    /// Now, in seconds since the Unix epoch.
    pub now: u64,
    /// The commit the run must have judged.
    pub commit: Option<String>,
    /// The run id it must have been given.
    pub run_id: Option<String>,
}

/// How far in the future a record's time may be (clocks differ a little between machines).
pub const FUTURE_SKEW: u64 = 300;

/// Where `statement`'s run falls short of `want`, one sentence each; empty when it does not.
pub fn shortfalls(statement: &Statement, want: &Expectations) -> Vec<String> {
    let p = &statement.predicate;
    let mut out = Vec::new();
    if want.passed && p.exit_code != 0 {
        out.push(format!(
            "the attested run failed (exit code {}): it is a record of a red run, not evidence of a green one",
            p.exit_code
        ));
    }
    match p.time {
        None if want.dated || want.max_age.is_some() => out.push(
            "the record states no time (an older tracereplay wrote it), so it cannot be told from an old one".to_owned(),
        ),
        Some(t) => {
            // A record from the future (a CI clock or `SOURCE_DATE_EPOCH` set wrong, or a
            // forger with the key) is never taken as fresh: beyond a small skew, refused.
            if (want.dated || want.max_age.is_some()) && t > want.now + FUTURE_SKEW {
                out.push(format!(
                    "the record says the run ended {} s in the future (more than the {FUTURE_SKEW} s of clock skew allowed): its time cannot be trusted",
                    t - want.now
                ));
            }
            if let Some(max) = want.max_age.filter(|m| want.now.saturating_sub(t) > *m) {
                out.push(format!(
                    "the run ended {} s ago, longer than `--max-age` {max} s",
                    want.now.saturating_sub(t)
                ));
            }
        }
        None => {}
    }
    if let Some(commit) = &want.commit {
        match &p.commit {
            Some(c) if c.eq_ignore_ascii_case(commit) => {}
            Some(c) => out.push(format!("the run judged commit `{c}`, not `{commit}`")),
            None => out.push(format!(
                "the record states no commit, so it is not shown to be of `{commit}`"
            )),
        }
    }
    if let Some(run) = &want.run_id {
        match &p.run_id {
            Some(r) if r == run => {}
            Some(r) => out.push(format!("the record is of run `{r}`, not `{run}`")),
            None => out.push(format!(
                "the record names no run, so it is not shown to be of run `{run}`"
            )),
        }
    }
    out
}

/// What a trace file given to `verify-attestation` is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceNow {
    /// Its path, as reports show it.
    pub path: String,
    /// The SHA-256 of its bytes.
    pub sha256: String,
    /// Its seal's content hash, or why the seal does not hold.
    pub seal: Result<String, String>,
}

/// How the given traces compare with an attestation: one line per problem, empty when every
/// attested trace was given and matches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceCheck {
    /// Attested traces found with the same seal and bytes.
    pub matched: usize,
    /// Attested traces that differ, or were not given, in words.
    pub problems: Vec<String>,
    /// Given traces the attestation does not name.
    pub unattested: Vec<String>,
}

/// Compares the traces as they are now with what `statement` attests of them.
pub fn check_traces(statement: &Statement, now: &[TraceNow]) -> TraceCheck {
    let by_path: BTreeMap<&str, &TraceNow> = now.iter().map(|t| (t.path.as_str(), t)).collect();
    let digests: BTreeMap<&str, &str> = (statement.subject.iter())
        .filter_map(|s| Some((s.name.as_str(), s.digest.get("sha256")?.as_str())))
        .collect();
    let mut check = TraceCheck::default();
    let mut attested: std::collections::BTreeSet<&str> = Default::default();
    for r in &statement.predicate.results {
        let (Some(path), Some(seal)) = (&r.path, &r.seal) else {
            continue;
        };
        attested.insert(path);
        let Some(found) = by_path.get(path.as_str()) else {
            check
                .problems
                .push(format!("`{path}` is attested but was not given"));
            continue;
        };
        match &found.seal {
            Err(why) => check.problems.push(format!("`{path}`: {why}")),
            Ok(s) if s != seal => check.problems.push(format!(
                "`{path}` has seal {s}, but the attestation names {seal}"
            )),
            Ok(_) => match digests.get(path.as_str()) {
                Some(d) if *d != found.sha256 => check.problems.push(format!(
                    "`{path}` has the attested seal, but its bytes differ from the attested file (SHA-256 {}, attested {d})",
                    found.sha256
                )),
                _ => check.matched += 1,
            },
        }
    }
    check.unattested = (now.iter())
        .filter(|t| !attested.contains(t.path.as_str()))
        .map(|t| t.path.clone())
        .collect();
    check
}
