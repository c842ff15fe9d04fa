//! Signed evidence: detached minisign signatures of trace files, the keys that make and check
//! them, and signed in-toto attestations of a run (see `docs/signing.md`).
//!
//! What judging needs is here and has no dependencies: the [`SignatureCheck`] a run is given
//! (`check --require-signed`), the [`TraceSigner`] the recorders are given, where a trace's
//! signature lives, and the trusted comment a tracereplay signature carries. The keys, the
//! minisign formats and the DSSE envelopes are the `signing` feature's ([`keys`], `dsse`,
//! [`attest`]).

use camino::{Utf8Path, Utf8PathBuf};
use serde::{Deserialize, Serialize};

#[cfg(feature = "signing")]
pub mod attest;
#[cfg(feature = "signing")]
pub(crate) mod dsse;
#[cfg(feature = "signing")]
pub mod keys;
#[cfg(all(test, feature = "signing"))]
mod tests;

/// The environment variable that holds a signing key: the content of a `tracereplay.key` file
/// (a CI secret), never its path.
pub const SIGNING_KEY_ENV: &str = "TRACEREPLAY_SIGNING_KEY";

/// Where the detached signature of the trace at `path` is: `NAME.trace.ndjson.zst.minisig`.
pub fn signature_path(path: &Utf8Path) -> Utf8PathBuf {
    Utf8PathBuf::from(format!("{path}.minisig"))
}

/// What a tracereplay signature says of the trace it signs, in its trusted comment (which the
/// signature covers too): the trace's seal, scenario, case and trial, where it was placed, and —
/// when the recorder was given one — the run it belongs to.
///
/// A signature proves who signed the trace. It does not prove when the run happened or that it
/// belongs to today's run: a signed trace from another run, copied with its signature, verifies.
/// A run binds its signatures with a run id (`--run-id`), which `check --require-signed
/// --run-id` then requires; the place is bound by `file`, which must name the trace's path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Always `tracereplay`: tells these comments from minisign's default one.
    pub tool: String,
    /// The seal's content hash.
    pub seal: String,
    /// The header's scenario id.
    pub scenario: String,
    /// The header's case id.
    pub case: String,
    /// The header's trial, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial: Option<String>,
    /// The file signed: its path relative to the directory it was recorded or signed under
    /// (`SCENARIO/CASE.trace.ndjson.zst`), `/`-separated; older signatures name the file alone.
    /// A trace whose path does not end with it is refused.
    pub file: String,
    /// The run the trace belongs to (`--run-id` when it was recorded or signed), if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// When it was signed (seconds since the Unix epoch).
    pub timestamp: u64,
}

impl Claims {
    /// The claims of a trace, signed now.
    pub fn new(seal: &str, scenario: &str, case: &str, trial: Option<&str>, file: &str) -> Claims {
        let timestamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Claims {
            tool: "tracereplay".to_owned(),
            seal: seal.to_owned(),
            scenario: scenario.to_owned(),
            case: case.to_owned(),
            trial: trial.map(str::to_owned),
            file: file.to_owned(),
            run: None,
            timestamp,
        }
    }

    /// Whether `path` is where these claims place the trace: its last components are `file`'s.
    pub fn placed_at(&self, path: &Utf8Path) -> bool {
        let claimed: Vec<&str> = self.file.split('/').filter(|c| !c.is_empty()).collect();
        let found: Vec<&str> = path.components().map(|c| c.as_str()).collect();
        !claimed.is_empty() && found.ends_with(&claimed)
    }

    /// The trusted comment: one line of JSON (controls and line breaks escaped).
    pub fn comment(&self) -> String {
        serde_json::to_string(self).expect("claims serialise")
    }

    /// The claims a trusted comment makes: `None` for a comment of another tool (minisign's
    /// default `timestamp:… file:…` says nothing of the trace, and is accepted as such).
    pub fn of_comment(comment: &str) -> Option<Claims> {
        let claims: Claims = serde_json::from_str(comment).ok()?;
        (claims.tool == "tracereplay").then_some(claims)
    }

    /// Where these claims and the trace they sign disagree, in words (`None`: they agree).
    pub fn mismatch(
        &self,
        seal: &str,
        scenario: &str,
        case: &str,
        trial: Option<&str>,
    ) -> Option<String> {
        let pairs = [
            ("seal", Some(self.seal.as_str()), Some(seal)),
            ("scenario", Some(self.scenario.as_str()), Some(scenario)),
            ("case", Some(self.case.as_str()), Some(case)),
            ("trial", self.trial.as_deref(), trial),
        ];
        let show = |v: Option<&str>| v.map_or_else(|| "none".to_owned(), |v| format!("`{v}`"));
        let wrong: Vec<String> = (pairs.iter())
            .filter(|(_, claimed, found)| claimed != found)
            .map(|(what, claimed, found)| {
                format!("{what} {} (the trace has {})", show(*claimed), show(*found))
            })
            .collect();
        (!wrong.is_empty()).then(|| format!("its trusted comment names {}", wrong.join(", ")))
    }
}

/// A signature that holds: who made it and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    /// The key id of the trusted key that made it (16 hex digits, as minisign shows it).
    pub key_id: String,
    /// Its trusted comment.
    pub comment: String,
}

/// Why a trace's signature does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureProblem {
    /// There is no signature file.
    #[error(
        "is not signed: there is no `{sig}`; sign it with `tracereplay sign` (or record it with TRACEREPLAY_SIGNING_KEY set)"
    )]
    Unsigned {
        /// The signature file looked for.
        sig: Utf8PathBuf,
    },
    /// The signature file cannot be read or is not a minisign signature.
    #[error("has an unreadable signature `{sig}`: {detail}")]
    Malformed {
        /// The signature file.
        sig: Utf8PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// It was made by a key that is not trusted.
    #[error(
        "is signed by key {key_id}, which is not among the trusted keys ({trusted}); add its public key to the trusted keys if it is one of yours"
    )]
    UntrustedKey {
        /// The signing key's id.
        key_id: String,
        /// The ids of the trusted keys.
        trusted: String,
    },
    /// A trusted key's signature that does not verify: the trace, or the trusted comment,
    /// changed since it was signed.
    #[error(
        "has a bad signature by key {key_id}: {detail}; the trace or its signature changed since it was signed"
    )]
    Bad {
        /// The signing key's id.
        key_id: String,
        /// What failed.
        detail: String,
    },
    /// A good signature whose trusted comment names another trace.
    #[error("is signed by key {key_id}, but {detail}")]
    OtherTrace {
        /// The signing key's id.
        key_id: String,
        /// Where the comment and the trace disagree.
        detail: String,
    },
    /// A good signature of a trace that was signed as another file: moved or renamed.
    #[error(
        "is signed by key {key_id}, but its trusted comment places it at `{claimed}`: the signed trace was moved or renamed; sign it again where it is, or put it back"
    )]
    OtherPlace {
        /// The signing key's id.
        key_id: String,
        /// The file its comment names.
        claimed: String,
    },
    /// A good signature that is not bound to the run the check requires.
    #[error(
        "is signed by key {key_id} for {claimed}, not for run `{required}`: it was recorded by another run (or copied from one); record or sign it with `--run-id {required}`"
    )]
    OtherRun {
        /// The signing key's id.
        key_id: String,
        /// The run its comment names, in words (`run \`X\`` or `no run`).
        claimed: String,
        /// The run required.
        required: String,
    },
}

/// The most a signature file may hold: a minisign signature is a few hundred bytes.
pub const MAX_SIGNATURE_BYTES: u64 = 64 << 10;

/// Checks trace files' detached signatures (`check --require-signed`): given to a run in
/// [`crate::eval::CheckOptions::signatures`]. [`keys::TrustedKeys`] is the one tracereplay has.
pub trait SignatureCheck: Send + Sync + std::fmt::Debug {
    /// Checks the signature of the trace file at `path`, whose stored bytes are `stored`.
    fn check(&self, path: &Utf8Path, stored: &[u8]) -> Result<Signed, SignatureProblem>;
}

/// Signs the trace files a recorder writes (`pack`, `ingest`, `replay serve --record`).
/// [`keys::SigningKey`] is the one tracereplay has.
pub trait TraceSigner: Send + Sync + std::fmt::Debug {
    /// The signature file's text for a trace file's stored bytes and what it claims.
    fn sign(&self, stored: &[u8], claims: &Claims) -> Result<String, String>;
    /// The signing key's id.
    fn key_id(&self) -> String;
}

/// `path` relative to `root`, `/`-separated, as [`Claims::file`] holds it (its file name when it
/// is not under `root`).
pub fn relative_file(root: &Utf8Path, path: &Utf8Path) -> String {
    let strip = |p: &Utf8Path| p.strip_prefix("./").unwrap_or(p).to_owned();
    match strip(path).strip_prefix(strip(root)) {
        Ok(rel) if !rel.as_str().is_empty() => {
            let parts: Vec<&str> = rel.components().map(|c| c.as_str()).collect();
            parts.join("/")
        }
        _ => path.file_name().unwrap_or_default().to_owned(),
    }
}

/// Signs the sealed trace file at `path`, whose stored bytes are `stored`: a detached signature
/// whose trusted comment names its seal, scenario, case and trial, its path relative to `root`
/// and the signer's run, written beside it (inside `root`, never through a symlink under it;
/// synced to disk unless the caller syncs it later, with `durable: false`). A trace that is not
/// sealed and valid is not signed: its seal is verified and it is parsed first.
pub fn sign_trace(
    signer: &dyn TraceSigner,
    root: &Utf8Path,
    (path, stored): (&Utf8Path, &[u8]),
    limits: crate::trace::Limits,
    durable: bool,
) -> Result<Utf8PathBuf, String> {
    let compressed = path.as_str().ends_with(".zst");
    let chain = |e: crate::trace::TraceError| crate::common::error_chain(&e);
    let file =
        crate::trace::TraceFile::from_stored(path, stored, compressed, limits).map_err(chain)?;
    let seal = file.verify_seal(true).map_err(chain)?;
    let parsed = crate::trace::parse_trace_with(&file, &seal, limits, true).map_err(chain)?;
    let header = &parsed.trace.header;
    let claims = Claims::new(
        &seal.content_hash,
        &header.scenario,
        &header.case,
        header.trial.as_ref().map(|t| t.as_str()),
        &relative_file(root, path),
    );
    write_signature(signer, root, (path, stored), &claims, durable)
}

/// Signs the trace file at `path`, whose stored bytes are `stored`, with `claims` a caller that
/// built the trace already knows (so nothing is parsed again), writing its signature as
/// [`sign_trace`] does.
pub fn write_signature(
    signer: &dyn TraceSigner,
    root: &Utf8Path,
    (path, stored): (&Utf8Path, &[u8]),
    claims: &Claims,
    durable: bool,
) -> Result<Utf8PathBuf, String> {
    let text = signer.sign(stored, claims)?;
    let sig = signature_path(path);
    crate::fsutil::Confined::new(root)
        .write(&sig, text.as_bytes(), durable)
        .map_err(|e| format!("cannot write `{sig}`: {e}"))?;
    Ok(sig)
}
