//! Property tests over whole suites on disk: the report does not depend on the thread count or
//! on the order files are named in, and the shares of a partition merge back into the whole
//! report byte for byte.

use camino::{Utf8Path, Utf8PathBuf};
use proptest::prelude::*;

use crate::baseline::BaselineStore;
use crate::diff::DriftMode;
use crate::eval::{BaselinePolicy, Baselines, CheckOptions, Execution};
use crate::fuzzing::runs::{Layout, Run, config, run};
use crate::report::Report;
use crate::suite::Suite;

/// Oracles the generated scenarios draw from.
const ORACLES: &[&str] = &[
    r#"{"type":"tool-called","tool":"search"}"#,
    r#"{"type":"max-tool-calls","limit":4}"#,
    r#"{"type":"tool-sequence","mode":"subset","tools":["search","read_file"]}"#,
    r#"{"type":"final-answer-contains","value":"a"}"#,
    r#"{"type":"no-unsafe-tool","tools":["shell"]}"#,
    r#"{"type":"approval-required","tool":"deploy"}"#,
    r#"{"type":"status-is","value":"completed"}"#,
    r#"{"type":"tool-args","tool":"search","args":{"q":"a"},"argsMatch":"subset"}"#,
];

/// A scenario: which oracles, and its cases' runs as approved and as recorded now.
#[derive(Debug, Clone)]
struct Case {
    approved: Run,
    now: Option<Run>,
}

fn suite() -> impl Strategy<Value = Vec<(Vec<usize>, Vec<Case>)>> {
    let case =
        (run(), proptest::option::of(run())).prop_map(|(approved, now)| Case { approved, now });
    proptest::collection::vec(
        (
            proptest::collection::vec(0..ORACLES.len(), 1..4),
            proptest::collection::vec(case, 0..4),
        ),
        1..6,
    )
}

fn write(path: &Utf8Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, bytes).expect("write");
}

fn options(root: &Utf8Path, threads: usize, write_pending: bool) -> CheckOptions {
    CheckOptions {
        baselines: Baselines::Compared {
            policy: BaselinePolicy {
                store: BaselineStore::new(root.join("baselines")),
                mode: DriftMode::Default,
                tolerance: 0.2,
                refresh: false,
                alpha: 0.05,
            },
            write_pending,
        },
        execution: Execution {
            threads: Some(threads),
            ..Execution::default()
        },
        ..CheckOptions::default()
    }
}

fn json(report: &Report) -> String {
    let mut out = Vec::new();
    crate::report::json::render(report, &mut out).expect("rendering into memory");
    String::from_utf8(out).expect("UTF-8")
}

/// Writes the suite with its approved runs, approves them all (check, then the pending files
/// become approved baselines), then records the current runs. Returns the scenario and trace
/// files.
fn lay_out(root: &Utf8Path, suite: &[(Vec<usize>, Vec<Case>)]) -> Vec<Utf8PathBuf> {
    let layout = Layout::default();
    let mut files = Vec::new();
    let mut traces = Vec::new();
    for (s, (oracles, cases)) in suite.iter().enumerate() {
        let id = format!("prop.s{s}");
        let dir = root.join("traces").join(&id);
        let oracles: Vec<&str> = oracles.iter().map(|&o| ORACLES[o]).collect();
        let scenario = format!(
            r#"{{"id":"{id}","title":"generated","risk":"High","oracles":[{}]}}"#,
            oracles.join(",")
        );
        let file = dir.join(format!("{id}.scenario.json"));
        write(&file, scenario.as_bytes());
        files.push(file);
        for (c, case) in cases.iter().enumerate() {
            let path = dir.join(format!("case{c}.trace.ndjson"));
            write(
                &path,
                &case.approved.sealed(&id, &format!("case{c}"), &layout),
            );
            traces.push((path, id.clone(), c, case.now.clone()));
        }
    }
    let traces_dir = root.join("traces");
    Suite::discover([&traces_dir])
        .expect("discovery")
        .check(&options(root, 2, true))
        .expect("the approving check");
    for entry in walk(&root.join("baselines")) {
        if let Some(approved) = entry.as_str().strip_suffix(".new") {
            std::fs::rename(&entry, approved).expect("approving");
        }
    }
    for (path, id, c, now) in traces {
        if let Some(now) = now {
            write(&path, &now.sealed(&id, &format!("case{c}"), &layout));
        }
        files.push(path);
    }
    files
}

fn walk(dir: &Utf8Path) -> Vec<Utf8PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten() {
        let p = Utf8PathBuf::try_from(e.expect("listing").path()).expect("UTF-8");
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

proptest! {
    #![proptest_config(config(24))]

    #[test]
    fn reports_do_not_depend_on_threads_order_or_partition(
        suite in suite(),
        order in Just(()).prop_perturb(|_, mut rng| rng.next_u64()),
        shares in 2u64..5,
    ) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = Utf8PathBuf::try_from(tmp.path().to_owned()).expect("UTF-8");
        let mut files = lay_out(&root, &suite);
        let traces = root.join("traces");
        let check = |paths: &[Utf8PathBuf], threads: usize, partition: Option<(u64, u64)>| {
            let mut opts = options(&root, threads, false);
            opts.selection.partition = partition;
            Suite::discover(paths).expect("discovery").check(&opts).expect("check")
        };

        // Threads.
        let whole = json(&check(std::slice::from_ref(&traces), 1, None));
        prop_assert_eq!(&json(&check(std::slice::from_ref(&traces), 4, None)), &whole);

        // The order files are named in.
        let named = json(&check(&files, 3, None));
        let mut state = order | 1;
        for i in (1..files.len()).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            files.swap(i, (state % (i as u64 + 1)) as usize);
        }
        prop_assert_eq!(json(&check(&files, 2, None)), named);

        // Shares merge back into the whole report.
        let mut reports = Vec::new();
        for k in 1..=shares {
            let share = json(&check(std::slice::from_ref(&traces), 2, Some((k, shares))));
            let report: Report = serde_json::from_str(&share).expect("a share reads");
            reports.push((format!("share-{k}.json"), report));
        }
        let merged = crate::eval::merge(reports).expect("the shares merge");
        prop_assert_eq!(json(&merged), whole);
    }
}
