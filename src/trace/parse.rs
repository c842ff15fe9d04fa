//! Parsing a verified trace body into the event model: one flat, borrowing deserializer per
//! line, then per-kind validation that names the line of every problem.

use std::collections::BTreeMap;

use foldhash::HashSet;

use camino::Utf8Path;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::error::TraceError;
use super::json::{Json, Str};
use super::model::*;
use super::prompt_side;
use super::read::{Limits, Seal, TraceFile};
use super::seal::is_hash;
use super::shape::{self, EVENT, HEADER, describe};

/// A parsed trace plus what the reader noticed without refusing it.
#[derive(Debug)]
pub struct ParsedTrace<'a> {
    /// The trace.
    pub trace: Trace<'a>,
    /// Warnings (unknown event kinds, reported once per trace).
    pub warnings: Vec<String>,
}

#[derive(Deserialize)]
struct RawHeader<'a> {
    #[serde(borrow)]
    format: Option<Str<'a>>,
    #[serde(borrow)]
    version: Option<&'a RawValue>,
    #[serde(borrow)]
    scenario: Option<Str<'a>>,
    #[serde(borrow)]
    case: Option<Str<'a>>,
    #[serde(borrow)]
    runtime: Option<RawRuntime<'a>>,
    #[serde(borrow)]
    model: Option<Str<'a>>,
    #[serde(borrow)]
    privacy: Option<RawPrivacy<'a>>,
    #[serde(borrow)]
    recorded_at: Option<Str<'a>>,
    #[serde(borrow)]
    source: Option<Str<'a>>,
    labels: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
struct RawRuntime<'a> {
    #[serde(borrow)]
    name: Str<'a>,
    #[serde(borrow)]
    version: Option<Str<'a>>,
}

#[derive(Deserialize)]
struct RawPrivacy<'a> {
    #[serde(borrow)]
    prompts: Option<Str<'a>>,
    #[serde(borrow)]
    hash: Option<Str<'a>>,
    #[serde(borrow)]
    kid: Option<Str<'a>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPrompt<'a> {
    #[serde(borrow)]
    h: Str<'a>,
    len: Option<u64>,
    #[serde(borrow)]
    text: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct RawOutput<'a> {
    #[serde(borrow)]
    text: Option<Str<'a>>,
    #[serde(borrow)]
    tool_calls: Option<Vec<RawPlanned<'a>>>,
}

#[derive(Deserialize)]
struct RawPlanned<'a> {
    #[serde(borrow)]
    call_id: Str<'a>,
    #[serde(borrow)]
    tool: Str<'a>,
    #[serde(borrow)]
    args: &'a RawValue,
}

/// Every field any known kind may carry, typed, twice: [`RawEvent`] refuses a key it does not
/// know (the fast path: a line holding only the format's fields is read once), and
/// [`RawEventAny`] skips such keys (a second read, for the lines that have them, once the
/// prompt side has been checked for text in them).
macro_rules! raw_events {
    ($($(#[$fm:meta])* $field:ident : $ty:ty,)*) => {
        /// An event line with only the fields the format defines.
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct RawEvent<'a> { $($(#[$fm])* $field: $ty,)* }

        /// An event line, fields the format does not define skipped.
        #[derive(Deserialize)]
        struct RawEventAny<'a> { $($(#[$fm])* $field: $ty,)* }

        impl<'a> From<RawEventAny<'a>> for RawEvent<'a> {
            fn from(r: RawEventAny<'a>) -> Self {
                RawEvent { $($field: r.$field,)* }
            }
        }
    };
}

raw_events! {
    #[serde(borrow)]
    kind: Option<Str<'a>>,
    seq: Option<u64>,
    ts_ms: Option<i64>,
    #[serde(borrow)]
    id: Option<Str<'a>>,
    #[serde(borrow)]
    prompt: Option<RawPrompt<'a>>,
    #[serde(borrow)]
    request_id: Option<Str<'a>>,
    #[serde(borrow)]
    model: Option<Str<'a>>,
    #[serde(borrow)]
    input_h: Option<Str<'a>>,
    #[serde(borrow)]
    system_h: Option<Str<'a>>,
    #[serde(borrow)]
    tools_offered: Option<Vec<Str<'a>>>,
    #[serde(borrow)]
    consumes: Option<Vec<Str<'a>>>,
    #[serde(borrow)]
    output: Option<&'a RawValue>,
    usage: Option<Usage>,
    #[serde(borrow)]
    finish: Option<Str<'a>>,
    #[serde(borrow)]
    call_id: Option<Str<'a>>,
    #[serde(borrow)]
    tool: Option<Str<'a>>,
    #[serde(borrow)]
    args: Option<&'a RawValue>,
    ok: Option<bool>,
    #[serde(borrow)]
    output_h: Option<Str<'a>>,
    #[serde(borrow)]
    error: Option<Str<'a>>,
    #[serde(borrow)]
    approval_id: Option<Str<'a>>,
    #[serde(borrow)]
    reason: Option<Str<'a>>,
    granted: Option<bool>,
    #[serde(borrow)]
    by: Option<Str<'a>>,
    #[serde(borrow)]
    phase: Option<Str<'a>>,
    #[serde(borrow)]
    text: Option<Str<'a>>,
    #[serde(borrow)]
    reply_to: Option<Str<'a>>,
    #[serde(borrow)]
    channel: Option<Str<'a>>,
    #[serde(borrow)]
    path: Option<Str<'a>>,
    #[serde(borrow)]
    h: Option<Str<'a>>,
    bytes: Option<u64>,
    mtime_ms: Option<i64>,
    #[serde(borrow)]
    from: Option<&'a RawValue>,
    #[serde(borrow)]
    to: Option<&'a RawValue>,
    #[serde(borrow)]
    message: Option<Str<'a>>,
    #[serde(borrow)]
    code: Option<&'a RawValue>,
    #[serde(borrow)]
    status: Option<Str<'a>>,
}

/// The first field of a prompt-side event (`user_message`, `inference`) that the format defines
/// only for other kinds and that holds text (a string that is not a prompt hash). Runs for every
/// such event, so the fields are checked directly, not looked up by name.
fn foreign_text(kind: &str, raw: &RawEvent<'_>) -> Option<&'static str> {
    let text = |v: &Option<Str<'_>>| v.as_ref().is_some_and(|s| !is_hash(s, true));
    let raw_text = |v: &Option<&RawValue>| v.is_some_and(|r| r.get().contains('"'));
    let list = |v: &Option<Vec<Str<'_>>>| v.as_ref().is_some_and(|l| !l.is_empty());
    // Fields no prompt-side kind defines.
    let common: [(&'static str, bool); 19] = [
        ("call_id", text(&raw.call_id)),
        ("tool", text(&raw.tool)),
        ("output_h", text(&raw.output_h)),
        ("error", text(&raw.error)),
        ("approval_id", text(&raw.approval_id)),
        ("reason", text(&raw.reason)),
        ("by", text(&raw.by)),
        ("phase", text(&raw.phase)),
        ("text", text(&raw.text)),
        ("reply_to", text(&raw.reply_to)),
        ("channel", text(&raw.channel)),
        ("path", text(&raw.path)),
        ("h", text(&raw.h)),
        ("message", text(&raw.message)),
        ("status", text(&raw.status)),
        ("args", raw_text(&raw.args)),
        ("code", raw_text(&raw.code)),
        ("from", raw_text(&raw.from)),
        ("to", raw_text(&raw.to)),
    ];
    let own: [(&'static str, bool); 9] = if kind == "user_message" {
        [
            ("request_id", text(&raw.request_id)),
            ("model", text(&raw.model)),
            ("input_h", text(&raw.input_h)),
            ("system_h", text(&raw.system_h)),
            ("finish", text(&raw.finish)),
            ("output", raw_text(&raw.output)),
            ("tools_offered", list(&raw.tools_offered)),
            ("consumes", list(&raw.consumes)),
            ("usage", false),
        ]
    } else {
        [
            ("id", text(&raw.id)),
            ("prompt", raw.prompt.is_some()),
            ("", false),
            ("", false),
            ("", false),
            ("", false),
            ("", false),
            ("", false),
            ("", false),
        ]
    };
    (common.iter().chain(&own))
        .find(|(_, found)| *found)
        .map(|(name, _)| *name)
}

/// Just enough of a line to tell its kind and seq, used when the full parse fails so that an
/// unknown kind with unusual fields is still kept rather than refused.
#[derive(Deserialize)]
struct Probe<'a> {
    #[serde(borrow)]
    kind: Option<Str<'a>>,
    seq: Option<u64>,
    ts_ms: Option<i64>,
}

/// The (scenario, case) a trace's first line claims, read without validating the rest: used to
/// attribute a trace that could not be judged, so its approved baseline is not taken for obsolete.
pub fn probe_header(bytes: &[u8]) -> Option<(String, String)> {
    #[derive(Deserialize)]
    struct Claim {
        kind: Option<String>,
        scenario: Option<String>,
        case: Option<String>,
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
    Some((scenario, claim.case.unwrap_or_else(|| "default".to_owned())))
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

struct Parser<'p> {
    path: &'p Utf8Path,
    compressed: bool,
    limits: Limits,
    raw_prompt_opt_in: bool,
}

impl Parser<'_> {
    fn malformed(&self, line: usize, detail: impl Into<String>) -> TraceError {
        TraceError::Malformed {
            path: self.path.to_owned(),
            line,
            detail: detail.into(),
        }
    }

    fn privacy(&self, line: usize, detail: impl Into<String>) -> TraceError {
        TraceError::Privacy {
            path: self.path.to_owned(),
            line,
            detail: detail.into(),
        }
    }

    /// The prompt-side rule ([`prompt_side`]) for line `n` of kind `kind`, a line holding keys
    /// the format does not define (or that failed to read).
    fn prompt_side(&self, n: usize, kind: &str, line: &str) -> Result<(), TraceError> {
        match prompt_side::check_value(kind, line) {
            Some(v) if !(v.waivable && self.raw_prompt_opt_in) => Err(self.privacy(n, v.detail)),
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
            if n == 1 {
                header = Some(self.header(line)?);
                continue;
            }
            if let Some(event) = self.event(n, line, sealed, &mut state)? {
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
        sealed: bool,
        state: &mut Validation,
    ) -> Result<Option<Event<'a>>, TraceError> {
        let raw: RawEvent = match serde_json::from_str(line) {
            Ok(raw) => raw,
            Err(e) => {
                // The fast read failed: a key the format does not define, or a problem. An
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
                            seq,
                            ts_ms: probe.ts_ms,
                            line: n,
                            body: EventBody::Unknown {
                                kind: written.to_owned(),
                            },
                        }));
                    }
                    Some((_, Some(kind))) => {
                        // Raw text where the prompt side has none is a privacy violation
                        // before it is a shape error.
                        if matches!(kind, "user_message" | "inference") {
                            self.prompt_side(n, kind, line)?;
                        }
                        match serde_json::from_str::<RawEventAny>(line) {
                            Ok(raw) => raw.into(),
                            Err(e) => return Err(self.malformed(n, describe(line, &e, EVENT))),
                        }
                    }
                    None => return Err(self.malformed(n, "event lacks `kind`")),
                }
            }
        };
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
        let Some(kind) = kind else {
            if prompt_side::is_prompt_kind(written) {
                self.prompt_side(n, written, line)?;
            }
            state.unknown(written, n);
            return Ok(Some(Event {
                seq,
                ts_ms,
                line: n,
                body: EventBody::Unknown {
                    kind: written.to_owned(),
                },
            }));
        };
        // Fields the format defines, but for other kinds (`text` on a `user_message`): on the
        // prompt side, text there is taken for raw prompt text too.
        if matches!(kind, "user_message" | "inference") {
            if let Some(field) = foreign_text(kind, &raw) {
                let v = prompt_side::violation(kind, field, true);
                if !self.raw_prompt_opt_in {
                    return Err(self.privacy(n, v.detail));
                }
            }
        }
        let body = self.body(n, kind, raw, state)?;
        Ok(Some(Event {
            seq,
            ts_ms,
            line: n,
            body,
        }))
    }

    fn seq(&self, n: usize, seq: Option<u64>, state: &mut Validation) -> Result<u64, TraceError> {
        let seq = seq.ok_or_else(|| self.malformed(n, "event lacks `seq`"))?;
        if let Some(prev) = state.last_seq {
            if seq <= prev {
                return Err(self.malformed(
                    n,
                    format!("`seq` {seq} does not increase (the previous event has seq {prev})"),
                ));
            }
        }
        state.last_seq = Some(seq);
        Ok(seq)
    }

    fn body<'a>(
        &self,
        n: usize,
        kind: &'static str,
        raw: RawEvent<'a>,
        state: &mut Validation,
    ) -> Result<EventBody<'a>, TraceError> {
        let need = |v: Option<Str<'a>>, field: &str| {
            v.ok_or_else(|| self.malformed(n, format!("`{kind}` lacks required field `{field}`")))
        };
        let need_bool = |v: Option<bool>, field: &str| {
            v.ok_or_else(|| self.malformed(n, format!("`{kind}` lacks required field `{field}`")))
        };
        let prompt_hash = |v: Option<Str<'a>>,
                           field: &str|
         -> Result<Option<Str<'a>>, TraceError> {
            match v {
                // Whatever else stands there may be the raw text itself.
                Some(h) if !is_hash(&h, true) => Err(self.privacy(
                    n,
                    format!("`{field}` is not a prompt hash (`b3:` or `b3k:` followed by 64 lowercase hex digits); prompts are recorded only as hashes"),
                )),
                other => Ok(other),
            }
        };
        Ok(match kind {
            "user_message" => {
                let p = raw.prompt.ok_or_else(|| {
                    self.malformed(n, "`user_message` lacks required field `prompt`")
                })?;
                if p.text.is_some() {
                    return Err(self.privacy(n, "a prompt object carries a `text` field; prompts are recorded only as hashes (raw text belongs in a `.prompts.ndjson` sidecar behind the developer opt-in)"));
                }
                let h = prompt_hash(Some(p.h), "prompt.h")?.unwrap_or_default();
                EventBody::UserMessage {
                    prompt: PromptRef { h, len: p.len },
                    id: raw.id,
                }
            }
            "inference" => {
                let output = match raw.output {
                    None => None,
                    Some(o) => {
                        let o: RawOutput = serde_json::from_str(o.get()).map_err(|e| {
                            let what = describe(o.get(), &e, shape::OUTPUT);
                            self.malformed(n, format!("`inference.output`: {what}"))
                        })?;
                        let tool_calls = match o.tool_calls {
                            None => None,
                            Some(calls) => Some(
                                calls
                                    .into_iter()
                                    .map(|c| {
                                        Ok(PlannedCall {
                                            args: self.args(n, c.args)?,
                                            call_id: c.call_id,
                                            tool: c.tool,
                                        })
                                    })
                                    .collect::<Result<Vec<_>, TraceError>>()?,
                            ),
                        };
                        Some(InferenceOutput {
                            text: o.text,
                            tool_calls,
                        })
                    }
                };
                let finish = match raw.finish {
                    None => None,
                    Some(f) => Some(
                        Finish::parse(&f)
                            .ok_or_else(|| self.bad_enum(n, "finish", &f, Finish::ALL))?,
                    ),
                };
                EventBody::Inference(Box::new(Inference {
                    request_id: raw.request_id,
                    model: raw.model,
                    input_h: prompt_hash(raw.input_h, "input_h")?,
                    system_h: prompt_hash(raw.system_h, "system_h")?,
                    tools_offered: raw.tools_offered,
                    consumes: raw.consumes,
                    output,
                    usage: raw.usage,
                    finish,
                }))
            }
            "tool_call" => {
                let args = raw
                    .args
                    .ok_or_else(|| self.malformed(n, "`tool_call` lacks required field `args`"))?;
                EventBody::ToolCall {
                    call_id: need(raw.call_id, "call_id")?,
                    tool: need(raw.tool, "tool")?,
                    args: self.args(n, args)?,
                }
            }
            "tool_result" => EventBody::ToolResult {
                call_id: need(raw.call_id, "call_id")?,
                ok: need_bool(raw.ok, "ok")?,
                output: raw.output.map(Json::Borrowed),
                output_h: raw.output_h,
                error: raw.error,
            },
            "approval_request" => EventBody::ApprovalRequest {
                tool: raw.tool,
                call_id: raw.call_id,
                approval_id: raw.approval_id,
                reason: raw.reason,
            },
            "approval_decision" => EventBody::ApprovalDecision {
                granted: need_bool(raw.granted, "granted")?,
                approval_id: raw.approval_id,
                call_id: raw.call_id,
                tool: raw.tool,
                by: raw.by,
            },
            "message" => {
                let id = need(raw.id, "id")?;
                let phase = self.phase(n, need(raw.phase, "phase")?)?;
                state.message_ids.insert(id.to_string());
                EventBody::Message {
                    id,
                    phase,
                    text: need(raw.text, "text")?,
                    reply_to: raw.reply_to,
                    channel: raw.channel,
                }
            }
            "message_edit" | "message_delete" => {
                let id = need(raw.id, "id")?;
                if !state.message_ids.contains(id.as_str()) {
                    return Err(self.malformed(
                        n,
                        format!("`{kind}` names a message id that no earlier `message` sent"),
                    ));
                }
                if kind == "message_delete" {
                    EventBody::MessageDelete { id }
                } else {
                    EventBody::MessageEdit {
                        id,
                        text: need(raw.text, "text")?,
                        phase: raw.phase.map(|p| self.phase(n, p)).transpose()?,
                    }
                }
            }
            "artifact" => EventBody::Artifact {
                path: need(raw.path, "path")?,
                h: need(raw.h, "h")?,
                bytes: raw
                    .bytes
                    .ok_or_else(|| self.malformed(n, "`artifact` lacks required field `bytes`"))?,
                text: raw.text,
                mtime_ms: raw.mtime_ms,
            },
            "state_change" => EventBody::StateChange {
                path: need(raw.path, "path")?,
                from: raw.from.map(Json::Borrowed),
                to: raw.to.map(Json::Borrowed),
            },
            "error" => EventBody::Error {
                message: need(raw.message, "message")?,
                code: raw.code.map(Json::Borrowed),
            },
            "note" => EventBody::Note {
                text: need(raw.text, "text")?,
            },
            "final_answer" => {
                if std::mem::replace(&mut state.final_answer, true) {
                    return Err(
                        self.malformed(n, "a second `final_answer` (a trace has at most one)")
                    );
                }
                EventBody::FinalAnswer {
                    text: need(raw.text, "text")?,
                }
            }
            "run_end" => {
                if std::mem::replace(&mut state.run_end, true) {
                    return Err(self.malformed(n, "a second `run_end` (a trace has at most one)"));
                }
                let status = need(raw.status, "status")?;
                EventBody::RunEnd {
                    status: RunStatus::parse(&status)
                        .ok_or_else(|| self.bad_enum(n, "status", &status, RunStatus::ALL))?,
                    error: raw.error,
                }
            }
            other => unreachable!("normalize_kind returned unhandled kind {other}"),
        })
    }

    fn phase(&self, n: usize, p: Str<'_>) -> Result<Phase, TraceError> {
        Phase::parse(&p).ok_or_else(|| self.bad_enum(n, "phase", &p, Phase::ALL))
    }

    /// An enum field whose value is not one of `allowed` (the value itself is not quoted).
    fn bad_enum(&self, n: usize, field: &str, value: &str, allowed: &[&str]) -> TraceError {
        self.malformed(
            n,
            format!(
                "`{field}` is not one of: {} (found a string of {} characters)",
                allowed.join(", "),
                value.chars().count()
            ),
        )
    }

    /// `args`: a JSON object; a string holding a JSON object is parsed; any other string is kept.
    fn args<'a>(&self, n: usize, raw: &'a RawValue) -> Result<Args<'a>, TraceError> {
        let text = raw.get();
        match text.as_bytes().first() {
            Some(b'{') => Ok(Args::Object(Json::Borrowed(raw))),
            Some(b'"') => {
                let s: Str<'a> = serde_json::from_str(text).map_err(|e| {
                    self.malformed(n, format!("`args`: {}", describe(text, &e, &[])))
                })?;
                let trimmed = s.trim_start();
                if trimmed.starts_with('{') {
                    if let Ok(obj) = serde_json::from_str::<Box<RawValue>>(&s) {
                        return Ok(Args::Object(Json::Owned(obj)));
                    }
                }
                Ok(Args::Text(s))
            }
            _ => Err(self.malformed(n, "`args` must be a JSON object or a string")),
        }
    }
}

#[derive(Default)]
struct Validation {
    last_seq: Option<u64>,
    final_answer: bool,
    run_end: bool,
    message_ids: HashSet<String>,
    unknown_kinds: Vec<(String, usize)>,
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
