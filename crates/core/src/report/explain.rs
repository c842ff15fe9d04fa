//! Rendering an explanation: identity, every oracle's verdict, the deciding events in context
//! (a few events around them, the deciding ones marked, long values shortened), and drift.

use std::io::Write;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::diff::DriftFinding;
use crate::oracle::{OracleResult, Verdict, shorten};
use crate::report::escape_controls as esc;

/// Everything `explain` shows about one trace. Also the shape of a run folder's evidence file
/// (which holds only the cited events).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    /// The trace file.
    pub path: String,
    /// Scenario id (from the scenario, else the header).
    pub scenario: Option<String>,
    /// Case.
    pub case: Option<String>,
    /// The verified content hash (`null` when the seal does not hold).
    pub content_hash: Option<String>,
    /// Whether the trace is sealed.
    pub sealed: Option<bool>,
    /// Why the trace could not be judged (integrity failure, malformed…).
    pub error: Option<String>,
    /// Every oracle result.
    #[serde(default)]
    pub oracles: Vec<OracleResult>,
    /// Drift from the approved baseline.
    #[serde(default)]
    pub drift: Vec<DriftFinding>,
    /// Events, in order (all of them, or the cited ones in an evidence file).
    #[serde(default)]
    pub events: Vec<Value>,
    /// No loaded scenario has the id the trace names, or its scenario has problems: nothing
    /// could be judged.
    #[serde(skip)]
    pub not_judged: bool,
}

impl Explanation {
    /// Masks every secret the scan recognises (and `waived` does not list) in what `explain`
    /// shows: oracle results, drift, events and the error.
    pub fn mask_secrets(&mut self, waived: &std::collections::HashSet<String>) {
        use crate::privacy::mask::{mask_string, mask_value};
        (self.oracles.iter_mut()).for_each(|o| o.mask_secrets(waived));
        (self.drift.iter_mut()).for_each(|d| d.mask_secrets(waived));
        (self.events.iter_mut()).for_each(|v| mask_value(v, waived));
        if let Some(err) = &mut self.error {
            mask_string(err, waived);
        }
    }
}

/// Events shown before and after each deciding event.
const CONTEXT: usize = 2;
/// Longest rendering of one event's fields.
const EVENT_CHARS: usize = 160;

/// One event as a line: `seq 3  tool_call  {"call_id":…}` without kind, seq and time.
pub fn event_line(e: &Value) -> String {
    let kind = e["kind"].as_str().unwrap_or("?");
    let seq = e["seq"].as_u64().map_or("?".to_owned(), |s| s.to_string());
    let mut fields = e.as_object().cloned().unwrap_or_default();
    for k in ["kind", "seq", "ts_ms"] {
        fields.remove(k);
    }
    let kind = esc(kind);
    format!(
        "seq {seq:<4} {kind:<18} {}",
        esc(&shorten(&Value::Object(fields).to_string(), EVENT_CHARS))
    )
}

/// One failure in brief: what it is, which trace (by content hash), and the oracle that decided
/// it (the first that did not pass; else the first drift finding; else the error).
pub fn render_headline(e: &Explanation, color: bool, out: &mut dyn Write) -> std::io::Result<()> {
    let paint = |code: &str, t: &str| {
        if color {
            format!("\x1b[{code}m{t}\x1b[0m")
        } else {
            t.to_owned()
        }
    };
    let failing = e.oracles.iter().find(|o| o.verdict != Verdict::Pass);
    let label = match (&e.error, failing) {
        (Some(_), _) => "ERROR",
        (None, Some(_)) => "FAIL ",
        (None, None) => "DRIFT",
    };
    writeln!(
        out,
        "\n{} {}/{}  {}  {}",
        paint("31", label),
        esc(e.scenario.as_deref().unwrap_or("-")),
        esc(e.case.as_deref().unwrap_or("-")),
        esc(&e.path),
        e.content_hash.as_deref().unwrap_or("(not verified)")
    )?;
    if let Some(err) = &e.error {
        writeln!(out, "      {}", esc(err))?;
    } else if let Some(o) = failing {
        let index = o.index.map(|i| format!(" #{i}")).unwrap_or_default();
        writeln!(
            out,
            "      {} {}{index}{}: {}",
            o.verdict.as_str(),
            esc(&o.kind),
            o.score_note(),
            esc(&o.message)
        )?;
        if !o.evidence.is_empty() {
            writeln!(out, "          evidence: {}", o.evidence_text())?;
        }
    } else if let Some(d) = e.drift.first() {
        writeln!(
            out,
            "      drift {}: {}",
            d.category.as_str(),
            esc(&d.detail)
        )?;
    }
    Ok(())
}

/// Writes an explanation.
pub fn render(e: &Explanation, color: bool, out: &mut dyn Write) -> std::io::Result<()> {
    let paint = |code: &str, t: &str| {
        if color {
            format!("\x1b[{code}m{t}\x1b[0m")
        } else {
            t.to_owned()
        }
    };
    writeln!(out, "trace     {}", esc(&e.path))?;
    writeln!(
        out,
        "scenario  {}  case {}",
        esc(e.scenario.as_deref().unwrap_or("-")),
        esc(e.case.as_deref().unwrap_or("-"))
    )?;
    match (&e.content_hash, e.sealed) {
        (Some(h), Some(true)) => writeln!(out, "content   {h} (seal verified)")?,
        (Some(h), _) => writeln!(
            out,
            "content   {h} (unsealed: hash of the normalised bytes)"
        )?,
        (None, _) => writeln!(out, "content   not verified")?,
    }
    if let Some(err) = &e.error {
        writeln!(out, "{} {}", paint("31", "not judged:"), esc(err))?;
        return Ok(());
    }
    let position = |seq: u64| {
        e.events
            .iter()
            .position(|ev| ev["seq"].as_u64() == Some(seq))
    };
    for o in &e.oracles {
        let index = o.index.map(|i| format!(" #{i}")).unwrap_or_default();
        let label = match o.verdict {
            Verdict::Pass => paint("32", "pass"),
            Verdict::Fail | Verdict::NotEvaluable => paint("31", o.verdict.as_str()),
        };
        let (kind, message) = (esc(&o.kind), esc(&o.message));
        writeln!(out, "\n{label} {kind}{index}{}: {message}", o.score_note())?;
        let cited = &o.evidence;
        // The change itself first, one key per line, each value readable on its own.
        let differences = (o.found.as_ref())
            .and_then(|f| f.get("differences"))
            .and_then(Value::as_array);
        for d in differences.into_iter().flatten() {
            writeln!(
                out,
                "      differs  `{}`: expected {}, found {}",
                esc(d["key"].as_str().unwrap_or("")),
                esc(&d["expected"].to_string()),
                esc(&d["found"].to_string())
            )?;
        }
        for (v, label) in [(&o.expected, "expected"), (&o.found, "found   ")] {
            if let Some(v) = v.as_ref().filter(|v| !v.is_null()) {
                writeln!(
                    out,
                    "      {label} {}",
                    shorten(&v.to_string(), EVENT_CHARS)
                )?;
            }
        }
        if o.verdict == Verdict::Pass {
            if !cited.is_empty() {
                writeln!(out, "      evidence: {}", o.evidence_text())?;
            }
            continue;
        }
        let mut shown: Vec<usize> = cited
            .iter()
            .filter_map(|s| position(*s))
            .flat_map(|p| {
                p.saturating_sub(CONTEXT)..=(p + CONTEXT).min(e.events.len().saturating_sub(1))
            })
            .collect();
        shown.sort_unstable();
        shown.dedup();
        let mut last: Option<usize> = None;
        for p in shown {
            if last.is_some_and(|l| p > l + 1) {
                writeln!(out, "        …")?;
            }
            let ev = &e.events[p];
            let marked = ev["seq"].as_u64().is_some_and(|s| cited.contains(&s));
            let line = event_line(ev);
            if marked {
                writeln!(out, "      {} {}", paint("1", ">"), paint("1", &line))?;
            } else {
                writeln!(out, "        {line}")?;
            }
            last = Some(p);
        }
    }
    if !e.drift.is_empty() {
        writeln!(out)?;
    }
    for d in &e.drift {
        crate::diff::report::write_finding(d, color, out)?;
    }
    Ok(())
}
