//! `baseline pending --diff`: under each pending file's line, what approving it changes — the
//! drift findings against the approved baseline with their diffs (as `check` shows drift), a new
//! baseline's behaviour as additions, a removal's as removals, and for a trial set the set's own
//! findings (the Fisher and Mann–Whitney tests `check` runs; trials are never paired one to one),
//! its trials listed only when asked.

use std::io::Write;

use camino::Utf8Path;
use tracereplay::report::escape_controls;
use tracereplay_core::baseline::{Approved, BaselineSet, Behaviour};
use tracereplay_core::diff::report::write_finding;
use tracereplay_core::diff::{DriftMode, compare};

/// The tolerance `pending` compares with (the default of `usage-tolerance`).
const TOLERANCE: f64 = tracereplay_core::eval::pipeline::DEFAULT_TOLERANCE;

/// Writes what approving the pending file `pending` would change in `approved` (`removal`: the
/// pending file removes it).
pub(super) fn write(
    pending: &Utf8Path,
    approved: &Utf8Path,
    removal: bool,
    (color, trials): (bool, bool),
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let old = Approved::read_unlinked(approved).ok();
    if removal {
        return match &old {
            Some(old) => whole(old, '-', (color, trials), out),
            None => writeln!(out, "      (the approved baseline is gone already)"),
        };
    }
    // A pending file that does not read was said so on its line.
    let Ok(new) = Approved::read(pending) else {
        return Ok(());
    };
    match (old, new) {
        (None, new) => whole(&new, '+', (color, trials), out),
        (Some(Approved::Single(old)), Approved::Single(new)) => {
            behaviours(&old.behaviour, &new.behaviour, color, out)
        }
        (Some(Approved::Set(old)), Approved::Set(new)) => sets(&old, &new, (color, trials), out),
        (Some(old), new) => {
            writeln!(out, "      the approved baseline is replaced whole:")?;
            whole(&old, '-', (color, trials), out)?;
            whole(&new, '+', (color, trials), out)
        }
    }
}

/// The drift findings of `new` against `old`, or a note that only the content hash moved.
fn behaviours(
    old: &Behaviour,
    new: &Behaviour,
    color: bool,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let findings = compare(old, new, TOLERANCE, DriftMode::Default);
    if findings.is_empty() {
        return writeln!(out, "      content hash only: the behaviour is the same");
    }
    for f in &findings {
        write_finding(f, color, out)?;
    }
    Ok(())
}

/// A set against the approved set: the set's findings first, as `check` tests sets (trials are
/// samples of a stochastic agent, never paired one to one), then — with `trials` — the pending
/// trials themselves.
fn sets(
    old: &BaselineSet,
    new: &BaselineSet,
    (color, trials): (bool, bool),
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let behaviours = |s: &BaselineSet| s.trials.iter().map(|t| t.behaviour.clone()).collect();
    let input = tracereplay_core::diff::sets::SetInput {
        scenario: new.scenario.clone(),
        case: new.case.clone(),
        old: behaviours(old),
        new: behaviours(new),
    };
    let alpha = tracereplay_core::eval::pipeline::DEFAULT_ALPHA;
    let summary = tracereplay_core::diff::sets::compare_sets(
        vec![input],
        TOLERANCE,
        DriftMode::Default,
        alpha,
    );
    let findings: Vec<_> = (summary.cases_by_effect.iter())
        .flat_map(|e| e.drift())
        .collect();
    if findings.is_empty() {
        writeln!(
            out,
            "      the set's tests find no drift: {} approved trials, {} pending",
            old.trials.len(),
            new.trials.len()
        )?;
    }
    for f in &findings {
        write_finding(f, color, out)?;
    }
    whole_set(new, '+', (color, trials), out)
}

/// A set's trials as additions or removals with `trials`; else a line saying how to see them.
fn whole_set(
    set: &BaselineSet,
    sign: char,
    (color, trials): (bool, bool),
    out: &mut dyn Write,
) -> std::io::Result<()> {
    if !trials {
        return writeln!(
            out,
            "      {} trials (`i` in `baseline review`, `--trials` with `pending --diff` lists them)",
            set.trials.len()
        );
    }
    for t in &set.trials {
        writeln!(out, "      trial {}:", t.trial)?;
        listing(&t.behaviour, sign, color, out)?;
    }
    Ok(())
}

/// A whole baseline as additions (`+`) or removals (`-`).
fn whole(
    b: &Approved,
    sign: char,
    (color, trials): (bool, bool),
    out: &mut dyn Write,
) -> std::io::Result<()> {
    match b {
        Approved::Single(b) => listing(&b.behaviour, sign, color, out),
        Approved::Set(set) => whole_set(set, sign, (color, trials), out),
    }
}

/// One behaviour, a line per fact, each marked `sign`.
fn listing(b: &Behaviour, sign: char, color: bool, out: &mut dyn Write) -> std::io::Result<()> {
    let mut lines = vec![format!("status {}", b.status)];
    for c in &b.tool_calls {
        let outcome = match c.ok {
            Some(true) => " ok",
            Some(false) => " failed",
            None => "",
        };
        lines.push(format!("{} {} {}{outcome}", c.call, c.tool, c.args));
    }
    for a in &b.approvals {
        let decisions: Vec<&str> = (a.decisions.iter())
            .map(|&g| if g { "granted" } else { "denied" })
            .collect();
        let tool = a.tool.as_deref().unwrap_or("-");
        lines.push(format!("approval {tool}: {}", decisions.join(", ")));
    }
    for a in &b.artifacts {
        lines.push(format!("artifact {}", a.path));
    }
    if let Some(f) = &b.final_answer {
        lines.push(format!(
            "final answer {}",
            serde_json::Value::from(f.as_str())
        ));
    }
    // Oracles in their scenario's order (`2:…` before `10:…`), then the synthetic ones.
    let mut oracles: Vec<(&String, &String)> = b.oracles.iter().collect();
    oracles.sort_by_key(|(k, _)| {
        let index = k.split_once(':').and_then(|(i, _)| i.parse::<u64>().ok());
        (index.is_none(), index, k.as_str())
    });
    for (k, v) in oracles {
        lines.push(format!("oracle {k} {v}"));
    }
    let code = if sign == '+' { "32" } else { "31" };
    for line in lines {
        let line = format!("{sign} {}", escape_controls(&line));
        if color {
            writeln!(out, "          \x1b[{code}m{line}\x1b[0m")?;
        } else {
            writeln!(out, "          {line}")?;
        }
    }
    Ok(())
}
