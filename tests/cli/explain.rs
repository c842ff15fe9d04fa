//! `explain` pointing at the right call: the closest candidate is the one with the fewest
//! differing keys (ties toward the later call), and each differing key shows both values; the
//! drift diff puts long arguments one key per line.

use crate::util::*;

/// A tau-bench-like airline run: a first booking attempt fails on its payment, a second goes
/// through — with `insurance` changed from "no" to "yes" against what the scenario expects.
fn booking(insurance: &str) -> Vec<String> {
    let args = |payment: &str, insurance: &str| {
        serde_json::json!({
            "user_id": "mia_li_3668", "origin": "JFK", "destination": "SEA", "flight_type": "one_way",
            "cabin": "economy",
            "flights": [{"flight_number": "HAT136", "date": "2024-05-20"}, {"flight_number": "HAT039", "date": "2024-05-20"}],
            "passengers": [{"first_name": "Mia", "last_name": "Li", "dob": "1990-04-05"}],
            "payment_methods": [{"payment_id": payment, "amount": 250}],
            "total_baggages": 3, "nonfree_baggages": 0, "insurance": insurance
        })
    };
    let call = |id: &str, a: serde_json::Value| {
        serde_json::json!({"kind": "tool_call", "call_id": id, "tool": "book_reservation", "args": a}).to_string()
    };
    vec![
        call("c1", args("gift_card_7773485", "no")),
        r#"{"kind":"tool_result","call_id":"c1","ok":false,"error":"insufficient gift card balance"}"#.to_owned(),
        call("c2", args("certificate_7504069", insurance)),
        r#"{"kind":"tool_result","call_id":"c2","ok":true}"#.to_owned(),
        END.to_owned(),
    ]
}

fn suite(env: &Env, insurance: &str) {
    let expected = serde_json::json!({
        "user_id": "mia_li_3668", "origin": "JFK", "destination": "SEA", "flight_type": "one_way",
        "cabin": "economy",
        "flights": [{"flight_number": "HAT136", "date": "2024-05-20"}, {"flight_number": "HAT039", "date": "2024-05-20"}],
        "passengers": [{"first_name": "Mia", "last_name": "Li", "dob": "1990-04-05"}],
        "payment_methods": [{"payment_id": "certificate_7504069", "amount": 250}],
        "total_baggages": 3, "nonfree_baggages": 0, "insurance": "no"
    });
    env.write(
        "traces/tau/tau.scenario.json",
        serde_json::json!({"id": "tau", "title": "t", "risk": "High", "oracles": [
            {"type": "tool-sequence", "mode": "superset", "calls": [{"tool": "book_reservation", "args": expected}]},
            {"type": "tool-args", "tool": "book_reservation", "args": expected}
        ]})
        .to_string(),
    );
    let events = booking(insurance);
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    env.write(
        "traces/tau/default.trace.ndjson.zst",
        sealed_zst(&trace_text("tau", "default", &refs)),
    );
}

#[test]
fn explain_names_the_later_booking_and_shows_both_insurance_values() {
    let env = Env::new();
    suite(&env, "yes");
    let out = env.run(&["explain", "traces/tau/default.trace.ndjson.zst"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // Both oracles pick the final booking (seq 3), not the failed attempt (seq 1), though each
    // differs from the expectation in one key.
    assert!(
        out.stdout.contains("the closest actual call is seq 3, differing in `insurance` (expected \"no\", found \"yes\")"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(
            "the closest is seq 3, differing in `insurance` (expected \"no\", found \"yes\")"
        ),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("differs  `insurance`: expected \"no\", found \"yes\""),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("> seq 3"), "{}", out.stdout);
}

#[test]
fn a_one_key_change_is_a_one_line_change_in_the_drift_diff() {
    let env = Env::new();
    suite(&env, "no");
    assert_eq!(env.run_with(&["baseline", "approve"], &[]).code, 0);
    suite(&env, "yes");
    let out = env.run(&["check", "traces"]);
    let changed: Vec<&str> = (out.stdout.lines())
        .map(str::trim)
        .filter(|l| {
            (l.starts_with('-') || l.starts_with('+'))
                && !l.starts_with("---")
                && !l.starts_with("+++")
        })
        .collect();
    assert_eq!(
        changed,
        [
            "-    \"insurance\": \"no\",",
            "+    \"insurance\": \"yes\","
        ],
        "{}",
        out.stdout
    );
}
