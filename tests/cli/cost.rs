//! Cost and tokens: recorded and priced costs (tau2-bench's own figures), `max-cost`, limits
//! over a case's trials, suite budgets and the totals in the reports.

use crate::real_corpora::corpus;
use crate::util::{Env, json};

const HEADER: &str = r#"{"kind":"header","format":"tracereplay.trace","version":1,"scenario":"cost.case","case":"CASE","model":"gpt-4.1"TRIAL}"#;

/// A trace of `requests` inferences of `input`/`output` tokens each (`cost` recorded when set).
fn trace(
    case: &str,
    trial: Option<u32>,
    requests: usize,
    tokens: (u64, u64),
    cost: Option<f64>,
) -> String {
    let trial = trial.map_or(String::new(), |t| format!(r#","trial":{t}"#));
    let mut lines = vec![HEADER.replace("CASE", case).replace("TRIAL", &trial)];
    for i in 0..requests {
        let mut usage = serde_json::json!({"input_tokens": tokens.0, "output_tokens": tokens.1});
        if let Some(c) = cost {
            usage["cost_usd"] = serde_json::json!(c);
        }
        lines.push(
            serde_json::json!({"kind": "inference", "seq": i + 1, "output": {"text": "ok"}, "usage": usage})
                .to_string(),
        );
    }
    lines.push(format!(
        r#"{{"kind":"final_answer","seq":{},"text":"ok"}}"#,
        requests + 1
    ));
    lines.push(format!(
        r#"{{"kind":"run_end","seq":{},"status":"completed"}}"#,
        requests + 2
    ));
    lines.join("\n") + "\n"
}

fn scenario(env: &Env, oracles: serde_json::Value) {
    let s =
        serde_json::json!({"id": "cost.case", "title": "t", "risk": "High", "oracles": oracles});
    env.write("traces/cost.scenario.json", s.to_string());
}

const PRICES: &str = "[models.\"gpt-4.1\"]\ninput = 2\noutput = 8\n";

#[test]
fn max_cost_prices_recorded_tokens_and_never_passes_an_unknown_cost() {
    let env = Env::new();
    scenario(
        &env,
        serde_json::json!([{"type": "max-cost", "limit": 0.01}]),
    );
    // 2 × (1000 × $2 + 100 × $8) per million = $0.0056.
    env.write(
        "traces/a.trace.ndjson",
        trace("default", None, 2, (1000, 100), None),
    );
    // Without a price table the cost is unknown: not evaluable, a failure.
    let out = env.run(&["check", "traces", "--format", "json"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let r = json(&out);
    let o = &r["results"][0]["oracles"][0];
    assert_eq!(o["verdict"], "not-evaluable", "{o}");
    assert!(
        o["message"]
            .as_str()
            .unwrap()
            .contains("model `gpt-4.1`; price it in `prices.toml`"),
        "{o}"
    );
    // `prices.toml` at the project's root prices it.
    env.write("prices.toml", PRICES);
    let out = env.run(&["check", "traces", "--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let r = json(&out);
    assert_eq!(
        r["results"][0]["oracles"][0]["message"],
        "cost $0.0056, limit $0.01"
    );
    assert_eq!(r["results"][0]["usage"]["cost_usd"], 0.0056);
    assert_eq!(
        r["results"][0]["usage"]["priced"], 2,
        "both requests priced from the table"
    );
    assert_eq!(r["summary"]["usage"]["cost_usd"], 0.0056);
    // A changed price is a changed context: the cached row is not reused.
    env.write(
        "prices.toml",
        "[models.\"gpt-*\"]\ninput = 4\noutput = 16\n",
    );
    let out = env.run(&["check", "traces", "--format", "json"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(json(&out)["summary"]["usage"]["cost_usd"], 0.0112);
    // A recorded cost is kept, whatever the table says.
    env.write(
        "traces/a.trace.ndjson",
        trace("default", None, 2, (1000, 100), Some(0.001)),
    );
    let out = env.run(&["check", "traces", "--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(json(&out)["summary"]["usage"]["cost_usd"], 0.002);
    // A bad table stops the run, naming the file and the key.
    env.write("prices.toml", "[models.\"gpt-4.1\"]\ninput = 2\n");
    let out = env.run(&["check", "traces"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("`prices.toml`: `models.\"gpt-4.1\"` has no `output` price"),
        "{}",
        out.stderr
    );
    // `--prices FILE` names another table.
    env.write("other.toml", PRICES);
    let out = env.run(&["check", "traces", "--prices", "other.toml"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn a_negative_recorded_cost_makes_the_trace_malformed() {
    let env = Env::new();
    scenario(&env, serde_json::json!([{"type": "max-cost", "limit": 1}]));
    env.write(
        "traces/a.trace.ndjson",
        trace("default", None, 1, (1, 1), Some(-0.5)),
    );
    let out = env.run(&["check", "traces", "--format", "json"]);
    assert_eq!(out.code, 1);
    let r = json(&out);
    assert_eq!(r["results"][0]["verdict"], "error");
    assert!(
        r["results"][0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`usage.cost_usd` must be a non-negative number"),
        "{}",
        r["results"][0]
    );
}

#[test]
fn budgets_fail_the_run_when_exceeded_or_uncheckable_and_every_report_shows_them() {
    let env = Env::new();
    scenario(
        &env,
        serde_json::json!([{"type": "max-tokens", "limit": 100000}]),
    );
    env.write(
        "traces/a.trace.ndjson",
        trace("a", None, 3, (1000, 100), Some(0.01)),
    );
    env.write(
        "traces/b.trace.ndjson",
        trace("b", None, 2, (500, 50), Some(0.02)),
    );
    // 3 × 1100 + 2 × 550 = 4400 tokens, $0.07.
    let out = env.run(&[
        "check",
        "traces",
        "--budget-tokens",
        "5000",
        "--budget-cost",
        "0.07",
    ]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stdout
            .contains("usage: 5 request(s), 4,000 input + 400 output tokens, $0.07"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("budget: token budget: 4,400 of 5,000 tokens used"),
        "{}",
        out.stdout
    );
    env.write("tracereplay.toml", "[budget]\ntokens = 4000\ncost = 0.05\n");
    let out = env.run(&["check", "traces", "--format", "json"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let r = json(&out);
    let budgets = r["summary"]["usage"]["budgets"].as_array().unwrap();
    assert_eq!(budgets.len(), 2);
    assert!(budgets.iter().all(|b| b["exceeded"] == true), "{budgets:?}");
    assert_eq!(r["summary"]["blocking"], 2);
    assert_eq!(
        budgets[1]["detail"],
        "cost budget exceeded: $0.07 spent, budget $0.05"
    );
    let config = env.run(&["config"]);
    assert!(
        config.stdout.contains("budget.tokens    4000"),
        "{}",
        config.stdout
    );
    // Every format says so.
    let junit = env.run(&["check", "traces", "--format", "junit"]);
    assert!(
        junit.stdout.contains("budget tokens") && junit.stdout.contains("type=\"budget\""),
        "{}",
        junit.stdout
    );
    let github = env.run(&["check", "traces", "--format", "github"]);
    assert!(
        github
            .stdout
            .contains("::error title=budget cost::cost budget exceeded"),
        "{}",
        github.stdout
    );
    let md = env.run(&["check", "traces", "--format", "markdown"]);
    assert!(
        md.stdout
            .contains("Budget: FAILED token budget exceeded: 4,400 tokens used, budget 4,000"),
        "{}",
        md.stdout
    );
    // A trace without usage makes the token budget uncheckable: a failure, never a pass.
    env.write("tracereplay.toml", "[budget]\ntokens = 1000000\n");
    env.write(
        "traces/c.trace.ndjson",
        HEADER.replace("CASE", "c").replace("TRIAL", "")
            + "\n{\"kind\":\"inference\",\"seq\":1}\n{\"kind\":\"run_end\",\"seq\":2,\"status\":\"completed\"}\n",
    );
    let out = env.run(&["check", "traces"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stdout
            .contains("cannot be checked: 1 of 6 request(s) record no usage"),
        "{}",
        out.stdout
    );
    // A bad budget is an error naming the key.
    env.write("tracereplay.toml", "[budget]\ntokens = -1\n");
    let out = env.run(&["check", "traces"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("`budget.tokens` must be a non-negative integer"),
        "{}",
        out.stderr
    );
}

#[test]
fn trial_limits_hold_the_median_and_maximum_of_a_cases_trials() {
    let env = Env::new();
    let oracle = |trials: serde_json::Value| serde_json::json!([{"type": "max-tokens", "limit": 100000, "trials": trials}]);
    // Four trials: 1100, 1100, 2200 and 9900 tokens (median 1650, maximum 9900).
    for (t, n) in [(0, 1), (1, 1), (2, 2), (3, 9)] {
        env.write(
            &format!("traces/{t}.trace.ndjson"),
            trace("default", Some(t), n, (1000, 100), None),
        );
    }
    scenario(
        &env,
        oracle(serde_json::json!({"median": 2000, "max": 10000})),
    );
    let out = env.run(&["check", "traces", "--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(json(&out)["cases"][0]["verdict"], "pass");
    scenario(
        &env,
        oracle(serde_json::json!({"median": 1600, "max": 5000})),
    );
    let out = env.run(&["check", "traces", "--format", "json"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let case = &json(&out)["cases"][0];
    assert_eq!(case["verdict"], "fail", "{case}");
    assert_eq!(
        case["reason"],
        "`0:max-tokens`: median 1650 over 4 trials exceeds 1600, maximum 9900 over 4 trials exceeds 5000"
    );
    // Every trial passed its own `limit`.
    assert_eq!(json(&out)["summary"]["failed"], 1);
    // Inside a composition `trials` is a misconfiguration.
    scenario(
        &env,
        serde_json::json!([{"type": "not", "oracle": {"type": "max-cost", "limit": 1, "trials": {"max": 1}}}]),
    );
    let out = env.run(&["gates", "traces"]);
    assert_ne!(out.code, 0);
    assert!(
        out.stdout.contains("belongs on a top-level oracle only")
            || out.stderr.contains("belongs on a top-level oracle only"),
        "{}{}",
        out.stdout,
        out.stderr
    );
}

/// tau2-bench records each message's cost. Claude Sonnet 4.5's agent messages are priced at
/// $3 / $15 per million tokens: with the recorded costs removed and that table given, the
/// computed total is tau2's own `agent_cost` sum; with them kept, the recorded total is.
#[test]
fn tau2_costs_from_a_price_table_agree_with_the_recorded_ones() {
    let Some(dir) = corpus("tau2-bench/pr80-aide-platform-e8163a39") else {
        return;
    };
    let file = dir.join("claude-sonnet-4-5_airline_default_gpt4.1_1trials.json");
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let sims = doc["simulations"].as_array_mut().unwrap();
    let recorded: f64 = sims.iter().map(|s| s["agent_cost"].as_f64().unwrap()).sum();
    let env = Env::new();
    env.write("recorded.json", doc.to_string());
    for s in doc["simulations"].as_array_mut().unwrap() {
        for m in s["messages"].as_array_mut().unwrap() {
            m.as_object_mut().unwrap().remove("cost");
        }
    }
    env.write("stripped.json", doc.to_string());
    let mut totals = Vec::new();
    // No `prices.toml` at the root: only `--prices` gives one.
    env.write(
        "table.toml",
        "[models.\"claude-sonnet-4*\"]\ninput = 3\noutput = 15\n",
    );
    for (input, prices) in [
        ("recorded.json", None),
        ("stripped.json", Some("table.toml")),
    ] {
        let dir = input.trim_end_matches(".json");
        let out = env.run(&["ingest", "--unkeyed", "--emit-scenarios", "-o", dir, input]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let mut args = vec!["check", dir, "--format", "json", "--fail-on", "none"];
        args.extend(prices.iter().flat_map(|p| ["--prices", p]));
        let out = env.run(&args);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let usage = json(&out)["summary"]["usage"].clone();
        assert_eq!(usage["requests"], 517, "{usage}");
        totals.push(usage["cost_usd"].as_f64().unwrap());
    }
    assert!(
        (totals[0] - recorded).abs() < 1e-6,
        "recorded {} vs tau2 {recorded}",
        totals[0]
    );
    assert!(
        (totals[1] - recorded).abs() < 1e-6,
        "priced {} vs tau2 {recorded}",
        totals[1]
    );
    assert!((recorded - 14.443248).abs() < 1e-6);
}

/// `gates --strength` inflates a run's usage for scenarios that hold runs to it.
#[test]
fn gates_strength_inflates_usage_where_a_scenario_meters_it() {
    let env = Env::new();
    scenario(
        &env,
        serde_json::json!([{"type": "max-tokens", "limit": 5000}]),
    );
    env.write(
        "traces/a.trace.ndjson",
        trace("default", None, 2, (1000, 100), None),
    );
    let out = env.run(&["gates", "traces", "--strength"]);
    assert!(out.stdout.contains("cost.case  1/"), "{}", out.stdout);
    assert!(
        !out.stdout.contains("survived: inflate-usage"),
        "{}",
        out.stdout
    );
    // A limit ten times the run's use lets the inflated run through: it survives.
    scenario(
        &env,
        serde_json::json!([{"type": "max-tokens", "limit": 22000}]),
    );
    let out = env.run(&["gates", "traces", "--strength"]);
    assert!(
        out.stdout
            .contains("survived: inflate-usage in `traces/a.trace.ndjson`"),
        "{}",
        out.stdout
    );
}

/// `gates --strength` judges `max-cost` with the project's price table, as `check` does.
#[test]
fn gates_strength_prices_runs_as_check_does() {
    let env = Env::new();
    scenario(
        &env,
        serde_json::json!([{"type": "max-cost", "limit": 0.01}]),
    );
    env.write(
        "traces/a.trace.ndjson",
        trace("default", None, 2, (1000, 100), None),
    );
    env.write("prices.toml", PRICES);
    let out = env.run(&["gates", "traces", "--strength"]);
    // $0.0056 passes; inflated ten times it fails: the mutant is caught.
    assert!(out.stdout.contains("cost.case  1/"), "{}", out.stdout);
    assert!(
        !out.stdout.contains("survived: inflate-usage"),
        "{}",
        out.stdout
    );
}

/// The suite's change against the approved baselines counts single traces and trial sets.
#[test]
fn usage_change_against_approved_counts_single_traces_and_trial_sets() {
    let env = Env::new();
    scenario(
        &env,
        serde_json::json!([{"type": "max-tokens", "limit": 100000}]),
    );
    for t in 0..3 {
        env.write(
            &format!("traces/set/{t}.trace.ndjson"),
            trace("set", Some(t), 1, (1000, 100), Some(0.01)),
        );
    }
    env.write(
        "traces/one.trace.ndjson",
        trace("one", None, 2, (500, 50), Some(0.02)),
    );
    let out = env.run_with(&["baseline", "approve"], &[("CI", "0")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // One trial now takes twice the requests; the single trace is unchanged.
    env.write(
        "traces/set/2.trace.ndjson",
        trace("set", Some(2), 2, (1000, 100), Some(0.01)),
    );
    let out = env.run(&["check", "traces", "--format", "json"]);
    let change = json(&out)["summary"]["usage"]["against_approved"].clone();
    assert_eq!(change["traces"], 4, "{change}");
    assert_eq!(change["approved"]["requests"], 5, "{change}");
    assert_eq!(change["current"]["requests"], 6, "{change}");
    assert_eq!(change["approved"]["cost_usd"], 0.07, "{change}");
    assert_eq!(change["current"]["cost_usd"], 0.08, "{change}");
    let human = env.run(&["check", "traces"]);
    assert!(
        human.stdout.contains("usage change: +25.0 % tokens (4,400 → 5,500), +14.3 % cost ($0.07 → $0.08) against the approved baselines of 4 trace(s)"),
        "{}",
        human.stdout
    );
}

/// A price table that is no regular file (a FIFO) is an error, never silently no prices; a
/// usage whose cache reads pass its input tokens is priced as it can be and said, not clamped
/// to $0.00 in silence.
#[test]
fn an_unreadable_price_table_and_an_inconsistent_usage_are_said() {
    let env = Env::new();
    scenario(
        &env,
        serde_json::json!([{"type": "max-cost", "value": 1.0}]),
    );
    let mut odd = trace("default", None, 1, (10, 1), None);
    odd = odd.replace(
        r#""input_tokens":10"#,
        r#""input_tokens":10,"cache_read_tokens":99"#,
    );
    env.write("traces/a.trace.ndjson", odd);
    env.write(
        "prices.toml",
        "[models.\"gpt-4.1\"]\ninput = 2\noutput = 8\ncached-input = 1\n",
    );
    let out = env.run(&["check", "traces", "--no-cache"]);
    assert!(
        out.stdout
            .contains("`cache_read_tokens` 99 is more than `input_tokens` 10")
            || out
                .stderr
                .contains("`cache_read_tokens` 99 is more than `input_tokens` 10"),
        "{}{}",
        out.stdout,
        out.stderr
    );
    std::fs::remove_file(env.path("prices.toml")).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(env.path("prices.toml"))
        .status()
        .unwrap();
    assert!(made.success());
    let out = env.run(&["check", "traces"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("prices.toml"), "{}", out.stderr);
}
