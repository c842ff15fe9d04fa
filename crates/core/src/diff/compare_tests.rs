//! Unit tests of comparing behaviours.

use super::*;
use crate::baseline::UsageRecord;
use std::collections::BTreeMap;

fn behaviour() -> Behaviour {
    Behaviour {
        tool_calls: vec![CallRecord {
            tool: "read".into(),
            args: serde_json::json!({"path": "a"}),
            call: "call#1".into(),
            ok: Some(true),
            error: None,
            result: Some("b3:aa".into()),
            result_text: None,
        }],
        approvals: vec![],
        messages: vec![],
        final_answer: Some("done".into()),
        status: "completed".into(),
        artifacts: vec![],
        usage: UsageRecord {
            input_tokens: 100,
            output_tokens: 10,
            requests: 2,
            cost_usd: None,
        },
        oracles: BTreeMap::from([
            ("0:tool-called".to_owned(), "pass".to_owned()),
            ("run-completed".to_owned(), "pass".to_owned()),
        ]),
    }
}

fn categories(a: &Behaviour, b: &Behaviour, mode: DriftMode) -> Vec<(DriftCategory, bool)> {
    compare(a, b, 0.2, mode)
        .into_iter()
        .map(|f| (f.category, f.fails))
        .collect()
}

#[test]
fn each_section_maps_to_its_category() {
    let base = behaviour();
    assert!(compare(&base, &base, 0.2, DriftMode::Default).is_empty());
    let mut b = base.clone();
    b.tool_calls[0].args = serde_json::json!({"path": "b"});
    assert_eq!(
        categories(&base, &b, DriftMode::Default),
        vec![(DriftCategory::ArgumentsChanged, true)]
    );
    let f = &compare(&base, &b, 0.2, DriftMode::Default)[0];
    assert!(
        f.diff
            .as_deref()
            .unwrap()
            .contains("-call#1 read {\"path\":\"a\"} -> ok\n+call#1 read {\"path\":\"b\"} -> ok"),
        "{f:?}"
    );
    let mut b = base.clone();
    b.tool_calls[0].result = Some("b3:bb".into());
    assert_eq!(
        categories(&base, &b, DriftMode::Default),
        vec![(DriftCategory::ToolResultsChanged, true)]
    );
    let f = &compare(&base, &b, 0.2, DriftMode::Default)[0];
    assert!(
        (f.diff.as_deref().unwrap()).contains(
            "-call#1 read {\"path\":\"a\"} => b3:aa (no content to show: recorded as a hash, or approved before contents were kept)\n+call#1 read {\"path\":\"a\"} => b3:bb (no content"
        ),
        "{f:?}"
    );
    // With the contents kept, the two values show; a text kept equal is no drift of its own.
    let (mut a, mut b2) = (base.clone(), b.clone());
    a.tool_calls[0].result_text = Some("\"sunny, 21 C\"".into());
    b2.tool_calls[0].result_text = Some("{\"sky\":\"sunny\"}".into());
    let f = &compare(&a, &b2, 0.2, DriftMode::Default)[0];
    assert!(
        (f.diff.as_deref().unwrap()).contains(
            "-call#1 read {\"path\":\"a\"} => \"sunny, 21 C\"\n+call#1 read {\"path\":\"a\"} => {\"sky\":\"sunny\"}"
        ),
        "{f:?}"
    );
    let mut same = base.clone();
    same.tool_calls[0].result_text = Some("anything".into());
    assert!(compare(&base, &same, 0.2, DriftMode::Default).is_empty());
    assert_eq!(base, same, "the text is never compared");
    // A baseline written before results were compared has none: not drift for that alone.
    let mut old = base.clone();
    old.tool_calls[0].result = None;
    assert!(compare(&old, &base, 0.2, DriftMode::Default).is_empty());
    assert!(compare(&old, &b, 0.2, DriftMode::Default).is_empty());
    let mut b = base.clone();
    b.tool_calls[0].tool = "write".into();
    assert_eq!(
        categories(&base, &b, DriftMode::Default),
        vec![(DriftCategory::ToolCallsChanged, true)]
    );
    let mut b = base.clone();
    b.final_answer = Some("finished".into());
    assert_eq!(
        categories(&base, &b, DriftMode::Default),
        vec![(DriftCategory::FinalAnswerChanged, false)]
    );
    assert_eq!(
        categories(&base, &b, DriftMode::Strict),
        vec![(DriftCategory::FinalAnswerChanged, true)]
    );
    let mut b = base.clone();
    b.oracles.insert("0:tool-called".into(), "fail".into());
    assert_eq!(
        categories(&base, &b, DriftMode::Default),
        vec![(DriftCategory::Regression, true)]
    );
    assert_eq!(
        categories(&b, &base, DriftMode::Default),
        vec![(DriftCategory::Improvement, false)]
    );
    assert_eq!(
        categories(&base, &b, DriftMode::Warn),
        vec![(DriftCategory::Regression, false)]
    );
    let mut b = base.clone();
    b.oracles.insert("1:status-is".into(), "pass".into());
    assert_eq!(
        categories(&base, &b, DriftMode::Default),
        vec![(DriftCategory::OraclesChanged, true)]
    );
    let mut b = base.clone();
    b.status = "failed".into();
    assert_eq!(
        categories(&base, &b, DriftMode::Default),
        vec![(DriftCategory::StatusChanged, true)]
    );
    let mut b = base.clone();
    b.approvals.push(ApprovalRecord {
        tool: Some("shell".into()),
        call: None,
        requested: true,
        decisions: vec![true],
    });
    assert_eq!(
        categories(&base, &b, DriftMode::Default),
        vec![(DriftCategory::ApprovalsChanged, true)]
    );
}

#[test]
fn usage_tolerance_is_max_of_one_and_a_fraction() {
    let base = behaviour();
    let mut b = base.clone();
    b.usage.input_tokens = 120; // exactly 20 %
    b.usage.requests = 3; // +1 is within max(1, 0.4)
    assert!(compare(&base, &b, 0.2, DriftMode::Default).is_empty());
    b.usage.input_tokens = 121;
    b.usage.requests = 4;
    let found = categories(&base, &b, DriftMode::Default);
    assert_eq!(
        found,
        vec![(DriftCategory::UsageOutsideTolerance, false); 2]
    );
}
