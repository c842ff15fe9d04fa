//! `trials` flags: planning trials before they are recorded.

use camino::Utf8PathBuf;
use clap::{Args, Subcommand};

use super::{AlphaArgs, JudgingArgs, SuiteArgs};

/// `trials` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum TrialsCommand {
    /// How many trials to record: the chance a case of each true pass rate passes under a
    /// `trials` policy, how many trials per side let a drift check see a drop, and what each
    /// case's recorded trials can and cannot see. Exact binomial and Fisher computations.
    Plan(TrialsPlanArgs),
    /// Whether a case needs another trial: `settled` (its verdict is known — further trials of
    /// a sequential policy could not change it, or a fixed policy has its `min`) or `record trial
    /// K`. The recorder answers the same at `GET /record/<scenario>/<case>/tracereplay/v1/next`.
    Next(TrialsNextArgs),
}

/// `trials next` flags.
#[derive(Debug, Args)]
pub(crate) struct TrialsNextArgs {
    /// The case, as `SCENARIO/CASE` (split at the first `/`).
    #[arg(value_name = "SCENARIO/CASE")]
    pub case: String,
    /// The suite: its paths and scenario directories.
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Approved baselines directory, for a `trials.drift` design (default: the project file's
    /// `baselines`, else `baselines/`).
    #[arg(long, value_name = "DIR")]
    pub baselines: Option<Utf8PathBuf>,
    /// `ignore` leaves a `trials.drift` design's regression test out of the answer.
    #[arg(long, value_enum)]
    pub drift: Option<super::DriftArg>,
    /// The false discovery rate of the drift tests (a `trials.drift` design runs at α over the
    /// run's cases).
    #[command(flatten)]
    pub alpha: AlphaArgs,
    /// Print the answer as JSON.
    #[arg(long)]
    pub json: bool,
    /// How the trials are judged (as `check` judges them).
    #[command(flatten)]
    pub judging: JudgingArgs,
}

/// `trials plan` flags.
#[derive(Debug, Args)]
pub(crate) struct TrialsPlanArgs {
    /// The suite: its paths and scenario directories (its scenarios' `trials` policies, its
    /// cases' recorded trials).
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Approved baselines directory (default: the project file's `baselines`, else
    /// `baselines/`).
    #[arg(long, value_name = "DIR")]
    pub baselines: Option<Utf8PathBuf>,
    /// A policy to plan, written as a scenario writes `trials` (`{"min": 8, "pass": {"at-least":
    /// 6}}`), instead of the suite's.
    #[arg(long, value_name = "JSON")]
    pub policy: Option<String>,
    /// The trial counts to tabulate, each as the policy with that `min` (default: each policy's
    /// `min`, twice and four times it; only `min` for an `at-least` policy, whose N is a count;
    /// `max` for a sequential policy, judged as all `max` trials would be).
    #[arg(long, value_name = "N,…", value_delimiter = ',')]
    pub trials: Vec<u64>,
    /// The true pass rates to tabulate (default: 0.5,0.6,0.7,0.8,0.9,0.95,0.99).
    #[arg(long, value_name = "P,…", value_delimiter = ',')]
    pub rates: Vec<f64>,
    /// The pass rate before the drop a drift check should see.
    #[arg(long, value_name = "P", default_value_t = 0.9)]
    pub from: f64,
    /// The pass rate after it.
    #[arg(long, value_name = "P", default_value_t = 0.5)]
    pub to: f64,
    /// The chance of seeing the drop the plan asks for (1 − β).
    #[arg(long, value_name = "P", default_value_t = 0.8)]
    pub power: f64,
    /// How many cases one run compares (default: the suite's cases, at least 1): the
    /// Benjamini–Hochberg correction over them is bounded by testing each case at α / cases.
    #[arg(long, value_name = "N")]
    pub cases: Option<u64>,
    /// Plan a group-sequential drift check: the current trials at each look (`4,8,12,16`),
    /// stopping at the first look that shows the regression; prints each look's exact boundary.
    #[arg(long, value_name = "N,…", value_delimiter = ',')]
    pub looks: Vec<u64>,
    /// With `--looks`: the approved trials (default: the last look's count).
    #[arg(long, value_name = "N")]
    pub approved: Option<u64>,
    /// With `--looks`: how α is spent over the looks.
    #[arg(long, value_enum, default_value_t = SpendingArg::ObrienFleming)]
    pub spending: SpendingArg,
    /// The false discovery rate drift is held to.
    #[command(flatten)]
    pub alpha: AlphaArgs,
    /// Print the plan as JSON.
    #[arg(long)]
    pub json: bool,
    /// How the trials are judged (as `check` judges them).
    #[command(flatten)]
    pub judging: JudgingArgs,
}

/// `--spending`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SpendingArg {
    /// Lan–DeMets O'Brien–Fleming-type: little early, nearly all of α at the last look.
    ObrienFleming,
    /// Lan–DeMets Pocock-type: about evenly over the looks.
    Pocock,
}
