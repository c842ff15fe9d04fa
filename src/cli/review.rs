//! `tracereplay baseline review [FILTER…]`: the pending baselines one at a time on a terminal,
//! as `cargo insta review` walks snapshots. Each screen shows the case, its verdict, the drift
//! categories and the diff (the diff `pending --diff` prints), and reads one key: `a` accept,
//! `r` reject, `s` skip, `i` details, `q` quit. A pending removal is shown as removals, and `a`
//! on it asks a second time (`y`) before it deletes the approved baseline.

use std::io::{IsTerminal, Write};

use camino::Utf8Path;
use console::{Key, Term};
use tracereplay::report::escape_controls;
use tracereplay_core::baseline::{Approved, BaselineStore};
use tracereplay_trace::paths::display_path;

use super::args::ReviewArgs;
use super::baseline::{
    Act, Pending, act_on, approved_of, list_pending, matches, refuse_under_ci, summary_line,
};
use super::exit;

/// The keys, as each screen ends.
const KEYS: &str = "a accept · r reject · s skip · i details · q quit";

/// What one key asks for.
#[derive(Debug, PartialEq, Eq)]
enum Choice {
    Do(Act),
    Skip,
    Details,
    Quit,
    /// A key with no meaning here: read the next one.
    Nothing,
}

fn choice(key: &Key) -> Choice {
    match key {
        Key::Char('a' | 'A') => Choice::Do(Act::Accept),
        Key::Char('r' | 'R') => Choice::Do(Act::Reject),
        Key::Char('s' | 'S') | Key::Char(' ') => Choice::Skip,
        Key::Char('i' | 'I') => Choice::Details,
        Key::Char('q' | 'Q') | Key::Escape | Key::CtrlC => Choice::Quit,
        _ => Choice::Nothing,
    }
}

/// What the review did, for its last line.
#[derive(Default)]
struct Tally {
    accepted: usize,
    rejected: usize,
    removed: usize,
    skipped: usize,
}

/// Runs the review; `Err` means exit 2.
pub(super) fn review(
    args: &ReviewArgs,
    dir: &camino::Utf8Path,
    color: bool,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    if let Some(code) = refuse_under_ci(&args.filter.ci, "review") {
        return Ok(code);
    }
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        diag!(
            "error: `baseline review` reads single keys and needs a terminal; off one, list what is pending with `tracereplay baseline pending --diff` and apply it with `tracereplay baseline accept|reject [FILTER…]`"
        );
        return Ok(exit::FAILURE);
    }
    let (misplaced, chosen): (Vec<Pending>, Vec<Pending>) = (list_pending(dir).into_iter())
        .filter(|p| matches(p, &args.filter.filters))
        .partition(|p| p.misplaced.is_some());
    // A pending file whose content names another case is never shown as that case's change.
    for p in &misplaced {
        diag!(
            "error: refused: {}",
            escape_controls(p.misplaced.as_deref().unwrap_or_default())
        );
    }
    let code = if misplaced.is_empty() {
        exit::OK
    } else {
        exit::FAILURE
    };
    if chosen.is_empty() {
        writeln!(out, "no pending baseline to review in `{dir}`")?;
        return Ok(code);
    }
    let term = Term::stdout();
    let confined = BaselineStore::new(dir).confined();
    let mut tally = Tally::default();
    let mut done = Vec::new();
    let mut quit_at = None;
    'items: for (i, p) in chosen.iter().enumerate() {
        loop {
            term.clear_screen()?;
            screen(p, i, chosen.len(), false, color, &done, out)?;
            out.flush()?;
            let c = loop {
                match choice(&term.read_key_raw()?) {
                    Choice::Nothing => continue,
                    c => break c,
                }
            };
            match c {
                // The details — a set's trials, the files — can run to hundreds of lines: they
                // go through the pager, and the screen comes back when it is quit.
                Choice::Details => {
                    let mut text = Vec::new();
                    screen(p, i, chosen.len(), true, color, &done, &mut text)?;
                    term.clear_screen()?;
                    super::pager::show_until_quit(&text, out)?;
                }
                Choice::Skip => {
                    tally.skipped += 1;
                    continue 'items;
                }
                Choice::Quit => {
                    quit_at = Some(i);
                    break 'items;
                }
                Choice::Do(Act::Accept) if p.removal => {
                    write!(
                        out,
                        "\nremove the approved baseline `{}`? y removes it, any other key keeps it ",
                        display_path(&approved_of(&p.stored.path))
                    )?;
                    out.flush()?;
                    if term.read_key_raw()? == Key::Char('y') {
                        done.push(act_on(&confined, p, Act::Remove)?);
                        tally.removed += 1;
                        continue 'items;
                    }
                }
                Choice::Do(act) => {
                    done.push(act_on(&confined, p, act)?);
                    match act {
                        Act::Reject => tally.rejected += 1,
                        _ => tally.accepted += 1,
                    }
                    continue 'items;
                }
                Choice::Nothing => unreachable!("read again above"),
            }
        }
    }
    term.clear_screen()?;
    for line in &done {
        writeln!(out, "{}", escape_controls(line))?;
    }
    let left = quit_at.map_or(0, |i| chosen.len() - i) + tally.skipped;
    writeln!(
        out,
        "review: {} accepted, {} rejected, {} removed, {} skipped; {left} still pending{}",
        tally.accepted,
        tally.rejected,
        tally.removed,
        tally.skipped,
        if quit_at.is_some() { " (quit)" } else { "" }
    )?;
    Ok(code)
}

/// One pending file's screen: where the review is, the file's summary line and verdict, the
/// diff, the details when asked for, the keys.
fn screen(
    p: &Pending,
    i: usize,
    n: usize,
    details: bool,
    color: bool,
    done: &[String],
    out: &mut dyn Write,
) -> std::io::Result<()> {
    // Everything shown comes from files a pull request may have made: control characters are
    // shown escaped, never sent to the terminal.
    if let Some(last) = done.last() {
        writeln!(out, "{}", escape_controls(last))?;
    }
    let kind = if p.removal { "removal" } else { "baseline" };
    writeln!(out, "pending {kind} {} of {n}", i + 1)?;
    writeln!(out, "{}", escape_controls(&summary_line(p)))?;
    let approved = approved_of(&p.stored.path);
    writeln!(out, "verdict: {}", escape_controls(&verdict(p, &approved)))?;
    // A trial set shows its own findings; its trials only with the details (`i`).
    super::pending_diff::write(&p.stored.path, &approved, p.removal, (color, details), out)?;
    if details {
        writeln!(out, "details:")?;
        let shown = |p: &Utf8Path| escape_controls(&display_path(p)).into_owned();
        writeln!(out, "  pending file   {}", shown(&p.stored.path))?;
        writeln!(out, "  approved file  {}", shown(&approved))?;
        for (what, path) in [
            ("approved", approved.as_path()),
            ("pending", &p.stored.path),
        ] {
            if let Some(line) = recorded_by(path) {
                writeln!(out, "  {what:<8}       {}", escape_controls(&line))?;
            }
        }
    }
    writeln!(out)?;
    writeln!(out, "{KEYS}")
}

/// The verdict the file records: its oracles', or its trials' pass count.
fn verdict(p: &Pending, approved: &Utf8Path) -> String {
    let read = if p.removal { approved } else { &p.stored.path };
    let passes = |oracles: &std::collections::BTreeMap<String, String>| {
        oracles.values().all(|v| v == "pass")
    };
    let what = if p.removal {
        "the approved baseline, which no trace reaches now"
    } else {
        "this run"
    };
    match Approved::read_unlinked(read) {
        Ok(Approved::Single(b)) => {
            let o = &b.behaviour.oracles;
            let passing = o.values().filter(|v| *v == "pass").count();
            let v = if passes(o) { "pass" } else { "fail" };
            format!("{v} in {what} ({passing}/{} oracles pass)", o.len())
        }
        Ok(Approved::Set(set)) => {
            let passing = (set.trials.iter())
                .filter(|t| passes(&t.behaviour.oracles))
                .count();
            format!("{passing}/{} trials pass in {what}", set.trials.len())
        }
        Err(e) => format!("unreadable: {}", tracereplay_core::eval::error_chain(&e)),
    }
}

/// Which trace and tool version a baseline file was written from.
fn recorded_by(path: &Utf8Path) -> Option<String> {
    match Approved::read_unlinked(path).ok()? {
        Approved::Single(b) => Some(format!(
            "content hash {}, written by tracereplay {}",
            b.content_hash, b.tool_version
        )),
        Approved::Set(s) => Some(format!("a set of {} trials", s.trials.len())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_mean_what_insta_means() {
        assert_eq!(choice(&Key::Char('a')), Choice::Do(Act::Accept));
        assert_eq!(choice(&Key::Char('r')), Choice::Do(Act::Reject));
        assert_eq!(choice(&Key::Char('s')), Choice::Skip);
        assert_eq!(choice(&Key::Char('i')), Choice::Details);
        assert_eq!(choice(&Key::Char('q')), Choice::Quit);
        assert_eq!(choice(&Key::CtrlC), Choice::Quit);
        assert_eq!(choice(&Key::Char('x')), Choice::Nothing);
        assert_eq!(choice(&Key::Enter), Choice::Nothing);
    }
}
