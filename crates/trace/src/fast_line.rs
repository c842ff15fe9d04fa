//! A reader of event lines in the trace's own shape, in front of `serde_json`.
//!
//! `serde_json` reads a line through its general deserializer, which scans every string eight
//! bytes at a time for a quote, a backslash or a control character, and reads the line into a
//! typed struct that is then moved about. This reader knows the event's fields. It first makes
//! sure the line holds no control character at all (one pass that the compiler vectorises), so
//! that a string then ends at the first quote or backslash, found eight bytes at a time;
//! numbers, literals and nested values are read by the JSON grammar, nested values kept as their
//! text (as `RawValue` keeps them), and the typed line is filled in place. The values the format
//! reads into parts — an inference's `output`, a `prompt`, a `usage` — are read the same way.
//!
//! It reads only what it is sure of. Whatever it might not read as `serde_json` does — a key the
//! format does not define, a key twice, an escape in a key, a `\u` escape in a string it decodes,
//! a number out of its field's range or written as a float, whitespace other than spaces,
//! nesting past [`MAX_DEPTH`], any control character, anything malformed — it leaves to
//! `serde_json`: [`read`] gives `false` ([`output`] `None`), and the caller reads the line as
//! before, to the same result or the same error. On every line it does read, its result is
//! `serde_json`'s: the tests hold it to that on every event line of the demo suite, on lines of
//! every field, and on 90,000 seeded mutations of them.

use std::borrow::Cow;

use memchr::memchr;

use super::json::Str;
use super::model::Usage;
use super::raw::{RawEvent, RawOutput, RawPlanned, RawPrompt, RawText};

/// Lines nesting deeper than this are left to `serde_json`. Below its own limit (128, as
/// [`crate::json::MAX_NESTING`]), so a line this reader reads never nests too deep.
pub(super) const MAX_DEPTH: usize = 64;

/// Reads `line` (one event line, without its line end) into `event` as
/// `serde_json::from_str::<RawEvent>` would, or gives `false` when it is left to `serde_json`
/// (`event` then holds part of the line, and is to be read again). `event` starts empty, as
/// [`RawEvent::default`]: it is filled in place, not moved (it is 920 bytes).
pub(super) fn read<'a>(line: &'a str, event: &mut RawEvent<'a>) -> bool {
    if has_control(line.as_bytes()) {
        return false;
    }
    let mut r = Reader { text: line, pos: 0 };
    if r.event(event).is_none() {
        return false;
    }
    r.ws();
    r.pos == line.len()
}

/// An inference's `output` (its text as the event's line holds it, checked) read as
/// `serde_json::from_str::<RawOutput>` would, or `None` when it is left to `serde_json`.
pub(super) fn output(text: &str) -> Option<RawOutput<'_>> {
    if has_control(text.as_bytes()) {
        return None;
    }
    let mut r = Reader { text, pos: 0 };
    let (mut said, mut calls) = (None, None);
    r.object(|r, key| {
        Some(match key {
            "text" => {
                said = r.opt(Reader::str)?;
                1
            }
            "tool_calls" => {
                calls = r.opt(Reader::planned_calls)?;
                2
            }
            _ => {
                r.value(1)?;
                0
            }
        })
    })?;
    r.ws();
    (r.pos == text.len()).then_some(RawOutput {
        text: said,
        tool_calls: calls,
    })
}

/// Whether `bytes` hold a byte below 0x20 (JSON allows none inside strings, and only tab, line
/// feed and carriage return outside them). The minimum of every byte, which compiles to vector
/// instructions: a line with one is rare, so no early exit is worth its branch.
fn has_control(bytes: &[u8]) -> bool {
    bytes.iter().fold(u8::MAX, |m, &b| m.min(b)) < 0x20
}

/// Reads the fields of an event; each gives the bit that marks it read (a key twice is left
/// to `serde_json`, which refuses it).
macro_rules! fields {
    ($r:ident, $key:ident, $ev:ident; $($bit:literal $name:ident: $read:ident,)*) => {
        match $key {
            $(stringify!($name) => {
                $ev.$name = $r.opt(Self::$read)?;
                Some(1u64 << $bit)
            })*
            _ => None,
        }
    };
}

struct Reader<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Reader<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.pos).copied()
    }

    /// Spaces: the only whitespace left once control characters are ruled out.
    fn ws(&mut self) {
        while self.peek() == Some(b' ') {
            self.pos += 1;
        }
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        self.ws();
        (self.peek() == Some(b)).then(|| self.pos += 1)
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        let hit = self.bytes()[self.pos..].starts_with(word);
        if hit {
            self.pos += word.len();
        }
        hit
    }

    /// After an element of an object or array: `true` at a comma, `false` at `close`.
    fn next_or(&mut self, close: u8) -> Option<bool> {
        self.ws();
        let more = match self.peek()? {
            b',' => true,
            b if b == close => false,
            _ => return None,
        };
        self.pos += 1;
        Some(more)
    }

    /// `null` for an optional field, else the field read by `read`.
    fn opt<T>(&mut self, read: fn(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.literal(b"null") {
            return Some(None);
        }
        read(self).map(Some)
    }

    fn event(&mut self, ev: &mut RawEvent<'a>) -> Option<()> {
        self.object(|r, key| r.field(key, ev))
    }

    fn field(&mut self, key: &str, ev: &mut RawEvent<'a>) -> Option<u64> {
        fields! { self, key, ev;
            0 kind: str, 1 seq: u64, 2 ts_ms: i64, 3 ts_sub_ns: u32, 4 copied: bool,
            5 id: str, 6 prompt: prompt, 7 request_id: str, 8 model: str, 9 input_h: str,
            10 system_h: str, 11 tools_offered: strs, 12 consumes: strs, 13 output: raw,
            14 usage: usage, 15 finish: str, 16 latency_ms: u64, 17 truncated: bool,
            18 llm_calls: u32, 19 request_h: raw, 20 call_id: str, 21 tool: str, 22 args: raw,
            23 ok: bool, 24 output_h: str, 25 error: str, 26 approval_id: str, 27 reason: str,
            28 granted: bool, 29 by: str, 30 phase: str, 31 text: str, 32 reply_to: str,
            33 channel: str, 34 path: str, 35 h: str, 36 bytes: u64, 37 mtime_ms: i64,
            38 from: raw, 39 to: raw, 40 message: str, 41 code: raw, 42 status: str,
        }
    }

    /// At an opening quote: an object's key, which is short and has no escape (a key with one,
    /// or longer than any the format defines, is left to `serde_json`).
    fn key(&mut self) -> Option<&'a str> {
        if self.peek() != Some(b'"') {
            return None;
        }
        let start = self.pos + 1;
        let near = &self.bytes()[start..self.bytes().len().min(start + 24)];
        let len = quote_or_backslash(near)?;
        if near[len] != b'"' {
            return None;
        }
        self.pos = start + len + 1;
        Some(&self.text[start..start + len])
    }

    /// At an opening quote: the text between the quotes, and whether it holds an escape (each
    /// checked to be one JSON has).
    fn string(&mut self) -> Option<(&'a str, bool)> {
        if self.peek() != Some(b'"') {
            return None;
        }
        let bytes = self.bytes();
        let start = self.pos + 1;
        let (mut at, mut escaped) = (start, false);
        loop {
            at += quote_or_backslash(&bytes[at..])?;
            if bytes[at] == b'"' {
                self.pos = at + 1;
                // Both ends are quotes, so both are character boundaries.
                return Some((&self.text[start..at], escaped));
            }
            escaped = true;
            at += match bytes.get(at + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => 2,
                b'u' if bytes.get(at + 2..at + 6)?.iter().all(u8::is_ascii_hexdigit) => 6,
                _ => return None,
            };
        }
    }

    /// A string, decoded. One with a `\u` escape is left to `serde_json` (surrogate pairs).
    fn str(&mut self) -> Option<Str<'a>> {
        let (text, escaped) = self.string()?;
        if !escaped {
            return Some(Str(Cow::Borrowed(text)));
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(i) = memchr(b'\\', rest.as_bytes()) {
            out.push_str(&rest[..i]);
            out.push(match rest.as_bytes()[i + 1] {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                _ => return None,
            });
            rest = &rest[i + 2..];
        }
        out.push_str(rest);
        Some(Str(Cow::Owned(out)))
    }

    fn strs(&mut self) -> Option<Vec<Str<'a>>> {
        self.array(Self::str)
    }

    /// An array, each element read by `item`.
    fn array<T>(&mut self, mut item: impl FnMut(&mut Self) -> Option<T>) -> Option<Vec<T>> {
        self.eat(b'[')?;
        self.ws();
        // Room for a few elements at once (an array this format holds is short, and growing
        // from empty costs more than the allocation); none for an empty one.
        let mut out = if self.peek() == Some(b']') {
            Vec::new()
        } else {
            Vec::with_capacity(4)
        };
        self.members(b']', |r| item(r).map(|v| out.push(v)))?;
        Some(out)
    }

    /// The members of an object or array whose opening bracket was read, each read by `each`
    /// (after the spaces before it), up to and including `close`.
    fn members(&mut self, close: u8, mut each: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.ws();
        if self.peek() == Some(close) {
            self.pos += 1;
            return Some(());
        }
        loop {
            self.ws();
            each(self)?;
            if !self.next_or(close)? {
                return Some(());
            }
        }
    }

    /// Digits as `serde_json` reads them into an integer field: no leading zero, no fraction or
    /// exponent (a float), within `u64`.
    fn digits(&mut self) -> Option<u64> {
        let bytes = self.bytes();
        let start = self.pos;
        let mut value = 0u64;
        while let Some(d @ b'0'..=b'9') = bytes.get(self.pos).copied() {
            value = value.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
            self.pos += 1;
        }
        let len = self.pos - start;
        let floating = matches!(bytes.get(self.pos), Some(b'.' | b'e' | b'E'));
        (len > 0 && !(len > 1 && bytes[start] == b'0') && !floating).then_some(value)
    }

    fn u64(&mut self) -> Option<u64> {
        self.digits()
    }

    fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.digits()?).ok()
    }

    fn i64(&mut self) -> Option<i64> {
        if self.peek() != Some(b'-') {
            return i64::try_from(self.digits()?).ok();
        }
        self.pos += 1;
        // `-0` is a float to `serde_json`, and -2^63 is left to it too.
        match i64::try_from(self.digits()?) {
            Ok(magnitude) if magnitude > 0 => Some(-magnitude),
            _ => None,
        }
    }

    fn bool(&mut self) -> Option<bool> {
        if self.literal(b"true") {
            Some(true)
        } else if self.literal(b"false") {
            Some(false)
        } else {
            None
        }
    }

    /// Any JSON value, checked and kept as its text.
    fn raw(&mut self) -> Option<RawText<'a>> {
        let start = self.pos;
        self.value(1)?;
        Some(RawText(&self.text[start..self.pos]))
    }

    /// An object's members, each read by `member` from its key, which gives the bit that marks
    /// the key read (0 for a key skipped, which may stand twice).
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> Option<u64>) -> Option<()> {
        self.eat(b'{')?;
        let mut seen = 0u64;
        self.members(b'}', |r| {
            let key = r.key()?;
            r.eat(b':')?;
            r.ws();
            let bit = member(r, key)?;
            (seen & bit == 0).then(|| seen |= bit)
        })
    }

    /// A prompt: its hash, and nothing the format does not define (`deny_unknown_fields`).
    fn prompt(&mut self) -> Option<RawPrompt<'a>> {
        let (mut h, mut len, mut text) = (None, None, None);
        self.object(|r, key| match key {
            "h" => {
                h = Some(r.str()?);
                Some(1)
            }
            "len" => {
                len = r.opt(Self::u64)?;
                Some(2)
            }
            "text" => {
                text = r.opt(Self::raw)?;
                Some(4)
            }
            _ => None,
        })?;
        Some(RawPrompt { h: h?, len, text })
    }

    /// A usage: the two counts it needs, the optional ones, and other keys skipped.
    fn usage(&mut self) -> Option<Usage> {
        let (mut input, mut output) = (None, None);
        let mut usage = Usage::default();
        self.object(|r, key| {
            Some(match key {
                "input_tokens" => {
                    input = Some(r.u64()?);
                    1
                }
                "output_tokens" => {
                    output = Some(r.u64()?);
                    2
                }
                "cache_read_tokens" => {
                    usage.cache_read_tokens = r.opt(Self::u64)?;
                    4
                }
                "cache_write_tokens" => {
                    usage.cache_write_tokens = r.opt(Self::u64)?;
                    8
                }
                "reasoning_tokens" => {
                    usage.reasoning_tokens = r.opt(Self::u64)?;
                    16
                }
                "cost_usd" => {
                    usage.cost_usd = r.opt(Self::f64)?;
                    32
                }
                _ => {
                    r.value(2)?;
                    0
                }
            })
        })?;
        usage.input_tokens = input?;
        usage.output_tokens = output?;
        Some(usage)
    }

    /// A number read into a float field: checked by the grammar, then converted (correctly
    /// rounded, as `serde_json`'s `float_roundtrip` reads it); one out of range is left.
    fn f64(&mut self) -> Option<f64> {
        let start = self.pos;
        self.number()?;
        let value: f64 = self.text[start..self.pos].parse().ok()?;
        value.is_finite().then_some(value)
    }

    /// A planned call: its id, tool and arguments, all three required; other keys skipped.
    fn planned(&mut self) -> Option<RawPlanned<'a>> {
        let (mut call_id, mut tool, mut args) = (None, None, None);
        self.object(|r, key| {
            Some(match key {
                "call_id" => {
                    call_id = Some(r.str()?);
                    1
                }
                "tool" => {
                    tool = Some(r.str()?);
                    2
                }
                "args" => {
                    args = Some(r.raw()?);
                    4
                }
                _ => {
                    r.value(2)?;
                    0
                }
            })
        })?;
        Some(RawPlanned {
            call_id: call_id?,
            tool: tool?,
            args: args?,
        })
    }

    fn planned_calls(&mut self) -> Option<Vec<RawPlanned<'a>>> {
        self.array(Self::planned)
    }

    /// Skips one JSON value at `depth` (the event's object is depth 1), checking it.
    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            open @ (b'{' | b'[') => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                self.pos += 1;
                if open == b'[' {
                    return self.members(b']', |r| r.value(depth + 1));
                }
                // Any key, escapes and all (`key` reads only those the format defines).
                self.members(b'}', |r| {
                    r.string()?;
                    r.eat(b':')?;
                    r.ws();
                    r.value(depth + 1)
                })
            }
            b't' => self.literal(b"true").then_some(()),
            b'f' => self.literal(b"false").then_some(()),
            b'n' => self.literal(b"null").then_some(()),
            _ => self.number(),
        }
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek()? {
            b'0' => self.pos += 1,
            b'1'..=b'9' => {
                self.skip_digits();
            }
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.skip_digits() == 0 {
                return None;
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.skip_digits() == 0 {
                return None;
            }
        }
        // A digit left after a leading zero (`01`) is refused by the caller, which expects a
        // comma or a closing bracket next.
        Some(())
    }

    fn skip_digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }
}

/// The offset of the first quote or backslash in `bytes`, eight bytes at a time. Quotes and
/// backslashes stand about 16 bytes apart in a trace (every key and value is quoted, and a
/// tool's output escapes every line end), where setting up a vectorised search (`memchr2`)
/// costs more than this loop.
fn quote_or_backslash(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = ONES << 7;
    const QUOTES: u64 = ONES * b'"' as u64;
    const BACKSLASHES: u64 = ONES * b'\\' as u64;
    let mut words = bytes.chunks_exact(8);
    let mut base = 0;
    for word in &mut words {
        let x = u64::from_le_bytes(word.try_into().ok()?);
        // A zero byte of `x ^ QUOTES` is a quote: `(y - ONES) & !y & HIGH` marks the first zero
        // byte (and may mark bytes after it, which the lowest mark comes before).
        let (q, b) = (x ^ QUOTES, x ^ BACKSLASHES);
        let found = (q.wrapping_sub(ONES) & !q | b.wrapping_sub(ONES) & !b) & HIGH;
        if found != 0 {
            return Some(base + (found.trailing_zeros() / 8) as usize);
        }
        base += 8;
    }
    let rest = words.remainder();
    (rest.iter().position(|&b| b == b'"' || b == b'\\')).map(|i| base + i)
}

#[cfg(test)]
#[path = "fast_line_tests.rs"]
mod tests;
