//! Property tests: a baseline records behaviour, not how the recording spelled it.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::{BaselineFile, Behaviour, canonical};
use crate::fuzzing::runs::{Layout, Run, config, run};

/// The baseline text of `run` as `layout` records it.
fn baseline(run: &Run, layout: &Layout) -> String {
    let trace = run.trace("prop.scenario", "default", layout);
    let behaviour = Behaviour::from_trace(&trace, &[]);
    BaselineFile::new("prop.scenario", "default", "b3:fixed", behaviour).to_text()
}

/// JSON values with nested objects, arrays, integral and fractional floats, `-0`.
pub(super) fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(|f| json!(f)),
        (-1000i32..1000).prop_map(|n| json!(f64::from(n))),
        Just(json!(-0.0)),
        "[a-z\\\\\"\u{2028}\u{0}]{0,6}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec(("[a-e]{1,3}", inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// `v` as JSON text with every object's keys in reverse order.
fn reversed_text(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let items: Vec<String> = (m.iter().rev())
                .map(|(k, v)| format!("{}:{}", Value::from(k.as_str()), reversed_text(v)))
                .collect();
            format!("{{{}}}", items.join(","))
        }
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(reversed_text).collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn renamed_ids_shifted_times_and_reordered_batches_keep_the_baseline(
        run in run(),
        ids in "[a-z]{1,5}[-_:#]",
        shift in -1_000_000_000i64..1_000_000_000,
        rotations in proptest::collection::vec(0usize..4, 4),
    ) {
        let before = baseline(&run, &Layout::default());
        let mut moved = run.clone();
        for (batch, r) in moved.batches.iter_mut().zip(rotations.iter().cycle()) {
            let len = batch.order.len();
            batch.order.rotate_left(r % len);
        }
        let layout = Layout { ids, t0: Layout::default().t0 + shift };
        prop_assert_eq!(baseline(&moved, &layout), before);
    }

    #[test]
    fn changed_arguments_change_the_baseline(
        run in run().prop_filter("a run with calls", |r| !r.batches.is_empty()),
        batch in any::<prop::sample::Index>(),
        call in any::<prop::sample::Index>(),
        value in any::<u16>(),
    ) {
        let before = baseline(&run, &Layout::default());
        let mut changed = run.clone();
        let b = batch.get(&changed.batches).calls.len();
        let b_index = batch.index(changed.batches.len());
        let c = &mut changed.batches[b_index].calls[call.index(b)];
        c.args.as_object_mut().expect("args are objects").insert("changed".into(), json!(value));
        prop_assert_ne!(baseline(&changed, &Layout::default()), before);
    }

    #[test]
    fn canonical_json_is_idempotent_and_key_order_independent(v in value()) {
        let once = canonical(&v);
        prop_assert_eq!(&canonical(&once), &once);
        let reread: Value = serde_json::from_str(&reversed_text(&v)).expect("reversed text is JSON");
        prop_assert_eq!(canonical(&reread).to_string(), once.to_string());
    }
}
