//! Signed traces: `key new --sign`, `sign`, `verify --trusted-keys`, `check --require-signed`,
//! and the recorders signing what they seal, checked against the real `minisign` program.
//!
//! minisign is a prerequisite: `scripts/install-test-deps` installs Debian's `minisign` when
//! it is missing (or point TRACEREPLAY_MINISIGN at one).

use std::path::PathBuf;
use std::process::Command;

use crate::util::{END, Env, Output, call, files_under, json, one_trace_suite, row};

pub(crate) fn minisign() -> PathBuf {
    if let Some(p) = std::env::var_os("TRACEREPLAY_MINISIGN") {
        return PathBuf::from(p);
    }
    let found = Command::new("minisign").arg("-v").output();
    assert!(
        found.is_ok(),
        "the signing tests need minisign: install it with `apt-get install minisign` \
         (`scripts/install-test-deps` does), or point TRACEREPLAY_MINISIGN at a minisign binary"
    );
    PathBuf::from("minisign")
}

/// Runs minisign in `env`'s directory.
fn run_minisign(env: &Env, args: &[&str]) -> std::process::Output {
    Command::new(minisign())
        .args(args)
        .current_dir(env.root())
        .output()
        .unwrap()
}

/// A new key pair under `dir` (`key new --sign`): its key id and the secret key file's text.
pub(crate) fn key_pair(env: &Env, dir: &str) -> (String, String) {
    let out = env.run(&["key", "new", "--sign", "-o", dir]);
    assert_eq!(out.code, 0, "{out:?}");
    let id = out.stdout.trim().to_owned();
    assert_eq!(id.len(), 16, "{out:?}");
    let secret = String::from_utf8(env.read(&format!("{dir}/tracereplay.key"))).unwrap();
    (id, secret)
}

/// The secret key's Base64 line, which must never appear anywhere else.
fn secret_line(secret: &str) -> String {
    secret.lines().nth(1).unwrap().to_owned()
}

fn assert_no_secret(out: &Output, secret: &str) {
    let line = secret_line(secret);
    assert!(
        !out.stdout.contains(&line),
        "the secret key in stdout: {out:?}"
    );
    assert!(
        !out.stderr.contains(&line),
        "the secret key in stderr: {out:?}"
    );
}

/// Runs tracereplay off CI with the signing key in the environment.
fn run_signing(env: &Env, args: &[&str], secret: &str) -> Output {
    let out = env.run_with(
        args,
        &[
            ("CI", ""),
            ("TRACEREPLAY_SIGNING_KEY", secret),
            ("TRACEREPLAY_HASH_KEY", ""),
        ],
    );
    assert_no_secret(&out, secret);
    out
}

#[test]
fn key_new_sign_writes_a_minisign_key_pair_with_a_private_secret_key() {
    let env = Env::new();
    let out = env.run(&["key", "new", "--sign", "-o", "keys"]);
    assert_eq!(out.code, 0, "{out:?}");
    let id = out.stdout.trim();
    let public = String::from_utf8(env.read("keys/tracereplay.pub")).unwrap();
    let secret = String::from_utf8(env.read("keys/tracereplay.key")).unwrap();
    assert!(public.contains(id), "{public}");
    assert_no_secret(&out, &secret);
    assert!(out.stderr.contains("TRACEREPLAY_SIGNING_KEY"), "{out:?}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(env.path("keys/tracereplay.key")).unwrap();
        assert_eq!(mode.permissions().mode() & 0o777, 0o600);
    }
    // Never over an existing key.
    let again = env.run(&["key", "new", "--sign", "-o", "keys"]);
    assert_eq!(again.code, 2, "{again:?}");
    assert!(again.stderr.contains("never overwritten"), "{again:?}");
    assert_eq!(env.read("keys/tracereplay.key"), secret.as_bytes());
    // `-o` without `--sign`, and `--sign` without `-o`, are usage errors.
    assert_eq!(env.run(&["key", "new", "--sign"]).code, 2);
    // The prompt-hashing key is still what `key new` makes.
    let hashing = env.run(&["key", "new"]);
    assert_eq!(hashing.code, 0);
    assert_eq!(hashing.stdout.trim().len(), 64, "{hashing:?}");
}

#[test]
fn what_tracereplay_signs_minisign_verifies_and_the_other_way_round() {
    let env = Env::new();
    minisign();
    one_trace_suite(&env, "good", "High", "search", "default");
    let trace = "traces/good/default.trace.ndjson.zst";
    let (id, secret) = key_pair(&env, "keys");
    let out = run_signing(&env, &["sign", "traces"], &secret);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains(&format!("by {id}")), "{out:?}");
    let v = run_minisign(&env, &["-V", "-m", trace, "-p", "keys/tracereplay.pub"]);
    assert!(v.status.success(), "{v:?}");
    // The trusted comment names the seal, scenario and case.
    let said = String::from_utf8_lossy(&v.stdout).to_string() + &String::from_utf8_lossy(&v.stderr);
    let seal =
        json(&env.run(&["check", "--format", "json", "--no-cache"]))["results"][0]["content_hash"]
            .as_str()
            .unwrap()
            .to_owned();
    assert!(
        said.contains(&seal) && said.contains("\"scenario\":\"good\""),
        "{said}"
    );
    let ours = env.run(&["verify", "traces", "--trusted-keys", "keys/tracereplay.pub"]);
    assert_eq!(ours.code, 0, "{ours:?}");
    assert!(ours.stdout.contains(&format!("signed by {id}")), "{ours:?}");

    // A key pair and a signature made by minisign itself (unencrypted: `-W`).
    let g = run_minisign(&env, &["-G", "-W", "-p", "theirs.pub", "-s", "theirs.key"]);
    assert!(g.status.success(), "{g:?}");
    let s = run_minisign(&env, &["-S", "-s", "theirs.key", "-m", trace]);
    assert!(s.status.success(), "{s:?}");
    let theirs = env.run(&["verify", "traces", "--trusted-keys", "theirs.pub"]);
    assert_eq!(theirs.code, 0, "{theirs:?}");
    // tracereplay signs with minisign's secret key, too.
    let key = String::from_utf8(env.read("theirs.key")).unwrap();
    let resigned = run_signing(&env, &["sign", trace], &key);
    assert_eq!(resigned.code, 0, "{resigned:?}");
    let v = run_minisign(&env, &["-V", "-m", trace, "-p", "theirs.pub"]);
    assert!(v.status.success(), "{v:?}");
}

#[test]
fn one_changed_byte_of_the_trace_or_the_trusted_comment_fails_both_verifiers() {
    let env = Env::new();
    minisign();
    one_trace_suite(&env, "good", "High", "search", "default");
    let trace = "traces/good/default.trace.ndjson.zst";
    let sig = "traces/good/default.trace.ndjson.zst.minisig";
    let (_, secret) = key_pair(&env, "keys");
    assert_eq!(run_signing(&env, &["sign", trace], &secret).code, 0);
    let verify_both = |env: &Env| {
        let theirs = run_minisign(env, &["-V", "-m", trace, "-p", "keys/tracereplay.pub"]);
        let ours = env.run(&["verify", trace, "--trusted-keys", "keys/tracereplay.pub"]);
        (theirs.status.success(), ours)
    };
    let (theirs, ours) = verify_both(&env);
    assert!(theirs && ours.code == 0, "{ours:?}");
    let (original_trace, original_sig) = (env.read(trace), env.read(sig));

    // One byte of the stored trace.
    let mut changed = original_trace.clone();
    let last = changed.len() - 1;
    changed[last] ^= 0x01;
    env.write(trace, &changed);
    let (theirs, ours) = verify_both(&env);
    assert!(!theirs, "minisign accepted a changed trace");
    assert_eq!(ours.code, 1, "{ours:?}");
    env.write(trace, &original_trace);

    // One byte of the trusted comment.
    let text = String::from_utf8(original_sig.clone()).unwrap();
    let tampered = text.replace("\"case\":\"default\"", "\"case\":\"defaulu\"");
    assert_ne!(tampered, text);
    env.write(sig, tampered);
    let (theirs, ours) = verify_both(&env);
    assert!(!theirs, "minisign accepted a changed trusted comment");
    assert_eq!(ours.code, 1, "{ours:?}");
    assert!(ours.stdout.contains("bad signature"), "{ours:?}");
}

#[test]
fn require_signed_makes_an_error_row_of_each_unsigned_bad_or_untrusted_trace() {
    let env = Env::new();
    for case in ["signed", "unsigned", "wrong", "untrusted"] {
        let c = call("c1", "search");
        env.write(
            &format!("traces/good/{case}.trace.ndjson.zst"),
            crate::util::sealed_zst(&crate::util::trace_text("good", case, &[&c, END])),
        );
    }
    env.write(
        "traces/good/good.scenario.json",
        crate::util::scenario("good", "High", "search"),
    );
    let (id, secret) = key_pair(&env, "keys");
    let (other_id, other) = key_pair(&env, "other");
    let path = |case: &str| format!("traces/good/{case}.trace.ndjson.zst");
    for case in ["signed", "wrong"] {
        assert_eq!(run_signing(&env, &["sign", &path(case)], &secret).code, 0);
    }
    assert_eq!(
        run_signing(&env, &["sign", &path("untrusted")], &other).code,
        0
    );
    // "wrong": a good signature of another trace's bytes.
    env.write(
        &format!("{}.minisig", path("wrong")),
        env.read(&format!("{}.minisig", path("signed"))),
    );

    let args = [
        "check",
        "--format",
        "json",
        "--require-signed",
        "--trusted-keys",
        "keys/tracereplay.pub",
    ];
    let out = env.run(&args);
    assert_eq!(out.code, 1, "{out:?}");
    let report = json(&out);
    assert_eq!(row(&report, "/signed.trace.ndjson.zst")["verdict"], "pass");
    for (case, words) in [
        ("unsigned", "is not signed".to_owned()),
        ("wrong", format!("has a bad signature by key {id}")),
        (
            "untrusted",
            format!("is signed by key {other_id}, which is not among the trusted keys ({id})"),
        ),
    ] {
        let r = row(&report, &format!("/{case}.trace.ndjson.zst"));
        assert_eq!(r["verdict"], "error", "{r:#}");
        assert_eq!(r["error"]["category"], "signature", "{r:#}");
        assert_eq!(r["scenario"], "good", "{r:#}");
        assert_eq!(r["case"], case, "{r:#}");
        let message = r["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!("`{}`", path(case))),
            "{message}"
        );
        assert!(message.contains(&words), "{message}");
    }
    assert_eq!(report["summary"]["errors"], 3, "{report:#}");

    // Rotation: both keys trusted (a directory of `.pub` files), so only two rows fail.
    std::fs::create_dir_all(env.path("trusted")).unwrap();
    std::fs::copy(env.path("keys/tracereplay.pub"), env.path("trusted/a.pub")).unwrap();
    std::fs::copy(env.path("other/tracereplay.pub"), env.path("trusted/b.pub")).unwrap();
    let out = env.run(&[
        "check",
        "--format",
        "json",
        "--require-signed",
        "--trusted-keys",
        "trusted",
    ]);
    let report = json(&out);
    assert_eq!(
        row(&report, "/untrusted.trace.ndjson.zst")["verdict"],
        "pass",
        "{report:#}"
    );
    assert_eq!(report["summary"]["errors"], 2, "{report:#}");

    // Without `--require-signed`, signatures are not looked at, and the result cache is
    // written; a run that requires them neither reads nor rewrites it.
    let out = env.run_with(&["check", "--format", "json"], &[("CI", "")]);
    assert_eq!(json(&out)["summary"]["errors"], 0, "{out:?}");
    let cache = files_under(&env.path(".tracereplay/cache"));
    assert!(!cache.is_empty(), "no result cache was written");
    let before: Vec<Vec<u8>> = cache
        .iter()
        .map(|f| env.read(&format!(".tracereplay/cache/{f}")))
        .collect();
    let out = env.run_with(&args, &[("CI", "")]);
    assert_eq!(json(&out)["summary"]["errors"], 3, "{out:?}");
    let after: Vec<Vec<u8>> = cache
        .iter()
        .map(|f| env.read(&format!(".tracereplay/cache/{f}")))
        .collect();
    assert_eq!(files_under(&env.path(".tracereplay/cache")), cache);
    assert!(before == after, "the result cache changed");
    // Asked for, but with no key to trust: a usage error, before anything is judged.
    let out = env.run(&["check", "--require-signed"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--trusted-keys PATH"), "{out:?}");
}

#[test]
fn a_good_signature_whose_trusted_comment_names_another_trace_is_refused() {
    let env = Env::new();
    minisign();
    one_trace_suite(&env, "good", "High", "search", "a");
    let trace = "traces/good/a.trace.ndjson.zst";
    key_pair(&env, "keys");
    // minisign signs the trace's bytes with tracereplay's key and a comment of another trace.
    let comment = r#"{"tool":"tracereplay","seal":"b3:00","scenario":"good","case":"b","file":"a.trace.ndjson.zst","timestamp":1}"#;
    let s = run_minisign(
        &env,
        &[
            "-S",
            "-s",
            "keys/tracereplay.key",
            "-m",
            trace,
            "-t",
            comment,
        ],
    );
    assert!(s.status.success(), "{s:?}");
    let args = [
        "check",
        "--format",
        "json",
        "--require-signed",
        "--trusted-keys",
        "keys",
    ];
    let out = env.run(&args);
    assert_eq!(out.code, 1, "{out:?}");
    let report = json(&out);
    let message = report["results"][0]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("its trusted comment names seal `b3:00`")
            && message.contains("case `b` (the trace has `a`)"),
        "{message}"
    );
    let v = env.run(&["verify", trace, "--trusted-keys", "keys"]);
    assert_eq!(v.code, 1, "{v:?}");
    assert!(v.stdout.contains("names seal `b3:00`"), "{v:?}");
}

#[test]
fn a_profile_can_require_signatures_against_the_projects_trusted_keys() {
    let env = Env::new();
    one_trace_suite(&env, "good", "High", "search", "default");
    key_pair(&env, "keys");
    env.write(
        "tracereplay.toml",
        "trusted-keys = \"keys\"\n[profile.ci]\nrequire-signed = true\n",
    );
    // Under CI the `ci` profile requires signatures: the unsigned trace is an error row.
    let out = env.run(&["check", "--format", "json"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(json(&out)["results"][0]["error"]["category"], "signature");
    // Off CI, the default profile does not.
    let out = env.run_with(&["check", "--format", "json"], &[("CI", "")]);
    assert_eq!(out.code, 0, "{out:?}");
    let config = env.run(&["config"]);
    assert!(
        config.stdout.contains("require-signed   true"),
        "{config:?}"
    );
    assert!(
        config.stdout.contains("trusted-keys     keys"),
        "{config:?}"
    );
}

#[test]
fn pack_and_ingest_sign_what_they_seal_and_no_file_but_the_key_holds_the_secret() {
    let env = Env::new();
    minisign();
    let (id, secret) = key_pair(&env, "keys");
    let c = call("c1", "search");
    env.write(
        "raw/run.trace.ndjson",
        crate::util::trace_text("s", "c", &[&c, END]),
    );
    let out = run_signing(
        &env,
        &["pack", "raw/run.trace.ndjson", "-o", "packed"],
        &secret,
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains(&format!("signed by {id}")), "{out:?}");
    let v = run_minisign(
        &env,
        &[
            "-V",
            "-m",
            "packed/run.trace.ndjson.zst",
            "-p",
            "keys/tracereplay.pub",
        ],
    );
    assert!(v.status.success(), "{v:?}");

    // An ingested run, signed as it is written.
    let messages = r#"{"id":"run-1","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}"#;
    env.write("in/run.json", messages);
    let out = run_signing(
        &env,
        &[
            "ingest",
            "in/run.json",
            "--from",
            "openai-messages",
            "-o",
            "ingested",
            "--unkeyed",
        ],
        &secret,
    );
    assert_eq!(out.code, 0, "{out:?}");
    let written: Vec<String> = files_under(&env.path("ingested"));
    let traces: Vec<&String> = written.iter().filter(|f| f.ends_with(".zst")).collect();
    assert!(!traces.is_empty(), "{written:?}");
    for t in &traces {
        assert!(written.contains(&format!("{t}.minisig")), "{written:?}");
        let p = format!("ingested/{t}");
        let v = run_minisign(&env, &["-V", "-m", &p, "-p", "keys/tracereplay.pub"]);
        assert!(v.status.success(), "{v:?}");
    }
    let checked = env.run(&["verify", "ingested", "--trusted-keys", "keys"]);
    assert_eq!(checked.code, 0, "{checked:?}");
    // The trusted comment names what the header says: `check` finds the signature good (its
    // only complaint is that no scenario defines the run).
    let args = [
        "check",
        "ingested",
        "--format",
        "json",
        "--require-signed",
        "--trusted-keys",
        "keys",
    ];
    let report = json(&env.run(&args));
    for r in report["results"].as_array().unwrap() {
        assert_eq!(r["error"]["category"], "unknown-scenario", "{r:#}");
    }

    // No file but the key file holds the secret key.
    let line = secret_line(&secret);
    for f in files_under(env.root()) {
        if f == "keys/tracereplay.key" {
            continue;
        }
        let bytes = std::fs::read(env.path(&f)).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(&line),
            "`{f}` holds the secret key"
        );
    }
}

#[test]
fn a_signing_key_that_does_not_read_stops_the_command_without_showing_it() {
    let env = Env::new();
    let c = call("c1", "search");
    env.write(
        "raw/run.trace.ndjson",
        crate::util::trace_text("s", "c", &[&c, END]),
    );
    let bogus = "untrusted comment: x\nRWQAAEIyTOPSECRETbutbroken\n";
    let out = env.run_with(
        &["pack", "raw/run.trace.ndjson", "-o", "packed"],
        &[("CI", ""), ("TRACEREPLAY_SIGNING_KEY", bogus)],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .contains("`TRACEREPLAY_SIGNING_KEY` is not an unencrypted minisign secret key"),
        "{out:?}"
    );
    assert!(!out.stderr.contains("TOPSECRET"), "{out:?}");
    assert!(
        !env.path("packed/run.trace.ndjson.zst").exists(),
        "written unsigned"
    );
    // A path where the content belongs is named as such.
    let (_, _) = key_pair(&env, "keys");
    let out = env.run_with(
        &["pack", "raw/run.trace.ndjson", "-o", "packed"],
        &[
            ("CI", ""),
            ("TRACEREPLAY_SIGNING_KEY", "keys/tracereplay.key"),
        ],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("names a file"), "{out:?}");
    // `sign` without any key says how to get one.
    let out = env.run_with(
        &["sign", "raw"],
        &[("CI", ""), ("TRACEREPLAY_SIGNING_KEY", "")],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("key new --sign"), "{out:?}");
}
