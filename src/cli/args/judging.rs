//! Flags of judging, shared by every command that judges traces: seals, raw prompts, prices,
//! size limits, and how drift is judged.

use camino::Utf8PathBuf;
use clap::Args;

use super::DriftArg;

/// How traces are judged: shared by every command that judges (`check`, `diff`, `explain`), so
/// they judge a trace alike.
#[derive(Debug, Clone, Args)]
pub(crate) struct JudgingArgs {
    /// Treat unsealed traces as integrity failures (recommended in CI).
    #[arg(long, overrides_with = "no_require_sealed")]
    pub require_sealed: bool,
    /// Do not require seals, whatever the project file says.
    #[arg(long, overrides_with = "require_sealed")]
    pub no_require_sealed: bool,
    /// Admit raw-prompt sidecars beside traces, and prompt-side text in fields the trace format
    /// does not define (a developer opt-in; raw text in a prompt object is never admitted).
    #[arg(long)]
    pub allow_raw_prompts: bool,
    /// The price table turning recorded token usage into US dollars (default: the project
    /// file's `prices`, else `prices.toml` at the project's root, when there is one). A cost a
    /// trace records is kept.
    #[arg(long, value_name = "FILE")]
    pub prices: Option<Utf8PathBuf>,
    /// Size limits.
    #[command(flatten)]
    pub limits: LimitArgs,
}

impl JudgingArgs {
    /// The size limits and the raw-prompt opt-in, as the library's judging takes them.
    pub(crate) fn parts(&self) -> (tracereplay::trace::Limits, bool) {
        (self.limits.limits(), self.allow_raw_prompts)
    }
}

/// How drift from approved baselines is judged: shared by `check`, `diff` and `explain`
/// (`explain` compares one trace at a time, so trial sets' `--alpha` is [`AlphaArgs`]).
#[derive(Debug, Clone, Args)]
pub(crate) struct DriftArgs {
    /// Which drift from the approved baselines fails the run (default: `default`).
    #[arg(long, value_enum)]
    pub drift: Option<DriftArg>,
    /// Allowed move of a usage total, in percent of the approved value (default: 20).
    #[arg(long, value_name = "PCT")]
    pub usage_tolerance: Option<f64>,
}

/// How drift between trial sets is tested: `check` and `diff`, which compare whole sets.
#[derive(Debug, Clone, Args)]
pub(crate) struct AlphaArgs {
    /// The false discovery rate the drift tests of trial sets are held to, over the cases of
    /// the run (Benjamini–Hochberg; default: 0.05).
    #[arg(long, value_name = "ALPHA")]
    pub alpha: Option<f64>,
}

/// Size limits shared by every command that reads traces.
#[derive(Debug, Clone, Args)]
pub(crate) struct LimitArgs {
    /// Longest accepted trace line, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 16 << 20)]
    pub max_line_bytes: u64,
    /// Largest accepted decompressed trace, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 256 << 20)]
    pub max_trace_bytes: u64,
}

impl LimitArgs {
    /// The library's limits.
    pub(crate) fn limits(&self) -> tracereplay::trace::Limits {
        tracereplay::trace::Limits {
            max_line_bytes: self.max_line_bytes,
            max_trace_bytes: self.max_trace_bytes,
        }
    }
}
