//! What `merge` checks of each share before trusting it: that its counts are those of its own
//! rows, that its rows belong to the share it claims to be, and that rows, findings and label
//! are still what `check` wrote ([`digest`]). Nothing a share says about itself is taken on
//! trust: the merged counts and exit code are computed from the rows.

use super::model::{ObsoleteBaseline, Partition, Report, Summary};
use crate::eval::{FailOn, Rows, partition_share};
use crate::privacy::lint::Finding;

/// `b3:` over a share's label (suite, share, of, fail-on), each row's identity and outcome, and
/// its privacy and obsolete findings, in report order.
pub fn digest(
    p: &Partition,
    rows: &Rows,
    privacy: &[Finding],
    obsolete: &[ObsoleteBaseline],
) -> String {
    let mut h = blake3::Hasher::new();
    let label = format!(
        "tracereplay.share v1\nsuite {}\nshare {}/{}\nfail-on {}\n",
        p.suite,
        p.share,
        p.of,
        p.fail_on.as_deref().unwrap_or("-")
    );
    h.update(label.as_bytes());
    for r in rows.iter() {
        let oracles: Vec<(&str, &str)> = (r.oracles.iter())
            .map(|o| (o.kind.as_ref(), o.verdict.as_str()))
            .collect();
        let drift: Vec<(&str, bool)> = (r.drift.iter())
            .map(|d| (d.category.as_str(), d.fails))
            .collect();
        let line = serde_json::json!([
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
        h.update(line.to_string().as_bytes()).update(b"\n");
    }
    for f in privacy {
        let line = serde_json::json!(["privacy", f.file, f.line, f.kind, f.fingerprint, f.fails]);
        h.update(line.to_string().as_bytes()).update(b"\n");
    }
    for o in obsolete {
        let line = serde_json::json!(["obsolete", o.scenario, o.case, o.path, o.finding.fails]);
        h.update(line.to_string().as_bytes()).update(b"\n");
    }
    format!("b3:{}", h.finalize().to_hex())
}

/// The problems of one share (`name` as the user knows it), each in a sentence; empty when it
/// can be trusted.
pub fn problems(name: &str, r: &Report) -> Vec<String> {
    let Some(p) = &r.partition else {
        return Vec::new(); // reported by the share check
    };
    let mut out = Vec::new();
    let Some(fail_on) = p.fail_on.as_deref().and_then(FailOn::parse) else {
        return vec![format!(
            "`{name}` records no `partition.fail_on`: it was written by an older tracereplay, or edited; run the shares again"
        )];
    };
    if p.rows.as_deref() != Some(digest(p, &r.results, &r.privacy, &r.obsolete).as_str()) {
        out.push(format!(
            "`{name}`: its rows, findings or label (share {}/{}) are not those `check` wrote (`partition.rows` does not match them)",
            p.share, p.of
        ));
    }
    // Every row belongs to the share: by its scenario id, rows without one to share 1.
    let foreign = (r.results.iter())
        .filter(|row| match &row.scenario {
            Some(id) => p.of == 0 || partition_share(id, p.of) != p.share,
            None => p.share != 1,
        })
        .count();
    if foreign > 0 {
        out.push(format!(
            "`{name}` holds {foreign} row(s) whose scenario is not in share {}/{}",
            p.share, p.of
        ));
    }
    // Each row's blocking flag, and the counts, as `check` derives them.
    let inconsistent = (r.results.iter())
        .filter(|row| {
            let drift_fails = row.drift.iter().any(|d| d.fails);
            let blocks = drift_fails
                || crate::eval::verdict_blocks(row.verdict, row.known_gap, row.risk, fail_on);
            row.blocking != blocks
        })
        .count();
    if inconsistent > 0 {
        out.push(format!(
            "`{name}`: {inconsistent} row(s) say they block the run when they do not, or the other way round"
        ));
    }
    let s = &r.summary;
    let counted = crate::eval::summarise(
        &r.results,
        &r.privacy,
        &r.obsolete,
        s.traces,
        s.scenarios,
        fail_on,
    );
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
pub fn checked_totals(reports: &[(String, Report)]) -> Option<(usize, usize)> {
    reports.iter().try_fold((0usize, 0usize), |(t, s), (_, r)| {
        Some((
            t.checked_add(r.summary.traces)?,
            s.checked_add(r.summary.scenarios)?,
        ))
    })
}
