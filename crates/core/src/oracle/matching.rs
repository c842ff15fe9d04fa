//! Maximum bipartite matching between expected and actual calls for `tool-sequence`'s
//! `unordered`, `superset` and `subset` modes, fast on the traces agents write.
//!
//! Calls that are interchangeable under the argument rules — the same tool and the same
//! arguments (an expected call without `args` matches any) — are grouped, and a maximum flow
//! between the groups decides how many calls pair: Dinic's algorithm, which on unit capacities
//! is Hopcroft–Karp. Which expected group may pair with which actual group is decided on one
//! representative of each, and only among groups of the same tool; under `exact` argument
//! matching, only among groups whose arguments are equal by a key that JSON equality cannot tell
//! apart (numbers by value), confirmed by the real comparison. So 3,000 expected calls against
//! 3,000 actual ones cost a few thousand comparisons, not nine million, and the matching is
//! near-linear in the common case. Concrete calls are then paired lowest index first within
//! each pair of groups, so the evidence of a failure names the lowest-index call left over
//! within its group.

use foldhash::{HashMap, HashMapExt};
use serde_json::Value;

use super::facts::ActualCall;
use super::jsoneq::{ArgsMatch, json_eq, override_for};
use super::sequence::{ExpectedCall, SeqConfig};
use crate::trace::json::lower;

/// A key equal exactly when JSON equality ([`super::jsoneq::json_eq`]) holds two values equal:
/// numbers as it compares them, object keys in sorted order, arrays in order. So calls grouped
/// by it are interchangeable under every argument rule. Written straight from the value,
/// without building a normalised copy: strings and keys are length-prefixed rather than
/// escaped, which keeps the key unambiguous.
fn coarse(v: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        use std::fmt::Write;
        match v {
            Value::Null => out.push('n'),
            Value::Bool(b) => out.push(if *b { 't' } else { 'f' }),
            // Numbers as JSON equality compares them: integers exactly, an integral float as
            // the integer it is (`6.0` as `6`, `-0.0` as `0`), other floats by value.
            Value::Number(n) => {
                match (n.as_i64().map(i128::from)).or_else(|| n.as_u64().map(i128::from)) {
                    Some(i) => {
                        let _ = write!(out, "#{i};");
                    }
                    None => {
                        let f = n.as_f64().unwrap_or(f64::NAN);
                        if f.fract() == 0.0 && f.abs() < 1e38 {
                            let _ = write!(out, "#{};", f as i128);
                        } else {
                            let _ = write!(out, "#{f:?};");
                        }
                    }
                }
            }
            Value::String(s) => {
                let _ = write!(out, "s{}:", s.len());
                out.push_str(s);
            }
            Value::Array(items) => {
                out.push('[');
                for x in items {
                    write(x, out);
                }
                out.push(']');
            }
            Value::Object(m) => {
                let mut keys: Vec<(&String, &Value)> = m.iter().collect();
                keys.sort_unstable_by(|a, b| a.0.cmp(b.0));
                out.push('{');
                for (k, x) in keys {
                    let _ = write!(out, "{}:", k.len());
                    out.push_str(k);
                    write(x, out);
                }
                out.push('}');
            }
        }
    }
    let mut out = String::with_capacity(64);
    write(v, &mut out);
    out
}

/// Calls grouped by key, each group's members in ascending index order, groups in order of
/// their first member.
fn group<K: std::hash::Hash + Eq>(keys: impl Iterator<Item = K>) -> Vec<Vec<usize>> {
    let mut at: HashMap<K, usize> = HashMap::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, k) in keys.enumerate() {
        let g = *at.entry(k).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(i);
    }
    groups
}

/// Up to this many calls on each side are grouped by comparing them, without keys.
const PAIRWISE: usize = 32;

/// Tool names equal as their lowercase forms are (what [`lower`] keys them by).
fn same_tool(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        return a.eq_ignore_ascii_case(b);
    }
    a.chars()
        .flat_map(char::to_lowercase)
        .eq(b.chars().flat_map(char::to_lowercase))
}

/// [`group`] by an equivalence relation instead of a key: each item joins the first group whose
/// first member it equals.
fn group_pairwise<T>(items: &[T], same: impl Fn(&T, &T) -> bool) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, x) in items.iter().enumerate() {
        match groups.iter_mut().find(|g| same(&items[g[0]], x)) {
            Some(g) => g.push(i),
            None => groups.push(vec![i]),
        }
    }
    groups
}

/// Actual groups by tool, and by tool and argument key for exact matching.
struct Index {
    by_tool: HashMap<String, Vec<usize>>,
    by_key: HashMap<String, HashMap<String, Vec<usize>>>,
}

impl Index {
    fn new(groups: &[Vec<usize>], keys: Vec<(String, String)>) -> Index {
        let mut index = Index {
            by_tool: HashMap::new(),
            by_key: HashMap::new(),
        };
        let mut keys: Vec<Option<(String, String)>> = keys.into_iter().map(Some).collect();
        for (g, members) in groups.iter().enumerate() {
            let Some((tool, args)) = keys[members[0]].take() else {
                continue;
            };
            index.by_tool.entry(tool.clone()).or_default().push(g);
            (index.by_key.entry(tool).or_default())
                .entry(args)
                .or_default()
                .push(g);
        }
        index
    }

    fn by_tool(&self, tool: &str) -> &[usize] {
        self.by_tool.get(tool).map_or(&[], Vec::as_slice)
    }

    fn by_key(&self, tool: &str, key: &str) -> &[usize] {
        (self.by_key.get(tool))
            .and_then(|m| m.get(key))
            .map_or(&[], Vec::as_slice)
    }
}

/// Dinic's maximum flow over a small graph.
///
/// The edges are gathered first and then laid out in one array, each node's edges together in
/// the order they were added (a node's list holds, in that order, the edges leaving it and the
/// reverse edges of those reaching it): a few allocations per graph rather than one per node.
struct Flow {
    /// The edges as added: (from, to, capacity).
    added: Vec<(usize, usize, usize)>,
    /// Where each node's edges start in `edges` (one more entry than nodes).
    start: Vec<usize>,
    /// Every node's edges as (to, capacity left, index of the reverse edge in `edges`).
    edges: Vec<(usize, usize, usize)>,
}

impl Flow {
    fn new(nodes: usize) -> Flow {
        Flow {
            added: Vec::new(),
            start: vec![0; nodes + 1],
            edges: Vec::new(),
        }
    }

    fn edge(&mut self, from: usize, to: usize, cap: usize) {
        self.added.push((from, to, cap));
    }

    /// Lays the added edges out by node.
    fn lay_out(&mut self) {
        let n = self.start.len() - 1;
        let mut degree = vec![0usize; n];
        for &(from, to, _) in &self.added {
            degree[from] += 1;
            degree[to] += 1;
        }
        for (u, d) in degree.iter().enumerate() {
            self.start[u + 1] = self.start[u] + d;
        }
        let mut cursor: Vec<usize> = self.start[..n].to_vec();
        self.edges = vec![(0, 0, 0); self.start[n]];
        for &(from, to, cap) in &self.added {
            let (f, r) = (cursor[from], cursor[to]);
            cursor[from] += 1;
            cursor[to] += 1;
            self.edges[f] = (to, cap, r);
            self.edges[r] = (from, 0, f);
        }
    }

    /// The edges of node `u`, as indexes into `edges`.
    fn of(&self, u: usize) -> std::ops::Range<usize> {
        self.start[u]..self.start[u + 1]
    }

    fn max_flow(&mut self, s: usize, t: usize) -> usize {
        self.lay_out();
        let n = self.start.len() - 1;
        let mut total = 0;
        let mut level = vec![usize::MAX; n];
        let mut queue = std::collections::VecDeque::with_capacity(n);
        let mut next = vec![0usize; n];
        let mut path: Vec<usize> = Vec::new(); // edge indexes
        loop {
            // Levels by breadth-first search over edges with capacity left.
            level.fill(usize::MAX);
            level[s] = 0;
            queue.clear();
            queue.push_back(s);
            while let Some(u) = queue.pop_front() {
                for e in self.of(u) {
                    let (v, cap, _) = self.edges[e];
                    if cap > 0 && level[v] == usize::MAX {
                        level[v] = level[u] + 1;
                        queue.push_back(v);
                    }
                }
            }
            if level[t] == usize::MAX {
                return total;
            }
            // Blocking flow by depth-first search (iterative: deep graphs must not overflow
            // the stack), each node's edge cursor only moving forward.
            for (u, c) in next.iter_mut().enumerate() {
                *c = self.start[u];
            }
            loop {
                path.clear();
                let mut u = s;
                let found = loop {
                    if u == t {
                        break true;
                    }
                    let mut advanced = false;
                    while next[u] < self.start[u + 1] {
                        let (v, cap, _) = self.edges[next[u]];
                        if cap > 0 && level[v] == level[u] + 1 {
                            path.push(next[u]);
                            u = v;
                            advanced = true;
                            break;
                        }
                        next[u] += 1;
                    }
                    if !advanced {
                        // Dead end: retreat, and never try this edge again in this phase.
                        match path.pop() {
                            Some(e) => {
                                // The edge's tail is the node its reverse edge leads to.
                                let p = self.edges[self.edges[e].2].0;
                                next[p] += 1;
                                u = p;
                            }
                            None => break false,
                        }
                    }
                };
                if !found {
                    break;
                }
                let push = (path.iter()).map(|&e| self.edges[e].1).min().unwrap_or(0);
                for &e in &path {
                    let r = self.edges[e].2;
                    self.edges[e].1 -= push;
                    self.edges[r].1 += push;
                }
                total += push;
            }
        }
    }
}

/// The expected calls' grouping keys: lowercase tool, and [`coarse`] arguments when given.
fn expected_keys(expected: &[ExpectedCall]) -> Vec<(String, Option<String>)> {
    (expected.iter())
        .map(|e| (lower(&e.tool), e.args.as_ref().map(coarse)))
        .collect()
}

/// Expected calls grouped as [`group_matching`] groups them: by comparing them when there are
/// few, else by key (both give the same groups). Made once per configuration.
pub(crate) fn expected_groups(expected: &[ExpectedCall]) -> Vec<Vec<usize>> {
    if expected.len() <= PAIRWISE {
        group_pairwise(expected, |x, y| {
            same_tool(&x.tool, &y.tool)
                && match (&x.args, &y.args) {
                    (None, None) => true,
                    (Some(p), Some(q)) => json_eq(p, q),
                    _ => false,
                }
        })
    } else {
        group(expected_keys(expected).iter())
    }
}

/// A maximum matching between `cfg.expected` and `actual`: for each left call (expected ones
/// when `expected_left`, else actual ones), its partner on the other side.
pub(crate) fn group_matching(
    cfg: &SeqConfig,
    actual: &[ActualCall],
    expected_left: bool,
) -> Vec<Option<usize>> {
    let expected = &cfg.expected;
    // Calls are grouped by equality of tool (lowercased) and arguments. Few calls are grouped
    // by comparing them (no key is built); many, by a key built once per call, with an index
    // from (tool, key) to groups for exact matching. Both give the same groups — the same
    // classes of interchangeable calls, in order of their first member — so the same matching.
    // The expected calls' groups are the configuration's, made when it was.
    let e_groups = &cfg.groups;
    let small = expected.len() <= PAIRWISE && actual.len() <= PAIRWISE;
    // A `$type` matcher tells `3` from `3.0`, which JSON equality holds equal: then actual
    // calls are interchangeable only when written alike.
    let typed = (expected.iter()).any(|e| {
        e.args
            .as_ref()
            .is_some_and(super::argmatch::has_type_matcher)
    });
    let (a_groups, index) = if small {
        let a_groups = group_pairwise(actual, |x, y| {
            same_tool(&x.tool, &y.tool) && json_eq(&x.args, &y.args) && (!typed || x.args == y.args)
        });
        (a_groups, None)
    } else {
        let e_keys = expected_keys(expected);
        let key = |v: &Value| match typed {
            true => format!("{}{v}", coarse(v)),
            false => coarse(v),
        };
        let a_keys: Vec<(String, String)> = (actual.iter())
            .map(|a| (lower(&a.tool), key(&a.args)))
            .collect();
        let a_groups = group(a_keys.iter());
        let index = Index::new(&a_groups, a_keys);
        (a_groups, Some((index, e_keys)))
    };
    let (ne, na) = (e_groups.len(), a_groups.len());
    let (s, t) = (ne + na, ne + na + 1);
    let mut flow = Flow::new(ne + na + 2);
    for (g, members) in e_groups.iter().enumerate() {
        flow.edge(s, g, members.len());
        let e = &expected[members[0]];
        let mode = override_for(&cfg.overrides, &e.tool).unwrap_or(&cfg.args_match);
        // A glob names several tools: its candidates are every actual group (few, in practice).
        let candidates: Vec<usize> = match &index {
            _ if super::names::is_glob(&e.tool) => (0..na).collect(),
            None => (0..na)
                .filter(|&h| same_tool(&e.tool, &actual[a_groups[h][0]].tool))
                .collect(),
            Some((index, e_keys)) => {
                let (tool, key) = &e_keys[members[0]];
                // Expected arguments with matchers equal no key: every call of the tool is a
                // candidate, decided by the comparison.
                let plain = || !e.args.as_ref().is_some_and(super::argmatch::has_matchers);
                match (key, mode) {
                    (Some(key), ArgsMatch::Exact) if plain() && !typed => {
                        index.by_key(tool, key).to_vec()
                    }
                    _ => index.by_tool(tool).to_vec(),
                }
            }
        };
        for h in candidates {
            if cfg.matches(e, &actual[a_groups[h][0]]) {
                flow.edge(g, ne + h, usize::MAX);
            }
        }
    }
    for (h, members) in a_groups.iter().enumerate() {
        flow.edge(ne + h, t, members.len());
    }
    flow.max_flow(s, t);
    // Pair concrete calls, lowest index first, along the flow between groups.
    let mut e_next = vec![0usize; ne];
    let mut a_next = vec![0usize; na];
    let mut partner_of_expected = vec![None; expected.len()];
    for g in 0..ne {
        for e in flow.of(g) {
            let (v, cap, r) = flow.edges[e];
            if v < ne || v >= ne + na || cap == usize::MAX {
                continue;
            }
            let h = v - ne;
            // The flow on a group edge is what its reverse edge holds.
            let carried = flow.edges[r].1;
            for _ in 0..carried {
                let (i, j) = (e_groups[g][e_next[g]], a_groups[h][a_next[h]]);
                e_next[g] += 1;
                a_next[h] += 1;
                partner_of_expected[i] = Some(j);
            }
        }
    }
    if expected_left {
        return partner_of_expected;
    }
    let mut partner_of_actual = vec![None; actual.len()];
    for (i, p) in partner_of_expected.iter().enumerate() {
        if let Some(j) = p {
            partner_of_actual[*j] = Some(i);
        }
    }
    partner_of_actual
}
