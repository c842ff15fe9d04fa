//! The writer API: builds sealed, compressed traces with compact JSON in the spec's fixed key
//! order (`kind`, `seq`, `ts_ms`, then the fields in the spec's order), so the same run always
//! gives the same decompressed bytes and content hash.

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use super::json::{Json, Str};
use super::model::*;
use super::order::{BrokenOrder, EventOrder};
use super::seal::{content_hash, footer_line};
use crate::PromptHasher;

impl Serialize for Event<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("kind", self.body.kind())?;
        m.serialize_entry("seq", &self.seq)?;
        if let Some(ts) = self.ts_ms {
            m.serialize_entry("ts_ms", &ts)?;
        }
        if let Some(ns) = self.ts_sub_ns.filter(|ns| *ns > 0) {
            m.serialize_entry("ts_sub_ns", &ns)?;
        }
        if self.copied {
            m.serialize_entry("copied", &true)?;
        }
        fn opt<M: SerializeMap, T: Serialize>(
            m: &mut M,
            k: &str,
            v: &Option<T>,
        ) -> Result<(), M::Error> {
            match v {
                Some(v) => m.serialize_entry(k, v),
                None => Ok(()),
            }
        }
        // A `null` optional value reads back as absent, so it is written as absent: what is
        // written reads back to the same event, and writing that again gives the same bytes.
        fn opt_json<M: SerializeMap>(
            m: &mut M,
            k: &str,
            v: &Option<Json<'_>>,
        ) -> Result<(), M::Error> {
            match v {
                Some(v) if v.raw().trim() != "null" => m.serialize_entry(k, v),
                _ => Ok(()),
            }
        }
        match &self.body {
            EventBody::UserMessage { prompt, id } => {
                m.serialize_entry("prompt", prompt)?;
                opt(&mut m, "id", id)?;
            }
            EventBody::Inference(i) => {
                opt(&mut m, "request_id", &i.request_id)?;
                opt(&mut m, "model", &i.model)?;
                opt(&mut m, "input_h", &i.input_h)?;
                opt(&mut m, "system_h", &i.system_h)?;
                opt(&mut m, "tools_offered", &i.tools_offered)?;
                opt(&mut m, "consumes", &i.consumes)?;
                opt(&mut m, "output", &i.output)?;
                opt(&mut m, "usage", &i.usage)?;
                opt(&mut m, "finish", &i.finish)?;
                opt(&mut m, "latency_ms", &i.latency_ms)?;
                if i.truncated {
                    m.serialize_entry("truncated", &true)?;
                }
                opt(&mut m, "llm_calls", &i.llm_calls)?;
                if let Some(parts) = &i.request_h {
                    let map: std::collections::BTreeMap<&str, &str> = parts
                        .iter()
                        .map(|(k, v)| (k.as_ref(), v.as_ref()))
                        .collect();
                    m.serialize_entry("request_h", &map)?;
                }
            }
            EventBody::ToolCall {
                call_id,
                tool,
                args,
            } => {
                m.serialize_entry("call_id", call_id)?;
                m.serialize_entry("tool", tool)?;
                m.serialize_entry("args", args)?;
            }
            EventBody::ToolResult {
                call_id,
                ok,
                output,
                output_h,
                error,
            } => {
                m.serialize_entry("call_id", call_id)?;
                m.serialize_entry("ok", ok)?;
                opt_json(&mut m, "output", output)?;
                opt(&mut m, "output_h", output_h)?;
                opt(&mut m, "error", error)?;
            }
            EventBody::ApprovalRequest {
                tool,
                call_id,
                approval_id,
                reason,
            } => {
                opt(&mut m, "tool", tool)?;
                opt(&mut m, "call_id", call_id)?;
                opt(&mut m, "approval_id", approval_id)?;
                opt(&mut m, "reason", reason)?;
            }
            EventBody::ApprovalDecision {
                granted,
                approval_id,
                call_id,
                tool,
                by,
            } => {
                m.serialize_entry("granted", granted)?;
                opt(&mut m, "approval_id", approval_id)?;
                opt(&mut m, "call_id", call_id)?;
                opt(&mut m, "tool", tool)?;
                opt(&mut m, "by", by)?;
            }
            EventBody::Message {
                id,
                phase,
                text,
                reply_to,
                channel,
            } => {
                m.serialize_entry("id", id)?;
                m.serialize_entry("phase", phase)?;
                m.serialize_entry("text", text)?;
                opt(&mut m, "reply_to", reply_to)?;
                opt(&mut m, "channel", channel)?;
            }
            EventBody::MessageEdit { id, text, phase } => {
                m.serialize_entry("id", id)?;
                m.serialize_entry("text", text)?;
                opt(&mut m, "phase", phase)?;
            }
            EventBody::MessageDelete { id } => m.serialize_entry("id", id)?,
            EventBody::Artifact {
                path,
                h,
                bytes,
                text,
                mtime_ms,
            } => {
                m.serialize_entry("path", path)?;
                m.serialize_entry("h", h)?;
                m.serialize_entry("bytes", bytes)?;
                opt(&mut m, "text", text)?;
                opt(&mut m, "mtime_ms", mtime_ms)?;
            }
            EventBody::StateChange { path, from, to } => {
                m.serialize_entry("path", path)?;
                opt_json(&mut m, "from", from)?;
                opt_json(&mut m, "to", to)?;
            }
            EventBody::Error {
                message,
                code,
                input_h,
            } => {
                m.serialize_entry("message", message)?;
                opt_json(&mut m, "code", code)?;
                opt(&mut m, "input_h", input_h)?;
            }
            EventBody::Note { text } | EventBody::FinalAnswer { text } => {
                m.serialize_entry("text", text)?;
            }
            EventBody::RunEnd { status, error } => {
                m.serialize_entry("status", status)?;
                opt(&mut m, "error", error)?;
            }
            EventBody::Unknown { .. } => {}
        }
        m.end()
    }
}

impl Serialize for Args<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Args::Object(j) => j.serialize(s),
            Args::Text(t) => t.serialize(s),
        }
    }
}

impl Serialize for InferenceOutput<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        if let Some(t) = &self.text {
            m.serialize_entry("text", t)?;
        }
        if let Some(c) = &self.tool_calls {
            m.serialize_entry("tool_calls", c)?;
        }
        m.end()
    }
}

impl Serialize for PlannedCall<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("call_id", &self.call_id)?;
        m.serialize_entry("tool", &self.tool)?;
        m.serialize_entry("args", &self.args)?;
        m.end()
    }
}

/// Header line with the spec's key order.
#[derive(Serialize)]
struct HeaderLine<'h, 'a> {
    kind: &'static str,
    format: &'static str,
    version: u64,
    #[serde(flatten)]
    header: &'h Header<'a>,
}

/// A sealed trace built in memory.
#[derive(Debug, Clone)]
pub struct SealedTrace {
    /// The decompressed bytes, footer included.
    pub bytes: Vec<u8>,
    /// The content hash the footer carries.
    pub content_hash: String,
    /// Raw prompt text (`{"h","text"}` lines), only when the developer opted in.
    pub sidecar: Option<Vec<u8>>,
}

/// The zstd level traces are written at. Traces are mostly hashes and ids, which do not
/// compress, so levels differ little in size and much in time: on the 200 tau-bench runs
/// (2.8 MB decompressed) level 3 writes 686 KB, level 9 658 KB (4 % smaller), level 19 645 KB
/// (6 %), at several times the compression time; reading is as fast at every level. A trace is
/// written once and read on every check, so the level that writes fast and reads fast wins.
pub const ZSTD_LEVEL: i32 = 3;

impl SealedTrace {
    /// zstd-compressed bytes, ready to store as `NAME.trace.ndjson.zst`. Each thread keeps one
    /// compression context (making one per trace cost ingest 3 % of its time); the bytes are
    /// those `zstd::bulk::compress` gives.
    pub fn compress(&self) -> std::io::Result<Vec<u8>> {
        thread_local! {
            static COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
                const { std::cell::RefCell::new(None) };
        }
        COMPRESSOR.with(|c| {
            let mut c = c.borrow_mut();
            if c.is_none() {
                *c = Some(zstd::bulk::Compressor::new(ZSTD_LEVEL)?);
            }
            c.as_mut().expect("made above").compress(&self.bytes)
        })
    }

    /// Writes `path` (a `NAME.trace.ndjson.zst`) atomically, and the raw-prompt sidecar
    /// `NAME.prompts.ndjson` beside it when there is one, synced — through placement, so a
    /// trace holding a secret is refused like any other (no waiver); whatever stands at `path`
    /// is replaced.
    pub fn write(&self, path: &camino::Utf8Path) -> std::io::Result<()> {
        let dir = path.parent().filter(|d| !d.as_str().is_empty());
        let dir = crate::fsutil::Confined::new(dir.unwrap_or(".".into()));
        let how = crate::Placement {
            dir: &dir,
            raw_prompts: true,
            existing: crate::Existing::KeepSame { force: true },
            durable: true,
            limits: crate::Limits::default(),
            waived: &Default::default(),
        };
        // Kept or replaced by content: which run it is is never asked.
        let run = crate::RunName {
            scenario: "",
            case: "",
            trial: None,
        };
        match self
            .check(run, path.to_owned(), &how)
            .and_then(crate::Checked::write)
        {
            Ok(_) => Ok(()),
            Err(super::PlaceError::Io { source, .. }) => Err(source),
            Err(other) => Err(std::io::Error::other(other)),
        }
    }
}

/// Where the raw-prompt sidecar of the trace at `path` is written: `<case>.prompts.ndjson`
/// beside it.
pub fn sidecar_path(path: &camino::Utf8Path) -> camino::Utf8PathBuf {
    let name = path.file_name().unwrap_or("trace");
    let stem = name.strip_suffix(".trace.ndjson.zst").unwrap_or(name);
    path.with_file_name(format!("{stem}.prompts.ndjson"))
}

/// Builds a trace event by event, assigning increasing `seq` numbers.
///
/// ```
/// use tracereplay_trace::{TraceWriter, Header, EventBody, RunStatus};
/// let mut w = TraceWriter::new(Header::new("demo.scenario", "default"));
/// w.push(None, EventBody::RunEnd { status: RunStatus::Completed, error: None });
/// let sealed = w.finish()?;
/// assert!(sealed.content_hash.starts_with("b3:"));
/// # Ok::<(), tracereplay_trace::BrokenOrder>(())
/// ```
#[derive(Debug)]
pub struct TraceWriter {
    buf: Vec<u8>,
    /// The event order rules, as the reader keeps them.
    order: EventOrder,
    /// The first event that broke one: the trace is then not sealed.
    broken: Option<BrokenOrder>,
    events: u64,
    hasher: PromptHasher,
    sidecar: Option<Vec<u8>>,
}

impl TraceWriter {
    /// Starts a trace with its header line.
    pub fn new(header: Header<'_>) -> TraceWriter {
        let mut buf = Vec::with_capacity(4096);
        serde_json::to_writer(
            &mut buf,
            &HeaderLine {
                kind: "header",
                format: FORMAT_NAME,
                version: FORMAT_VERSION,
                header: &header,
            },
        )
        .expect("serialising a header into memory cannot fail");
        buf.push(b'\n');
        TraceWriter {
            buf,
            order: EventOrder::default(),
            broken: None,
            events: 0,
            hasher: PromptHasher::unkeyed(),
            sidecar: None,
        }
    }

    /// Starts a trace whose prompts are hashed with `hasher`. With `raw_opt_in` (the developer
    /// opt-in, never a default) the raw text also goes to a sidecar; the trace's bytes are the
    /// same either way, so opting in never changes a content hash or a baseline.
    pub fn with_prompts(
        mut header: Header<'_>,
        hasher: PromptHasher,
        raw_opt_in: bool,
    ) -> TraceWriter {
        header.privacy = Privacy {
            prompts: Str::from("hashed"),
            hash: Str::from(hasher.scheme()),
            kid: hasher.kid().map(Str::from),
        };
        let mut w = TraceWriter::new(header);
        w.hasher = hasher;
        w.sidecar = raw_opt_in.then(Vec::new);
        w
    }

    /// Hashes prompt text (user turn, system instructions, assembled input) for recording; the
    /// raw text reaches disk only in the opted-in sidecar.
    pub fn prompt(&mut self, text: &str) -> PromptRef<'static> {
        let p = self.hasher.prompt(text);
        if let Some(sidecar) = &mut self.sidecar {
            let line = serde_json::json!({"h": p.h.as_str(), "text": text});
            serde_json::to_writer(&mut *sidecar, &line)
                .expect("serialising into memory cannot fail");
            sidecar.push(b'\n');
        }
        p
    }

    /// Appends a `user_message` whose text is recorded only as a hash.
    pub fn user_message(&mut self, ts_ms: Option<i64>, id: Option<&str>, text: &str) -> u64 {
        let prompt = self.prompt(text);
        self.push(
            ts_ms,
            EventBody::UserMessage {
                prompt,
                id: id.map(Str::from),
            },
        )
    }

    /// Appends an event with the next `seq`, and returns that seq.
    pub fn push(&mut self, ts_ms: Option<i64>, body: EventBody<'_>) -> u64 {
        let seq = self.order.next_seq();
        self.push_event(&Event::new(seq, ts_ms, body));
        seq
    }

    /// Appends an event as given; a `seq` at or below the last one is raised to the next free
    /// value so the written trace stays well-formed. An event that breaks another order rule (a
    /// second `final_answer` or `run_end`, an edit of a message never sent) keeps the trace from
    /// being sealed: [`TraceWriter::finish`] names it.
    pub fn push_event(&mut self, event: &Event<'_>) {
        let seq = event.seq.max(self.order.next_seq());
        let mut e = event.clone();
        e.seq = seq;
        if let Err(rule) = self.order.seq(seq).and_then(|()| self.order.admit(&e.body)) {
            self.broken.get_or_insert(BrokenOrder { seq, rule });
        }
        serde_json::to_writer(&mut self.buf, &e)
            .expect("serialising an event into memory cannot fail");
        self.buf.push(b'\n');
        self.events += 1;
    }

    /// Appends the footer and returns the sealed bytes; the first event that broke an order rule
    /// instead, so that what is sealed always reads back.
    pub fn finish(mut self) -> Result<SealedTrace, BrokenOrder> {
        if let Some(broken) = self.broken {
            return Err(broken);
        }
        let content_hash = content_hash(&self.buf);
        self.buf
            .extend_from_slice(footer_line(self.events, &content_hash).as_bytes());
        Ok(SealedTrace {
            bytes: self.buf,
            content_hash,
            sidecar: self.sidecar,
        })
    }
}

impl<'a> Header<'a> {
    /// A header with the given scenario and case and default privacy (hashed prompts).
    pub fn new(scenario: impl Into<Str<'static>>, case: impl Into<Str<'static>>) -> Header<'a> {
        Header {
            scenario: scenario.into(),
            case: case.into(),
            trial: None,
            runtime: None,
            model: None,
            privacy: Privacy::default(),
            recorded_at: None,
            source: None,
            labels: Default::default(),
        }
    }
}

#[cfg(test)]
#[path = "write_tests.rs"]
mod tests;
