//! The HTML report in a real browser: headless Chromium (`chromium --headless --dump-dom`) loads
//! the file from disk, runs its script, and the tests read the DOM it built. View state lives in
//! the URL's hash, so a filter or a trace view is opened by URL. Chromium's console is logged
//! to stderr (`--enable-logging=stderr`), and any console line fails the test.
//!
//! Chromium is a prerequisite: `scripts/install-test-deps` installs Debian's `chromium` when it is missing; run
//! locally without it, these tests fail and say how to install it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::*;

pub(crate) fn chromium() -> PathBuf {
    let candidates = [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ];
    if let Some(p) = std::env::var_os("TRACEREPLAY_CHROMIUM") {
        return PathBuf::from(p);
    }
    for c in candidates {
        if let Ok(out) = Command::new("which").arg(c).output() {
            if out.status.success() {
                return PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            }
        }
    }
    panic!(
        "the HTML report tests need Chromium: install it with `apt-get install chromium` \
         (`scripts/install-test-deps` does), or point TRACEREPLAY_CHROMIUM at a Chromium or Chrome binary"
    );
}

/// The DOM after the page's scripts ran, and Chromium's console lines.
pub(crate) fn render_dom(file: &Path, hash: &str) -> (String, Vec<String>) {
    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}{hash}", file.display());
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=10000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let console = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_owned)
        .collect();
    (String::from_utf8(out.stdout).unwrap(), console)
}

/// The part of the DOM the script built.
pub(crate) fn app(dom: &str) -> &str {
    let start = dom.find("<div id=\"app\"").expect("the app element");
    let end = dom[start..]
        .find("<script")
        .map_or(dom.len(), |e| start + e);
    &dom[start..end]
}

pub(crate) fn ready(dom: &str, console: &[String]) {
    assert!(
        dom.contains("data-ready=\"1\""),
        "the script did not finish:\n{}",
        &dom[..dom.len().min(3000)]
    );
    assert!(!dom.contains("data-errors="), "script errors: {dom}");
    assert!(console.is_empty(), "console output: {console:?}");
}

/// `check traces/ --html report.html` under CI at a fixed time, which must pass; the page.
pub(crate) fn html_report(env: &Env) -> PathBuf {
    let out = env.run_with(
        &["check", "traces/", "--html", "report.html"],
        &[("CI", "true"), ("SOURCE_DATE_EPOCH", "1764547200")],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    env.path("report.html")
}

fn demo_report(env: &Env) -> PathBuf {
    copy_demo(env, true);
    html_report(env)
}

/// A case of four trials, one failing, under a policy that passes it (flaky).
fn flaky_case(env: &Env) {
    let policy = r#","trials":{"min":4,"pass":{"at-least":3}}"#;
    crate::trials::suite(
        env,
        "High",
        policy,
        &["search", "search", "other", "search"],
    );
}

/// The index (in report order) of the row whose path ends with `suffix`.
fn row_index(env: &Env, suffix: &str) -> usize {
    let report = json(&env.run(&["check", "traces/", "--format", "json"]));
    (report["results"].as_array().unwrap().iter())
        .position(|r| r["path"].as_str().is_some_and(|p| p.ends_with(suffix)))
        .unwrap()
}

#[test]
fn the_demo_report_shows_its_counts_and_exit_code_with_no_console_error() {
    let env = Env::new();
    let file = demo_report(&env);
    let html = std::fs::read_to_string(&file).unwrap();
    // Self-contained: nothing is fetched.
    for outside in ["src=\"http", "href=\"http", "@import", "url(", "<link"] {
        assert!(!html.contains(outside), "{outside}");
    }
    let (dom, console) = render_dom(&file, "");
    ready(&dom, &console);
    let app = app(&dom);
    assert!(app.contains("exit code 0: the run passes"), "{app}");
    assert!(
        app.contains("<div data-count=\"traces\"><dt>traces</dt><dd>20</dd></div>"),
        "{app}"
    );
    assert!(
        app.contains("<div data-count=\"failed\"><dt>failed</dt><dd>9</dd></div>"),
        "{app}"
    );
    assert!(app.contains("rows 1–20 of 20"), "{app}");
    assert!(
        app.contains("<ul class=\"usage\" id=\"usage\"><li>usage: 49 request(s)"),
        "{app}"
    );
    // Failures first by default.
    let first = app.find("data-verdict=").unwrap();
    assert!(
        app[first..].starts_with("data-verdict=\"fail\""),
        "{}",
        &app[first..first + 40]
    );
}

#[test]
fn a_filter_hides_passing_rows() {
    let env = Env::new();
    let file = demo_report(&env);
    let (dom, console) = render_dom(&file, "#verdict=failing");
    ready(&dom, &console);
    let app = app(&dom);
    assert_eq!(app.matches("data-verdict=\"fail\"").count(), 9, "{app}");
    assert_eq!(app.matches("data-verdict=\"pass\"").count(), 0, "{app}");
    assert!(app.contains("rows 1–9 of 9"), "{app}");
    let (high, _) = render_dom(&file, "#risk=High");
    assert_eq!(app_rows(&high), 1, "{high}");
}

fn app_rows(page: &str) -> usize {
    app(page).matches("<tr data-row=").count()
}

#[test]
fn a_trace_view_highlights_the_deciding_events_of_a_known_failure() {
    let env = Env::new();
    let file = demo_report(&env);
    let i = row_index(
        &env,
        "agent.approval.denied/ignores-denial.trace.ndjson.zst",
    );
    let (dom, console) = render_dom(&file, &format!("#trace={i}"));
    ready(&dom, &console);
    let app = app(&dom);
    assert!(
        app.contains("agent.approval.denied / ignores-denial"),
        "{app}"
    );
    // no-unsafe-tool and tool-not-called cite the deploy call (seq 5), final-answer-contains the
    // answer (seq 7): those, and only those, are highlighted.
    let deciding: Vec<&str> = app
        .match_indices("class=\"event ")
        .filter(|(at, _)| {
            app[*at..]
                .split('"')
                .nth(1)
                .is_some_and(|c| c.contains("deciding"))
        })
        .map(|(at, _)| &app[at.saturating_sub(40)..at])
        .collect();
    assert_eq!(deciding.len(), 2, "{deciding:?}");
    assert!(
        app.contains("id=\"ev-5\" tabindex=\"-1\" class=\"event k-tool_call deciding\""),
        "{app}"
    );
    assert!(
        app.contains("id=\"ev-7\" tabindex=\"-1\" class=\"event k-final_answer deciding\""),
        "{app}"
    );
    assert!(
        app.contains("data-seq=\"5\">seq 5</a>"),
        "the oracle links its evidence: {app}"
    );
    assert!(
        app.contains("call deploy {\"env\":\"production\"} → ok"),
        "{app}"
    );
    // A partial score shows beside its oracle.
    let i = row_index(&env, "agent.migrated.checks/off-target.trace.ndjson.zst");
    let (scored, console) = render_dom(&file, &format!("#trace={i}"));
    ready(&scored, &console);
    assert!(
        scored.contains("tool-sequence #0 (score 0.667)"),
        "{scored}"
    );
}

#[test]
fn trace_controlled_strings_stay_text() {
    let env = Env::new();
    let hostile_case =
        "</script><img src=x onerror=\"document.body.setAttribute('data-pwned','case')\"><!--";
    let tool = "<img src=x onerror=\"document.body.setAttribute('data-pwned','tool')\">";
    let args = serde_json::json!({"q": "</script><script>document.body.setAttribute('data-pwned','args')</script>\u{2028}\u{2029}<!--"});
    let answer = "done </script><svg onload=\"document.body.setAttribute('data-pwned','answer')\">";
    env.write(
        "traces/x/x.scenario.json",
        serde_json::json!({"id": "x", "title": "t", "risk": "Low", "oracles": [
            {"type": "tool-not-called", "tool": tool},
            {"type": "final-answer-contains", "value": "never"}
        ]})
        .to_string(),
    );
    let call =
        serde_json::json!({"kind": "tool_call", "call_id": "c1", "tool": tool, "args": args})
            .to_string();
    let fin = serde_json::json!({"kind": "final_answer", "text": answer}).to_string();
    let header = serde_json::json!({"kind": "header", "format": "tracereplay.trace", "version": 1, "scenario": "x", "case": hostile_case});
    let text = format!(
        "{header}\n{}\n{}\n{}\n",
        with_seq(&call, 1),
        with_seq(&fin, 2),
        with_seq(END, 3)
    );
    env.write("traces/x/hostile.trace.ndjson.zst", sealed_zst(&text));
    let out = env.run(&["check", "traces/", "--html", "report.html"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let file = env.path("report.html");
    let html = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        html.matches("</script>").count(),
        2,
        "only the page's own script elements end"
    );
    assert!(!html.contains('\u{2028}') && !html.contains("<!--"));
    for hash in ["", "#trace=0"] {
        let (dom, console) = render_dom(&file, hash);
        ready(&dom, &console);
        let body = &dom[dom.find("<body").unwrap()..];
        let body_tag = &body[..body.find('>').unwrap()];
        assert!(!body_tag.contains("data-pwned"), "{body_tag}");
        let app = app(&dom);
        assert!(!app.contains("<img") && !app.contains("<svg"), "{app}");
        if hash.is_empty() {
            assert!(
                app.contains("&lt;/script&gt;&lt;img src=x onerror="),
                "the case name as text: {app}"
            );
        } else {
            assert!(
                app.contains("call &lt;img src=x onerror="),
                "the tool name as text: {app}"
            );
            assert!(
                app.contains("<strong>tool &lt;img src=x onerror="),
                "the conversation's tool name as text: {app}"
            );
            assert!(
                app.contains("done &lt;/script&gt;&lt;svg onload="),
                "the answer as text: {app}"
            );
            assert!(
                app.contains("&lt;/script&gt;&lt;script&gt;document.body.setAttribute"),
                "the arguments as text: {app}"
            );
        }
    }
}

pub(crate) fn with_seq(line: &str, seq: u64) -> String {
    let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
    v["seq"] = serde_json::json!(seq);
    v.to_string()
}

#[test]
fn the_report_is_deterministic_and_written_by_run_folders_and_merge() {
    let env = Env::new();
    copy_demo(&env, true);
    let epoch = [("CI", "true"), ("SOURCE_DATE_EPOCH", "1764547200")];
    env.run_with(
        &[
            "check", "traces/", "--html", "a.html", "-j", "1", "--json", "a.json",
        ],
        &epoch,
    );
    env.run_with(
        &[
            "check",
            "traces/",
            "--html",
            "b.html",
            "-j",
            "2",
            "--no-cache",
        ],
        &epoch,
    );
    assert_eq!(
        env.read("a.html"),
        env.read("b.html"),
        "byte-identical whatever the thread count"
    );
    let html = String::from_utf8(env.read("a.html")).unwrap();
    assert!(
        html.contains("2025-12-01T00:00:00Z"),
        "the time comes from SOURCE_DATE_EPOCH"
    );
    // The embedded report is the JSON report.
    let open = "<script type=\"application/json\" id=\"data\">";
    let start = html.find(open).unwrap() + open.len();
    let end = start + html[start..].find("</script>").unwrap();
    let data: serde_json::Value = serde_json::from_str(&html[start..end]).unwrap();
    let report: serde_json::Value = serde_json::from_slice(&env.read("a.json")).unwrap();
    assert_eq!(data["report"], report);
    assert_eq!(
        data["timelines"].as_object().unwrap().len(),
        9,
        "events for the nine failures only"
    );

    let out = env.run_with(&["check", "traces/", "--artifacts"], &epoch);
    assert!(out.stderr.contains("run folder:"), "{}", out.stderr);
    let runs: Vec<_> = std::fs::read_dir(env.path(".tracereplay/runs"))
        .unwrap()
        .collect();
    let run = runs[0].as_ref().unwrap().path();
    assert!(run.join("report.html").exists());

    for k in 1..=2 {
        let share = format!("hash:{k}/2");
        let json = format!("share{k}.json");
        env.run_with(
            &["check", "traces/", "--partition", &share, "--json", &json],
            &epoch,
        );
    }
    let out = env.run_with(
        &[
            "merge",
            "share1.json",
            "share2.json",
            "--html",
            "merged.html",
        ],
        &epoch,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (dom, console) = render_dom(&env.path("merged.html"), "");
    ready(&dom, &console);
    assert!(
        app(&dom).contains("merged from 2 report(s)"),
        "{}",
        app(&dom)
    );
    assert!(app(&dom).contains("rows 1–20 of 20"), "{}", app(&dom));
}

#[test]
fn drift_shows_side_by_side_with_the_changed_key_on_one_line() {
    let env = Env::new();
    let write = |answer: &str| {
        env.write(
            "traces/d/d.scenario.json",
            serde_json::json!({"id": "d", "title": "t", "risk": "Low", "oracles": [{"type": "tool-called", "tool": "book"}]}).to_string(),
        );
        let args = serde_json::json!({"flight": "HAT136", "passengers": [{"name": "Mia Li", "dob": "1990-04-05"}], "payment": "certificate_7504069", "insurance": answer});
        let call =
            serde_json::json!({"kind": "tool_call", "call_id": "c1", "tool": "book", "args": args})
                .to_string();
        env.write(
            "traces/d/default.trace.ndjson.zst",
            sealed_zst(&trace_text("d", "default", &[&call, END])),
        );
    };
    write("no");
    assert_eq!(env.run_with(&["baseline", "approve"], &[]).code, 0);
    write("yes");
    let out = env.run(&["check", "traces/", "--html", "report.html"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let (dom, console) = render_dom(&env.path("report.html"), "#trace=0");
    ready(&dom, &console);
    let app = app(&dom);
    assert!(app.contains("arguments-changed"), "{app}");
    assert!(app.contains("<td class=\"del\">    \"insurance\": \"no\",</td><td class=\"add\">    \"insurance\": \"yes\",</td>"), "{app}");
    assert_eq!(app.matches("class=\"del\"").count(), 1, "{app}");
}

#[test]
fn a_case_of_several_trials_shows_its_pass_rate_with_its_trials_one_click_away() {
    let env = Env::new();
    flaky_case(&env);
    let file = html_report(&env);
    let (dom, console) = render_dom(&file, "");
    ready(&dom, &console);
    let app = app(&dom);
    assert!(
        app.contains("FLAKY s/c: 3/4 trials pass, pass rate 0.75 (95% 0.30–0.95)"),
        "{app}"
    );
    assert!(app.contains("0:tool-called passed 3 of 4 trials"), "{app}");
    let cases = &app[app.find("id=\"cases\"").expect("a cases section")..];
    assert_eq!(
        cases
            .matches("<button type=\"button\" class=\"link\">trial ")
            .count(),
        4
    );
    assert!(cases.contains("trial 2: fail"), "{cases}");
    // One click: the trace view of trial 2.
    let (dom, console) = render_dom(&file, "#trace=2");
    ready(&dom, &console);
    let view = self::app(&dom);
    assert!(view.contains("traces/s/c/2.trace.ndjson.zst"), "{view}");
}

/// The table says why without a click: each failing row's first failing oracle (or error, or
/// blocking drift) and its message; ids sort as people read them (`task-2` before `task-10`);
/// the content hash is shortened, whole on hover; a trial shows its case's pass count.
#[test]
fn the_table_says_why_sorts_ids_naturally_and_shortens_hashes() {
    let env = Env::new();
    let file = demo_report(&env);
    let (dom, console) = render_dom(&file, "");
    ready(&dom, &console);
    let app = app(&dom);
    assert!(
        app.contains("<td class=\"why\">no-unsafe-tool fail: unsafe call(s) without a covering approval: `deploy`"),
        "{app}"
    );
    let report = json(&env.run(&["check", "traces/", "--format", "json"]));
    let hash = report["results"][0]["content_hash"].as_str().unwrap();
    let (algo, hex) = hash.split_once(':').unwrap();
    assert!(
        app.contains(&format!(
            "<td class=\"hash\" title=\"{hash}\">{algo}:{}…</td>",
            &hex[..12]
        )),
        "{app}"
    );
    assert!(
        !app.contains(&format!(">{hash}<")),
        "the table shows no whole hash"
    );

    // Natural order of ids.
    let env = Env::new();
    for case in ["task-10", "task-2", "task-1"] {
        one_trace_suite(&env, "s", "Low", "search", case);
    }
    html_report(&env);
    let (dom, console) = render_dom(&env.path("report.html"), "#sort=case");
    ready(&dom, &console);
    let app = self::app(&dom);
    let at = |case: &str| {
        app.find(&format!("<td class=\"id\">{case}</td>"))
            .unwrap_or_else(|| panic!("{case} in {app}"))
    };
    assert!(
        at("task-1") < at("task-2") && at("task-2") < at("task-10"),
        "{app}"
    );
    let (dom, _) = render_dom(&env.path("report.html"), "#sort=case&dir=-1");
    let app = self::app(&dom);
    let at = |case: &str| app.find(&format!("<td class=\"id\">{case}</td>")).unwrap();
    assert!(
        at("task-10") < at("task-2") && at("task-2") < at("task-1"),
        "{app}"
    );
}

/// A trial's row carries its case's pass count and flaky mark.
#[test]
fn a_trial_row_shows_its_case_pass_count() {
    let env = Env::new();
    flaky_case(&env);
    html_report(&env);
    let (dom, console) = render_dom(&env.path("report.html"), "");
    ready(&dom, &console);
    let app = app(&dom);
    assert!(
        app.contains("<span class=\"trial\"> · trial 2 · 3/4 pass · flaky</span>"),
        "{app}"
    );
    assert!(
        app.contains("<td class=\"why\">tool-called fail: "),
        "{app}"
    );
    // A trial is linked by its scenario, case and trial.
    let (dom, console) = render_dom(&env.path("report.html"), "#s/c/2");
    ready(&dom, &console);
    assert!(
        self::app(&dom).contains("traces/s/c/2.trace.ndjson.zst"),
        "{dom}"
    );
}

/// A trace is linked by its scenario and case (and trial), not its row number: the link opens
/// the same trace when other rows come before it, the bare `#scenario/case` form works, and
/// row-number links still open.
#[test]
fn links_name_the_trace_by_scenario_and_case() {
    let env = Env::new();
    let file = demo_report(&env);
    let html = std::fs::read_to_string(&file).unwrap();
    assert!(html.contains("function linkOf(i)"), "the page links by key");
    let path = "traces/agent.approval.denied/ignores-denial.trace.ndjson.zst";
    for hash in [
        "#agent.approval.denied/ignores-denial",
        "#verdict=failing&trace=agent.approval.denied%2Fignores-denial",
        &format!(
            "#trace={}",
            row_index(&env, "ignores-denial.trace.ndjson.zst")
        ),
    ] {
        let (dom, console) = render_dom(&file, hash);
        ready(&dom, &console);
        let view = app(&dom);
        assert!(view.contains(path), "{hash}: {view}");
        assert!(view.contains("id=\"close\""), "{hash}: a trace view");
    }
    // A new scenario sorts before it; the same link still names the same trace.
    one_trace_suite(&env, "aaa.first", "Low", "search", "default");
    let out = env.run_with(
        &["check", "traces/", "--html", "report.html"],
        &[("CI", "true"), ("SOURCE_DATE_EPOCH", "1764547200")],
    );
    assert!(out.code <= 1, "{}", out.stderr);
    let (dom, console) = render_dom(&file, "#agent.approval.denied/ignores-denial");
    ready(&dom, &console);
    assert!(app(&dom).contains(path));
    let (dom, _) = render_dom(&file, "#no.such/trace");
    assert!(app(&dom).contains("No such trace."));
}

/// An argument mismatch shows only the differing keys, both values highlighted, per failing
/// turn where the oracle judges turns; the whole objects are a click away and carry none of the
/// internal keys (`differences`, `differs`, `seq`).
#[test]
fn argument_mismatches_show_only_the_differing_keys() {
    let env = Env::new();
    let file = demo_report(&env);
    let i = row_index(&env, "agent.migrated.checks/off-target.trace.ndjson.zst");
    let (dom, console) = render_dom(&file, &format!("#trace={i}"));
    ready(&dom, &console);
    let view = app(&dom);
    // One differing-keys table per failing oracle with differences: tool-sequence, tool-args.
    let tables: Vec<&str> = (view.split("<table class=\"keydiff\">").skip(1))
        .map(|t| &t[..t.find("</table>").unwrap()])
        .collect();
    assert_eq!(tables.len(), 2, "{view}");
    let row = |where_: &str, key: &str, expected: &str, found: &str| {
        format!(
            "<td class=\"muted\">{where_}</td><td class=\"key\">{key}</td><td class=\"del\"><code>{expected}</code></td><td class=\"add\"><code>{found}</code></td>"
        )
    };
    // The tool-sequence names its failing turn.
    let want = row("turn 2", "flight", "\"AF1234\"", "\"LH999\"");
    assert!(tables[0].contains(&want), "{}", tables[0]);
    let want = row("", "passenger", "{\"name\":\"Ada\"}", "{\"name\":\"Bob\"}");
    assert!(tables[1].contains(&want), "{}", tables[1]);
    let want = row("", "flight", "(missing)", "\"LH999\"");
    assert!(tables[1].contains(&want), "{}", tables[1]);
    let whole = &view[view
        .find("<details class=\"whole\">")
        .expect("the whole objects")..];
    let whole = &whole[..whole.find("</details>").unwrap()];
    for internal in ["differences", "differs", "\"seq\""] {
        assert!(!whole.contains(internal), "{internal} in {whole}");
    }
}
