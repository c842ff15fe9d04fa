//! What `merge` checks of each share before trusting it: that its counts are those of its own
//! rows, that its rows belong to the share it claims to be, and that rows, findings and label
//! are still what `check` wrote ([`digest`]). Nothing a share says about itself is taken on
//! trust: the merged counts and exit code are computed from the rows.

use super::{FailOn, Rows, partition_share};
use crate::privacy::lint::Finding;
use crate::report::{ObsoleteBaseline, Partition, Report, ResultRow, Summary};

/// The running digest of a share: its label (suite, share, of, fail-on), then each row's
/// identity and outcome and each privacy and obsolete finding, in report order.
struct Digest(blake3::Hasher);

impl Digest {
    fn new(p: &Partition) -> Digest {
        let mut h = blake3::Hasher::new();
        let label = format!(
            "tracereplay.share v1\nsuite {}\nshare {}/{}\nfail-on {}\n",
            p.suite,
            p.share,
            p.of,
            p.fail_on.as_deref().unwrap_or("-")
        );
        h.update(label.as_bytes());
        Digest(h)
    }

    fn line(&mut self, v: serde_json::Value) {
        self.0.update(v.to_string().as_bytes()).update(b"\n");
    }

    fn row(&mut self, r: &ResultRow) {
        let oracles: Vec<(&str, &str)> = (r.oracles.iter())
            .map(|o| (o.kind.as_ref(), o.verdict.as_str()))
            .collect();
        let drift: Vec<(&str, bool)> = (r.drift.iter())
            .map(|d| (d.category.as_str(), d.fails))
            .collect();
        let mut line = serde_json::json!([
            r.scenario,
            r.case,
            r.path,
            r.content_hash,
            r.verdict.as_str(),
            r.risk.map(|x| x.as_str()),
            r.known_gap,
            r.blocking,
            r.error.as_ref().map(|e| &e.category),
            oracles,
            drift,
        ]);
        // A trial's id, only where there is one (digests of single traces are unchanged).
        if let (Some(t), Some(items)) = (&r.trial, line.as_array_mut()) {
            items.push(serde_json::json!(t));
        }
        self.line(line);
    }

    fn finish(
        mut self,
        privacy: &[Finding],
        obsolete: &[ObsoleteBaseline],
        cases: &[crate::report::cases::CaseRow],
    ) -> String {
        for c in cases {
            self.line(serde_json::json!(["case", c]));
        }
        for f in privacy {
            self.line(serde_json::json!([
                "privacy",
                f.file,
                f.line,
                f.kind,
                f.fingerprint,
                f.fails
            ]));
        }
        for o in obsolete {
            self.line(serde_json::json!([
                "obsolete",
                o.scenario,
                o.case,
                o.path,
                o.finding.fails
            ]));
        }
        format!("b3:{}", self.0.finalize().to_hex())
    }
}

/// `b3:` over a share's label, rows and findings (what `check` writes as `partition.rows`).
pub(super) fn digest(
    p: &Partition,
    rows: &Rows,
    privacy: &[Finding],
    obsolete: &[ObsoleteBaseline],
    cases: &[crate::report::cases::CaseRow],
) -> String {
    let mut d = Digest::new(p);
    rows.iter().for_each(|r| d.row(&r));
    d.finish(privacy, obsolete, cases)
}

/// The problems of one share (`name` as the user knows it), each in a sentence; empty when it
/// can be trusted. Its rows are decoded once, for the digest and the row checks together.
pub(super) fn problems(name: &str, r: &Report) -> Vec<String> {
    let Some(p) = &r.partition else {
        return Vec::new(); // reported by the share check
    };
    let mut out = Vec::new();
    let Some(fail_on) = p.fail_on.as_deref().and_then(FailOn::parse) else {
        return vec![format!(
            "`{name}` records no `partition.fail_on`: it was written by an older tracereplay, or edited; run the shares again"
        )];
    };
    let (mut digest, mut foreign, mut inconsistent) = (Digest::new(p), 0, 0);
    // The trials of a case judged as a set never block by themselves: their case does.
    let sets: std::collections::HashSet<(&str, &str)> = (r.cases.iter())
        .filter(|c| c.is_set())
        .map(|c| (c.scenario.as_str(), c.case.as_str()))
        .collect();
    for row in r.results.iter() {
        digest.row(&row);
        // Every row belongs to the share: by its scenario id, rows without one to share 1.
        let ours = match &row.scenario {
            Some(id) => p.of != 0 && partition_share(id, p.of) == p.share,
            None => p.share == 1,
        };
        foreign += usize::from(!ours);
        // Each row's blocking flag as `check` derives it.
        let in_set =
            (row.scenario.as_deref().zip(row.case.as_deref())).is_some_and(|k| sets.contains(&k));
        let expected = !in_set && super::blocks(&row, fail_on);
        inconsistent += usize::from(row.blocking != expected);
    }
    if p.rows.as_deref() != Some(digest.finish(&r.privacy, &r.obsolete, &r.cases).as_str()) {
        out.push(format!(
            "`{name}`: its rows, findings or label (share {}/{}) are not those `check` wrote (`partition.rows` does not match them)",
            p.share, p.of
        ));
    }
    if foreign > 0 {
        out.push(format!(
            "`{name}` holds {foreign} row(s) whose scenario is not in share {}/{}",
            p.share, p.of
        ));
    }
    if inconsistent > 0 {
        out.push(format!(
            "`{name}`: {inconsistent} row(s) say they block the run when they do not, or the other way round"
        ));
    }
    // The counts, from the rows' heads (no decoding).
    let s = &r.summary;
    let mut counted = super::summarise(
        &r.results,
        &r.privacy,
        &r.obsolete,
        s.traces,
        s.scenarios,
        fail_on,
    );
    super::count_cases(&mut counted, &r.results, &r.cases, fail_on);
    let budget = crate::report::usage::Budget::of(s.usage.as_ref());
    super::apply_budget(&mut counted, &budget);
    for (field, said, found) in differences(s, &counted) {
        out.push(format!(
            "`{name}`: `summary.{field}` is {said}, but its rows give {found}"
        ));
    }
    out
}

/// The counts in which two summaries differ: (field, first, second).
fn differences(a: &Summary, b: &Summary) -> Vec<(&'static str, usize, usize)> {
    [
        ("passed", a.passed, b.passed),
        ("failed", a.failed, b.failed),
        ("errors", a.errors, b.errors),
        ("ignored_failures", a.ignored_failures, b.ignored_failures),
        ("drifted", a.drifted, b.drifted),
        ("new", a.new, b.new),
        ("obsolete", a.obsolete, b.obsolete),
        ("privacy", a.privacy, b.privacy),
        ("blocking", a.blocking, b.blocking),
    ]
    .into_iter()
    .filter(|(_, x, y)| x != y)
    .collect()
}

/// `traces` and `scenarios` of the shares, added without overflow.
pub(super) fn checked_totals(reports: &[(String, Report)]) -> Option<(usize, usize)> {
    reports.iter().try_fold((0usize, 0usize), |(t, s), (_, r)| {
        Some((
            t.checked_add(r.summary.traces)?,
            s.checked_add(r.summary.scenarios)?,
        ))
    })
}
