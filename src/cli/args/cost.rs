//! Flags of cost: the suite budgets `check` holds a run to.

use clap::Args;

/// `check`'s suite budgets (also `[budget]` in the project file).
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct BudgetArgs {
    /// Fail the run when the suite's traces used more tokens than this (input + output, over
    /// every trace judged; a trace whose usage is not recorded makes the budget uncheckable,
    /// which fails too).
    #[arg(long, value_name = "TOKENS")]
    pub budget_tokens: Option<u64>,
    /// Fail the run when the suite's traces cost more than this many US dollars (recorded
    /// costs, else priced with `--prices`; a request that cannot be priced fails the budget).
    #[arg(long, value_name = "USD", value_parser = parse_dollars)]
    pub budget_cost: Option<f64>,
}

/// A non-negative, finite number of US dollars (`nan` or `inf` would make the budget mean
/// nothing: every comparison with NaN is false, so it could never be exceeded).
fn parse_dollars(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        Ok(_) => Err(format!(
            "`{s}` is not a non-negative, finite number of US dollars"
        )),
        Err(_) => Err(format!("`{s}` is not a number of US dollars")),
    }
}
