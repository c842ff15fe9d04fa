//! Sequences as benchmarks define them: `anyOrder` groups ("these calls in any order, then
//! these") in `exact` and `in-order`, and `readOnly` tools, whose extra calls are harmless while
//! an extra call of any other tool fails, in every mode.
//!
//! A sequence with groups says itself which calls may come in any order: the batch rule (calls
//! one inference planned together may run in any order) does not apply to it.

use std::ops::Range;

use super::judge::{Unplaced, blocks, max_matching};
use super::{SeqConfig, SeqMode};
use crate::oracle::facts::ActualCall;

/// Whether `tool` is one of the configuration's read-only tools.
fn read_only(cfg: &SeqConfig, tool: &str) -> bool {
    (cfg.read_only.iter()).any(|t| crate::oracle::names::tool_matches(t, tool))
}

/// The verdict when the configuration has groups or read-only tools (`None` otherwise, and for
/// the modes they do not change): the matched actual calls, or the call left unplaced.
/// `whole` is the whole-sequence matching of the modes that match whole.
pub(super) fn decide(
    cfg: &SeqConfig,
    actual: &[ActualCall],
    whole: Option<&[Option<usize>]>,
) -> Option<Result<Vec<usize>, Unplaced>> {
    if cfg.order.is_none() && cfg.read_only.is_empty() {
        return None;
    }
    let ro = |j: usize| read_only(cfg, &actual[j].tool);
    let ok = |i: usize, j: usize| cfg.matches(&cfg.expected[i], &actual[j]);
    Some(match (cfg.mode, &cfg.order) {
        (SeqMode::Exact, Some(groups)) if cfg.read_only.is_empty() => {
            exact_groups(actual.len(), groups, &ok)
        }
        (SeqMode::InOrder, Some(groups)) if cfg.read_only.is_empty() => {
            in_order_groups(actual.len(), groups, &ok)
        }
        (SeqMode::Exact | SeqMode::InOrder, Some(groups)) => {
            match groups_reads_left(actual.len(), groups, &ok, &ro) {
                Some(used) => Ok(used),
                // Why not: the group the greedy placement cannot place, else its first harmful
                // extra call.
                None => in_order_groups(actual.len(), groups, &ok).and_then(|used| {
                    Err(Unplaced::Actual(
                        first_unused(actual.len(), &used, &ro).unwrap_or_default(),
                    ))
                }),
            }
        }
        (SeqMode::Exact | SeqMode::InOrder, None) => in_order_reads_left(cfg, actual, &ok, &ro),
        (SeqMode::Unordered | SeqMode::Superset | SeqMode::Subset, _) => {
            let left_is_expected = cfg.mode != SeqMode::Subset;
            let m = whole.unwrap_or_default();
            let (mut e_partner, mut a_partner) =
                (vec![None; cfg.expected.len()], vec![None; actual.len()]);
            for (l, r) in m.iter().enumerate() {
                if let Some(r) = *r {
                    let (i, j) = if left_is_expected { (l, r) } else { (r, l) };
                    (e_partner[i], a_partner[j]) = (Some(j), Some(i));
                }
            }
            if left_is_expected {
                if let Some(i) = e_partner.iter().position(Option::is_none) {
                    return Some(Err(Unplaced::Expected(i)));
                }
            }
            saturate(&ok, &ro, &mut e_partner, &mut a_partner);
            match (0..actual.len()).find(|&j| a_partner[j].is_none() && !ro(j)) {
                Some(j) => Err(Unplaced::Actual(j)),
                None => Ok((0..actual.len())
                    .filter(|&j| a_partner[j].is_some())
                    .collect()),
            }
        }
    })
}

/// The first actual call not in `used` that is not read-only.
fn first_unused(n: usize, used: &[usize], ro: &dyn Fn(usize) -> bool) -> Option<usize> {
    let mut taken = vec![false; n];
    used.iter().for_each(|&j| taken[j] = true);
    (0..n).find(|&j| !taken[j] && !ro(j))
}

/// `exact` with groups: each group matches the next calls, as many as it has, in any order.
fn exact_groups(
    n: usize,
    groups: &[Range<usize>],
    ok: &dyn Fn(usize, usize) -> bool,
) -> Result<Vec<usize>, Unplaced> {
    let mut q = 0;
    for g in groups {
        let take = g.len().min(n - q);
        let m = max_matching(g.len(), take, &|l, r| ok(g.start + l, q + r));
        if let Some(l) = m.iter().position(Option::is_none) {
            return Err(Unplaced::Expected(g.start + l));
        }
        q += take;
    }
    match q < n {
        true => Err(Unplaced::Actual(q)),
        false => Ok((0..n).collect()),
    }
}

/// `in-order` with groups: each group matches, in any order, calls after the previous group's,
/// ending as early as it can (which leaves the most to the groups after it). The matched calls.
fn in_order_groups(
    n: usize,
    groups: &[Range<usize>],
    ok: &dyn Fn(usize, usize) -> bool,
) -> Result<Vec<usize>, Unplaced> {
    let mut used = Vec::new();
    let mut q = 0;
    for g in groups {
        let matched = |t: usize| max_matching(g.len(), t - q, &|l, r| ok(g.start + l, q + r));
        let whole = |t: usize| matched(t).iter().all(Option::is_some);
        if q + g.len() > n || !whole(n) {
            let m = matched(n.max(q));
            let l = m.iter().position(Option::is_none).unwrap_or(0);
            return Err(Unplaced::Expected(g.start + l));
        }
        // Whether the group fits grows with the calls it may use: the earliest end, bisected.
        let (mut lo, mut hi) = (q + g.len(), n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match whole(mid) {
                true => hi = mid,
                false => lo = mid + 1,
            }
        }
        used.extend(matched(lo).iter().flatten().map(|r| q + r));
        q = lo;
    }
    Ok(used)
}

/// Group `g` placed on the actual calls `seg`: its calls matched, in any order, and every
/// other call of `seg` read-only — the calls it used, or `None`.
fn fill(
    g: &Range<usize>,
    seg: Range<usize>,
    ok: &dyn Fn(usize, usize) -> bool,
    ro: &dyn Fn(usize) -> bool,
) -> Option<Vec<usize>> {
    let (q, len) = (seg.start, seg.len());
    if len < g.len() || seg.clone().filter(|&j| !ro(j)).count() > g.len() {
        return None;
    }
    let ok = |l: usize, r: usize| ok(g.start + l, q + r);
    let ro = |r: usize| ro(q + r);
    let m = max_matching(g.len(), len, &ok);
    if m.iter().any(Option::is_none) {
        return None;
    }
    let mut a_partner = vec![None; len];
    for (l, r) in m.iter().enumerate() {
        a_partner[r.expect("checked")] = Some(l);
    }
    let mut e_partner = m;
    saturate(&ok, &ro, &mut e_partner, &mut a_partner);
    ((0..len).all(|r| a_partner[r].is_some() || ro(r)))
        .then(|| e_partner.iter().flatten().map(|r| q + r).collect())
}

/// Groups in order (in `exact` or `in-order`) where every call left over must be read-only:
/// `can[g][k]` says whether the first `g` groups fill the first `k` calls so, and how (the
/// start of group `g - 1`'s calls, or `None` when call `k - 1` is a spare read). The calls
/// used, or `None` when no placement leaves only reads over.
fn groups_reads_left(
    n: usize,
    groups: &[Range<usize>],
    ok: &dyn Fn(usize, usize) -> bool,
    ro: &dyn Fn(usize) -> bool,
) -> Option<Vec<usize>> {
    let mut can: Vec<Vec<Option<Option<usize>>>> = vec![vec![None; n + 1]; groups.len() + 1];
    can[0][0] = Some(None);
    for k in 1..=n {
        if can[0][k - 1].is_some() && ro(k - 1) {
            can[0][k] = Some(None);
        }
    }
    for (g, group) in groups.iter().enumerate() {
        for k in 1..=n {
            if can[g + 1][k - 1].is_some() && ro(k - 1) {
                can[g + 1][k] = Some(None);
                continue;
            }
            let start = (0..k)
                .rev()
                .find(|&s| can[g][s].is_some() && fill(group, s..k, ok, ro).is_some());
            if let Some(s) = start {
                can[g + 1][k] = Some(Some(s));
            }
        }
    }
    can[groups.len()][n]?;
    let (mut g, mut k, mut used) = (groups.len(), n, Vec::new());
    while k > 0 && g > 0 {
        match can[g][k].expect("on the path") {
            None => k -= 1,
            Some(s) => {
                used.extend(fill(&groups[g - 1], s..k, ok, ro).expect("it filled"));
                (g, k) = (g - 1, s);
            }
        }
    }
    Some(used)
}

/// `in-order` (or `exact`) where every call left over must be read-only: the expected calls
/// embed in order into the actual ones, the calls of one batch taken in the order the
/// expectation lists them (unless `batchOrder` is strict), with every unused call read-only.
fn in_order_reads_left(
    cfg: &SeqConfig,
    actual: &[ActualCall],
    ok: &dyn Fn(usize, usize) -> bool,
    ro: &dyn Fn(usize) -> bool,
) -> Result<Vec<usize>, Unplaced> {
    let e = cfg.expected.len();
    let mut order: Vec<usize> = (0..actual.len()).collect();
    if !cfg.strict_batches {
        for (s, t) in blocks(actual, false) {
            order[s..t].sort_by_key(|&j| (0..e).position(|i| ok(i, j)).unwrap_or(usize::MAX));
        }
    }
    let n = order.len();
    // can[i][k]: the first i expected calls embed into the first k calls, all others read-only.
    let mut can = vec![vec![false; n + 1]; e + 1];
    can[0][0] = true;
    for k in 1..=n {
        can[0][k] = can[0][k - 1] && ro(order[k - 1]);
    }
    for i in 1..=e {
        for k in 1..=n {
            let j = order[k - 1];
            can[i][k] = (ok(i - 1, j) && can[i - 1][k - 1]) || (ro(j) && can[i][k - 1]);
        }
    }
    if can[e][n] {
        let (mut i, mut used) = (e, Vec::new());
        for k in (1..=n).rev() {
            let j = order[k - 1];
            if i > 0 && ok(i - 1, j) && can[i - 1][k - 1] {
                used.push(j);
                i -= 1;
            }
        }
        return Ok(used);
    }
    // Why not: the first expected call the greedy embedding leaves over, else its first
    // harmful extra call.
    let mut i = 0;
    let mut used = Vec::new();
    for &j in &order {
        if i < e && ok(i, j) {
            used.push(j);
            i += 1;
        }
    }
    match i < e {
        true => Err(Unplaced::Expected(i)),
        false => Err(Unplaced::Actual(
            first_unused(n, &used, ro).unwrap_or_default(),
        )),
    }
}

/// Re-routes a matching that pairs every expected call it can so that it also pairs every
/// actual call that is not read-only, where some matching does (each expected call keeps a
/// partner; a read-only call gives its partner up): alternating paths from each unpaired
/// call that is not read-only.
fn saturate(
    ok: &dyn Fn(usize, usize) -> bool,
    ro: &dyn Fn(usize) -> bool,
    e_partner: &mut [Option<usize>],
    a_partner: &mut [Option<usize>],
) {
    fn reroute(
        j: usize,
        ok: &dyn Fn(usize, usize) -> bool,
        ro: &dyn Fn(usize) -> bool,
        seen: &mut [bool],
        e_partner: &mut [Option<usize>],
        a_partner: &mut [Option<usize>],
    ) -> bool {
        for i in 0..e_partner.len() {
            if seen[i] || !ok(i, j) {
                continue;
            }
            seen[i] = true;
            let free = match e_partner[i] {
                None => true,
                Some(j2) if ro(j2) => {
                    a_partner[j2] = None;
                    true
                }
                Some(j2) => reroute(j2, ok, ro, seen, e_partner, a_partner),
            };
            if free {
                (e_partner[i], a_partner[j]) = (Some(j), Some(i));
                return true;
            }
        }
        false
    }
    for j in 0..a_partner.len() {
        if a_partner[j].is_none() && !ro(j) {
            let mut seen = vec![false; e_partner.len()];
            reroute(j, ok, ro, &mut seen, e_partner, a_partner);
        }
    }
}

/// The score of a failure under groups or read-only tools: the expected calls placed over the
/// expected calls and the harmful extra calls (below 1 whenever the sequence fails).
pub(super) fn fraction(cfg: &SeqConfig, actual: &[ActualCall], placed: usize) -> f64 {
    let harmful = (actual.iter())
        .filter(|a| !read_only(cfg, &a.tool))
        .count()
        .saturating_sub(placed);
    let of = cfg.expected.len() + harmful;
    match of {
        0 => 0.0,
        _ => (placed as f64 / of as f64).min(1.0 - f64::EPSILON),
    }
}
