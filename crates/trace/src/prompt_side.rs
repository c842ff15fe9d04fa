//! The prompt side of a trace fails closed: on the events that carry what was sent to the model,
//! a string anywhere outside the fields the format defines there is taken for raw prompt text.
//!
//! Those events are `user_message`, `inference` (its input side: everything but the fields the
//! format defines, `output` among them) and events of kinds the format does not define whose
//! names say they carry a prompt ([`is_prompt_kind`]: `system`, `developer_message`, `prompt`…).
//! A string that has the form of a prompt hash (`b3:`/`b3k:` + 64 hex digits) is never text.
//!
//! Two grades:
//! - **always** a violation: raw text inside the prompt object of a `user_message` (a `text`
//!   field in any letter case, or any other string besides `h`), or a `prompt` that is a string
//!   instead of a hash object. The format has no room for raw text there.
//! - a violation **unless the developer opted in** (`--allow-raw-prompts`): a string in a field the
//!   format does not define on those events (`messages`, `input`, `system`, `"text"` on the event
//!   itself…), which a recorder may have added for its own reasons.

use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::json::Str;
use super::seal::is_hash;

/// Fields the format defines on a `user_message`.
const USER_MESSAGE: &[&str] = &["kind", "seq", "ts_ms", "id", "prompt"];
/// Fields the format defines on an `inference`.
const INFERENCE: &[&str] = &[
    "kind",
    "seq",
    "ts_ms",
    "request_id",
    "model",
    "input_h",
    "system_h",
    "tools_offered",
    "consumes",
    "output",
    "usage",
    "finish",
    "latency_ms",
    "request_h",
    "truncated",
];
/// Fields an event of any kind may carry without carrying text.
const ANY_EVENT: &[&str] = &["kind", "seq", "ts_ms"];

/// Names of kinds the format does not define that carry what was sent to the model, compared
/// after dropping case, `-` and `_`.
const PROMPT_KINDS: &[&str] = &[
    "system",
    "systemmessage",
    "systemprompt",
    "developer",
    "developermessage",
    "instructions",
    "prompt",
    "userprompt",
    "userinput",
    "input",
    "modelinput",
    "llminput",
    "modelrequest",
    "llmrequest",
];

/// Whether an event kind the format does not define carries a prompt, by its name.
pub(crate) fn is_prompt_kind(kind: &str) -> bool {
    PROMPT_KINDS.contains(&super::model::squash(kind).as_str())
}

/// A privacy violation found on one line: where, and whether the developer opt-in admits it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Violation {
    /// What is wrong, naming the key (never the text).
    pub detail: String,
    /// Whether `--allow-raw-prompts` admits it.
    pub waivable: bool,
}

/// Top-level keys of a line outside `allowed`, read without building values.
struct ExtraKeys<'a> {
    keys: Vec<Str<'a>>,
}

fn extra_keys<'a>(line: &'a str, allowed: &'static [&'static str]) -> Vec<Str<'a>> {
    struct V(&'static [&'static str]);
    impl<'de> Visitor<'de> for V {
        type Value = ExtraKeys<'de>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut keys = Vec::new();
            while let Some(k) = map.next_key::<Str<'de>>()? {
                map.next_value::<IgnoredAny>()?;
                if !self.0.contains(&k.as_str()) {
                    keys.push(k);
                }
            }
            Ok(ExtraKeys { keys })
        }
    }
    let mut de = serde_json::Deserializer::from_str(line);
    (&mut de)
        .deserialize_map(V(allowed))
        .map(|e| e.keys)
        .unwrap_or_default()
}

/// The path of the first string under `v` that is not a prompt hash, if any (`""` for `v`
/// itself).
fn text_in(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => (!is_hash(s, true)).then(String::new),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, x)| text_in(x).map(|p| format!("[{i}]{p}"))),
        Value::Object(m) => m
            .iter()
            .find_map(|(k, x)| text_in(x).map(|p| format!(".{}{p}", short_key(k)))),
        _ => None,
    }
}

/// A key as shown in a message: at most 40 characters (keys are chosen by whoever wrote the
/// trace, so they are shortened like any other of its strings).
fn short_key(k: &str) -> String {
    if k.chars().count() <= 40 {
        k.to_owned()
    } else {
        let head: String = k.chars().take(39).collect();
        format!("{head}…")
    }
}

pub(crate) fn violation(kind: &str, at: &str, waivable: bool) -> Violation {
    let detail = if waivable {
        format!(
            "`{kind}` carries text under `{at}`, a field the trace format does not define on the prompt side; what is sent to the model is recorded only as hashes"
        )
    } else {
        format!(
            "`{kind}` carries raw text under `{at}`; prompts are recorded only as hashes (raw text belongs in a `.prompts.ndjson` sidecar behind the developer opt-in)"
        )
    };
    Violation { detail, waivable }
}

/// Checks one line of a prompt-side event (`kind` as the format names it, or as written for a
/// kind it does not define). Cheap when the line holds only defined fields: its keys are read
/// without building values, and only a line with other keys (or a `user_message`, whose prompt
/// object is looked into) is parsed whole.
pub(crate) fn check(kind: &str, line: &str) -> Option<Violation> {
    let allowed = match kind {
        "user_message" => USER_MESSAGE,
        "inference" => INFERENCE,
        _ => ANY_EVENT,
    };
    let extra = extra_keys(line, allowed);
    if extra.is_empty() && kind != "user_message" {
        return None;
    }
    let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(line) else {
        return None; // not an object: the parser reports that
    };
    if kind == "user_message" {
        match obj.get("prompt") {
            Some(Value::String(s)) if !is_hash(s, true) => {
                return Some(violation(kind, "prompt", false));
            }
            Some(Value::Object(p)) => {
                for (k, v) in p {
                    let text = if k.eq_ignore_ascii_case("text") && !v.is_null() {
                        Some(String::new())
                    } else if k == "h" {
                        None
                    } else {
                        text_in(v)
                    };
                    if let Some(rest) = text {
                        return Some(violation(
                            kind,
                            &format!("prompt.{}{rest}", short_key(k)),
                            false,
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    extra.iter().find_map(|k| {
        let rest = text_in(obj.get(k.as_str())?)?;
        Some(violation(kind, &format!("{}{rest}", short_key(k)), true))
    })
}

/// For a `prompt` that is not an object: the violation, when it is a string (raw text where a
/// hash object belongs), else `None` (a shape error the parser reports).
pub(crate) fn prompt_not_an_object(v: &Value) -> Option<Violation> {
    match v {
        Value::String(s) if !is_hash(s, true) => Some(violation("user_message", "prompt", false)),
        _ => None,
    }
}

/// [`check`] for a line that failed the typed parse: also catches a `prompt` that is a string.
pub(crate) fn check_value(kind: &str, line: &str) -> Option<Violation> {
    #[derive(Deserialize)]
    struct PromptOnly {
        prompt: Option<Value>,
    }
    if kind == "user_message" {
        if let Ok(PromptOnly { prompt: Some(p) }) = serde_json::from_str(line) {
            if let Some(v) = prompt_not_an_object(&p) {
                return Some(v);
            }
        }
    }
    check(kind, line)
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: &str = "b3:0000000000000000000000000000000000000000000000000000000000000000";

    #[test]
    fn defined_fields_and_hashes_pass() {
        for (kind, line) in [
            (
                "user_message",
                format!(
                    r#"{{"kind":"user_message","seq":1,"id":"u1","prompt":{{"h":"{H}","len":3}}}}"#
                ),
            ),
            (
                "inference",
                format!(
                    r#"{{"kind":"inference","seq":2,"input_h":"{H}","model":"m","tools_offered":["a"],"output":{{"text":"model output is fine"}}}}"#
                ),
            ),
            (
                "inference",
                r#"{"kind":"inference","seq":2,"latency_ms":12,"cached":true}"#.to_owned(),
            ),
            (
                "system",
                format!(r#"{{"kind":"system","seq":3,"h":"{H}"}}"#),
            ),
        ] {
            assert_eq!(check(kind, &line), None, "{line}");
        }
    }

    #[test]
    fn strings_outside_the_defined_fields_are_violations_naming_the_key() {
        for (kind, line, at, waivable) in [
            (
                "user_message",
                r#"{"kind":"user_message","seq":1,"prompt":{"h":"x","Text":"SECRET"}}"#,
                "prompt.Text",
                false,
            ),
            (
                "user_message",
                r#"{"kind":"user_message","seq":1,"prompt":{"h":"x","raw":{"text":"SECRET"}}}"#,
                "prompt.raw.text",
                false,
            ),
            (
                "user_message",
                r#"{"kind":"user_message","seq":1,"prompt":{"h":"x"},"text":"SECRET"}"#,
                "text",
                true,
            ),
            (
                "inference",
                r#"{"kind":"inference","seq":1,"messages":[{"role":"user","content":"SECRET"}]}"#,
                "messages[0].content",
                true,
            ),
            (
                "system",
                r#"{"kind":"system","seq":1,"content":"SECRET"}"#,
                "content",
                true,
            ),
        ] {
            let v = check(kind, line).unwrap_or_else(|| panic!("{line}"));
            assert!(v.detail.contains(&format!("`{at}`")), "{}", v.detail);
            assert!(!v.detail.contains("SECRET"), "{}", v.detail);
            assert_eq!(v.waivable, waivable, "{line}");
        }
        let raw = check_value(
            "user_message",
            r#"{"kind":"user_message","seq":1,"prompt":"SECRET"}"#,
        )
        .unwrap();
        assert!(
            !raw.waivable && raw.detail.contains("`prompt`"),
            "{}",
            raw.detail
        );
    }

    #[test]
    fn prompt_kinds_by_name() {
        for k in ["system", "System_Message", "developer-message", "prompt"] {
            assert!(is_prompt_kind(k), "{k}");
        }
        for k in ["telemetry", "checkpoint", "tool_call"] {
            assert!(!is_prompt_kind(k), "{k}");
        }
    }
}
