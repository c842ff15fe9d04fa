use proptest::prelude::*;

use super::super::properties_tests::value;
use super::*;

/// The text through the `Value` of the whole file, sorted by its maps: what `to_text` wrote
/// before it wrote straight from the types.
fn through_value(file: &BaselineFile) -> String {
    pretty_text(&serde_json::to_value(file).expect("a baseline serialises"))
}

/// Strings with what JSON escapes, non-ASCII and the separators JavaScript minds.
fn text() -> impl Strategy<Value = String> {
    "[a-z \\\\\"\n\t\u{1}\u{1f}é\u{2028}😀]{0,8}"
}

fn call() -> impl Strategy<Value = CallRecord> {
    let parts = (
        text(),
        value(),
        text(),
        any::<Option<bool>>(),
        proptest::option::of(text()),
    );
    let results = (proptest::option::of(text()), proptest::option::of(text()));
    (parts, results).prop_map(
        |((tool, args, call, ok, error), (result, result_text))| CallRecord {
            tool,
            args,
            call,
            ok,
            error,
            result,
            result_text,
        },
    )
}

fn approval() -> impl Strategy<Value = ApprovalRecord> {
    let decisions = proptest::collection::vec(any::<bool>(), 0..4);
    let parts = (
        proptest::option::of(text()),
        proptest::option::of(text()),
        any::<bool>(),
    );
    (parts, decisions).prop_map(|((tool, call, requested), decisions)| ApprovalRecord {
        tool,
        call,
        requested,
        decisions,
    })
}

fn usage() -> impl Strategy<Value = UsageRecord> {
    let cost = prop_oneof![
        Just(None),
        (0.0f64..1e4).prop_map(Some),
        Just(Some(6.0)),
        Just(Some(-0.0)),
        Just(Some(f64::NAN)),
    ];
    (any::<u64>(), any::<u64>(), any::<u64>(), cost).prop_map(|(i, o, r, cost_usd)| UsageRecord {
        input_tokens: i,
        output_tokens: o,
        requests: r,
        cost_usd,
    })
}

fn behaviour() -> impl Strategy<Value = Behaviour> {
    let vec = |n| 0..n;
    let lists = (
        proptest::collection::vec(call(), vec(4)),
        proptest::collection::vec(approval(), vec(3)),
        proptest::collection::vec((text(), text()), vec(3)),
        proptest::collection::vec((text(), text()), vec(3)),
    );
    let rest = (
        proptest::option::of(text()),
        text(),
        usage(),
        proptest::collection::btree_map(text(), text(), 0..4),
    );
    (lists, rest).prop_map(
        |((calls, approvals, messages, artifacts), (answer, status, usage, oracles))| Behaviour {
            tool_calls: calls,
            approvals,
            messages: (messages.into_iter())
                .map(|(phase, text)| MessageRecord { phase, text })
                .collect(),
            final_answer: answer,
            status,
            artifacts: (artifacts.into_iter())
                .map(|(path, h)| ArtifactRecord { path, h })
                .collect(),
            usage,
            oracles,
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn the_text_is_the_sorted_values_text(b in behaviour(), scenario in text(), case in text()) {
        let file = BaselineFile::new(&scenario, &case, "b3:fixed", b);
        prop_assert_eq!(baseline_text(&file), through_value(&file));
    }
}

#[test]
fn every_field_absent_and_present_writes_as_the_values_text() {
    let empty = Behaviour {
        tool_calls: vec![],
        approvals: vec![],
        messages: vec![],
        final_answer: None,
        status: "unknown".into(),
        artifacts: vec![],
        usage: UsageRecord::default(),
        oracles: BTreeMap::new(),
    };
    let file = BaselineFile::new("s", "c", "b3:0", empty.clone());
    assert_eq!(baseline_text(&file), through_value(&file));
    assert!(baseline_text(&file).contains("\"tool_calls\": [],\n"));
    let full = Behaviour {
        tool_calls: vec![CallRecord {
            tool: "search".into(),
            args: serde_json::json!({"q": "a\"b", "n": [1, 2.5, {"deep": []}], "e": {}}),
            call: "call#1".into(),
            ok: Some(true),
            error: None,
            result: Some("b3:00".into()),
            result_text: Some("\"found\"".into()),
        }],
        approvals: vec![ApprovalRecord {
            tool: Some("shell".into()),
            call: None,
            requested: true,
            decisions: vec![true, false],
        }],
        messages: vec![MessageRecord {
            phase: "final".into(),
            text: "done\n".into(),
        }],
        final_answer: Some("done".into()),
        status: "completed".into(),
        artifacts: vec![ArtifactRecord {
            path: "out.txt".into(),
            h: "b3:11".into(),
        }],
        usage: UsageRecord {
            input_tokens: 10,
            output_tokens: 2,
            requests: 1,
            cost_usd: Some(0.25),
        },
        oracles: BTreeMap::from([("0:tool-called".into(), "pass".into())]),
    };
    let file = BaselineFile::new("s", "c", "b3:0", full);
    assert_eq!(baseline_text(&file), through_value(&file));
    assert!(baseline_text(&file).contains("\"decisions\": [true, false],\n"));
}

/// The baseline text's layout, pinned: sorted keys at two spaces per level, arrays of
/// scalars on one line, nested ones a line per item, empty ones as `{}` and `[]`, and keys and
/// strings escaped as compact JSON escapes them.
#[test]
fn pretty_text_has_the_baseline_layout() {
    let v = serde_json::json!({
        "z": [1, "two", null, 2.5],
        "a\"q\\": {"n": [], "o": {}, "p": [[1], {"k": "é\u{1}\n"}]},
        "m": true
    });
    let want = r#"{
  "a\"q\\": {
    "n": [],
    "o": {},
    "p": [
      [1],
      {
        "k": "é\u0001\n"
      }
    ]
  },
  "m": true,
  "z": [1, "two", null, 2.5]
}
"#;
    assert_eq!(pretty_text(&v), want);
}
