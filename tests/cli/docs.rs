//! The documentation under `docs/` stays true: the report schema validates real reports, and
//! every relative link in the README and the docs resolves. (The CLI reference is checked by the
//! binary's own unit tests, `cli::tests`.)

use crate::util::*;

fn root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn reports_validate_against_the_published_schema() {
    let schema: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root().join("docs/report.schema.json")).unwrap())
            .unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let mut reports = Vec::new();
    // The demo, as shipped.
    let env = Env::new();
    copy_demo(&env, true);
    reports.push(env.run(&["check", "traces", "--format", "json"]));
    // Drift, new, obsolete and error rows, privacy findings, a scripted row, a share.
    std::fs::remove_dir_all(env.path("baselines/agent.tool.basic")).unwrap();
    let timeout =
        String::from_utf8(env.read("baselines/agent.tool.timeout/default.baseline.json")).unwrap();
    env.write(
        "baselines/gone/default.baseline.json",
        timeout.replace("agent.tool.timeout", "gone"),
    );
    // The approved run completed; the current one fails: drift.
    env.write(
        "baselines/agent.tool.timeout/default.baseline.json",
        timeout.replace("\"status\": \"failed\"", "\"status\": \"completed\""),
    );
    env.write("traces/broken/broken.trace.ndjson.zst", "not a trace");
    env.write(
        "traces/leak/leak.scenario.json",
        scenario("leak", "High", "search"),
    );
    // A fake key, assembled at run time so no key-shaped literal sits in the test sources.
    let fake = format!(
        "{}-proj-{}",
        "sk", "abcdefghijklmnopqrstuvwxyz0123456789ABCD"
    );
    let note = format!(r#"{{"kind":"note","text":"key {fake}"}}"#);
    env.write(
        "traces/leak/default.trace.ndjson",
        trace_text("leak", "default", &[&note, END]),
    );
    reports.push(env.run(&["check", "traces", "--format", "json", "--scripted"]));
    // Without an unreadable trace (which could be the missing scenario's), obsolete baselines.
    std::fs::remove_dir_all(env.path("traces/broken")).unwrap();
    reports.push(env.run(&["check", "traces", "--format", "json"]));
    reports.push(env.run(&[
        "check",
        "traces",
        "--format",
        "json",
        "--partition",
        "hash:1/2",
    ]));
    // Cases of several trials: flaky, compared as sets with drift and thresholds.
    let trials = Env::new();
    crate::trials::suite(&trials, "High", "", &["search"; 8]);
    let approved = trials.run_with(&["baseline", "approve"], &[("CI", "0")]);
    assert_eq!(approved.code, 0, "{}", approved.stderr);
    let mut now = ["other"; 8];
    now[3] = "search";
    crate::trials::write_trials(&trials, "traces/s/c", &now);
    reports.push(trials.run(&["check", "traces", "--format", "json"]));
    for (i, out) in reports.iter().enumerate() {
        let report = json(out);
        let errors: Vec<String> = validator
            .iter_errors(&report)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "report {i}: {errors:#?}");
    }
    let drifted = json(&reports[1]);
    for key in ["drifted", "new", "errors", "privacy"] {
        assert!(
            drifted["summary"][key].as_u64() > Some(0),
            "{key}: {drifted:#}"
        );
    }
    assert!(json(&reports[2])["summary"]["obsolete"].as_u64() > Some(0));
    assert!(json(&reports[3]).get("partition").is_some());
    let sets = json(&reports[4]);
    assert_eq!(sets["cases"][0]["flaky"], true);
    assert!(!sets["cases"][0]["drift"].as_array().unwrap().is_empty());
    assert!(sets["thresholds"]["families"]["verdict"].is_number());
}

/// Every `[text](target)` in `text` whose target is a relative path.
fn relative_links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = &rest[..end];
        if !target.contains("://") && !target.starts_with('#') && !target.starts_with("mailto:") {
            out.push(target.split('#').next().unwrap_or("").to_owned());
        }
    }
    out
}

#[test]
fn relative_links_in_the_readme_and_docs_resolve() {
    let mut files = vec![root().join("README.md"), root().join("fuzz/README.md")];
    for e in std::fs::read_dir(root().join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            files.push(p);
        }
    }
    let mut checked = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            !text.contains("../shared"),
            "{} points outside the repository",
            file.display()
        );
        for target in relative_links(&text) {
            if target.is_empty() {
                continue;
            }
            let resolved = file.parent().unwrap().join(&target);
            assert!(
                resolved.exists(),
                "{}: the link `{target}` does not resolve",
                file.display()
            );
            checked += 1;
        }
    }
    assert!(checked > 5, "only {checked} links checked");
}

/// The ```` ```json example ```` blocks of a Markdown file.
fn examples(text: &str) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("```json example\n") {
        rest = &rest[i + "```json example\n".len()..];
        let end = rest.find("```").expect("a closed block");
        out.push(serde_json::from_str(&rest[..end]).expect("an example is JSON"));
        rest = &rest[end + 3..];
    }
    out
}

/// The verdict of the example's oracle on `events` (numbered, with a completed `run_end` added
/// when there is none).
fn verdict_on(example: &serde_json::Value, events: &serde_json::Value) -> String {
    use tracereplay::trace::{Limits, TraceFile, parse_trace};
    let dir = tempfile::tempdir().unwrap();
    let mut scenario = serde_json::json!({
        "id": "doc.example", "title": "t", "risk": "High", "oracles": [example["oracle"]]
    });
    if let Some(contract) = example.get("contract") {
        std::fs::write(dir.path().join("c.contract.json"), contract.to_string()).unwrap();
        scenario["contract"] = serde_json::json!("c.contract.json");
    }
    let file = dir.path().join("doc.scenario.json");
    std::fs::write(&file, scenario.to_string()).unwrap();
    let file = camino::Utf8PathBuf::try_from(file).unwrap();
    let scenario = tracereplay_core::scenario::load_file(&file)
        .unwrap()
        .remove(0)
        .unwrap();
    let mut lines = vec![
        r#"{"kind":"header","format":"tracereplay.trace","version":1,"scenario":"doc.example","case":"default","privacy":{"prompts":"hashed","hash":"blake3"}}"#.to_owned(),
    ];
    let mut list = events.as_array().unwrap().clone();
    if !list.iter().any(|e| e["kind"] == "run_end") {
        list.push(serde_json::json!({"kind": "run_end", "status": "completed"}));
    }
    for (i, mut e) in list.into_iter().enumerate() {
        e["seq"] = serde_json::json!(i + 1);
        lines.push(e.to_string());
    }
    let text = lines.join("\n") + "\n";
    let trace = TraceFile::from_bytes("doc.trace.ndjson", text.into_bytes(), false);
    let seal = trace.verify_seal(false).unwrap();
    let parsed = parse_trace(&trace, &seal, Limits::default()).unwrap();
    let results = tracereplay_core::oracle::judge(&scenario.oracles, &parsed.trace);
    assert!(!results[0].misconfigured, "{}", results[0].message);
    results[0].verdict.as_str().to_owned()
}

#[test]
fn every_oracle_example_in_the_docs_passes_and_fails_as_it_says() {
    let text = std::fs::read_to_string(root().join("docs/scenarios.md")).unwrap();
    let examples = examples(&text);
    let documented: std::collections::BTreeSet<String> = examples
        .iter()
        .map(|e| e["oracle"]["type"].as_str().unwrap().to_owned())
        .collect();
    let known: std::collections::BTreeSet<String> = tracereplay_core::oracle::known_types()
        .map(str::to_owned)
        .collect();
    assert_eq!(documented, known, "every oracle type has an example");
    for e in &examples {
        let t = e["oracle"]["type"].as_str().unwrap();
        assert_eq!(
            verdict_on(e, &e["passes"]),
            "pass",
            "{t}: the passing example"
        );
        assert_eq!(
            verdict_on(e, &e["fails"]),
            "fail",
            "{t}: the failing example"
        );
    }
}

#[test]
fn the_readme_stays_short_and_says_where_each_kind_of_change_goes() {
    // Reference material lives in `docs/`; the README is the front door.
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 400, "the README has {lines} lines (at most 400)");
    let places = &readme[readme.find("Where things go:").unwrap()..];
    for kind in [
        "**a new oracle**",
        "**a new report format**",
        "**a new ingest format**",
        "**a new recorder**",
        "**a new subcommand**",
    ] {
        assert_eq!(places.matches(kind).count(), 1, "{kind}");
    }
}
