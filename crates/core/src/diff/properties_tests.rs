//! Property tests: drift found between two behaviours is the same both ways, but for the verdict
//! moves (a `regression` one way is an `improvement` the other) and usage (whose tolerance is a
//! fraction of the approved side, so it is not symmetric by definition).

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::{DriftCategory, DriftMode, compare};
use crate::baseline::Behaviour;
use crate::fuzzing::runs::{Layout, config, run};

fn verdicts() -> impl Strategy<Value = BTreeMap<String, String>> {
    proptest::collection::vec(prop_oneof![Just("pass"), Just("fail")], 3).prop_map(|v| {
        (v.into_iter().enumerate())
            .map(|(i, verdict)| (format!("{i}:tool-called"), verdict.to_owned()))
            .collect()
    })
}

/// How often each category was found.
fn counts(a: &Behaviour, b: &Behaviour) -> BTreeMap<DriftCategory, usize> {
    let mut out = BTreeMap::new();
    for f in compare(a, b, 0.2, DriftMode::Default) {
        *out.entry(f.category).or_default() += 1;
    }
    out
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn drift_is_symmetric_but_for_verdict_moves(
        a in run(),
        b in run(),
        same_calls in any::<bool>(),
        va in verdicts(),
        vb in verdicts(),
    ) {
        let mut b = b;
        if same_calls {
            // Often the same calls with other arguments, so `arguments-changed` is met.
            b.batches = a.batches.clone();
            if let Some(c) = b.batches.iter_mut().flat_map(|x| &mut x.calls).next() {
                c.args = serde_json::json!({"other": true});
            }
        }
        let layout = Layout::default();
        let mut ba = Behaviour::from_trace(&a.trace("s", "c", &layout), &[]);
        let mut bb = Behaviour::from_trace(&b.trace("s", "c", &layout), &[]);
        ba.oracles = va;
        bb.oracles = vb;
        let mut forth = counts(&ba, &bb);
        let mut back = counts(&bb, &ba);
        for m in [&mut forth, &mut back] {
            m.remove(&DriftCategory::UsageOutsideTolerance);
        }
        let swap = |c: DriftCategory| match c {
            DriftCategory::Regression => DriftCategory::Improvement,
            DriftCategory::Improvement => DriftCategory::Regression,
            other => other,
        };
        let back_swapped: BTreeMap<DriftCategory, usize> =
            back.into_iter().map(|(c, n)| (swap(c), n)).collect();
        prop_assert_eq!(forth, back_swapped);
    }
}
