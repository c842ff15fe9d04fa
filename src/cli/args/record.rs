//! `record` flags.

use camino::Utf8PathBuf;
use clap::Args;

use super::LimitArgs;

/// `record` flags.
#[derive(Debug, Args)]
pub(crate) struct RecordArgs {
    /// The upstream every request is forwarded to: a provider's base URL
    /// (`https://api.openai.com`, `https://api.anthropic.com`) or another server's (a request
    /// for `/v1/chat/completions` goes to `URL/v1/chat/completions`).
    #[arg(long, value_name = "URL")]
    pub upstream: String,
    /// Where sessions are written: `DIR/<scenario>/<case>.trace.ndjson.zst`, or
    /// `DIR/<scenario>/<case>/<trial>.trace.ndjson.zst` for a trial. Default: the suite — the
    /// first of the project file's `paths` (recordings belong to the suite they are checked in).
    #[arg(long, value_name = "DIR")]
    pub out: Option<Utf8PathBuf>,
    /// Replace a recording already on disk for a session's run (re-recording a case after the
    /// agent changed; `check` then shows the drift from its approved baseline). Without it such
    /// a session is refused (409) before anything is forwarded.
    #[arg(long)]
    pub replace: bool,
    /// Where it listens.
    #[command(flatten)]
    pub server: ListenArgs,
    /// Allow a plain-HTTP upstream that is not on loopback (credentials would cross the network
    /// unencrypted).
    #[arg(long)]
    pub allow_insecure_upstream: bool,
    /// Record each session as this trial of its case, unless its path (`…/trial/<ID>/`) or
    /// X-Tracereplay-Trial header names another: an integer or 1-64 characters of
    /// [A-Za-z0-9._-].
    #[arg(long, value_name = "ID", value_parser = super::replay::parse_trial)]
    pub trial: Option<tracereplay_core::trials::TrialId>,
    /// Write a session once it has had no request in flight for SECS seconds.
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    pub idle: Option<std::time::Duration>,
    /// How long the upstream may stay silent in an answer before the request counts as timed
    /// out (recorded as an `error` event, answered 504).
    #[arg(long, value_name = "SECS", default_value = "600", value_parser = parse_secs)]
    pub upstream_timeout: std::time::Duration,
    /// How prompts are hashed.
    #[command(flatten)]
    pub prompts: PromptArgs,
    /// Size limits of each session's recording.
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Signing of the recordings.
    #[command(flatten)]
    pub signing: super::SigningArgs,
}

/// Where a server (`record`, `collect`, `replay serve`) listens.
#[derive(Debug, Args)]
pub(crate) struct ListenArgs {
    /// Where to listen (port 0 picks a free port).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub listen: std::net::SocketAddr,
    /// Allow listening on an address other than loopback: anyone who reaches it is served,
    /// can have traces written, and can spend the credentials its requests carry.
    #[arg(long)]
    pub allow_remote: bool,
}

/// How prompts are hashed by what records (`record`, `collect`, `ingest`).
#[derive(Debug, Args)]
pub(crate) struct PromptArgs {
    /// Hash prompts unkeyed (plain BLAKE3, `b3:`) instead of with the key in
    /// `TRACEREPLAY_HASH_KEY`.
    #[arg(long)]
    pub unkeyed: bool,
    /// Developer opt-in: also write the raw text of each hashed prompt to a
    /// `NAME.prompts.ndjson` sidecar beside its trace (never into the trace or a log).
    #[arg(long)]
    pub dev_raw_prompts: bool,
}

pub(crate) fn parse_secs(s: &str) -> Result<std::time::Duration, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 86_400.0 * 365.0 => {
            Ok(std::time::Duration::from_secs_f64(v))
        }
        _ => Err(format!("`{s}` is not a number of seconds above 0")),
    }
}

/// `collect` flags.
#[derive(Debug, Args)]
pub(crate) struct CollectArgs {
    /// Where runs are written: `DIR/<scenario>/<case>.trace.ndjson.zst`, named as `ingest`
    /// names the runs of an OTLP export.
    #[arg(long, value_name = "DIR")]
    pub out: Utf8PathBuf,
    /// Where it listens.
    #[command(flatten)]
    pub server: ListenArgs,
    /// Write a run that has had no span for SECS seconds, root span or not (a run whose root
    /// never comes — its parent lives in another service — expires so).
    #[arg(long, value_name = "SECS", default_value = "60", value_parser = parse_secs)]
    pub idle: Option<std::time::Duration>,
    /// How long after its root span a run waits for late spans and log records before it is
    /// written (the SDKs' batch processors export every 5 seconds).
    #[arg(long, value_name = "SECS", default_value = "6", value_parser = parse_secs)]
    pub settle: std::time::Duration,
    /// Runs held open at most: past it, the runs idle longest are written to make room (a
    /// request that alone would pass it gets 503, which exporters retry).
    #[arg(long, value_name = "N", default_value = "10000")]
    pub max_open_runs: usize,
    /// Megabytes of spans held at most, counted as the spans cost in memory: past it, the runs
    /// idle longest are written to make room (a request that alone would pass it gets 503).
    #[arg(long, value_name = "MB", default_value = "256")]
    pub max_buffered_mb: usize,
    /// The scenario of every run (else named from the spans: the agent, or the root span).
    #[arg(long)]
    pub scenario: Option<String>,
    /// How prompts are hashed.
    #[command(flatten)]
    pub prompts: PromptArgs,
    /// Size limits of each run's trace.
    #[command(flatten)]
    pub limits: LimitArgs,
}
