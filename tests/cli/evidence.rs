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
