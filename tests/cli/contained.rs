//! Contained and bounded: no write outside its directory, no read without a limit, modes a
//! plain create would give, leftovers of killed runs cleaned up.

use crate::util::*;

#[cfg(unix)]
use std::os::unix::fs::{PermissionsExt, symlink};

/// A symlinked folder inside `baselines/` (a pull request can add one) is never written
/// through, listed, marked obsolete or accepted; a symlinked pending file is never installed.
#[cfg(unix)]
#[test]
fn writes_never_follow_a_symlink_out_of_baselines() {
    let env = Env::new();
    good_suite(&env);
    env.write("baselines/keep.txt", "");
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("important.baseline.json"), b"precious").unwrap();
    symlink(outside.path(), env.path("baselines/good")).unwrap();
    symlink(outside.path(), env.path("baselines/elsewhere")).unwrap();
    let off_ci = [("CI", "false")];
    let out = env.run_with(&["check", "traces/"], &off_ci);
    assert_eq!(out.code, 1, "new baseline: {}", out.stdout);
    // Neither read (the approved baseline, refused) nor written through the symlink.
    assert!(
        out.stdout.contains("is a symlink") || out.stderr.contains("is a symlink"),
        "{}{}",
        out.stdout,
        out.stderr
    );
    let accept = env.run_with(&["baseline", "accept"], &off_ci);
    assert_ne!(accept.code, 0);
    let approve = env.run_with(&["baseline", "approve", "traces/"], &off_ci);
    assert_ne!(approve.code, 0, "{}", approve.stdout);
    let names: Vec<String> = std::fs::read_dir(outside.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(
        names,
        ["important.baseline.json"],
        "nothing written or deleted outside"
    );
    assert_eq!(
        std::fs::read(outside.path().join("important.baseline.json")).unwrap(),
        b"precious"
    );

    // A pending file that is itself a symlink is not accepted.
    let env = Env::new();
    good_suite(&env);
    std::fs::write(outside.path().join("evil.json"), b"{}").unwrap();
    std::fs::create_dir_all(env.path("baselines/good")).unwrap();
    symlink(
        outside.path().join("evil.json"),
        env.path("baselines/good/default.baseline.json.new"),
    )
    .unwrap();
    let accept = env.run_with(&["baseline", "accept"], &off_ci);
    assert_ne!(accept.code, 0);
    assert!(!env.path("baselines/good/default.baseline.json").exists());
}

/// `init` does not follow a symlinked `.github` out of the working directory, and `ingest -o`
/// does not write through a symlinked scenario folder.
#[cfg(unix)]
#[test]
fn init_and_ingest_stay_inside_their_directories() {
    let env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    symlink(outside.path(), env.path(".github")).unwrap();
    let out = env.run(&["init"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("is a symlink"), "{}", out.stderr);
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);

    let env = Env::new();
    env.write(
        "run.json",
        r#"[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]"#,
    );
    std::fs::create_dir_all(env.path("out")).unwrap();
    symlink(outside.path(), env.path("out/s")).unwrap();
    let out = env.run(&[
        "ingest",
        "--from",
        "openai-messages",
        "run.json",
        "-o",
        "out",
        "--scenario",
        "s",
        "--unkeyed",
    ]);
    assert_ne!(out.code, 0, "{}", out.stdout);
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
}

/// A Harness Contract path that is absolute or climbs out of the suite root is a load error:
/// a scenario cannot read (and a report cannot show) a file elsewhere on the machine.
#[test]
fn contract_paths_stay_inside_the_suite_root() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("plan.contract.json");
    std::fs::write(&secret, r#"{"id":"c","plannedActions":[],"verificationPlan":[{"id":"v","kind":"command","command":"SECRET-COMMAND"}]}"#).unwrap();
    for contract in [
        secret.to_str().unwrap().to_owned(),
        "../../../../../../../../..".to_owned() + secret.to_str().unwrap(),
    ] {
        let env = Env::new();
        env.write(
            "traces/s/s.scenario.json",
            format!(r#"{{"id":"s","title":"t","risk":"High","contract":{},"oracles":[{{"type":"contract-conformant"}}]}}"#, serde_json::json!(contract)),
        );
        let c = call("c1", "search");
        env.write(
            "traces/s/d.trace.ndjson.zst",
            sealed_zst(&trace_text("s", "default", &[&c, END])),
        );
        let out = env.run(&["check", "traces/", "--format", "json"]);
        assert_eq!(out.code, 1);
        assert!(!out.stdout.contains("SECRET-COMMAND"), "{}", out.stdout);
        let gates = env.run(&["gates", "traces/"]);
        assert_eq!(gates.code, 1);
        assert!(
            gates.stdout.contains("is absolute")
                || gates.stdout.contains("leads outside the suite root"),
            "{}",
            gates.stdout
        );
    }
}

/// A case id that encodes past a file name's limit gets a bounded name (with a hash suffix):
/// the run folder is written, the pending baseline too, and the other rows are all there.
#[test]
fn long_ids_get_bounded_file_names() {
    let env = Env::new();
    good_suite(&env);
    let long = "é".repeat(100);
    env.write(
        "traces/good/long.trace.ndjson.zst",
        sealed_zst(&trace_text("good", &long, &[&call("c1", "other"), END])),
    );
    env.write("baselines/keep.txt", "");
    let out = env.run_with(
        &[
            "check",
            "traces/",
            "--artifacts",
            "runs",
            "--format",
            "json",
            "--fail-on",
            "any",
        ],
        &[("CI", "false")],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(json(&out)["results"].as_array().unwrap().len(), 2);
    let runs = files_under(&env.path("runs"));
    assert!(
        runs.iter()
            .any(|f| f.contains("/evidence/good/") && f.contains('~')),
        "{runs:?}"
    );
    let pending = files_under(&env.path("baselines"));
    assert!(
        pending.iter().any(|f| f.starts_with("good/")
            && f.contains('~')
            && f.ends_with(".baseline.json.new")),
        "{pending:?}"
    );
    assert!(
        pending
            .iter()
            .all(|f| f.rsplit('/').next().unwrap().len() <= 255)
    );
}

/// Written files get the mode a plain create gives under the umask, not 0600, so a teammate or
/// a CI step running as another user can read them.
#[cfg(unix)]
#[test]
fn written_files_are_readable_by_others_as_the_umask_allows() {
    let env = Env::new();
    good_suite(&env);
    env.write("baselines/keep.txt", "");
    let out = env.run_with(
        &[
            "check",
            "traces/",
            "--json",
            "r.json",
            "--artifacts",
            "runs",
        ],
        &[("CI", "false")],
    );
    assert!(out.code <= 1, "{}", out.stderr);
    // Rows with drift (here `new`) are not cached: a run without comparison fills the cache.
    assert_eq!(env.run(&["check", "traces/", "--drift", "ignore"]).code, 0);
    std::fs::File::create(env.path("plain")).unwrap();
    let mode = |rel: &str| {
        std::fs::metadata(env.path(rel))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    let plain = mode("plain");
    assert_ne!(plain, 0o600);
    let mut written = vec![
        "r.json".to_owned(),
        "baselines/good/default.baseline.json.new".to_owned(),
        ".tracereplay/cache/check-v8.bin".to_owned(),
    ];
    written.extend(
        files_under(&env.path("runs"))
            .into_iter()
            .map(|f| format!("runs/{f}")),
    );
    for f in written {
        assert!(
            env.path(&f).exists(),
            "{f} in {:?}",
            files_under(env.root())
        );
        assert_eq!(mode(&f), plain, "{f}");
    }
}

/// Temporary files left by killed runs are removed by the next run that writes there.
#[test]
fn leftover_temporary_files_are_cleaned_up() {
    let env = Env::new();
    good_suite(&env);
    std::fs::create_dir_all(env.path("baselines/good")).unwrap();
    // Left by killed runs an hour ago; one younger than 15 minutes may be another run's
    // write in progress and stays.
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for i in 0..5 {
        let rel = format!("baselines/good/.tracereplay-000000000000000{i}.tmp");
        env.write(&rel, "torn");
        let file = std::fs::File::options().write(true).open(env.path(&rel));
        file.unwrap().set_modified(hour_ago).unwrap();
    }
    env.write(
        "baselines/good/.tracereplay-00000000000000ff.tmp",
        "in progress",
    );
    env.write("baselines/good/.tracereplay-notes.tmp", "not ours");
    let out = env.run_with(&["check", "traces/"], &[("CI", "false")]);
    assert!(out.code <= 1);
    let left = files_under(&env.path("baselines"));
    assert_eq!(
        left,
        [
            "good/.tracereplay-00000000000000ff.tmp",
            "good/.tracereplay-notes.tmp",
            "good/default.baseline.json.new"
        ],
        "{left:?}"
    );
}

/// An approved baseline, the allow file, a contract or the cache file that is a FIFO or points
/// at `/dev/zero` is refused by name, never read without end (or waited on forever).
#[cfg(unix)]
#[test]
fn special_files_are_never_read() {
    let env = Env::new();
    good_suite(&env);
    std::fs::create_dir_all(env.path("baselines/good")).unwrap();
    symlink(
        "/dev/zero",
        env.path("baselines/good/default.baseline.json"),
    )
    .unwrap();
    symlink("/dev/zero", env.path(".tracereplay-allow")).unwrap();
    std::fs::create_dir_all(env.path(".tracereplay/cache")).unwrap();
    assert!(
        std::process::Command::new("mkfifo")
            .arg(env.path(".tracereplay/cache/check-v8.bin"))
            .status()
            .unwrap()
            .success()
    );
    let out = env.run(&["check", "traces/", "--format", "json"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let report = json(&out);
    let drift = &report["results"][0]["drift"][0];
    assert_eq!(drift["category"], "baseline-invalid", "{report:#}");
    // Refused by name before anything is read: the symlink itself, whatever it leads to.
    let detail = drift["detail"].as_str().unwrap();
    assert!(
        detail.contains("not a regular file") || detail.contains("never read through"),
        "{drift}"
    );
    // A FIFO in a trace's place given by name, to `cat`: refused, not waited on.
    assert!(
        std::process::Command::new("mkfifo")
            .arg(env.path("f.trace.ndjson"))
            .status()
            .unwrap()
            .success()
    );
    let cat = env.run(&["cat", "f.trace.ndjson"]);
    assert_eq!(cat.code, 2, "{}", cat.stderr);
    assert!(cat.stderr.contains("not a regular file"), "{}", cat.stderr);
}

/// Large values cost memory in proportion to their text, not to their number of elements: a
/// trace whose calls carry multi-megabyte arrays is judged, its pending baseline holds each
/// large value as a `{"b3", "bytes"}` summary (a change to it is still drift), and the file
/// stays small.
#[test]
fn large_values_are_summarised() {
    let env = Env::new();
    env.write("traces/s/s.scenario.json", scenario("s", "Low", "bulk"));
    let big = |n: u64| format!("[{}]", vec![n.to_string(); 200_000].join(","));
    let calls: Vec<String> = (0..4)
        .map(|i| format!(r#"{{"kind":"tool_call","call_id":"c{i}","tool":"bulk","args":{{"rows":{},"n":{i}}}}}"#, big(0)))
        .collect();
    let mut events: Vec<&str> = calls.iter().map(String::as_str).collect();
    events.push(END);
    env.write(
        "traces/s/d.trace.ndjson.zst",
        sealed_zst(&trace_text("s", "default", &events)),
    );
    env.write("baselines/keep.txt", "");
    let out = env.run_with(
        &["check", "traces/", "--fail-on", "none"],
        &[("CI", "false")],
    );
    assert_eq!(out.code, 1, "new baseline: {}", out.stderr);
    let pending = env.read("baselines/s/default.baseline.json.new");
    assert!(pending.len() < 10_000, "{} bytes", pending.len());
    let text = String::from_utf8(pending).unwrap();
    assert!(
        text.contains(r#""b3": "b3:"#) && text.contains(r#""bytes": 400001"#),
        "{text}"
    );
    std::fs::rename(
        env.path("baselines/s/default.baseline.json.new"),
        env.path("baselines/s/default.baseline.json"),
    )
    .unwrap();
    assert_eq!(env.run(&["check", "traces/"]).code, 0);
    // One element of one array changed: drift, found by the summary's hash.
    let changed = calls[0].replacen("[0,", "[1,", 1);
    let mut events: Vec<&str> = vec![&changed];
    events.extend(calls[1..].iter().map(String::as_str));
    events.push(END);
    env.write(
        "traces/s/d.trace.ndjson.zst",
        sealed_zst(&trace_text("s", "default", &events)),
    );
    let out = env.run(&["check", "traces/", "--format", "json"]);
    assert_eq!(out.code, 1);
    assert_eq!(
        json(&out)["results"][0]["drift"][0]["category"],
        "arguments-changed"
    );
}

/// `gates --strength` on a long trace judges a bounded sample of mutants, one at a time, and
/// says so; a 1,000-call trace judged by an unordered `tool-sequence` is measured, not stuck.
#[test]
fn strength_samples_mutants_beyond_its_budget_and_says_so() {
    let env = Env::new();
    let tools: Vec<String> = (0..1000).map(|i| format!("t{}", i % 2)).collect();
    env.write(
        "traces/s/s.scenario.json",
        serde_json::json!({"id": "s", "title": "t", "risk": "High",
            "oracles": [{"type": "tool-sequence", "mode": "unordered", "tools": tools}]})
        .to_string(),
    );
    let calls: Vec<String> = (0..1000)
        .map(|i| {
            format!(
                r#"{{"kind":"tool_call","call_id":"c{i}","tool":"t{}","args":{{"n":{i}}}}}"#,
                i % 2
            )
        })
        .collect();
    let mut events: Vec<&str> = calls.iter().map(String::as_str).collect();
    events.push(END);
    env.write(
        "traces/s/d.trace.ndjson.zst",
        sealed_zst(&trace_text("s", "default", &events)),
    );
    let out = env.run(&["gates", "traces/", "--strength"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains(
            "sampled: 400 of 4001 mutants of `traces/s/d.trace.ndjson.zst` (at most 400 per trace)"
        ),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("/400 mutants caught over 1 trace(s)"),
        "{}",
        out.stdout
    );
}
