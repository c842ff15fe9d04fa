//! Hostile input, third round (#27): false greens an attack found, a crash, and the limits of
//! the newer surfaces. Each test reproduces the attack and fails on the code before the fix.

use crate::util::*;

/// `ingest` of `tau.json` (a tau-bench file) into `t/`, with its scenarios.
const EMIT_TAU: &[&str] = &[
    "ingest",
    "--unkeyed",
    "--emit-scenarios",
    "-o",
    "t",
    "tau.json",
];

/// `ingest --from openai-messages --unkeyed ARGS…` under CI.
fn ingest_messages(env: &Env, args: &[&str]) -> Output {
    let mut all = vec!["ingest", "--from", "openai-messages", "--unkeyed"];
    all.extend_from_slice(args);
    env.run(&all)
}

const TURN: &str = r#"{"kind":"user_message","prompt":{"h":"b3:00000000000000000000000000000000000000000000000000000000000000a1","len":9}}"#;

/// The verdict and message of each oracle of the only trace of `scenario`, checked on a trace
/// that calls `deploy` in one turn.
fn judged(env: &Env, oracles: &str) -> Vec<(String, String)> {
    env.write(
        "traces/s/s.scenario.json",
        format!(r#"{{"id":"s","title":"t","risk":"High","oracles":{oracles}}}"#),
    );
    env.write(
        "traces/s/default.trace.ndjson.zst",
        sealed_zst(&trace_text(
            "s",
            "default",
            &[TURN, &call("c1", "deploy"), END],
        )),
    );
    let out = env.run(&["check", "--format", "json", "--no-cache"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let report = json(&out);
    let r = row(&report, "s/default.trace.ndjson.zst");
    assert_eq!(r["verdict"], "fail", "{r:#}");
    (r["oracles"].as_array().unwrap().iter())
        .filter(|o| o["type"] != "run-completed")
        .map(|o| {
            (
                o["verdict"].as_str().unwrap().to_owned(),
                o["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn no_composition_turns_could_not_judge_into_a_pass() {
    let env = Env::new();
    // `test()` on a number raises: `not` of it must not pass on a trace that calls `deploy`.
    let raises = r#"{"type":"expr","jq":"if (.events | map(.seq) | .[0] | test(\"x\")) then false else any(.events[]; .tool == \"deploy\") | not end"}"#;
    let cases = [
        format!(r#"[{{"type":"not","oracle":{raises}}}]"#),
        r#"[{"type":"not","oracle":{"type":"tool-called","tool":"deploy","turn":9}}]"#.to_owned(),
        format!(
            r#"[{{"type":"any-of","oracles":[{raises},{{"type":"tool-called","tool":"nothing"}}]}}]"#
        ),
        format!(
            r#"[{{"type":"all-of","oracles":[{{"type":"tool-called","tool":"deploy"}},{raises}]}}]"#
        ),
        format!(r#"[{{"type":"not","oracle":{{"type":"any-of","oracles":[{raises}]}}}}]"#),
    ];
    for oracles in cases {
        let results = judged(&env, &oracles);
        let (verdict, message) = &results[0];
        assert_eq!(verdict, "not-evaluable", "{oracles}: {message}");
        assert!(
            message.contains("jq error") || message.contains("turn 9 does not exist"),
            "the message names the inner cause: {message}"
        );
    }
    // Decided compositions stay decided: an inner failure fails `all-of`, an inner pass passes
    // `any-of`, whatever the other inner oracle could not judge.
    let results = judged(
        &env,
        &format!(
            r#"[{{"type":"all-of","oracles":[{{"type":"tool-called","tool":"nothing"}},{raises}]}}]"#
        ),
    );
    assert_eq!(results[0].0, "fail", "{results:?}");
    let results = judged(
        &env,
        &format!(
            r#"[{{"type":"any-of","oracles":[{raises},{{"type":"tool-called","tool":"deploy"}}]}},{{"type":"tool-called","tool":"nothing"}}]"#
        ),
    );
    assert_eq!(results[0].0, "pass", "{results:?}");
    // Alone, the raising program and the missing turn are failures, as the spec has it.
    let results = judged(
        &env,
        &format!(r#"[{raises},{{"type":"tool-called","tool":"deploy","turn":9}}]"#),
    );
    assert_eq!(results[0].0, "fail", "{results:?}");
    assert_eq!(results[1].0, "fail", "{results:?}");
}

/// `merge` trusts nothing a share says about itself: counts are recomputed from the rows (with
/// checked arithmetic), and a share whose counts, rows or label were edited is refused.
#[test]
fn merge_refuses_shares_whose_counts_rows_or_label_were_edited() {
    let env = Env::new();
    copy_demo(&env, false);
    let mut failing_share = None;
    for k in 1..=3 {
        let file = format!("s{k}.json");
        let out = env.run(&[
            "check",
            "--fail-on",
            "any",
            "--partition",
            &format!("hash:{k}/3"),
            "--json",
            &file,
            "--no-cache",
        ]);
        if out.code == 1 && failing_share.is_none() {
            failing_share = Some(k);
        }
    }
    let bad = failing_share.expect("the demo fails under --fail-on any");
    let good = (1..=3).find(|k| *k != bad).unwrap();
    let merge = |files: &[String]| {
        let mut args = vec!["merge".to_owned()];
        args.extend(files.iter().cloned());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        env.run(&args)
    };
    let all: Vec<String> = (1..=3).map(|k| format!("s{k}.json")).collect();
    assert_eq!(merge(&all).code, 1);
    let read = |k: u64| -> serde_json::Value {
        serde_json::from_slice(&env.read(&format!("s{k}.json"))).unwrap()
    };
    let edited = |k: u64, edit: &dyn Fn(&mut serde_json::Value)| {
        let mut r = read(k);
        edit(&mut r);
        env.write(&format!("e{k}.json"), r.to_string());
        (1..=3)
            .map(|j| {
                if j == k {
                    format!("e{j}.json")
                } else {
                    format!("s{j}.json")
                }
            })
            .collect::<Vec<_>>()
    };
    // The failing share says it blocks nothing.
    let files = edited(bad, &|r| r["summary"]["blocking"] = 0.into());
    let out = merge(&files);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains("`summary.blocking` is 0, but its rows give"),
        "{}",
        out.stderr
    );
    // Another share's count wraps the sum to 0.
    let files = edited(good, &|r| r["summary"]["blocking"] = u64::MAX.into());
    let out = merge(&files);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    // The failing share's rows say they do not block.
    let files = edited(bad, &|r| {
        for row in r["results"].as_array_mut().unwrap() {
            row["blocking"] = false.into();
        }
        r["summary"]["blocking"] = 0.into();
    });
    let out = merge(&files);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("not those `check` wrote"),
        "{}",
        out.stderr
    );
    // A passing share relabelled as the whole of a one-share run.
    let mut r = read(good);
    r["partition"]["share"] = 1.into();
    r["partition"]["of"] = 1.into();
    env.write("alone.json", r.to_string());
    let out = merge(&["alone.json".to_owned()]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("label (share 1/1)"), "{}", out.stderr);
}

#[test]
fn replay_refuses_to_record_two_sessions_into_one_file() {
    let env = Env::new();
    let inference = r#"{"kind":"inference","output":{"text":"hi"}}"#;
    for (dir, case) in [("a", "Bad"), ("b", "bad")] {
        env.write(
            &format!("{dir}/x.trace.ndjson.zst"),
            sealed_zst(&trace_text("w", case, &[inference, END])),
        );
    }
    let out = env.run(&["replay", "serve", "a/", "b/", "--record", "out/"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains("would both be recorded as `out/w/bad.trace.ndjson.zst`"),
        "{}",
        out.stderr
    );
    assert!(!env.path("out/w").exists());
}

#[test]
fn no_command_writes_where_discovery_does_not_look_and_hidden_traces_are_reported() {
    let env = Env::new();
    good_suite(&env);
    env.write(
        "log.json",
        r#"[{"role":"user","content":"hi"},{"role":"assistant","content":"done"}]"#,
    );
    let out = ingest_messages(
        &env,
        &[
            "--scenario",
            ".agent.safety",
            "--case",
            "bad",
            "-o",
            "traces",
            "log.json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        env.path("traces/%2Eagent.safety/bad.trace.ndjson.zst")
            .exists(),
        "{}",
        out.stdout
    );
    // What ingest wrote is what check reads: the trace's scenario is unknown, an error row.
    let out = env.run(&["check", "--format", "json"]);
    assert_eq!(out.code, 1);
    assert_eq!(row(&json(&out), "bad.trace.ndjson.zst")["verdict"], "error");
    // A hidden directory holding a trace is skipped, but never silently.
    std::fs::rename(
        env.path("traces/%2Eagent.safety"),
        env.path("traces/.hidden"),
    )
    .unwrap();
    for args in [&["check", "--format", "json"][..], &["verify"], &["lint"]] {
        let out = env.run(args);
        assert_ne!(out.code, 0, "{args:?}: {}{}", out.stdout, out.stderr);
        assert!(
            (out.stdout.clone() + &out.stderr).contains("a hidden directory holding trace files"),
            "{args:?}: {}{}",
            out.stdout,
            out.stderr
        );
    }
}

#[test]
fn last_failed_rejudges_a_changed_trace_reads_its_report_bounded_and_is_no_ci_gate() {
    let env = Env::new();
    good_suite(&env);
    one_trace_suite(&env, "other", "High", "search", "default");
    assert_eq!(env.run_with(&["check", "--artifacts"], &[]).code, 0);
    // Edited to fail after the green run: judged again, not left out.
    let bad = trace_text("good", "default", &[&call("c1", "fetch"), END]);
    env.write("traces/good/default.trace.ndjson.zst", sealed_zst(&bad));
    let out = env.run_with(&["check", "--last-failed"], &[]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("1 that passed then, unchanged, were left out"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("not a CI gate"), "{}", out.stdout);
    // Under CI it refuses.
    let out = env.run(&["check", "--last-failed"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("no CI gate"), "{}", out.stderr);
    // A report that is not a regular file is not read (no hang, no memory blow-up).
    let runs = files_under(&env.path(".tracereplay/runs"));
    let report = runs
        .iter()
        .find(|f| f.ends_with("report.json"))
        .unwrap()
        .clone();
    let path = env.path(&format!(".tracereplay/runs/{report}"));
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
    let out = env.run_with(&["check", "--last-failed"], &[]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("not a regular file"), "{}", out.stderr);
}

#[test]
fn small_holes_stay_closed() {
    // `metadata.unsafeTools` as a list, on the scenario and on the oracle.
    let env = Env::new();
    for (id, meta_on_oracle) in [("scenario-list", false), ("oracle-list", true)] {
        let (scenario_meta, oracle_meta) = if meta_on_oracle {
            (
                "",
                r#","metadata":{"unsafeTools":["transfer_funds","shell"]}"#,
            )
        } else {
            (
                r#","metadata":{"unsafeTools":["transfer_funds","shell"]}"#,
                "",
            )
        };
        env.write(
            &format!("traces/{id}/{id}.scenario.json"),
            format!(
                r#"{{"id":"{id}","title":"t","risk":"High"{scenario_meta},"oracles":[{{"type":"no-unsafe-tool"{oracle_meta}}}]}}"#
            ),
        );
        env.write(
            &format!("traces/{id}/default.trace.ndjson.zst"),
            sealed_zst(&trace_text(
                id,
                "default",
                &[&call("c1", "transfer_funds"), END],
            )),
        );
    }
    let out = env.run(&["check", "--format", "json"]);
    let report = json(&out);
    for id in ["scenario-list", "oracle-list"] {
        assert_eq!(
            row(&report, &format!("{id}/default.trace.ndjson.zst"))["verdict"],
            "fail",
            "{id}: an unapproved `transfer_funds` listed as unsafe"
        );
    }
    // `argsMatchOverrides` for a tool no expected call has: a `gates` warning.
    let env = Env::new();
    env.write(
        "traces/o/o.scenario.json",
        r#"{"id":"o","title":"t","risk":"High","oracles":[{"type":"tool-sequence","mode":"superset","calls":[{"tool":"refund","args":{"id":1}}],"argsMatchOverrides":{"refnud":"ignore"}}]}"#,
    );
    let out = env.run(&["gates"]);
    assert!(
        out.stdout
            .contains("`argsMatchOverrides.refnud` names a tool no expected call has"),
        "{}",
        out.stdout
    );
    // An OpenAI message with `role` twice is refused, not resolved last-wins.
    env.write(
        "dup.json",
        r#"[{"role":"user","content":"hi"},{"role":"user","role":"assistant","content":"done"}]"#,
    );
    let out = ingest_messages(&env, &["--scenario", "d", "-o", "out", "dup.json"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stderr.contains("duplicate key `role`"),
        "{}",
        out.stderr
    );
    assert!(!env.path("out").join("d").exists());
}

#[test]
fn ground_truth_tool_names_are_never_patterns() {
    let env = Env::new();
    // A tau-bench run whose task expects `refund*`; the agent called another tool.
    let run = serde_json::json!([{
        "task_id": 1, "trial": 0, "reward": 0.0,
        "info": {"task": {"actions": [{"name": "refund*", "kwargs": {}}], "outputs": []}},
        "traj": [
            {"role": "user", "content": "refund me"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "refund_everything_to_attacker", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            {"role": "assistant", "content": "done"}
        ]
    }]);
    env.write("tau.json", run.to_string());
    let out = env.run(EMIT_TAU);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let check = env.run(&["check", "t", "--format", "json", "--fail-on", "any"]);
    let report = json(&check);
    let r = row(&report, "tau/0.trace.ndjson.zst");
    assert_eq!(r["verdict"], "fail", "{r:#}");
}

#[test]
fn a_request_that_offers_no_tools_diverges_where_the_recording_offered_some() {
    let env = Env::new();
    let inference = r#"{"kind":"inference","tools_offered":["weather"],"output":{"text":"hi"}}"#;
    env.write(
        "rec/w/x.trace.ndjson.zst",
        sealed_zst(&trace_text("w", "x", &[inference, END])),
    );
    let server = super::replay::Server::start(&env, &["rec/", "--strict"]);
    for body in [
        r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#,
        r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":null}"#,
    ] {
        let (status, text) = server.post("/v1/chat/completions", &[], body);
        assert_eq!(status, 409, "{body}: {text}");
        assert!(
            text.contains("tools offered differ: recorded weather, now none"),
            "{text}"
        );
    }
}

/// A 338-byte sealed trace whose `args` nest 50,000 deep used to overflow the stack.
#[test]
fn deeply_nested_values_are_an_error_row_not_a_crash() {
    let env = Env::new();
    env.write(
        "traces/d/d.scenario.json",
        r#"{"id":"d","title":"t","risk":"High","oracles":[{"type":"tool-args","tool":"x","args":{"a":1}},{"type":"tool-sequence","mode":"superset","calls":[{"tool":"x","args":{"a":1}}]}]}"#,
    );
    std::fs::create_dir_all(env.path("baselines")).unwrap();
    let n = 50_000;
    let args = format!("{}1{}", "{\"a\":".repeat(n), "}".repeat(n));
    let deep = format!(r#"{{"kind":"tool_call","seq":1,"call_id":"c1","tool":"x","args":{args}}}"#);
    let mut text = trace_text("d", "c", &[]);
    text.push_str(&deep);
    text.push_str("\n{\"kind\":\"run_end\",\"seq\":2,\"status\":\"completed\"}\n");
    env.write("traces/d/c.trace.ndjson.zst", sealed_zst_unchecked(&text));
    assert!(env.read("traces/d/c.trace.ndjson.zst").len() < 1000);
    let started = std::time::Instant::now();
    let out = env.run(&["check", "--format", "json", "--no-cache"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let report = json(&out);
    let r = row(&report, "d/c.trace.ndjson.zst");
    assert_eq!(r["verdict"], "error");
    assert_eq!(r["error"]["line"], 2, "{r:#}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nest more than 128 levels")
    );
    for args in [
        &["explain", "traces/d/c.trace.ndjson.zst"][..],
        &["gates", "--strength"],
        &["verify"],
        &["lint"],
    ] {
        let out = env.run(args);
        assert!(
            out.code != 134 && out.code >= 0,
            "{args:?} crashed: {}",
            out.stderr
        );
    }
    // Just inside the limit is judged as usual.
    let args = format!("{}1{}", "{\"a\":".repeat(120), "}".repeat(120));
    let ok = format!(r#"{{"kind":"tool_call","call_id":"c1","tool":"x","args":{args}}}"#);
    env.write(
        "traces/d/c.trace.ndjson.zst",
        sealed_zst(&trace_text("d", "c", &[&ok, END])),
    );
    let out = env.run(&["check", "--format", "json", "--no-cache"]);
    assert_ne!(
        row(&json(&out), "d/c.trace.ndjson.zst")["verdict"],
        "error",
        "{}",
        out.stdout
    );
    assert!(started.elapsed().as_secs() < 60);
}

/// One `args` object of 200,000 keys is summarised whole (its hash and size), as a large array
/// is: never built key by key into every canonical form, baseline and diff.
#[test]
fn a_very_wide_object_is_summarised_not_opened() {
    let env = Env::new();
    env.write(
        "traces/d/d.scenario.json",
        r#"{"id":"d","title":"t","risk":"High","oracles":[{"type":"tool-args","tool":"x","args":{"a":1}}]}"#,
    );
    std::fs::create_dir_all(env.path("baselines")).unwrap();
    let keys: Vec<String> = (0..200_000).map(|i| format!("\"k{i}\":1")).collect();
    let wide = format!(
        r#"{{"kind":"tool_call","seq":1,"call_id":"c1","tool":"x","args":{{{}}}}}"#,
        keys.join(",")
    );
    let mut text = trace_text("d", "c", &[]);
    text.push_str(&wide);
    text.push_str("\n{\"kind\":\"run_end\",\"seq\":2,\"status\":\"completed\"}\n");
    env.write("traces/d/c.trace.ndjson.zst", sealed_zst_unchecked(&text));
    let out = env.run_with(&["check", "--no-cache", "-j", "1"], &[]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let pending = String::from_utf8(env.read("baselines/d/c.baseline.json.new")).unwrap();
    assert!(
        pending.contains("\"bytes\": ") && pending.contains("\"b3\": \"b3:"),
        "{}",
        &pending[..pending.len().min(2000)]
    );
    assert!(!pending.contains("k199999"), "the object was opened");
}

/// A client that stalls mid-request (a partial request line, or a body that never comes) no
/// longer holds `replay serve` open after SIGTERM: it stops accepting, waits a bounded grace
/// period, records, and exits.
#[test]
fn a_stalled_client_never_holds_the_replay_server_open() {
    use std::io::Write as _;
    let env = Env::new();
    copy_demo(&env, false);
    let server =
        super::replay::Server::start(&env, &["traces/agent.replay.weather", "--record", "out/"]);
    // The address the server printed, without its scheme.
    let addr = server.url.split("//").nth(1).unwrap().to_owned();
    // A request line cut short, and a request whose announced body never arrives.
    let mut partial = std::net::TcpStream::connect(&addr).unwrap();
    partial.write_all(b"POST /v1/chat/comp").unwrap();
    let mut body = std::net::TcpStream::connect(&addr).unwrap();
    body.write_all(b"POST /tracereplay/v1/events HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{\"kind\"").unwrap();
    // One real event, so the session has something to record.
    let (status, text) = server.post(
        "/tracereplay/v1/events",
        &[],
        r#"{"kind":"run_end","status":"completed"}"#,
    );
    assert_eq!(status, 200, "{text}");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let started = std::time::Instant::now();
    let (code, rest) = server.finish(&[]);
    let took = started.elapsed();
    assert_eq!(code, 0, "{rest}");
    assert!(
        took < std::time::Duration::from_secs(15),
        "exit took {took:?}: {rest}"
    );
    assert!(
        env.path("out/agent.replay.weather/paris.trace.ndjson.zst")
            .exists(),
        "{rest}"
    );
    drop((partial, body));
}

/// An event that would make the recording invalid is refused when it is posted (409), an event
/// batch is taken whole or not at all, a session's recording is bounded by the trace size
/// limit (413), and a body of the wrong shape gets 400, not the next recorded response.
#[test]
fn the_replay_server_refuses_what_it_could_not_record() {
    let env = Env::new();
    copy_demo(&env, false);
    let server =
        super::replay::Server::start(&env, &["traces/agent.replay.weather", "--record", "out/"]);
    let post = |body: &str| server.post("/tracereplay/v1/events", &[], body);
    assert_eq!(post(r#"{"kind":"final_answer","text":"a"}"#).0, 200);
    let (status, text) = post(r#"{"kind":"final_answer","text":"b"}"#);
    assert_eq!(status, 409, "{text}");
    assert!(
        text.contains("a final answer was reported already"),
        "{text}"
    );
    let (status, text) = post(r#"{"kind":"message_edit","id":"nope","text":"x"}"#);
    assert_eq!(status, 409, "{text}");
    // A batch whose second event is refused records neither.
    let (status, _) = post(
        r#"[{"kind":"message","id":"m1","phase":"final","text":"hi"},{"kind":"run_end","status":"bogus"}]"#,
    );
    assert_eq!(status, 400);
    let (status, text) = post(r#"{"kind":"message_edit","id":"m1","text":"x"}"#);
    assert_eq!(status, 409, "m1 was not recorded: {text}");
    assert_eq!(post(r#"{"kind":"run_end","status":"completed"}"#).0, 200);
    assert_eq!(post(r#"{"kind":"run_end","status":"failed"}"#).0, 409);
    // Bodies that are not chat requests.
    for body in ["[1,2]", r#"{"messages":"hi"}"#] {
        let (status, text) = server.post("/v1/chat/completions", &[], body);
        assert_eq!(status, 400, "{body}: {text}");
    }
    // The recording is always written, and valid.
    let (code, rest) = server.finish(&[]);
    assert_eq!(code, 0, "{rest}");
    let verify = env.run(&["verify", "out/"]);
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);

    // Memory: events past the trace size limit are refused, and the recording still verifies.
    let server = super::replay::Server::start(
        &env,
        &[
            "traces/agent.replay.weather",
            "--record",
            "big/",
            "--max-trace-bytes",
            "4000000",
        ],
    );
    let big = "x".repeat(1 << 20);
    let mut refused = false;
    for _ in 0..20 {
        let body = format!(r#"{{"kind":"note","text":"{big}"}}"#);
        let (status, text) = server.post("/tracereplay/v1/events", &[], &body);
        if status == 413 {
            assert!(text.contains("trace size limit"), "{text}");
            refused = true;
            break;
        }
        assert_eq!(status, 200, "{}", &text[..text.len().min(300)]);
    }
    assert!(refused, "past the limit, notes are refused");
    assert_eq!(
        server
            .post(
                "/tracereplay/v1/events",
                &[],
                r#"{"kind":"run_end","status":"completed"}"#
            )
            .0,
        200
    );
    let (code, rest) = server.finish(&[]);
    assert_eq!(code, 0, "{rest}");
    let verify = env.run(&["verify", "big/"]);
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
}

/// Every read goes through the regular-file-with-a-limit rule: an evidence file or an existing
/// scenario that is a `/dev/zero` symlink or a FIFO is refused, never read.
#[test]
fn evidence_and_emitted_scenarios_are_read_bounded() {
    let env = Env::new();
    one_trace_suite(&env, "bad", "High", "deploy", "default");
    assert_eq!(env.run(&["check", "--artifacts"]).code, 1);
    let evidence = (files_under(&env.path(".tracereplay/runs")).into_iter())
        .find(|f| f.contains("/evidence/"))
        .unwrap();
    let path = env.path(&format!(".tracereplay/runs/{evidence}"));
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
    let out = env.run(&["explain", "--last"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("not a regular file"), "{}", out.stderr);
    std::fs::remove_file(&path).unwrap();
    mkfifo(&path);
    let out = env.run(&["explain", "--last"]);
    assert_eq!(
        out.code, 2,
        "a FIFO is refused, not waited on: {}",
        out.stderr
    );

    // `ingest --emit-scenarios` where the scenario it would write is a `/dev/zero` symlink.
    let run = serde_json::json!([{
        "task_id": 1, "trial": 0, "reward": 1.0,
        "info": {"task": {"actions": [{"name": "lookup", "kwargs": {}}], "outputs": []}},
        "traj": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "done"}]
    }]);
    env.write("tau.json", run.to_string());
    std::fs::create_dir_all(env.path("t/tau-bench.task-1")).unwrap();
    std::os::unix::fs::symlink(
        "/dev/zero",
        env.path("t/tau-bench.task-1/tau-bench.task-1.scenario.json"),
    )
    .unwrap();
    let out = env.run(EMIT_TAU);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("cannot be read"), "{}", out.stderr);
}

fn mkfifo(path: &std::path::Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(ok.success());
}

#[test]
fn low_ones() {
    let env = Env::new();
    good_suite(&env);
    // `cache-dir` outside the project is refused from the project file.
    for dir in ["../..", "/tmp/elsewhere"] {
        env.write("tracereplay.toml", format!("cache-dir = \"{dir}\"\n"));
        let out = env.run(&["check"]);
        assert_eq!(out.code, 2, "{dir}: {}", out.stderr);
        assert!(out.stderr.contains("leaves the project"), "{}", out.stderr);
    }
    // A project file that exists but cannot be read is an error, not a reason to use a parent
    // directory's (here: one that would turn the run green).
    env.write(
        "tracereplay.toml",
        "[profile.default]\nfail-on = \"none\"\n",
    );
    std::fs::create_dir_all(env.path("sub/tracereplay.toml")).unwrap();
    env.write(
        "sub/traces/bad/bad.scenario.json",
        scenario("bad", "High", "deploy"),
    );
    let out = env
        .command(&["check"], &[("CI", "true")])
        .current_dir(env.path("sub"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("tracereplay.toml"), "{stderr}");
    // Control characters from paths are escaped in `config`.
    std::fs::remove_dir_all(env.path("sub")).unwrap();
    env.write("tracereplay.toml", "paths = [\"trac\\u001b[31mes\"]\n");
    let out = env.run(&["config"]);
    assert!(!out.stdout.contains('\u{1b}'), "{:?}", out.stdout);
    assert!(out.stdout.contains("\\u001b"), "{}", out.stdout);
}

/// Runaway `expr` programs have an overall cap: five on one trace stop once the trace's budget
/// (6 s) is spent, and none of them passes.
#[test]
fn runaway_expr_programs_share_one_budget_per_trace() {
    let env = Env::new();
    let runaway = r#"{"type":"expr","jq":"def f: f; f"}"#;
    env.write(
        "traces/s/s.scenario.json",
        format!(r#"{{"id":"s","title":"t","risk":"High","oracles":[{runaway},{runaway},{runaway},{runaway},{runaway}]}}"#),
    );
    env.write(
        "traces/s/default.trace.ndjson.zst",
        sealed_zst(&trace_text("s", "default", &[&call("c1", "search"), END])),
    );
    let started = std::time::Instant::now();
    let out = env.run(&["check", "--format", "json", "--no-cache", "-j", "1"]);
    let took = started.elapsed();
    assert_eq!(out.code, 1, "{}", out.stderr);
    let report = json(&out);
    let oracles = row(&report, "default.trace.ndjson.zst")["oracles"]
        .as_array()
        .unwrap()
        .clone();
    let messages: Vec<&str> = oracles
        .iter()
        .filter_map(|o| o["message"].as_str())
        .collect();
    assert!(
        oracles
            .iter()
            .all(|o| o["verdict"] != "pass" || o["type"] == "run-completed")
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("already used its budget of 6 s")),
        "{messages:?}"
    );
    // Five programs of 2 s each would take 10 s; the trace's budget stops them near 6 s.
    assert!(took < std::time::Duration::from_secs(20), "took {took:?}");
}

/// `gates --strength` with a program that runs away only on mutants ends within its run budget,
/// and the mutants it could not judge are not counted as caught.
#[test]
fn strength_has_an_expr_budget_and_never_counts_unjudged_mutants() {
    let env = Env::new();
    // Passes at once on the recorded trace (one call of `search` with q = "x"); loops forever
    // on any mutant that changes it.
    let jq = r#"def f: f; if ([.events[] | select(.kind == \"tool_call\" and .tool == \"search\" and .args.q == \"x\")] | length) == 1 then true else f end"#;
    env.write(
        "traces/s/s.scenario.json",
        format!(
            r#"{{"id":"s","title":"t","risk":"High","oracles":[{{"type":"expr","jq":"{jq}"}}]}}"#
        ),
    );
    let calls: Vec<String> = (1..=6)
        .map(|i| call(&format!("c{i}"), if i == 1 { "search" } else { "other" }))
        .collect();
    let mut events: Vec<&str> = calls.iter().map(String::as_str).collect();
    events.push(END);
    env.write(
        "traces/s/default.trace.ndjson.zst",
        sealed_zst(&trace_text("s", "default", &events)),
    );
    let started = std::time::Instant::now();
    let out = env.run(&["gates", "--strength", "--expr-budget", "3"]);
    let took = started.elapsed();
    assert!(
        took < std::time::Duration::from_secs(30),
        "took {took:?}: {}",
        out.stdout
    );
    assert!(out.stdout.contains("not judged:"), "{}", out.stdout);
    assert!(
        !out.stdout.contains("strong"),
        "unjudged mutants never count as caught: {}",
        out.stdout
    );
}
