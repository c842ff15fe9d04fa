//! `ingest` flags.

use camino::Utf8PathBuf;
use clap::{Args, ValueEnum};

use super::SigningArgs;

/// `--from`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum IngestFormatArg {
    /// OpenClaw.NET scenario files with a `scriptedTrace`.
    OpenclawScenario,
    /// OpenAI Chat Completions messages (also tau-bench and tau2-bench results) or Responses API
    /// items.
    OpenaiMessages,
    /// OTLP/JSON trace exports (one document per file or per line).
    OtlpJson,
    /// OTLP protobuf trace exports (`ExportTraceServiceRequest`, what the OpenTelemetry SDKs'
    /// OTLP/HTTP exporters send, a collector's `otlp_proto`).
    OtlpProto,
    /// OpenTelemetry SDK span JSON (`ReadableSpan.to_json()`: a span, a list, `{"spans": …}`).
    OtelSpans,
    /// Harbor's Agent Trajectory Interchange Format (ATIF v1.x) trajectories; embedded
    /// subagent trajectories are runs of their own.
    Atif,
}

/// `ingest` flags.
#[derive(Debug, Args)]
pub(crate) struct IngestArgs {
    /// The input format (detected from each file's content when not given; the choice is
    /// printed).
    #[arg(long, value_enum)]
    pub from: Option<IngestFormatArg>,
    /// Input files, or a collector's bucket prefix (`s3://BUCKET/PREFIX/`, `gs://…`, `az://…`,
    /// with the `remote` feature): its OTLP export objects, read incrementally.
    #[arg(value_name = "IN", required = true)]
    pub inputs: Vec<Utf8PathBuf>,
    /// Output directory: traces go to `DIR/<scenario>/<case>.trace.ndjson.zst`.
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    pub out: Utf8PathBuf,
    /// The scenario of every run (else named from the input: its scenario, task, agent, or the
    /// file's stem).
    #[arg(long, value_name = "ID")]
    pub scenario: Option<String>,
    /// The case of every run (else named from the input: a benchmark run's agent and trial,
    /// trace id, the run's id, or the file's stem).
    #[arg(long, value_name = "NAME")]
    pub case: Option<String>,
    /// Name runs by a template, `SCENARIO/CASE` with placeholders in braces (`{task}/{trial}`):
    /// task, trial, domain, agent, trace, id, source, file (the input's stem) and n (the run's
    /// 1-based position in its input).
    #[arg(long, value_name = "TEMPLATE", conflicts_with_all = ["scenario", "case"])]
    pub name: Option<String>,
    /// Replace a trace that exists with different content (identical content is never
    /// rewritten).
    #[arg(long)]
    pub force: bool,
    /// Write runs that hold no agent event (no user message, inference, tool call or final
    /// answer).
    #[arg(long)]
    pub allow_empty: bool,
    /// Also write one scenario per benchmark task (tau-bench, tau2-bench) from the benchmark's
    /// own expectations, for a person to review.
    #[arg(long)]
    pub emit_scenarios: bool,
    /// How prompts are hashed.
    #[command(flatten)]
    pub prompts: super::record::PromptArgs,
    /// Print only each input's summary line and the problems, not a line per trace.
    #[arg(short, long)]
    pub quiet: bool,
    /// Signing.
    #[command(flatten)]
    pub signing: SigningArgs,
}

/// `export --to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ExportFormatArg {
    /// Harbor's Agent Trajectory Interchange Format: one trajectory (prompts as their hashes).
    Atif,
}

/// `export` flags.
#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// The format to write.
    #[arg(long, value_enum)]
    pub to: ExportFormatArg,
    /// The trace to export.
    #[arg(value_name = "TRACE")]
    pub trace: Utf8PathBuf,
    /// Write to FILE instead of standard output.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: Option<Utf8PathBuf>,
    /// Size limits of the trace read.
    #[command(flatten)]
    pub limits: super::LimitArgs,
}
