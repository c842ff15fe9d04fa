//! `baseline` flags: the review of pending baselines and their first approval.

use camino::Utf8PathBuf;
use clap::{Args, Subcommand};

use super::{CiArgs, JudgingArgs, SuiteArgs};

/// `baseline` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum BaselineCommand {
    /// List pending baselines (`.new` and `.deleted`) with a one-line summary each.
    Pending(PendingArgs),
    /// Walk the pending baselines one at a time on a terminal, each with its verdict, drift and
    /// diff: `a` accept, `r` reject, `s` skip, `i` details, `q` quit. A pending removal asks
    /// again (`y`) before it deletes the approved baseline. Off a terminal it refuses; use
    /// `pending --diff` and `accept`/`reject` in scripts.
    Review(ReviewArgs),
    /// Promote pending baselines matching the filters (all `new` and `changed` ones when none
    /// is given). A pending removal is applied only with `--removals`, or when a filter names
    /// its `SCENARIO/CASE`: a bulk accept never deletes an approved baseline by itself.
    Accept(AcceptArgs),
    /// Delete pending baselines matching the filters (all when none given).
    Reject(BaselineFilterArgs),
    /// Write approved baselines straight from the current traces (first adoption).
    Approve(ApproveArgs),
}

/// The baselines directory.
#[derive(Debug, Args)]
pub(crate) struct BaselineDirArgs {
    /// Approved baselines directory (default: the project file's `baselines`, else
    /// `baselines`).
    #[arg(long, value_name = "DIR")]
    pub baselines: Option<Utf8PathBuf>,
}

/// `pending` flags.
#[derive(Debug, Args)]
pub(crate) struct PendingArgs {
    /// The baselines directory.
    #[command(flatten)]
    pub dir: BaselineDirArgs,
    /// Under each line, what approving it changes: the drift findings against the approved
    /// baseline with their diffs (as `check` shows drift), a new baseline's behaviour as
    /// additions, a removal's as removals, a trial set's own findings (its tests, as `check`
    /// runs them). On a terminal, through the pager (`$PAGER`, else `less -R`).
    #[arg(long)]
    pub diff: bool,
    /// With `--diff`: also list a trial set's trials.
    #[arg(long, requires = "diff")]
    pub trials: bool,
}

/// `accept` / `reject` flags.
#[derive(Debug, Args)]
pub(crate) struct BaselineFilterArgs {
    /// `SCENARIO` or `SCENARIO/CASE` (case-insensitive); none means every pending file.
    #[arg(value_name = "FILTER")]
    pub filters: Vec<String>,
    /// The baselines directory.
    #[command(flatten)]
    pub dir: BaselineDirArgs,
    /// CI detection.
    #[command(flatten)]
    pub ci: CiArgs,
}

/// `accept` flags.
#[derive(Debug, Args)]
pub(crate) struct AcceptArgs {
    /// Which pending files, and where.
    #[command(flatten)]
    pub filter: BaselineFilterArgs,
    /// Also apply the pending removals the filters match (deleting those approved baselines).
    #[arg(long)]
    pub removals: bool,
}

/// `approve` flags.
#[derive(Debug, Args)]
pub(crate) struct ApproveArgs {
    /// The suite: its paths and scenario directories.
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Approve only this scenario id (repeatable).
    #[arg(long = "scenario", value_name = "ID")]
    pub scenarios: Vec<String>,
    /// The baselines directory.
    #[command(flatten)]
    pub dir: BaselineDirArgs,
    /// CI detection.
    #[command(flatten)]
    pub ci: CiArgs,
    /// How traces are judged (as `check` judges them, so that the baselines carry what
    /// `check` compares: priced costs included).
    #[command(flatten)]
    pub judging: JudgingArgs,
}

/// `review` flags.
#[derive(Debug, Args)]
pub(crate) struct ReviewArgs {
    /// Which pending files, and where.
    #[command(flatten)]
    pub filter: BaselineFilterArgs,
}
