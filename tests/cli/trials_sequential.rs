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
    // Given as files, the trials are judged against the suite's scenario all the same.
    let files = [
        "traces/s/c/0.trace.ndjson.zst",
        "traces/s/c/1.trace.ndjson.zst",
    ];
    let line = env.run(&[&["trials", "next", "s/c"][..], &files[..]].concat());
    let said = "record trial 2 (2 of 2 trial(s) pass; sequential, up to 4 trials)";
    assert_eq!(line.stdout.trim(), said, "{}", line.stderr);

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

/// GETs `path` from the server; the status and the body as JSON.
fn get(server: &crate::replay::Server, path: &str) -> (u16, Value) {
    let (status, body) = server.get(path);
    (
        status,
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
    )
}

/// A recording loop against `record`: it asks the recorder's `…/tracereplay/v1/next` before
/// each trial and records the trial it names, until the case is settled — which is sooner than
/// `max` when the verdict is clear.
#[test]
fn the_recorder_says_which_trial_to_record_until_the_case_is_settled() {
    let env = Env::new();
    env.write(
        "out/s/s.scenario.json",
        r#"{"id":"s","title":"t","risk":"High","trials":{"max":5,"pass":{"at-least":3},"sequential":true},"oracles":[{"type":"final-answer-contains","value":"hello"}]}"#,
    );
    let up = crate::record_faults::fake_upstream();
    let rec = crate::record_faults::recorder(&env, &format!("{up}/ok"), &[]);
    let mut recorded = Vec::new();
    loop {
        let (status, a) = get(&rec, "/record/s/c/tracereplay/v1/next");
        assert_eq!(status, 200, "{a}");
        if a["settled"] == true {
            assert_eq!(a["verdict"], "pass", "{a}");
            break;
        }
        let trial = a["next_trial"].as_str().unwrap().to_owned();
        let base = format!("/record/s/c/trial/{trial}");
        let ask = crate::record_faults::ASK;
        let (status, body) = rec.post(&format!("{base}/v1/chat/completions"), &[], ask);
        assert_eq!(status, 200, "{body}");
        // While the session is open, its trial is not on disk: the recorder says so.
        let (status, said) = get(&rec, "/record/s/c/tracereplay/v1/next");
        assert_eq!(status, 409, "{said}");
        let (status, body) = rec.post(&format!("{base}/tracereplay/v1/finish"), &[], "");
        assert_eq!(status, 200, "{body}");
        recorded.push(trial);
        assert!(recorded.len() <= 5, "{recorded:?}");
    }
    // Three passing trials of at most five settle it: the last two are never paid for.
    assert_eq!(recorded, ["1", "2", "3"]);
    let (status, a) = get(&rec, "/record/x/c/tracereplay/v1/next");
    assert_eq!(status, 422, "{a}");
    assert!(a.to_string().contains("no scenario `x`"), "{a}");
    let (code, printed) = rec.finish(&[]);
    assert_eq!(code, 0, "{printed}");
    let out = env.run(&["trials", "next", "s/c", "out/"]);
    assert_eq!(
        out.stdout.trim(),
        "settled: pass (3 of 3 trial(s) pass; sequential, up to 5 trials)",
        "{}",
        out.stderr
    );
}

/// `replay serve --record` asks the same question of its output: a replayed run recorded as a
/// trial of its case counts, and `trials next` over the replays says whether to replay another.
#[test]
fn replays_recorded_as_trials_are_counted_by_trials_next() {
    let env = Env::new();
    crate::replay_divergence::recorded_twice(&env);
    env.write(
        "again/s/s.scenario.json",
        r#"{"id":"s","title":"t","risk":"High","trials":{"max":3,"pass":{"at-least":2},"sequential":true},"oracles":[{"type":"final-answer-contains","value":"answer"}]}"#,
    );
    let ask = crate::replay_divergence::ask("Paris?", "city");
    for (trial, settled) in [("1", false), ("2", true)] {
        let args = [
            "out/",
            "--record",
            "again",
            "--trial",
            trial,
            "--exit-when-finished",
        ];
        let server = crate::replay::Server::start(&env, &args);
        for _ in 0..2 {
            let (status, body) = server.post("/v1/chat/completions", &[], &ask);
            assert_eq!(status, 200, "{body}");
        }
        let done = r#"[{"kind":"final_answer","text":"answer 2"},{"kind":"run_end","status":"completed"}]"#;
        let (code, rest) = {
            let (status, said) = server.post(
                "/tracereplay/v1/finish",
                &[("x-tracereplay-case", "s/twice")],
                done,
            );
            assert_eq!(status, 200, "{said}");
            server.finish(&[])
        };
        assert_eq!(code, 0, "{rest}");
        let out = env.run(&["trials", "next", "s/twice", "again/", "--json"]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let a = json(&out);
        assert_eq!(a["settled"], settled, "after trial {trial}: {a}");
        if !settled {
            assert_eq!(a["next_trial"], "2", "{a}");
        }
    }
}
