//! `trials plan`: a policy's operating characteristic, the trials per side a drift check needs,
//! and what a suite's cases can see — each figure against reference values SciPy computes
//! independently (its binomial distribution and Fisher's exact test), to the printed digit.

use serde_json::Value;

use crate::trials::suite;
use crate::util::*;

/// The reference plan, by SciPy: reads the question as JSON on argv[1], prints the answers.
const REFERENCE: &str = r#"
import json, sys
from scipy.stats import binom, fisher_exact, norm

q = json.loads(sys.argv[1])

def wilson_lower(c, n, conf):
    z = norm.ppf(conf)
    p = c / n
    centre = p + z * z / (2 * n)
    spread = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5)
    return (centre - spread) / (1 + z * z / n)

def needed(policy, n):
    rule = policy["pass"]
    if rule == "all":
        return n
    if "at-least" in rule:
        return rule["at-least"] if rule["at-least"] <= n else None
    for c in range(n + 1):
        if wilson_lower(c, n, rule.get("confidence", 0.95)) >= rule["rate"]:
            return c
    return -1  # none passes

def oc(policy, n, p):
    c = needed(policy, n)
    if c is None:
        return None
    if c < 0:
        return 0.0
    return float(binom.sf(c - 1, n, p))

def power(na, nc, p0, p1, level):
    total = 0.0
    for a in range(na + 1):
        for c in range(nc + 1):
            pv = fisher_exact([[a, na - a], [c, nc - c]], alternative="greater").pvalue
            if pv <= level * (1 + 1e-7):
                total += binom.pmf(a, na, p0) * binom.pmf(c, nc, p1)
    return total

def expected(policy, p):
    top, least = policy["max"], policy.get("min", 1)
    t = needed(policy, top)
    dist, e = {0: 1.0}, 0.0
    for n in range(top + 1):
        for c in list(dist):
            if n >= least and (t < 0 or c >= t or n - c > top - t):
                e += n * dist.pop(c)
        if n == top:
            break
        new = {}
        for c, w in dist.items():
            new[c] = new.get(c, 0.0) + w * (1 - p)
            new[c + 1] = new.get(c + 1, 0.0) + w * p
        dist = new
    return e

level = q["alpha"] / q["cases"]
out = {"level": level}
out["expected"] = [expected(q["policy"], p) for p in q["rates"]] if q["policy"].get("sequential") else None
out["oc"] = [[oc(q["policy"], n, p) for n in q["trials"]] for p in q["rates"]]
out["needed"] = [needed(q["policy"], n) for n in q["trials"]]
n = 1
while power(n, n, q["from"], q["to"], level) < q["power"]:
    n += 1
out["trials_per_side"] = n
out["power"] = power(n, n, q["from"], q["to"], level)
na, nc, p0 = q["detect"]
out["drop_to"] = None
for i in range(round(p0 * 100) - 1, -1, -1):
    if power(na, nc, p0, i / 100, level) >= q["power"]:
        out["drop_to"] = i / 100
        break
print(json.dumps(out))
"#;

fn reference(question: &str) -> Value {
    let python = test_python(
        "scipy",
        "SciPy (the reference values of the trials planner)",
    );
    let dir = tempfile::tempdir().unwrap();
    let code = format!("import sys\nsys.argv = ['ref', {question:?}]\n{REFERENCE}");
    let out = run_python(&python, &code, dir.path(), &[], &[], "the SciPy reference");
    serde_json::from_str(out.trim()).unwrap()
}

/// `got` (printed to 6 decimals) is `want` to its last printed digit.
fn same(got: &Value, want: &Value, what: &str) {
    match (got.as_f64(), want.as_f64()) {
        (Some(g), Some(w)) => assert!((g - w).abs() <= 5e-7 + 1e-12, "{what}: {g} is not {w}"),
        _ => assert!(
            got.is_null() && want.is_null(),
            "{what}: {got} is not {want}"
        ),
    }
}

fn plan(env: &Env, args: &[&str]) -> Value {
    let mut all = vec!["trials", "plan", "--json"];
    all.extend_from_slice(args);
    let out = env.run(&all);
    assert_eq!(out.code, 0, "{}", out.stderr);
    json(&out)
}

#[test]
fn a_policys_operating_characteristic_and_the_trials_a_drop_needs_are_scipys() {
    let env = Env::new();
    for (policy, trials, rates) in [
        (
            r#"{"min":8,"pass":{"at-least":6}}"#,
            "4,8,12",
            "0.3,0.5,0.7,0.85,0.9,0.99",
        ),
        (
            r#"{"min":8,"pass":{"rate":0.7,"confidence":0.9}}"#,
            "8,13,20",
            "0.5,0.75,0.9,0.97",
        ),
        (r#"{"min":3,"pass":"all"}"#, "1,3,7", "0.5,0.9,0.999"),
        (
            r#"{"max":8,"pass":{"at-least":6},"sequential":true}"#,
            "8",
            "0.3,0.5,0.75,0.9,1",
        ),
        (
            r#"{"min":2,"max":10,"pass":{"rate":0.6,"confidence":0.8},"sequential":true}"#,
            "10,5",
            "0.2,0.6,0.95",
        ),
        (r#"{"min":8,"pass":{"rate":0.75}}"#, "8,30", "0.8,0.95"),
    ] {
        let got = plan(
            &env,
            &[
                "--policy", policy, "--trials", trials, "--rates", rates, "--from", "0.95", "--to",
                "0.3", "--power", "0.9", "--cases", "4", "--alpha", "0.1",
            ],
        );
        let question = format!(
            r#"{{"policy":{policy},"trials":[{trials}],"rates":[{rates}],"from":0.95,"to":0.3,"power":0.9,"cases":4,"alpha":0.1,"detect":[4,4,0.95]}}"#
        );
        let want = reference(&question);
        let p = &got["policies"][0];
        assert_eq!(got["policies"].as_array().unwrap().len(), 1, "{got}");
        same(&got["level"], &want["level"], "level");
        let needed: Vec<Value> = (want["needed"].as_array().unwrap().iter())
            .map(|n| match n.as_i64() {
                Some(-1) => Value::Null,
                _ => n.clone(),
            })
            .collect();
        assert_eq!(p["passes_needed"], Value::from(needed), "{policy}");
        for (row, want_row) in
            (p["pass_probability"].as_array().unwrap().iter()).zip(want["oc"].as_array().unwrap())
        {
            for (cell, want_cell) in row
                .as_array()
                .unwrap()
                .iter()
                .zip(want_row.as_array().unwrap())
            {
                same(cell, want_cell, &format!("{policy}: P(pass)"));
            }
        }
        match want["expected"].as_array() {
            Some(e) => {
                let got_e = p["expected_trials"]
                    .as_array()
                    .unwrap_or_else(|| panic!("{p}"));
                for (g, w) in got_e.iter().zip(e) {
                    same(g, w, &format!("{policy}: mean trials recorded"));
                }
            }
            None => assert!(p.get("expected_trials").is_none(), "{p}"),
        }
        assert_eq!(got["drift"]["trials_per_side"], want["trials_per_side"]);
        same(&got["drift"]["power"], &want["power"], "power");
    }
}

#[test]
fn a_suites_cases_say_what_their_trials_can_see_against_their_approved_sets() {
    let env = Env::new();
    suite(&env, "High", "", &["search"; 4]);
    let out = env.run_with(&["baseline", "approve", "traces/"], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // Three of four pass now.
    crate::trials::write_trials(&env, "traces/s/c", &["search", "other", "search", "search"]);
    let got = plan(&env, &["--power", "0.9", "--cases", "8", "--alpha", "0.1"]);
    let c = &got["suite"][0];
    assert_eq!(got["suite"].as_array().unwrap().len(), 1, "{got}");
    assert_eq!(
        (c["scenario"].as_str(), c["case"].as_str()),
        (Some("s"), Some("c"))
    );
    assert_eq!(c["approved"], serde_json::json!({"n": 4, "passed": 4}));
    assert_eq!(c["current"], serde_json::json!({"n": 4, "passed": 3}));
    same(&c["smallest_p"], &Value::from(1.0 / 70.0), "1 / C(8, 4)");
    // 1/70 is above 0.1 / 8: four and four trials cannot show a regression here.
    assert_eq!(c["can_show_regression"], false);
    assert_eq!(c["from"], 1.0);
    let wider = plan(&env, &["--power", "0.9", "--cases", "1", "--alpha", "0.1"]);
    let c = &wider["suite"][0];
    assert_eq!(c["can_show_regression"], true);
    let want = reference(
        r#"{"policy":{"min":1,"pass":"all"},"trials":[1],"rates":[0.5],"from":0.95,"to":0.3,"power":0.9,"cases":1,"alpha":0.1,"detect":[4,4,1.0]}"#,
    );
    same(
        &c["smallest_drop_to"],
        &want["drop_to"],
        "the smallest drop seen",
    );
    // The human plan says the same.
    let out = env.run(&[
        "trials", "plan", "--power", "0.9", "--cases", "1", "--alpha", "0.1",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("s/c: 4/4 approved, 3/4 pass now: sees a drop from 1.00 to"),
        "{}",
        out.stdout
    );
}

#[test]
fn bad_questions_are_refused_by_name() {
    let env = Env::new();
    for (args, says) in [
        (
            vec!["--from", "0.5", "--to", "0.9"],
            "must be below `--from`",
        ),
        (vec!["--rates", "1.5"], "`--rates` must be between 0 and 1"),
        (vec!["--trials", "0"], "`--trials` must be from 1 to"),
        (vec!["--policy", "{\"min\":0}"], "`--policy`: `trials.min`"),
        (vec!["--policy", "nope"], "`--policy` is not JSON"),
    ] {
        let mut all = vec!["trials", "plan", "--policy", r#"{"min":4}"#];
        if args[0] == "--policy" {
            all.truncate(2);
        }
        all.extend_from_slice(&args);
        let out = env.run(&all);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stdout);
        assert!(out.stderr.contains(says), "{args:?}: {}", out.stderr);
    }
}

/// SciPy's check of a group-sequential plan: for the printed levels, the exact type-I error of
/// stopping by each look (worst common pass rate of the grid) is the printed one and within the
/// α spent; the next p-value the test can take at a look would overspend (the levels are the
/// largest that fit); and the power and expected trials are the printed ones.
const GROUP_REFERENCE: &str = r#"
import json, math, sys
from functools import lru_cache
from scipy.stats import binom, fisher_exact, norm

q = json.loads(sys.argv[1])
g = q["plan"]
na, looks, alpha = g["approved"], g["looks"], g["alpha"]

@lru_cache(maxsize=None)
def fisher(a, c, n):
    return fisher_exact([[a, na - a], [c, n - c]], alternative="greater").pvalue

def rejections(levels, pa, pc):
    per = [0.0] * len(levels)
    for a in range(na + 1):
        wa = binom.pmf(a, na, pa)
        dist, before = {0: 1.0}, 0
        for k, (n, lv) in enumerate(zip(looks, levels)):
            new = {}
            for c, d in dist.items():
                for x in range(n - before + 1):
                    new[c + x] = new.get(c + x, 0.0) + d * binom.pmf(x, n - before, pc)
            for c in list(new):
                if fisher(a, c, n) <= lv * (1 + 1e-7):
                    per[k] += wa * new.pop(c)
            dist, before = new, n
    return per

def worst(levels):
    out = [0.0] * len(levels)
    for i in range(1, 100):
        p, total = i / 100, 0.0
        for k, r in enumerate(rejections(levels, p, p)):
            total += r
            out[k] = max(out[k], total)
    return out

def spent(t):
    if g["spending"] == "pocock":
        return alpha * math.log(1 + (math.e - 1) * t)
    return 2 * (1 - norm.cdf(norm.ppf(1 - alpha / 2) / math.sqrt(t)))

levels = g["nominal"]
out = {"spent": [float(spent(n / looks[-1])) for n in looks], "type_one": [float(x) for x in worst(levels)], "overspends": []}
for k, n in enumerate(looks):
    above = sorted({fisher(a, c, n) for a in range(na + 1) for c in range(n + 1)} - {0})
    above = [v for v in above if v > levels[k] * (1 + 1e-6)]
    if above:
        trial = levels[:k] + [above[0]]
        out["overspends"].append(bool(worst(trial)[k] > out["spent"][k]))
    else:
        out["overspends"].append(True)
r = rejections(levels, q["from"], q["to"])
out["power"] = float(sum(r))
out["expected"] = float(sum(n * p for n, p in zip(looks, r)) + looks[-1] * (1 - sum(r)))
print(json.dumps(out))
"#;

#[test]
fn a_group_sequential_plans_boundaries_are_exact_and_the_largest_that_hold_alpha() {
    let env = Env::new();
    let python = test_python(
        "scipy",
        "SciPy (the reference values of the trials planner)",
    );
    for spending in ["obrien-fleming", "pocock"] {
        let got = plan(
            &env,
            &[
                "--policy",
                r#"{"min":8}"#,
                "--looks",
                "2,4,6,8",
                "--spending",
                spending,
                "--from",
                "0.9",
                "--to",
                "0.3",
                "--cases",
                "1",
                "--alpha",
                "0.1",
            ],
        );
        let g = &got["group_sequential"];
        assert_eq!(g["approved"], 8, "{got}");
        let question = serde_json::json!({"plan": g, "from": 0.9, "to": 0.3}).to_string();
        let dir = tempfile::tempdir().unwrap();
        let code = format!("import sys\nsys.argv = ['ref', {question:?}]\n{GROUP_REFERENCE}");
        let out = run_python(&python, &code, dir.path(), &[], &[], "the SciPy reference");
        let want: Value = serde_json::from_str(out.trim()).unwrap();
        for k in 0..4 {
            same(&g["spent"][k], &want["spent"][k], "α spent");
            same(&g["type_one"][k], &want["type_one"][k], "type-I error");
            let (t1, spent) = (
                want["type_one"][k].as_f64().unwrap(),
                want["spent"][k].as_f64().unwrap(),
            );
            assert!(t1 <= spent + 1e-12, "{spending} look {k}: {t1} > {spent}");
            assert_eq!(
                want["overspends"][k], true,
                "{spending} look {k}: a larger level fits"
            );
        }
        same(&g["power"], &want["power"], "power");
        same(&g["expected_trials"], &want["expected"], "expected trials");
    }
}

#[test]
fn a_scenarios_drift_design_is_planned_as_its_looks_would_be() {
    // A scenario's `trials.drift` is planned as `--looks` plans the same design (whose figures
    // the test above checks against SciPy), at the suite's per-case level.
    let env = Env::new();
    env.write(
        "traces/s/s.scenario.json",
        r#"{"id":"s","title":"t","risk":"High","trials":{"min":4,"drift":{"looks":[4,8],"spending":"pocock"}},"oracles":[{"type":"tool-called","tool":"search"}]}"#,
    );
    let from_scenario = plan(&env, &["--cases", "2"]);
    let policy = &from_scenario["policies"][0];
    assert_eq!(
        policy["policy"]["drift"],
        serde_json::json!({"looks": [4, 8], "spending": "pocock"})
    );
    let looks = plan(
        &env,
        &["--cases", "2", "--looks", "4,8", "--spending", "pocock"],
    );
    assert_eq!(policy["group_sequential"], looks["group_sequential"]);
    assert_eq!(policy["group_sequential"]["alpha"], 0.025);
    let human = env.run(&["trials", "plan", "--cases", "2"]);
    assert!(
        human.stdout.contains(
            "Group-sequential drift: looks after 4, 8 current trials against 8 approved, pocock spending of α = 0.025000:"
        ),
        "{}",
        human.stdout
    );
}
