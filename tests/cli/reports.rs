//! Reports and audit: snapshots of every format, JUnit parsed as XML, GitHub annotations, the run
//! folder, `explain`, and privacy across every output.

use crate::util::*;

/// The demo with its baselines, one drifted trace and one tampered trace: every kind of row.
fn fixed_run() -> Env {
    let env = Env::new();
    copy_demo(&env, true);
    let t = "traces/agent.tool.timeout/default.trace.ndjson.zst";
    edit_trace(&env, t, "\"city\":\"Oslo\"", "\"city\":\"Bergen\"");
    let s = "traces/agent.shell.approved/default.trace.ndjson.zst";
    let sealed = String::from_utf8(zstd::decode_all(&env.read(s)[..]).unwrap())
        .unwrap()
        .replace("14 files", "15 files");
    env.write(s, zstd::bulk::compress(sealed.as_bytes(), 3).unwrap());
    env
}

fn settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.add_filter(r#""version": "\d+\.\d+\.\d+""#, r#""version": "[version]""#);
    s.add_filter(
        r"\.tracereplay/runs/\d{8}T\d{6}Z-[0-9a-f]{8}",
        ".tracereplay/runs/[run-id]",
    );
    s.set_prepend_module_to_snapshot(false);
    s
}

#[test]
fn snapshots_of_every_format() {
    let env = fixed_run();
    let _guard = settings().bind_to_scope();
    for format in ["human", "json", "junit", "markdown", "github"] {
        let out = env.run(&["check", "traces/", "--format", format]);
        assert_eq!(out.code, 1, "{format}: {}", out.stderr);
        insta::assert_snapshot!(format!("check_{format}"), out.stdout);
    }
}

#[test]
fn junit_parses_as_xml_with_a_suite_per_scenario() {
    let env = fixed_run();
    let out = env.run(&["check", "traces/", "--format", "junit"]);
    let doc = roxmltree::Document::parse(&out.stdout).expect("valid XML");
    let suites: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testsuite"))
        .collect();
    assert_eq!(
        suites.len(),
        16,
        "one suite per scenario, and the suite's usage"
    );
    let usage = suites.last().unwrap();
    assert_eq!(usage.attribute("name"), Some("(suite usage)"));
    let property = |name: &str| {
        (usage.descendants())
            .find(|n| n.has_tag_name("property") && n.attribute("name") == Some(name))
            .and_then(|n| n.attribute("value"))
            .map(str::to_owned)
    };
    // One trace fails its seal here: its requests are not counted.
    assert_eq!(property("requests").as_deref(), Some("47"));
    assert_eq!(property("cost_usd").as_deref(), Some("0.106056"));
    let cases = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .count();
    assert_eq!(cases, 20, "one case per row");
    let errors: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("error"))
        .collect();
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0]
            .attribute("message")
            .unwrap()
            .contains("integrity failure")
    );
    let failures = doc
        .descendants()
        .filter(|n| n.has_tag_name("failure"))
        .count();
    assert_eq!(
        failures, 1,
        "one failure that counts (the drifted one); the eight ignored failures are skipped"
    );
    let skipped = doc
        .descendants()
        .filter(|n| n.has_tag_name("skipped"))
        .count();
    assert_eq!(skipped, 8);

    // New and obsolete baselines are test cases of their own.
    std::fs::remove_file(env.path("baselines/agent.tool.basic/default.baseline.json")).unwrap();
    std::fs::remove_file(env.path("traces/agent.cancel.on.request/default.trace.ndjson.zst"))
        .unwrap();
    let out = env.run(&["check", "traces/", "--format", "junit"]);
    let doc = roxmltree::Document::parse(&out.stdout).expect("valid XML");
    let names: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .filter_map(|n| n.attribute("name"))
        .collect();
    assert!(names.contains(&"baseline new: default"), "{names:?}");
    assert!(
        names.iter().any(
            |n| n.starts_with("baseline obsolete: default (baselines/agent.cancel.on.request/")
        ),
        "{names:?}"
    );
}

#[test]
fn github_annotations_point_at_the_scenario_file() {
    let env = fixed_run();
    let out = env.run(&["check", "traces/", "--format", "github", "--fail-on", "any"]);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("::error ") || l.starts_with("::warning ")),
        "{}",
        out.stdout
    );
    assert!(
        lines.contains(&"::error file=traces/agent.unsafe.write/agent.unsafe.write.scenario.json,title=approval-required failed%3A agent.unsafe.write / default::no approval request for `write_file`"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("::error file=traces/agent.tool.timeout/agent.tool.timeout.scenario.json,title=drift arguments-changed%3A agent.tool.timeout / default::"), "{}", out.stdout);
    // Without --fail-on any, failures that do not count are warnings.
    let out = env.run(&["check", "traces/", "--format", "github"]);
    assert!(out.stdout.contains("::warning file=traces/agent.unsafe.write/agent.unsafe.write.scenario.json,title=approval-required failed"), "{}", out.stdout);
}

#[test]
fn run_folder_holds_enough_to_audit_without_the_trace() {
    let env = fixed_run();
    let out = env.run(&["check", "traces/", "--artifacts"]);
    assert_eq!(out.code, 1);
    let runs: Vec<String> = std::fs::read_dir(env.path(".tracereplay/runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(runs.len(), 1);
    let run = format!(".tracereplay/runs/{}", runs[0]);
    assert!(
        out.stderr.contains(&format!("run folder: {run}")),
        "{}",
        out.stderr
    );
    for f in ["report.json", "junit.xml", "report.md"] {
        assert!(env.path(&format!("{run}/{f}")).exists(), "{f}");
    }
    let files = files_under(&env.path(&format!("{run}/evidence")));
    assert_eq!(
        files,
        vec![
            "agent.approval.denied/ignores-denial.json",
            "agent.contract.release-notes/off-plan.json",
            "agent.cost.budget/lavish.json",
            "agent.migrated.checks/off-target.json",
            "agent.progress.regressed/default.json",
            "agent.search.budget/default.json",
            "agent.shell.approved/default.json",
            "agent.tool.retry/spirals.json",
            "agent.tool.timeout/default.json",
            "agent.unsafe.write/default.json",
        ]
    );
    let ev: serde_json::Value = serde_json::from_slice(
        &env.read(&format!("{run}/evidence/agent.unsafe.write/default.json")),
    )
    .unwrap();
    assert_eq!(
        ev["content_hash"],
        "b3:5547127167775230370fdf12e7959aa86af108104c25dee410d8dc532d0be66c"
    );
    assert_eq!(
        ev["path"],
        "traces/agent.unsafe.write/default.trace.ndjson.zst"
    );
    let seqs: Vec<u64> = ev["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, vec![3, 8], "copies of the cited events");
    assert_eq!(ev["events"][0]["tool"], "write_file");

    // `explain --last` works from the run folder alone, even with the traces gone.
    std::fs::remove_dir_all(env.path("traces")).unwrap();
    let out = env.run(&["explain", "--last", "--full"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("fail no-unsafe-tool #2: unsafe call(s) without a covering approval: `write_file` at seq 3"), "{}", out.stdout);
    assert!(
        out.stdout.contains("> seq 3    tool_call"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(
            "not judged: `traces/agent.shell.approved/default.trace.ndjson.zst`: integrity failure"
        ),
        "{}",
        out.stdout
    );
    // Without `--full`: a headline and the deciding oracle per failure, no event context.
    let brief = env.run(&["explain", "--last"]);
    assert_eq!(brief.code, 0, "{}", brief.stderr);
    assert!(brief.stdout.contains("FAIL  agent.unsafe.write/default  traces/agent.unsafe.write/default.trace.ndjson.zst  b3:"), "{}", brief.stdout);
    assert!(!brief.stdout.contains("> seq 3"), "{}", brief.stdout);
    assert!(
        brief
            .stdout
            .contains("failure(s); `tracereplay explain --last TARGET`"),
        "{}",
        brief.stdout
    );
    assert!(
        brief.stdout.lines().count() < out.stdout.lines().count() / 2,
        "{}",
        brief.stdout
    );
    // A target narrows to one failure, in full: by scenario, by scenario/case, by path.
    for target in [
        "agent.unsafe.write",
        "agent.unsafe.write/default",
        "traces/agent.unsafe.write/default.trace.ndjson.zst",
    ] {
        let one = env.run(&["explain", "--last", target]);
        assert_eq!(one.code, 0, "{target}: {}", one.stderr);
        assert!(
            one.stdout.contains("> seq 3    tool_call"),
            "{target}: {}",
            one.stdout
        );
        assert!(
            !one.stdout.contains("agent.shell.approved"),
            "{target}: {}",
            one.stdout
        );
    }
    let none = env.run(&["explain", "--last", "no.such.scenario"]);
    assert_eq!(none.code, 2);
    assert!(none.stderr.contains("no failure in run"), "{}", none.stderr);
}

#[test]
fn explain_shows_deciding_events_for_every_failing_demo_trace() {
    let env = Env::new();
    copy_demo(&env, true);
    let failing = [
        (
            "traces/agent.unsafe.write/default.trace.ndjson.zst",
            "> seq 3    tool_call",
        ),
        (
            "traces/agent.approval.denied/ignores-denial.trace.ndjson.zst",
            "> seq 5    tool_call",
        ),
        (
            "traces/agent.search.budget/default.trace.ndjson.zst",
            "> seq 9    tool_call",
        ),
        (
            "traces/agent.tool.timeout/default.trace.ndjson.zst",
            "> seq 7    run_end",
        ),
        (
            "traces/agent.progress.regressed/default.trace.ndjson.zst",
            "> seq 6    tool_call",
        ),
        (
            "traces/agent.contract.release-notes/off-plan.trace.ndjson.zst",
            "> seq 12   tool_call",
        ),
    ];
    for (path, marker) in failing {
        let out = env.run(&["explain", path]);
        assert_eq!(out.code, 0, "{path}: {}", out.stderr);
        assert!(out.stdout.contains("(seal verified)"), "{path}");
        assert!(
            out.stdout.contains(marker),
            "{path}: no `{marker}` in\n{}",
            out.stdout
        );
    }
    // By scenario id: every trace of it.
    let out = env.run(&["explain", "AGENT.APPROVAL.DENIED"]);
    assert_eq!(out.code, 0);
    assert!(
        out.stdout.contains("ignores-denial.trace.ndjson.zst")
            && out.stdout.contains("respects-denial.trace.ndjson.zst")
    );
    // Drift appears when there is a baseline to compare with.
    let t = "traces/agent.tool.timeout/default.trace.ndjson.zst";
    edit_trace(&env, t, "\"city\":\"Oslo\"", "\"city\":\"Bergen\"");
    let out = env.run(&["explain", t]);
    assert!(
        out.stdout.contains("drift arguments-changed"),
        "{}",
        out.stdout
    );
    // Not found.
    let out = env.run(&["explain", "no-such-thing"]);
    assert_eq!(out.code, 2);
}

#[test]
fn explain_reports_an_integrity_failure_instead_of_a_verdict() {
    let env = fixed_run();
    let out = env.run(&[
        "explain",
        "traces/agent.shell.approved/default.trace.ndjson.zst",
    ]);
    assert_eq!(out.code, 0);
    assert!(
        out.stdout.contains("content   not verified"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("not judged:") && out.stdout.contains("content hash mismatch"),
        "{}",
        out.stdout
    );
    assert!(
        !out.stdout.contains("pass ") && !out.stdout.contains("fail "),
        "{}",
        out.stdout
    );
}

#[test]
fn no_output_contains_scenario_input_or_raw_prompt_text() {
    let env = fixed_run();
    let input = "INPUT-TEXT-THAT-MUST-STAY-PRIVATE";
    let prompt = "RAW-PROMPT-TEXT-THAT-MUST-STAY-PRIVATE";
    let p = "traces/agent.unsafe.write/agent.unsafe.write.scenario.json";
    let mut scenario: serde_json::Value = serde_json::from_slice(&env.read(p)).unwrap();
    scenario["input"]["userMessage"] = serde_json::json!(input);
    env.write(p, scenario.to_string());
    // A raw-prompt sidecar beside the trace (the developer opt-in) must not leak either.
    let h = tracereplay::trace::content_hash(prompt.as_bytes());
    env.write(
        "traces/agent.unsafe.write/default.prompts.ndjson",
        format!("{{\"h\":\"{h}\",\"text\":\"{prompt}\"}}\n"),
    );
    let mut outputs = Vec::new();
    for format in ["human", "json", "junit", "markdown", "github"] {
        let out = env.run(&[
            "check",
            "traces/",
            "--format",
            format,
            "--artifacts",
            "runs",
        ]);
        outputs.push(out.stdout + &out.stderr);
    }
    for args in [
        vec!["explain", "--last", "--runs", "runs"],
        vec!["explain", "agent.unsafe.write"],
        vec!["diff"],
        vec!["gates", "--strength"],
    ] {
        let out = env.run(&args);
        outputs.push(out.stdout + &out.stderr);
    }
    for f in files_under(&env.path("runs")) {
        outputs.push(String::from_utf8(env.read(&format!("runs/{f}"))).unwrap());
    }
    for (i, o) in outputs.iter().enumerate() {
        assert!(!o.contains(input), "output {i} leaks the scenario input");
        assert!(!o.contains(prompt), "output {i} leaks raw prompt text");
    }
}

#[test]
fn timings_only_when_asked() {
    let env = Env::new();
    copy_demo(&env, true);
    let out = env.run(&["check", "traces/"]);
    assert!(!out.stderr.contains("timings:"), "{}", out.stderr);
    let out = env.run(&["check", "traces/", "--timings"]);
    assert!(
        out.stderr.contains("timings: discover ") && out.stderr.contains("(20 traces, "),
        "{}",
        out.stderr
    );
    assert!(!out.stdout.contains("\u{1b}["), "no colours off a terminal");
}

/// Colours appear on a terminal only, and never with `NO_COLOR`. Runs the binary under a
/// pseudo-terminal with util-linux `script`, which every Debian machine has.
#[test]
fn colours_on_a_terminal_only_and_never_with_no_color() {
    let env = Env::new();
    good_suite(&env);
    let binary = env.binary().display().to_string();
    let on_tty = |no_color: Option<&str>| {
        let mut cmd = std::process::Command::new("script");
        cmd.args(["-qec", &format!("{binary} check traces"), "/dev/null"])
            .current_dir(env.root())
            .env("CI", "true")
            .env_remove("NO_COLOR");
        if let Some(v) = no_color {
            cmd.env("NO_COLOR", v);
        }
        String::from_utf8_lossy(&cmd.output().expect("util-linux `script` runs").stdout)
            .into_owned()
    };
    assert!(
        on_tty(None).contains("\u{1b}[32mPASS"),
        "coloured on a terminal"
    );
    assert!(
        !on_tty(Some("1")).contains('\u{1b}'),
        "no colour with NO_COLOR"
    );
    assert!(
        !env.run(&["check", "traces"]).stdout.contains('\u{1b}'),
        "no colour off a terminal"
    );
}

/// `explain` judges through the same pipeline, with the same options, as `check`: for the same
/// trace and flags they report the same oracles and the same drift (here a usage total moved
/// by 30 %: drift at the default 20 % tolerance, none at 50 %).
#[test]
fn explain_and_check_agree_on_oracles_and_drift() {
    let env = Env::new();
    copy_demo(&env, true);
    let t = "traces/agent.tool.basic/default.trace.ndjson.zst";
    edit_trace(&env, t, "\"input_tokens\":420", "\"input_tokens\":730");
    for tolerance in [None, Some("50")] {
        let mut check = vec![
            "check",
            "traces/",
            "--scenario",
            "agent.tool.basic",
            "--format",
            "json",
        ];
        let mut explain = vec!["explain", t];
        if let Some(pct) = tolerance {
            check.extend(["--usage-tolerance", pct]);
            explain.extend(["--usage-tolerance", pct]);
        }
        let report = json(&env.run(&check));
        let row = row(&report, "agent.tool.basic/default.trace.ndjson.zst");
        let explained = env.run(&explain);
        assert_eq!(explained.code, 0, "{}", explained.stderr);
        let drift: Vec<&str> = (row["drift"].as_array().unwrap().iter())
            .map(|d| d["category"].as_str().unwrap())
            .collect();
        assert_eq!(drift.is_empty(), tolerance.is_some(), "{drift:?}");
        for category in ["usage-outside-tolerance", "arguments-changed"] {
            assert_eq!(
                explained.stdout.contains(&format!(" {category}:")),
                drift.contains(&category),
                "{category} at {tolerance:?}:\n{}",
                explained.stdout
            );
        }
        for o in row["oracles"].as_array().unwrap() {
            let line = format!(
                "{} {}",
                o["verdict"].as_str().unwrap(),
                o["type"].as_str().unwrap()
            );
            assert!(
                explained.stdout.contains(&line),
                "`{line}` in\n{}",
                explained.stdout
            );
        }
    }
}
