//! The case stage, after judging: the traces of one (scenario, case) are its trials. A case with
//! one trace is that trace (judged and compared as always); a case with several gets one verdict
//! under its scenario's `trials` policy, the flaky mark, estimates, and — when baselines are
//! compared — the statistical drift of its set ([`sets`]). Two traces of one case without
//! distinct trials are `error` rows.

mod sets;

use std::collections::{BTreeMap, HashMap};

use super::baselines::Pending;
use super::plan::{Entries, entry_of};
use super::{CheckOptions, blocks, verdict_blocks};
use crate::baseline::{Behaviour, oracle_key};
use crate::oracle::cost::TrialLimit;
use crate::report::cases::{CaseRow, FlakyOracle, Thresholds};
use crate::report::{ResultRow, RowVerdict, Rows, Source};
use crate::trials::policy::{self, TrialsPolicy};
use crate::trials::stats;

/// What the judge stage kept of each trial trace it judged while baselines are compared: its
/// normalised behaviour, by the row's path (the set comparison and pending files need it).
pub(crate) type TrialBehaviours = HashMap<String, Behaviour>;

/// What the case stage gives the report.
pub(crate) struct Cases {
    /// Every case, in (scenario, case) order; empty when no case is more than its one trace.
    pub(crate) cases: Vec<CaseRow>,
    /// The set tests' thresholds, when sets were compared.
    pub(crate) thresholds: Option<Thresholds>,
    /// Row indexes that belong to a case of several traces (never ambiguous: trials, or error
    /// rows already).
    pub(crate) grouped: Vec<bool>,
}

/// One group of rows of one (scenario, case), in report order.
struct Group {
    scenario: String,
    case: String,
    rows: Vec<usize>,
    trials: Vec<Option<String>>,
    paths: Vec<String>,
    /// What the rows' heads say, so that a set whose rows need no change is decided without
    /// decoding them.
    heads: Vec<Head>,
}

/// The leading fields of a trial's row.
struct Head {
    verdict: RowVerdict,
    blocking: bool,
    drifted: bool,
    content_hash: Option<String>,
    baseline: Option<String>,
    risk: Option<crate::scenario::Risk>,
    known_gap: bool,
}

impl Head {
    fn of(h: &super::store::RowHead<'_>) -> Head {
        Head {
            verdict: h.verdict,
            blocking: h.blocking,
            drifted: h.drift_new || h.drift_other,
            content_hash: h.content_hash.map(str::to_owned),
            baseline: h.baseline.map(str::to_owned),
            risk: h.risk,
            known_gap: h.known_gap,
        }
    }
}

/// Groups the sorted rows by (scenario, case): rows judged from a trace (or a scripted one)
/// that name both.
fn groups(rows: &Rows) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    rows.for_each_head(|i, h| {
        let (Some(scenario), Some(case)) = (h.scenario, h.case) else {
            return;
        };
        if !matches!(h.source, Source::Trace | Source::Scripted) {
            return;
        }
        match out.last_mut() {
            Some(g) if g.scenario == scenario && g.case == case => {
                g.rows.push(i);
                g.trials.push(h.trial.map(str::to_owned));
                g.paths.push(h.path.unwrap_or_default().to_owned());
                g.heads.push(Head::of(&h));
            }
            _ => out.push(Group {
                scenario: scenario.to_owned(),
                case: case.to_owned(),
                rows: vec![i],
                trials: vec![h.trial.map(str::to_owned)],
                paths: vec![h.path.unwrap_or_default().to_owned()],
                heads: vec![Head::of(&h)],
            }),
        }
    });
    out
}

/// Whether the group's traces have distinct trials.
fn distinct(g: &Group) -> bool {
    let mut ids: Vec<&str> = Vec::with_capacity(g.trials.len());
    for t in &g.trials {
        match t {
            Some(t) => ids.push(t),
            None => return false,
        }
    }
    ids.sort_unstable();
    ids.windows(2).all(|w| w[0] != w[1])
}

/// What one group comes to, decided in parallel and applied in report order.
#[derive(Default)]
struct GroupResult {
    /// Its case line (single traces only when cases are listed).
    case: Option<CaseRow>,
    /// Rows to store again: (index, row).
    rows: Vec<(usize, ResultRow)>,
    /// Pending baseline files the group calls for.
    pending: Vec<Pending>,
    /// The judge stage's pending decisions for the case are dropped (its own replace them).
    clear: Option<(String, String)>,
    /// A set comparison waiting for the run's thresholds.
    compared: Option<sets::Item>,
}

/// Runs the case stage over the sorted rows: verdicts of cases, error rows of traces without
/// distinct trials, single-trial comparisons the judge stage left to it, and set comparisons.
/// Each (scenario, case) is worked out in parallel; the results are applied in report order.
pub(crate) fn case_stage(
    rows: &mut Rows,
    entries: &Entries<'_>,
    opts: &CheckOptions,
    behaviours: &mut TrialBehaviours,
    pending: &mut Vec<Pending>,
) -> Cases {
    use rayon::prelude::*;
    let fail_on = opts.counting.fail_on;
    let policy_of = |scenario: &str| {
        entry_of(entries, scenario).map_or(&policy::DEFAULT, |e| &e.scenario.trials)
    };
    let limits_of = |scenario: &str| {
        entry_of(entries, scenario)
            .map(|e| crate::oracle::cost::trial_limits(&e.scenario.oracles))
            .unwrap_or_default()
    };
    // A suite of single traces, none of them a trial left to compare here and no scenario with a
    // policy, has no case stage to run: its rows are its cases, as they are.
    let policies = (entries.values()).any(|e| !e.scenario.trials.is_default());
    if behaviours.is_empty() && !policies && !rows.repeats_a_case() {
        return Cases {
            cases: Vec::new(),
            thresholds: None,
            grouped: vec![false; rows.len()],
        };
    }
    let groups = groups(rows);
    let listed = groups
        .iter()
        .any(|g| g.rows.len() >= 2 || !policy_of(&g.scenario).is_default());
    let mut grouped = vec![false; rows.len()];
    for g in groups.iter().filter(|g| g.rows.len() >= 2) {
        g.rows.iter().for_each(|&i| grouped[i] = true);
    }
    // Each group takes its trials' behaviours with it.
    let taken: Vec<Vec<Option<Behaviour>>> = (groups.iter())
        .map(|g| g.paths.iter().map(|p| behaviours.remove(p)).collect())
        .collect();
    let shared: &Rows = rows;
    let outcomes: Vec<GroupResult> = (groups.par_iter().zip(taken))
        .map(|(g, b)| {
            let rules = (&policy_of(&g.scenario), limits_of(&g.scenario));
            group_outcome(g, b, shared, (rules.0, &rules.1), listed, opts)
        })
        .collect();
    let mut cases = Vec::new();
    let mut compared = Vec::new();
    let mut cleared: std::collections::HashSet<(String, String)> = Default::default();
    let mut own_pending = Vec::new();
    for o in outcomes {
        for (i, r) in &o.rows {
            rows.set(*i, r);
        }
        if let Some(mut item) = o.compared {
            item.at = cases.len();
            compared.push(item);
        }
        cases.extend(o.case);
        cleared.extend(o.clear);
        own_pending.extend(o.pending);
    }
    if !cleared.is_empty() {
        pending.retain(|p| !p.case_key().is_some_and(|k| cleared.contains(&k)));
    }
    pending.extend(own_pending);
    let thresholds = sets::Comparisons(compared).finish(&mut cases, opts, pending);
    for c in &mut cases {
        if c.is_set() {
            c.blocking = c.blocking
                || verdict_blocks(c.verdict, c.known_gap, c.risk, fail_on)
                || c.drift.iter().any(|d| d.fails);
        }
    }
    if !listed {
        cases.clear();
    }
    Cases {
        cases,
        thresholds,
        grouped,
    }
}

/// Works out one group: a single trace (compared here when it is a trial), or a case of
/// several traces (error rows without distinct trials; else a set, compared when baselines
/// are).
fn group_outcome(
    g: &Group,
    mut behaviours: Vec<Option<Behaviour>>,
    rows: &Rows,
    (policy, limits): (&TrialsPolicy, &[TrialLimit]),
    listed: bool,
    opts: &CheckOptions,
) -> GroupResult {
    let fail_on = opts.counting.fail_on;
    let mut out = GroupResult::default();
    if g.rows.len() < 2 {
        // One trace: it is the case. A trial trace's comparison was left to this stage.
        let i = g.rows[0];
        let mut row = None;
        if let Some(b) = behaviours[0].take() {
            let mut r = rows.get(i);
            out.pending.extend(sets::compare_single(&mut r, b, opts));
            super::set_blocking(&mut r, fail_on);
            row = Some(r);
        }
        if listed {
            // Stored again only when it changed: compared here, or unblocked by a policy.
            let changed = row.is_some() || !policy.is_default();
            let r = row.take().unwrap_or_else(|| rows.get(i));
            let (case, r) = single_case(r, policy, opts);
            out.case = Some(case);
            if changed {
                out.rows.push((i, r));
            }
        } else if let Some(r) = row {
            out.rows.push((i, r));
        }
        return out;
    }
    out.clear = Some((g.scenario.clone(), g.case.clone()));
    if !distinct(g) {
        let mut trial_rows: Vec<ResultRow> = g.rows.iter().map(|&i| rows.get(i)).collect();
        duplicate_trials(g, &mut trial_rows, opts, &mut out.pending);
        let mut case = case_of_rows(g, &trial_rows, policy);
        case.blocking = true;
        out.rows = g.rows.iter().copied().zip(trial_rows).collect();
        out.case = Some(case);
        return out;
    }
    let mut case = case_of(g, policy, rows);
    hold_to_limits(&mut case, g, rows, limits);
    for (h, &i) in g.heads.iter().zip(&g.rows) {
        // The case carries the verdict and the drift; a trial only its own judgement. Only
        // rows that block or drifted by themselves are decoded and stored again.
        if h.blocking || h.drifted {
            let mut r = rows.get(i);
            r.drift.clear();
            r.blocking = false;
            out.rows.push((i, r));
        }
    }
    if let Some(bp) = opts.baselines.policy() {
        case.baseline = g.heads[0].baseline.clone();
        if case.verdict != RowVerdict::Error {
            let current: Vec<sets::Current<'_>> = (g.trials.iter().zip(&g.heads))
                .zip(behaviours)
                .map(|((t, h), b)| (t.as_deref(), h.content_hash.as_deref(), b))
                .collect();
            let writes = opts.baselines.writes_pending();
            let rules = (bp, policy.drift.as_ref());
            out.compared = sets::compare(&g.scenario, &g.case, current, rules, writes);
        }
    }
    out.case = Some(case);
    out
}

/// Holds a case of several trials to its oracles' trial limits (`max-tokens` and `max-cost`
/// with `trials`): the median and maximum of what each measured across the trials. A limit
/// exceeded, or one that cannot be checked, fails the case whatever its trials' verdicts.
fn hold_to_limits(case: &mut CaseRow, g: &Group, rows: &Rows, limits: &[TrialLimit]) {
    if limits.is_empty() || case.verdict == RowVerdict::Error {
        return;
    }
    let decoded: Vec<ResultRow> = g.rows.iter().map(|&i| rows.get(i)).collect();
    let mut over = Vec::new();
    for limit in limits {
        let results: Vec<Option<&crate::oracle::OracleResult>> = (decoded.iter())
            .map(|r| {
                (r.oracles.iter()).find(|o| o.index == Some(limit.index) && o.kind == limit.kind)
            })
            .collect();
        over.extend(limit.check(&results));
    }
    if over.is_empty() {
        return;
    }
    case.verdict = RowVerdict::Fail;
    let said = case.reason.take();
    case.reason = Some(said.into_iter().chain(over).collect::<Vec<_>>().join("; "));
}

/// Marks every trace of a case without distinct trials an `error` row naming every path; no
/// comparison is possible, so no pending file is left for the case.
fn duplicate_trials(
    g: &Group,
    rows: &mut [ResultRow],
    opts: &CheckOptions,
    pending: &mut Vec<Pending>,
) {
    let paths: Vec<String> = g.paths.iter().map(|p| format!("`{p}`")).collect();
    // The commonest cause: `pack` sealed `X.trace.ndjson` into `X.trace.ndjson.zst` beside it.
    let sealed_and_not = match g.paths.as_slice() {
        [a, b] => {
            let (a, b) = (a.to_string(), b.to_string());
            a.strip_suffix(".zst") == Some(b.as_str()) || b.strip_suffix(".zst") == Some(a.as_str())
        }
        _ => false,
    };
    let message = if sealed_and_not {
        format!(
            "{} hold the same trace twice, sealed and not, for scenario `{}` case `{}`: remove the unsealed `.trace.ndjson` (`tracereplay pack --rm-source` removes it when it seals)",
            paths.join(" and "),
            g.scenario,
            g.case
        )
    } else {
        format!(
            "{} traces of scenario `{}` case `{}` lack distinct trials ({}); give each recording its own `trial` in its header (or its own `case`)",
            g.rows.len(),
            g.scenario,
            g.case,
            paths.join(", ")
        )
    };
    for r in rows.iter_mut() {
        r.set_error(
            crate::report::RowErrorKind::DuplicateTrial,
            message.clone(),
            Some(1),
        );
        r.drift.clear();
        r.blocking = blocks(r, opts.counting.fail_on);
    }
    if opts.baselines.writes_pending() {
        pending.push(Pending::Clear {
            scenario: g.scenario.clone(),
            case: g.case.clone(),
        });
    }
}

/// The case line of a single trace: the trace's own verdict, or the policy's when the
/// scenario has one (then the case, not the row, blocks).
fn single_case(
    mut row: ResultRow,
    policy: &TrialsPolicy,
    opts: &CheckOptions,
) -> (CaseRow, ResultRow) {
    let g = Group {
        scenario: row.scenario.clone().unwrap_or_default(),
        case: row.case.clone().unwrap_or_default(),
        rows: vec![0],
        trials: vec![row.trial.clone()],
        paths: vec![row.path.clone().unwrap_or_default()],
        heads: Vec::new(),
    };
    let mut case = case_of_rows(&g, std::slice::from_ref(&row), policy);
    case.baseline = row.baseline.clone();
    case.drift = (row.drift.iter())
        .map(crate::report::cases::CaseFinding::of_trace)
        .collect();
    if policy.is_default() {
        case.blocking = row.blocking;
    } else {
        row.blocking = false;
        case.blocking = verdict_blocks(
            case.verdict,
            case.known_gap,
            case.risk,
            opts.counting.fail_on,
        ) || row.drift.iter().any(|d| d.fails);
    }
    (case, row)
}

/// The case line of a single trace under the default policy (what a share that listed no case
/// would have listed for it): for `merge`.
pub(crate) fn single_trace_case(row: &ResultRow, opts: &CheckOptions) -> CaseRow {
    single_case(row.clone(), &TrialsPolicy::default(), opts).0
}

/// A case's verdict, flaky mark and estimates from its trials' rows.
fn case_of(g: &Group, policy: &TrialsPolicy, rows: &Rows) -> CaseRow {
    let verdicts: Vec<RowVerdict> = g.heads.iter().map(|h| h.verdict).collect();
    // The rows are decoded only to name the oracles of a flaky case.
    let decode = || -> Vec<ResultRow> {
        (g.rows.iter().zip(&verdicts))
            .filter(|(_, v)| **v != RowVerdict::Error)
            .map(|(&i, _)| rows.get(i))
            .collect()
    };
    let (risk, known_gap) = (g.heads[0].risk, g.heads[0].known_gap);
    decided(g, policy, &verdicts, (risk, known_gap), decode)
}

/// [`case_of`] from decoded rows (a single trace's case).
fn case_of_rows(g: &Group, rows: &[ResultRow], policy: &TrialsPolicy) -> CaseRow {
    let verdicts: Vec<RowVerdict> = rows.iter().map(|r| r.verdict).collect();
    let decode = || -> Vec<ResultRow> {
        (rows.iter())
            .filter(|r| r.verdict != RowVerdict::Error)
            .cloned()
            .collect()
    };
    decided(
        g,
        policy,
        &verdicts,
        (rows[0].risk, rows[0].known_gap),
        decode,
    )
}

/// A case's verdict, flaky mark and estimates from its trials' verdicts; `judged_rows` gives
/// the rows of its pass/fail trials when a flaky case's oracles must be named.
fn decided(
    g: &Group,
    policy: &TrialsPolicy,
    verdicts: &[RowVerdict],
    (risk, known_gap): (Option<crate::scenario::Risk>, bool),
    judged_rows: impl FnOnce() -> Vec<ResultRow>,
) -> CaseRow {
    let n = verdicts.iter().filter(|v| **v != RowVerdict::Error).count();
    let passed = verdicts.iter().filter(|v| **v == RowVerdict::Pass).count();
    let errors: Vec<String> = (verdicts.iter().zip(&g.trials).zip(&g.paths))
        .filter(|((v, _), _)| **v == RowVerdict::Error)
        .map(|((_, t), p)| match t {
            Some(t) => format!("trial {t}"),
            None => format!("`{p}`"),
        })
        .collect();
    let (verdict, reason) = if !errors.is_empty() {
        let why = format!("{} could not be judged", errors.join(", "));
        (RowVerdict::Error, (verdicts.len() > 1).then_some(why))
    } else {
        match policy.verdict(passed as u64, n as u64) {
            policy::PolicyVerdict::Pass => (RowVerdict::Pass, None),
            policy::PolicyVerdict::Fail(why) => (
                RowVerdict::Fail,
                (!policy.is_default() || n > 1).then_some(why),
            ),
            policy::PolicyVerdict::CannotJudge(why) => (RowVerdict::Error, Some(why)),
        }
    };
    let mut flaky_oracles = Vec::new();
    let flaky = n >= 2 && passed > 0 && passed < n;
    if flaky {
        let mut outcomes: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
        for r in &judged_rows() {
            for (at, o) in r.oracles.iter().enumerate() {
                let e = outcomes.entry(oracle_key(o)).or_insert((at, 0, 0));
                e.1 += usize::from(o.verdict == crate::oracle::Verdict::Pass);
                e.2 += 1;
            }
        }
        let mut listed: Vec<(usize, FlakyOracle)> = (outcomes.into_iter())
            .filter(|(_, (_, p, of))| *p > 0 && p < of)
            .map(|(oracle, (at, passed, of))| (at, FlakyOracle { oracle, passed, of }))
            .collect();
        listed.sort_by_key(|(at, _)| *at);
        flaky_oracles = listed.into_iter().map(|(_, f)| f).collect();
    }
    let estimates = n >= 2;
    let (c, nn) = (passed as u64, n as u64);
    CaseRow {
        scenario: g.scenario.clone(),
        case: g.case.clone(),
        risk,
        trials: verdicts.len(),
        passed,
        verdict,
        reason,
        policy: !policy.is_default(),
        known_gap,
        blocking: false,
        flaky,
        flaky_oracles,
        pass_rate: estimates.then(|| passed as f64 / n as f64),
        wilson: estimates.then(|| {
            let (lo, hi) = stats::wilson_95(c, nn);
            [lo, hi]
        }),
        pass_hat_k: estimates.then(|| stats::pass_hat_k(c, nn)),
        pass_at_k: estimates.then(|| stats::pass_at_k(c, nn)),
        underpowered: false,
        underpowered_detail: None,
        family_p: BTreeMap::new(),
        drift: Vec::new(),
        tests: Vec::new(),
        baseline: None,
        usage_against_approved: None,
        group_drift: None,
        sequential: policy
            .sequential
            .map(|max| crate::report::cases::Sequential {
                max,
                settled: errors.is_empty()
                    && crate::trials::sequential::settled(policy, c, nn) == Some(true),
            }),
    }
}
