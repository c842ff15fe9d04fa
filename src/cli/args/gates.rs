//! `gates` flags: the quality gates over scenario files, and oracle strength.

use camino::Utf8PathBuf;
use clap::Args;

use super::LimitArgs;

/// `gates` flags.
#[derive(Debug, Args)]
pub struct GatesArgs {
    /// Directories or files holding scenarios (and, for `--strength`, their traces).
    #[arg(value_name = "PATH", default_value = "traces/")]
    pub paths: Vec<Utf8PathBuf>,
    /// A harness suite directory of scenarios (repeatable).
    #[arg(long = "scenarios", value_name = "DIR")]
    pub scenario_dirs: Vec<Utf8PathBuf>,
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
    /// The α the `trials` warnings are judged at (as `check --alpha`).
    #[arg(long, value_name = "ALPHA", default_value_t = 0.05)]
    pub alpha: f64,
    /// With `--strength`: the price table for `max-cost` (default: `prices.toml` at the
    /// project's root, as `check` has it).
    #[arg(long, value_name = "FILE")]
    pub prices: Option<Utf8PathBuf>,
    /// Size limits.
    #[command(flatten)]
    pub limits: LimitArgs,
}
