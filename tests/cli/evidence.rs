//! The evidence surfaces against a hostile hand (the fourth campaign): signatures bound to
//! their place and run, comparisons that notice a case gone, shares that cannot be forged,
//! records of a run that say how it ended, and inputs that are not regular files.

use crate::settings::local;
use crate::util::*;

/// Two scenarios in `traces/`, `pass` and `fail` (High; `fail` expects a tool never called), one
/// trace each (case `default`), both signed with the key in `keys/` for run `run`.
fn signed_suite(env: &Env, run: &str) {
    for (id, tool) in [("pass", "search"), ("fail", "fetch")] {
        env.write(
            &format!("traces/{id}/{id}.scenario.json"),
            scenario(id, "High", tool),
        );
        env.write(
            &format!("traces/{id}/default.trace.ndjson.zst"),
            sealed_zst(&trace_text(id, "default", &[&call("c1", "search"), END])),
        );
    }
    if !env.path("keys/tracereplay.key").is_file() {
        let out = local(env, &["key", "new", "--sign", "-o", "keys"]);
        assert_eq!(out.code, 0, "{out:?}");
    }
    let sign = [
        "sign",
        "traces",
        "--signing-key",
        "keys/tracereplay.key",
        "--run-id",
        run,
    ];
    let out = local(env, &sign);
    assert_eq!(out.code, 0, "{out:?}");
}

fn require_signed(env: &Env, extra: &[&str]) -> Output {
    let args = [
        &["check", "traces", "--format", "json", "--require-signed"][..],
        &["--trusted-keys", "keys/tracereplay.pub"],
        extra,
    ]
    .concat();
    env.run(&args)
}

fn copy(env: &Env, from: &str, to: &str) {
    env.write(to, env.read(from));
    env.write(
        &format!("{to}.minisig"),
        env.read(&format!("{from}.minisig")),
    );
}

#[test]
fn a_signature_from_another_run_is_refused_when_the_run_is_bound() {
    let env = Env::new();
    signed_suite(&env, "nightly-04");
    // Yesterday's passing trace of `fail`: its own scenario's, signed then.
    let text = trace_text("fail", "default", &[&call("c1", "fetch"), END]);
    env.write("yesterday/default.trace.ndjson.zst", sealed_zst(&text));
    let sign = [
        "sign",
        "yesterday",
        "--signing-key",
        "keys/tracereplay.key",
        "--run-id",
        "nightly-04",
    ];
    assert_eq!(local(&env, &sign).code, 0);
    // Today's run signs its traces for its own run; the failing one is replaced by yesterday's.
    signed_suite(&env, "nightly-05");
    let today = "traces/fail/default.trace.ndjson.zst";
    let out = require_signed(&env, &["--run-id", "nightly-05"]);
    assert_eq!(out.code, 1, "today's run fails on its own: {out:?}");
    std::fs::remove_file(env.path(&format!("{today}.minisig"))).unwrap();
    copy(&env, "yesterday/default.trace.ndjson.zst", today);
    // Unbound, the copy verifies: a signature says who, not when (docs/signing.md).
    let out = require_signed(&env, &[]);
    assert_eq!(out.code, 0, "{out:?}");
    // Bound to today's run, it is an error row naming the run it came from.
    let out = require_signed(&env, &["--run-id", "nightly-05"]);
    assert_eq!(out.code, 1, "{out:?}");
    let r = json(&out);
    assert_eq!(r["summary"]["errors"], 1, "{r:#}");
    let message = row(&r, today)["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.contains("for run `nightly-04`, not for run `nightly-05`"),
        "{message}"
    );
    // The project file binds it as well.
    env.write("tracereplay.toml", "run-id = \"nightly-05\"\n");
    let out = require_signed(&env, &[]);
    assert_eq!(out.code, 1, "{out:?}");
}

#[test]
fn a_signed_trace_moved_or_renamed_is_refused() {
    let env = Env::new();
    signed_suite(&env, "r1");
    let comment =
        String::from_utf8(env.read("traces/pass/default.trace.ndjson.zst.minisig")).unwrap();
    assert!(
        comment.contains("\"file\":\"pass/default.trace.ndjson.zst\"")
            && comment.contains("\"run\":\"r1\""),
        "{comment}"
    );
    assert_eq!(require_signed(&env, &["--fail-on", "none"]).code, 0);
    // Renamed in its directory, then moved to another directory under its own name.
    for (to, claimed) in [
        (
            "traces/pass/other.trace.ndjson.zst",
            "pass/default.trace.ndjson.zst",
        ),
        (
            "traces/moved/default.trace.ndjson.zst",
            "pass/default.trace.ndjson.zst",
        ),
    ] {
        let env = Env::new();
        signed_suite(&env, "r1");
        let from = "traces/pass/default.trace.ndjson.zst";
        copy(&env, from, to);
        std::fs::remove_file(env.path(from)).unwrap();
        std::fs::remove_file(env.path(&format!("{from}.minisig"))).unwrap();
        let out = require_signed(&env, &["--fail-on", "none"]);
        assert_eq!(out.code, 1, "{to}: {out:?}");
        let r = json(&out);
        let message = row(&r, to)["error"]["message"].as_str().unwrap().to_owned();
        assert!(
            message.contains(&format!("places it at `{claimed}`"))
                && message.contains("moved or renamed"),
            "{message}"
        );
        // `verify` refuses it too.
        let out = local(
            &env,
            &["verify", "traces", "--trusted-keys", "keys/tracereplay.pub"],
        );
        assert_eq!(out.code, 1, "{out:?}");
    }
}

/// `check traces/ --json FILE` under CI; a failing run is fine.
fn report_of(env: &Env, file: &str) {
    let out = env.run(&["check", "traces/", "--json", file]);
    assert!(out.code <= 1, "{out:?}");
}

fn compare(env: &Env, extra: &[&str]) -> Output {
    env.run(&[&["report", "--compare", "old.json", "new.json"][..], extra].concat())
}

#[test]
fn compare_fails_when_a_case_is_gone_renamed_by_letter_case_or_nothing_was_judged() {
    // A case that passed is missing from the new run.
    let env = Env::new();
    one_trace_suite(&env, "kept", "High", "search", "default");
    one_trace_suite(&env, "gone", "High", "search", "default");
    report_of(&env, "old.json");
    std::fs::remove_dir_all(env.path("traces/gone")).unwrap();
    report_of(&env, "new.json");
    let out = compare(&env, &[]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stdout.contains("REMOVED  gone/default"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("missing from the new one"),
        "{}",
        out.stdout
    );
    // Removed on purpose: said so, and the comparison passes.
    let out = compare(&env, &["--allow-removed"]);
    assert_eq!(out.code, 0, "{out:?}");

    // A case renamed by letter case, now failing: the same case, broken.
    let env = Env::new();
    one_trace_suite(&env, "refund", "High", "search", "Default");
    report_of(&env, "old.json");
    std::fs::remove_dir_all(env.path("traces/refund")).unwrap();
    one_trace_suite(&env, "Refund", "High", "fetch", "default");
    report_of(&env, "new.json");
    let out = compare(&env, &["--allow-removed"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stdout.contains("BROKE    Refund/default"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("1 cases: 1 broke"), "{}", out.stdout);

    // The new report has no rows at all.
    let env = Env::new();
    one_trace_suite(&env, "kept", "High", "search", "default");
    report_of(&env, "old.json");
    let mut empty: serde_json::Value = serde_json::from_slice(&env.read("old.json")).unwrap();
    empty["results"] = serde_json::json!([]);
    env.write("new.json", serde_json::to_vec(&empty).unwrap());
    for extra in [&[][..], &["--allow-removed"]] {
        let out = compare(&env, extra);
        assert_eq!(out.code, 1, "{out:?}");
        assert!(out.stdout.contains("no result rows"), "{}", out.stdout);
    }
}

#[cfg(unix)]
#[test]
fn a_fifo_in_place_of_a_report_signature_or_key_is_refused_not_waited_on() {
    let env = Env::new();
    signed_suite(&env, "r1");
    report_of(&env, "old.json");
    let fifo = |rel: &str| {
        let p = env.path(rel);
        let _ = std::fs::remove_file(&p);
        let made = std::process::Command::new("mkfifo")
            .arg(&p)
            .status()
            .unwrap();
        assert!(made.success());
    };
    fifo("new.json");
    fifo("traces/pass/default.trace.ndjson.zst.minisig");
    fifo("fifo.pub");
    fifo("fifo.key");
    fifo("record.json");
    let runs: [&[&str]; 6] = [
        &["report", "--compare", "old.json", "new.json"],
        &["merge", "new.json"],
        &[
            "check",
            "traces",
            "--require-signed",
            "--trusted-keys",
            "keys/tracereplay.pub",
        ],
        &["verify", "traces", "--trusted-keys", "fifo.pub"],
        &["sign", "traces", "--signing-key", "fifo.key"],
        &[
            "verify-attestation",
            "record.json",
            "--trusted-keys",
            "keys/tracereplay.pub",
        ],
    ];
    for args in runs {
        let mut child = env.command(args, &[("CI", "true")]).spawn().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                panic!("`{}` waited on a FIFO", args.join(" "));
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        assert!(!status.success(), "{args:?}");
    }
}

/// `partition.rows` recomputed from a share's JSON as anyone could (plain BLAKE3, no key).
fn unkeyed_digest(r: &serde_json::Value) -> String {
    let p = &r["partition"];
    let mut h = blake3::Hasher::new();
    let label = format!(
        "tracereplay.share v1\nsuite {}\nshare {}/{}\nfail-on {}\n",
        p["suite"].as_str().unwrap(),
        p["share"],
        p["of"],
        p["fail_on"].as_str().unwrap()
    );
    h.update(label.as_bytes());
    for row in r["results"].as_array().unwrap() {
        let oracles: Vec<serde_json::Value> = (row["oracles"].as_array().unwrap().iter())
            .map(|o| serde_json::json!([o["type"], o["verdict"]]))
            .collect();
        let drift: Vec<serde_json::Value> = (row["drift"].as_array().unwrap().iter())
            .map(|d| serde_json::json!([d["category"], d["fails"]]))
            .collect();
        let line = serde_json::json!([
            row["scenario"],
            row["case"],
            row["path"],
            row["content_hash"],
            row["verdict"],
            row["risk"],
            row["known_gap"],
            row["blocking"],
            row["error"]["category"],
            oracles,
            drift,
        ]);
        h.update(line.to_string().as_bytes()).update(b"\n");
    }
    format!("b3:{}", h.finalize().to_hex())
}

/// Edits a one-share report's failing rows to pass, its counts to match, and recomputes the
/// unkeyed digest: the forgery the campaign did in 25 lines of Python.
fn forge(path: &std::path::Path) {
    let mut r: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    for row in r["results"].as_array_mut().unwrap() {
        row["verdict"] = "pass".into();
        row["blocking"] = false.into();
        for o in row["oracles"].as_array_mut().unwrap() {
            o["verdict"] = "pass".into();
        }
    }
    let traces = r["summary"]["traces"].clone();
    r["summary"]["passed"] = traces;
    r["summary"]["failed"] = 0.into();
    r["summary"]["blocking"] = 0.into();
    r["partition"]["rows"] = unkeyed_digest(&r).into();
    std::fs::write(path, serde_json::to_vec(&r).unwrap()).unwrap();
}

#[test]
fn a_forged_share_merges_only_without_the_share_key() {
    let env = Env::new();
    one_trace_suite(&env, "bad", "High", "fetch", "default");
    let share = [
        "check",
        "traces",
        "--partition",
        "hash:1/1",
        "--json",
        "share.json",
    ];
    // Unkeyed: the digest is one anyone can recompute, so the forgery merges green — the
    // documented limit of an unkeyed digest (it detects accidents, not forgery).
    assert_eq!(env.run(&share).code, 1);
    let r: serde_json::Value = serde_json::from_slice(&env.read("share.json")).unwrap();
    assert_eq!(
        r["partition"]["rows"],
        unkeyed_digest(&r),
        "the test recomputes the digest as check does"
    );
    forge(&env.path("share.json"));
    assert_eq!(env.run(&["merge", "share.json"]).code, 0);
    // Keyed: the shares' `check` and `merge` share a secret, and the forgery is refused.
    let key = [("TRACEREPLAY_SHARE_KEY", "ci-secret"), ("CI", "true")];
    assert_eq!(env.run_with(&share, &key).code, 1);
    let r: serde_json::Value = serde_json::from_slice(&env.read("share.json")).unwrap();
    assert!(
        r["partition"]["rows"].as_str().unwrap().starts_with("b3k:"),
        "{r:#}"
    );
    let out = env.run_with(&["merge", "share.json"], &key);
    assert_eq!(
        out.code, 1,
        "the untouched keyed share merges to its true result: {out:?}"
    );
    // Without the key, a keyed share cannot be checked: refused, never taken on trust.
    let out = env.run(&["merge", "share.json"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("TRACEREPLAY_SHARE_KEY"),
        "{}",
        out.stderr
    );
    forge(&env.path("share.json"));
    let out = env.run_with(&["merge", "share.json"], &key);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("not keyed"), "{}", out.stderr);
}

/// `check traces --attest record.json` with the key in `keys/` (CI, and `env` besides).
fn attest(env: &Env, extra: &[&str], vars: &[(&str, &str)]) -> Output {
    let args = [
        &["check", "traces", "--attest", "record.json"][..],
        &["--signing-key", "keys/tracereplay.key"],
        extra,
    ]
    .concat();
    env.run_with(&args, &[&[("CI", "true")][..], vars].concat())
}

fn verify_record(env: &Env, extra: &[&str]) -> Output {
    let args = [
        &[
            "verify-attestation",
            "record.json",
            "--trusted-keys",
            "keys/tracereplay.pub",
        ][..],
        extra,
    ]
    .concat();
    env.run(&args)
}

#[test]
fn a_record_of_a_failed_run_an_undated_one_or_one_missing_a_trace_does_not_verify() {
    let env = Env::new();
    signed_suite(&env, "r1");
    // A record of the failing run: signed and intact, but of a red run.
    assert_eq!(attest(&env, &[], &[]).code, 1);
    let out = verify_record(&env, &["--traces", "traces"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stdout.contains("the attested run failed (exit code 1)"),
        "{}",
        out.stdout
    );
    let out = verify_record(&env, &["--traces", "traces", "--signature-only"]);
    assert_eq!(out.code, 0, "{out:?}");
    // A green run's record verifies; a failing trace added later, which it does not name,
    // fails the verification unless allowed.
    std::fs::remove_dir_all(env.path("traces/fail")).unwrap();
    assert_eq!(attest(&env, &[], &[]).code, 0);
    assert_eq!(verify_record(&env, &["--traces", "traces"]).code, 0);
    one_trace_suite(&env, "late", "High", "fetch", "default");
    let out = verify_record(&env, &["--traces", "traces"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stdout
            .contains("FAIL  `traces/late/default.trace.ndjson.zst` is not named"),
        "{}",
        out.stdout
    );
    assert_eq!(
        verify_record(&env, &["--traces", "traces", "--allow-extra"]).code,
        0
    );
    std::fs::remove_dir_all(env.path("traces/late")).unwrap();
    // Its time, commit and run id are stated, and checked when asked.
    let vars = [
        ("SOURCE_DATE_EPOCH", "1000000000"),
        ("GITHUB_SHA", "abc123"),
    ];
    assert_eq!(attest(&env, &["--run-id", "r1"], &vars).code, 0);
    let out = verify_record(&env, &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .contains("exit code 0, ended 2001-09-09T01:46:40Z, abc123, run `r1`"),
        "{}",
        out.stdout
    );
    for (flags, fails) in [
        (&["--max-age", "3600"][..], "longer than `--max-age` 3600 s"),
        (
            &["--commit", "def456"],
            "the run judged commit `abc123`, not `def456`",
        ),
        (&["--run-id", "r2"], "the record is of run `r1`, not `r2`"),
    ] {
        let out = verify_record(&env, flags);
        assert_eq!(out.code, 1, "{flags:?}: {out:?}");
        assert!(out.stdout.contains(fails), "{}", out.stdout);
    }
    assert_eq!(
        verify_record(&env, &["--commit", "ABC123", "--run-id", "r1"]).code,
        0
    );
    // A record dated in the future (a CI with a bad SOURCE_DATE_EPOCH, or a forger with the
    // key) is not taken as fresh.
    let future = [
        ("SOURCE_DATE_EPOCH", "4102444800"),
        ("GITHUB_SHA", "abc123"),
    ];
    assert_eq!(attest(&env, &["--run-id", "r1"], &future).code, 0);
    let out = verify_record(&env, &["--max-age", "3600"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stdout.contains("in the future"), "{}", out.stdout);
    assert_eq!(attest(&env, &["--run-id", "r1"], &vars).code, 0);
    // A record that states no time (as an older version wrote them) is not taken as fresh.
    let secret = String::from_utf8(env.read("keys/tracereplay.key")).unwrap();
    let key = tracereplay_core::sign::keys::SigningKey::from_text(&secret, "the test key").unwrap();
    let text = String::from_utf8(env.read("record.json")).unwrap();
    let keys = tracereplay_core::sign::keys::TrustedKeys::load(
        camino::Utf8Path::from_path(&env.path("keys/tracereplay.pub")).unwrap(),
    )
    .unwrap();
    let mut statement = tracereplay_core::sign::attest::verify(&text, &keys)
        .unwrap()
        .statement;
    statement.predicate.time = None;
    env.write(
        "record.json",
        tracereplay_core::sign::attest::sign(&statement, &key),
    );
    let out = verify_record(&env, &[]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stdout.contains("states no time"), "{}", out.stdout);
    assert_eq!(verify_record(&env, &["--signature-only"]).code, 0);
}

/// Two scenarios with approved baselines (`harmless`, `guarded`), off CI.
fn two_approved(env: &Env) {
    one_trace_suite(env, "harmless", "Low", "search", "x");
    one_trace_suite(env, "guarded", "High", "search", "default");
    assert_eq!(local(env, &["baseline", "approve", "traces"]).code, 0);
}

#[test]
fn a_pending_file_whose_content_names_another_case_is_refused() {
    let env = Env::new();
    two_approved(&env);
    let guarded = "baselines/guarded/default.baseline.json";
    let before = env.read(guarded);
    // A crafted pending file at `guarded`'s place that names `harmless/x` inside.
    let harmless = String::from_utf8(env.read("baselines/harmless/x.baseline.json")).unwrap();
    env.write(
        &format!("{guarded}.new"),
        harmless.replace("\"final_answer\"", "\"final_answer\" "),
    );
    let out = local(&env, &["baseline", "accept", "harmless"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        env.read(guarded),
        before,
        "another case's approved baseline was replaced"
    );
    let out = local(&env, &["baseline", "accept"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr
            .contains("a pending file's place and content must agree"),
        "{}",
        out.stderr
    );
    assert_eq!(env.read(guarded), before);
    // A crafted removal that names `harmless/x` at `guarded`'s place deletes nothing.
    std::fs::remove_file(env.path(&format!("{guarded}.new"))).unwrap();
    env.write(&format!("{guarded}.deleted"), &harmless);
    for args in [
        &["baseline", "accept", "harmless/x"][..],
        &["baseline", "accept", "--removals"],
    ] {
        let out = local(&env, args);
        assert_eq!(out.code, 1, "{args:?}: {out:?}");
        assert_eq!(
            env.read(guarded),
            before,
            "{args:?} deleted another case's baseline"
        );
    }
    // `pending` says so; rejecting (deleting the crafted file itself) is allowed.
    let out = local(&env, &["baseline", "pending"]);
    assert!(out.stdout.contains("refused  "), "{}", out.stdout);
    let out = local(&env, &["baseline", "reject", "guarded"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!env.path(&format!("{guarded}.deleted")).exists());
    assert_eq!(env.read(guarded), before);
}

#[cfg(unix)]
#[test]
fn an_approved_baseline_is_never_read_through_a_symlink() {
    let env = Env::new();
    two_approved(&env);
    // Elsewhere, a baseline that would make `guarded` drift.
    let approved = "baselines/guarded/default.baseline.json";
    let text = String::from_utf8(env.read(approved)).unwrap();
    env.write(
        "elsewhere/default.baseline.json",
        text.replace("\"search\"", "\"other\""),
    );
    let outside = env.path("elsewhere/default.baseline.json");
    // The file, then the scenario directory, replaced by a symlink leading out of the store.
    for link_dir in [false, true] {
        let env2 = Env::new();
        two_approved(&env2);
        if link_dir {
            std::fs::remove_dir_all(env2.path("baselines/guarded")).unwrap();
            std::os::unix::fs::symlink(outside.parent().unwrap(), env2.path("baselines/guarded"))
                .unwrap();
        } else {
            std::fs::remove_file(env2.path(approved)).unwrap();
            std::os::unix::fs::symlink(&outside, env2.path(approved)).unwrap();
        }
        let out = env2.run(&["check", "traces", "--format", "json"]);
        let r = json(&out);
        let row = row(&r, "guarded/default.trace.ndjson.zst");
        let drift: Vec<&str> = (row["drift"].as_array().unwrap().iter())
            .filter_map(|d| d["category"].as_str())
            .collect();
        assert!(
            !drift.contains(&"arguments-changed"),
            "compared with the file outside: {row:#}"
        );
        let shown = row["drift"].to_string();
        assert!(
            link_dir || shown.contains("never read through"),
            "the symlinked file is said to be refused: {row:#}"
        );
    }
}

#[cfg(unix)]
#[test]
fn signature_and_key_files_are_bounded_and_devices_are_refused() {
    let env = Env::new();
    signed_suite(&env, "r1");
    let sig = "traces/pass/default.trace.ndjson.zst.minisig";
    // A signature file far larger than any signature: refused unread, by its size.
    env.write(sig, vec![b'x'; 100 << 10]);
    let out = require_signed(&env, &["--fail-on", "none"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stdout.contains("larger than the limit of 65536 bytes"),
        "{}",
        out.stdout
    );
    // `/dev/zero` as a signature, a trusted key or a signing key: refused, never read.
    std::fs::remove_file(env.path(sig)).unwrap();
    std::os::unix::fs::symlink("/dev/zero", env.path(sig)).unwrap();
    std::os::unix::fs::symlink("/dev/zero", env.path("zero.pub")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", env.path("zero.key")).unwrap();
    let out = require_signed(&env, &["--fail-on", "none"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stdout.contains("not a regular file"), "{}", out.stdout);
    let out = local(&env, &["verify", "traces", "--trusted-keys", "zero.pub"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("not a regular file"), "{}", out.stderr);
    let out = local(&env, &["sign", "traces", "--signing-key", "zero.key"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("not a regular file"), "{}", out.stderr);
}

#[test]
fn a_url_never_shows_its_password_or_query_tokens() {
    let env = Env::new();
    good_suite(&env);
    // Nothing listens on port 1: the send fails, and the message names the endpoint.
    let url = "http://ci-user:hunter2@127.0.0.1:1/v1/logs?api_key=sk-live-123&region=eu";
    let out = env.run(&["check", "traces", "--otlp-endpoint", url]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("cannot send the OpenTelemetry logs"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("ci-user:***@127.0.0.1:1"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("api_key=***&region=***"),
        "{}",
        out.stderr
    );
    for secret in ["hunter2", "sk-live-123"] {
        assert!(
            !out.stderr.contains(secret) && !out.stdout.contains(secret),
            "{out:?}"
        );
    }
}

#[test]
fn shares_of_a_suite_with_a_duplicate_trial_case_merge_to_the_whole() {
    let env = Env::new();
    // Two recordings of `s/c` that both say they are trial 1; `t` passes.
    for i in 0..2 {
        let text = trace_text("s", "c", &[&call("c1", "search"), END]).replacen(
            "\"case\":\"c\"",
            "\"case\":\"c\",\"trial\":1",
            1,
        );
        env.write(
            &format!("traces/s/c/{i}.trace.ndjson.zst"),
            sealed_zst(&text),
        );
    }
    env.write("traces/s/s.scenario.json", scenario("s", "High", "search"));
    one_trace_suite(&env, "t", "High", "search", "c");
    let whole = env.run(&["check", "traces", "--json", "whole.json"]);
    assert_eq!(whole.code, 1, "{whole:?}");
    let mut shares = Vec::new();
    for k in 1..=2 {
        let share = format!("share{k}.json");
        let p = format!("hash:{k}/2");
        let out = env.run(&["check", "traces", "--partition", &p, "--json", &share]);
        assert!(out.code <= 1, "{out:?}");
        shares.push(share);
    }
    let out = env.run(&["merge", &shares[0], &shares[1], "--json", "merged.json"]);
    assert_eq!(out.code, whole.code, "{out:?}");
    assert_eq!(env.read("merged.json"), env.read("whole.json"));
}

#[test]
fn many_sub_nano_dollar_costs_add_up_and_impossible_usage_is_said() {
    let env = Env::new();
    env.write(
        "traces/cheap/cheap.scenario.json",
        r#"{"id":"cheap","title":"t","risk":"High","oracles":[{"type":"max-cost","limit":0.0000001}]}"#,
    );
    // 1,000 requests of $0.0000000004 each: $0.0000004 in all, four times the limit. Rounded to
    // nano-dollars one by one, each was $0 and the run passed.
    let inference = r#"{"kind":"inference","output":{"text":"ok"},"usage":{"input_tokens":1,"output_tokens":0,"cost_usd":4e-10}}"#;
    let mut events = vec![inference; 1000];
    events.push(END);
    env.write(
        "traces/cheap/default.trace.ndjson.zst",
        sealed_zst(&trace_text("cheap", "default", &events)),
    );
    let out = env.run(&["check", "traces", "--format", "json"]);
    assert_eq!(out.code, 1, "{out:?}");
    let r = json(&out);
    let message = r["results"][0]["oracles"][0]["message"].as_str().unwrap();
    assert!(message.contains("exceeds the limit"), "{message}");
    // More cache reads than input tokens: priced, and said.
    let env = Env::new();
    env.write(
        "traces/odd/odd.scenario.json",
        scenario("odd", "High", "search"),
    );
    let odd = r#"{"kind":"inference","output":{"text":"ok"},"usage":{"input_tokens":10,"output_tokens":1,"cache_read_tokens":50}}"#;
    env.write(
        "traces/odd/default.trace.ndjson.zst",
        sealed_zst(&trace_text(
            "odd",
            "default",
            &[odd, &call("c1", "search"), END],
        )),
    );
    let out = env.run(&["check", "traces"]);
    assert!(
        out.stderr
            .contains("more cache-read tokens than input tokens (line(s) 2)"),
        "{out:?}"
    );
}

#[test]
fn small_holes_budget_nan_string_limits_and_control_characters() {
    let env = Env::new();
    good_suite(&env);
    for bad in ["nan", "inf", "-1"] {
        let out = env.run(&["check", "traces", "--budget-cost", bad]);
        assert_eq!(out.code, 2, "{bad}: {out:?}");
    }
    // A count written as a string is a misconfiguration, named.
    env.write(
        "traces/good/good.scenario.json",
        r#"{"id":"good","title":"t","risk":"High","oracles":[{"type":"max-tool-calls","limit":"2"}]}"#,
    );
    let out = env.run(&["check", "traces", "--format", "json"]);
    assert_eq!(out.code, 1, "{out:?}");
    let e = &json(&out)["results"][0]["error"];
    assert_eq!(e["category"], "scenario-invalid", "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("\"2\" (a string"),
        "{e}"
    );
    // A pending file under a directory whose name holds an escape sequence: shown escaped.
    let env = Env::new();
    good_suite(&env);
    assert_eq!(local(&env, &["baseline", "approve", "traces"]).code, 0);
    let approved = env.read("baselines/good/default.baseline.json");
    env.write("baselines/x\u{1b}[2J/y.baseline.json.new", approved);
    for args in [
        &["baseline", "pending"][..],
        &["baseline", "accept"],
        &["config"],
    ] {
        let out = local(&env, args);
        assert!(
            !out.stdout.contains('\u{1b}') && !out.stderr.contains('\u{1b}'),
            "{args:?}: {out:?}"
        );
    }
}

#[test]
fn gates_warns_of_an_override_path_that_names_nothing() {
    let env = Env::new();
    env.write(
        "traces/r/r.scenario.json",
        r#"{"id":"r","title":"t","risk":"High","oracles":[{"type":"tool-sequence","mode":"exact","calls":[{"tool":"refund","args":{"order":{"id":7}}}],"argsMatchOverrides":{"refund":["ordr.id","order.id"]}}]}"#,
    );
    let out = env.run(&["gates", "traces"]);
    assert!(
        out.stdout.contains("`argsMatchOverrides.refund` path `ordr.id` names nothing in the expected arguments of `refund`"),
        "{out:?}"
    );
    assert!(!out.stdout.contains("path `order.id`"), "{}", out.stdout);
}
