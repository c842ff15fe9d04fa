//! The HTML report of trial sets, as a new user read it on tau-bench (8 trials a side): the
//! overview's drift agrees with its Drift panel, cases needing attention come first, blocking and
//! flaky cases are marked without opening them, and `#SCENARIO/CASE` of a set opens its case.
//! Each in a real browser (headless Chromium).

use crate::html::{app, ready, render_dom};
use crate::settings::local;
use crate::trials::trial_trace;
use crate::util::*;

/// Scenario `id` with a policy of `min` trials passing at least once; its case `c` recorded with
/// `tools` (trial i calls `tools[i]`; `search` passes).
fn set(env: &Env, id: &str, tools: &[&str]) {
    env.write(
        &format!("traces/{id}/{id}.scenario.json"),
        format!(
            r#"{{"id":"{id}","title":"t","risk":"High","trials":{{"min":{},"pass":{{"at-least":{}}}}},"oracles":[{{"type":"tool-called","tool":"search"}}]}}"#,
            tools.len(),
            tools.len()
        ),
    );
    let _ = std::fs::remove_dir_all(env.path(&format!("traces/{id}/c")));
    for (i, tool) in tools.iter().enumerate() {
        env.write(
            &format!("traces/{id}/c/{i}.trace.ndjson.zst"),
            trial_trace(id, "c", &i.to_string(), tool),
        );
    }
}

/// `check traces/ --html report.html` under CI at a fixed time (a failing run is fine).
fn page(env: &Env) -> std::path::PathBuf {
    let out = env.run_with(
        &["check", "traces/", "--html", "report.html"],
        &[("CI", "true"), ("SOURCE_DATE_EPOCH", "1764547200")],
    );
    assert!(out.code <= 1, "{out:?}");
    env.path("report.html")
}

/// Three cases: `a.steady` passes 8/8; `m.flaky` passes 7/8 (fails its policy of 8, and blocks);
/// `z.drifted` was approved at 8/8 and now passes 4/8 (its set drifts).
fn three_cases(env: &Env) {
    set(env, "a.steady", &["search"; 8]);
    set(env, "z.drifted", &["search"; 8]);
    assert_eq!(local(env, &["baseline", "approve", "traces"]).code, 0);
    set(
        env,
        "m.flaky",
        &[
            "search", "search", "fetch", "search", "search", "search", "search", "search",
        ],
    );
    let mut half = ["search"; 8];
    half[4..].fill("fetch");
    set(env, "z.drifted", &half);
}

#[test]
fn the_drift_panel_counts_the_drift_of_trial_sets() {
    let env = Env::new();
    three_cases(&env);
    let (dom, console) = render_dom(&page(&env), "");
    ready(&dom, &console);
    let app = app(&dom);
    let counts = &app[app.find("id=\"counts\"").unwrap()..];
    let drifted = counts.find("data-count=\"drifted\"").unwrap();
    assert!(
        !counts[drifted..].starts_with("data-count=\"drifted\"><dt>drifted</dt><dd>0</dd>"),
        "{counts}"
    );
    let panel = &app[app.find("<h3>Drift</h3>").expect("a Drift panel")..];
    let panel = &panel[..panel.find("</section>").unwrap()];
    assert!(
        !panel.contains(">none<"),
        "the panel says none while the overview counts drift: {panel}"
    );
    assert!(panel.contains("regression"), "{panel}");
}

#[test]
fn cases_needing_attention_come_first_and_are_marked_closed() {
    let env = Env::new();
    three_cases(&env);
    let (dom, console) = render_dom(&page(&env), "");
    ready(&dom, &console);
    let app = app(&dom);
    let cases = &app[app.find("id=\"cases\"").unwrap()..];
    let at = |id: &str| {
        cases
            .find(&format!("data-case=\"{id}/c\""))
            .unwrap_or_else(|| panic!("{id}: {cases}"))
    };
    assert!(
        at("m.flaky") < at("a.steady"),
        "the failing case first: {cases}"
    );
    assert!(
        at("z.drifted") < at("a.steady"),
        "the drifted case before a plain pass: {cases}"
    );
    // Closed (no `open`), the blocking case's line says so.
    let flaky = &cases[at("m.flaky")..];
    let line = &flaky[..flaky.find("</summary>").unwrap()];
    assert!(!line.contains(" open=\"\""), "{line}");
    assert!(line.contains("badge-blocking\">blocking</span>"), "{line}");
    assert!(line.contains("badge-flaky\">flaky</span>"), "{line}");
}

#[test]
fn a_link_to_a_set_opens_its_case() {
    let env = Env::new();
    three_cases(&env);
    let (dom, console) = render_dom(&page(&env), "#trace=m.flaky/c");
    ready(&dom, &console);
    let app = app(&dom);
    assert!(!app.contains("No such trace"), "{app}");
    let linked = &app[app.find("id=\"linked-case\"").expect("the linked case")..];
    assert!(
        linked.starts_with("id=\"linked-case\" open=\"\""),
        "opened: {}",
        &linked[..200.min(linked.len())]
    );
    assert!(
        app[..app.find("id=\"linked-case\"").unwrap()].contains("data-case=\"m.flaky/c\""),
        "{app}"
    );
    // The trials' links still open each trace.
    let (dom, console) = render_dom(&page(&env), "#trace=m.flaky/c/2");
    ready(&dom, &console);
    assert!(crate::html::app(&dom).contains("traces/m.flaky/c/2.trace.ndjson.zst"));
}
