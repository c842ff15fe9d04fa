//! `check` of trial sets against trial-set baselines, beside the same traces checked as single
//! traces against their own baselines: 1,000 cases × 8 trials (the small corpus's trace shape,
//! 8,000 traces over 200 scenarios), baselines compared, no cache, at 1 and 2 threads. The
//! budget: trial sets cost at most 10 % more than single traces.
//!
//! `cargo bench --bench trials`; `TRACEREPLAY_BENCH_CASES` sets the number of cases (default
//! 1,000). CI only compiles it (clippy `--all-targets`).

mod corpus;

use camino::Utf8PathBuf;
use divan::Bencher;
use tracereplay::trace::Header;
use tracereplay_core::baseline::BaselineStore;
use tracereplay_core::discover::discover;
use tracereplay_core::eval::{
    BaselinePolicy, Baselines, CheckOptions, Counting, Execution, FailOn, check,
};
use tracereplay_core::trials::TrialId;

const TRIALS: usize = 8;

fn main() {
    divan::main();
}

/// A suite on disk with its approved baselines.
struct Suite {
    _dir: tempfile::TempDir,
    traces: Utf8PathBuf,
    baselines: Utf8PathBuf,
}

fn spec() -> corpus::Spec {
    let cases: usize = std::env::var("TRACEREPLAY_BENCH_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000);
    corpus::Spec {
        traces: cases * TRIALS,
        scenarios: 200,
        ..corpus::SMALL
    }
}

fn options(baselines: &Utf8PathBuf, write_pending: bool, threads: usize) -> CheckOptions {
    CheckOptions {
        counting: Counting {
            fail_on: FailOn::None,
            ..Counting::default()
        },
        baselines: Baselines::Compared {
            policy: BaselinePolicy {
                store: BaselineStore::new(baselines.clone()),
                mode: tracereplay_core::diff::DriftMode::Default,
                tolerance: 0.2,
                refresh: true,
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

/// Writes the 8,000 traces as `trials` (case `case-<k>` of scenario k mod 200, trial 0–7) or
/// as single traces (case `run-<n>`), then approves every pending baseline a first check wrote.
fn suite(as_trials: bool) -> Suite {
    let spec = spec();
    let dir = tempfile::tempdir().unwrap();
    let root = Utf8PathBuf::from_path_buf(dir.path().to_owned()).unwrap();
    let traces = root.join("traces");
    for i in 0..spec.scenarios {
        let d = traces.join(corpus::scenario_id(i));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join(format!("{}.scenario.json", corpus::scenario_id(i))),
            corpus::scenario_json(i),
        )
        .unwrap();
    }
    for n in 0..spec.traces {
        let case = n / TRIALS;
        let scenario = corpus::scenario_id(case % spec.scenarios);
        let (header, path) = if as_trials {
            let mut h = Header::new(scenario.clone(), format!("case-{case:05}"));
            h.trial = Some(TrialId::parse(&(n % TRIALS).to_string()).unwrap());
            let d = traces.join(&scenario).join(format!("case-{case:05}"));
            std::fs::create_dir_all(&d).unwrap();
            (h, d.join(format!("{}.trace.ndjson.zst", n % TRIALS)))
        } else {
            let h = Header::new(scenario.clone(), format!("run-{n:06}"));
            (
                h,
                traces
                    .join(&scenario)
                    .join(format!("run-{n:06}.trace.ndjson.zst")),
            )
        };
        let bytes = corpus::trace_bytes_with(&spec, n, header);
        std::fs::write(path, zstd::bulk::compress(&bytes, 3).unwrap()).unwrap();
    }
    let baselines = root.join("baselines");
    std::fs::create_dir_all(&baselines).unwrap();
    let found = discover(std::slice::from_ref(&traces), &[]).unwrap();
    check(
        &found,
        std::slice::from_ref(&traces),
        &options(&baselines, true, 2),
    )
    .unwrap();
    approve_pending(&baselines);
    Suite {
        _dir: dir,
        traces,
        baselines,
    }
}

fn approve_pending(dir: &Utf8PathBuf) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            approve_pending(&Utf8PathBuf::from_path_buf(path).unwrap());
        } else if let Some(approved) = path.to_str().and_then(|p| p.strip_suffix(".new")) {
            std::fs::rename(&path, approved).unwrap();
        }
    }
}

fn suites() -> &'static (Suite, Suite) {
    static SUITES: std::sync::OnceLock<(Suite, Suite)> = std::sync::OnceLock::new();
    SUITES.get_or_init(|| (suite(false), suite(true)))
}

#[divan::bench(args = [("single", 1), ("single", 2), ("trials", 1), ("trials", 2)])]
fn check_against_baselines(b: Bencher, (layout, threads): (&str, usize)) {
    let (single, trials) = suites();
    let s = if layout == "trials" { trials } else { single };
    let found = discover(std::slice::from_ref(&s.traces), &[]).unwrap();
    let opts = options(&s.baselines, false, threads);
    b.bench(|| {
        let report = check(&found, std::slice::from_ref(&s.traces), &opts).unwrap();
        assert_eq!(
            report.summary.drifted, 0,
            "the unchanged suite does not drift"
        );
        report.summary.traces
    });
}
