//! Flags of signing: the signing key of the commands that write traces, the trusted keys of
//! those that check them, `sign` and `verify-attestation`.

use camino::Utf8PathBuf;
use clap::Args;

/// `--signing-key`, of the commands that write traces (`pack`, `ingest`, `replay serve
/// --record`) or an attestation (`check --attest`).
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct SigningArgs {
    /// Sign with this secret key file (`tracereplay key new --sign`); default: the key in
    /// `TRACEREPLAY_SIGNING_KEY` (the file's content, e.g. a CI secret), when set. What is
    /// signed gets a detached minisign signature, `NAME.trace.ndjson.zst.minisig`.
    #[arg(long, value_name = "FILE")]
    pub signing_key: Option<Utf8PathBuf>,
    /// The run these traces belong to (a CI run id, a commit): signatures name it in their
    /// trusted comment, and `check --require-signed --run-id ID` accepts only signatures that
    /// name it. With `check`, the run every signature must name (and the record `--attest`
    /// writes states it).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
}

/// What `check` does with signatures.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct CheckSigningArgs {
    /// Require every trace to carry a good signature by a trusted key: an unsigned trace, a bad
    /// signature or an untrusted key is an `error` row naming the file and the key id. Needs
    /// the trusted keys (`--trusted-keys`, or `trusted-keys` in the project file).
    #[arg(long, overrides_with = "no_require_signed")]
    pub require_signed: bool,
    /// Do not require signatures, whatever the project file says.
    #[arg(long, overrides_with = "require_signed")]
    pub no_require_signed: bool,
    /// The public keys to trust: a file of one minisign public key per line (a `.pub` file is
    /// one), or a directory of `*.pub` files (default: `trusted-keys` in the project file).
    #[arg(long, value_name = "PATH")]
    pub trusted_keys: Option<Utf8PathBuf>,
    /// Write a signed record of the run to FILE: an in-toto Statement (every judged trace's
    /// seal and verdict, the options, the scenario files' hashes, the exit code) in a DSSE
    /// envelope, signed with the signing key.
    #[arg(long, value_name = "FILE")]
    pub attest: Option<Utf8PathBuf>,
    /// The key `--attest` signs with.
    #[command(flatten)]
    pub signing: SigningArgs,
}

/// `sign` flags.
#[derive(Debug, Args)]
pub(crate) struct SignArgs {
    /// Sealed trace files, or directories of them.
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<Utf8PathBuf>,
    /// The key to sign with.
    #[command(flatten)]
    pub signing: SigningArgs,
    /// Size limits.
    #[command(flatten)]
    pub limits: super::LimitArgs,
}

/// `verify-attestation` flags.
#[derive(Debug, Args)]
pub(crate) struct VerifyAttestationArgs {
    /// The attestation `check --attest` wrote.
    #[arg(value_name = "FILE")]
    pub attestation: Utf8PathBuf,
    /// The public keys to trust (a file of one public key per line, or a directory of
    /// `*.pub` files; default: `trusted-keys` in the project file).
    #[arg(long, value_name = "PATH")]
    pub trusted_keys: Option<Utf8PathBuf>,
    /// The traces the run judged (files or directories, as `check` was given them, from the
    /// same directory): each attested trace must be among them with the attested seal and
    /// bytes.
    #[arg(long = "traces", value_name = "PATH")]
    pub traces: Vec<Utf8PathBuf>,
    /// Check only the signature (and, with `--traces`, the traces): a record of a failed run,
    /// or one that states no time, then verifies too.
    #[arg(long)]
    pub signature_only: bool,
    /// A trace among `--traces` that the record does not name is fine (it was added after the
    /// run); without this it fails the verification.
    #[arg(long)]
    pub allow_extra: bool,
    /// The record must be of this commit.
    #[arg(long, value_name = "SHA")]
    pub commit: Option<String>,
    /// The record must be of this run id (`check --run-id`).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// The run must have ended at most this many seconds ago.
    #[arg(long, value_name = "SECONDS")]
    pub max_age: Option<u64>,
    /// Size limits.
    #[command(flatten)]
    pub limits: super::LimitArgs,
}
