//! Prompt privacy: the raw-text opt-in, the secret lint, waivers, and `key`.

use tracereplay::trace::{EventBody, Header, RunStatus, TraceWriter};
use tracereplay::trace::{PromptHasher, key_id};

use crate::util::*;

/// Fake secrets are assembled at run time so no literal key sits in the repository.
fn fake_aws_key() -> String {
    ["AK", "IA", "Z7Q2", "X9W4", "V6T1", "R3P8"].concat()
}

fn suite_with_recorded_trace(env: &Env, raw: bool) {
    env.write(
        "traces/rec/rec.scenario.json",
        r#"{"id":"rec","title":"t","risk":"Low","oracles":[{"type":"approval-not-required"}]}"#,
    );
    let mut w = TraceWriter::with_prompts(
        Header::new("rec", "default"),
        PromptHasher::keyed(b"ci-key"),
        raw,
    );
    w.user_message(None, Some("in1"), "PRIVATE-USER-QUESTION");
    w.push(
        None,
        EventBody::RunEnd {
            status: RunStatus::Completed,
            error: None,
        },
    );
    let path = camino::Utf8PathBuf::from_path_buf(env.path("traces/rec/default.trace.ndjson.zst"))
        .unwrap();
    w.finish().unwrap().write(&path).unwrap();
}

#[test]
fn the_opt_in_differs_only_by_the_sidecar_which_check_refuses_unless_allowed() {
    let (plain, raw) = (Env::new(), Env::new());
    suite_with_recorded_trace(&plain, false);
    suite_with_recorded_trace(&raw, true);
    assert_eq!(
        plain.read("traces/rec/default.trace.ndjson.zst"),
        raw.read("traces/rec/default.trace.ndjson.zst")
    );
    assert_eq!(
        files_under(&plain.path("traces")).len() + 1,
        files_under(&raw.path("traces")).len()
    );
    assert!(
        String::from_utf8(raw.read("traces/rec/default.prompts.ndjson"))
            .unwrap()
            .contains("PRIVATE-USER-QUESTION")
    );

    let out = plain.run(&["check", "traces"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let out = raw.run(&["check", "traces", "--fail-on", "none"]);
    assert_eq!(
        out.code, 1,
        "a sidecar fails regardless of --fail-on\n{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("PRIVACY  traces/rec/default.prompts.ndjson  raw-prompt-sidecar"),
        "{}",
        out.stdout
    );
    let out = raw.run(&["check", "traces", "--allow-raw-prompts"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    for out in [
        raw.run(&["check", "traces", "--format", "json"]),
        raw.run(&["lint", "traces"]),
    ] {
        assert!(
            !out.stdout.contains("PRIVATE-USER-QUESTION")
                && !out.stderr.contains("PRIVATE-USER-QUESTION")
        );
    }
}

#[test]
fn secrets_fail_check_regardless_of_fail_on_and_can_be_waived() {
    let env = Env::new();
    good_suite(&env);
    let secret = fake_aws_key();
    let note = format!(r#"{{"kind":"note","text":"credentials {secret} leaked"}}"#);
    let c = call("c1", "search");
    env.write(
        "traces/good/leak.trace.ndjson.zst",
        sealed_zst(&trace_text("good", "leak", &[&c, &note, END])),
    );
    let out = env.run(&["check", "traces", "--fail-on", "none", "--format", "json"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        !out.stdout.contains(&secret[4..]),
        "the secret is never printed"
    );
    let r = json(&out);
    let f = &r["privacy"][0];
    assert_eq!(
        (f["file"].as_str(), f["line"].as_u64(), f["kind"].as_str()),
        (
            Some("traces/good/leak.trace.ndjson.zst"),
            Some(3),
            Some("aws-access-key")
        )
    );
    let fp = f["fingerprint"].as_str().unwrap().to_owned();
    assert_eq!(fp, tracereplay_trace::privacy::lint::fingerprint(&secret));
    assert_eq!(env.run(&["check", "traces", "--secrets", "warn"]).code, 0);
    let off = env.run(&["check", "traces", "--secrets", "off", "--format", "json"]);
    assert!(!off.stdout.contains("aws-access-key"), "{}", off.stdout);
    env.write(
        ".tracereplay-allow",
        format!("# reviewed: test fixture\n{fp}\n"),
    );
    let out = env.run(&["check", "traces"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    // Scenario files are scanned too.
    std::fs::remove_file(env.path(".tracereplay-allow")).unwrap();
    env.write("traces/good/good.scenario.json", format!(r#"{{"id":"good","title":"t {}","risk":"High","oracles":[{{"type":"tool-called","tool":"search"}}]}}"#, ["gh", "p_", &"a1B2".repeat(10)].concat()));
    let out = env.run(&["lint", "traces"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stdout
            .contains("traces/good/good.scenario.json:1  github-token"),
        "{}",
        out.stdout
    );
}

#[test]
fn lint_reports_raw_prompt_text_inside_a_trace() {
    let env = Env::new();
    let prompt = format!(
        r#"{{"kind":"user_message","prompt":{{"h":"b3:{}","text":"tell me a secret"}}}}"#,
        "0".repeat(64)
    );
    env.write(
        "traces/x.trace.ndjson",
        trace_text("x", "default", &[&prompt, END]),
    );
    let out = env.run(&["lint", "traces", "--format", "json"]);
    assert_eq!(out.code, 1);
    let findings: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(findings[0]["kind"], "raw-prompt");
    assert_eq!(findings[0]["line"], 2);
    assert!(!out.stdout.contains("tell me a secret"));
    let env = Env::new();
    good_suite(&env);
    assert_eq!(env.run(&["lint", "traces"]).code, 0);
    assert_eq!(env.run(&["lint", "nowhere"]).code, 2);
}

#[test]
fn key_new_and_key_id() {
    let env = Env::new();
    let out = env.run(&["key", "new"]);
    assert_eq!(out.code, 0);
    let key = out.stdout.trim();
    assert_eq!(key.len(), 64);
    assert!(key.bytes().all(|b| b.is_ascii_hexdigit()));
    assert!(out.stderr.contains(&key_id(key.as_bytes())) && !out.stderr.contains(key));
    assert_ne!(
        env.run(&["key", "new"]).stdout,
        out.stdout,
        "fresh each time"
    );
    let out = env.run_with(
        &["key", "id"],
        &[("TRACEREPLAY_HASH_KEY", "test-key-material")],
    );
    assert_eq!((out.code, out.stdout.as_str()), (0, "k_4f0e5027\n"));
    assert!(!out.stdout.contains("test-key-material") && !out.stderr.contains("test-key-material"));
    let out = env.run_with(&["key", "id"], &[("TRACEREPLAY_HASH_KEY", "")]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("`TRACEREPLAY_HASH_KEY` is not set"),
        "{}",
        out.stderr
    );
}
