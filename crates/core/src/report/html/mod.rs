//! The HTML report: one self-contained file (inline CSS and a small script written for it; no
//! network, fonts or frameworks) that opens from disk or as a CI artifact.
//!
//! The page is built by its script from one embedded JSON document: the JSON report exactly as
//! `--json` writes it, plus the run's identity and, for each failing or drifted trace, its
//! events (read again from the trace, verified against the content hash the row was judged
//! with; long values folded, secrets masked). Passing traces carry no events, which keeps the
//! file near the JSON report's size at 20,000 traces.
//!
//! Escaping: every trace-controlled string reaches the page only inside that JSON document,
//! where `<`, `>`, `&`, U+2028 and U+2029 are written as `\u` escapes (so `</script>` and `<!--`
//! cannot end or comment out the script element), and the script puts text into the DOM with
//! `textContent`, never as markup.

use std::collections::HashSet;
use std::io::Write;

use serde_json::{Value, json};

use super::model::{Report, ResultRow, RowVerdict};
use crate::trace::{Limits, TraceFile, parse_trace};

pub(crate) const STYLE: &str = include_str!("style.css");
const SCRIPT: &str = include_str!("app.js");
const CONVERSATION: &str = include_str!("conversation.js");
const CASES: &str = include_str!("cases.js");
const DOM: &str = include_str!("dom.js");

/// Strings longer than this (in characters) are folded in the embedded events.
const FOLD_CHARS: usize = 400;
/// The same for the events that decided a verdict (cited by an oracle that did not pass, and
/// the call or result paired with one), so the conversation shows what decided it whole.
const FOLD_DECIDING_CHARS: usize = 4000;
/// The most traces whose whole timeline is embedded (blocking ones first, then in report
/// order); the others show the events cited as evidence. Keeps a run where everything fails
/// from writing a file the size of the corpus.
pub const MAX_TIMELINES: usize = 1000;

/// What the report itself does not hold: how the run was made.
#[derive(Debug, Clone, Default)]
pub struct HtmlContext {
    /// The run's exit code.
    pub exit_code: i32,
    /// The options that change judging, as `--flag value` strings.
    pub flags: Vec<String>,
    /// When the report was written (RFC 3339), if it should say.
    pub generated: Option<String>,
    /// Limits for reading traces again.
    pub limits: Limits,
    /// Secret fingerprints the project waived (`.tracereplay-allow`).
    pub waived: HashSet<String>,
    /// The developer opted in to raw prompt text (`--allow-raw-prompts`): a trace's user turns
    /// are shown with their text from its `.prompts.ndjson` sidecar, when it has one.
    pub raw_prompts: bool,
}

impl HtmlContext {
    /// What the report alone says of its run: its exit code, no flags, no time.
    pub fn of(report: &Report, limits: Limits) -> HtmlContext {
        HtmlContext {
            exit_code: i32::from(report.is_failure()),
            limits,
            ..HtmlContext::default()
        }
    }
}

/// A report's time in nanoseconds since the Unix epoch: `SOURCE_DATE_EPOCH` (seconds) when
/// set (reproducible builds' convention, so that a report can be byte-identical), else now.
pub fn report_time_nanos() -> u64 {
    std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .map(|s| s.saturating_mul(1_000_000_000))
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        })
}

/// The time to print as the report's ([`report_time_nanos`]), to the second.
pub fn generated_now() -> String {
    generated_at(report_time_nanos())
}

/// A time in nanoseconds since the Unix epoch as the report prints it, to the second.
pub fn generated_at(time_unix_nano: u64) -> String {
    let secs = time_unix_nano / 1_000_000_000;
    let stamp = super::stamp::utc_stamp(secs);
    // `20261201T181500Z` → `2026-12-01T18:15:00Z`
    format!(
        "{}-{}-{}T{}:{}:{}Z",
        &stamp[0..4],
        &stamp[4..6],
        &stamp[6..8],
        &stamp[9..11],
        &stamp[11..13],
        &stamp[13..15]
    )
}

/// Folds long strings: the first `limit` characters and the full length.
fn fold(v: &mut Value, limit: usize) {
    match v {
        Value::String(s) => {
            let n = s.chars().count();
            if n > limit {
                let head: String = s.chars().take(limit).collect();
                *s = format!("{head}… ({n} characters)");
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| fold(v, limit)),
        Value::Object(m) => m.values_mut().for_each(|v| fold(v, limit)),
        _ => {}
    }
}

/// How many characters of each event's strings the page keeps: [`FOLD_DECIDING_CHARS`] for an
/// event an oracle that did not pass cites, and for the other half of its call and result;
/// [`FOLD_CHARS`] for the rest. A result is its call's by the judging's rule (the latest
/// earlier call of its id that has no result yet), as the page pairs them.
fn fold_limits(row: &ResultRow, events: &[Value]) -> Vec<usize> {
    let cited: HashSet<u64> = (row.oracles.iter())
        .filter(|o| o.verdict != crate::oracle::Verdict::Pass)
        .flat_map(|o| o.evidence.iter().copied())
        .collect();
    let is_cited = |e: &Value| e["seq"].as_u64().is_some_and(|s| cited.contains(&s));
    let mut limits: Vec<usize> = (events.iter())
        .map(|e| {
            if is_cited(e) {
                FOLD_DECIDING_CHARS
            } else {
                FOLD_CHARS
            }
        })
        .collect();
    let mut open: std::collections::HashMap<&str, Vec<usize>> = Default::default();
    for (i, e) in events.iter().enumerate() {
        let id = e["call_id"].as_str().unwrap_or_default();
        if e["kind"] == "tool_call" {
            open.entry(id).or_default().push(i);
        } else if e["kind"] == "tool_result"
            && let Some(call) = open.get_mut(id).and_then(Vec::pop)
        {
            let hot = limits[call].max(limits[i]);
            (limits[call], limits[i]) = (hot, hot);
        }
    }
    limits
}

/// The events of a row's trace, when the trace still reads and has the hash it was judged
/// with; else the events the row cited, with a note saying why.
fn timeline(row: &ResultRow, ctx: &HtmlContext, whole: bool) -> Value {
    let from_trace = || -> Result<Vec<Value>, String> {
        if !whole {
            return Err(format!(
                "more than {MAX_TIMELINES} traces need auditing, and the whole timeline is embedded for the first {MAX_TIMELINES} (blocking ones first)"
            ));
        }
        let path = row.path.as_deref().ok_or("the row has no trace")?;
        let file = TraceFile::open(camino::Utf8Path::new(path), ctx.limits)
            .map_err(|e| format!("the trace no longer reads ({e})"))?;
        let seal = file.verify_seal(false).map_err(|e| e.to_string())?;
        if row.content_hash.as_deref() != Some(seal.content_hash.as_str()) {
            return Err("the trace changed since it was judged".into());
        }
        let parsed = parse_trace(&file, &seal, ctx.limits).map_err(|e| e.to_string())?;
        Ok(parsed
            .trace
            .events
            .iter()
            .map(crate::trace::json::event_value)
            .collect())
    };
    let (mut events, note) = match from_trace() {
        Ok(events) => (events, Value::Null),
        Err(why) => (
            row.cited_events.clone(),
            json!(format!("{why}: showing only the events cited as evidence")),
        ),
    };
    let mut prompts = match (&row.path, ctx.raw_prompts && note.is_null()) {
        (Some(path), true) => sidecar_prompts(camino::Utf8Path::new(path), &events, ctx.limits),
        _ => Value::Null,
    };
    let limits = fold_limits(row, &events);
    let with_prompts = std::iter::once((&mut prompts, FOLD_CHARS));
    for (e, limit) in (events.iter_mut().zip(limits)).chain(with_prompts) {
        crate::privacy::mask::mask_value(e, &ctx.waived);
        fold(e, limit);
    }
    json!({"events": events, "note": note, "prompts": prompts})
}

/// The raw text of the user turns of `events`, by prompt hash, from the trace's sidecar
/// (`NAME.prompts.ndjson` or `.zst` beside it); `null` when it has none or it does not read.
fn sidecar_prompts(trace: &camino::Utf8Path, events: &[Value], limits: Limits) -> Value {
    let wanted: HashSet<&str> = (events.iter())
        .filter(|e| e["kind"] == "user_message")
        .filter_map(|e| e["prompt"]["h"].as_str())
        .collect();
    let name = trace.file_name().unwrap_or_default();
    let stem = (name.strip_suffix(".trace.ndjson.zst"))
        .or_else(|| name.strip_suffix(".trace.ndjson"))
        .unwrap_or(name);
    let read = |suffix: &str| -> Option<Vec<u8>> {
        let path = trace.with_file_name(format!("{stem}.prompts.ndjson{suffix}"));
        let bytes =
            crate::fsutil::read_regular(&path, limits.max_trace_bytes, "prompt sidecar").ok()?;
        if suffix.is_empty() {
            return Some(bytes);
        }
        let mut out = Vec::new();
        let decoder = zstd::stream::read::Decoder::new(bytes.as_slice()).ok()?;
        std::io::Read::read_to_end(
            &mut std::io::Read::take(decoder, limits.max_trace_bytes),
            &mut out,
        )
        .ok()?;
        Some(out)
    };
    let Some(bytes) = read("").or_else(|| read(".zst")) else {
        return Value::Null;
    };
    let mut texts = serde_json::Map::new();
    for line in bytes.split(|&b| b == b'\n') {
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        if let (Some(h), Some(text)) = (v["h"].as_str(), v["text"].as_str()) {
            if wanted.contains(h) {
                texts.insert(h.to_owned(), Value::from(text));
            }
        }
    }
    Value::Object(texts)
}

/// Writes the embedded document (compact JSON: its own keys sorted, the report's fields in the
/// JSON report's order) to `out`, piece by piece: the report's rows are serialised one at a time and each audited trace's timeline is
/// built, written and dropped before the next, so the page costs no more memory than its
/// largest timeline, whatever the number of rows.
fn write_data(report: &Report, ctx: &HtmlContext, out: &mut dyn Write) -> std::io::Result<()> {
    let usage_lines = report.summary.usage.as_ref().map(|u| u.lines());
    out.write_all(b"{\"exit_code\":")?;
    serde_json::to_writer(&mut *out, &ctx.exit_code)?;
    out.write_all(b",\"flags\":")?;
    serde_json::to_writer(&mut *out, &ctx.flags)?;
    out.write_all(b",\"generated\":")?;
    serde_json::to_writer(&mut *out, &ctx.generated)?;
    out.write_all(b",\"report\":")?;
    serde_json::to_writer(&mut *out, report)?;
    // The rows to audit, chosen from the rows' heads (no row is decoded for this): failing,
    // erroring or drifted ones; blocking ones first, then in report order, get their whole
    // timeline.
    let mut chosen: Vec<(bool, usize)> = (report.results.metas().enumerate())
        .filter(|(_, m)| {
            matches!(m.verdict, RowVerdict::Fail | RowVerdict::Error)
                || m.drift_new
                || m.drift_other
        })
        .map(|(i, m)| (!m.blocking, i))
        .collect();
    chosen.sort_unstable();
    let whole: HashSet<usize> = (chosen.iter().take(MAX_TIMELINES))
        .map(|&(_, i)| i)
        .collect();
    // In row order, as the keys of an object.
    let mut rows: Vec<usize> = chosen.iter().map(|&(_, i)| i).collect();
    rows.sort_unstable();
    out.write_all(b",\"timelines\":{")?;
    let mut first = true;
    for i in rows {
        let row = report.results.get(i);
        if row.path.is_none() {
            continue;
        }
        if !first {
            out.write_all(b",")?;
        }
        first = false;
        write!(out, "\"{i}\":")?;
        serde_json::to_writer(&mut *out, &timeline(&row, ctx, whole.contains(&i)))?;
    }
    out.write_all(b"},\"usage_lines\":")?;
    serde_json::to_writer(&mut *out, &usage_lines.unwrap_or_default())?;
    out.write_all(b"}")
}

/// A writer that makes JSON text safe inside a script element (and for JavaScript string
/// rules): `<`, `>`, `&`, U+2028 and U+2029 become `\u` escapes as they pass. A character split
/// across two writes is held back until its last byte comes.
struct ScriptSafe<'w> {
    out: &'w mut dyn Write,
    /// The leading bytes of U+2028 or U+2029 seen at the end of the last write.
    held: Vec<u8>,
}

impl<'w> ScriptSafe<'w> {
    fn new(out: &'w mut dyn Write) -> ScriptSafe<'w> {
        ScriptSafe {
            out,
            held: Vec::new(),
        }
    }

    /// Writes what is held back (a partial character that never completed is passed as is).
    fn finish(mut self) -> std::io::Result<()> {
        let held = std::mem::take(&mut self.held);
        self.out.write_all(&held)
    }
}

impl Write for ScriptSafe<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut bytes = std::mem::take(&mut self.held);
        bytes.extend_from_slice(buf);
        // A trailing E2 or E2 80 may begin U+2028/U+2029: keep it for the next write.
        let keep = match bytes.as_slice() {
            [.., 0xE2] => 1,
            [.., 0xE2, 0x80] => 2,
            _ => 0,
        };
        let (now, later) = bytes.split_at(bytes.len() - keep);
        let mut start = 0;
        let mut i = 0;
        while i < now.len() {
            let escape: Option<(&[u8], usize)> = match now[i] {
                b'<' => Some((b"\\u003c", 1)),
                b'>' => Some((b"\\u003e", 1)),
                b'&' => Some((b"\\u0026", 1)),
                0xE2 if now[i..].starts_with(&[0xE2, 0x80, 0xA8]) => Some((b"\\u2028", 3)),
                0xE2 if now[i..].starts_with(&[0xE2, 0x80, 0xA9]) => Some((b"\\u2029", 3)),
                _ => None,
            };
            match escape {
                Some((with, len)) => {
                    self.out.write_all(&now[start..i])?;
                    self.out.write_all(with)?;
                    i += len;
                    start = i;
                }
                None => i += 1,
            }
        }
        self.out.write_all(&now[start..])?;
        self.held = later.to_vec();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// JSON text made safe inside a script element (and for JavaScript string rules).
pub fn escape_for_script(json: &str) -> String {
    let mut out = Vec::with_capacity(json.len() + json.len() / 64);
    let mut safe = ScriptSafe::new(&mut out);
    // Writing to a vector cannot fail.
    let _ = safe.write_all(json.as_bytes());
    let _ = safe.finish();
    String::from_utf8(out).unwrap_or_default()
}

/// The shared page shell of the report and the comparison: one self-contained page with the
/// style, an empty `#app`, the document `data` writes (escaped for a script element as it is
/// written) and the scripts that draw it, after the shared DOM helpers.
pub(crate) fn page(
    out: &mut dyn Write,
    title: &str,
    without_script: &str,
    data: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
    scripts: &[&str],
) -> std::io::Result<()> {
    write!(
        out,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"color-scheme\" content=\"light dark\">\n\
         <title>{title}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n\
         <noscript><p>{without_script}</p></noscript>\n\
         <div id=\"app\" aria-live=\"polite\"></div>\n\
         <script type=\"application/json\" id=\"data\">"
    )?;
    // serde writes token by token: the escaping sees them gathered in 64 KiB pieces.
    let mut safe = std::io::BufWriter::with_capacity(1 << 16, ScriptSafe::new(&mut *out));
    data(&mut safe)?;
    safe.into_inner().map_err(|e| e.into_error())?.finish()?;
    write!(out, "</script>\n<script>\n{DOM}")?;
    for s in scripts {
        out.write_all(s.as_bytes())?;
    }
    write!(out, "</script>\n</body>\n</html>\n")
}

/// Writes the HTML report.
pub fn render(report: &Report, ctx: &HtmlContext, out: &mut dyn Write) -> std::io::Result<()> {
    page(
        out,
        "tracereplay report",
        "This report is drawn by a script; the same results are in the JSON report \
         (`tracereplay check --json FILE`).",
        &mut |w| write_data(report, ctx, w),
        &[CONVERSATION, CASES, SCRIPT],
    )?;
    report.results.readable()
}

/// The HTML report as a [`super::Exporter`].
pub struct HtmlExporter;

crate::report::export::exporter!(
    HtmlExporter for super::Report,
    "HTML report",
    Some("report.html"),
    |report, ctx, out| match ctx.html {
        Some(html) => render(report, html, out),
        None => render(report, &HtmlContext::of(report, ctx.limits), out),
    }
);

crate::report::export::exporter!(
    HtmlExporter for super::compare::RunComparison,
    "HTML comparison",
    None,
    |comparison, ctx, out| super::compare::html::render(
        comparison,
        &generated_at(ctx.time_unix_nano.unwrap_or_else(report_time_nanos)),
        out
    )
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_context_escapes() {
        let raw =
            serde_json::to_string(&json!({"case": "</script><!--\u{2028}\u{2029}&"})).unwrap();
        let safe = escape_for_script(&raw);
        assert!(!safe.contains("</script") && !safe.contains("<!--") && !safe.contains('\u{2028}'));
        let back: Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back["case"], "</script><!--\u{2028}\u{2029}&");
    }

    /// A character to escape that a write splits is escaped all the same; a partial character
    /// that never completes passes as it was.
    #[test]
    fn split_writes_are_escaped_as_whole_text() {
        let text = "a</script>\u{2028}b\u{2029}c&\u{e9}";
        let bytes = text.as_bytes();
        for cut in 0..=bytes.len() {
            let mut out = Vec::new();
            let mut safe = ScriptSafe::new(&mut out);
            safe.write_all(&bytes[..cut]).unwrap();
            safe.write_all(&bytes[cut..]).unwrap();
            safe.finish().unwrap();
            assert_eq!(
                String::from_utf8(out).unwrap(),
                "a\\u003c/script\\u003e\\u2028b\\u2029c\\u0026\u{e9}",
                "cut at {cut}"
            );
        }
        let mut out = Vec::new();
        let mut safe = ScriptSafe::new(&mut out);
        safe.write_all(&[b'x', 0xE2, 0x80]).unwrap();
        safe.finish().unwrap();
        assert_eq!(out, [b'x', 0xE2, 0x80]);
    }

    #[test]
    fn long_strings_fold_with_their_length() {
        let mut v = json!({"a": "x".repeat(1000), "b": ["short"]});
        fold(&mut v, FOLD_CHARS);
        assert!(v["a"].as_str().unwrap().ends_with("… (1000 characters)"));
        assert_eq!(v["b"][0], "short");
    }
}
