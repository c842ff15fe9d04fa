//! Judging a configured `tool-sequence`: the actual calls (executed or planned, with their
//! batches), the matching, the verdict and its score, whole or per turn or inference.

use super::*;

pub(crate) use crate::oracle::facts::ActualCall;

/// The actual calls of a trace with their batches (the `seq` of the planning inference).
pub(crate) fn actual_calls(facts: &Facts<'_, '_>) -> Vec<ActualCall> {
    actual_calls_with(facts, &|_| true)
}

/// [`actual_calls`], parsing the arguments only of calls whose tool `with_args` names (a call
/// of a tool no expectation with `args` names is never compared by its arguments).
fn actual_calls_with(facts: &Facts<'_, '_>, with_args: &dyn Fn(&str) -> bool) -> Vec<ActualCall> {
    (facts.calls.iter().zip(facts.batches()))
        .map(|(c, batch)| ActualCall {
            seq: c.event.seq,
            tool: c.tool.to_string(),
            args: if with_args(c.tool) {
                c.args.value()
            } else {
                Value::Null
            },
            batch: *batch,
        })
        .collect()
}

/// The calls an oracle reads, executed or planned.
pub(crate) fn calls_of(of: Of, facts: &Facts<'_, '_>) -> Vec<ActualCall> {
    match of {
        Of::Executed => actual_calls(facts),
        Of::Planned => facts.planned().to_vec(),
    }
}

impl SeqConfig {
    /// Whether an actual call matches an expected one (tool and arguments).
    pub(crate) fn matches(&self, e: &ExpectedCall, a: &ActualCall) -> bool {
        crate::oracle::names::tool_matches(&e.tool, &a.tool)
            && e.args.as_ref().is_none_or(|ea| {
                let mode = override_for(&self.overrides, &a.tool).unwrap_or(&self.args_match);
                crate::oracle::jsoneq::args_match_as(mode, ea, &a.args, self.matchers)
            })
    }
}

/// Maximum bipartite matching preferring low indices (Kuhn's algorithm, left vertices in index
/// order, candidates in index order). Returns, for each left vertex, its right partner.
pub(super) fn max_matching(
    left: usize,
    right: usize,
    ok: &dyn Fn(usize, usize) -> bool,
) -> Vec<Option<usize>> {
    fn augment(
        l: usize,
        right: usize,
        ok: &dyn Fn(usize, usize) -> bool,
        seen: &mut [bool],
        owner: &mut [Option<usize>],
    ) -> bool {
        for r in 0..right {
            if !seen[r] && ok(l, r) {
                seen[r] = true;
                if owner[r].is_none_or(|o| augment(o, right, ok, seen, owner)) {
                    owner[r] = Some(l);
                    return true;
                }
            }
        }
        false
    }
    let mut owner: Vec<Option<usize>> = vec![None; right];
    for l in 0..left {
        let mut seen = vec![false; right];
        augment(l, right, ok, &mut seen, &mut owner);
    }
    let mut partner = vec![None; left];
    for (r, o) in owner.iter().enumerate() {
        if let Some(l) = o {
            partner[*l] = Some(r);
        }
    }
    partner
}

/// Which call was left unplaced when the oracle failed.
pub(super) enum Unplaced {
    Expected(usize),
    Actual(usize),
}

/// Consecutive actual calls of one batch form a block; other calls are blocks of one.
pub(super) fn blocks(actual: &[ActualCall], strict: bool) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (i, a) in actual.iter().enumerate() {
        match out.last_mut() {
            Some((_, end)) if !strict && a.batch.is_some() && actual[*end - 1].batch == a.batch => {
                *end = i + 1
            }
            _ => out.push((i, i + 1)),
        }
    }
    out
}

/// The matching of the whole sequence at once, for the modes that match it whole: grouped, by
/// maximum flow (see `matching`); expected calls on the left but in `subset` mode. Made once
/// per judgement: the verdict and, on a failure, the score both read it.
fn whole_matching(cfg: &SeqConfig, actual: &[ActualCall]) -> Option<Vec<Option<usize>>> {
    let left_is_expected = match cfg.mode {
        SeqMode::Unordered | SeqMode::Superset => true,
        SeqMode::Subset => false,
        SeqMode::Exact | SeqMode::InOrder => return None,
    };
    Some(crate::oracle::matching::group_matching(
        cfg,
        actual,
        left_is_expected,
    ))
}

/// Judges the sequence (`whole`: its [`whole_matching`]); on success returns the matched
/// actual indices.
fn decide(
    cfg: &SeqConfig,
    actual: &[ActualCall],
    whole: Option<&[Option<usize>]>,
) -> Result<Vec<usize>, Unplaced> {
    if let Some(decided) = super::extras::decide(cfg, actual, whole) {
        return decided;
    }
    let e = &cfg.expected;
    let ok = |i: usize, j: usize| cfg.matches(&e[i], &actual[j]);
    let whole = |_left_is_expected: bool| whole.unwrap_or_default();
    match cfg.mode {
        SeqMode::Exact => {
            for (s, t) in blocks(actual, cfg.strict_batches) {
                if t > e.len() {
                    // More actual calls than expected: the first expected-free one is extra,
                    // unless an expected call inside this block already fails.
                    if s < e.len() {
                        let m = max_matching(e.len() - s, t - s, &|l, r| ok(s + l, s + r));
                        if let Some(l) = m.iter().position(Option::is_none) {
                            return Err(Unplaced::Expected(s + l));
                        }
                    }
                    return Err(Unplaced::Actual(e.len().max(s)));
                }
                let m = max_matching(t - s, t - s, &|l, r| ok(s + l, s + r));
                if let Some(l) = m.iter().position(Option::is_none) {
                    return Err(Unplaced::Expected(s + l));
                }
            }
            if actual.len() < e.len() {
                return Err(Unplaced::Expected(actual.len()));
            }
            Ok((0..actual.len()).collect())
        }
        SeqMode::InOrder => {
            let mut j = 0;
            let mut used = Vec::new();
            for (s, t) in blocks(actual, cfg.strict_batches) {
                // Take as many of the next expected calls as fit this block; consuming early
                // never hurts a subsequence match, so the greedy choice is optimal.
                if j == e.len() {
                    break;
                }
                if t - s == 1 {
                    // A block of one call (the common case): no matching needed.
                    if ok(j, s) {
                        used.push(s);
                        j += 1;
                    }
                    if j == e.len() {
                        break;
                    }
                    continue;
                }
                for k in (1..=(t - s).min(e.len() - j)).rev() {
                    let m = max_matching(k, t - s, &|l, r| ok(j + l, s + r));
                    if m.iter().all(Option::is_some) {
                        used.extend(m.iter().flatten().map(|r| s + r));
                        j += k;
                        break;
                    }
                }
                if j == e.len() {
                    break;
                }
            }
            if j < e.len() {
                Err(Unplaced::Expected(j))
            } else {
                Ok(used)
            }
        }
        SeqMode::Unordered | SeqMode::Superset => {
            let m = whole(true);
            if let Some(i) = m.iter().position(Option::is_none) {
                return Err(Unplaced::Expected(i));
            }
            let used: Vec<usize> = m.iter().flatten().copied().collect();
            if cfg.mode == SeqMode::Unordered && actual.len() > e.len() {
                let mut paired = vec![false; actual.len()];
                used.iter().for_each(|&j| paired[j] = true);
                let first_free = paired.iter().position(|p| !p).unwrap_or(0);
                return Err(Unplaced::Actual(first_free));
            }
            Ok(used)
        }
        SeqMode::Subset => {
            let m = whole(false);
            match m.iter().position(Option::is_none) {
                Some(j) => Err(Unplaced::Actual(j)),
                None => Ok((0..actual.len()).collect()),
            }
        }
    }
}

fn call_json(tool: &str, args: Option<&Value>) -> Value {
    match args {
        Some(a) => json!({"tool": tool, "args": a}),
        None => json!({"tool": tool}),
    }
}

/// Judges a `tool-sequence` oracle.
pub(crate) fn tool_sequence(cfg: &SeqConfig, facts: &Facts<'_, '_>) -> OracleResult {
    match (&cfg.split, cfg.of) {
        (Split::Whole, Of::Executed) => {
            let with_args = crate::oracle::names::ToolSet::new(
                (cfg.expected.iter())
                    .filter(|e| e.args.is_some())
                    .map(|e| e.tool.as_str()),
            );
            let compared = |tool: &str| with_args.matches(tool);
            let result = check_sequence(cfg, &actual_calls_with(facts, &compared));
            let every_call_parsed = facts.calls.iter().all(|c| compared(c.tool));
            if result.verdict == crate::oracle::Verdict::Pass || every_call_parsed {
                return result;
            }
            // A failure shows the actual arguments: parse them now (failures are rare).
            check_sequence(cfg, &actual_calls(facts))
        }
        (Split::Whole, Of::Planned) => check_sequence(cfg, facts.planned()),
        (Split::Turns(lists), of) => per_turn(cfg, lists, of, facts),
        (Split::Inferences(lists), _) => per_inference(cfg, lists, facts),
    }
}

/// The same configuration judging `expected` on its own (one turn or inference).
fn part(cfg: &SeqConfig, expected: &[ExpectedCall], mode: SeqMode) -> SeqConfig {
    SeqConfig {
        mode,
        groups: crate::oracle::matching::expected_groups(expected),
        expected: expected.to_vec(),
        args_match: cfg.args_match.clone(),
        overrides: cfg.overrides.clone(),
        strict_batches: cfg.strict_batches,
        of: cfg.of,
        split: Split::Whole,
        order: None,
        read_only: cfg.read_only.clone(),
        matchers: has_matchers(expected),
    }
}

/// Combines per-part results (`what` = `turn` or `inference`): the score is the mean of the
/// parts' verdicts (each 1 or 0), as ADK averages invocations.
fn mean_of_parts(what: &str, results: Vec<OracleResult>) -> OracleResult {
    let n = results.len();
    let passed = results
        .iter()
        .filter(|r| r.verdict == crate::oracle::Verdict::Pass)
        .count();
    let score = passed as f64 / n as f64;
    let mut evidence: Vec<u64> = Vec::new();
    let mut failing = Vec::new();
    for (i, r) in results.into_iter().enumerate() {
        if r.verdict == crate::oracle::Verdict::Pass {
            evidence.extend(&r.evidence);
        } else {
            failing.push((i + 1, r));
        }
    }
    if failing.is_empty() {
        evidence.sort_unstable();
        evidence.dedup();
        return OracleResult::pass(format!("all {n} {what}s matched"), evidence);
    }
    let mut evidence: Vec<u64> = failing
        .iter()
        .flat_map(|(_, r)| r.evidence.clone())
        .collect();
    evidence.sort_unstable();
    evidence.dedup();
    let text: Vec<String> = (failing.iter())
        .map(|(i, r)| format!("{what} {i}: {}", r.message))
        .collect();
    let found: Vec<Value> = (failing.iter())
        .map(|(i, r)| json!({ what: i, "expected": r.expected, "found": r.found }))
        .collect();
    OracleResult::fail(
        format!("{passed} of {n} {what}s matched; {}", text.join("; ")),
        evidence,
        json!({ format!("{what}s_matched"): n }),
        json!({ format!("{what}s_matched"): passed, "failing": found }),
    )
    .with_score(score)
}

fn per_turn(
    cfg: &SeqConfig,
    lists: &[Vec<ExpectedCall>],
    of: Of,
    facts: &Facts<'_, '_>,
) -> OracleResult {
    let ranges = crate::oracle::turns::turn_ranges(&facts.trace.events);
    if ranges.is_empty() {
        return OracleResult::not_evaluable(
            "`turns` needs turns, and the trace has no `user_message`",
            Vec::new(),
        );
    }
    if ranges.len() != lists.len() {
        return OracleResult::fail(
            format!(
                "the trace has {} turn(s) and `turns` lists {}",
                ranges.len(),
                lists.len()
            ),
            Vec::new(),
            json!({ "turns": lists.len() }),
            json!({ "turns": ranges.len() }),
        );
    }
    let all = calls_of(of, facts);
    let bounds: Vec<(u64, u64)> = (ranges.iter())
        .map(|r| {
            let events = &facts.trace.events[r.clone()];
            (
                events.first().map_or(0, |e| e.seq),
                events.last().map_or(0, |e| e.seq),
            )
        })
        .collect();
    let results = (lists.iter().zip(&bounds))
        .map(|(list, &(lo, hi))| {
            let actual: Vec<ActualCall> = (all.iter())
                .filter(|a| a.seq >= lo && a.seq <= hi)
                .cloned()
                .collect();
            check_sequence(&part(cfg, list, cfg.mode), &actual)
        })
        .collect();
    mean_of_parts("turn", results)
}

fn per_inference(
    cfg: &SeqConfig,
    lists: &[Vec<ExpectedCall>],
    facts: &Facts<'_, '_>,
) -> OracleResult {
    let mut groups: Vec<Vec<ActualCall>> = Vec::new();
    for c in facts.planned() {
        match groups.last_mut() {
            Some(g) if g[0].seq == c.seq => g.push(c.clone()),
            _ => groups.push(vec![c.clone()]),
        }
    }
    if groups.len() != lists.len() {
        return OracleResult::fail(
            format!(
                "{} inference(s) planned calls and `inferences` lists {}",
                groups.len(),
                lists.len()
            ),
            groups.iter().map(|g| g[0].seq).collect(),
            json!({ "inferences": lists.len() }),
            json!({ "inferences": groups.len() }),
        );
    }
    let results = (lists.iter().zip(&groups))
        .map(|(list, actual)| check_sequence(&part(cfg, list, SeqMode::Unordered), actual))
        .collect();
    mean_of_parts("inference", results)
}

/// The natural fraction of a failed sequence (see the module's scoring rules in the docs):
/// `superset` matched ÷ |E|, `unordered` matched ÷ max(|E|, |A|), `subset` matched ÷ |A|,
/// `in-order` the longest in-order match ÷ |E|, `exact` 0.
fn fraction(cfg: &SeqConfig, actual: &[ActualCall], whole: Option<&[Option<usize>]>) -> f64 {
    let (e, a) = (cfg.expected.len(), actual.len());
    if e == 0 {
        return 0.0;
    }
    let matched = |_expected_left: bool| {
        (whole.unwrap_or_default().iter())
            .filter(|p| p.is_some())
            .count() as f64
    };
    match cfg.mode {
        SeqMode::Exact => 0.0,
        SeqMode::Superset => matched(true) / e as f64,
        SeqMode::Unordered => matched(true) / e.max(a) as f64,
        SeqMode::Subset if a == 0 => 1.0,
        SeqMode::Subset => matched(false) / a as f64,
        SeqMode::InOrder => in_order_matched(cfg, actual) as f64 / e as f64,
    }
}

/// The largest number of expected calls matched in order: the longest common subsequence under
/// the matching rule, with the calls of one batch first put in the order the expectation lists
/// them (unless `batchOrder` is strict). Quadratic; beyond 4 million cells, the greedy in-order
/// count (a lower bound) is used instead.
fn in_order_matched(cfg: &SeqConfig, actual: &[ActualCall]) -> usize {
    let e = &cfg.expected;
    let mut order: Vec<&ActualCall> = actual.iter().collect();
    if !cfg.strict_batches {
        for (s, t) in blocks(actual, false) {
            order[s..t].sort_by_key(|a| {
                e.iter()
                    .position(|x| cfg.matches(x, a))
                    .unwrap_or(usize::MAX)
            });
        }
    }
    if e.len().saturating_mul(order.len()) > 4_000_000 {
        let mut j = 0;
        for a in &order {
            if j < e.len() && cfg.matches(&e[j], a) {
                j += 1;
            }
        }
        return j;
    }
    let mut prev = vec![0usize; order.len() + 1];
    let mut cur = vec![0usize; order.len() + 1];
    for x in e {
        for (k, a) in order.iter().enumerate() {
            cur[k + 1] = if cfg.matches(x, a) {
                prev[k] + 1
            } else {
                prev[k + 1].max(cur[k])
            };
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[order.len()]
}

/// Judges configured expectations against actual calls.
pub(crate) fn check_sequence(cfg: &SeqConfig, actual: &[ActualCall]) -> OracleResult {
    let whole = whole_matching(cfg, actual);
    let result = sequence_verdict(cfg, actual, whole.as_deref());
    if result.verdict == crate::oracle::Verdict::Pass {
        result
    } else {
        let mut score = fraction(cfg, actual, whole.as_deref());
        if cfg.order.is_some() || !cfg.read_only.is_empty() {
            let placed = (score * cfg.expected.len() as f64).round() as usize;
            score = super::extras::fraction(cfg, actual, placed);
        }
        result.with_score(score)
    }
}

fn sequence_verdict(
    cfg: &SeqConfig,
    actual: &[ActualCall],
    whole: Option<&[Option<usize>]>,
) -> OracleResult {
    let mode = cfg.mode.name();
    match decide(cfg, actual, whole) {
        Ok(mut used) => {
            used.sort_unstable();
            let evidence = used.iter().map(|&j| actual[j].seq).collect();
            OracleResult::pass(
                format!(
                    "{} expected call(s) matched {} actual call(s) in mode `{mode}`",
                    cfg.expected.len(),
                    actual.len()
                ),
                evidence,
            )
        }
        Err(Unplaced::Expected(i)) => {
            let e = &cfg.expected[i];
            let want = call_json(&e.tool, e.args.as_ref());
            let closest = actual
                .iter()
                .filter(|a| crate::oracle::names::tool_matches(&e.tool, &a.tool))
                .map(|a| {
                    (
                        differing_keys(e.args.as_ref().unwrap_or(&a.args), &a.args),
                        a,
                    )
                })
                // Fewest differing keys; among equals the later call (a retry that finally
                // went through is what the run settled on, not an earlier failed attempt).
                .min_by_key(|(d, a)| (d.len(), std::cmp::Reverse(a.seq)));
            match closest {
                Some((diff, a)) => {
                    let differences = e
                        .args
                        .as_ref()
                        .map(|ea| differences(ea, &a.args))
                        .unwrap_or_default();
                    OracleResult::fail(
                        format!(
                            "expected call {i} `{}` was not matched in mode `{mode}`; the closest actual call is seq {}{}",
                            e.tool,
                            a.seq,
                            if diff.is_empty() {
                                " (same arguments, wrong position or already paired)".to_owned()
                            } else {
                                format!(", differing in {}", describe_differences(&differences))
                            }
                        ),
                        vec![a.seq],
                        json!({"index": i, "call": want}),
                        json!({"seq": a.seq, "call": call_json(&a.tool, Some(&a.args)), "differs": diff, "differences": differences}),
                    )
                }
                None => OracleResult::fail(
                    format!(
                        "expected call {i} `{}` was not matched in mode `{mode}`: no call of that tool",
                        e.tool
                    ),
                    Vec::new(),
                    json!({"index": i, "call": want}),
                    json!({"tools": actual.iter().map(|a| a.tool.as_str()).collect::<Vec<_>>()}),
                ),
            }
        }
        Err(Unplaced::Actual(j)) => {
            let a = &actual[j];
            let closest = cfg
                .expected
                .iter()
                .enumerate()
                .filter(|(_, e)| crate::oracle::names::tool_matches(&e.tool, &a.tool))
                .map(|(i, e)| {
                    (
                        differing_keys(e.args.as_ref().unwrap_or(&a.args), &a.args),
                        i,
                    )
                })
                .min_by_key(|(d, i)| (d.len(), *i));
            let found = json!({"seq": a.seq, "call": call_json(&a.tool, Some(&a.args))});
            let (detail, expected) = match closest {
                Some((diff, i)) => (
                    format!(
                        "; the closest expected call is {i}{}",
                        if diff.is_empty() {
                            String::new()
                        } else {
                            format!(", differing in {}", crate::oracle::harness::quoted(&diff))
                        }
                    ),
                    json!({"index": i, "call": call_json(&cfg.expected[i].tool, cfg.expected[i].args.as_ref()), "differs": diff}),
                ),
                None => (
                    ": no expected call of that tool".to_owned(),
                    json!({"tools": cfg.expected.iter().map(|e| e.tool.as_str()).collect::<Vec<_>>()}),
                ),
            };
            OracleResult::fail(
                format!(
                    "actual call at seq {} `{}` is not allowed in mode `{mode}`{detail}",
                    a.seq, a.tool
                ),
                vec![a.seq],
                expected,
                found,
            )
        }
    }
}
