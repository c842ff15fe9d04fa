//! Reports are byte-identical at a suite's scale: whatever the thread count, cold or from the
//! cache, with rows held in memory or on disk. The demo suite's tests (`check.rs`, `scale.rs`)
//! hold this for 30 traces; here a suite past the sizes where the run's parallel steps split
//! their work (the JSON report is drawn 4,096 rows at a time, the sort's order check reads keys
//! in chunks of 4,096) holds it with every kind of row: passing, failing, errors, drifted, new
//! and obsolete.

use crate::util::*;

const SCENARIOS: usize = 15;
const CASES: usize = 300;

fn scenario_id(s: usize) -> String {
    format!("scale.s{s:02}")
}

/// A run of case `c` of scenario `s`: a search (its query `query`), then `shell` when `unsafe_`.
fn run_text(s: usize, c: usize, query: &str, unsafe_: bool) -> String {
    let id = scenario_id(s);
    let search = format!(
        r#"{{"kind":"tool_call","call_id":"c1","tool":"search","args":{{"q":"{query}","page":{c}}}}}"#
    );
    let result = format!(
        r#"{{"kind":"tool_result","call_id":"c1","ok":true,"output":{{"hits":{},"first":"result {c}"}}}}"#,
        c % 7
    );
    let shell = r#"{"kind":"tool_call","call_id":"c2","tool":"shell","args":{"cmd":"ls"}}"#;
    let answer = format!(r#"{{"kind":"final_answer","text":"answer {c} of {id}"}}"#);
    let mut events = vec![search.as_str(), result.as_str()];
    if unsafe_ {
        events.push(shell);
    }
    events.extend([answer.as_str(), END]);
    trace_text(&id, &format!("c{c:03}"), &events)
}

fn trace_path(s: usize, c: usize) -> String {
    format!("traces/{}/c{c:03}.trace.ndjson.zst", scenario_id(s))
}

/// The suite: every scenario wants a search and no `shell`; one case in 29 runs `shell`.
fn write_suite(env: &Env) {
    for s in 0..SCENARIOS {
        let id = scenario_id(s);
        env.write(
            &format!("traces/{id}/{id}.scenario.json"),
            format!(
                r#"{{"id":"{id}","title":"t","risk":"High","oracles":[{{"type":"tool-called","tool":"search"}},{{"type":"tool-not-called","tool":"shell"}}]}}"#
            ),
        );
        for c in 0..CASES {
            let text = run_text(s, c, "weather", c % 29 == 0);
            env.write(&trace_path(s, c), sealed_zst(&text));
        }
    }
}

/// Changes after approval: one case in 31 searches something else (drift), one in 97 breaks its
/// seal (an error row), scenario 0 gains cases (new) and scenario 1 loses one (obsolete).
fn change_suite(env: &Env) {
    for s in 0..SCENARIOS {
        for c in (0..CASES).filter(|c| c % 31 == 5) {
            let text = run_text(s, c, "climate", c % 29 == 0);
            env.write(&trace_path(s, c), sealed_zst(&text));
        }
        for c in (0..CASES).filter(|c| c % 97 == 3) {
            // Edited after sealing: its seal no longer holds (an error row, still attributed
            // to its scenario and case by its header).
            let sealed = String::from_utf8(sealed_bytes(&run_text(s, c, "weather", false)));
            let broken = sealed.unwrap().replace("\"answer ", "\"ANSWER ");
            env.write(
                &trace_path(s, c),
                zstd::bulk::compress(broken.as_bytes(), 3).unwrap(),
            );
        }
    }
    for c in CASES..CASES + 12 {
        env.write(
            &trace_path(0, c),
            sealed_zst(&run_text(0, c, "weather", false)),
        );
    }
    std::fs::remove_file(env.path(&trace_path(1, 1))).unwrap();
}

/// Every report one run writes: the human report (`-v`) and the JSON, JUnit, Markdown and HTML
/// files, with the exit code. (The OTLP logs are stamped with the run's time, and the HTML page
/// with when it was made: those times are not compared.)
fn reports(env: &Env, extra: &[&str]) -> Vec<(String, Vec<u8>)> {
    let files = ["r.json", "r.xml", "r.md", "r.html"];
    for f in files {
        let _ = std::fs::remove_file(env.path(f));
    }
    let mut args = vec![
        "check", "traces", "-v", "--json", "r.json", "--junit", "r.xml",
    ];
    args.extend(["--markdown", "r.md", "--html", "r.html"]);
    args.extend(extra);
    let out = env.run(&args);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    let mut all = vec![
        ("exit code".to_owned(), out.code.to_string().into_bytes()),
        ("human report".to_owned(), out.stdout.into_bytes()),
    ];
    all.extend(files.map(|f| (f.to_owned(), env.read(f))));
    // The HTML page says when it was made: that time, wherever it is written, is left out.
    let html = String::from_utf8(all.pop().expect("the HTML report").1).unwrap();
    let made = html
        .split("\"generated\":\"")
        .nth(1)
        .and_then(|r| r.split('"').next());
    let made = made.expect("the page says when it was made").to_owned();
    all.push((
        "r.html".to_owned(),
        html.replace(&made, "(time)").into_bytes(),
    ));
    all
}

#[test]
fn reports_are_identical_at_scale_whatever_the_threads_the_cache_and_the_row_memory() {
    let env = Env::new();
    write_suite(&env);
    let approved = env.run_with(&["baseline", "approve", "traces"], &[("CI", "")]);
    assert_eq!(approved.code, 0, "{}{}", approved.stdout, approved.stderr);
    let baselines = files_under(&env.path("baselines"));
    assert_eq!(baselines.len(), SCENARIOS * CASES, "every case approved");
    change_suite(&env);

    let cold = reports(&env, &["-j", "1", "--no-cache"]);
    // Every kind of row is there, so the comparison below covers each.
    let json: serde_json::Value = serde_json::from_slice(&cold[2].1).unwrap();
    let summary = &json["summary"];
    assert_eq!(summary["traces"], SCENARIOS * CASES + 12 - 1, "{summary}");
    for (what, least) in [
        ("passed", 3000),
        ("failed", 100),
        ("errors", 30),
        ("drifted", 100),
        ("new", 12),
        ("obsolete", 1),
    ] {
        let n = summary[what].as_u64().unwrap_or(0);
        assert!(n >= least, "{what}: {n} in {summary}");
    }
    assert_eq!(cold[0].1, b"1", "failures fail the run");

    let cache = ".tracereplay/cache/check-v8.bin";
    for (label, extra) in [
        ("-j 2, cold", &["-j", "2", "--no-cache"][..]),
        ("-j 2, filling the cache", &["-j", "2"]),
        ("-j 2, from the cache", &["-j", "2"]),
        ("-j 1, from the cache", &["-j", "1"]),
        (
            "-j 2, rows on disk",
            &["-j", "2", "--no-cache", "--row-memory", "0"],
        ),
        (
            "-j 2, from the cache on disk",
            &["-j", "2", "--row-memory", "0"],
        ),
    ] {
        let again = reports(&env, extra);
        for ((what, want), (_, got)) in cold.iter().zip(&again) {
            assert!(
                want == got,
                "{what} differs with {label}: {}",
                first_difference(want, got)
            );
        }
        if label.contains("filling") {
            assert!(env.path(cache).exists(), "the cache is written");
        }
    }
    // Nothing was written under CI: no pending baseline, and the approved ones untouched.
    assert_eq!(files_under(&env.path("baselines")), baselines);
}

/// Where two reports first differ, for the failure message: the line, and up to 200 bytes of
/// each from a little before the first differing byte.
fn first_difference(want: &[u8], got: &[u8]) -> String {
    let at = (want.iter().zip(got)).position(|(a, b)| a != b);
    let at = at.unwrap_or(want.len().min(got.len()));
    let line = want[..at].iter().filter(|&&b| b == b'\n').count() + 1;
    let from = at.saturating_sub(60);
    let show = |r: &[u8]| {
        String::from_utf8_lossy(&r[from.min(r.len())..(from + 200).min(r.len())]).into_owned()
    };
    format!(
        "line {line}, byte {at}:\n  want …{}\n  got  …{}",
        show(want),
        show(got)
    )
}
