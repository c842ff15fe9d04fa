//! How long `expr` programs may run beyond one program's own [`super::expr::TIME_BUDGET`]: at
//! most [`TRACE_BUDGET`] per trace across all of its `expr` oracles (compositions and turns
//! included), and, where a caller gives one, a [`RunBudget`] for a whole run (`gates
//! --strength`, which judges many mutants of each trace). Both are plain values the judging
//! carries in its [`super::Facts`]: no process-wide state. A program left without time is not
//! run: its oracle could not judge, which fails alone and is `not-evaluable` in every
//! composition — never a pass.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// The time all `expr` programs of one trace may take together.
pub const TRACE_BUDGET: Duration = Duration::from_secs(6);

/// The time every `expr` program of a whole run may take together, from when it was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunBudget {
    deadline: Instant,
    budget: Duration,
}

impl RunBudget {
    /// A budget of `budget`, starting now.
    pub fn starting_now(budget: Duration) -> RunBudget {
        RunBudget {
            deadline: Instant::now() + budget,
            budget,
        }
    }
}

/// What one trace's `expr` programs may still take: the trace's own budget (shared by the
/// facts of its turns and compositions) and the run's, when there is one.
#[derive(Debug, Clone, Default)]
pub(crate) struct ExprBudget {
    /// Time the programs of this trace have taken.
    spent: Rc<Cell<Duration>>,
    run: Option<RunBudget>,
}

impl ExprBudget {
    /// A fresh trace's budget, within `run` when given.
    pub(crate) fn new(run: Option<RunBudget>) -> ExprBudget {
        ExprBudget {
            spent: Rc::default(),
            run,
        }
    }

    /// How long the next program may run (at most `per_program`), or why it may not run at all.
    pub(crate) fn allowance(&self, per_program: Duration) -> Result<Duration, String> {
        let left = TRACE_BUDGET.saturating_sub(self.spent.get());
        if left.is_zero() {
            return Err(format!(
                "not run: this trace's `expr` programs already used its budget of {} s",
                TRACE_BUDGET.as_secs()
            ));
        }
        let mut allowed = left.min(per_program);
        if let Some(run) = self.run {
            let run_left = run.deadline.saturating_duration_since(Instant::now());
            if run_left.is_zero() {
                return Err(format!(
                    "not run: this run's `expr` budget of {} s is spent",
                    run.budget.as_secs()
                ));
            }
            allowed = allowed.min(run_left);
        }
        Ok(allowed)
    }

    /// Counts `took` against the trace's budget.
    pub(crate) fn spend(&self, took: Duration) {
        self.spent.set(self.spent.get().saturating_add(took));
    }
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
    fn a_trace_budget_runs_out_and_a_new_trace_has_its_own() {
        let trace = ExprBudget::new(None);
        assert_eq!(
            trace.allowance(Duration::from_secs(2)),
            Ok(Duration::from_secs(2))
        );
        trace.spend(TRACE_BUDGET - Duration::from_secs(1));
        assert_eq!(
            trace.allowance(Duration::from_secs(2)),
            Ok(Duration::from_secs(1))
        );
        // A turn's facts share their trace's budget.
        let turn = trace.clone();
        turn.spend(Duration::from_secs(1));
        assert!(
            trace
                .allowance(Duration::from_secs(2))
                .unwrap_err()
                .contains("budget of 6 s")
        );
        assert!(
            ExprBudget::new(None)
                .allowance(Duration::from_secs(2))
                .is_ok()
        );
    }

    #[test]
    fn a_spent_run_budget_stops_every_trace_of_the_run() {
        let run = RunBudget::starting_now(Duration::ZERO);
        let why = ExprBudget::new(Some(run))
            .allowance(Duration::from_secs(2))
            .unwrap_err();
        assert!(
            why.contains("this run's `expr` budget of 0 s is spent"),
            "{why}"
        );
        // Another run, without one, is not touched by it.
        assert!(
            ExprBudget::new(None)
                .allowance(Duration::from_secs(2))
                .is_ok()
        );
    }
}
