//! The suite-level baseline decisions, made with the whole run in view: which (scenario, case)
//! pairs are ambiguous (two traces, one baseline) and which approved baselines are obsolete.
//! Decisions only: the files they call for are written by [`super::persist`].

use std::collections::{HashMap, HashSet};

use camino::Utf8PathBuf;

use super::pipeline::BaselinePolicy;
use crate::baseline::StoredCase;
use crate::baseline::decode_segment;
use crate::diff::{DriftCategory, DriftFinding};
use crate::paths::display_path;
use crate::report::{ObsoleteBaseline, Rows};

/// A pending baseline file for one (scenario, case), decided by a comparison and carried out by
/// the persist stage (off CI only).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Pending {
    /// The case drifted or is new: write its `.new` (this text) and remove a stale `.deleted`.
    Write {
        /// Scenario id.
        scenario: String,
        /// Case.
        case: String,
        /// The baseline this run would approve.
        text: PendingText,
    },
    /// The case matches its approved baseline, or cannot be compared (ambiguous): remove stale
    /// `.new` and `.deleted` files.
    Clear {
        /// Scenario id.
        scenario: String,
        /// Case.
        case: String,
    },
    /// The approved baseline is obsolete: write its `.deleted` (a copy of it) and remove a
    /// stale `.new`.
    Remove {
        /// The approved baseline.
        approved: Utf8PathBuf,
    },
}

/// A pending baseline's text: in memory, in the run's spill file once the run holds more than
/// its row budget (`--row-memory`), so a first run over a large suite, which writes a pending
/// file for every case, does not hold every text until the persist stage; or, when the run
/// writes pending files, already in a temporary file beside its `.new`, which the persist stage
/// renames into place (see [`Pending::kept`]).
#[derive(Clone)]
pub(crate) struct PendingText(Held);

#[derive(Clone)]
enum Held {
    Bytes(crate::report::store::RowBytes),
    Staged(std::sync::Arc<crate::fsutil::Staged>),
}

impl PendingText {
    /// `text`, held in memory.
    pub(crate) fn new(text: String) -> PendingText {
        PendingText(Held::Bytes(text.into_bytes().into_boxed_slice().into()))
    }

    /// The same text, staged beside `path` in `confined` when `stage_at` names them (kept by
    /// `spill` if that fails: the persist stage then writes it, or reports why it cannot), else
    /// kept by `spill` (in memory while its budget lasts, else in its file).
    fn kept(
        self,
        spill: &crate::report::store::Spill,
        stage_at: Option<(&crate::fsutil::Confined, &camino::Utf8Path)>,
    ) -> PendingText {
        let Held::Bytes(held) = &self.0 else {
            return self;
        };
        let Ok(bytes) = held.try_load() else {
            return self;
        };
        if let Some(Ok(staged)) = stage_at.map(|(c, path)| c.stage(path, &bytes)) {
            return PendingText(Held::Staged(std::sync::Arc::new(staged)));
        }
        PendingText(Held::Bytes(
            spill.keep(bytes.into_owned().into_boxed_slice()),
        ))
    }

    /// The text's bytes, or why they could not be read back.
    pub(crate) fn bytes(&self) -> std::io::Result<std::borrow::Cow<'_, [u8]>> {
        match &self.0 {
            Held::Bytes(b) => b.try_load(),
            Held::Staged(s) => s.read().map(std::borrow::Cow::Owned),
        }
    }

    /// The text staged beside its `.new`, if it is.
    pub(crate) fn staged(&self) -> Option<&crate::fsutil::Staged> {
        match &self.0 {
            Held::Staged(s) => Some(s),
            Held::Bytes(_) => None,
        }
    }
}

impl std::fmt::Debug for PendingText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Held::Bytes(b) => write!(f, "PendingText({b:?})"),
            Held::Staged(s) => write!(f, "PendingText(staged for {})", s.path()),
        }
    }
}

impl PartialEq for PendingText {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for PendingText {}

impl PartialOrd for PendingText {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for PendingText {
    /// By content (compared only between two pending files of one case, which are rare); a
    /// text that cannot be read back compares as empty.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let content = |t: &PendingText| t.bytes().unwrap_or_default().into_owned();
        content(self).cmp(&content(other))
    }
}

impl Pending {
    /// The same pending file with its text staged beside its `.new` in `stage_in` (the store of
    /// a run that writes pending files), or else kept by `spill` (see [`PendingText`]).
    ///
    /// Staging writes each text once, from the judging worker that made it, while the other
    /// workers judge; before, the texts of a large first run went to the spill file and were
    /// read back to be written. The `.new` itself still appears only in the persist stage, once
    /// the whole run is in view. A pending file that becomes a clearing (`mark_ambiguous`, the
    /// trials) drops its staged file, which removes it.
    pub(crate) fn kept(
        self,
        spill: &crate::report::store::Spill,
        stage_in: Option<&crate::baseline::BaselineStore>,
    ) -> Pending {
        match self {
            Pending::Write {
                scenario,
                case,
                text,
            } => {
                let at = stage_in.map(|s| (s.confined(), s.new_path(&scenario, &case)));
                let text = text.kept(spill, at.as_ref().map(|(c, p)| (c, p.as_path())));
                Pending::Write {
                    scenario,
                    case,
                    text,
                }
            }
            other => other,
        }
    }

    /// The (scenario, case) it is about, owned, when it names one.
    pub(crate) fn case_key(&self) -> Option<(String, String)> {
        self.case().map(|(s, c)| (s.to_owned(), c.to_owned()))
    }

    /// The (scenario, case) it is about, when it names one.
    fn case(&self) -> Option<(&str, &str)> {
        match self {
            Pending::Write { scenario, case, .. } | Pending::Clear { scenario, case } => {
                Some((scenario, case))
            }
            Pending::Remove { .. } => None,
        }
    }
}

/// Two rows sharing one baseline make its comparison an error: every judged row of the pair
/// gets an `ambiguous` finding instead of its comparison, and its pending write becomes a
/// clearing (no `.new` is left for a pair that cannot be compared).
pub(crate) fn mark_ambiguous(
    rows: &mut Rows,
    policy: &BaselinePolicy,
    fail_on: super::FailOn,
    pending: &mut [Pending],
    grouped: &[bool],
) {
    let mut of_row: Vec<(usize, String)> = Vec::new();
    rows.for_each_head(|i, h| {
        if !grouped.get(i).copied().unwrap_or(false) {
            of_row.extend(h.baseline.map(|b| (i, b.to_owned())));
        }
    });
    let mut count: HashMap<&str, usize> = HashMap::with_capacity(of_row.len());
    for (_, b) in &of_row {
        *count.entry(b).or_default() += 1;
    }
    let shared: Vec<(usize, usize)> = (of_row.iter())
        .map(|(i, b)| (*i, count[b.as_str()]))
        .filter(|&(_, n)| n >= 2)
        .collect();
    let mut ambiguous: HashSet<(String, String)> = HashSet::new();
    for (i, n) in shared {
        let mut r = rows.get(i);
        let b = r.baseline.as_deref().unwrap_or("");
        let detail = format!(
            "{n} traces share scenario `{}` case `{}`, so none can be compared with `{b}`; give each run its own `case`",
            r.scenario.as_deref().unwrap_or(""),
            r.case.as_deref().unwrap_or("")
        );
        r.drift = vec![DriftFinding::new(
            DriftCategory::Ambiguous,
            detail,
            None,
            policy.mode,
        )];
        super::set_blocking(&mut r, fail_on);
        if let (Some(s), Some(c)) = (&r.scenario, &r.case) {
            ambiguous.insert((s.clone(), c.clone()));
        }
        rows.set(i, &r);
    }
    for p in pending.iter_mut() {
        let clear = p.case().and_then(|(s, c)| {
            ambiguous
                .contains(&(s.to_owned(), c.to_owned()))
                .then(|| (s.to_owned(), c.to_owned()))
        });
        if let Some((scenario, case)) = clear {
            *p = Pending::Clear { scenario, case };
        }
    }
}

/// Approved baselines without a trace, of those `approved` (the store's listing), within scope:
/// `in_scope` says whether a stored baseline (by its encoded scenario segment) belongs to this
/// run. Each also gets a [`Pending::Remove`].
pub(crate) fn find_obsolete(
    rows: &Rows,
    approved: &[StoredCase],
    policy: &BaselinePolicy,
    in_scope: &dyn Fn(&str) -> bool,
    pending: &mut Vec<Pending>,
) -> Vec<ObsoleteBaseline> {
    let mut used: HashSet<String> = HashSet::new();
    rows.for_each_head(|_, h| used.extend(h.baseline.map(str::to_owned)));
    let mut out = Vec::new();
    for stored in approved {
        let shown = display_path(&stored.path);
        if used.contains(shown.as_str()) || !in_scope(&stored.scenario_segment) {
            continue;
        }
        let (scenario, case) = match crate::baseline::Approved::read(&stored.path) {
            Ok(b) => {
                let (s, c) = b.names();
                (s.to_owned(), c.to_owned())
            }
            Err(_) => (
                decode_segment(&stored.scenario_segment),
                decode_segment(&stored.case_segment),
            ),
        };
        let detail = format!(
            "approved baseline `{shown}` has no trace; accept its removal with `tracereplay baseline accept` or record the run again"
        );
        pending.push(Pending::Remove {
            approved: stored.path.clone(),
        });
        out.push(ObsoleteBaseline {
            scenario,
            case,
            path: shown,
            finding: DriftFinding::new(DriftCategory::Obsolete, detail, None, policy.mode),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::store::Spill;

    #[test]
    fn a_pending_text_past_the_budget_reads_back_from_the_spill_file() {
        let spill = Spill::new(10);
        let short = PendingText::new("{\"a\":1}".into()).kept(&spill, None);
        let long = PendingText::new("x".repeat(5000)).kept(&spill, None);
        assert_eq!(short.bytes().unwrap().as_ref(), b"{\"a\":1}");
        assert!(
            matches!(long.bytes().unwrap(), std::borrow::Cow::Owned(_)),
            "read from the file"
        );
        assert_eq!(long.bytes().unwrap().as_ref(), "x".repeat(5000).as_bytes());
        assert!(short > long && long == PendingText::new("x".repeat(5000)));
    }
}
