//! Borrowed JSON building blocks for the trace hot path: strings that borrow from the buffer when
//! they can, and raw JSON values parsed only when an oracle asks for them.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;

/// A string that borrows from the decompressed trace when it holds no escapes.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Str<'a>(pub Cow<'a, str>);

impl<'a> Str<'a> {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// An owned copy that no longer borrows from any buffer.
    pub fn into_owned(self) -> Str<'static> {
        Str(Cow::Owned(self.0.into_owned()))
    }
}

impl From<String> for Str<'static> {
    fn from(s: String) -> Self {
        Str(Cow::Owned(s))
    }
}

impl From<&str> for Str<'static> {
    fn from(s: &str) -> Self {
        Str(Cow::Owned(s.to_owned()))
    }
}

impl std::ops::Deref for Str<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Str<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Str<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl Serialize for Str<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// A JSON value kept as its raw text, borrowed from the trace or owned by a writer. The text is
/// always one valid JSON value: the trace reader validated it, or a writer built it.
#[derive(Debug, Clone)]
pub struct Json<'a>(Repr<'a>);

#[derive(Debug, Clone)]
enum Repr<'a> {
    /// Validated by the reader, borrowed from the decompressed trace buffer.
    Read(&'a str),
    /// Validated by the reader, then copied out of the buffer.
    Copied(Box<str>),
    /// Built by a writer.
    Built(Box<RawValue>),
}

impl<'a> Json<'a> {
    /// Serialises `value` compactly into an owned raw value.
    pub fn from_value<T: Serialize + ?Sized>(value: &T) -> Json<'static> {
        // Serialising a `serde_json::Value` or plain data into JSON text cannot fail.
        Json::from_raw(serde_json::value::to_raw_value(value).expect("JSON value serialises"))
    }

    /// An owned raw value.
    pub fn from_raw(raw: Box<RawValue>) -> Json<'static> {
        Json(Repr::Built(raw))
    }

    /// Text the trace's reader validated as one JSON value, without the whitespace around it.
    pub(crate) fn read(text: &'a str) -> Json<'a> {
        Json(Repr::Read(text))
    }

    /// The raw JSON text, exactly as recorded.
    pub fn raw(&self) -> &str {
        match &self.0 {
            Repr::Read(t) => t,
            Repr::Copied(t) => t,
            Repr::Built(r) => r.get(),
        }
    }

    /// Parses the raw text into a `serde_json::Value` (off the hot path: only oracles that
    /// compare values call this), large values summarised ([`bounded_value`]).
    pub fn value(&self) -> serde_json::Value {
        bounded_value(self.raw())
    }

    /// An owned copy.
    pub fn into_owned(self) -> Json<'static> {
        Json(match self.0 {
            Repr::Read(t) => Repr::Copied(t.into()),
            Repr::Copied(t) => Repr::Copied(t),
            Repr::Built(r) => Repr::Built(r),
        })
    }
}

impl PartialEq for Json<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.raw() == other.raw()
    }
}

impl Serialize for Json<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Repr::Built(r) => r.serialize(s),
            // Raw text reaches a serializer only as a `RawValue`, which can be had from text
            // only by reading it: text that was read is read again when it is written.
            Repr::Read(_) | Repr::Copied(_) => {
                let raw: &RawValue =
                    serde_json::from_str(self.raw()).map_err(serde::ser::Error::custom)?;
                raw.serialize(s)
            }
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Json<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(d).map(|r| Json::read(r.get()))
    }
}

/// A JSON value whose text is longer than this is kept as a summary, `{"b3": …, "bytes": …}`,
/// wherever a trace's values are turned into `serde_json` values (oracle comparisons, the
/// normalised behaviour in baselines, cited events in evidence, `explain`): a 15 MB array in an
/// 11 KB compressed trace must not cost gigabytes. Two summaries are equal exactly when the
/// values' texts are, so drift on a large value is still detected.
pub const LARGE_VALUE_BYTES: usize = 64 << 10;

/// The summary of a large value: BLAKE3 of its JSON text and the text's length in bytes.
pub fn summary(raw: &str) -> serde_json::Value {
    serde_json::json!({
        "b3": format!("b3:{}", blake3::hash(raw.as_bytes()).to_hex()),
        "bytes": raw.len(),
    })
}

/// Parses JSON `raw` into a value, keeping every part whose text exceeds [`LARGE_VALUE_BYTES`]
/// as a [`summary`]: an object too large is opened key by key (its values borrowed as raw text,
/// never built), anything else too large (an array, a string) is summarised whole. So a trace
/// costs memory in proportion to its text, however its values are shaped. Invalid JSON (never
/// met: the text was validated when read or built) gives `null`.
pub fn bounded_value(raw: &str) -> serde_json::Value {
    bounded_value_at(raw, 0)
}

/// How many levels of large objects [`bounded_value`] opens before summarising: each level
/// parses the text below it again, so the cost stays a small multiple of the text.
const LARGE_OBJECT_LEVELS: usize = 4;

fn bounded_value_at(raw: &str, level: usize) -> serde_json::Value {
    if raw.len() <= LARGE_VALUE_BYTES {
        return serde_json::from_str(raw).unwrap_or(serde_json::Value::Null);
    }
    let trimmed = raw.trim();
    if trimmed.starts_with('{') && level < LARGE_OBJECT_LEVELS {
        // A large object of a few large values is opened; one of very many keys is summarised
        // whole, as a large array is (parsing stops at the key past the bound).
        if let Ok(FewKeys(fields)) = serde_json::from_str::<FewKeys<'_>>(trimmed) {
            return serde_json::Value::Object(
                fields
                    .into_iter()
                    .map(|(k, v)| (k, bounded_value_at(v.get(), level + 1)))
                    .collect(),
            );
        }
    }
    summary(trimmed)
}

/// The most keys of a large object [`bounded_value`] opens one by one.
const MAX_OPENED_KEYS: usize = 1024;

/// An object's entries, sorted by key, when it has at most [`MAX_OPENED_KEYS`] (a later
/// duplicate key wins, as serde_json's own maps have it); an error past that.
struct FewKeys<'a>(std::collections::BTreeMap<String, &'a RawValue>);

impl<'de: 'a, 'a> Deserialize<'de> for FewKeys<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
            type Value = FewKeys<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = std::collections::BTreeMap::new();
                while let Some((k, v)) = map.next_entry::<String, &'a RawValue>()? {
                    out.insert(k, v);
                    if out.len() > MAX_OPENED_KEYS {
                        return Err(serde::de::Error::custom("too many keys to open"));
                    }
                }
                Ok(FewKeys(out))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// serde_json's message without the " at line L column C" it appends (callers name the position
/// their own way): the one place that strips it.
pub fn message_without_position(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_owned(),
        None => s,
    }
}

/// Compares two names the way every oracle does: Unicode simple lowercasing of both sides.
pub fn eq_ci(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        return a.eq_ignore_ascii_case(b);
    }
    lower(a) == lower(b)
}

/// Unicode lowercasing of a name or text, char by char (no normalisation).
pub fn lower(s: &str) -> String {
    if s.is_ascii() {
        return s.to_ascii_lowercase();
    }
    s.chars().flat_map(char::to_lowercase).collect()
}

/// Case-insensitive substring test, as the `*-contains` oracles use: both sides mapped with
/// Unicode simple lowercasing, no normalisation (the spec's matching rule).
pub fn contains_ci(haystack: &str, needle: &str) -> bool {
    if haystack.is_ascii() && needle.is_ascii() {
        let n = needle.len();
        if n == 0 {
            return true;
        }
        return haystack
            .as_bytes()
            .windows(n)
            .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()));
    }
    lower(haystack).contains(&lower(needle))
}

/// [`contains_ci`] on normalised text ([`normalise_text`]), so a zero-width or non-breaking
/// space, or a full-width letter, never hides a phrase: for the checks the spec does not fix
/// (`tool-errors-handled`'s `success` phrases).
pub fn contains_normalised(haystack: &str, needle: &str) -> bool {
    if haystack.is_ascii() && needle.is_ascii() {
        return contains_ci(haystack, needle);
    }
    normalise_text(haystack).contains(&normalise_text(needle))
}

/// Text as phrase checks compare it: Unicode NFKC (a non-breaking space is a space, `ﬁ` is
/// `fi`, full-width letters are letters), invisible format characters removed (zero-width
/// spaces and joiners, the word joiner, the byte-order mark, the soft hyphen), lowercased.
pub fn normalise_text(s: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let invisible = |c: &char| {
        matches!(
            c,
            '\u{00AD}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}'
        )
    };
    let visible: String = s.chars().filter(|c| !invisible(c)).collect();
    lower(&visible.nfkc().collect::<String>())
}

/// How deep a trace line's values may nest (objects and arrays), as serde_json's own limit for
/// parsed values: every walk over a value (canonical forms, hashing, diffing, matching) then
/// stays within a small, fixed stack.
pub const MAX_NESTING: usize = 128;

/// Whether JSON `text` nests objects and arrays more than [`MAX_NESTING`] deep. Linear, and
/// for almost every line a single vectorised count: a line with at most that many opening
/// brackets cannot nest deeper.
pub fn nests_too_deep(text: &str) -> bool {
    let bytes = text.as_bytes();
    if memchr::memchr2_iter(b'{', b'[', bytes)
        .nth(MAX_NESTING)
        .is_none()
    {
        return false;
    }
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in bytes {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return true;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Whether `bytes` (one JSON document) holds an object with a key twice anywhere: an error at
/// that key's position when it does (serde_json would keep the last without a word).
pub fn no_duplicate_keys(bytes: &[u8]) -> Result<(), serde_json::Error> {
    serde_json::from_slice::<NoDuplicateKeys>(bytes).map(|_| ())
}

/// A JSON document read only to find an object holding one key twice (anywhere), which it
/// reports as an error at that key's position.
struct NoDuplicateKeys;

/// The keys of one object seen so far: a list searched in order while it is short (most objects
/// hold a few keys, which are compared faster than hashed), a set once it is long.
#[derive(Default)]
struct Keys<'de> {
    few: Vec<std::borrow::Cow<'de, str>>,
    many: std::collections::HashSet<std::borrow::Cow<'de, str>>,
}

impl<'de> Keys<'de> {
    /// Keys held in the list before they move to the set.
    const FEW: usize = 16;

    /// Adds `key`; `false` when it was there already.
    fn insert(&mut self, key: std::borrow::Cow<'de, str>) -> bool {
        if self.few.len() < Self::FEW {
            if self.few.contains(&key) {
                return false;
            }
            self.few.push(key);
            return true;
        }
        if self.many.is_empty() {
            self.many.extend(self.few.iter().cloned());
        }
        self.many.insert(key)
    }
}

impl<'de> serde::Deserialize<'de> for NoDuplicateKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{Error, MapAccess, SeqAccess, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = NoDuplicateKeys;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut seen = Keys::default();
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    if !seen.insert(key.clone()) {
                        return Err(A::Error::custom(format!(
                            "duplicate key `{key}` (a JSON object may hold each key once; the second would silently replace the first)"
                        )));
                    }
                    map.next_value::<NoDuplicateKeys>()?;
                }
                Ok(NoDuplicateKeys)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<NoDuplicateKeys>()?.is_some() {}
                Ok(NoDuplicateKeys)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(NoDuplicateKeys)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(NoDuplicateKeys)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(NoDuplicateKeys)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(NoDuplicateKeys)
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(NoDuplicateKeys)
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(NoDuplicateKeys)
            }
        }
        d.deserialize_any(V)
    }
}

/// An event as a JSON value, large values summarised ([`bounded_value`]).
pub fn event_value(e: &crate::Event<'_>) -> serde_json::Value {
    serde_json::to_string(e).map_or(serde_json::Value::Null, |text| {
        crate::json::bounded_value(&text)
    })
}

/// Looks a property up by name, ignoring ASCII case as the harness's JSON options do.
pub fn field<'v>(
    obj: &'v serde_json::Map<String, serde_json::Value>,
    name: &str,
) -> Option<&'v serde_json::Value> {
    obj.get(name).or_else(|| {
        obj.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys are compared in a list while an object holds few and in a set past that: a key held
    /// twice is found either way, escaped or not, and nested objects keep their own keys.
    #[test]
    fn a_key_held_twice_is_found_in_short_and_long_objects() {
        let object = |keys: &[String]| {
            let fields: Vec<String> = keys
                .iter()
                .map(|k| format!("\"{k}\": {{\"{k}\": 1}}"))
                .collect();
            format!("[{{{}}}]", fields.join(", "))
        };
        for len in [1, 2, 15, 16, 17, 40] {
            let keys: Vec<String> = (0..len).map(|i| format!("k{i}")).collect();
            assert!(
                no_duplicate_keys(object(&keys).as_bytes()).is_ok(),
                "{len} keys"
            );
            for (first, again) in [(0, len), (len / 2, len), (0, 16.min(len)), (len - 1, len)] {
                let mut twice = keys.clone();
                twice.insert(again, keys[first].clone());
                let e = no_duplicate_keys(object(&twice).as_bytes()).unwrap_err();
                let key = &keys[first];
                assert!(
                    e.to_string().contains(&format!("duplicate key `{key}`")),
                    "{len}: {e}"
                );
            }
        }
        assert!(no_duplicate_keys(br#"{"a": 1, "\u0061": 2}"#).is_err());
    }

    #[test]
    fn str_borrows_when_unescaped_and_owns_when_escaped() {
        let plain: Str = serde_json::from_str("\"abc\"").unwrap();
        assert!(matches!(plain.0, Cow::Borrowed("abc")));
        let escaped: Str = serde_json::from_str("\"a\\nb\"").unwrap();
        assert!(matches!(escaped.0, Cow::Owned(ref s) if s == "a\nb"));
    }

    #[test]
    fn case_insensitive_helpers() {
        for (a, b, eq) in [
            ("Web_Search", "web_search", true),
            ("ÄPFEL", "äpfel", true),
            ("shell", "shel", false),
        ] {
            assert_eq!(eq_ci(a, b), eq, "{a} vs {b}");
        }
        assert!(contains_ci("Done: local Evidence", "LOCAL evidence"));
        assert!(contains_ci("Straße ÜBER", "über"));
        assert!(!contains_ci("demo", "demos"));
    }
}
