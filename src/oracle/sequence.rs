//! `tool-sequence`: the actual tool calls against an expected trajectory, in five modes, with
//! optimal (maximum bipartite) pairing, batch-aware ordering, and argument matching.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::facts::Facts;
use super::jsoneq::{ArgsMatch, args_match, differing_keys, override_for};
use super::result::OracleResult;
use crate::scenario::OracleSpec;
use crate::trace::EventBody;
use crate::trace::json::eq_ci;

/// The five comparison modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqMode {
    /// Same length, position by position.
    Exact,
    /// Expected is a subsequence of actual.
    InOrder,
    /// Same length, any order.
    Unordered,
    /// Every expected call pairs with a distinct actual call.
    Superset,
    /// Every actual call pairs with a distinct expected call.
    Subset,
}

impl SeqMode {
    fn parse(s: &str) -> Option<SeqMode> {
        match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "exact" => Some(SeqMode::Exact),
            "in-order" => Some(SeqMode::InOrder),
            "unordered" => Some(SeqMode::Unordered),
            "superset" => Some(SeqMode::Superset),
            "subset" => Some(SeqMode::Subset),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            SeqMode::Exact => "exact",
            SeqMode::InOrder => "in-order",
            SeqMode::Unordered => "unordered",
            SeqMode::Superset => "superset",
            SeqMode::Subset => "subset",
        }
    }
}

/// One expected call.
#[derive(Debug, Clone)]
pub struct ExpectedCall {
    /// Tool name.
    pub tool: String,
    /// Arguments to match; `None` matches any.
    pub args: Option<Value>,
}

/// A validated `tool-sequence` configuration.
#[derive(Debug, Clone)]
pub struct SeqConfig {
    /// The mode.
    pub mode: SeqMode,
    /// Expected calls.
    pub expected: Vec<ExpectedCall>,
    /// Default argument matching.
    pub args_match: ArgsMatch,
    /// Per-tool overrides.
    pub overrides: Vec<(String, ArgsMatch)>,
    /// `batchOrder: strict`: batches do not relax ordering.
    pub strict_batches: bool,
}

/// Reads `calls` (or the `tools` shorthand) into expected calls.
pub fn expected_calls(spec: &OracleSpec) -> Result<Vec<ExpectedCall>, String> {
    match (spec.get("calls"), spec.get("tools")) {
        (Some(_), Some(_)) => Err("give exactly one of `calls` and `tools`, not both".into()),
        (None, None) => Err("no expected calls: give `calls` or `tools`".into()),
        (Some(Value::Array(calls)), None) => calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let obj = c
                    .as_object()
                    .ok_or_else(|| format!("`calls[{i}]` is not an object"))?;
                let tool = crate::scenario::field(obj, "tool")
                    .and_then(Value::as_str)
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .ok_or_else(|| format!("`calls[{i}]` has no `tool`"))?;
                let args = match crate::scenario::field(obj, "args") {
                    None => None,
                    Some(Value::Null) => {
                        return Err(format!(
                            "`calls[{i}].args` is null; omit it to match any arguments"
                        ));
                    }
                    Some(v) => Some(v.clone()),
                };
                Ok(ExpectedCall {
                    tool: tool.to_owned(),
                    args,
                })
            })
            .collect(),
        (None, Some(Value::Array(tools))) => tools
            .iter()
            .enumerate()
            .map(|(i, t)| {
                t.as_str()
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(|t| ExpectedCall {
                        tool: t.to_owned(),
                        args: None,
                    })
                    .ok_or_else(|| format!("`tools[{i}]` is not a tool name"))
            })
            .collect(),
        (Some(_), None) => Err("`calls` must be an array".into()),
        (None, Some(_)) => Err("`tools` must be an array of tool names".into()),
    }
}

/// `argsMatch` (default `exact`).
pub fn args_mode(spec: &OracleSpec) -> Result<ArgsMatch, String> {
    match spec.get("argsMatch") {
        None | Some(Value::Null) => Ok(ArgsMatch::Exact),
        Some(Value::String(s)) => ArgsMatch::parse(s).ok_or_else(|| {
            format!("`argsMatch` `{s}` is not one of exact, ignore, superset, subset")
        }),
        Some(other) => Err(format!("`argsMatch` `{other}` is not a mode name")),
    }
}

/// Validates a `tool-sequence` oracle.
pub fn configure(spec: &OracleSpec) -> Result<SeqConfig, String> {
    let mode = match spec.get("mode") {
        None | Some(Value::Null) => {
            return Err(
                "`mode` is required (exact, in-order, unordered, superset or subset)".into(),
            );
        }
        Some(Value::String(s)) => SeqMode::parse(s).ok_or_else(|| {
            format!("`mode` `{s}` is not one of exact, in-order, unordered, superset, subset")
        })?,
        Some(other) => return Err(format!("`mode` `{other}` is not a mode name")),
    };
    let expected = expected_calls(spec)?;
    let args_match = args_mode(spec)?;
    let overrides = match spec.get("argsMatchOverrides") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(tool, v)| {
                ArgsMatch::from_value(v)
                    .map(|m| (tool.clone(), m))
                    .map_err(|e| format!("`argsMatchOverrides.{tool}`: {e}"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(
                "`argsMatchOverrides` must map tool names to a mode or a list of paths".into(),
            );
        }
    };
    let strict_batches = match spec.get("batchOrder") {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "strict" => true,
            "any" => false,
            _ => return Err(format!("`batchOrder` `{s}` is not `strict` or `any`")),
        },
        Some(other) => return Err(format!("`batchOrder` `{other}` is not `strict` or `any`")),
    };
    Ok(SeqConfig {
        mode,
        expected,
        args_match,
        overrides,
        strict_batches,
    })
}

/// An actual call as the matcher sees it.
#[derive(Debug, Clone)]
pub struct ActualCall {
    /// Its `seq`.
    pub seq: u64,
    /// Tool name.
    pub tool: String,
    /// Arguments as JSON.
    pub args: Value,
    /// The inference that planned it together with others, if any.
    pub batch: Option<u64>,
}

/// The actual calls of a trace with their batches (the `seq` of the planning inference).
pub fn actual_calls(facts: &Facts<'_, '_>) -> Vec<ActualCall> {
    actual_calls_with(facts, true)
}

/// [`actual_calls`], parsing arguments only when `with_args` (a `tools` shorthand or calls
/// without `args` never look at them).
fn actual_calls_with(facts: &Facts<'_, '_>, with_args: bool) -> Vec<ActualCall> {
    let mut batch_of: HashMap<&str, u64> = HashMap::new();
    for e in &facts.trace.events {
        if let EventBody::Inference(i) = &e.body {
            for c in i.output.iter().flat_map(|o| o.tool_calls.iter().flatten()) {
                batch_of.insert(c.call_id.as_str(), e.seq);
            }
        }
    }
    facts
        .calls
        .iter()
        .map(|c| ActualCall {
            seq: c.event.seq,
            tool: c.tool.to_string(),
            args: if with_args {
                c.args.value()
            } else {
                Value::Null
            },
            batch: batch_of.get(c.call_id.as_str()).copied(),
        })
        .collect()
}

impl SeqConfig {
    fn matches(&self, e: &ExpectedCall, a: &ActualCall) -> bool {
        eq_ci(&e.tool, &a.tool)
            && e.args.as_ref().is_none_or(|ea| {
                let mode = override_for(&self.overrides, &a.tool).unwrap_or(&self.args_match);
                args_match(mode, ea, &a.args)
            })
    }
}

/// Maximum bipartite matching preferring low indices (Kuhn's algorithm, left vertices in index
/// order, candidates in index order). Returns, for each left vertex, its right partner.
fn max_matching(
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
enum Unplaced {
    Expected(usize),
    Actual(usize),
}

/// Consecutive actual calls of one batch form a block; other calls are blocks of one.
fn blocks(actual: &[ActualCall], strict: bool) -> Vec<(usize, usize)> {
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

/// Judges the sequence; on success returns the matched actual indices.
fn decide(cfg: &SeqConfig, actual: &[ActualCall]) -> Result<Vec<usize>, Unplaced> {
    let e = &cfg.expected;
    let ok = |i: usize, j: usize| cfg.matches(&e[i], &actual[j]);
    let whole = |left_is_expected: bool| {
        if left_is_expected {
            max_matching(e.len(), actual.len(), &|l, r| ok(l, r))
        } else {
            max_matching(actual.len(), e.len(), &|l, r| ok(r, l))
        }
    };
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
                let first_free = (0..actual.len()).find(|j| !used.contains(j)).unwrap_or(0);
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
pub fn tool_sequence(spec: &OracleSpec, facts: &Facts<'_, '_>) -> OracleResult {
    let cfg = match configure(spec) {
        Ok(c) => c,
        Err(e) => return OracleResult::misconfigured(e),
    };
    let with_args = cfg.expected.iter().any(|e| e.args.is_some());
    let result = judge_sequence(&cfg, &actual_calls_with(facts, with_args));
    if result.verdict == super::Verdict::Pass || with_args {
        return result;
    }
    // A failure shows the actual arguments: parse them now (failures are rare).
    judge_sequence(&cfg, &actual_calls(facts))
}

/// Judges configured expectations against actual calls.
pub fn judge_sequence(cfg: &SeqConfig, actual: &[ActualCall]) -> OracleResult {
    let mode = cfg.mode.name();
    match decide(cfg, actual) {
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
                .filter(|a| eq_ci(&a.tool, &e.tool))
                .map(|a| {
                    (
                        differing_keys(e.args.as_ref().unwrap_or(&a.args), &a.args),
                        a,
                    )
                })
                .min_by_key(|(d, a)| (d.len(), a.seq));
            match closest {
                Some((diff, a)) => OracleResult::fail(
                    format!(
                        "expected call {i} `{}` was not matched in mode `{mode}`; the closest actual call is seq {}{}",
                        e.tool,
                        a.seq,
                        if diff.is_empty() {
                            " (same arguments, wrong position or already paired)".to_owned()
                        } else {
                            format!(
                                ", differing in {}",
                                diff.iter()
                                    .map(|k| format!("`{k}`"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )
                        }
                    ),
                    vec![a.seq],
                    json!({"index": i, "call": want}),
                    json!({"seq": a.seq, "call": call_json(&a.tool, Some(&a.args)), "differs": diff}),
                ),
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
                .filter(|(_, e)| eq_ci(&e.tool, &a.tool))
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
                            format!(
                                ", differing in {}",
                                diff.iter()
                                    .map(|k| format!("`{k}`"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )
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

#[cfg(test)]
mod tests {
    use super::*;

    fn actual(calls: &[(&str, Value, Option<u64>)]) -> Vec<ActualCall> {
        calls
            .iter()
            .enumerate()
            .map(|(i, (tool, args, batch))| ActualCall {
                seq: i as u64 + 1,
                tool: (*tool).to_owned(),
                args: args.clone(),
                batch: *batch,
            })
            .collect()
    }

    fn cfg(mode: &str, calls: Value, args_match: &str) -> SeqConfig {
        let spec = OracleSpec {
            index: 0,
            params: serde_json::from_value(json!({"type": "tool-sequence", "mode": mode, "calls": calls, "argsMatch": args_match})).unwrap(),
        };
        configure(&spec).unwrap()
    }

    fn verdict(
        mode: &str,
        calls: Value,
        args_match: &str,
        a: &[(&str, Value, Option<u64>)],
    ) -> bool {
        judge_sequence(&cfg(mode, calls, args_match), &actual(a)).verdict
            == super::super::Verdict::Pass
    }

    const MODES: [&str; 5] = ["exact", "in-order", "unordered", "superset", "subset"];

    /// (case, expected calls, actual calls, verdict per mode in MODES order), under every argsMatch
    /// that leaves the outcome unchanged (args identical on both sides, or none expected).
    #[test]
    fn modes_table() {
        let f = |a: Value| ("f", a, None);
        let g = |a: Value| ("g", a, None);
        type Case<'c> = (
            &'c str,
            Value,
            Vec<(&'c str, Value, Option<u64>)>,
            [bool; 5],
        );
        let cases: Vec<Case> = vec![
            (
                "identical",
                json!([{"tool":"f","args":{"a":1}},{"tool":"g","args":{"b":2}}]),
                vec![f(json!({"a":1})), g(json!({"b":2}))],
                [true, true, true, true, true],
            ),
            (
                "extra actual call",
                json!([{"tool":"f","args":{"a":1}}]),
                vec![f(json!({"a":1})), g(json!({"b":2}))],
                [false, true, false, true, false],
            ),
            (
                "missing actual call",
                json!([{"tool":"f","args":{"a":1}},{"tool":"g","args":{"b":2}}]),
                vec![f(json!({"a":1}))],
                [false, false, false, false, true],
            ),
            (
                "swapped order",
                json!([{"tool":"f","args":{"a":1}},{"tool":"g","args":{"b":2}}]),
                vec![g(json!({"b":2})), f(json!({"a":1}))],
                [false, false, true, true, true],
            ),
            (
                "duplicate actual",
                json!([{"tool":"f","args":{"a":1}}]),
                vec![f(json!({"a":1})), f(json!({"a":1}))],
                [false, true, false, true, false],
            ),
            (
                "duplicate expected",
                json!([{"tool":"f","args":{"a":1}},{"tool":"f","args":{"a":1}}]),
                vec![f(json!({"a":1}))],
                [false, false, false, false, true],
            ),
            (
                "empty expected, calls made",
                json!([]),
                vec![f(json!({"a":1}))],
                [false, true, false, true, false],
            ),
            (
                "empty expected, no calls",
                json!([]),
                vec![],
                [true, true, true, true, true],
            ),
            (
                "no calls",
                json!([{"tool":"f","args":{"a":1}}]),
                vec![],
                [false, false, false, false, true],
            ),
            (
                "retry: wrong then right",
                json!([{"tool":"f","args":{"a":1}}]),
                vec![f(json!({"a":0})), f(json!({"a":1}))],
                [false, true, false, true, false],
            ),
            (
                "nested args",
                json!([{"tool":"f","args":{"o":{"x":[1,{"y":true}]}}}]),
                vec![f(json!({"o":{"x":[1,{"y":true}]}}))],
                [true, true, true, true, true],
            ),
            (
                "6 equals 6.0",
                json!([{"tool":"f","args":{"n":6}}]),
                vec![f(json!({"n":6.0}))],
                [true, true, true, true, true],
            ),
            (
                "true is not 1",
                json!([{"tool":"f","args":{"n":true}}]),
                vec![f(json!({"n":1}))],
                [false, false, false, false, false],
            ),
            (
                "null is not missing",
                json!([{"tool":"f","args":{"n":null}}]),
                vec![f(json!({}))],
                [false, false, false, false, false],
            ),
            (
                "tool names ignore case",
                json!([{"tool":"F","args":{"a":1}}]),
                vec![f(json!({"a":1}))],
                [true, true, true, true, true],
            ),
        ];
        for (name, calls, a, want) in &cases {
            // `{n: null}` against `{}` is the one case argsMatch decides: subset holds vacuously
            // (the actual call has no key to check), so it is asserted on its own below.
            let arg_modes: &[&str] = if *name == "null is not missing" {
                &["exact", "superset"]
            } else {
                &["exact", "superset", "subset"]
            };
            for (mode, w) in MODES.iter().zip(want) {
                for am in arg_modes.iter().copied() {
                    assert_eq!(
                        verdict(mode, calls.clone(), am, a),
                        *w,
                        "{name}: mode {mode}, argsMatch {am}"
                    );
                }
            }
        }
    }

    #[test]
    fn null_against_a_missing_key_under_subset() {
        let a = [("f", json!({}), None)];
        assert!(verdict(
            "exact",
            json!([{"tool":"f","args":{"n":null}}]),
            "subset",
            &a
        ));
        assert!(!verdict(
            "exact",
            json!([{"tool":"f","args":{"n":null}}]),
            "superset",
            &a
        ));
    }

    #[test]
    fn args_recorded_as_json_strings_compare_as_objects() {
        // The reader parses a top-level `args` string holding an object; key order is irrelevant.
        let text = format!(
            "{}\n{}\n",
            r#"{"kind":"header","format":"tracereplay.trace","version":1,"scenario":"s"}"#,
            r#"{"kind":"tool_call","seq":1,"call_id":"c","tool":"f","args":"{\"b\":[1,2],\"a\":{\"y\":1,\"x\":6.0}}"}"#
        );
        let file = crate::trace::TraceFile::from_bytes("t.trace.ndjson", text.into_bytes(), false);
        let seal = file.verify_seal(false).unwrap();
        let parsed =
            crate::trace::parse_trace(&file, &seal, crate::trace::Limits::default()).unwrap();
        let facts = Facts::new(&parsed.trace);
        let a = actual_calls(&facts);
        for mode in MODES {
            let c = cfg(
                mode,
                json!([{"tool":"f","args":{"a":{"x":6,"y":1},"b":[1,2]}}]),
                "exact",
            );
            assert_eq!(
                judge_sequence(&c, &a).verdict,
                super::super::Verdict::Pass,
                "{mode}"
            );
        }
    }

    #[test]
    fn args_match_modes_keep_their_direction_in_every_mode() {
        // Expected {a:1}; actual {a:1, b:2}: superset holds (actual has more), subset does not.
        let calls = json!([{"tool":"f","args":{"a":1}}]);
        let a = [("f", json!({"a":1,"b":2}), None)];
        for mode in MODES {
            assert!(!verdict(mode, calls.clone(), "exact", &a), "{mode} exact");
            assert!(
                verdict(mode, calls.clone(), "superset", &a),
                "{mode} superset"
            );
            assert!(!verdict(mode, calls.clone(), "subset", &a), "{mode} subset");
            assert!(verdict(mode, calls.clone(), "ignore", &a), "{mode} ignore");
        }
        let calls = json!([{"tool":"f","args":{"a":1,"b":2}}]);
        let a = [("f", json!({"a":1}), None)];
        for mode in MODES {
            assert!(
                verdict(mode, calls.clone(), "subset", &a),
                "{mode} subset, reversed"
            );
            assert!(
                !verdict(mode, calls.clone(), "superset", &a),
                "{mode} superset, reversed"
            );
        }
        // `args: {}` under exact means no arguments; no `args` means any.
        assert!(!verdict(
            "exact",
            json!([{"tool":"f","args":{}}]),
            "exact",
            &[("f", json!({"x":1}), None)]
        ));
        assert!(verdict(
            "exact",
            json!([{"tool":"f"}]),
            "exact",
            &[("f", json!({"x":1}), None)]
        ));
    }

    #[test]
    fn pairing_is_optimal_not_greedy() {
        // The issue's example: greedy would pair f{} with f{a:1} and strand f{a:1}.
        let calls = json!([{"tool":"f","args":{}},{"tool":"f","args":{"a":1}}]);
        for order in [
            [json!({"a":1}), json!({"b":2})],
            [json!({"b":2}), json!({"a":1})],
        ] {
            let a: Vec<_> = order.iter().map(|x| ("f", x.clone(), None)).collect();
            assert!(
                verdict("superset", calls.clone(), "superset", &a),
                "{order:?}"
            );
            assert!(
                verdict("unordered", calls.clone(), "superset", &a),
                "{order:?}"
            );
        }
    }

    #[test]
    fn batches_run_in_any_order_unless_strict() {
        let calls = json!([{"tool":"f"},{"tool":"g"},{"tool":"h"}]);
        let a = [
            ("g", json!({}), Some(1)),
            ("f", json!({}), Some(1)),
            ("h", json!({}), None),
        ];
        assert!(verdict("exact", calls.clone(), "exact", &a));
        assert!(verdict("in-order", calls.clone(), "exact", &a));
        let spec = OracleSpec {
            index: 0,
            params: serde_json::from_value(
                json!({"type":"tool-sequence","mode":"exact","calls":calls,"batchOrder":"strict"}),
            )
            .unwrap(),
        };
        assert!(
            judge_sequence(&configure(&spec).unwrap(), &actual(&a)).verdict
                != super::super::Verdict::Pass
        );
        // Calls of different batches keep their order.
        let b = [
            ("g", json!({}), Some(1)),
            ("f", json!({}), Some(2)),
            ("h", json!({}), None),
        ];
        assert!(!verdict("exact", calls.clone(), "exact", &b));
        // in-order with a batch among extra calls.
        let c = [
            ("x", json!({}), None),
            ("g", json!({}), Some(3)),
            ("f", json!({}), Some(3)),
            ("y", json!({}), None),
            ("h", json!({}), None),
        ];
        assert!(verdict("in-order", calls, "exact", &c));
    }

    #[test]
    fn overrides_and_tools_shorthand() {
        let spec = |p: Value| OracleSpec {
            index: 0,
            params: serde_json::from_value(p).unwrap(),
        };
        let s = spec(
            json!({"type":"tool-sequence","mode":"exact","calls":[{"tool":"write","args":{"path":"a","content":"x"}},{"tool":"order","args":{"order":{"id":7,"note":"n"}}}],
            "argsMatchOverrides":{"WRITE":"ignore","order":["order.id"]}}),
        );
        let a = actual(&[
            ("write", json!({"path":"b"}), None),
            ("order", json!({"order":{"id":7.0,"note":"other"}}), None),
        ]);
        assert_eq!(
            judge_sequence(&configure(&s).unwrap(), &a).verdict,
            super::super::Verdict::Pass
        );
        let s = spec(json!({"type":"tool-sequence","mode":"in_order","tools":["read","write"]}));
        let a = actual(&[
            ("read", json!({"p":1}), None),
            ("other", json!({}), None),
            ("write", json!({}), None),
        ]);
        assert_eq!(
            judge_sequence(&configure(&s).unwrap(), &a).verdict,
            super::super::Verdict::Pass
        );
    }

    #[test]
    fn misconfigurations_are_named() {
        for (params, needle) in [
            (json!({"calls":[]}), "`mode` is required"),
            (json!({"mode":"fuzzy","calls":[]}), "`mode` `fuzzy`"),
            (json!({"mode":"exact"}), "give `calls` or `tools`"),
            (json!({"mode":"exact","calls":[],"tools":[]}), "not both"),
            (
                json!({"mode":"exact","calls":[{"tool":"f","args":null}]}),
                "`calls[0].args` is null",
            ),
            (
                json!({"mode":"exact","calls":[{"args":{}}]}),
                "`calls[0]` has no `tool`",
            ),
            (
                json!({"mode":"exact","calls":[],"argsMatch":"loose"}),
                "`argsMatch` `loose`",
            ),
            (
                json!({"mode":"exact","calls":[],"batchOrder":"random"}),
                "`batchOrder`",
            ),
        ] {
            let spec = OracleSpec {
                index: 0,
                params: serde_json::from_value(params.clone()).unwrap(),
            };
            let err = configure(&spec).unwrap_err();
            assert!(err.contains(needle), "{params}: {err}");
        }
    }

    #[test]
    fn failure_evidence_names_the_unplaced_call_and_the_closest_candidate() {
        let c = cfg(
            "superset",
            json!([{"tool":"read","args":{"path":"A.md"}},{"tool":"write","args":{"path":"out.txt","content":"x"}}]),
            "exact",
        );
        let a = actual(&[
            ("read", json!({"path":"A.md"}), None),
            ("write", json!({"path":"out.txt","content":"y"}), None),
            ("write", json!({"path":"other","content":"z"}), None),
        ]);
        let r = judge_sequence(&c, &a);
        assert_eq!(r.verdict, super::super::Verdict::Fail);
        assert_eq!(r.evidence, vec![2]);
        assert_eq!(
            r.message,
            "expected call 1 `write` was not matched in mode `superset`; the closest actual call is seq 2, differing in `content`"
        );
        assert_eq!(r.found.as_ref().unwrap()["differs"], json!(["content"]));
        // subset: the lowest unplaced actual call.
        let c = cfg("subset", json!([{"tool":"read"}]), "exact");
        let r = judge_sequence(
            &c,
            &actual(&[
                ("read", json!({}), None),
                ("shell", json!({"cmd":"ls"}), None),
            ]),
        );
        assert_eq!(
            (r.evidence.clone(), r.message.as_str()),
            (
                vec![2],
                "actual call at seq 2 `shell` is not allowed in mode `subset`: no expected call of that tool"
            )
        );
    }
}
