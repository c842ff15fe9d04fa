//! `gates` flags: the quality gates over scenario files, and oracle strength.

use camino::Utf8PathBuf;
use clap::Args;

use super::{LimitArgs, SuiteArgs};

/// `gates` flags.
#[derive(Debug, Args)]
pub(crate) struct GatesArgs {
    /// The suite: its paths and scenario directories.
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Also measure oracle strength by mutating each passing trace.
    #[arg(long)]
    pub strength: bool,
    /// Scenarios whose strength is below this fail the gate.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.5)]
    pub min_strength: f64,
    /// With `--strength`: the time all `expr` programs of the run may take together (mutants
    /// left without time are not counted).
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub expr_budget: u64,
    /// The α the `trials` warnings are judged at (as `check --alpha`; default: 0.05).
    #[arg(long, value_name = "ALPHA")]
    pub alpha: Option<f64>,
    /// With `--strength`: the price table for `max-cost` (default: `prices.toml` at the
    /// project's root, as `check` has it).
    #[arg(long, value_name = "FILE")]
    pub prices: Option<Utf8PathBuf>,
    /// Size limits.
    #[command(flatten)]
    pub limits: LimitArgs,
}
