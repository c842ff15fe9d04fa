//! How long `expr` programs may run beyond one program's own [`super::expr::TIME_BUDGET`]: at
//! most [`TRACE_BUDGET`] per trace across all of its `expr` oracles (compositions and turns
//! included), and, where a caller sets one, a budget for a whole run (`gates --strength`, which
//! judges many mutants of each trace). A program left without time is not run: its oracle could
//! not judge, which fails alone and is `not-evaluable` in every composition — never a pass.

use std::cell::Cell;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The time all `expr` programs of one trace may take together.
pub const TRACE_BUDGET: Duration = Duration::from_secs(6);

thread_local! {
    /// Time the programs of the trace being judged on this thread have taken.
    static SPENT: Cell<Duration> = const { Cell::new(Duration::ZERO) };
}

/// The deadline of the whole run, and the budget it was set from (for messages).
static RUN: Mutex<Option<(Instant, Duration)>> = Mutex::new(None);

/// Starts a trace's budget (judging a trace calls it first).
pub fn begin_trace() {
    SPENT.with(|s| s.set(Duration::ZERO));
}

/// Sets (or, with `None`, clears) the budget of the whole run, from now.
pub fn set_run_budget(budget: Option<Duration>) {
    let mut run = RUN.lock().unwrap_or_else(|e| e.into_inner());
    *run = budget.map(|b| (Instant::now() + b, b));
}

/// How long the next program may run (at most `per_program`), or why it may not run at all.
pub(crate) fn allowance(per_program: Duration) -> Result<Duration, String> {
    let spent = SPENT.with(Cell::get);
    let left = TRACE_BUDGET.saturating_sub(spent);
    if left.is_zero() {
        return Err(format!(
            "not run: this trace's `expr` programs already used its budget of {} s",
            TRACE_BUDGET.as_secs()
        ));
    }
    let mut allowed = left.min(per_program);
    if let Some((deadline, budget)) = *RUN.lock().unwrap_or_else(|e| e.into_inner()) {
        let run_left = deadline.saturating_duration_since(Instant::now());
        if run_left.is_zero() {
            return Err(format!(
                "not run: this run's `expr` budget of {} s is spent",
                budget.as_secs()
            ));
        }
        allowed = allowed.min(run_left);
    }
    Ok(allowed)
}

/// Counts `took` against the trace's budget.
pub(crate) fn spend(took: Duration) {
    SPENT.with(|s| s.set(s.get().saturating_add(took)));
}

/// Why a program that ran out of `allowed` (at most its own `per_program` budget) failed.
pub(crate) fn out_of_time(allowed: Duration, per_program: Duration) -> String {
    if allowed >= per_program {
        format!(
            "the jq program did not finish within its time budget of {} s",
            per_program.as_secs()
        )
    } else {
        format!(
            "the jq program did not finish within the {:.1} s left of this trace's `expr` budget",
            allowed.as_secs_f64()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_budget_runs_out_and_begins_again() {
        begin_trace();
        assert_eq!(
            allowance(Duration::from_secs(2)),
            Ok(Duration::from_secs(2))
        );
        spend(TRACE_BUDGET - Duration::from_secs(1));
        assert_eq!(
            allowance(Duration::from_secs(2)),
            Ok(Duration::from_secs(1))
        );
        spend(Duration::from_secs(1));
        assert!(
            allowance(Duration::from_secs(2))
                .unwrap_err()
                .contains("budget of 6 s")
        );
        begin_trace();
        assert!(allowance(Duration::from_secs(2)).is_ok());
    }
}
