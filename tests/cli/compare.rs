//! `report --compare OLD.json NEW.json`: two runs' JSON reports side by side — the count of
//! cases that broke, were fixed, changed, came or went; the exit code (1 when a case broke or
//! went);
//! and the HTML matrix in a real browser (filtered to what changed, hostile ids kept as text).

use crate::html::{app, ready, render_dom};
use crate::trials::{suite, write_trials};
use crate::util::*;
use serde_json::Value;

const HOSTILE: &str =
    "</script><img src=x onerror=\"document.body.setAttribute('data-pwned','case')\">";

/// Scenario `id` expecting a call of `tool`; its one trace (case `case`) calls `search`.
fn expects(env: &Env, id: &str, tool: &str, case: &str) {
    env.write(
        &format!("traces/{id}/{id}.scenario.json"),
        scenario(id, "High", tool),
    );
    let c = call("c1", "search");
    let quoted = serde_json::to_string(case).unwrap();
    let text = trace_text(id, &quoted[1..quoted.len() - 1], &[&c, END]);
    env.write(
        &format!("traces/{id}/{id}.trace.ndjson.zst"),
        sealed_zst(&text),
    );
}

/// `check traces/ --json FILE` under CI (no baseline is written); a failing run is fine.
fn record(env: &Env, file: &str) {
    let out = env.run(&["check", "traces/", "--json", file]);
    assert!(out.code <= 1, "{}", out.stderr);
}

/// Two runs: `old.json`, then `new.json` after one case broke, one was fixed, the four trials
/// of `s/c` went from 4/4 to 3/4 (still passing: changed), `gone` was removed, `arrives`
/// added, and `keeps` (with a hostile case id) stayed the same.
fn two_runs() -> Env {
    let env = Env::new();
    let policy = r#","trials":{"min":4,"pass":{"at-least":1}}"#;
    suite(&env, "Low", policy, &["search"; 4]);
    expects(&env, "keeps", "search", HOSTILE);
    expects(&env, "breaks", "search", "default");
    expects(&env, "fixes", "fetch", "default");
    expects(&env, "gone", "search", "default");
    record(&env, "old.json");
    write_trials(&env, "traces/s/c", &["search", "search", "fetch", "search"]);
    expects(&env, "breaks", "fetch", "default");
    expects(&env, "fixes", "search", "default");
    std::fs::remove_dir_all(env.path("traces/gone")).unwrap();
    expects(&env, "arrives", "search", "default");
    record(&env, "new.json");
    env
}

/// The comparison's output contains `line`.
fn says(out: &Output, line: &str) {
    assert!(out.stdout.contains(line), "{}", out.stdout);
}

fn change_of<'a>(c: &'a Value, scenario: &str) -> &'a Value {
    let cases = c["cases"].as_array().unwrap();
    let found = cases.iter().find(|x| x["scenario"] == scenario);
    &found.unwrap_or_else(|| panic!("no case of `{scenario}` in {c}"))["change"]
}

#[test]
fn compare_counts_each_change_and_exits_1_when_a_case_broke() {
    let env = two_runs();
    let out = env.run(&[
        "report",
        "--compare",
        "old.json",
        "new.json",
        "--json",
        "c.json",
    ]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines[0], "compare old.json -> new.json");
    assert_eq!(
        lines[lines.len() - 2],
        "6 cases: 1 broke, 1 fixed, 1 changed, 1 added, 1 removed, 1 same"
    );
    assert_eq!(
        lines.last().unwrap(),
        &"fails: 1 case(s) broke; 1 case(s) of the old run are missing from the new one (pass `--allow-removed` if they were removed on purpose)"
    );
    let broke = lines.iter().find(|l| l.starts_with("BROKE")).unwrap();
    assert!(
        broke.contains("breaks/default  pass, 1/1 passed -> fail, 0/1 passed"),
        "{broke}"
    );
    assert!(broke.contains("(tool-called fail:"), "the reason: {broke}");
    let changed = lines.iter().find(|l| l.starts_with("CHANGED")).unwrap();
    assert!(
        changed.contains("s/c  pass, 4/4 passed -> pass, 3/4 passed, flaky"),
        "{changed}"
    );
    // The case that stayed the same is not listed, hostile id or not.
    assert!(!out.stdout.contains("keeps/"), "{}", out.stdout);

    let c: Value = serde_json::from_slice(&env.read("c.json")).unwrap();
    for (scenario, change) in [
        ("breaks", "broke"),
        ("fixes", "fixed"),
        ("s", "changed"),
        ("arrives", "added"),
        ("gone", "removed"),
        ("keeps", "same"),
    ] {
        assert_eq!(change_of(&c, scenario), change, "{scenario}");
    }
    assert_eq!(c["counts"]["broke"], 1);
    let s = (c["cases"].as_array().unwrap().iter())
        .find(|x| x["scenario"] == "s")
        .unwrap();
    assert_eq!(
        (s["old"]["passed"].as_u64(), s["new"]["passed"].as_u64()),
        (Some(4), Some(3))
    );
    assert_eq!(s["new"]["flaky"], true);
}

#[test]
fn a_run_compared_with_itself_is_all_the_same_and_exits_0() {
    let env = two_runs();
    let out = env.run(&["report", "--compare", "new.json", "new.json"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(
        out.stdout,
        "compare new.json -> new.json\n5 cases: 0 broke, 0 fixed, 0 changed, 0 added, 0 removed, 5 same\n"
    );
    // The other way round, what was fixed broke; what was added or removed swap.
    let out = env.run(&["report", "--compare", "new.json", "old.json"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        (out.stdout).contains("6 cases: 1 broke, 1 fixed, 1 changed, 1 added, 1 removed, 1 same\n"),
        "{}",
        out.stdout
    );
    says(&out, "BROKE    fixes/default");
    says(&out, "ADDED    gone/default");
}

#[test]
fn a_scenario_without_a_trace_is_listed_as_such() {
    let env = two_runs();
    std::fs::remove_file(env.path("traces/arrives/arrives.trace.ndjson.zst")).unwrap();
    let out = env.run(&["check", "traces/", "--json", "none.json"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let out = env.run(&["report", "--compare", "new.json", "none.json"]);
    says(&out, "ADDED    arrives/(no trace)  - -> error, 0/1 passed");
    says(&out, "REMOVED  arrives/default");
}

#[test]
fn unreadable_reports_are_refused_naming_the_file() {
    let env = two_runs();
    env.write("not-a-report.json", "{\"hello\": 1}\n");
    for (args, names) in [
        (
            ["report", "--compare", "old.json", "missing.json"],
            "missing.json",
        ),
        (
            ["report", "--compare", "not-a-report.json", "new.json"],
            "not-a-report.json",
        ),
    ] {
        let out = env.run(&args);
        assert_eq!(out.code, 2, "{}", out.stdout);
        assert!(out.stderr.contains(names), "{}", out.stderr);
    }
    let out = env.run(&["report", "--compare", "old.json"]);
    assert_eq!(
        out.code, 2,
        "one report is not a comparison: {}",
        out.stderr
    );
}

#[test]
fn the_html_matrix_shows_what_changed_filters_by_url_and_keeps_ids_as_text() {
    let env = two_runs();
    let out = env.run_with(
        &[
            "report",
            "--compare",
            "old.json",
            "new.json",
            "--html",
            "c.html",
        ],
        &[("CI", "true"), ("SOURCE_DATE_EPOCH", "1764547200")],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    let page = env.path("c.html");
    let rows = |hash: &str| -> Vec<(String, String)> {
        let (dom, console) = render_dom(&page, hash);
        ready(&dom, &console);
        let body = &dom[dom.find("<body").unwrap()..];
        let body_tag = &body[..body.find('>').unwrap()];
        assert!(
            !body_tag.contains("data-pwned"),
            "a case id ran: {body_tag}"
        );
        let app = app(&dom).to_owned();
        assert!(!app.contains("<img"), "a case id became markup: {app}");
        (app.split("<tr class=\"change-").skip(1))
            .map(|r| {
                let attr = |name: &str| {
                    let at = r.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
                    r[at..at + r[at..].find('"').unwrap()].to_owned()
                };
                (attr("data-case"), attr("data-change"))
            })
            .collect()
    };
    // By default, what changed, in natural order; the unchanged case is left out.
    let changes = rows("");
    let names: Vec<&str> = changes.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(
        names,
        [
            "arrives/default",
            "breaks/default",
            "fixes/default",
            "gone/default",
            "s/c"
        ]
    );
    assert_eq!(
        rows("#show=broke"),
        [("breaks/default".into(), "broke".into())]
    );
    let all = rows("#show=all&q=keeps");
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0].1, "same");
    // The hostile id is in the DOM as escaped text.
    let (dom, _) = render_dom(&page, "#show=same");
    assert!(
        app(&dom).contains("&lt;/script&gt;&lt;img src=x onerror="),
        "{}",
        app(&dom)
    );
    assert!(app(&dom).contains("old.json → new.json"), "{}", app(&dom));
}

/// The gate holds what it says: a case the new run adds that fails is a failure (it counted 0),
/// and a new report that repeats result rows (3 times, or 20,000) was written by no single run.
#[test]
fn an_added_failing_case_and_repeated_rows_fail_the_comparison() {
    let env = Env::new();
    expects(&env, "keeps", "search", "default");
    record(&env, "old.json");
    expects(&env, "arrives", "fetch", "default");
    record(&env, "new.json");
    let out = env.run(&["report", "--compare", "old.json", "new.json"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    says(&out, "1 new case(s) fail");
    // The old run compared with itself, its rows repeated.
    let mut doc: Value = serde_json::from_slice(&env.read("old.json")).unwrap();
    let row = doc["results"][0].clone();
    for _ in 0..2 {
        doc["results"].as_array_mut().unwrap().push(row.clone());
    }
    env.write("repeated.json", doc.to_string());
    let out = env.run(&["report", "--compare", "old.json", "repeated.json"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    says(&out, "the new report repeats 2 result row(s)");
    assert_eq!(
        env.run(&["report", "--compare", "old.json", "old.json"])
            .code,
        0
    );
}
