//! The baseline layout: sorted keys at two spaces per level, an array of scalars on one line
//! (`[1, 2, 3]`, so a long list of numbers costs a line, not a line per element), a nested one
//! a line per item, empty ones as `{}` and `[]`, and keys, strings and numbers as compact JSON
//! writes them. [`pretty`] writes any JSON value so (a trial set's file); a baseline file is
//! written straight from its types ([`baseline_text`]), without building the
//! `serde_json::Value` of the whole file first: approve writes 20,000 of them.
//!
//! Each type's keys are written in sorted order by hand, and each type is taken apart whole
//! (`let CallRecord { .. } = self`, no `..`), so a field added to a type fails to compile here
//! until it is written. A test holds the text equal to the `Value` path's for every field
//! present and absent.

use std::collections::BTreeMap;

use super::behaviour::{
    ApprovalRecord, ArtifactRecord, Behaviour, CallRecord, MessageRecord, UsageRecord,
};
use super::store::BaselineFile;

/// The members of one JSON object being written: each member's key and value at `indent + 1`.
struct Object<'o> {
    out: &'o mut Vec<u8>,
    indent: usize,
    first: bool,
}

impl<'o> Object<'o> {
    /// Opens an object whose members will be written (there is at least one).
    fn open(out: &'o mut Vec<u8>, indent: usize) -> Object<'o> {
        out.push(b'{');
        Object {
            out,
            indent,
            first: true,
        }
    }

    /// Starts the member `key` (keys must come in sorted order); the caller writes its value.
    fn key(&mut self, key: &str) -> &mut Vec<u8> {
        self.out
            .extend_from_slice(if self.first { b"\n" } else { b",\n" });
        self.first = false;
        pad(self.indent + 1, self.out);
        compact(key, self.out);
        self.out.extend_from_slice(b": ");
        self.out
    }

    /// A member whose value is a scalar (or anything written compactly).
    fn scalar<T: serde::Serialize + ?Sized>(&mut self, key: &str, value: &T) {
        compact(value, self.key(key));
    }

    /// Closes the object.
    fn close(self) {
        self.out.push(b'\n');
        pad(self.indent, self.out);
        self.out.push(b'}');
    }
}

fn pad(n: usize, out: &mut Vec<u8>) {
    out.resize(out.len() + 2 * n, b' ');
}

/// `v` as compact JSON, appended to `out`.
fn compact<T: serde::Serialize + ?Sized>(v: &T, out: &mut Vec<u8>) {
    serde_json::to_writer(&mut *out, v).expect("JSON is written into memory");
}

/// Writes `v` in the baseline layout at `indent` levels of two spaces, straight into `out`.
pub(crate) fn pretty(v: &serde_json::Value, indent: usize, out: &mut Vec<u8>) {
    use serde_json::Value;
    match v {
        Value::Object(m) if !m.is_empty() => {
            // A `serde_json::Value` map iterates its keys sorted.
            let mut o = Object::open(out, indent);
            for (k, x) in m {
                pretty(x, indent + 1, o.key(k));
            }
            o.close();
        }
        Value::Array(items) if items.iter().any(|x| x.is_array() || x.is_object()) => {
            lines(items, indent, out, pretty)
        }
        Value::Array(items) => inline(items, out),
        scalar => compact(scalar, out),
    }
}

/// [`pretty`] text of `v` at indent 0, with a final newline.
pub(crate) fn pretty_text(v: &serde_json::Value) -> String {
    let mut out = Vec::new();
    pretty(v, 0, &mut out);
    out.push(b'\n');
    String::from_utf8(out).expect("JSON is UTF-8")
}

/// An array a line per item (each written by `item` at `indent + 1`); `[]` when empty.
fn lines<T>(items: &[T], indent: usize, out: &mut Vec<u8>, item: impl Fn(&T, usize, &mut Vec<u8>)) {
    if items.is_empty() {
        out.extend_from_slice(b"[]");
        return;
    }
    out.extend_from_slice(b"[\n");
    for (i, x) in items.iter().enumerate() {
        pad(indent + 1, out);
        item(x, indent + 1, out);
        out.extend_from_slice(if i + 1 < items.len() { b",\n" } else { b"\n" });
    }
    pad(indent, out);
    out.push(b']');
}

/// An array of scalars on one line.
fn inline<T: serde::Serialize>(items: &[T], out: &mut Vec<u8>) {
    out.push(b'[');
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        compact(x, out);
    }
    out.push(b']');
}

/// A map of strings: `{}` when empty, else one member a line (a `BTreeMap` iterates sorted).
fn strings(map: &BTreeMap<String, String>, indent: usize, out: &mut Vec<u8>) {
    if map.is_empty() {
        out.extend_from_slice(b"{}");
        return;
    }
    let mut o = Object::open(out, indent);
    for (k, v) in map {
        o.scalar(k, v);
    }
    o.close();
}

/// The text of a baseline file, ending in a newline.
pub(super) fn baseline_text(file: &BaselineFile) -> String {
    let BaselineFile {
        format,
        version,
        scenario,
        case,
        content_hash,
        tool_version,
        behaviour,
    } = file;
    let mut out = Vec::with_capacity(4096);
    let mut o = Object::open(&mut out, 0);
    behaviour_value(behaviour, 1, o.key("behaviour"));
    o.scalar("case", case);
    o.scalar("content_hash", content_hash);
    o.scalar("format", format);
    o.scalar("scenario", scenario);
    o.scalar("tool_version", tool_version);
    o.scalar("version", version);
    o.close();
    out.push(b'\n');
    String::from_utf8(out).expect("JSON is UTF-8")
}

fn behaviour_value(b: &Behaviour, indent: usize, out: &mut Vec<u8>) {
    let Behaviour {
        tool_calls,
        approvals,
        messages,
        final_answer,
        status,
        artifacts,
        usage,
        oracles,
    } = b;
    let mut o = Object::open(out, indent);
    lines(approvals, indent + 1, o.key("approvals"), approval);
    lines(artifacts, indent + 1, o.key("artifacts"), artifact);
    o.scalar("final_answer", final_answer);
    lines(messages, indent + 1, o.key("messages"), message);
    strings(oracles, indent + 1, o.key("oracles"));
    o.scalar("status", status);
    lines(tool_calls, indent + 1, o.key("tool_calls"), call);
    usage_value(usage, indent + 1, o.key("usage"));
    o.close();
}

fn call(c: &CallRecord, indent: usize, out: &mut Vec<u8>) {
    let CallRecord {
        tool,
        args,
        call,
        ok,
        error,
        result,
        result_text,
    } = c;
    let mut o = Object::open(out, indent);
    pretty(args, indent + 1, o.key("args"));
    o.scalar("call", call);
    o.scalar("error", error);
    o.scalar("ok", ok);
    if let Some(result) = result {
        o.scalar("result", result);
    }
    if let Some(text) = result_text {
        o.scalar("result_text", text);
    }
    o.scalar("tool", tool);
    o.close();
}

fn approval(a: &ApprovalRecord, indent: usize, out: &mut Vec<u8>) {
    let ApprovalRecord {
        tool,
        call,
        requested,
        decisions,
    } = a;
    let mut o = Object::open(out, indent);
    o.scalar("call", call);
    inline(decisions, o.key("decisions"));
    o.scalar("requested", requested);
    o.scalar("tool", tool);
    o.close();
}

fn message(m: &MessageRecord, indent: usize, out: &mut Vec<u8>) {
    let MessageRecord { phase, text } = m;
    let mut o = Object::open(out, indent);
    o.scalar("phase", phase);
    o.scalar("text", text);
    o.close();
}

fn artifact(a: &ArtifactRecord, indent: usize, out: &mut Vec<u8>) {
    let ArtifactRecord { path, h } = a;
    let mut o = Object::open(out, indent);
    o.scalar("h", h);
    o.scalar("path", path);
    o.close();
}

fn usage_value(u: &UsageRecord, indent: usize, out: &mut Vec<u8>) {
    let UsageRecord {
        input_tokens,
        output_tokens,
        requests,
        cost_usd,
    } = u;
    let mut o = Object::open(out, indent);
    if let Some(cost) = cost_usd {
        o.scalar("cost_usd", cost);
    }
    o.scalar("input_tokens", input_tokens);
    o.scalar("output_tokens", output_tokens);
    o.scalar("requests", requests);
    o.close();
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
