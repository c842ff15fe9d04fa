//! The projects the settings' effect test (`settings_effect.rs`) sets keys in: each a small
//! suite in `suite/` on which one setting changes what a command does. Fixtures that need an
//! approved baseline or a signature make it with the binary itself, off CI.

use crate::settings::{local, priced_suite};
use crate::trials::trial_trace;
use crate::util::*;

/// `suite/ok` (High, passes: it calls `search`) and `suite/low` (Low, fails: it expects
/// `fetch`), both sealed; an empty directory `empty/`.
pub(crate) fn suite(env: &Env) {
    for (id, risk, tool) in [("ok", "High", "search"), ("low", "Low", "fetch")] {
        env.write(
            &format!("suite/{id}/{id}.scenario.json"),
            scenario(id, risk, tool),
        );
        env.write(
            &format!("suite/{id}/default.trace.ndjson.zst"),
            sealed_zst(&trace_text(id, "default", &[&call("c1", "search"), END])),
        );
    }
    std::fs::create_dir_all(env.path("empty")).unwrap();
}

/// `suite/ok` only, its trace unsealed; its baseline approved in `baselines/`.
pub(crate) fn unsealed(env: &Env) {
    env.write(
        "suite/ok/ok.scenario.json",
        scenario("ok", "High", "search"),
    );
    env.write(
        "suite/ok/default.trace.ndjson",
        trace_text("ok", "default", &[&call("c1", "search"), END]),
    );
    approve(env, &["suite"]);
}

/// A trace in `suite/extra` of scenario `extra`, which only the harness directory `harness/`
/// defines; its baseline approved in `baselines/`; an empty `empty/`.
pub(crate) fn harness(env: &Env) {
    env.write("harness/extra.json", scenario("extra", "High", "search"));
    env.write(
        "suite/extra/default.trace.ndjson.zst",
        sealed_zst(&trace_text(
            "extra",
            "default",
            &[&call("c1", "search"), END],
        )),
    );
    std::fs::create_dir_all(env.path("empty")).unwrap();
    approve(env, &["suite", "--scenarios", "harness"]);
}

/// [`harness`], with a secret in the harness scenario (which only `lint` of the harness sees).
pub(crate) fn harness_with_secret(env: &Env) {
    harness(env);
    let key = ["AKIA", "ABCDEFGHIJKLMNOP"].concat();
    let text = format!(
        r#"{{"id":"extra","title":"t {key}","risk":"High","oracles":[{{"type":"tool-called","tool":"search"}}]}}"#
    );
    env.write("harness/extra.json", text);
}

/// `suite/priced` (a `max-cost` of $0.5 over `gpt-4.1` usage the trace records without a
/// cost); `tables/prices.toml` prices the model, `tables/other.toml` does not.
pub(crate) fn priced(env: &Env) {
    priced_suite(env, "suite", 1000);
    env.write(
        "tables/prices.toml",
        "[models.\"gpt-4.1\"]\ninput = 2\noutput = 8\n",
    );
    env.write(
        "tables/other.toml",
        "[models.\"other-model\"]\ninput = 1\noutput = 1\n",
    );
}

/// [`priced`], its baseline approved with the price table.
pub(crate) fn priced_approved(env: &Env) {
    priced(env);
    approve(env, &["suite", "--prices", "tables/prices.toml"]);
}

/// `suite/ok` approved in `DIR` (`baselines` or `approved`), then re-recorded with other
/// arguments (structural drift: `arguments-changed`).
pub(crate) fn drifted_in(env: &Env, dir: &str) {
    env.write(
        "suite/ok/ok.scenario.json",
        scenario("ok", "High", "search"),
    );
    let trace = "suite/ok/default.trace.ndjson.zst";
    env.write(
        trace,
        sealed_zst(&trace_text("ok", "default", &[&call("c1", "search"), END])),
    );
    approve(env, &["suite", "--baselines", dir]);
    let changed = call("c1", "search").replace(r#"{"q":"x"}"#, r#"{"q":"y"}"#);
    env.write(
        trace,
        sealed_zst(&trace_text("ok", "default", &[&changed, END])),
    );
}

/// [`drifted_in`] `baselines/`.
pub(crate) fn drifted(env: &Env) {
    drifted_in(env, "baselines");
}

/// [`drifted_in`] `approved/`.
pub(crate) fn drifted_approved(env: &Env) {
    drifted_in(env, "approved");
}

/// `suite/priced` approved (priced) with 1,000 input tokens, re-recorded with 1,300: a usage
/// move of 30 %, drift at the default tolerance of 20 % and none at 50 %.
pub(crate) fn usage_moved(env: &Env) {
    priced_approved(env);
    priced_suite(env, "suite", 1300);
}

/// Scenario `s` with a trials policy and case `c` of 8 trials, approved when all 8 passed and
/// re-recorded with 4 of 8 passing: the verdict's test gives p = 0.0385, drift at α = 0.05 and
/// none at α = 0.01.
pub(crate) fn trials(env: &Env) {
    env.write(
        "suite/s/s.scenario.json",
        r#"{"id":"s","title":"t","risk":"High","trials":{"min":8,"pass":{"at-least":1}},"oracles":[{"type":"tool-called","tool":"search"}]}"#,
    );
    let write = |passing: usize| {
        for i in 0..8 {
            let tool = if i < passing { "search" } else { "fetch" };
            env.write(
                &format!("suite/s/c/{i}.trace.ndjson.zst"),
                trial_trace("s", "c", &i.to_string(), tool),
            );
        }
    };
    write(8);
    approve(env, &["suite"]);
    write(4);
}

/// Scenario `s` with a group-sequential drift design (looks after 4 and 8 trials, Pocock): its
/// set of 8 passing trials approved in `baselines/`, 8 failing ones in `approved/`; 4 current
/// trials, 1 passing (p = 0.018 against 8/8: a regression at α = 0.05, not at 0.01).
pub(crate) fn group_drift(env: &Env) {
    env.write(
        "suite/s/s.scenario.json",
        r#"{"id":"s","title":"t","risk":"High","trials":{"min":4,"pass":{"at-least":1},"drift":{"looks":[4,8],"spending":"pocock"}},"oracles":[{"type":"tool-called","tool":"search"}]}"#,
    );
    let write = |n: usize, passing: usize| {
        let _ = std::fs::remove_dir_all(env.path("suite/s/c"));
        for i in 0..n {
            let tool = if i < passing { "search" } else { "fetch" };
            env.write(
                &format!("suite/s/c/{i}.trace.ndjson.zst"),
                trial_trace("s", "c", &i.to_string(), tool),
            );
        }
    };
    write(8, 8);
    approve(env, &["suite"]);
    write(8, 0);
    approve(env, &["suite", "--baselines", "approved"]);
    write(4, 1);
}

/// Scenario `s` asking for 3 trials, which can show a regression at α = 0.05 (the smallest p
/// is 1/20) and not at α = 0.01.
pub(crate) fn three_trials(env: &Env) {
    env.write(
        "suite/s/s.scenario.json",
        r#"{"id":"s","title":"t","risk":"High","trials":{"min":3,"pass":{"at-least":1}},"oracles":[{"type":"tool-called","tool":"search"}]}"#,
    );
    for i in 0..3 {
        env.write(
            &format!("suite/s/c/{i}.trace.ndjson.zst"),
            trial_trace("s", "c", &i.to_string(), "search"),
        );
    }
}

/// [`suite`] with two signing key pairs, `keys_a/` and `keys_b/`; the traces signed with A, and
/// a signed record of a `check` run, `run.intoto.json`.
pub(crate) fn signed(env: &Env) {
    suite(env);
    for dir in ["keys_a", "keys_b"] {
        let out = local(env, &["key", "new", "--sign", "-o", dir]);
        assert_eq!(out.code, 0, "{out:?}");
    }
    let key = "keys_a/tracereplay.key";
    let out = local(
        env,
        &["sign", "suite", "--signing-key", key, "--run-id", "r1"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let args = [
        "check",
        "suite",
        "--attest",
        "run.intoto.json",
        "--signing-key",
        key,
    ];
    let out = local(env, &args);
    assert!(out.code <= 1, "{out:?}");
}

/// [`drifted_approved`] with the pending file `check` wrote for the change, in `approved/`.
pub(crate) fn pending(env: &Env) {
    drifted_approved(env);
    let out = local(env, &["check", "suite", "--baselines", "approved"]);
    assert_eq!(out.code, 1, "{out:?}");
    let files = files_under(&env.path("approved"));
    assert!(files.iter().any(|f| f.ends_with(".new")), "{files:?}");
}

/// `file`'s scenario judged under a `trials` policy (one trial, which must pass: what the
/// default judges, but a policy, so that the trials commands see the case).
fn with_policy(env: &Env, file: &str) {
    let text = String::from_utf8(env.read(file)).unwrap();
    let policy = r#""trials":{"min":1,"pass":{"at-least":1}},"oracles""#;
    env.write(file, text.replacen(r#""oracles""#, policy, 1));
}

/// [`priced`], its scenario under a `trials` policy.
pub(crate) fn priced_policy(env: &Env) {
    priced(env);
    with_policy(env, "suite/priced/priced.scenario.json");
}

/// [`unsealed`], its scenario under a `trials` policy.
pub(crate) fn unsealed_policy(env: &Env) {
    unsealed(env);
    with_policy(env, "suite/ok/ok.scenario.json");
}

/// [`harness`], the harness scenario under a `trials` policy.
pub(crate) fn harness_policy(env: &Env) {
    harness(env);
    with_policy(env, "harness/extra.json");
}

/// `baseline approve ARGS` off CI, which must write.
fn approve(env: &Env, args: &[&str]) {
    let out = local(env, &[&["baseline", "approve"], args].concat());
    assert_eq!(out.code, 0, "{out:?}");
}
