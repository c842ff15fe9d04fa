//! Tests of the row store: encoding round trips, the head decoder, spilling.

use std::sync::Arc;

use super::spill::Repr;
use super::wire::sort_key;
use super::*;
use crate::diff::{DriftCategory, DriftFinding};
use crate::oracle::{OracleResult, Verdict};
use crate::privacy::lint::Finding;
use crate::report::RowError;
use serde_json::json;

fn full_row() -> ResultRow {
    let mut fail = OracleResult::fail(
        "called `x` 2 times",
        vec![3, 9],
        json!({"tool": "x", "at_most": 1}),
        json!([1, 2]),
    )
    .typed("max-tool-calls", Some(0));
    fail.misconfigured = true;
    ResultRow {
        scenario: Some("s.one".into()),
        case: Some("c1".into()),
        trial: Some("2".into()),
        path: Some("traces/a.trace.ndjson.zst".into()),
        scenario_file: Some("traces/s.scenario.json".into()),
        content_hash: Some("b3:00".into()),
        risk: Some(Risk::Critical),
        verdict: RowVerdict::Fail,
        source: Source::Trace,
        sealed: Some(true),
        known_gap: true,
        blocking: true,
        oracles: vec![
            fail,
            OracleResult::pass("ok", vec![1]).typed("unknown:Odd", Some(1)),
            OracleResult::pass("the run completed", vec![]).typed("run-completed", None),
        ],
        baseline: Some("baselines/s.one/c1.baseline.json".into()),
        usage: Some(crate::report::usage::RunUsage {
            requests: 3,
            input_tokens: 300,
            output_tokens: 200_000,
            unmetered: 1,
            cost_nanos: 123_456_789,
            uncosted: 1,
            priced: 1,
        }),
        approved_usage: Some(crate::baseline::UsageRecord {
            input_tokens: 280,
            output_tokens: 190_000,
            requests: 3,
            cost_usd: Some(0.25),
        }),
        drift: vec![
            DriftFinding {
                category: DriftCategory::New,
                detail: "new".into(),
                diff: None,
                fails: false,
            },
            DriftFinding {
                category: DriftCategory::ToolCallsChanged,
                detail: "moved".into(),
                diff: Some("-a\n+b\n".into()),
                fails: true,
            },
        ],
        error: Some(RowError {
            category: crate::report::RowErrorKind::Malformed,
            message: "line 3".into(),
            line: Some(3),
        }),
        warnings: vec!["w1".into(), "w2".into()],
        cited_events: vec![json!({"seq": 3, "kind": "tool_call"})],
        privacy: vec![Finding {
            file: "a".into(),
            line: Some(2),
            kind: "openai-key".into(),
            fingerprint: Some("b3:abc".into()),
            prefix: Some("sk-p".into()),
            message: "m".into(),
            fails: true,
        }],
    }
}

#[test]
fn a_row_survives_encoding_whole() {
    let row = full_row();
    let bytes = encode(&row);
    assert_eq!(decode(&bytes).unwrap(), row);
    let head = decode_head(&bytes).unwrap();
    assert_eq!(head, head_of(&row));
    assert!(head.drift_new && head.drift_other && head.has_privacy);
    // Canonical oracle types come back borrowed, others owned, as the oracles make them.
    let back = decode(&bytes).unwrap();
    assert!(matches!(back.oracles[0].kind, Cow::Borrowed(_)));
    assert_eq!(back.oracles[1].kind, "unknown:Odd");
}

#[test]
fn a_blank_row_survives_too() {
    let row = ResultRow::blank(None, Source::Trace);
    assert_eq!(decode(&encode(&row)).unwrap(), row);
    let key = sort_key(&encode(&row)).map(|k| k.into_owned());
    assert_eq!(key, [Vec::<u8>::new(), vec![], vec![], vec![]]);
}

/// Every variant of the enums a row carries, each list made by a chain of exhaustive
/// matches: a variant added to one of them stops this compiling until it is chained in, so
/// the round trip below always covers every variant.
fn every<T: Copy>(first: T, next: impl Fn(T) -> Option<T>) -> Vec<T> {
    std::iter::successors(Some(first), |v| next(*v)).collect()
}

/// Every variant of every enum in a row survives encoding, whole and in the head (none
/// decodes as an error row).
#[test]
fn every_variant_round_trips() {
    use crate::scenario::Risk;
    let verdicts = every(RowVerdict::Pass, |v| match v {
        RowVerdict::Pass => Some(RowVerdict::Fail),
        RowVerdict::Fail => Some(RowVerdict::Error),
        RowVerdict::Error => None,
    });
    let sources = every(Source::Trace, |v| match v {
        Source::Trace => Some(Source::Scenario),
        Source::Scenario => Some(Source::Scripted),
        Source::Scripted => None,
    });
    let risks = every(Risk::Low, |v| match v {
        Risk::Low => Some(Risk::Medium),
        Risk::Medium => Some(Risk::High),
        Risk::High => Some(Risk::Critical),
        Risk::Critical => None,
    });
    let oracle_verdicts = every(Verdict::Pass, |v| match v {
        Verdict::Pass => Some(Verdict::Fail),
        Verdict::Fail => Some(Verdict::NotEvaluable),
        Verdict::NotEvaluable => None,
    });
    use DriftCategory as D;
    let categories = every(D::Regression, |v| match v {
        D::Regression => Some(D::Improvement),
        D::Improvement => Some(D::OraclesChanged),
        D::OraclesChanged => Some(D::ToolCallsChanged),
        D::ToolCallsChanged => Some(D::ArgumentsChanged),
        D::ArgumentsChanged => Some(D::ToolResultsChanged),
        D::ToolResultsChanged => Some(D::ApprovalsChanged),
        D::ApprovalsChanged => Some(D::StatusChanged),
        D::StatusChanged => Some(D::ArtifactsChanged),
        D::ArtifactsChanged => Some(D::FinalAnswerChanged),
        D::FinalAnswerChanged => Some(D::MessagesChanged),
        D::MessagesChanged => Some(D::UsageOutsideTolerance),
        D::UsageOutsideTolerance => Some(D::New),
        D::New => Some(D::Obsolete),
        D::Obsolete => Some(D::Ambiguous),
        D::Ambiguous => Some(D::BaselineInvalid),
        D::BaselineInvalid => Some(D::ToolUsageChanged),
        D::ToolUsageChanged => Some(D::UsageChanged),
        D::UsageChanged => Some(D::UnseenBehaviour),
        D::UnseenBehaviour => Some(D::TrialsChanged),
        D::TrialsChanged => Some(D::DriftUndecided),
        D::DriftUndecided => None,
    });
    let n = [
        verdicts.len(),
        sources.len(),
        risks.len(),
        oracle_verdicts.len(),
        categories.len(),
    ];
    for i in 0..*n.iter().max().unwrap() {
        let mut row = full_row();
        row.verdict = verdicts[i % n[0]];
        row.source = sources[i % n[1]];
        row.risk = Some(risks[i % n[2]]);
        row.oracles[0].verdict = oracle_verdicts[i % n[3]];
        row.drift[1].category = categories[i % n[4]];
        let bytes = encode(&row);
        assert_eq!(decode(&bytes).unwrap(), row, "variant set {i}");
        assert_eq!(
            decode_head(&bytes).unwrap(),
            head_of(&row),
            "variant set {i}"
        );
    }
}

/// The hand-written head decoder reads exactly what serde writes, for every variant.
#[test]
fn the_head_decoder_agrees_with_serde() {
    use crate::scenario::Risk;
    let mut rows = Vec::new();
    for (i, verdict) in [RowVerdict::Pass, RowVerdict::Fail, RowVerdict::Error]
        .into_iter()
        .enumerate()
    {
        for (j, source) in [Source::Trace, Source::Scenario, Source::Scripted]
            .into_iter()
            .enumerate()
        {
            let risks = [None, Some(Risk::Low), Some(Risk::Medium), Some(Risk::High)];
            let mut row = full_row();
            row.verdict = verdict;
            row.source = source;
            row.risk = if i + j == 0 {
                Some(Risk::Critical)
            } else {
                risks[(i + j) % 4]
            };
            row.sealed = [None, Some(false), Some(true)][j];
            row.known_gap = i % 2 == 0;
            row.blocking = j % 2 == 0;
            row.scenario = (i != 1).then(|| "é".repeat(70 * (j + 1)));
            row.case = (j != 2).then(|| format!("case-{i}{j}"));
            row.path = None;
            row.warnings = (0..i).map(|k| format!("w{k}")).collect();
            rows.push(row);
        }
    }
    for row in &rows {
        let bytes = encode(row);
        let by_serde = postcard::take_from_bytes::<RowHead>(&bytes).unwrap().0;
        assert_eq!(decode_head(&bytes).unwrap(), by_serde);
        assert_eq!(by_serde, head_of(row));
        let field = |f: Option<&str>| f.unwrap_or("").as_bytes().to_vec();
        assert_eq!(
            sort_key(&bytes).map(|k| k.into_owned()),
            [
                field(by_serde.scenario),
                field(by_serde.case),
                crate::trace::trial::sort_key(by_serde.trial.map(str::as_bytes)),
                field(by_serde.path)
            ]
        );
        // Any truncation of the head is refused, never misread.
        let head_len = bytes.len()
            - postcard::take_from_bytes::<RowHead>(&bytes)
                .unwrap()
                .1
                .len();
        for cut in 0..head_len {
            assert!(decode_head(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }
}

#[test]
fn truncated_or_foreign_bytes_are_refused() {
    let bytes = encode(&full_row());
    assert!(decode(&bytes[..bytes.len() - 1]).is_err());
    assert!(decode(&[0xff; 7]).is_err());
    assert!(decode_head(&[0xff, 0xff]).is_err());
    // A row whose head decodes but whose body does not is an error row, never a panic.
    let cut = RowBytes::shared(bytes.to_vec().into(), 0..bytes.len() - 4);
    let meta = RowMeta::of(&decode_head(&cut.load()).unwrap());
    let rows = Rows::from_rows(vec![Row::trusted(cut, meta)]);
    let row = rows.get(0);
    assert_eq!(row.verdict, RowVerdict::Error);
    assert_eq!(row.scenario.as_deref(), Some("s.one"));
    assert_eq!(
        row.error.unwrap().category,
        crate::report::RowErrorKind::Internal
    );
}

/// Past the budget, rows go to the spill file, and read back (heads, sort, whole) exactly
/// as rows held in memory.
#[test]
fn rows_beyond_the_budget_go_to_a_file_and_read_back_the_same() {
    let rows = || {
        (0..5).map(|i| {
            let mut r = full_row();
            r.case = Some(format!("c{}", 4 - i));
            r
        })
    };
    let spill = Spill::new(encode(&full_row()).len());
    let spilled: Vec<Row> = rows().map(|r| spill.row(&r)).collect();
    assert!(matches!(spilled[0].bytes.0, Repr::Own(_)), "room for one");
    assert!(
        (spilled[1..].iter()).all(|r| matches!(r.bytes.0, Repr::InFile(..))),
        "{spilled:?}"
    );
    let mut on_disk = Rows::from_rows(spilled);
    let mut in_memory: Rows = rows().collect();
    on_disk.sort();
    in_memory.sort();
    assert!(on_disk == in_memory);
    assert_eq!(
        serde_json::to_string(&on_disk).unwrap(),
        serde_json::to_string(&in_memory).unwrap()
    );
    assert_eq!(
        on_disk.summaries().next().unwrap().case.as_deref(),
        Some("c0")
    );
    assert_eq!(on_disk.get(4).case.as_deref(), Some("c4"));
}

/// A row that cannot be read back shows as an error row and marks the rows unreadable, so
/// the run fails instead of reporting from what it lost.
#[test]
fn a_row_lost_from_its_file_is_never_a_pass() {
    let file = Arc::new(RowFile::new(tempfile::tempfile().unwrap(), 0));
    let mut row = full_row();
    row.verdict = RowVerdict::Pass;
    let meta = RowMeta::of(&head_of(&row));
    let len = encode(&row).len() as u32;
    let rows = Rows::from_rows(vec![Row::trusted(RowBytes::in_file(file, 0, len), meta)]);
    assert!(!rows.unreadable());
    assert_eq!(rows.get(0).verdict, RowVerdict::Error);
    assert!(rows.unreadable());
}

/// Every renderer fails when a row it drew could not be read back, so no report (file or
/// terminal) is taken for whole; a report whose rows all read back renders.
#[test]
fn every_renderer_fails_on_a_row_it_lost() {
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/../../traces");
    let suite = crate::Suite::discover([demo]).unwrap();
    let mut report = suite.check(&crate::CheckOptions::default()).unwrap();
    let lost = || {
        let file = Arc::new(RowFile::new(tempfile::tempfile().unwrap(), 0));
        let meta = RowMeta::of(&head_of(&full_row()));
        Rows::from_rows(vec![Row::trusted(RowBytes::in_file(file, 0, 64), meta)])
    };
    type Draw = fn(&crate::Report, &mut dyn std::io::Write) -> std::io::Result<()>;
    let renderers: [(&str, Draw); 7] = [
        ("json", crate::report::json::render),
        ("junit", crate::report::junit::render),
        ("markdown", crate::report::markdown::render),
        ("github", crate::report::github::render),
        ("human", |r, out| {
            let opts = crate::report::human::HumanOptions::default();
            crate::report::human::render(r, opts, out)
        }),
        ("html", |r, out| {
            crate::report::html::render(r, &crate::report::html::HtmlContext::default(), out)
        }),
        ("otlp", |r, out| {
            crate::report::otlp::render(r, &Default::default(), 0, out)
        }),
    ];
    for (name, draw) in renderers {
        report.results = suite
            .check(&crate::CheckOptions::default())
            .unwrap()
            .results;
        assert!(draw(&report, &mut Vec::new()).is_ok(), "{name}");
        report.results = lost();
        let e = draw(&report, &mut Vec::new()).expect_err(name);
        assert!(
            e.to_string().contains("could not be read back"),
            "{name}: {e}"
        );
    }
}

#[test]
fn rows_sort_by_scenario_case_path_and_serialize_as_a_list() {
    let mut a = full_row();
    a.scenario = Some("b".into());
    let mut b = full_row();
    b.scenario = Some("a".into());
    b.case = Some("z".into());
    let mut c = full_row();
    c.scenario = Some("a".into());
    c.case = Some("y".into());
    let mut d = c.clone();
    d.path = Some("a.trace.ndjson".into());
    let mut e = full_row();
    e.scenario = None;
    e.case = Some("zz".into());
    let mut rows: Rows = vec![a, b, c, d, e].into_iter().collect();
    rows.sort();
    assert_eq!(rows.key_widths(), (1, 2), "`-` for no scenario, `zz`");
    let mut keys: Vec<(Option<String>, Option<String>, Option<String>)> = Vec::new();
    rows.for_each_head(|_, h| {
        let own = |s: Option<&str>| s.map(str::to_owned);
        keys.push((own(h.scenario), own(h.case), own(h.path)));
    });
    let path = full_row().path;
    let keys: Vec<_> = (keys.iter())
        .map(|(s, c, p)| (s.as_deref(), c.as_deref(), p.as_deref()))
        .collect();
    assert_eq!(
        keys,
        [
            (None, Some("zz"), path.as_deref()),
            (Some("a"), Some("y"), Some("a.trace.ndjson")),
            (Some("a"), Some("y"), path.as_deref()),
            (Some("a"), Some("z"), path.as_deref()),
            (Some("b"), Some("c1"), path.as_deref()),
        ]
    );
    let json = serde_json::to_value(&rows).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 5);
    assert_eq!(json[1]["case"], "y");
    let back: Rows = serde_json::from_value(json).unwrap();
    assert_eq!(back.len(), 5);
    assert_eq!(back.get(1).case.as_deref(), Some("y"));
}

/// The neighbour checks (rows in order already? a case repeated?) read rows in chunks: a pair
/// that straddles two chunks is checked as well as any other.
#[test]
fn rows_out_of_order_or_repeating_a_case_across_a_chunk_boundary_are_seen() {
    let row = |n: usize| ResultRow {
        case: Some(format!("c{n:05}")),
        ..full_row()
    };
    let cases = |rows: &Rows| -> Vec<String> {
        let mut out = Vec::new();
        rows.for_each_head(|_, h| out.push(h.case.unwrap_or_default().to_owned()));
        out
    };
    for at in [4095, 4096, 8191] {
        let mut order: Vec<usize> = (0..9000).collect();
        order.swap(at, at + 1);
        let mut rows: Rows = order.iter().map(|&n| row(n)).collect();
        assert!(!rows.repeats_a_case());
        rows.sort();
        let expected: Vec<String> = (0..9000).map(|n| format!("c{n:05}")).collect();
        assert_eq!(cases(&rows), expected, "swapped at {at}");
        // Two neighbours sharing a case, where one chunk ends.
        let repeated: Rows = (0..9000)
            .map(|n| row(if n == at + 1 { at } else { n }))
            .collect();
        assert!(repeated.repeats_a_case(), "repeated at {at}");
    }
}

/// Every row error kind is listed in `ALL` (the match is exhaustive), serialises as its id, and
/// comes back from it through the row encoding.
#[test]
fn every_row_error_kind_round_trips_by_its_id() {
    use crate::report::RowErrorKind as K;
    // Adding a kind breaks this match until it is given its place in `ALL`.
    let place = |k: K| match k {
        K::Unreadable => 0,
        K::TooLarge => 1,
        K::Integrity => 2,
        K::UnsupportedVersion => 3,
        K::Malformed => 4,
        K::Privacy => 5,
        K::UnknownScenario => 6,
        K::ScenarioInvalid => 7,
        K::NoTrace => 8,
        K::Unreachable => 9,
        K::ScriptedInvalid => 10,
        K::DuplicateTrial => 11,
        K::Signature => 12,
        K::Internal => 13,
        K::Misplaced => 14,
    };
    for (i, k) in K::ALL.into_iter().enumerate() {
        assert_eq!(place(k), i);
        assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        assert_eq!(K::parse(k.as_str()), Some(k));
        let mut row = ResultRow::blank(Some("t".into()), Source::Trace);
        row.set_error(k, "why".into(), None);
        assert_eq!(decode(&encode(&row)).unwrap().error.unwrap().category, k);
    }
}
