//! The typed shapes a trace line is first read into (borrowing from the buffer), and the
//! prompt-side check of fields the format defines only for other kinds.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::json::Str;
use super::model::Usage;
use super::seal::is_hash;

/// A field that is present, whatever its value (`null` is kept as the raw `null`).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// A JSON value's text as it stands in the line (validated as one value, without the whitespace
/// around it).
#[derive(Debug, Clone, Copy)]
pub(super) struct RawText<'a>(pub(super) &'a str);

impl<'de: 'a, 'a> Deserialize<'de> for RawText<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'de RawValue>::deserialize(d).map(|r| RawText(r.get()))
    }
}

#[derive(Deserialize)]
pub(super) struct RawHeader<'a> {
    #[serde(borrow)]
    pub(super) format: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) version: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(super) scenario: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) case: Option<Str<'a>>,
    /// Any value, `null` included (a `null` trial is malformed, not absent).
    #[serde(borrow, default, deserialize_with = "present")]
    pub(super) trial: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(super) runtime: Option<RawRuntime<'a>>,
    #[serde(borrow)]
    pub(super) model: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) privacy: Option<RawPrivacy<'a>>,
    #[serde(borrow)]
    pub(super) recorded_at: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) source: Option<Str<'a>>,
    pub(super) labels: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
pub(super) struct RawRuntime<'a> {
    #[serde(borrow)]
    pub(super) name: Str<'a>,
    #[serde(borrow)]
    pub(super) version: Option<Str<'a>>,
}

#[derive(Deserialize)]
pub(super) struct RawPrivacy<'a> {
    #[serde(borrow)]
    pub(super) prompts: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) hash: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) kid: Option<Str<'a>>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPrompt<'a> {
    #[serde(borrow)]
    pub(super) h: Str<'a>,
    pub(super) len: Option<u64>,
    #[serde(borrow)]
    pub(super) text: Option<RawText<'a>>,
}

#[derive(Deserialize, Debug)]
pub(super) struct RawOutput<'a> {
    #[serde(borrow)]
    pub(super) text: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) tool_calls: Option<Vec<RawPlanned<'a>>>,
}

#[derive(Deserialize, Debug)]
pub(super) struct RawPlanned<'a> {
    #[serde(borrow)]
    pub(super) call_id: Str<'a>,
    #[serde(borrow)]
    pub(super) tool: Str<'a>,
    #[serde(borrow)]
    pub(super) args: RawText<'a>,
}

/// Every field any known kind may carry, typed, twice: [`RawEvent`] refuses a key it does not
/// know (the fast path: a line holding only the format's fields is read once), and
/// [`RawEventAny`] skips such keys (a second read, for the lines that have them, once the
/// prompt side has been checked for text in them).
macro_rules! raw_events {
    ($($(#[$fm:meta])* $field:ident : $ty:ty,)*) => {
        /// An event line with only the fields the format defines.
        #[derive(Deserialize, Default, Debug)]
        #[serde(deny_unknown_fields)]
        pub(super) struct RawEvent<'a> { $($(#[$fm])* pub(super) $field: $ty,)* }

        /// An event line, fields the format does not define skipped.
        #[derive(Deserialize)]
        pub(super) struct RawEventAny<'a> { $($(#[$fm])* $field: $ty,)* }

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
    ts_sub_ns: Option<u32>,
    copied: Option<bool>,
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
    output: Option<RawText<'a>>,
    usage: Option<Usage>,
    #[serde(borrow)]
    finish: Option<Str<'a>>,
    latency_ms: Option<u64>,
    truncated: Option<bool>,
    llm_calls: Option<u32>,
    #[serde(borrow)]
    request_h: Option<RawText<'a>>,
    #[serde(borrow)]
    call_id: Option<Str<'a>>,
    #[serde(borrow)]
    tool: Option<Str<'a>>,
    #[serde(borrow)]
    args: Option<RawText<'a>>,
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
    from: Option<RawText<'a>>,
    #[serde(borrow)]
    to: Option<RawText<'a>>,
    #[serde(borrow)]
    message: Option<Str<'a>>,
    #[serde(borrow)]
    code: Option<RawText<'a>>,
    #[serde(borrow)]
    status: Option<Str<'a>>,
}

/// The first field of a prompt-side event (`user_message`, `inference`) that the format defines
/// only for other kinds and that holds text (a string that is not a prompt hash). Runs for every
/// such event, so the fields are checked directly, not looked up by name.
pub(super) fn foreign_text(kind: &str, raw: &RawEvent<'_>) -> Option<&'static str> {
    let text = |v: &Option<Str<'_>>| v.as_ref().is_some_and(|s| !is_hash(s, true));
    let raw_text = |v: &Option<RawText<'_>>| v.is_some_and(|r| r.0.contains('"'));
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
pub(super) struct Probe<'a> {
    #[serde(borrow)]
    pub(super) kind: Option<Str<'a>>,
    pub(super) seq: Option<u64>,
    pub(super) ts_ms: Option<i64>,
}
