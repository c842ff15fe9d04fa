//! What `merge` checks of each share before trusting it: that its counts are those of its own
//! rows, that its rows belong to the share it claims to be, and that rows, findings and label
//! are still what `check` wrote ([`digest`]). Nothing a share says about itself is taken on
//! trust: the merged counts and exit code are computed from the rows.
//!
//! The digest is plain BLAKE3 unless a [`ShareKey`] is given: then it is keyed (`b3k:`). An
//! unkeyed digest detects accidents, not forgery — anyone who edits a share's rows can compute
//! it again. A keyed one can only be made by who holds the key, and a merge given the key
//! refuses every share whose digest is not keyed with it.

use super::{FailOn, Rows, partition_share};
use crate::privacy::lint::Finding;
use crate::report::{ObsoleteBaseline, Partition, Report, ResultRow, Summary};

/// The environment variable whose value is the share key's material (a CI secret given to
/// every share's `check` and to `merge`).
pub const SHARE_KEY_ENV: &str = "TRACEREPLAY_SHARE_KEY";

/// The secret key shares' digests are keyed with ([`SHARE_KEY_ENV`]).
#[derive(Clone, PartialEq, Eq)]
pub struct ShareKey([u8; 32]);

impl std::fmt::Debug for ShareKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ShareKey(..)")
    }
}

impl ShareKey {
    /// The key derived from secret material.
    pub fn from_material(material: &[u8]) -> ShareKey {
        ShareKey(blake3::derive_key(
            "tracereplay 2026-12 share digest v1",
            material,
        ))
    }
}

/// The running digest of a share: its label (suite, share, of, fail-on), then each row's
/// identity and outcome and each privacy and obsolete finding, in report order; keyed when a
/// key is given.
struct Digest(blake3::Hasher, bool);

impl Digest {
    fn new(p: &Partition, key: Option<&ShareKey>) -> Digest {
        let mut h = match key {
            Some(k) => blake3::Hasher::new_keyed(&k.0),
            None => blake3::Hasher::new(),
        };
        let label = format!(
            "tracereplay.share v1\nsuite {}\nshare {}/{}\nfail-on {}\n",
            p.suite,
            p.share,
            p.of,
            p.fail_on.as_deref().unwrap_or("-")
        );
        h.update(label.as_bytes());
        Digest(h, key.is_some())
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
        let prefix = if self.1 { "b3k" } else { "b3" };
        format!("{prefix}:{}", self.0.finalize().to_hex())
    }
}

/// `b3:` over a share's label, rows and findings (what `check` writes as `partition.rows`), or
/// `b3k:` keyed with `key`.
pub(super) fn digest(
    p: &Partition,
    rows: &Rows,
    (privacy, obsolete, cases): (
        &[Finding],
        &[ObsoleteBaseline],
        &[crate::report::cases::CaseRow],
    ),
    key: Option<&ShareKey>,
) -> String {
    let mut d = Digest::new(p, key);
    rows.iter().for_each(|r| d.row(&r));
    d.finish(privacy, obsolete, cases)
}

/// The problems of one share (`name` as the user knows it), each in a sentence; empty when it
/// can be trusted. Its rows are decoded once, for the digest and the row checks together.
/// Given `key`, its digest must be keyed with it; without, a keyed digest cannot be checked.
pub(super) fn problems(name: &str, r: &Report, key: Option<&ShareKey>) -> Vec<String> {
    let Some(p) = &r.partition else {
        return Vec::new(); // reported by the share check
    };
    let mut out = Vec::new();
    let Some(fail_on) = p.fail_on.as_deref().and_then(FailOn::parse) else {
        return vec![format!(
            "`{name}` records no `partition.fail_on`: it was written by an older tracereplay, or edited; run the shares again"
        )];
    };
    let keyed = p.rows.as_deref().is_some_and(|d| d.starts_with("b3k:"));
    match (keyed, key) {
        (true, None) => {
            return vec![format!(
                "`{name}`: its digest is keyed, and this merge has no key to check it with: set `{SHARE_KEY_ENV}` as the shares' `check` had it"
            )];
        }
        (false, Some(_)) => {
            return vec![format!(
                "`{name}`: its digest is not keyed, and this merge is given the share key (`{SHARE_KEY_ENV}`): an unkeyed digest can be recomputed by whoever edits the rows, so the share is not taken; run its `check` with the key set"
            )];
        }
        _ => {}
    }
    let (mut digest, mut foreign, mut inconsistent) = (Digest::new(p, key), 0, 0);
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
        // ...except the rows of a case whose traces lack distinct trials: each is an error row
        // that blocks by itself, as `check` marks it.
        let duplicate = (row.error.as_ref())
            .is_some_and(|e| e.category == crate::report::RowErrorKind::DuplicateTrial);
        let expected = (!in_set || duplicate) && super::blocks(&row, fail_on);
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
