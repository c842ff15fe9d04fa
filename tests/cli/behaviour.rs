//! The behaviour oracles end to end: in a scenario under `check`, `lint --behaviour` over a
//! suite (never failing it), `gates` suggestions, and on real tau-bench recordings, where an
//! independent script counts the same repeated calls and retry spirals.

use crate::real_corpora::corpus;
use crate::util::{END, Env, json, row, sealed_zst, trace_text};

fn call(id: &str, tool: &str, args: &str) -> String {
    format!(r#"{{"kind":"tool_call","call_id":"{id}","tool":"{tool}","args":{args}}}"#)
}

fn failed(id: &str) -> String {
    format!(r#"{{"kind":"tool_result","call_id":"{id}","ok":false,"error":"timeout"}}"#)
}

/// A suite of scenario `pay` with a looping trace and a clean one.
fn suite(env: &Env, oracles: &str) {
    env.write(
        "traces/pay/pay.scenario.json",
        format!(r#"{{"id":"pay","title":"t","risk":"High","oracles":{oracles}}}"#),
    );
    let loop_ = [
        call("c1", "pay", r#"{"id":7}"#),
        failed("c1"),
        call("c2", "pay", r#"{"id":7}"#),
        failed("c2"),
        call("c3", "pay", r#"{"id":7}"#),
        failed("c3"),
        call("c4", "pay", r#"{"id":7}"#),
        failed("c4"),
        END.to_owned(),
    ];
    let lines: Vec<&str> = loop_.iter().map(String::as_str).collect();
    env.write(
        "traces/pay/loop.trace.ndjson.zst",
        sealed_zst(&trace_text("pay", "loop", &lines)),
    );
    let ok = [
        call("c1", "pay", r#"{"id":7}"#),
        r#"{"kind":"tool_result","call_id":"c1","ok":true,"output":"paid"}"#.to_owned(),
        r#"{"kind":"final_answer","text":"Paid."}"#.to_owned(),
        END.to_owned(),
    ];
    let lines: Vec<&str> = ok.iter().map(String::as_str).collect();
    env.write(
        "traces/pay/ok.trace.ndjson.zst",
        sealed_zst(&trace_text("pay", "ok", &lines)),
    );
}

#[test]
fn behaviour_oracles_judge_traces_in_check() {
    let env = Env::new();
    suite(
        &env,
        r#"[{"type":"no-repeated-call"},{"type":"no-retry-spiral"},{"type":"tool-errors-handled"},{"type":"step-status","tool":"pay"}]"#,
    );
    let out = env.run(&["check", "--format", "json"]);
    assert_eq!(out.code, 1, "{out:?}");
    let report = json(&out);
    assert_eq!(row(&report, "/ok.trace.ndjson.zst")["verdict"], "pass");
    let looping = row(&report, "/loop.trace.ndjson.zst");
    let verdicts: Vec<(&str, &str)> = (looping["oracles"].as_array().unwrap().iter())
        .map(|o| (o["type"].as_str().unwrap(), o["verdict"].as_str().unwrap()))
        .collect();
    assert_eq!(
        verdicts[..4],
        [
            ("no-repeated-call", "fail"),
            ("no-retry-spiral", "fail"),
            ("tool-errors-handled", "fail"),
            ("step-status", "fail")
        ],
        "{looping:#}"
    );
    assert_eq!(
        looping["oracles"][0]["evidence"],
        serde_json::json!([1, 3, 5, 7])
    );
}

#[test]
fn lint_behaviour_lists_findings_without_failing_and_gates_suggests_the_oracles() {
    let env = Env::new();
    suite(&env, r#"[{"type":"tool-called","tool":"pay"}]"#);
    let out = env.run(&["lint", "--behaviour", "--format", "json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let findings = json(&out);
    let kinds: Vec<&str> = (findings.as_array().unwrap().iter())
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["no-repeated-call", "no-retry-spiral", "tool-errors-handled"],
        "{findings:#}"
    );
    assert!(
        findings
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["fails"] == false)
    );
    assert!(
        findings[0]["file"]
            .as_str()
            .unwrap()
            .ends_with("loop.trace.ndjson.zst")
    );
    let human = env.run(&["lint", "--behaviour"]);
    assert_eq!(human.code, 0, "{human:?}");
    assert!(
        human.stdout.contains("3 finding(s), 0 failing"),
        "{human:?}"
    );
    // Without `--behaviour`, the lint is the privacy lint alone.
    let plain = env.run(&["lint", "--format", "json"]);
    assert_eq!(json(&plain), serde_json::json!([]), "{plain:?}");

    let gates = env.run(&["gates"]);
    assert_eq!(gates.code, 0, "{gates:?}");
    for oracle in ["no-repeated-call", "no-retry-spiral", "tool-errors-handled"] {
        assert!(
            gates.stdout.contains(&format!(
                "suggestion: `{oracle}` would fail on 1 of its trace(s)"
            )),
            "{oracle}: {gates:?}"
        );
    }
    // Declared, it is not suggested again.
    suite(
        &env,
        r#"[{"type":"tool-called","tool":"pay"},{"type":"no-repeated-call"}]"#,
    );
    let gates = env.run(&["gates"]);
    assert!(
        !gates.stdout.contains("suggestion: `no-repeated-call`"),
        "{gates:?}"
    );
    assert!(
        gates.stdout.contains("suggestion: `no-retry-spiral`"),
        "{gates:?}"
    );
}

/// Counts, from tau-bench's own JSON, the runs in which some call (tool, canonical arguments)
/// is made more than twice, and those in which a failed call (content `Error: …`) is retried
/// unchanged more than twice in a row with no user turn between.
const COUNT: &str = r#"
import json, sys
def canon(a):
    try: v = json.loads(a)
    except Exception: return json.dumps(a)
    return json.dumps(v, sort_keys=True, separators=(',', ':'))
runs = json.load(open(sys.argv[1]))
repeated = spiral = 0
for r in runs:
    msgs = r['traj']
    results = {m['tool_call_id']: m for m in msgs if m.get('role') == 'tool'}
    seq = []
    for m in msgs:
        if m.get('role') == 'user':
            seq.append(None)
        if m.get('role') != 'assistant':
            continue
        for c in m.get('tool_calls') or []:
            res = results.get(c['id'])
            if res is None:
                continue
            key = (c['function']['name'].lower(), canon(c['function']['arguments']))
            seq.append((key, str(res.get('content', '')).startswith('Error: ')))
    counts = {}
    for s in seq:
        if s:
            counts[s[0]] = counts.get(s[0], 0) + 1
    if any(n > 2 for n in counts.values()):
        repeated += 1
    best = cur = 0
    prev = None
    for s in seq:
        if s is None:
            prev, cur = None, 0
            continue
        cur = cur + 1 if prev and prev[1] and prev[0] == s[0] else 0
        best, prev = max(best, cur), s
    if best > 2:
        spiral += 1
print(json.dumps({"no-repeated-call": repeated, "no-retry-spiral": spiral}))
"#;

#[test]
fn on_tau_bench_the_lint_finds_what_an_independent_count_finds() {
    let Some(dir) = corpus("tau-bench") else {
        return;
    };
    let input = dir.join("historical_trajectories/gpt-4o-airline.json");
    let env = Env::new();
    let out = env.run(&["ingest", "--unkeyed", "-o", "t", input.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lint = env.run(&["lint", "--behaviour", "t", "--format", "json"]);
    assert_eq!(lint.code, 0, "{lint:?}");
    let mut found: std::collections::BTreeMap<String, u64> = Default::default();
    for f in json(&lint).as_array().unwrap() {
        *found
            .entry(f["kind"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    let counted = std::process::Command::new("python3")
        .args(["-c", COUNT, input.to_str().unwrap()])
        .output()
        .expect("python3 runs the independent count");
    assert!(counted.status.success(), "{counted:?}");
    let counted: serde_json::Value = serde_json::from_slice(&counted.stdout).unwrap();
    for oracle in ["no-repeated-call", "no-retry-spiral"] {
        assert_eq!(
            found.get(oracle).copied().unwrap_or(0),
            counted[oracle].as_u64().unwrap(),
            "{oracle}: {found:?} against {counted}"
        );
    }
    // The recordings do repeat calls: 4 of the 200 runs call something more than twice alike.
    assert_eq!(counted["no-repeated-call"], 4);
    // tau-bench's `Error: …` tool answers are failed results, which the oracles see.
    let raw: serde_json::Value = serde_json::from_slice(&std::fs::read(&input).unwrap()).unwrap();
    let errors = (raw.as_array().unwrap().iter())
        .flat_map(|r| r["traj"].as_array().unwrap().iter())
        .filter(|m| {
            m["role"] == "tool"
                && m["content"]
                    .as_str()
                    .is_some_and(|c| c.starts_with("Error: "))
        })
        .count();
    let failed = (crate::real_corpora::traces(&env, "t").iter().flatten())
        .filter(|e| e["kind"] == "tool_result" && e["ok"] == false)
        .count();
    assert_eq!((failed, errors), (73, 73));
}

#[test]
fn gates_strength_measures_behaviour_oracles_with_loops_spirals_and_failed_results() {
    let env = Env::new();
    let ok = [
        call("c1", "pay", r#"{"id":7}"#),
        r#"{"kind":"tool_result","call_id":"c1","ok":true,"output":"paid"}"#.to_owned(),
        r#"{"kind":"final_answer","text":"Paid."}"#.to_owned(),
        END.to_owned(),
    ];
    let lines: Vec<&str> = ok.iter().map(String::as_str).collect();
    env.write(
        "traces/pay/ok.trace.ndjson.zst",
        sealed_zst(&trace_text("pay", "ok", &lines)),
    );
    let scenario = |oracles: &str| {
        env.write(
            "traces/pay/pay.scenario.json",
            format!(r#"{{"id":"pay","title":"t","risk":"High","oracles":{oracles}}}"#),
        );
    };
    // Without a behaviour oracle, strength is measured as before: no behaviour mutant.
    scenario(r#"[{"type":"tool-called","tool":"pay"}]"#);
    let before = env.run(&["gates", "--strength"]);
    assert!(before.stdout.contains("1/6 mutants caught"), "{before:?}");
    assert!(!before.stdout.contains("loop-call"), "{before:?}");
    // With them, the loop, the retry spiral and the failed result are made, and caught.
    scenario(
        r#"[{"type":"tool-called","tool":"pay"},{"type":"no-repeated-call"},{"type":"no-retry-spiral"},{"type":"step-status","tool":"pay"}]"#,
    );
    let after = env.run(&["gates", "--strength"]);
    assert_eq!(after.code, 0, "{after:?}");
    assert!(after.stdout.contains("mutants caught"), "{after:?}");
    for op in ["loop-call", "retry-spiral", "fail-result"] {
        assert!(
            !after.stdout.contains(&format!("survived: {op}")),
            "{op}: {after:?}"
        );
    }
    // A scenario with only `tool-errors-handled` lets the loop survive, and says so.
    scenario(r#"[{"type":"tool-called","tool":"pay"},{"type":"tool-errors-handled"}]"#);
    let weak = env.run(&["gates", "--strength"]);
    assert!(
        weak.stdout.contains("survived: loop-call (seq 1)"),
        "{weak:?}"
    );
}
