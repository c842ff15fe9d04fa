//! Traces in object storage, against a real S3 implementation on loopback: moto in server mode
//! (`tests/cli/s3/server.py`), started by each test with the suite uploaded to it. moto comes
//! from `scripts/install-test-deps` (into `target/test-venv`, or `TRACEREPLAY_PYTHON` names a
//! Python that has it); without it these tests fail and say how to install it.

use std::path::PathBuf;
use std::process::Command;

use crate::s3::S3;
use crate::util::*;

/// The demo's checkout in `env`: its scenarios and approved baselines, and no trace.
fn checkout(env: &Env) {
    copy_demo(env, true);
    for f in files_under(&env.path("traces")) {
        if f.contains(".trace.") {
            std::fs::remove_file(env.path("traces").join(f)).unwrap();
        }
    }
}

/// A demo checkout in `env` ([`checkout`]), and a server holding the demo's traces (also in
/// `uploaded/`) at the root of the bucket `suite`, with `extra` written beside them first (and
/// a bucket the reader may not read).
fn demo_in_s3(env: &Env, extra: &[(&str, Vec<u8>)]) -> S3 {
    copy_demo(env, false);
    let uploaded = env.path("uploaded");
    std::fs::rename(env.path("traces"), &uploaded).unwrap();
    for (rel, bytes) in extra {
        env.write(&format!("uploaded/{rel}"), bytes);
    }
    checkout(env);
    let args = [
        format!("suite={}", uploaded.display()),
        "--forbidden".into(),
        "locked".into(),
    ];
    S3::start(&args, &env.path("s3.log"))
}

#[test]
fn a_check_of_a_bucket_equals_the_check_of_the_same_files() {
    let env = Env::with_remote();
    // More traces than one read-ahead window holds (256), so several windows are read.
    let many: Vec<(String, Vec<u8>)> = (0..300)
        .map(|i| {
            let case = format!("case-{i:03}");
            let text = trace_text("agent.tool.basic", &case, &[&call("c1", "web_search"), END]);
            (format!("many/{case}.trace.ndjson.zst"), sealed_zst(&text))
        })
        .collect();
    let extra: Vec<(&str, Vec<u8>)> = many.iter().map(|(p, b)| (p.as_str(), b.clone())).collect();
    let s3 = demo_in_s3(&env, &extra);
    let remote = s3.run(
        &env,
        &["check", "s3://suite", "--no-cache", "--format", "json"],
    );
    // The same traces on disk, in the checkout beside their scenarios.
    for f in files_under(&env.path("uploaded")) {
        let bytes = env.read(&format!("uploaded/{f}"));
        env.write(&format!("traces/{f}"), bytes);
    }
    let local = env.run(&["check", "traces", "--no-cache", "--format", "json"]);
    assert_eq!(
        remote.code, local.code,
        "{}\n{}",
        remote.stderr, local.stderr
    );
    assert_eq!(remote.stderr, local.stderr);
    let (remote, local) = (json(&remote), json(&local));
    // Rows name remote traces by URL; otherwise the reports are the same.
    let traces: Vec<&str> = (remote["results"].as_array().unwrap().iter())
        .filter_map(|r| r["path"].as_str())
        .collect();
    assert!(traces.len() >= 10, "{traces:?}");
    assert!(
        traces.iter().all(|t| t.starts_with("s3://suite/")),
        "{traces:?}"
    );
    let text = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap();
    assert_eq!(
        text(&remote).replace("s3://suite/", "traces/"),
        text(&local)
    );
}

#[test]
fn a_restored_cache_reads_nothing_it_has_judged() {
    let env = Env::with_remote();
    let s3 = demo_in_s3(&env, &[]);
    let first = s3.run(&env, &["check", "s3://suite", "--timings"]);
    let read = s3.reads("suite");
    assert!(
        read >= 10,
        "the first run reads every trace: {read}\n{}",
        first.stderr
    );
    // A fresh runner: a fresh checkout (every scenario and baseline file new, with new inodes
    // and times) and the cache directory restored.
    for dir in ["traces", "baselines"] {
        std::fs::remove_dir_all(env.path(dir)).unwrap();
    }
    checkout(&env);
    let again = s3.run(&env, &["check", "s3://suite", "--timings"]);
    assert_eq!(again.code, first.code);
    assert_eq!(again.stdout, first.stdout);
    assert_eq!(
        s3.reads("suite"),
        read,
        "a cached trace was read again: {}",
        again.stderr
    );
    assert!(again.stderr.contains("from the cache"), "{}", again.stderr);
}

#[test]
fn shares_over_s3_merge_to_the_whole() {
    let env = Env::with_remote();
    let s3 = demo_in_s3(&env, &[]);
    let whole = s3.run(
        &env,
        &["check", "s3://suite", "--no-cache", "--json", "whole.json"],
    );
    std::fs::create_dir_all(env.path("shares")).unwrap();
    for k in 1..=3 {
        let share = format!("hash:{k}/3");
        let out = format!("shares/share{k}.json");
        s3.run(
            &env,
            &[
                "check",
                "s3://suite",
                "--no-cache",
                "--partition",
                &share,
                "--json",
                &out,
            ],
        );
    }
    let read = |f: &str| -> serde_json::Value { serde_json::from_slice(&env.read(f)).unwrap() };
    let merged = env.run(&[
        "merge",
        "shares/share1.json",
        "shares/share2.json",
        "shares/share3.json",
        "--json",
        "merged.json",
    ]);
    assert_eq!(merged.code, whole.code, "{}", merged.stderr);
    assert_eq!(
        read("merged.json")["results"],
        read("whole.json")["results"]
    );
    // The shares kept in a bucket: merged from its prefix, and from each object named.
    let reports = S3::start(
        &[format!("reports={}:runs/7", env.path("shares").display())],
        &env.path("reports.log"),
    );
    let from_prefix = reports.run(
        &env,
        &["merge", "s3://reports/runs/7/", "--json", "prefix.json"],
    );
    assert_eq!(from_prefix.code, whole.code, "{}", from_prefix.stderr);
    assert_eq!(
        read("prefix.json")["results"],
        read("whole.json")["results"]
    );
    let named: Vec<String> = (1..=3)
        .map(|k| format!("s3://reports/runs/7/share{k}.json"))
        .collect();
    let mut args = vec!["merge"];
    args.extend(named.iter().map(String::as_str));
    args.extend(["--json", "named.json"]);
    let from_objects = reports.run(&env, &args);
    assert_eq!(from_objects.code, whole.code, "{}", from_objects.stderr);
    assert_eq!(env.read("named.json"), env.read("prefix.json"));
    // Two of three shares is not the whole: refused, as on disk.
    let partial = reports.run(&env, &["merge", &named[0], &named[1]]);
    assert_eq!(partial.code, 2, "{}", partial.stderr);
}

#[test]
fn a_forbidden_bucket_and_a_missing_object_are_clear_errors_without_credentials() {
    let env = Env::with_remote();
    let s3 = demo_in_s3(&env, &[]);
    let locked = s3.run(&env, &["check", "s3://locked/runs"]);
    assert_eq!(locked.code, 2, "{}", locked.stderr);
    assert!(
        locked.stderr.contains("cannot list `s3://locked/runs`"),
        "{}",
        locked.stderr
    );
    assert!(locked.stderr.contains("AccessDenied"), "{}", locked.stderr);
    let missing = s3.run(&env, &["check", "s3://suite/gone/x.trace.ndjson.zst"]);
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    assert!(
        missing
            .stderr
            .contains("s3://suite/gone/x.trace.ndjson.zst"),
        "{}",
        missing.stderr
    );
    assert!(missing.stderr.contains("not found"), "{}", missing.stderr);
    for out in [&locked, &missing] {
        assert!(!out.stderr.contains(&s3.secret) && !out.stdout.contains(&s3.secret));
    }
}

#[test]
fn an_object_past_the_size_limit_is_an_error_row_and_is_not_read() {
    let env = Env::with_remote();
    // Output that does not compress: 64 KiB of hex from a BLAKE3 stream.
    let mut noise = vec![0u8; 32 << 10];
    blake3::Hasher::new().finalize_xof().fill(&mut noise);
    let hex: String = noise.iter().map(|b| format!("{b:02x}")).collect();
    let output = format!(r#"{{"kind":"tool_result","call_id":"c1","ok":true,"output":"{hex}"}}"#);
    let big = sealed_zst(&trace_text(
        "agent.tool.basic",
        "big",
        &[&call("c1", "search"), &output, END],
    ));
    assert!(big.len() > 30 << 10, "{}", big.len());
    let s3 = demo_in_s3(&env, &[("big/big.trace.ndjson.zst", big)]);
    let out = s3.run(
        &env,
        &[
            "check",
            "s3://suite",
            "--no-cache",
            "--max-trace-bytes",
            "20000",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    let report = json(&out);
    let big = row(&report, "big/big.trace.ndjson.zst");
    assert_eq!(big["verdict"], "error", "{big}");
    let message = big["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("s3://suite/big/big.trace.ndjson.zst"),
        "{message}"
    );
    assert!(message.contains("exceeds the limit"), "{message}");
    let log = std::fs::read_to_string(&s3.log).unwrap();
    assert!(
        !log.contains("GET /suite/big/"),
        "the object was read: {log}"
    );
    // The rest of the run is judged as ever.
    let judged = (report["results"].as_array().unwrap().iter())
        .filter(|r| r["verdict"] == "pass")
        .count();
    assert!(judged >= 5, "{}", out.stdout);
}

#[test]
fn verify_lint_diff_and_explain_read_a_bucket_and_require_signed_refuses_remote_traces() {
    let env = Env::with_remote();
    // One case's trace replaced by a run that drifts from its approved baseline.
    let drifted = trace_text(
        "agent.tool.basic",
        "default",
        &[&call("c1", "other_tool"), END],
    );
    let s3 = demo_in_s3(
        &env,
        &[(
            "agent.tool.basic/default.trace.ndjson.zst",
            sealed_zst(&drifted),
        )],
    );
    let out = s3.run(&env, &["verify", "s3://suite"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("ok    s3://suite/agent.tool.basic/default.trace.ndjson.zst  b3:"),
        "{}",
        out.stdout
    );
    let lint = s3.run(&env, &["lint", "s3://suite", "--behaviour"]);
    let local = env.run(&["lint", "uploaded", "--behaviour"]);
    assert_eq!(lint.code, local.code, "{}", lint.stderr);
    assert!(lint.stdout.contains("s3://suite/"), "{}", lint.stdout);
    assert_eq!(
        lint.stdout.replace("s3://suite/", "uploaded/"),
        local.stdout
    );
    // `diff` against the approved baselines, of the bucket and of the same files on disk.
    let diff = s3.run(&env, &["diff", "s3://suite"]);
    for f in files_under(&env.path("uploaded")) {
        env.write(&format!("traces/{f}"), env.read(&format!("uploaded/{f}")));
    }
    let local = env.run(&["diff", "traces"]);
    assert_eq!((diff.code, local.code), (1, 1), "{}", diff.stderr);
    assert!(
        diff.stdout
            .contains("s3://suite/agent.tool.basic/default.trace.ndjson.zst"),
        "{}",
        diff.stdout
    );
    assert_eq!(diff.stdout.replace("s3://suite/", "traces/"), local.stdout);
    // `diff --from --to` with the older side in the bucket, against the shipped demo.
    let demo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("traces");
    let demo = demo.to_str().unwrap();
    let between = s3.run(&env, &["diff", "--from", "s3://suite", "--to", demo]);
    let local = env.run(&["diff", "--from", "uploaded", "--to", demo]);
    assert_eq!((between.code, local.code), (1, 1), "{}", between.stderr);
    assert!(
        between
            .stdout
            .contains("s3://suite/agent.tool.basic/default.trace.ndjson.zst"),
        "{}",
        between.stdout
    );
    assert_eq!(
        between.stdout.replace("s3://suite", "uploaded"),
        local.stdout
    );
    // `explain` of a trace in the bucket, and of a prefix, as of the same files on disk.
    let object = "s3://suite/agent.tool.basic/default.trace.ndjson.zst";
    let remote = s3.run(&env, &["explain", object]);
    let local = env.run(&[
        "explain",
        "traces/agent.tool.basic/default.trace.ndjson.zst",
    ]);
    assert_eq!(remote.code, local.code, "{}", remote.stderr);
    assert!(remote.stdout.contains(object), "{}", remote.stdout);
    assert_eq!(
        remote.stdout.replace("s3://suite/", "traces/"),
        local.stdout
    );
    let prefix = s3.run(&env, &["explain", "s3://suite/agent.approval.denied/"]);
    assert_eq!(prefix.code, 0, "{}", prefix.stderr);
    assert_eq!(
        prefix
            .stdout
            .matches("s3://suite/agent.approval.denied/")
            .count(),
        2,
        "{}",
        prefix.stdout
    );
    let ingest = s3.run(
        &env,
        &["ingest", "s3://suite/otlp/", "-o", "out", "--unkeyed"],
    );
    // A prefix the collector has not written to yet holds nothing to ingest (remote_ingest.rs
    // has the rest).
    assert_eq!(ingest.code, 0, "{}", ingest.stderr);
    assert!(
        ingest.stdout.contains("0 export object(s) listed, 0 read"),
        "{}",
        ingest.stdout
    );
    let signed = s3.run(&env, &["check", "s3://suite", "--require-signed"]);
    assert_eq!(signed.code, 2, "{}", signed.stderr);
    assert!(
        signed.stderr.contains("`s3://suite` is remote"),
        "{}",
        signed.stderr
    );
}

/// The manifests of the docs' ```` ```yaml kubernetes ```` blocks.
fn kubernetes_manifests() -> Vec<String> {
    let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/object-storage.md");
    fenced_blocks(
        &std::fs::read_to_string(docs).unwrap(),
        "```yaml kubernetes\n",
    )
}

/// Runs a container's `sh -c` script from a manifest as the pod would, with its `env` values and
/// `vars` over them, and the tracereplay under test on the `PATH`.
fn run_script(env: &Env, container: &yaml_rust2::Yaml, vars: &[(&str, &str)]) -> i32 {
    assert_eq!(container["command"][0].as_str(), Some("/bin/sh"));
    let script = container["args"][0].as_str().unwrap();
    let bin = env.binary().to_path_buf();
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("sh");
    cmd.args(["-c", script])
        .current_dir(env.root())
        .env_remove("TRACEREPLAY_CACHE_KEY")
        .env("XDG_CACHE_HOME", env.path("user-cache"))
        .env("PATH", path)
        .env("CI", "true");
    for e in container["env"].as_vec().unwrap() {
        if let (Some(k), Some(v)) = (e["name"].as_str(), e["value"].as_str()) {
            cmd.env(k, v);
        }
    }
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(!stderr.contains("error:"), "{script}\n{stdout}\n{stderr}");
    out.status.code().unwrap()
}

#[test]
fn the_kubernetes_example_validates_and_its_shares_merge_to_the_whole() {
    let manifests = kubernetes_manifests();
    assert_eq!(manifests.len(), 1, "the docs show one Kubernetes manifest");
    let env = Env::with_remote();
    env.write("k8s.yaml", &manifests[0]);
    let validator = crate::s3::python().with_file_name("kubernetes-validate");
    let checked = Command::new(&validator)
        .args(["--strict", "-k", "1.33.0"])
        .arg(env.path("k8s.yaml"))
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e}; run `scripts/install-test-deps`",
                validator.display()
            )
        });
    let said = String::from_utf8_lossy(&checked.stdout).to_string()
        + &String::from_utf8_lossy(&checked.stderr);
    assert!(checked.status.success(), "{said}");
    assert_eq!(
        said.matches("passed for resource job/").count(),
        2,
        "{said}"
    );

    // The shares' script, one pod per index, against a bucket; then the merge's.
    let s3 = demo_in_s3(&env, &[]);
    let jobs = yaml_rust2::YamlLoader::load_from_str(&manifests[0]).unwrap();
    let (shares, merge) = (&jobs[0]["spec"], &jobs[1]["spec"]);
    assert_eq!(shares["completionMode"].as_str(), Some("Indexed"));
    let n = shares["completions"].as_i64().unwrap();
    let reports = env.path("reports");
    std::fs::create_dir_all(&reports).unwrap();
    let reports = reports.to_str().unwrap();
    let root = env.root().to_str().unwrap();
    let mut vars: Vec<(&str, &str)> = s3
        .vars
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    vars.extend([
        ("RUNS", "s3://suite"),
        ("SUITE", root),
        ("REPORTS", reports),
    ]);
    for index in 0..n {
        let index = index.to_string();
        let mut pod = vars.clone();
        pod.push(("JOB_COMPLETION_INDEX", &index));
        let container = &shares["template"]["spec"]["containers"][0];
        assert_eq!(run_script(&env, container, &pod), 0, "share {index}");
    }
    let code = run_script(&env, &merge["template"]["spec"]["containers"][0], &vars);
    let whole = s3.run(
        &env,
        &["check", "s3://suite", "--no-cache", "--json", "whole.json"],
    );
    assert_eq!(code, whole.code);
    let read = |p: PathBuf| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
    };
    let merged = read(env.path("reports/merged.json"));
    assert_eq!(merged["results"], read(env.path("whole.json"))["results"]);
    assert_eq!(merged["summary"], read(env.path("whole.json"))["summary"]);
}

#[test]
fn a_replaced_object_is_judged_again_never_served_from_the_cache() {
    let env = Env::with_remote();
    let mut s3 = demo_in_s3(&env, &[]);
    let first = s3.run(&env, &["check", "s3://suite", "--format", "json"]);
    let read = s3.reads("suite");
    let key = "agent.tool.basic/default.trace.ndjson.zst";
    assert_eq!(row(&json(&first), key)["drift"], serde_json::json!([]));
    // The same object replaced by a run that drifts from its approved baseline.
    let drifted = trace_text(
        "agent.tool.basic",
        "default",
        &[&call("c1", "other_tool"), END],
    );
    env.write("drifted.trace.ndjson.zst", sealed_zst(&drifted));
    s3.put("suite", key, &env.path("drifted.trace.ndjson.zst"));
    let again = s3.run(
        &env,
        &["check", "s3://suite", "--format", "json", "--timings"],
    );
    assert_eq!(
        s3.reads("suite"),
        read + 1,
        "only the replaced object is read: {}",
        again.stderr
    );
    let report = json(&again);
    let replaced = row(&report, key);
    assert_ne!(replaced["drift"], serde_json::json!([]), "{replaced:#}");
    assert_ne!(
        replaced["content_hash"],
        row(&json(&first), key)["content_hash"]
    );
    assert_eq!(
        again.code, 1,
        "drift from the approved baseline blocks: {}",
        again.stderr
    );
}
