//! The run folder (`--artifacts`): `<dir>/<run-id>/` with `report.json`, `junit.xml`,
//! `report.md`, and `evidence/<scenario>/<case>.json` (a trial's `evidence/<scenario>/<case>/<trial>.json`) for each failing trace — enough to audit a
//! failure without the trace. Run ids sort by time: `YYYYMMDDTHHMMSSZ-<8 hex>`.

use std::time::{SystemTime, UNIX_EPOCH};

use camino::{Utf8Path, Utf8PathBuf};

use super::explain::Explanation;
use super::model::{Report, ResultRow, RowVerdict, Source};
use crate::baseline::encode_segment;
use crate::fsutil::Confined;

pub use super::stamp::utc_stamp;

/// A new run id: the UTC time and, in 8 hex digits, the nanoseconds within that second, so that
/// ids sort in the order the runs started even within one second (`--last-failed` and
/// `explain --last` take the newest by name).
pub fn new_run_id() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    format!("{}-{:08x}", utc_stamp(now.as_secs()), now.subsec_nanos())
}

/// Whether a string is a run id (so `explain --last` ignores anything else in the directory).
pub fn is_run_id(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() == 25
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'T'
        && b[9..15].iter().all(u8::is_ascii_digit)
        && b[15] == b'Z'
        && b[16] == b'-'
        && b[17..]
            .iter()
            .all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

/// The newest run folder under `dir`.
pub fn latest_run(dir: &Utf8Path) -> Option<Utf8PathBuf> {
    let mut ids: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| is_run_id(n))
        .collect();
    ids.sort();
    ids.pop().map(|id| dir.join(id))
}

fn needs_evidence(r: &ResultRow) -> bool {
    matches!(r.source, Source::Trace | Source::Scripted)
        && (r.verdict != RowVerdict::Pass || r.blocking)
}

/// The evidence of one failing row.
pub fn evidence_of(r: &ResultRow) -> Explanation {
    Explanation {
        path: r.path.clone().unwrap_or_default(),
        scenario: r.scenario.clone(),
        case: r.case.clone(),
        content_hash: r.content_hash.clone(),
        sealed: r.sealed,
        error: r.error.as_ref().map(|e| e.message.clone()),
        oracles: r.oracles.clone(),
        drift: r.drift.clone(),
        events: r.cited_events.clone(),
        not_judged: r.error.as_ref().is_some_and(|e| {
            matches!(
                e.category,
                super::RowErrorKind::UnknownScenario | super::RowErrorKind::ScenarioInvalid
            )
        }),
    }
}

/// Writes a run folder under `dir` (never through a symlink under it) and returns its path and
/// the evidence files that could not be written, each with why: one row's file problem never
/// loses the report or the other rows' evidence.
pub fn write(
    dir: &Utf8Path,
    report: &Report,
    ctx: &super::ExportContext<'_>,
) -> std::io::Result<(Utf8PathBuf, Vec<String>)> {
    let confined = Confined::new(dir);
    let mut run = dir.join(new_run_id());
    // A run that started in the same nanosecond (another process) took that name: count on.
    let mut bump = 1u32;
    while run.exists() && bump < 1000 {
        let id = new_run_id();
        let (stamp, nanos) = id.split_at(17);
        let nanos = u32::from_str_radix(nanos, 16)
            .unwrap_or(0)
            .wrapping_add(bump)
            % 1_000_000_000;
        run = dir.join(format!("{stamp}{nanos:08x}"));
        bump += 1;
    }
    // Every format that has a file in a run folder, through its exporter.
    for format in super::Format::ALL {
        let exporter = format.exporter();
        if let Some(name) = exporter.file_name() {
            confined.write_streaming(&run.join(name), true, &mut |out| {
                exporter.export(report, ctx, out)
            })?;
        }
    }
    let mut problems = Vec::new();
    for r in report.results.iter().filter(needs_evidence) {
        let scenario = encode_segment(r.scenario.as_deref().unwrap_or("_unattributed"));
        let case = encode_segment(r.case.as_deref().unwrap_or("_unknown"));
        let mut folder = run.join("evidence").join(scenario);
        // A trial's evidence goes under its case: `evidence/<scenario>/<case>/<trial>.json`.
        let name = match &r.trial {
            Some(t) => {
                folder = folder.join(&case);
                crate::baseline::encode_trace_segment(t)
            }
            None => case,
        };
        // Two traces of one name get numbered files rather than overwrite each other.
        let mut path = folder.join(format!("{name}.json"));
        let mut n = 2;
        while path.exists() {
            path = folder.join(format!("{name}.{n}.json"));
            n += 1;
        }
        let written = serde_json::to_string_pretty(&evidence_of(&r))
            .map_err(std::io::Error::other)
            .and_then(|text| confined.write(&path, (text + "\n").as_bytes(), true));
        if let Err(e) = written {
            problems.push(format!("cannot write evidence `{path}`: {e}"));
        }
    }
    Ok((run, problems))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_and_ids() {
        assert_eq!(utc_stamp(0), "19700101T000000Z");
        assert_eq!(utc_stamp(1_764_417_600), "20251129T120000Z");
        assert_eq!(utc_stamp(951_782_400), "20000229T000000Z");
        let id = new_run_id();
        assert!(is_run_id(&id), "{id}");
        assert!(!is_run_id("20251129T120000Z-XYZ00000"));
    }
}
