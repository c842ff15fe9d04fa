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
    #[arg(long, value_name = "USD")]
    pub budget_cost: Option<f64>,
}
