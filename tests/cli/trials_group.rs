//! Group-sequential drift (`trials.drift`): a current set compared with its approved set at
//! fixed looks, stopping at the first look that shows a regression. `check` reports the look,
//! a case between looks is undecided (blocking, never a pass), `trials next` says whether to
//! record more, and `merge` decides the shares' cases again as the whole run did.

use serde_json::Value;

use crate::trials::{approve, check_shares, lay_out_case, write_trials};
use crate::util::*;

/// Scenario `s` expecting a call of `search`, its policy with the design `looks`/`spending`.
fn scenario(env: &Env, spending: &str) {
    env.write(
        "traces/s/s.scenario.json",
        format!(
            r#"{{"id":"s","title":"t","risk":"High","trials":{{"min":4,"drift":{{"looks":[4,8],"spending":"{spending}"}}}},"oracles":[{{"type":"tool-called","tool":"search"}}]}}"#
        ),
    );
}

/// [`scenario`] with `n` passing trials of `s/c` approved.
fn approved(env: &Env, spending: &str, n: usize) {
    scenario(env, spending);
    write_trials(env, "traces/s/c", &vec!["search"; n]);
    approve(env);
}

fn check(env: &Env, extra: &[&str]) -> (i32, Value) {
    let out = env.run(&[&["check", "traces/", "--format", "json"][..], extra].concat());
    assert!(out.code <= 1, "{}", out.stderr);
    let r = json(&out);
    (out.code, r["cases"][0].clone())
}

fn next(env: &Env) -> String {
    let out = env.run(&["trials", "next", "s/c"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.stdout.trim().to_owned()
}

#[test]
fn a_regression_stops_the_set_at_the_first_look_that_shows_it() {
    let env = Env::new();
    approved(&env, "pocock", 8);

    // The first 4 current trials all fail: p = 1/C(12, 4) = 0.00202, within Pocock's first
    // boundary. The case is settled at look 1, with 4 of up to 8 trials.
    write_trials(&env, "traces/s/c", &["other"; 4]);
    let (code, c) = check(&env, &[]);
    assert_eq!(code, 1, "{c}");
    let g = &c["group_drift"];
    assert_eq!(g["regression_at"], 1, "{c}");
    assert_eq!(g["settled"], true);
    assert_eq!(g["current"], serde_json::json!([{"n": 4, "passed": 0}]));
    close(&g["p"][0], 1.0 / 495.0);
    close(&g["alpha"], 0.05);
    let found: Vec<&Value> = (c["drift"].as_array().unwrap().iter())
        .filter(|d| {
            d["category"] == "regression"
                && d["detail"]
                    .as_str()
                    .unwrap()
                    .starts_with("the trial verdict")
        })
        .collect();
    assert_eq!(found.len(), 1, "one regression finding of the verdict: {c}");
    let detail = found[0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("look 1 of 2 (4 current trials)"),
        "{detail}"
    );
    assert!(
        next(&env).starts_with("settled: fail ")
            && next(&env).ends_with("; drift: a regression at look 1 of 2)"),
        "{}",
        next(&env)
    );

    // Four passing trials show nothing yet: undecided, blocking, and the answer is to record on.
    write_trials(&env, "traces/s/c", &["search"; 4]);
    let (code, c) = check(&env, &[]);
    assert_eq!(code, 1, "an undecided case is never a pass: {c}");
    assert_eq!(c["group_drift"]["settled"], false);
    let undecided: Vec<&Value> = (c["drift"].as_array().unwrap().iter())
        .filter(|d| d["category"] == "drift-undecided")
        .collect();
    assert_eq!(undecided.len(), 1, "{c}");
    assert!(
        (undecided[0]["detail"].as_str().unwrap()).contains("record 8 current trials"),
        "{c}"
    );
    assert_eq!(
        next(&env),
        "record trial 4 (4 of 4 trial(s) pass; 4 trial(s) needed; drift undecided at look 1 of 2: record up to 8)"
    );
    // `--drift warn` fails nothing; `trials next --drift ignore` asks nothing of the drift.
    assert_eq!(check(&env, &["--drift", "warn"]).0, 0);
    let ignored = env.run(&["trials", "next", "s/c", "--drift", "ignore"]);
    assert_eq!(
        ignored.stdout.trim(),
        "settled: pass (4 of 4 trial(s) pass; 4 trial(s) needed)"
    );

    // Eight passing trials: the last look, no regression. Settled clear, a pass.
    write_trials(&env, "traces/s/c", &["search"; 8]);
    let (code, c) = check(&env, &[]);
    assert_eq!(code, 0, "{c}");
    assert_eq!(c["group_drift"]["settled"], true);
    assert_eq!(c["group_drift"]["regression_at"], Value::Null);
    assert_eq!(
        next(&env),
        "settled: pass (8 of 8 trial(s) pass; 4 trial(s) needed; drift: no regression by look 2 of 2)"
    );
    let json_answer = json(&env.run(&["trials", "next", "s/c", "--json"]));
    assert_eq!(
        json_answer["drift"],
        serde_json::json!({"looks": [4, 8], "reached": 2, "regression_at": null, "settled": true})
    );
}

#[test]
fn obrien_fleming_waits_where_pocock_stops() {
    // 1 of 4 current trials passes against 8 of 8 approved: p = 0.018182. With two looks, the
    // first boundary is 0.066667 under Pocock (a regression) and 0.010101 under O'Brien–Fleming,
    // which keeps nearly all of α for the last look: the case waits for it.
    let one_of_four = ["search", "other", "other", "other"];
    for (spending, level, settled) in [
        ("pocock", 0.0666667, true),
        ("obrien-fleming", 0.0101010, false),
    ] {
        let env = Env::new();
        approved(&env, spending, 8);
        write_trials(&env, "traces/s/c", &one_of_four);
        let (code, c) = check(&env, &[]);
        assert_eq!(code, 1);
        let g = &c["group_drift"];
        assert_eq!(g["settled"], settled, "{spending}: {c}");
        close(&g["p"][0], 2.0 / 110.0);
        assert!(
            (g["levels"][0].as_f64().unwrap() - level).abs() < 1e-6,
            "{spending}: {g}"
        );
        if !settled {
            // At the last look, 1 of 8 against 8 of 8 (p = 0.000699) is clear.
            let mut eight = one_of_four.to_vec();
            eight.extend(["other"; 4]);
            write_trials(&env, "traces/s/c", &eight);
            let (code, c) = check(&env, &[]);
            let g = &c["group_drift"];
            assert_eq!((code, g["regression_at"].as_u64()), (1, Some(2)), "{c}");
        }
    }
}

#[test]
fn a_design_that_cannot_judge_its_looks_is_refused() {
    let env = Env::new();
    for (trials, said) in [
        (
            r#"{"min":4,"drift":{"looks":[8,4]}}"#,
            "increasing trial counts",
        ),
        (r#"{"min":4,"drift":{"looks":[4,65]}}"#, "from 2 to 64"),
        (
            r#"{"min":8,"drift":{"looks":[4,8]}}"#,
            "below `trials.min` (8)",
        ),
        (
            r#"{"min":4,"drift":{"looks":[4,8],"spending":"haybittle"}}"#,
            "unknown spending `haybittle`",
        ),
        (
            r#"{"min":4,"drift":{"looks":[4],"alpha":0.1}}"#,
            "unknown key `trials.drift.alpha`",
        ),
        (
            r#"{"max":4,"sequential":true,"drift":{"looks":[4,8]}}"#,
            "above `trials.max` (4)",
        ),
    ] {
        env.write(
            "traces/s/s.scenario.json",
            format!(
                r#"{{"id":"s","title":"t","risk":"High","trials":{trials},"oracles":[{{"type":"tool-called","tool":"search"}}]}}"#
            ),
        );
        // A scenario `gates` cannot use is a failed gate (exit 1), as every policy error is.
        let out = env.run(&["gates", "traces/"]);
        assert_eq!(out.code, 1, "{trials}: {}", out.stdout);
        assert!(
            out.stdout.contains(said) || out.stderr.contains(said),
            "{trials}: {}{}",
            out.stdout,
            out.stderr
        );
    }
}

#[test]
fn merged_shares_decide_the_designs_as_the_whole_run() {
    let env = Env::new();
    // Six scenarios of 8 trials: three with a design, three with the fixed test.
    let ids = ["a", "b", "c", "d", "e", "f"];
    let lay_out = |regressed: bool| {
        for (k, id) in ids.iter().enumerate() {
            let drift = if k % 2 == 0 {
                r#","drift":{"looks":[4,8],"spending":"pocock"}"#
            } else {
                ""
            };
            let policy = format!(r#","trials":{{"min":4,"pass":{{"at-least":1}}{drift}}}"#);
            lay_out_case(&env, id, &policy, 8, regressed && k < 4);
        }
    };
    lay_out(false);
    approve(&env);
    lay_out(true);
    let whole = env.run(&["check", "traces/", "--format", "json", "--no-cache"]);
    assert_eq!(whole.code, 1, "{}", whole.stdout);
    let r = json(&whole);
    // m counts every design (a, c, e) and the fixed cases with a counted verdict test: b and d
    // regressed; f passed every trial on both sides, so its test is not counted.
    close(&r["thresholds"]["group_alpha"], 0.05 / 5.0);
    let shares = check_shares(&env, 2);
    let merged = env.run(&["merge", "--format", "json", &shares[0], &shares[1]]);
    assert_eq!(merged.code, whole.code, "{}", merged.stderr);
    assert_eq!(
        merged.stdout, whole.stdout,
        "merged shares equal the whole run"
    );
}

fn close(v: &Value, want: f64) {
    let got = v.as_f64().unwrap_or_else(|| panic!("{v} is not a number"));
    assert!((got - want).abs() < 1e-9, "{got} is not {want}");
}

#[test]
fn an_approved_set_too_large_for_a_design_is_undecided_and_trials_next_says_so() {
    let env = Env::new();
    approved(&env, "pocock", 70);
    write_trials(&env, "traces/s/c", &["search"; 8]);
    let (code, c) = check(&env, &[]);
    assert_eq!(code, 1, "{c}");
    let d = &c["drift"][0];
    assert_eq!(d["category"], "drift-undecided", "{c}");
    assert!(
        d["detail"].as_str().unwrap().contains("approve at most 64"),
        "{c}"
    );
    // Every look is reached, so more trials would not help: the answer says so, and asks for
    // none.
    assert_eq!(
        next(&env),
        "settled: pass (8 of 8 trial(s) pass; 4 trial(s) needed; drift undecided: the design cannot judge this case (`check` says why))"
    );
}

/// A recording loop against `record` under a design: it asks the recorder's
/// `…/tracereplay/v1/next` before each trial, and stops at the first look that shows the
/// regression, its answer carrying the design's state.
#[test]
fn the_recorder_stops_a_regressed_set_at_its_first_look() {
    let env = Env::new();
    let scenario = |trials: &str, value: &str| {
        env.write(
            "out/s/s.scenario.json",
            format!(
                r#"{{"id":"s","title":"t","risk":"High","trials":{trials},"oracles":[{{"type":"final-answer-contains","value":"{value}"}}]}}"#
            ),
        );
    };
    let up = crate::record_faults::fake_upstream();
    // Records trials as the recorder says, until it says the set is settled: the trials
    // recorded and its last answer.
    let record_until_settled = || {
        let rec = crate::record_faults::recorder(&env, &format!("{up}/ok"), &[]);
        let mut recorded = 0;
        let answer = loop {
            let (status, body) = rec.get("/record/s/c/tracereplay/v1/next");
            assert_eq!(status, 200, "{body}");
            let a: Value = serde_json::from_str(&body).unwrap();
            if a["settled"] == true {
                break a;
            }
            let base = format!("/record/s/c/trial/{}", a["next_trial"].as_str().unwrap());
            let ask = crate::record_faults::ASK;
            let (status, body) = rec.post(&format!("{base}/v1/chat/completions"), &[], ask);
            assert_eq!(status, 200, "{body}");
            let (status, body) = rec.post(&format!("{base}/tracereplay/v1/finish"), &[], "");
            assert_eq!(status, 200, "{body}");
            recorded += 1;
            assert!(recorded <= 8, "{recorded} trials of at most 8");
        };
        let (code, printed) = rec.finish(&[]);
        assert_eq!(code, 0, "{printed}");
        (recorded, answer)
    };
    // Eight passing trials, approved (a fixed policy of 8: settled at 8).
    scenario(r#"{"min":8}"#, "hello");
    let (recorded, answer) = record_until_settled();
    assert_eq!(recorded, 8, "{answer}");
    let out = env.run_with(&["baseline", "approve", "out/"], &[("CI", "0")]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(answer["verdict"], "pass", "{answer}");
    // The answers change (the oracle now asks for another word): four failing trials show the
    // regression at the first look, and the loop stops there.
    scenario(
        r#"{"min":4,"drift":{"looks":[4,8],"spending":"pocock"}}"#,
        "goodbye",
    );
    let _ = std::fs::remove_dir_all(env.path("out/s/c"));
    let (recorded, answer) = record_until_settled();
    assert_eq!(recorded, 4, "{answer}");
    assert_eq!(
        answer["drift"],
        serde_json::json!({"looks": [4, 8], "reached": 1, "regression_at": 1, "settled": true})
    );
    assert_eq!(answer["verdict"], "fail", "{answer}");
}
