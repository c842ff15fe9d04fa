//! Parsing a verified trace body into the event model: one flat, borrowing deserializer per
//! line, then per-kind validation that names the line of every problem.

use camino::Utf8Path;
use serde::Deserialize;

use super::error::TraceError;
use super::json::Str;
use super::model::*;
use super::prompt_side;
use super::raw::*;
use super::read::{Limits, Seal, TraceFile};
use super::shape::{self, EVENT, HEADER, describe};
use super::trial::TrialId;

/// A parsed trace plus what the reader noticed without refusing it.
#[derive(Debug)]
pub struct ParsedTrace<'a> {
    /// The trace.
    pub trace: Trace<'a>,
    /// Warnings (unknown event kinds, reported once per trace).
    pub warnings: Vec<String>,
}

/// The (scenario, case) a trace's first line claims, read without validating the rest: used to
/// attribute a trace that could not be judged, so its approved baseline is not taken for obsolete.
pub fn probe_header(bytes: &[u8]) -> Option<(String, String)> {
    probe_run(bytes).map(|(scenario, case, _)| (scenario, case))
}

/// The run a trace's first line claims — scenario, case (`default` when absent) and trial (when
/// it is a valid one) — read without validating the rest.
pub fn probe_run(bytes: &[u8]) -> Option<(String, String, Option<TrialId>)> {
    #[derive(Deserialize)]
    struct Claim<'a> {
        kind: Option<String>,
        scenario: Option<String>,
        case: Option<String>,
        #[serde(borrow)]
        trial: Option<&'a serde_json::value::RawValue>,
    }
    let end = bytes
        .iter()
        .position(|&b| b == b'\n')
        .unwrap_or(bytes.len());
    let claim: Claim = serde_json::from_slice(&bytes[..end]).ok()?;
    if claim.kind.as_deref().and_then(normalize_kind) != Some("header") {
        return None;
    }
    let scenario = claim.scenario.filter(|s| !s.trim().is_empty())?;
    let case = claim.case.unwrap_or_else(|| "default".to_owned());
    let trial = claim.trial.and_then(|t| TrialId::from_json(t.get()).ok());
    Some((scenario, case, trial))
}

/// Parses the body of a trace whose seal was verified by [`TraceFile::verify_seal`]. Prompt-side
/// text in fields the format does not define is a privacy violation (see
/// [`parse_trace_with`]).
pub fn parse_trace<'a>(
    file: &'a TraceFile,
    seal: &Seal,
    limits: Limits,
) -> Result<ParsedTrace<'a>, TraceError> {
    parse_trace_with(file, seal, limits, false)
}

/// [`parse_trace`], where `raw_prompt_opt_in` (the developer's `--allow-raw-prompts`) admits
/// text in fields the format does not define on prompt-side events. Raw text inside a prompt
/// object, or a prompt that is text instead of a hash, is refused either way.
pub fn parse_trace_with<'a>(
    file: &'a TraceFile,
    seal: &Seal,
    limits: Limits,
    raw_prompt_opt_in: bool,
) -> Result<ParsedTrace<'a>, TraceError> {
    Parser {
        path: &file.path,
        compressed: file.compressed,
        limits,
        raw_prompt_opt_in,
    }
    .parse(&file.bytes[..seal.body_len], seal.sealed, seal.event_lines)
}

/// The fewest bytes an event line can take (`{"kind":"x","seq":1}` and its line end): no more
/// events than this allows are reserved for, whatever a footer claims.
const SHORTEST_EVENT_LINE: usize = 21;

pub(super) struct Parser<'p> {
    path: &'p Utf8Path,
    compressed: bool,
    limits: Limits,
    raw_prompt_opt_in: bool,
}

impl Parser<'_> {
    pub(super) fn malformed(&self, line: usize, detail: impl Into<String>) -> TraceError {
        TraceError::Malformed {
            path: self.path.to_owned(),
            line,
            detail: detail.into(),
        }
    }

    pub(super) fn privacy(&self, line: usize, detail: impl Into<String>) -> TraceError {
        TraceError::Privacy {
            path: self.path.to_owned(),
            line,
            detail: detail.into(),
            waivable: false,
        }
    }

    /// A violation the prompt-side rule found.
    fn violation(&self, line: usize, v: prompt_side::Violation) -> TraceError {
        TraceError::Privacy {
            path: self.path.to_owned(),
            line,
            detail: v.detail,
            waivable: v.waivable,
        }
    }

    /// The prompt-side rule ([`prompt_side`]) for line `n` of kind `kind`, a line holding keys
    /// the format does not define (or that failed to read).
    fn prompt_side(&self, n: usize, kind: &str, line: &str) -> Result<(), TraceError> {
        match prompt_side::check_value(kind, line) {
            Some(v) if !(v.waivable && self.raw_prompt_opt_in) => Err(self.violation(n, v)),
            _ => Ok(()),
        }
    }

    /// Parses `body`, expecting about `expected` events.
    fn parse<'a>(
        &self,
        body: &'a [u8],
        sealed: bool,
        expected: usize,
    ) -> Result<ParsedTrace<'a>, TraceError> {
        let text = std::str::from_utf8(body).map_err(|e| {
            let line = body[..e.valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1;
            self.malformed(line, "not valid UTF-8")
        })?;
        if text.starts_with('\u{feff}') {
            return Err(self.malformed(
                1,
                "starts with a byte-order mark, which traces must not have",
            ));
        }
        // `text.split('\n')`, with the line ends found by the vectorised `memchr`.
        let mut next_start = Some(0);
        let mut line_ends = memchr::memchr_iter(b'\n', text.as_bytes());
        let split = std::iter::from_fn(|| {
            let start = next_start?;
            Some(match line_ends.next() {
                Some(end) => {
                    next_start = Some(end + 1);
                    &text[start..end]
                }
                None => {
                    next_start = None;
                    &text[start..]
                }
            })
        });
        let mut lines = split.enumerate().map(|(i, l)| (i + 1, l)).peekable();
        let mut header = None;
        // The events are reserved for at once. Grown by doubling, the array of a trace of three
        // million small events (119 MB) held its old and new copies together: 1,080 MB at the
        // peak instead of 583, and 1.2-1.7 times as long. Should that much not be had, the array
        // grows as it fills.
        let mut events = Vec::new();
        let _ = events.try_reserve_exact(expected.min(body.len() / SHORTEST_EVENT_LINE));
        let mut state = Validation::default();
        while let Some((n, mut line)) = lines.next() {
            if line.is_empty() && lines.peek().is_none() {
                break; // the final `\n`
            }
            if line.len() as u64 > self.limits.max_line_bytes {
                return Err(TraceError::TooLarge {
                    path: self.path.to_owned(),
                    line: Some(n),
                    what: "the line",
                    limit: self.limits.max_line_bytes,
                    flag: "--max-line-bytes",
                });
            }
            if let Some(stripped) = line.strip_suffix('\r') {
                if self.compressed {
                    return Err(self.malformed(n, "carriage return before the line end (compressed traces use `\\n` line ends only)"));
                }
                line = stripped;
            }
            if line.trim().is_empty() {
                return Err(self.malformed(
                    n,
                    "blank line (traces have one JSON object per line and no blank lines)",
                ));
            }
            // Event lines are read by the trace's own reader first; what it leaves is read by
            // `serde_json`, as it always was. A line it read nests no deeper than it allows.
            // Each event line is read in place (the typed line is 920 bytes).
            let mut raw = RawEvent::default();
            let fast = n > 1 && crate::fast_line::read(line, &mut raw);
            if !fast && crate::json::nests_too_deep(line) {
                return Err(self.malformed(
                    n,
                    format!(
                        "values nest more than {} levels deep (objects and arrays); such a line is not read",
                        crate::json::MAX_NESTING
                    ),
                ));
            }
            if n == 1 {
                header = Some(self.header(line)?);
                continue;
            }
            if let Some(event) = self.event(n, line, &mut raw, fast, sealed, &mut state)? {
                events.push(event);
            }
        }
        let header = header.ok_or_else(|| self.malformed(1, "no header line"))?;
        let mut warnings = Vec::new();
        if !state.unknown_kinds.is_empty() {
            // Named by line, not by name: a kind is a value of the trace like any other.
            let lines: Vec<String> = (state.unknown_kinds.iter())
                .map(|(_, line)| line.to_string())
                .collect();
            warnings.push(format!(
                "`{}`: {} unknown event kind(s), first on line(s) {}, ignored by every oracle (`tracereplay cat` shows them)",
                self.path,
                lines.len(),
                lines.join(", ")
            ));
        }
        // Usage that cannot be: more tokens read from the cache than the request's input holds.
        // Pricing counts at most the input as cached; said, never silently clamped.
        let impossible: Vec<String> = (events.iter())
            .filter(|e| {
                matches!(&e.body, crate::EventBody::Inference(i)
                    if i.usage.is_some_and(|u| u.cache_read_tokens.is_some_and(|c| c > u.input_tokens)))
            })
            .map(|e| e.line.to_string())
            .collect();
        if !impossible.is_empty() {
            warnings.push(format!(
                "`{}`: {} inference(s) record more cache-read tokens than input tokens (line(s) {}): impossible usage, priced as if every input token were a cache read",
                self.path,
                impossible.len(),
                impossible.join(", ")
            ));
        }
        Ok(ParsedTrace {
            trace: Trace { header, events },
            warnings,
        })
    }

    fn header<'a>(&self, line: &'a str) -> Result<Header<'a>, TraceError> {
        // Check kind and version before the other fields, so a future major version is named
        // as such even when its header differs in shape.
        let probe: Probe = serde_json::from_str(line).map_err(|e| {
            self.malformed(
                1,
                format!("not a JSON object: {}", describe(line, &e, HEADER)),
            )
        })?;
        let kind = probe.kind.as_deref().and_then(normalize_kind);
        if kind != Some("header") {
            return Err(self.malformed(
                1,
                match probe.kind {
                    Some(_) => {
                        "the first line must be the header (kind `header`), found an event of another kind".to_owned()
                    }
                    None => {
                        "the first line must be the header (kind `header`) and has no `kind`".into()
                    }
                },
            ));
        }
        let raw: RawHeader = serde_json::from_str(line).map_err(|e| {
            self.malformed(1, format!("invalid header: {}", describe(line, &e, HEADER)))
        })?;
        match raw.version.map(|v| v.get()) {
            None => return Err(self.malformed(1, "header lacks `version`")),
            Some("1") => {}
            Some(v) if v.parse::<u64>().is_ok() => {
                return Err(TraceError::UnsupportedVersion {
                    path: self.path.to_owned(),
                    version: v.to_owned(),
                });
            }
            Some(v) => {
                let found = serde_json::from_str::<serde_json::Value>(v)
                    .map_or("something else", |v| shape::type_name(&v));
                return Err(self.malformed(
                    1,
                    format!("header `version` must be an integer, found {found}"),
                ));
            }
        }
        match raw.format.as_deref() {
            Some(FORMAT_NAME) => {}
            Some(_) => {
                return Err(self.malformed(1, format!("header `format` is not `{FORMAT_NAME}`")));
            }
            None => return Err(self.malformed(1, "header lacks `format`")),
        }
        let scenario = raw
            .scenario
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| self.malformed(1, "header lacks a non-empty `scenario`"))?;
        let case = match raw.case {
            Some(c) if c.trim().is_empty() => {
                return Err(self.malformed(1, "header `case` is blank"));
            }
            Some(c) => c,
            None => Str::from("default"),
        };
        let trial = match raw.trial {
            None => None,
            Some(t) => Some(crate::TrialId::from_json(t.get()).map_err(|e| self.malformed(1, e))?),
        };
        let privacy = match raw.privacy {
            None => Privacy::default(),
            Some(p) => {
                let prompts = p.prompts.unwrap_or_else(|| Str::from("hashed"));
                if !matches!(prompts.as_str(), "hashed" | "raw-sidecar") {
                    return Err(self.malformed(
                        1,
                        "header `privacy.prompts` is not `hashed` or `raw-sidecar`",
                    ));
                }
                let hash = p.hash.unwrap_or_else(|| Str::from("blake3"));
                if !matches!(hash.as_str(), "blake3" | "blake3-keyed") {
                    return Err(self
                        .malformed(1, "header `privacy.hash` is not `blake3` or `blake3-keyed`"));
                }
                Privacy {
                    prompts,
                    hash,
                    kid: p.kid,
                }
            }
        };
        Ok(Header {
            scenario,
            case,
            trial,
            runtime: raw.runtime.map(|r| Runtime {
                name: r.name,
                version: r.version,
            }),
            model: raw.model,
            privacy,
            recorded_at: raw.recorded_at,
            source: raw.source,
            labels: raw.labels.unwrap_or_default(),
        })
    }

    fn event<'a>(
        &self,
        n: usize,
        line: &'a str,
        raw: &mut RawEvent<'a>,
        read: bool,
        sealed: bool,
        state: &mut Validation,
    ) -> Result<Option<Event<'a>>, TraceError> {
        // The line as the trace's own reader read it, or else as `serde_json` reads it.
        let serde_read = if read {
            Ok(())
        } else {
            serde_json::from_str(line).map(|read| *raw = read)
        };
        match serde_read {
            Ok(()) => {}
            Err(e) => {
                // The read failed: a key the format does not define, or a problem. An
                // unknown kind is kept whatever its fields look like; a known kind is read again
                // without its unknown keys, once the prompt side has been checked for text in
                // them; what still fails is malformed.
                let probe: Probe = serde_json::from_str(line).map_err(|_| {
                    self.malformed(
                        n,
                        format!("not a valid JSON object: {}", describe(line, &e, EVENT)),
                    )
                })?;
                match probe.kind.as_deref().map(|k| (k, normalize_kind(k))) {
                    Some((written, None)) => {
                        if prompt_side::is_prompt_kind(written) {
                            self.prompt_side(n, written, line)?;
                        }
                        let seq = self.seq(n, probe.seq, state)?;
                        state.unknown(written, n);
                        return Ok(Some(Event {
                            line: n,
                            ..Event::new(
                                seq,
                                probe.ts_ms,
                                EventBody::Unknown {
                                    kind: written.to_owned(),
                                },
                            )
                        }));
                    }
                    Some((_, Some(kind))) => {
                        // Raw text where the prompt side has none is a privacy violation
                        // before it is a shape error.
                        if matches!(kind, "user_message" | "inference") {
                            self.prompt_side(n, kind, line)?;
                        }
                        match serde_json::from_str::<RawEventAny>(line) {
                            Ok(any) => *raw = any.into(),
                            Err(e) => return Err(self.malformed(n, describe(line, &e, EVENT))),
                        }
                    }
                    None => return Err(self.malformed(n, "event lacks `kind`")),
                }
            }
        }
        let Some(written) = raw.kind.as_deref() else {
            return Err(self.malformed(n, "event lacks `kind`"));
        };
        let kind = normalize_kind(written);
        match kind {
            Some("footer") => {
                return Err(TraceError::Integrity {
                    path: self.path.to_owned(),
                    detail: format!(
                        "a footer at line {n} is not the last line{}",
                        if sealed {
                            ""
                        } else {
                            " (data was appended after sealing?)"
                        }
                    ),
                });
            }
            Some("header") => return Err(self.malformed(n, "a second header")),
            _ => {}
        }
        let seq = self.seq(n, raw.seq, state)?;
        let ts_ms = raw.ts_ms;
        let ts_sub_ns = match raw.ts_sub_ns {
            Some(ns) if ns > 999_999 => {
                return Err(self.malformed(
                    n,
                    "`ts_sub_ns` must be below 1,000,000 (nanoseconds past `ts_ms`)",
                ));
            }
            ns => ns.filter(|ns| *ns > 0),
        };
        let copied = raw.copied == Some(true);
        let Some(kind) = kind else {
            if prompt_side::is_prompt_kind(written) {
                self.prompt_side(n, written, line)?;
            }
            state.unknown(written, n);
            return Ok(Some(Event {
                seq,
                ts_ms,
                ts_sub_ns,
                copied,
                line: n,
                body: EventBody::Unknown {
                    kind: written.to_owned(),
                },
            }));
        };
        // Fields the format defines, but for other kinds (`text` on a `user_message`): on the
        // prompt side, text there is taken for raw prompt text too.
        if matches!(kind, "user_message" | "inference") {
            if let Some(field) = foreign_text(kind, raw) {
                let v = prompt_side::violation(kind, field, true);
                if !self.raw_prompt_opt_in {
                    return Err(self.violation(n, v));
                }
            }
        }
        let body = self.body(n, kind, raw)?;
        (state.order.admit(&body)).map_err(|e| self.malformed(n, e.to_string()))?;
        Ok(Some(Event {
            seq,
            ts_ms,
            ts_sub_ns,
            copied,
            line: n,
            body,
        }))
    }

    fn seq(&self, n: usize, seq: Option<u64>, state: &mut Validation) -> Result<u64, TraceError> {
        let seq = seq.ok_or_else(|| self.malformed(n, "event lacks `seq`"))?;
        (state.order.seq(seq)).map_err(|e| self.malformed(n, e.to_string()))?;
        Ok(seq)
    }
}

#[derive(Default)]
pub(super) struct Validation {
    /// The event order rules, as the writer keeps them.
    pub(super) order: super::order::EventOrder,
    pub(super) unknown_kinds: Vec<(String, usize)>,
}

impl Validation {
    fn unknown(&mut self, kind: &str, line: usize) {
        if !self.unknown_kinds.iter().any(|(k, _)| k == kind) {
            self.unknown_kinds.push((kind.to_owned(), line));
        }
    }
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
