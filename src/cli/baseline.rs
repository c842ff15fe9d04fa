//! `tracereplay baseline pending|accept|reject|approve`: the review workflow for approved
//! baselines, modelled on `cargo insta`. The three writers refuse under CI.

use std::io::Write;

use anyhow::{Context, bail};
use camino::Utf8Path;
use rayon::prelude::*;
use tracereplay::report::{RowVerdict, escape_controls};
use tracereplay::trace::json::eq_ci;
use tracereplay_core::baseline::{
    Approved, BaselineFile, BaselineSet, BaselineStore, DELETED_SUFFIX, NEW_SUFFIX, StoredCase,
    decode_segment, encode_segment,
};
use tracereplay_core::diff::{DriftCategory, DriftMode, compare};
use tracereplay_core::discover::discover;
use tracereplay_core::eval::{
    BaselinePolicy, Baselines, CheckOptions, Counting, FailOn, Selection, check,
};
use tracereplay_trace::fsutil::Confined;
use tracereplay_trace::paths::display_path;

use super::args::{ApproveArgs, BaselineCommand, BaselineFilterArgs, CiArgs, PendingArgs};
use super::ci::is_ci;
use super::exit;
use super::settings::Settings;

/// Runs a `baseline` subcommand; `Err` means exit 2.
pub(super) fn run(
    cmd: &BaselineCommand,
    settings: &Settings,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    let (dir, color) = (settings.baselines_dir().0, settings.use_color());
    match cmd {
        BaselineCommand::Pending(a) => pending(a, &dir, color, out),
        BaselineCommand::Accept(a) => apply(
            &a.filter,
            &dir,
            Action::Accept {
                removals: a.removals,
            },
            out,
        ),
        BaselineCommand::Reject(a) => apply(a, &dir, Action::Reject, out),
        BaselineCommand::Approve(a) => approve(a, settings, out),
        BaselineCommand::Review(a) => super::review::review(a, &dir, color, out),
    }
}

pub(super) fn refuse_under_ci(ci: &CiArgs, what: &str) -> Option<i32> {
    if is_ci(ci) {
        diag!(
            "error: `baseline {what}` refuses to run under CI (baselines are approved in review, not in CI); run it locally, or pass `--no-ci` if this is not CI"
        );
        return Some(exit::FAILURE);
    }
    None
}

/// A pending file with what it is about.
pub(super) struct Pending {
    pub(super) stored: StoredCase,
    pub(super) removal: bool,
    pub(super) scenario: String,
    pub(super) case: String,
    /// Why it may not be accepted: its content names another (scenario, case) than its place.
    pub(super) misplaced: Option<String>,
}

pub(super) fn list_pending(dir: &Utf8Path) -> Vec<Pending> {
    let store = BaselineStore::new(dir);
    let mut all = Vec::new();
    for (suffix, removal) in [(NEW_SUFFIX, false), (DELETED_SUFFIX, true)] {
        for stored in store.list(suffix) {
            // The place decides what a pending file is about; the content must agree with it,
            // or accepting it would replace (or delete) another case's approved baseline.
            let placed = (
                decode_segment(&stored.scenario_segment),
                decode_segment(&stored.case_segment),
            );
            let (mut scenario, mut case, mut misplaced) =
                (placed.0.clone(), placed.1.clone(), None);
            if let Ok(b) = Approved::read(&stored.path) {
                let (s, c) = b.names();
                let agrees = encode_segment(s) == stored.scenario_segment
                    && encode_segment(c) == stored.case_segment;
                if agrees {
                    (scenario, case) = (s.to_owned(), c.to_owned());
                } else {
                    misplaced = Some(format!(
                        "`{}` names `{}/{}` inside but sits where the pending file of `{}/{}` belongs: a pending file's place and content must agree (delete it, and run `check` again to write it where it belongs)",
                        stored.path,
                        escape_controls(s),
                        escape_controls(c),
                        escape_controls(&placed.0),
                        escape_controls(&placed.1)
                    ));
                }
            }
            all.push(Pending {
                stored,
                removal,
                scenario,
                case,
                misplaced,
            });
        }
    }
    all.sort_by(|a, b| a.stored.path.cmp(&b.stored.path));
    all
}

/// The status line of a pending trial set: its pass count, and the approved one's.
fn set_summary_line(p: &Pending, set: &BaselineSet, approved: &Utf8Path) -> String {
    let passing = |s: &BaselineSet| {
        (s.trials.iter())
            .filter(|t| t.behaviour.oracles.values().all(|v| v == "pass"))
            .count()
    };
    let now = format!("{}/{} trials pass", passing(set), set.trials.len());
    match Approved::read_unlinked(approved) {
        Ok(Approved::Set(old)) => format!(
            "changed  {}/{}  {}  (set: {now}; approved {}/{})",
            p.scenario,
            p.case,
            display_path(approved),
            passing(&old),
            old.trials.len()
        ),
        Ok(Approved::Single(_)) => format!(
            "changed  {}/{}  {}  (trials-changed: a set of {} replaces a single trace; {now})",
            p.scenario,
            p.case,
            display_path(approved),
            set.trials.len()
        ),
        Err(_) => format!(
            "new      {}/{}  {}  (set: {now})",
            p.scenario,
            p.case,
            display_path(approved)
        ),
    }
}

/// The approved baseline a pending file would replace or remove.
pub(super) fn approved_of(pending: &Utf8Path) -> camino::Utf8PathBuf {
    let s = pending.as_str();
    let s = (s.strip_suffix(".new"))
        .or_else(|| s.strip_suffix(".deleted"))
        .unwrap_or(s);
    Utf8Path::new(s).to_owned()
}

pub(super) fn summary_line(p: &Pending) -> String {
    let approved = approved_of(&p.stored.path);
    if p.removal {
        return format!(
            "removed  {}/{}  {}  (the approved baseline has no trace)",
            p.scenario,
            p.case,
            display_path(&approved)
        );
    }
    let new = match Approved::read(&p.stored.path) {
        Ok(Approved::Single(b)) => *b,
        Ok(Approved::Set(set)) => return set_summary_line(p, &set, &approved),
        Err(e) => {
            return format!(
                "invalid  {}/{}  {}",
                p.scenario,
                p.case,
                tracereplay_core::eval::error_chain(&e)
            );
        }
    };
    match BaselineFile::read(&approved) {
        Ok(old) => {
            let mut cats: Vec<&str> =
                compare(&old.behaviour, &new.behaviour, 0.2, DriftMode::Default)
                    .iter()
                    .map(|f| f.category.as_str())
                    .collect();
            cats.dedup();
            let what = if cats.is_empty() {
                "content hash only".to_owned()
            } else {
                cats.join(", ")
            };
            format!(
                "changed  {}/{}  {}  ({what})",
                p.scenario,
                p.case,
                display_path(&approved)
            )
        }
        Err(_) => {
            let b = &new.behaviour;
            let passing = b.oracles.values().filter(|v| *v == "pass").count();
            format!(
                "new      {}/{}  {}  ({} tool calls, status {}, {passing}/{} oracles pass)",
                p.scenario,
                p.case,
                display_path(&approved),
                b.tool_calls.len(),
                b.status,
                b.oracles.len()
            )
        }
    }
}

fn pending(
    args: &PendingArgs,
    dir: &Utf8Path,
    color: bool,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    let all = list_pending(dir);
    // Diffs can run long: on a terminal they go through the pager, as `git diff` does.
    let mut text: Vec<u8> = Vec::new();
    if all.is_empty() {
        writeln!(
            text,
            "no pending baselines in `{}`",
            escape_controls(dir.as_str())
        )?;
    }
    for p in &all {
        if let Some(why) = &p.misplaced {
            writeln!(text, "refused  {}", escape_controls(why))?;
            continue;
        }
        writeln!(text, "{}", escape_controls(&summary_line(p)))?;
        if args.diff {
            let approved = approved_of(&p.stored.path);
            let how = (color, args.trials);
            super::pending_diff::write(&p.stored.path, &approved, p.removal, how, &mut text)?;
        }
    }
    if args.diff {
        super::pager::show(&text, out)?;
    } else {
        out.write_all(&text)?;
    }
    Ok(exit::OK)
}

pub(super) fn matches(p: &Pending, filters: &[String]) -> bool {
    filters.is_empty()
        || filters.iter().any(|f| {
            let f = f.trim();
            eq_ci(f, &p.scenario) || eq_ci(f, &format!("{}/{}", p.scenario, p.case))
        })
}

/// Whether a filter names this pending file's case (`SCENARIO/CASE`), not only its scenario.
fn names_case(p: &Pending, filters: &[String]) -> bool {
    (filters.iter()).any(|f| eq_ci(f.trim(), &format!("{}/{}", p.scenario, p.case)))
}

/// What `apply` does with the pending files it chooses.
#[derive(Clone, Copy)]
enum Action {
    /// Promote them; with `removals`, pending removals too, whatever the filters name.
    Accept { removals: bool },
    /// Delete them (a rejected removal keeps its approved baseline).
    Reject,
}

fn apply(
    args: &BaselineFilterArgs,
    dir: &Utf8Path,
    action: Action,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    let verb = match action {
        Action::Accept { .. } => "accept",
        Action::Reject => "reject",
    };
    if let Some(code) = refuse_under_ci(&args.ci, verb) {
        return Ok(code);
    }
    let (mut chosen, mut held) = (Vec::new(), Vec::new());
    for p in list_pending(dir) {
        if !matches(&p, &args.filters) {
            continue;
        }
        // Removing an approved baseline is never a side effect of a bulk accept.
        let removal_allowed = match action {
            Action::Accept { removals } => removals || names_case(&p, &args.filters),
            Action::Reject => true,
        };
        if p.removal && !removal_allowed {
            held.push(p);
        } else {
            chosen.push(p);
        }
    }
    for p in &held {
        writeln!(
            out,
            "kept     {}/{} ({}): a pending removal, not applied; accept it with `tracereplay baseline accept --removals` or `tracereplay baseline accept '{}/{}'`",
            escape_controls(&p.scenario),
            escape_controls(&p.case),
            display_path(&approved_of(&p.stored.path)),
            escape_controls(&p.scenario),
            escape_controls(&p.case),
        )?;
    }
    if chosen.is_empty() && !held.is_empty() {
        diag!(
            "nothing accepted: only pending removals match, and they are applied only with `--removals` or a SCENARIO/CASE filter"
        );
        return Ok(exit::FAILURE);
    }
    if chosen.is_empty() {
        diag!(
            "nothing to {verb}: no pending baseline matches in `{}`",
            escape_controls(dir.as_str())
        );
        return Ok(exit::FAILURE);
    }
    let confined = BaselineStore::new(dir).confined();
    let mut refused = 0;
    for p in &chosen {
        let act = match (action, p.removal) {
            (Action::Accept { .. }, false) => Act::Accept,
            (Action::Accept { .. }, true) => Act::Remove,
            (Action::Reject, _) => Act::Reject,
        };
        if let (Some(why), true) = (&p.misplaced, act != Act::Reject) {
            refused += 1;
            diag!("error: refused: {}", escape_controls(why));
            continue;
        }
        writeln!(out, "{}", escape_controls(&act_on(&confined, p, act)?))?;
    }
    Ok(if refused > 0 { exit::FAILURE } else { exit::OK })
}

/// What is done with one pending file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Act {
    /// Promote a pending baseline over the approved one.
    Accept,
    /// Apply a pending removal: delete the approved baseline and the pending file.
    Remove,
    /// Delete the pending file; the approved baseline stays as it is.
    Reject,
}

/// Does `act` with the pending file `p`; returns the line that says so.
pub(super) fn act_on(confined: &Confined, p: &Pending, act: Act) -> anyhow::Result<String> {
    let pending = &p.stored.path;
    // Rejecting only deletes the pending file itself; anything else touches an approved one.
    if let (Some(why), true) = (&p.misplaced, act != Act::Reject) {
        bail!("refused: {why}");
    }
    let approved = approved_of(pending);
    let (scenario, case) = (escape_controls(&p.scenario), escape_controls(&p.case));
    Ok(match act {
        Act::Accept => {
            // Validate before promoting: a corrupt pending file must not replace a good baseline.
            Approved::read(pending).with_context(|| format!("refusing to accept `{pending}`"))?;
            confined
                .rename(pending, &approved)
                .with_context(|| format!("cannot move `{pending}` to `{approved}`"))?;
            format!("accepted {scenario}/{case} -> {}", display_path(&approved))
        }
        Act::Remove => {
            confined
                .remove(&approved)
                .with_context(|| format!("cannot remove `{approved}`"))?;
            confined
                .remove(pending)
                .with_context(|| format!("cannot remove `{pending}`"))?;
            format!("removed  {scenario}/{case} ({})", display_path(&approved))
        }
        Act::Reject => {
            confined
                .remove(pending)
                .with_context(|| format!("cannot remove `{pending}`"))?;
            format!("rejected {scenario}/{case} ({})", display_path(pending))
        }
    })
}

/// Promotes the pending file this run wrote for (scenario, case) to its approved baseline;
/// `None` when there is nothing to approve (no drift, and no pending file written to bring the
/// approved one up to date). Returns the approved file, as shown.
fn promote(
    store: &BaselineStore,
    scenario: &str,
    case: &str,
    drifted: bool,
) -> anyhow::Result<Option<String>> {
    let pending = store.new_path(scenario, case);
    let approved = store.approved_path(scenario, case);
    if !drifted && !pending.is_file() {
        return Ok(None);
    }
    store
        .confined()
        .rename(&pending, &approved)
        .with_context(|| format!("cannot move `{pending}` to `{approved}`"))?;
    Ok(Some(display_path(&approved)))
}

/// A case `baseline approve` promotes: its scenario and case, whether it drifted (else its
/// pending file is promoted only if one is there), and its trials when it is a set.
struct Chosen {
    scenario: String,
    case: String,
    drifted: bool,
    trials: Option<usize>,
}

/// `baseline approve`: judges the traces as `check` does (the same price table and seal rule),
/// so that the baselines it writes carry what `check` compares. It records what the traces
/// show, whatever drift they hold, so the drift settings play no part.
fn approve(args: &ApproveArgs, settings: &Settings, out: &mut dyn Write) -> anyhow::Result<i32> {
    if let Some(code) = refuse_under_ci(&args.ci, "approve") {
        return Ok(code);
    }
    let dir = &settings.baselines_dir().0;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create `{dir}`"))?;
    let paths = settings.paths();
    let found = discover(&paths, &settings.scenarios())?;
    let opts = CheckOptions {
        selection: Selection {
            scenarios: args.scenarios.clone(),
            whole_suite: tracereplay_core::discover::covers_suite_roots(&paths),
            ..Selection::default()
        },
        judging: settings.judging(args.judging.limits.limits(), args.judging.allow_raw_prompts)?,
        counting: Counting {
            fail_on: FailOn::None,
            ..Counting::default()
        },
        baselines: Baselines::Compared {
            policy: BaselinePolicy {
                store: BaselineStore::new(dir.clone()),
                mode: DriftMode::Default,
                tolerance: tracereplay_core::eval::pipeline::DEFAULT_TOLERANCE,
                refresh: true,
                alpha: tracereplay_core::eval::pipeline::DEFAULT_ALPHA,
            },
            write_pending: true,
        },
        ..CheckOptions::default()
    };
    let report = check(&found, &paths, &opts)?;
    // Every baseline is approved from a pending file this run wrote, or none is.
    if !report.failed_writes.is_empty() {
        let failed: Vec<&str> = report
            .failed_writes
            .iter()
            .map(|f| f.message.as_str())
            .collect();
        bail!("{}; no approved baseline was changed", failed.join("; "));
    }
    let store = BaselineStore::new(dir.clone());
    let (mut written, mut unchanged, mut skipped) = (0, 0, 0);
    // What to promote, in report order: each set case, then each single trace's row (a case of
    // several trials is approved whole, from its case line).
    let mut chosen: Vec<Chosen> = Vec::new();
    let sets: std::collections::HashSet<(&str, &str)> = (report.cases.iter())
        .filter(|c| c.trials >= 2)
        .map(|c| (c.scenario.as_str(), c.case.as_str()))
        .collect();
    for c in report.cases.iter().filter(|c| c.trials >= 2) {
        let what = format!("{}/{}", c.scenario, c.case);
        if c.verdict == RowVerdict::Error {
            skipped += 1;
            let why = c.reason.as_deref().unwrap_or("a trial could not be judged");
            diag!("skipped  {what}: {why}");
            continue;
        }
        if let Some(d) = (c.drift.iter()).find(|d| d.category == DriftCategory::BaselineInvalid) {
            skipped += 1;
            diag!("skipped  {what}: {}", d.detail);
            continue;
        }
        chosen.push(Chosen {
            scenario: c.scenario.clone(),
            case: c.case.clone(),
            drifted: !c.drift.is_empty(),
            trials: Some(c.trials),
        });
    }
    for row in report.results.iter() {
        let (Some(scenario), Some(case)) = (row.scenario, row.case) else {
            continue;
        };
        if sets.contains(&(scenario.as_str(), case.as_str())) {
            continue;
        }
        let what = format!("{scenario}/{case}");
        if row.verdict == RowVerdict::Error {
            if let Some(e) = &row.error {
                if e.category != tracereplay::report::RowErrorKind::NoTrace {
                    skipped += 1;
                    diag!("skipped  {what}: {}", e.message);
                }
            }
            continue;
        }
        if let Some(d) = row.drift.iter().find(|d| {
            matches!(
                d.category,
                DriftCategory::Ambiguous | DriftCategory::BaselineInvalid
            )
        }) {
            skipped += 1;
            diag!("skipped  {what}: {}", d.detail);
            continue;
        }
        let drifted = !row.drift.is_empty();
        chosen.push(Chosen {
            scenario,
            case,
            drifted,
            trials: None,
        });
    }
    // The renames, in parallel (those into different directories do not wait on each other);
    // then what each did, in order.
    let promoted: Vec<anyhow::Result<Option<String>>> = (chosen.par_iter())
        .map(|c| promote(&store, &c.scenario, &c.case, c.drifted))
        .collect();
    // The approved files renamed into place, whose directory entries are made durable at the end.
    // Every rename that was done is reported and made durable, even past one that failed (the
    // renames ran together); the first failure is the command's error.
    let mut moved: Vec<camino::Utf8PathBuf> = Vec::new();
    let mut failed = None;
    for (c, promoted) in chosen.iter().zip(promoted) {
        match promoted {
            Err(e) => {
                failed.get_or_insert(e);
            }
            Ok(None) => unchanged += 1,
            Ok(Some(approved)) => {
                written += 1;
                moved.push(store.approved_path(&c.scenario, &c.case));
                let what = format!("{}/{}", c.scenario, c.case);
                match c.trials {
                    Some(trials) => {
                        writeln!(out, "approved {what} ({trials} trials) -> {approved}")?
                    }
                    None => writeln!(out, "approved {what} -> {approved}")?,
                }
            }
        }
    }
    // The pending files were made durable when written; their renames, here.
    tracereplay_trace::fsutil::sync_directories_of(&moved, dir)
        .with_context(|| format!("cannot make the approved baselines under `{dir}` durable"))?;
    if let Some(e) = failed {
        return Err(e);
    }
    writeln!(
        out,
        "{written} written, {unchanged} unchanged, {skipped} skipped"
    )?;
    if written + unchanged == 0 {
        diag!("nothing approved: no trace under the paths could be judged");
        return Ok(exit::FAILURE);
    }
    Ok(exit::OK)
}
