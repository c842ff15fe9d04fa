//! Sequential trials: a case recorded until its verdict is settled. `trials next` says whether
//! to record another trial, `check` judges a settled case as all `max` trials would and marks
//! it, and a case not settled yet is `error`, never a pass.

use serde_json::Value;

use crate::trials::write_trials;
use crate::util::*;

const SEQUENTIAL: &str = r#","trials":{"max":4,"pass":{"at-least":3},"sequential":true}"#;

fn scenario(env: &Env) {
    env.write(
        "traces/s/s.scenario.json",
        format!(
            r#"{{"id":"s","title":"t","risk":"High"{SEQUENTIAL},"oracles":[{{"type":"tool-called","tool":"search"}}]}}"#
        ),
    );
}

fn next(env: &Env) -> Value {
    let out = env.run(&["trials", "next", "s/c", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    json(&out)
}

fn the_case(env: &Env) -> (i32, Value) {
    let out = env.run(&["check", "traces/", "--format", "json"]);
    assert!(out.code <= 1, "{}", out.stderr);
    (out.code, json(&out)["cases"][0].clone())
}

#[test]
fn trials_are_recorded_until_the_verdict_is_settled() {
    let env = Env::new();
    scenario(&env);
    let a = next(&env);
    assert_eq!(
        (a["settled"].clone(), a["next_trial"].clone()),
        (Value::from(false), Value::from("1"))
    );
    assert_eq!(a["max"], 4);

    // Two of two pass: three of four are needed, so not settled yet — an error, not a pass.
    write_trials(&env, "traces/s/c", &["search", "search"]);
    let a = next(&env);
    assert_eq!(
        (a["trials"].as_u64(), a["passed"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(a["next_trial"], "2", "trials 0 and 1 are recorded");
    let (code, c) = the_case(&env);
    assert_eq!((code, c["verdict"].as_str()), (1, Some("error")), "{c}");
    assert!(
        c["reason"]
            .as_str()
            .unwrap()
            .contains("not settled after 2 trial(s)"),
        "{c}"
    );
    assert_eq!(
        c["sequential"],
        serde_json::json!({"max": 4, "settled": false})
    );

    // A third pass settles it: the fourth could not change the verdict.
    write_trials(&env, "traces/s/c", &["search", "search", "search"]);
    let a = next(&env);
    assert_eq!(
        (a["settled"].as_bool(), a["verdict"].as_str()),
        (Some(true), Some("pass"))
    );
    assert_eq!(a["next_trial"], Value::Null);
    let (code, c) = the_case(&env);
    assert_eq!((code, c["verdict"].as_str()), (0, Some("pass")), "{c}");
    assert_eq!(
        c["sequential"],
        serde_json::json!({"max": 4, "settled": true})
    );
    let human = env.run(&["check", "traces/"]);
    assert!(
        human.stdout.contains("PASS s/c: 3/3 trials pass"),
        "{}",
        human.stdout
    );
    assert!(
        human.stdout.contains("settled after 3 of up to 4 trials"),
        "{}",
        human.stdout
    );
    let line = env.run(&["trials", "next", "s/c"]);
    assert_eq!(
        line.stdout.trim(),
        "settled: pass (3 of 3 trial(s) pass; sequential, up to 4 trials)"
    );

    // Two failures settle it the other way: at most one of four may fail.
    write_trials(&env, "traces/s/c", &["search", "other", "other"]);
    let a = next(&env);
    assert_eq!(
        (a["settled"].as_bool(), a["verdict"].as_str()),
        (Some(true), Some("fail"))
    );
    let (code, c) = the_case(&env);
    assert_eq!((code, c["verdict"].as_str()), (1, Some("fail")), "{c}");
    assert!(
        c["reason"].as_str().unwrap().contains("2 of 3 trials fail"),
        "{c}"
    );
}

#[test]
fn a_trial_that_cannot_be_judged_stops_the_loop_and_bad_names_are_refused() {
    let env = Env::new();
    scenario(&env);
    write_trials(&env, "traces/s/c", &["search"]);
    env.write("traces/s/c/1.trace.ndjson.zst", b"not zstd");
    let out = env.run(&["trials", "next", "s/c"]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(out.stderr.contains("could not be judged"), "{}", out.stderr);
    for (case, says) in [
        ("s", "is not `SCENARIO/CASE`"),
        ("nope/c", "no scenario `nope`"),
    ] {
        let out = env.run(&["trials", "next", case]);
        assert_eq!(out.code, 2, "{case}: {}", out.stdout);
        assert!(out.stderr.contains(says), "{case}: {}", out.stderr);
    }
}
