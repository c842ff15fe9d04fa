//! Command-line flags (raw values); `cli::*` resolves them into library options.

use camino::Utf8PathBuf;
use clap::{Args, Parser, Subcommand, ValueEnum};
pub(crate) use tracereplay::report::Format;

mod baseline;
mod cost;
mod gates;
mod ingest;
mod judging;
mod record;
mod replay;
mod report;
mod sign;
mod trials;

pub(crate) use baseline::{
    ApproveArgs, BaselineCommand, BaselineFilterArgs, PendingArgs, ReviewArgs,
};
pub(crate) use cost::BudgetArgs;
pub(crate) use gates::GatesArgs;
pub(crate) use ingest::{ExportArgs, IngestArgs, IngestFormatArg};
pub(crate) use judging::{AlphaArgs, DriftArgs, JudgingArgs, LimitArgs};
pub(crate) use record::{CollectArgs, RecordArgs};
pub(crate) use replay::{ReplayCommand, ReplayServeArgs};
pub(crate) use report::ReportArgs;
pub(crate) use sign::{CheckSigningArgs, SignArgs, SigningArgs, VerifyAttestationArgs};
pub(crate) use trials::{SpendingArg, TrialsCommand, TrialsNextArgs, TrialsPlanArgs};

/// Store agent runs as sealed traces and re-check them offline against scenario oracles.
#[derive(Debug, Parser)]
#[command(name = "tracereplay", version, about, max_term_width = 100)]
pub(crate) struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
    /// Colours: `auto` (on a terminal, unless `NO_COLOR`; `CLICOLOR_FORCE` or `FORCE_COLOR`
    /// force them), `always` or `never`.
    #[arg(long, value_enum, global = true, default_value = "auto")]
    pub color: ColorArg,
    /// The project file (default: the first `tracereplay.toml` in the working directory or
    /// its parents).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<Utf8PathBuf>,
    /// The project file's profile to use (default `ci` under CI when defined, else `default`).
    #[arg(long, global = true, value_name = "NAME")]
    pub profile: Option<String>,
}

/// `--status-level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum StatusLevelArg {
    /// No result row.
    None,
    /// Failing, erroring and blocking rows.
    Fail,
    /// Also rows with drift.
    Drift,
    /// Also passing rows.
    Pass,
    /// Every row.
    All,
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ColorArg {
    /// On a terminal, unless `NO_COLOR` is set; `CLICOLOR_FORCE`/`FORCE_COLOR` force them.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// A shell for `completions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[allow(missing_docs)]
pub(crate) enum ShellArg {
    Bash,
    Zsh,
    Fish,
    Powershell,
    Elvish,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Judge every trace against its scenario's oracles; exit 1 on failures that count.
    Check(Box<CheckArgs>),
    /// Seal and compress NDJSON traces (`NAME.trace.ndjson.zst`).
    Pack(PackArgs),
    /// Print a decompressed trace verbatim, footer included.
    Cat(CatArgs),
    /// Check seals without judging; unsealed traces count as failures here. With
    /// `--trusted-keys`, signatures too.
    Verify(VerifyArgs),
    /// Sign sealed traces: a detached minisign signature beside each one.
    Sign(SignArgs),
    /// Check a signed record of a run (`check --attest`) and, given the traces, their seals.
    VerifyAttestation(VerifyAttestationArgs),
    /// Show how traces drifted from their approved baselines, or between two recordings.
    Diff(DiffArgs),
    /// Quality gates over scenario files; with `--strength`, mutation-tested oracle strength.
    Gates(GatesArgs),
    /// Lay out an example suite, its approved baseline, the project file, `.gitignore` lines and
    /// a CI workflow.
    Init,
    /// Combine partitioned JSON reports into one report and one exit code.
    Merge(MergeArgs),
    /// Reports from the JSON reports of earlier runs: `--compare OLD.json NEW.json` shows two
    /// runs side by side (the page to read after switching model).
    Report(ReportArgs),
    /// Convert foreign recordings into sealed traces, hashing prompts on the way in.
    Ingest(IngestArgs),
    /// Write a trace in another format (`--to atif`: an ATIF trajectory), saying what it drops.
    Export(ExportArgs),
    /// Privacy and secret lint over traces and scenarios.
    Lint(LintArgs),
    /// Make a prompt-hashing key or a signing key pair, or show the key id of the one in use.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Explain every oracle's verdict for a trace, a scenario's traces, or the last run's failures.
    Explain(ExplainArgs),
    /// Review approved baselines: list, accept or reject pending ones, or approve current traces.
    #[command(subcommand)]
    Baseline(BaselineCommand),
    /// Plan trials of stochastic agents: how many to record, and what they can show.
    #[command(subcommand)]
    Trials(TrialsCommand),
    /// Print a shell completion script (`source <(tracereplay completions bash)`).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: ShellArg,
    },
    /// Print the manual page (roff; `tracereplay man | man -l -`).
    Man,
    /// Print the settings `check` runs with (project file, profile, defaults) and where each
    /// came from.
    Config,
    /// Serve recorded model outputs to a real agent loop (an OpenAI- and Anthropic-compatible
    /// endpoint).
    #[command(subcommand)]
    Replay(ReplayCommand),
    /// Record an agent's model requests as sealed traces: a proxy for the OpenAI (Chat
    /// Completions, Responses) and Anthropic Messages APIs; the first line printed is
    /// `listening on http://HOST:PORT`.
    Record(RecordArgs),
    /// Receive OTLP/HTTP traces from live-instrumented agents and write one sealed trace per
    /// run, mapped as `ingest` maps an export; the first line printed is
    /// `listening on http://HOST:PORT`.
    Collect(CollectArgs),
}

/// `explain` flags.
#[derive(Debug, Args)]
pub(crate) struct ExplainArgs {
    /// A trace file, a scenario id (every trace of it), or a trace or prefix in object storage
    /// (`s3://…`, every trace under it). With `--last`: a scenario id,
    /// `scenario/case` or a trace path, to narrow the run's failures to that one. None given:
    /// as `--last`.
    #[arg(value_name = "TARGET")]
    pub target: Option<String>,
    /// Explain the failures recorded in the newest run folder: each one's headline and deciding
    /// oracle (everything with `--full`, or when a target names one).
    #[arg(long)]
    pub last: bool,
    /// With `--last` (or no target): every oracle, the deciding events in context and drift,
    /// for each failure.
    #[arg(long)]
    pub full: bool,
    /// Where run folders are (`--last`).
    #[arg(long, value_name = "DIR", default_value = ".tracereplay/runs")]
    pub runs: Utf8PathBuf,
    /// Where scenarios and traces are looked up (default: the project file's `paths`, else
    /// `traces/`).
    #[arg(long = "in", value_name = "PATH")]
    pub paths: Vec<Utf8PathBuf>,
    /// A harness suite directory of scenarios (repeatable).
    #[arg(long = "scenarios", value_name = "DIR")]
    pub scenario_dirs: Vec<Utf8PathBuf>,
    /// Approved baselines, for drift (default `baselines/` when present).
    #[arg(long, value_name = "DIR")]
    pub baselines: Option<Utf8PathBuf>,
    /// How traces are judged (as `check` judges them).
    #[command(flatten)]
    pub judging: JudgingArgs,
    /// How drift is judged (as `check` judges it).
    #[command(flatten)]
    pub drift: DriftArgs,
}

/// `--ci` / `--no-ci`.
#[derive(Debug, Clone, Args)]
pub(crate) struct CiArgs {
    /// Behave as under CI (write no baseline or pending file) whatever the environment says.
    #[arg(long, conflicts_with = "no_ci")]
    pub ci: bool,
    /// Behave as off CI even when `CI` or `TF_BUILD` is set.
    #[arg(long)]
    pub no_ci: bool,
}

/// `--secrets`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SecretsArg {
    /// A secret fails the run.
    Fail,
    /// Secrets are reported without failing.
    Warn,
    /// No secret scan.
    Off,
}

impl SecretsArg {
    /// The library's mode.
    pub(crate) fn mode(self) -> tracereplay_trace::privacy::lint::SecretsMode {
        use tracereplay_trace::privacy::lint::SecretsMode;
        match self {
            SecretsArg::Fail => SecretsMode::Fail,
            SecretsArg::Warn => SecretsMode::Warn,
            SecretsArg::Off => SecretsMode::Off,
        }
    }
}

/// Where a suite is: declared once, for every command that reads a whole suite (`check`,
/// `gates`, `lint`, `baseline approve`). Settings: given here, they replace the project file's
/// `paths` and `scenarios` (see `cli::settings`).
#[derive(Debug, Clone, Args)]
pub(crate) struct SuiteArgs {
    /// Directories or files holding scenarios and traces; `check` and `lint` also read traces
    /// from object storage (`s3://`, `gs://`, `az://`, `https://`, with the `remote` feature).
    /// Default: the project file's `paths`, else `traces/`.
    #[arg(value_name = "PATH")]
    pub paths: Vec<Utf8PathBuf>,
    /// A harness suite directory: every `*.json` in it is a scenario (repeatable; replaces the
    /// project file's `scenarios`).
    #[arg(long = "scenarios", value_name = "DIR")]
    pub scenario_dirs: Vec<Utf8PathBuf>,
}

/// `lint` flags.
#[derive(Debug, Args)]
pub(crate) struct LintArgs {
    /// The suite: its paths and scenario directories.
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Admit raw-prompt sidecars.
    #[arg(long)]
    pub allow_raw_prompts: bool,
    /// Also run the behaviour oracles `no-repeated-call`, `no-retry-spiral` and
    /// `tool-errors-handled` with their defaults over every trace, and list what they find
    /// (as warnings: they never fail the lint).
    #[arg(long)]
    pub behaviour: bool,
    /// How secrets count.
    #[arg(long, value_enum, default_value_t = SecretsArg::Fail)]
    pub secrets: SecretsArg,
    /// Format of standard output.
    #[arg(long, value_enum, default_value_t = FormatArg::Human)]
    pub format: FormatArg,
    /// The price table: a model missing from it is a warning (default: the project file's
    /// `prices`, else `prices.toml` at the project's root, when there is one).
    #[arg(long, value_name = "FILE")]
    pub prices: Option<Utf8PathBuf>,
    /// Size limits.
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// `key` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum KeyCommand {
    /// Print a fresh random key, to store as the `TRACEREPLAY_HASH_KEY` secret; with `--sign`,
    /// write a signing key pair instead.
    New {
        /// Write a new Ed25519 signing key pair in minisign's formats: `DIR/tracereplay.key`
        /// (the secret key, unencrypted, mode 0600: store its content as the
        /// `TRACEREPLAY_SIGNING_KEY` secret) and `DIR/tracereplay.pub` (to commit); print its
        /// key id.
        #[arg(long, requires = "out")]
        sign: bool,
        /// Where `--sign` writes the key pair.
        #[arg(short = 'o', long = "out", value_name = "DIR", requires = "sign")]
        out: Option<Utf8PathBuf>,
    },
    /// Print the key id of `TRACEREPLAY_HASH_KEY` (never the key).
    Id,
}

/// `--drift`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DriftArg {
    /// Structural drift fails; wording, messages and usage warn.
    Default,
    /// Every drift category fails.
    Strict,
    /// Every drift is reported; none fails.
    Warn,
    /// No baseline comparison.
    Ignore,
}

/// `diff` flags.
#[derive(Debug, Args)]
pub(crate) struct DiffArgs {
    /// Traces to compare with their approved baselines (local, or in object storage as for
    /// `check`; default: the project file's `paths`, else `traces/`).
    #[arg(value_name = "PATH", conflicts_with_all = ["from", "to"])]
    pub paths: Vec<Utf8PathBuf>,
    /// The older recording: a trace file or a directory of traces (or a place in object
    /// storage). With `--from/--to`, the project file's `paths` are not read.
    #[arg(long, value_name = "OLD", requires = "to")]
    pub from: Option<Utf8PathBuf>,
    /// The newer recording: a trace file or a directory of traces (or a place in object storage).
    #[arg(long, value_name = "NEW", requires = "from")]
    pub to: Option<Utf8PathBuf>,
    /// Approved baselines directory (default: the project file's `baselines`, else
    /// `baselines/`).
    #[arg(long, value_name = "DIR")]
    pub baselines: Option<Utf8PathBuf>,
    /// A harness suite directory of scenarios (repeatable).
    #[arg(long = "scenarios", value_name = "DIR")]
    pub scenario_dirs: Vec<Utf8PathBuf>,
    /// Format of standard output.
    #[arg(long, value_enum, default_value_t = FormatArg::Human)]
    pub format: FormatArg,
    /// How traces are judged (as `check` judges them).
    #[command(flatten)]
    pub judging: JudgingArgs,
    /// How drift is judged (as `check` judges it).
    #[command(flatten)]
    pub drift: DriftArgs,
    /// How trial sets are compared.
    #[command(flatten)]
    pub alpha: AlphaArgs,
}

/// `check` flags.
#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// The suite: its paths and scenario directories.
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Approved baselines directory (default: the project file's `baselines`, else
    /// `baselines/`; given here, it must exist).
    #[arg(long, value_name = "DIR")]
    pub baselines: Option<Utf8PathBuf>,
    /// Judge only this scenario id (repeatable, case-insensitive).
    #[arg(long = "scenario", value_name = "ID")]
    pub scenarios: Vec<String>,
    /// Which result rows the human report prints: failing ones, also drifted ones, or every
    /// row (default: every row for runs of at most 50 traces, else `drift`).
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub status_level: Option<StatusLevelArg>,
    /// Print every result row (`--status-level all`).
    #[arg(short, long, conflicts_with_all = ["quiet", "status_level"])]
    pub verbose: bool,
    /// Print the summary line (and the next step) only.
    #[arg(short, long)]
    pub quiet: bool,
    /// Judge only the traces that failed or errored in the newest run folder (`--artifacts`,
    /// default `.tracereplay/runs`), and any trace that run did not judge.
    #[arg(long)]
    pub last_failed: bool,
    /// Judge only scenarios with this tag or type (repeatable).
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// Which failing traces make the exit code 1, by their scenario's risk (default: `high`).
    #[arg(long, value_enum)]
    pub fail_on: Option<FailOnArg>,
    /// How traces are judged.
    #[command(flatten)]
    pub judging: JudgingArgs,
    /// Judge a scenario's `scriptedTrace` when it has no stored trace (`source: "scripted"`).
    #[arg(long)]
    pub scripted: bool,
    /// How secrets found in traces and scenarios count.
    #[arg(long, value_enum, default_value_t = SecretsArg::Fail)]
    pub secrets: SecretsArg,
    /// Format of standard output.
    #[arg(long, value_parser = report_format(), default_value = "human")]
    pub format: Format,
    /// Also write the JSON report to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<Utf8PathBuf>,
    /// Also write JUnit XML to this file.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<Utf8PathBuf>,
    /// Also write the Markdown summary to this file (e.g. `$GITHUB_STEP_SUMMARY`).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<Utf8PathBuf>,
    /// Also write the self-contained HTML report (overview, table, trace views) to this file.
    #[arg(long, value_name = "FILE")]
    pub html: Option<Utf8PathBuf>,
    /// Also write the verdicts as OpenTelemetry logs to this file (OTLP/JSON): one
    /// `gen_ai.evaluation.result` event per oracle result, carrying an ingested OpenTelemetry
    /// run's trace and span ids.
    #[arg(long, value_name = "FILE")]
    pub otlp: Option<Utf8PathBuf>,
    /// Also send those logs over OTLP/HTTP (JSON) to this endpoint: a URL without a path gets
    /// `/v1/logs`. Headers come from `OTEL_EXPORTER_OTLP_HEADERS` (`key=value,…`), never shown.
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// Write a run folder (report.json, junit.xml, report.md, report.html, evidence/) under DIR.
    #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = ".tracereplay/runs")]
    pub artifacts: Option<Utf8PathBuf>,
    /// Print how long each phase took (stderr).
    #[arg(long)]
    pub timings: bool,
    /// Where the result cache lives (default: `.tracereplay/cache`).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<Utf8PathBuf>,
    /// Judge every trace afresh, without reading or writing the result cache.
    #[arg(long)]
    pub no_cache: bool,
    /// MiB of result rows held in memory: rows beyond go to a temporary file, and a larger
    /// result cache is read from disk as needed (the report is the same).
    #[arg(long, value_name = "MIB", default_value_t = (tracereplay_core::eval::ROW_MEMORY >> 20) as u32)]
    pub row_memory: u32,
    /// How drift is judged.
    #[command(flatten)]
    pub drift: DriftArgs,
    /// How trial sets are compared.
    #[command(flatten)]
    pub alpha: AlphaArgs,
    /// Suite budgets.
    #[command(flatten)]
    pub budget: BudgetArgs,
    /// CI detection.
    #[command(flatten)]
    pub ci: CiArgs,
    /// Judge only the scenarios in share K of N (`hash:K/N`), for CI sharding; combine the JSON
    /// reports with `tracereplay merge`.
    #[arg(long, value_name = "hash:K/N", value_parser = parse_partition)]
    pub partition: Option<(u64, u64)>,
    /// Worker threads (default: all cores).
    #[arg(short = 'j', long = "jobs", value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
    /// Signatures and attestation.
    #[command(flatten)]
    pub signing: CheckSigningArgs,
}

impl CheckArgs {
    /// The file each format is also written to: every format has its arm, so a new one says
    /// whether it has a flag of its own (human and GitHub annotations go to standard output
    /// only).
    pub(crate) fn also_written(&self, format: Format) -> Option<&camino::Utf8Path> {
        match format {
            Format::Json => self.json.as_deref(),
            Format::Junit => self.junit.as_deref(),
            Format::Markdown => self.markdown.as_deref(),
            Format::Html => self.html.as_deref(),
            Format::Otlp => self.otlp.as_deref(),
            Format::Human | Format::Github => None,
        }
    }
}

/// Parses `hash:K/N` with 1 ≤ K ≤ N.
pub(crate) fn parse_partition(s: &str) -> Result<(u64, u64), String> {
    let rest = s
        .strip_prefix("hash:")
        .ok_or("expected `hash:K/N`, e.g. `hash:1/4`")?;
    let (k, n) = rest
        .split_once('/')
        .ok_or("expected `hash:K/N`, e.g. `hash:1/4`")?;
    let k: u64 = k
        .parse()
        .map_err(|_| format!("`{k}` is not a share number"))?;
    let n: u64 = n
        .parse()
        .map_err(|_| format!("`{n}` is not a share count"))?;
    if n == 0 || k == 0 || k > n {
        return Err(format!(
            "share {k} of {n} does not exist: K runs from 1 to N"
        ));
    }
    Ok((k, n))
}

/// `merge` flags.
#[derive(Debug, Args)]
pub(crate) struct MergeArgs {
    /// JSON reports of partitioned `check` runs (`--json FILE` or `--format json`); in object
    /// storage, a report's URL, or a prefix standing for every `*.json` under it.
    #[arg(value_name = "REPORT.json", required = true)]
    pub reports: Vec<Utf8PathBuf>,
    /// Format of standard output.
    #[arg(long, value_parser = report_format(), default_value = "human")]
    pub format: Format,
    /// Also write the merged JSON report to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<Utf8PathBuf>,
    /// Also write the merged HTML report to this file.
    #[arg(long, value_name = "FILE")]
    pub html: Option<Utf8PathBuf>,
}

/// `--fail-on`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum FailOnArg {
    /// Every failure counts.
    Any,
    /// High and Critical scenarios.
    High,
    /// Critical scenarios only.
    Critical,
    /// No failure counts (errors still do).
    None,
}

/// `--format` of `diff` and `lint`: the formats that write their documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum FormatArg {
    /// For a person.
    Human,
    /// JSON.
    Json,
}

/// `--format`'s values: every report format, by name, with what it is.
fn report_format() -> impl clap::builder::TypedValueParser<Value = Format> {
    use clap::builder::TypedValueParser;
    let values = Format::ALL.map(|f| clap::builder::PossibleValue::new(f.name()).help(f.about()));
    clap::builder::PossibleValuesParser::new(values)
        .map(|name| Format::named(&name).expect("one of the possible values"))
}

impl From<FormatArg> for Format {
    fn from(arg: FormatArg) -> Format {
        match arg {
            FormatArg::Human => Format::Human,
            FormatArg::Json => Format::Json,
        }
    }
}

/// `pack` flags.
#[derive(Debug, Args)]
pub(crate) struct PackArgs {
    /// NDJSON traces to seal, or directories: every `*.trace.ndjson` under one (with `-o`,
    /// each keeps its place under the directory).
    #[arg(value_name = "IN", required = true)]
    pub inputs: Vec<Utf8PathBuf>,
    /// Write the sealed traces here instead of beside the inputs.
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    pub out: Option<Utf8PathBuf>,
    /// Seal an edited copy of a sealed trace again: its old footer is dropped, the rest is
    /// validated and sealed (and the output says so).
    #[arg(long)]
    pub reseal: bool,
    /// Replace a sealed trace that exists with different content.
    #[arg(long)]
    pub force: bool,
    /// Remove each unsealed source once its sealed copy is written beside it (otherwise both
    /// stay, and discovery reads the same trace twice).
    #[arg(long)]
    pub rm_source: bool,
    /// Size limits.
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Signing.
    #[command(flatten)]
    pub signing: SigningArgs,
}

/// `cat` flags.
#[derive(Debug, Args)]
pub(crate) struct CatArgs {
    /// The trace to print.
    #[arg(value_name = "TRACE")]
    pub trace: Utf8PathBuf,
    /// Size limits.
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// `verify` flags.
#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    /// Directories or trace files, or places in object storage as for `check` (default: the
    /// project file's `paths`, else `traces/`).
    #[arg(value_name = "PATH")]
    pub paths: Vec<Utf8PathBuf>,
    /// Also check each trace's signature against these public keys (a file of one minisign
    /// public key per line, or a directory of `*.pub` files; default: the project file's
    /// `trusted-keys`): an unsigned trace, a bad signature or an untrusted key fails.
    #[arg(long, value_name = "PATH")]
    pub trusted_keys: Option<Utf8PathBuf>,
    /// Size limits.
    #[command(flatten)]
    pub limits: LimitArgs,
}
