//! `pack`, `verify` and `cat` on the spec's example trace and on tampered copies.

use crate::util::*;

const SPEC_EXAMPLE: &str = include_str!("../fixtures/agent-progress-evidence.trace.ndjson");

#[test]
fn pack_seals_verify_accepts_and_a_one_byte_edit_is_caught() {
    let env = Env::new();
    env.write("in/run.trace.ndjson", SPEC_EXAMPLE);
    let out = env.run(&[
        "pack",
        "in/run.trace.ndjson",
        "-o",
        "traces/agent-progress-evidence",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let expected_hash = tracereplay::trace::content_hash(SPEC_EXAMPLE.as_bytes());
    assert!(out.stdout.contains(&expected_hash), "{}", out.stdout);
    let packed = "traces/agent-progress-evidence/run.trace.ndjson.zst";
    let out = env.run(&["verify", "traces"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stdout
            .contains(&format!("ok    {packed}  {expected_hash}")),
        "{}",
        out.stdout
    );

    // `cat` gives back the input bytes, footer appended.
    let out = env.run(&["cat", packed]);
    assert_eq!(out.code, 0);
    assert!(out.stdout.starts_with(SPEC_EXAMPLE));
    assert!(out.stdout.ends_with(&format!(
        "{{\"kind\":\"footer\",\"events\":17,\"content_hash\":\"{expected_hash}\"}}\n"
    )));

    // Packing a sealed trace verifies it and leaves it unchanged.
    let before = env.read(packed);
    let out = env.run(&["pack", packed]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("already sealed"));
    assert_eq!(env.read(packed), before);

    // One byte changed inside: verify, check and cat all say so.
    let tampered = out_of(&env, packed).replacen("PERSONAL_TASK_LEDGER", "PERSONAL_TASK_LEDGEr", 1);
    env.write(
        packed,
        zstd::bulk::compress(tampered.as_bytes(), 3).unwrap(),
    );
    let out = env.run(&["verify", "traces"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stdout.contains("FAIL")
            && out
                .stdout
                .contains("integrity failure: content hash mismatch"),
        "{}",
        out.stdout
    );
    env.write(
        "traces/agent-progress-evidence/s.scenario.json",
        r#"{"id":"agent-progress-evidence","title":"t","risk":"Low","oracles":[{"type":"approval-not-required"}]}"#,
    );
    let out = env.run(&["check", "traces", "--fail-on", "none"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stdout.contains("integrity: ") && out.stdout.contains(packed),
        "{}",
        out.stdout
    );
    let out = env.run(&["cat", packed]);
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stdout, tampered,
        "cat prints verbatim even when the seal is bad"
    );
    assert!(
        out.stderr.contains("warning:") && out.stderr.contains("integrity failure"),
        "{}",
        out.stderr
    );
}

fn out_of(env: &Env, path: &str) -> String {
    String::from_utf8(zstd::decode_all(&env.read(path)[..]).unwrap()).unwrap()
}

#[test]
fn pack_normalises_line_ends_and_refuses_bad_input() {
    let env = Env::new();
    let crlf = SPEC_EXAMPLE.replace('\n', "\r\n");
    env.write("a.trace.ndjson", crlf.trim_end());
    let c = call("c1", "t");
    let malformed = trace_text(
        "s",
        "default",
        &[&c, r#"{"kind":"note","seq":1,"text":"x"}"#],
    );
    env.write("b.trace.ndjson", malformed);
    let out = env.run(&["pack", "a.trace.ndjson", "b.trace.ndjson"]);
    assert_eq!(out.code, 1, "one input refused");
    assert!(
        out.stderr.contains("refused `b.trace.ndjson`") && out.stderr.contains("line 3"),
        "{}",
        out.stderr
    );
    assert!(!env.path("b.trace.ndjson.zst").exists());
    // `\r\n` became `\n` and the final `\n` was added: the same hash as the clean example.
    let hash = tracereplay::trace::content_hash(SPEC_EXAMPLE.as_bytes());
    assert!(out.stdout.contains(&hash), "{}", out.stdout);
    assert!(out_of(&env, "a.trace.ndjson.zst").starts_with(SPEC_EXAMPLE));
    let out = env.run(&["pack", "nope.trace.ndjson"]);
    assert_eq!(out.code, 2);
}

#[test]
fn verify_counts_unsealed_traces_as_failures() {
    let env = Env::new();
    env.write("traces/x.trace.ndjson", SPEC_EXAMPLE);
    let out = env.run(&["verify"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stdout
            .contains("FAIL  traces/x.trace.ndjson  not sealed"),
        "{}",
        out.stdout
    );
    let out = env.run(&["verify", "nowhere"]);
    assert_eq!(out.code, 2);
}

#[test]
fn cat_of_an_unreadable_trace_exits_2() {
    let env = Env::new();
    env.write("x.trace.ndjson.zst", b"not zstd at all");
    let out = env.run(&["cat", "x.trace.ndjson.zst"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("x.trace.ndjson.zst") && out.stderr.contains("not a valid zstd stream"),
        "{}",
        out.stderr
    );
}

#[test]
fn pack_of_a_directory_seals_every_ndjson_trace_under_it_and_keeps_their_places() {
    let env = Env::new();
    env.write("runs/a/c/0.trace.ndjson", SPEC_EXAMPLE);
    env.write("runs/a/c/1.trace.ndjson", SPEC_EXAMPLE);
    env.write("runs/b.trace.ndjson", SPEC_EXAMPLE);
    // A raw-prompt sidecar and other files are not traces.
    env.write(
        "runs/a/c/0.prompts.ndjson",
        "{\"h\":\"b3:x\",\"text\":\"hi\"}\n",
    );
    env.write("runs/notes.txt", "not a trace");
    let out = env.run(&["pack", "runs", "-o", "sealed"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.lines().count(), 3, "{}", out.stdout);
    assert_eq!(
        files_under(&env.path("sealed")),
        [
            "a/c/0.trace.ndjson.zst",
            "a/c/1.trace.ndjson.zst",
            "b.trace.ndjson.zst"
        ]
    );
    // Beside the inputs without `-o`.
    let out = env.run(&["pack", "runs/a"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(env.path("runs/a/c/1.trace.ndjson.zst").is_file());
    // A directory with no trace, or a path that is not there, is an error naming it.
    env.write("empty/readme.txt", "x");
    for (path, says) in [
        ("empty", "no NDJSON trace (`*.trace.ndjson`) under `empty`"),
        ("missing", "`missing` does not exist"),
    ] {
        let out = env.run(&["pack", path]);
        assert_eq!(out.code, 2, "{}", out.stdout);
        assert!(out.stderr.contains(says), "{}", out.stderr);
    }
}

#[test]
fn pack_places_what_it_seals_and_refuses_a_secret_until_it_is_waived() {
    // `pack` writes through the one placement step: a trace holding a secret is not written,
    // named by kind and fingerprint, never shown; a waiver lets it through.
    let env = Env::new();
    let key = ["sk-", "proj-", "PACKED", &"0123456789abcdef".repeat(2)].concat();
    let note = format!(r#"{{"kind":"note","seq":1,"text":"the key is {key}"}}"#);
    env.write("leaky.trace.ndjson", trace_text("s", "default", &[&note]));
    let out = env.run_with(&["pack", "leaky.trace.ndjson"], &[("CI", "true")]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr
            .contains("what would be written holds a secret (openai-key b3:"),
        "{}",
        out.stderr
    );
    assert!(!format!("{}{}", out.stdout, out.stderr).contains("PACKED"));
    assert!(!env.path("leaky.trace.ndjson.zst").exists());
    let fingerprint = out.stderr.split("openai-key ").nth(1).unwrap()[..15].to_owned();
    env.write(".tracereplay-allow", format!("{fingerprint}\n"));
    let out = env.run_with(&["pack", "leaky.trace.ndjson"], &[("CI", "true")]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out_of(&env, "leaky.trace.ndjson.zst").contains("the key is sk-proj-PACKED"));
}
