//! A signed record of a run: `check --attest`, `verify-attestation`, and `replay serve
//! --record` signing its recordings.

use crate::replay::{Server, agent_loop, ingested};
use crate::signing::{key_pair, minisign};
use crate::util::{Env, copy_demo, json};

/// The Statement inside an attestation file (its payload, decoded, unverified).
fn statement(env: &Env, file: &str) -> serde_json::Value {
    let envelope: serde_json::Value = serde_json::from_slice(&env.read(file)).unwrap();
    let payload = envelope["payload"].as_str().unwrap();
    let script =
        format!("import base64,sys; sys.stdout.write(base64.b64decode('{payload}').decode())");
    let out = std::process::Command::new("python3")
        .args(["-c", &script])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

fn attested_suite(env: &Env) -> (String, String) {
    copy_demo(env, true);
    let (id, secret) = key_pair(env, "keys");
    let signed = env.run_with(
        &["sign", "traces"],
        &[("CI", ""), ("TRACEREPLAY_SIGNING_KEY", &secret)],
    );
    assert_eq!(signed.code, 0, "{signed:?}");
    (id, secret)
}

#[test]
fn check_attest_records_every_verdict_and_seal_signed_and_verify_attestation_checks_them() {
    let env = Env::new();
    let (id, secret) = attested_suite(&env);
    let args = [
        "check",
        "traces/",
        "--require-signed",
        "--trusted-keys",
        "keys/tracereplay.pub",
        "--attest",
        "run.intoto.json",
        "--format",
        "json",
    ];
    let out = env.run_with(
        &args,
        &[("CI", "true"), ("TRACEREPLAY_SIGNING_KEY", &secret)],
    );
    assert!(out.code == 0 || out.code == 1, "{out:?}");
    assert!(!out.stderr.contains(secret.lines().nth(1).unwrap()));
    let report = json(&out);
    let envelope: serde_json::Value = serde_json::from_slice(&env.read("run.intoto.json")).unwrap();
    assert_eq!(envelope["payloadType"], "application/vnd.in-toto+json");
    assert_eq!(envelope["signatures"][0]["keyid"], id.as_str());
    let s = statement(&env, "run.intoto.json");
    assert_eq!(s["_type"], "https://in-toto.io/Statement/v1");
    assert_eq!(
        s["predicateType"],
        "https://tracereplay.dev/attestation/check/v1"
    );
    let p = &s["predicate"];
    assert_eq!(p["exit_code"].as_i64(), Some(out.code as i64));
    assert_eq!(p["trusted_keys"][0], id.as_str());
    assert!(
        p["options"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o == "require-signed = true")
    );
    assert_eq!(p["summary"], report["summary"]);
    // Each row of the report, with its seal and verdict, in report order.
    let rows = report["results"].as_array().unwrap();
    let results = p["results"].as_array().unwrap();
    assert_eq!(results.len(), rows.len());
    for (a, r) in results.iter().zip(rows) {
        assert_eq!(a["path"], r["path"]);
        assert_eq!(a["seal"], r["content_hash"]);
        assert_eq!(a["verdict"], r["verdict"]);
    }
    // Every sealed trace is a subject with the SHA-256 of its bytes; every scenario file hashed.
    let subjects = s["subject"].as_array().unwrap();
    assert_eq!(
        subjects.len(),
        rows.iter()
            .filter(|r| r["content_hash"].is_string())
            .count()
    );
    let scenarios = p["scenarios"].as_array().unwrap();
    assert!(!scenarios.is_empty() && scenarios.iter().all(|f| f["blake3"].is_string()));

    let verify = |extra: &[&str]| {
        let mut a = vec![
            "verify-attestation",
            "run.intoto.json",
            "--trusted-keys",
            "keys",
        ];
        a.extend_from_slice(extra);
        env.run(&a)
    };
    let ok = verify(&["--traces", "traces/"]);
    assert_eq!(ok.code, 0, "{ok:?}");
    assert!(
        ok.stdout.contains(&format!("signed by trusted key {id}")),
        "{ok:?}"
    );
    assert!(
        ok.stdout.contains(&format!(
            "{0} attested traces: {0} match, 0 do not",
            subjects.len()
        )),
        "{ok:?}"
    );

    // A trace changed since: named, exit 1.
    let trace = subjects[0]["name"].as_str().unwrap().to_owned();
    let mut bytes = env.read(&trace);
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    env.write(&trace, &bytes);
    let changed = verify(&["--traces", "traces/"]);
    assert_eq!(changed.code, 1, "{changed:?}");
    assert!(
        changed.stdout.contains(&format!("FAIL  `{trace}`")),
        "{changed:?}"
    );
    // A trace missing.
    std::fs::remove_file(env.path(&trace)).unwrap();
    let missing = verify(&["--traces", "traces/"]);
    assert_eq!(missing.code, 1, "{missing:?}");
    assert!(
        missing.stdout.contains("is attested but was not given"),
        "{missing:?}"
    );
}

#[test]
fn an_attestation_altered_by_one_byte_or_signed_by_another_key_fails() {
    let env = Env::new();
    let (_, secret) = attested_suite(&env);
    let out = env.run_with(
        &["check", "traces/", "--attest", "run.intoto.json"],
        &[("CI", "true"), ("TRACEREPLAY_SIGNING_KEY", &secret)],
    );
    assert!(out.code == 0 || out.code == 1, "{out:?}");
    let original = env.read("run.intoto.json");
    let ok = env.run(&[
        "verify-attestation",
        "run.intoto.json",
        "--trusted-keys",
        "keys",
    ]);
    assert_eq!(ok.code, 0, "{ok:?}");
    // One byte of the payload (a Base64 character changed keeps it Base64), then of the
    // signature.
    let text = String::from_utf8(original.clone()).unwrap();
    for field in ["\"payload\": \"", "\"sig\": \""] {
        let at = text.find(field).unwrap() + field.len() + 10;
        let mut bytes = original.clone();
        bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
        env.write("altered.json", &bytes);
        let bad = env.run(&[
            "verify-attestation",
            "altered.json",
            "--trusted-keys",
            "keys",
        ]);
        assert_eq!(bad.code, 1, "{field}: {bad:?}");
        assert!(bad.stdout.starts_with("FAIL  attestation"), "{bad:?}");
    }
    // Another key: the signature's key id is named.
    let (other, _) = key_pair(&env, "other");
    let untrusted = env.run(&[
        "verify-attestation",
        "run.intoto.json",
        "--trusted-keys",
        "other",
    ]);
    assert_eq!(untrusted.code, 1, "{untrusted:?}");
    assert!(
        untrusted.stdout.contains("not by a trusted key"),
        "{untrusted:?}"
    );
    assert!(untrusted.stdout.contains(&other), "{untrusted:?}");
    // `--attest` without a signing key is refused before anything is judged.
    let refused = env.run_with(
        &["check", "traces/", "--attest", "again.json"],
        &[("CI", "true"), ("TRACEREPLAY_SIGNING_KEY", "")],
    );
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(
        refused.stderr.contains("`--attest` signs the record"),
        "{refused:?}"
    );
    assert!(!env.path("again.json").exists());
}

#[test]
fn replay_serve_record_signs_each_recording() {
    let env = Env::new();
    minisign();
    ingested(&env);
    let (id, secret) = key_pair(&env, "keys");
    let server = Server::start_with(
        &env,
        &["traces/", "--record", "replayed", "--exit-when-finished"],
        &[("TRACEREPLAY_SIGNING_KEY", &secret)],
    );
    agent_loop(&server, "weather/paris", "sunny, 21 C", true);
    let (code, rest) = server.finish(&["weather/paris"]);
    assert_eq!(code, 0, "{rest}");
    assert!(rest.contains(&format!("signing with key {id}")), "{rest}");
    assert!(!rest.contains(secret.lines().nth(1).unwrap()));
    let trace = "replayed/weather/paris.trace.ndjson.zst";
    let v = std::process::Command::new(minisign())
        .args(["-V", "-m", trace, "-p", "keys/tracereplay.pub"])
        .current_dir(env.root())
        .output()
        .unwrap();
    assert!(v.status.success(), "{v:?}");
    let ours = env.run(&["verify", "replayed/", "--trusted-keys", "keys"]);
    assert_eq!(ours.code, 0, "{ours:?}");
}

#[test]
fn runs_judged_under_other_prices_budgets_or_alpha_attest_differently() {
    // The attestation names every setting that changes judging, with its value: two runs of
    // the same suite that differ only in the price table's contents, a budget or `alpha` are
    // two different records.
    let env = Env::new();
    let (_, secret) = attested_suite(&env);
    let attest = |name: &str, project: &str| {
        env.write("tracereplay.toml", project);
        let out = env.run_with(
            &["check", "traces/", "--attest", name, "--format", "json"],
            &[("CI", "true"), ("TRACEREPLAY_SIGNING_KEY", &secret)],
        );
        assert!(out.code == 0 || out.code == 1, "{out:?}");
        let options = statement(&env, name)["predicate"]["options"].clone();
        serde_json::from_value::<Vec<String>>(options).unwrap()
    };
    let prices = |input: u32| format!("[models.\"gpt-4.1\"]\ninput = {input}\noutput = 8\n");
    env.write("prices.toml", prices(2));
    let plain = attest("a.json", "paths = [\"traces\"]\n");
    for expected in [
        "alpha = 0.05",
        "budget.tokens = (none)",
        "fail-on = high",
        "drift = default",
    ] {
        assert!(plain.iter().any(|o| o == expected), "{expected}: {plain:?}");
    }
    let priced = plain.iter().find(|o| o.starts_with("prices = ")).unwrap();
    assert!(priced.contains("(blake3:"), "{priced}");
    // The same again attests the same; each change attests differently, in its own line.
    assert_eq!(attest("b.json", "paths = [\"traces\"]\n"), plain);
    env.write("prices.toml", prices(3));
    let repriced = attest("c.json", "paths = [\"traces\"]\n");
    assert_ne!(repriced, plain);
    assert_eq!(
        repriced.iter().filter(|o| !plain.contains(o)).count(),
        1,
        "{repriced:?}"
    );
    env.write("prices.toml", prices(2));
    let budget = attest("d.json", "paths = [\"traces\"]\n[budget]\ncost = 5\n");
    assert!(budget.iter().any(|o| o == "budget.cost = 5"), "{budget:?}");
    let alpha = attest("e.json", "paths = [\"traces\"]\nalpha = 0.01\n");
    assert!(alpha.iter().any(|o| o == "alpha = 0.01"), "{alpha:?}");
    assert_ne!(alpha, plain);
}
