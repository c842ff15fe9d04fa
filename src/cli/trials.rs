//! `tracereplay trials plan`: how many trials to record before they are paid for — a policy's
//! operating characteristic, the trials per side a drift check needs to see a drop, and what
//! each of the suite's cases can see with the trials it has (`tracereplay_core::trials::plan`).

use std::collections::BTreeSet;
use std::io::Write;

use anyhow::{Context, bail};
use serde::Serialize;
use serde_json::{Value, json};
use tracereplay_core::baseline::{Approved, BaselineStore};
use tracereplay_core::diff::trial_drift::TrialFacts;
use tracereplay_core::eval::{Baselines, check};
use tracereplay_core::scenario::load_scenarios;
use tracereplay_core::trials::plan;
use tracereplay_core::trials::policy::{PassRule, TrialsPolicy};

use super::args::{TrialsCommand, TrialsPlanArgs};
use super::exit;
use super::settings::Settings;

/// The true pass rates tabulated unless `--rates` says otherwise.
const DEFAULT_RATES: [f64; 7] = [0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99];

/// Runs a `trials` subcommand; `Err` means exit 2.
pub(super) fn run(
    cmd: &TrialsCommand,
    settings: &Settings,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    match cmd {
        TrialsCommand::Plan(a) => run_plan(a, settings, out),
        TrialsCommand::Next(a) => super::trials_next::run(a, settings, out),
    }
}

/// The plan, as `--json` prints it.
#[derive(Debug, Serialize)]
struct Plan {
    alpha: f64,
    /// The cases one run compares.
    cases: u64,
    /// α / cases: the level each case's regression test is planned at.
    level: f64,
    power: f64,
    drop: Drop,
    policies: Vec<PolicyPlan>,
    drift: DriftPlan,
    /// With `--looks`: the group-sequential drift check.
    #[serde(skip_serializing_if = "Option::is_none")]
    group_sequential: Option<super::trials_group::GroupPlan>,
    suite: Vec<CasePlan>,
}

#[derive(Debug, Serialize)]
struct Drop {
    from: f64,
    to: f64,
}

/// One policy's operating characteristic.
#[derive(Debug, Serialize)]
struct PolicyPlan {
    /// The scenario stating it (`null`: given with `--policy`).
    scenario: Option<String>,
    policy: Value,
    trials: Vec<u64>,
    /// The fewest passing trials that pass a case, per trial count (`null`: none do, or the
    /// policy cannot judge that many).
    passes_needed: Vec<Option<u64>>,
    rates: Vec<f64>,
    /// By rate (rows) and trial count (columns): the chance a case passes.
    pass_probability: Vec<Vec<Option<f64>>>,
    /// A sequential policy's mean trials recorded before the case is settled, by rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    expected_trials: Option<Vec<f64>>,
    /// A `trials.drift` design's plan, as `--looks` plans one.
    #[serde(skip_serializing_if = "Option::is_none")]
    group_sequential: Option<super::trials_group::GroupPlan>,
}

/// The trials per side a drift check needs for the planned drop.
#[derive(Debug, Serialize)]
struct DriftPlan {
    trials_per_side: Option<u64>,
    /// The power those trials give.
    power: Option<f64>,
}

/// What one case of the suite can see.
#[derive(Debug, Serialize)]
struct CasePlan {
    scenario: String,
    case: String,
    /// The approved set (`null`: none approved).
    approved: Option<Counts>,
    current: Counts,
    /// The smallest p the regression test can give against the approved set.
    smallest_p: Option<f64>,
    /// Whether any regression can reach the per-case level.
    can_show_regression: bool,
    /// The pass rate the drop is planned from: the approved set's, else `--from`.
    from: f64,
    /// The highest pass rate a drop to which is seen with the planned power (hundredths).
    smallest_drop_to: Option<f64>,
}

#[derive(Debug, Serialize)]
struct Counts {
    n: u64,
    passed: u64,
}

fn run_plan(
    args: &TrialsPlanArgs,
    settings: &Settings,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    let unit = |v: f64, flag: &str| match (0.0..=1.0).contains(&v) {
        true => Ok(v),
        false => Err(anyhow::anyhow!("`{flag}` must be between 0 and 1, got {v}")),
    };
    let rates: Vec<f64> = match args.rates.is_empty() {
        true => DEFAULT_RATES.to_vec(),
        false => (args.rates.iter())
            .map(|r| unit(*r, "--rates"))
            .collect::<Result<_, _>>()?,
    };
    let (from, to) = (unit(args.from, "--from")?, unit(args.to, "--to")?);
    if to >= from {
        bail!("`--to` ({to}) must be below `--from` ({from}): the plan is for a drop");
    }
    let power = unit(args.power, "--power")?;
    if let Some(&n) = (args.trials.iter()).find(|n| !(1..=plan::MAX_PLANNED).contains(*n)) {
        bail!(
            "`--trials` must be from 1 to {}, got {n}",
            plan::MAX_PLANNED
        );
    }
    let alpha = settings.alpha()?;
    let paths = settings.paths();
    let scenario_dirs = settings.scenarios();
    // A plan of a policy needs no suite: the default suite's absence is no error.
    let found = tracereplay_core::discover::find(&paths, &scenario_dirs, &Default::default());
    let mut found = match found {
        Err(_) if args.policy.is_some() && args.suite.paths.is_empty() => Default::default(),
        found => found?,
    };
    found.look_up_in(settings.suite_roots());
    let policies: Vec<(Option<String>, TrialsPolicy)> = match &args.policy {
        Some(text) => {
            let v: Value = serde_json::from_str(text).context("`--policy` is not JSON")?;
            let p = TrialsPolicy::from_json(Some(&v))
                .map_err(|e| anyhow::anyhow!("`--policy`: {e}"))?;
            vec![(None, p)]
        }
        None => {
            let files = found.every_scenario_file();
            let loaded = load_scenarios(&files, &found.suite_files, &found.roots);
            (loaded.scenarios.into_iter())
                .filter(|s| !s.trials.is_default())
                .map(|s| (Some(s.id), s.trials))
                .collect()
        }
    };
    let (suite, compared) = match found.trace_files.is_empty() {
        true => (Vec::new(), 0),
        false => suite_cases(args, settings, &found, &paths)?,
    };
    let cases = args.cases.unwrap_or(compared).max(1);
    let level = plan::per_case_level(alpha, cases);
    let needed = plan::trials_for_power(from, to, level, power);
    let group_sequential = super::trials_group::plan(args, level, (from, to))?;
    let mut policy_plans = Vec::new();
    for (scenario, p) in &policies {
        let mut planned = policy_plan(scenario.clone(), p, &args.trials, &rates);
        if let Some(d) = &p.drift {
            let approved = args.approved.unwrap_or(d.looks[d.looks.len() - 1]);
            planned.group_sequential = Some(
                super::trials_group::design(&d.looks, approved, d.spending, level, (from, to))
                    .with_context(|| format!("the design of {}", planned.policy))?,
            );
        }
        policy_plans.push(planned);
    }
    let plan = Plan {
        group_sequential,
        alpha,
        cases,
        level,
        power,
        drop: Drop { from, to },
        policies: policy_plans,
        drift: DriftPlan {
            trials_per_side: needed,
            power: needed.map(|n| round6(plan::regression_power(n, n, from, to, level))),
        },
        suite: (suite.into_iter())
            .map(|(scenario, case, approved, current)| {
                let (a, c) = (approved.as_ref(), &current);
                let start = a
                    .filter(|a| a.n > 0)
                    .map_or(from, |a| a.passed as f64 / a.n as f64);
                let smallest_p = a.map(|a| plan::smallest_p(a.n, c.n));
                CasePlan {
                    can_show_regression: smallest_p.is_some_and(|p| p <= level * (1.0 + 1e-7)),
                    smallest_drop_to: a.and_then(|a| {
                        plan::smallest_detectable_drop(a.n, c.n, start, level, power)
                    }),
                    smallest_p: smallest_p.map(round6),
                    from: round6(start),
                    scenario,
                    case,
                    approved,
                    current,
                }
            })
            .collect(),
    };
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &plan)?;
        writeln!(out)?;
    } else {
        human(&plan, out)?;
    }
    Ok(exit::OK)
}

/// Rounded to 6 decimals, as printed.
fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// A policy as a scenario writes it.
fn policy_json(p: &TrialsPolicy) -> Value {
    let pass = match p.pass {
        PassRule::All => json!("all"),
        PassRule::AtLeast(k) => json!({ "at-least": k }),
        PassRule::Rate { rate, confidence } => json!({"rate": rate, "confidence": confidence}),
    };
    let mut v = match p.sequential {
        Some(max) => json!({"min": p.min, "max": max, "pass": pass, "sequential": true}),
        None => json!({"min": p.min, "pass": pass}),
    };
    if let Some(d) = &p.drift {
        v["drift"] = json!({"looks": d.looks, "spending": d.spending.name()});
    }
    v
}

fn policy_plan(
    scenario: Option<String>,
    p: &TrialsPolicy,
    trials: &[u64],
    rates: &[f64],
) -> PolicyPlan {
    let trials: Vec<u64> = match trials.is_empty() {
        false => trials.to_vec(),
        // A sequential case is judged as all `max` trials would be.
        true if p.sequential.is_some() => vec![p.sequential.unwrap_or(p.min)],
        // `at-least N` is a count: the same N of more trials is another policy, shown only
        // when asked for.
        true if matches!(p.pass, PassRule::AtLeast(_)) => vec![p.min],
        true => {
            let set: BTreeSet<u64> = [p.min, 2 * p.min, 4 * p.min]
                .into_iter()
                .filter(|n| *n <= plan::MAX_PLANNED)
                .collect();
            set.into_iter().collect()
        }
    };
    PolicyPlan {
        scenario,
        policy: policy_json(p),
        passes_needed: trials.iter().map(|&n| plan::passes_needed(p, n)).collect(),
        pass_probability: (rates.iter())
            .map(|&r| {
                (trials.iter())
                    .map(|&n| plan::pass_probability(p, n, r).map(round6))
                    .collect()
            })
            .collect(),
        expected_trials: p.sequential.map(|_| {
            (rates.iter())
                .map(|&r| round6(plan::expected_sequential_trials(p, r).unwrap_or(0.0)))
                .collect()
        }),
        rates: rates.to_vec(),
        trials,
        group_sequential: None,
    }
}

type SuiteCase = (String, String, Option<Counts>, Counts);

/// Judges the suite's traces as `diff` does (nothing written) and returns each case recorded
/// as several trials or under a policy, with its approved set's counts, and how many cases the
/// run compares.
fn suite_cases(
    args: &TrialsPlanArgs,
    settings: &Settings,
    found: &tracereplay_core::discover::Discovered,
    paths: &[camino::Utf8PathBuf],
) -> anyhow::Result<(Vec<SuiteCase>, u64)> {
    // The approved sets are read, not compared: the plan judges the current trials only.
    let store = settings.resolve_baselines()?.map(BaselineStore::new);
    let opts =
        super::options::judge_only(settings, paths, args.judging.parts(), Baselines::Absent)?;
    let checked = check(found, paths, &opts)?;
    let compared: BTreeSet<(String, String)> = (checked.results.iter())
        .filter_map(|r| Some((r.scenario.clone()?, r.case.clone()?)))
        .collect();
    let mut out = Vec::new();
    for c in checked.cases.iter().filter(|c| c.trials >= 2 || c.policy) {
        let approved = (store.as_ref()).and_then(|s| match s.read_approved(&c.scenario, &c.case) {
            Ok(Approved::Set(set)) => Some(Counts {
                n: set.trials.len() as u64,
                passed: (set.trials.iter())
                    .filter(|t| TrialFacts::of(&t.behaviour).passed)
                    .count() as u64,
            }),
            Ok(Approved::Single(file)) => Some(Counts {
                n: 1,
                passed: u64::from(TrialFacts::of(&file.behaviour).passed),
            }),
            Err(_) => None,
        });
        let current = Counts {
            n: c.trials as u64,
            passed: c.passed as u64,
        };
        out.push((c.scenario.clone(), c.case.clone(), approved, current));
    }
    Ok((out, compared.len() as u64))
}

fn human(plan: &Plan, out: &mut dyn Write) -> anyhow::Result<()> {
    let esc = |s: &str| tracereplay::report::escape_controls(s).into_owned();
    writeln!(
        out,
        "How often a case passes, by its true pass rate p (exact binomial):"
    )?;
    if plan.policies.is_empty() {
        writeln!(
            out,
            "  no scenario states a `trials` policy; plan one with `--policy '{{\"min\": 8, \"pass\": {{\"at-least\": 6}}}}'`"
        )?;
    }
    for p in &plan.policies {
        let whose = p.scenario.as_deref().map_or("--policy".to_owned(), esc);
        writeln!(out, "\n  {whose}: \"trials\": {}", p.policy)?;
        write!(out, "  {:>6}", "p")?;
        for n in &p.trials {
            write!(out, " {:>9}", format!("n={n}"))?;
        }
        if p.expected_trials.is_some() {
            write!(out, "  trials recorded (mean, sequential)")?;
        }
        writeln!(out)?;
        for (i, (rate, row)) in p.rates.iter().zip(&p.pass_probability).enumerate() {
            write!(out, "  {rate:>6.2}")?;
            for cell in row {
                match cell {
                    Some(v) => write!(out, " {v:>9.4}")?,
                    None => write!(out, " {:>9}", "—")?,
                }
            }
            if let Some(e) = &p.expected_trials {
                write!(out, "  {:>9.2}", e[i])?;
            }
            writeln!(out)?;
        }
        write!(out, "  {:>6}", "needs")?;
        for need in &p.passes_needed {
            match need {
                Some(c) => write!(out, " {:>9}", format!("{c} pass"))?,
                None => write!(out, " {:>9}", "never")?,
            }
        }
        writeln!(out)?;
        if let Some(g) = &p.group_sequential {
            super::trials_group::print(g, (plan.drop.from, plan.drop.to), out)?;
        }
    }
    writeln!(
        out,
        "\nDrift: a drop from {} to {} seen with power ≥ {} at α = {} over {} case(s), each case's test at α/{} = {:.6} (a conservative bound of Benjamini–Hochberg):",
        plan.drop.from, plan.drop.to, plan.power, plan.alpha, plan.cases, plan.cases, plan.level
    )?;
    match (plan.drift.trials_per_side, plan.drift.power) {
        (Some(n), Some(power)) => writeln!(out, "  {n} trials per side (power {power:.4})")?,
        _ => writeln!(out, "  more than {} trials per side", plan::MAX_PLANNED)?,
    }
    if let Some(g) = &plan.group_sequential {
        super::trials_group::print(g, (plan.drop.from, plan.drop.to), out)?;
    }
    if plan.suite.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nWhat each case's trials can see:")?;
    for c in &plan.suite {
        let name = format!("{}/{}", esc(&c.scenario), esc(&c.case));
        let current = format!("{}/{} pass now", c.current.passed, c.current.n);
        let Some(a) = &c.approved else {
            writeln!(out, "  {name}: {current}; no approved set to compare with")?;
            continue;
        };
        let seen = match (c.can_show_regression, c.smallest_drop_to) {
            (false, _) => format!(
                "cannot show a regression: the smallest possible p is {:.6}, above {:.6}",
                c.smallest_p.unwrap_or(1.0),
                plan.level
            ),
            (true, Some(to)) => format!(
                "sees a drop from {:.2} to {to:.2} or below with power ≥ {}",
                c.from, plan.power
            ),
            (true, None) => format!(
                "can show a regression, but no drop from {:.2} with power ≥ {}",
                c.from, plan.power
            ),
        };
        let suffice = match plan.drift.trials_per_side {
            Some(n) if n > a.n.min(c.current.n) => format!(
                "; {n} trials per side would see {} → {}",
                plan.drop.from, plan.drop.to
            ),
            _ => String::new(),
        };
        writeln!(
            out,
            "  {name}: {}/{} approved, {current}: {seen}{suffice}",
            a.passed, a.n
        )?;
    }
    Ok(())
}
