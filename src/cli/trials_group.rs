//! `trials plan --looks`: a group-sequential drift check's exact boundaries, its type-I error,
//! and its power and expected trials against the fixed test's (`tracereplay_core::trials::group`).

use std::io::Write;

use serde::Serialize;
use tracereplay_core::trials::group::{Design, Spending};

use super::args::{SpendingArg, TrialsPlanArgs};

/// The group-sequential plan, as `--json` prints it.
#[derive(Debug, Serialize)]
pub(super) struct GroupPlan {
    /// Current trials at each look.
    looks: Vec<u64>,
    /// Approved trials.
    approved: u64,
    spending: &'static str,
    /// The α the design holds (the plan's per-case level).
    alpha: f64,
    /// Each look's nominal level: it stops there when Fisher's p is at most this (with the
    /// contract's relative slack of 10⁻⁷).
    nominal: Vec<f64>,
    /// The α spent by each look.
    spent: Vec<f64>,
    /// The exact type-I error of stopping by each look, at the worst common pass rate.
    type_one: Vec<f64>,
    /// Seeing the planned drop: at some look, and with the fixed test of the last look's trials
    /// (its level calibrated alike).
    power: f64,
    fixed_power: f64,
    /// Current trials recorded on average: with the drop, and with no change (at `from`).
    expected_trials: f64,
    expected_trials_unchanged: f64,
}

/// The plan of `--looks`, at `level` for a drop `from` → `to`; `None` without `--looks`.
pub(super) fn plan(
    args: &TrialsPlanArgs,
    level: f64,
    drop: (f64, f64),
) -> anyhow::Result<Option<GroupPlan>> {
    let Some(&last) = args.looks.last() else {
        return Ok(None);
    };
    let spending = match args.spending {
        SpendingArg::ObrienFleming => Spending::OBrienFleming,
        SpendingArg::Pocock => Spending::Pocock,
    };
    let approved = args.approved.unwrap_or(last);
    design(&args.looks, approved, spending, level, drop)
        .map(Some)
        .map_err(|e| anyhow::anyhow!("`--looks`: {e}"))
}

/// The plan of a design: `looks` against `approved` trials, at `level` for a drop `from` →
/// `to` (`--looks`, or a scenario's `trials.drift`).
pub(super) fn design(
    looks: &[u64],
    approved: u64,
    spending: Spending,
    level: f64,
    (from, to): (f64, f64),
) -> anyhow::Result<GroupPlan> {
    let last = *looks.last().ok_or_else(|| anyhow::anyhow!("no looks"))?;
    let d = Design::new(approved, looks.to_vec(), level, spending).map_err(anyhow::Error::msg)?;
    let nominal = d.boundaries();
    let one = Design::new(approved, vec![last], level, spending).map_err(anyhow::Error::msg)?;
    let (fixed_power, _) = one.power(&one.boundaries(), from, to);
    let (power, expected_trials) = d.power(&nominal, from, to);
    let (_, expected_trials_unchanged) = d.power(&nominal, from, from);
    let r6 = |v: f64| (v * 1e6).round() / 1e6;
    Ok(GroupPlan {
        type_one: d.type_one(&nominal).into_iter().map(r6).collect(),
        spent: d.spent().into_iter().map(r6).collect(),
        // Thresholds, printed whole: a rounded level could leave out the p-value it is.
        nominal,
        looks: d.looks,
        approved,
        spending: spending.name(),
        alpha: r6(level),
        power: r6(power),
        fixed_power: r6(fixed_power),
        expected_trials: r6(expected_trials),
        expected_trials_unchanged: r6(expected_trials_unchanged),
    })
}

/// The human plan.
pub(super) fn print(
    g: &GroupPlan,
    (from, to): (f64, f64),
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(
        out,
        "\nGroup-sequential drift: looks after {} current trials against {} approved, {} spending of α = {:.6}:",
        g.looks
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        g.approved,
        g.spending,
        g.alpha
    )?;
    writeln!(
        out,
        "  {:>4} {:>7} {:>12} {:>10} {:>10}",
        "look", "trials", "stop if p ≤", "α spent", "type-I"
    )?;
    for (k, n) in g.looks.iter().enumerate() {
        writeln!(
            out,
            "  {:>4} {:>7} {:>12.6} {:>10.6} {:>10.6}",
            k + 1,
            n,
            g.nominal[k],
            g.spent[k],
            g.type_one[k]
        )?;
    }
    writeln!(
        out,
        "  a drop from {from} to {to}: power {:.4} (the fixed test of {} trials: {:.4}), {:.2} current trials on average ({:.2} when nothing changed)",
        g.power,
        g.looks.last().unwrap_or(&0),
        g.fixed_power,
        g.expected_trials,
        g.expected_trials_unchanged
    )
}
