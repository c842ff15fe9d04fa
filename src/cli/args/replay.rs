//! `replay` flags.

use camino::Utf8PathBuf;
use clap::{Args, Subcommand};

use super::LimitArgs;

/// `replay` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum ReplayCommand {
    /// Serve traces' recorded model responses, in order, over the OpenAI API (Chat Completions
    /// and Responses) and the Anthropic Messages API, streamed or not; the first line printed is
    /// `listening on http://HOST:PORT`.
    Serve(ReplayServeArgs),
}

/// `replay serve` flags.
#[derive(Debug, Args)]
pub(crate) struct ReplayServeArgs {
    /// Traces, or directories of traces, to serve (one session per scenario and case).
    #[arg(value_name = "TRACE", required = true)]
    pub traces: Vec<Utf8PathBuf>,
    /// Where it listens.
    #[command(flatten)]
    pub server: super::record::ListenArgs,
    /// Stop once every session was finished (`POST /tracereplay/v1/finish`).
    #[arg(long)]
    pub exit_when_finished: bool,
    /// Stop once every session is done with its recording: finished, or every recorded response
    /// served and then either the run's end reported or a request made past the end.
    #[arg(long)]
    pub exit_when_exhausted: bool,
    /// Developer opt-in: also write the raw text of each hashed request input to a
    /// `NAME.prompts.ndjson` sidecar beside the recording (never into the trace or a log).
    #[arg(long)]
    pub dev_raw_prompts: bool,
    /// Record each replayed run as a sealed trace under DIR (`DIR/<scenario>/<case>.trace.ndjson.zst`).
    #[arg(long, value_name = "DIR")]
    pub record: Option<Utf8PathBuf>,
    /// Record each run as this trial of its case (`DIR/<scenario>/<case>/<ID>.trace.ndjson.zst`,
    /// `trial` in its header): an integer or 1-64 characters of [A-Za-z0-9._-]. A replayed
    /// trial is recorded as the trial it replays.
    #[arg(long, value_name = "ID", requires = "record", value_parser = parse_trial)]
    pub trial: Option<tracereplay_core::trials::TrialId>,
    /// Answer a request that diverges from the recording with an error, not the recorded output;
    /// a session that ends with recorded responses left unserved is a divergence too.
    #[arg(long)]
    pub strict: bool,
    /// How streamed answers are cut into writes: `recorded` (one per event, as providers send
    /// them), `whole` (one per line), `bytes:N` (N-byte writes, cutting through lines and UTF-8
    /// sequences) or `coalesce` (the whole stream in one write). The bytes served are the same.
    #[arg(long, value_name = "MODE", default_value = "recorded", value_parser = parse_chunking)]
    pub chunking: tracereplay_net::Chunking,
    /// Replay, then live: once a session leaves its recording — every recorded response served,
    /// or as `--live-from`/`--live-on-divergence` say — forward its requests to this upstream
    /// (a provider's base URL, as `record --upstream`) and record the answers as `record` does;
    /// a `note` event says where the run went live.
    #[arg(long, value_name = "URL")]
    pub upstream: Option<String>,
    /// Go live at request N of each session (the requests before it are served from the
    /// recording).
    #[arg(long, value_name = "N", requires = "upstream", conflicts_with = "live_on_divergence", value_parser = clap::value_parser!(u64).range(1..))]
    pub live_from: Option<u64>,
    /// Go live at a session's first request that diverges from the recording (that request is
    /// forwarded, not answered from the recording).
    #[arg(long, requires = "upstream")]
    pub live_on_divergence: bool,
    /// Allow a plain-HTTP upstream that is not on loopback.
    #[arg(long, requires = "upstream")]
    pub allow_insecure_upstream: bool,
    /// How long the upstream may stay silent in an answer.
    #[arg(long, value_name = "SECS", default_value = "600", value_parser = super::record::parse_secs)]
    pub upstream_timeout: std::time::Duration,
    /// Accepted for symmetry with `ingest --unkeyed`: each session hashes request inputs as its
    /// recording's header says its prompts were hashed — unkeyed, or with the key in
    /// `TRACEREPLAY_HASH_KEY` (required then, and its key id must match the recording's).
    #[arg(long)]
    pub unkeyed: bool,
    /// Size limits: of the recordings read, and of each session's recording (reported events
    /// and tool results past them are refused with 413).
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Signing of the recordings.
    #[command(flatten)]
    pub signing: super::SigningArgs,
}

fn parse_chunking(s: &str) -> Result<tracereplay_net::Chunking, String> {
    s.parse()
}

pub(crate) fn parse_trial(s: &str) -> Result<tracereplay_core::trials::TrialId, String> {
    tracereplay_core::trials::TrialId::parse(s)
}
