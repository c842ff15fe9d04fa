//! Prompt hashing: `b3:` (unkeyed) or `b3k:` (keyed BLAKE3) of the exact UTF-8 bytes, with the
//! key derived from `TRACEREPLAY_HASH_KEY` as the trace format specifies. The key and its
//! material are never written, printed, or echoed in an error.

use std::fmt;

use crate::{PromptRef, Str};

/// The environment variable holding the key material.
pub const KEY_ENV: &str = "TRACEREPLAY_HASH_KEY";
const KEY_CONTEXT: &str = "tracereplay 2026-11 prompt-hash v1";
const KID_CONTEXT: &str = "tracereplay 2026-11 key-id v1";

/// Hashes prompt text, keyed or not.
#[derive(Clone)]
pub struct PromptHasher {
    key: Option<[u8; 32]>,
    kid: Option<String>,
}

impl fmt::Debug for PromptHasher {
    // Never print the key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PromptHasher")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

/// The key id of key material: `k_` + the first 8 hex digits of its derived id.
pub fn key_id(material: &[u8]) -> String {
    let id = blake3::derive_key(KID_CONTEXT, material);
    format!("k_{}", &blake3::Hash::from(id).to_hex()[..8])
}

impl PromptHasher {
    /// Unkeyed `b3:` hashes (reversible by guessing for short prompts; prefer keyed).
    pub fn unkeyed() -> PromptHasher {
        PromptHasher {
            key: None,
            kid: None,
        }
    }

    /// Keyed `b3k:` hashes from key material (the variable's UTF-8 bytes).
    pub fn keyed(material: &[u8]) -> PromptHasher {
        PromptHasher {
            key: Some(blake3::derive_key(KEY_CONTEXT, material)),
            kid: Some(key_id(material)),
        }
    }

    /// Keyed from `TRACEREPLAY_HASH_KEY` when it is set and non-empty.
    pub fn from_env() -> Option<PromptHasher> {
        std::env::var_os(KEY_ENV)
            .filter(|v| !v.is_empty())
            .map(|v| PromptHasher::keyed(v.as_encoded_bytes()))
    }

    /// The key id, for `header.privacy.kid` (`None` when unkeyed).
    pub fn kid(&self) -> Option<&str> {
        self.kid.as_deref()
    }

    /// `header.privacy.hash`: `blake3-keyed` or `blake3`.
    pub fn scheme(&self) -> &'static str {
        if self.key.is_some() {
            "blake3-keyed"
        } else {
            "blake3"
        }
    }

    /// The hash string of `text`.
    pub fn hash(&self, text: &str) -> String {
        match &self.key {
            Some(k) => format!("b3k:{}", blake3::keyed_hash(k, text.as_bytes()).to_hex()),
            None => format!("b3:{}", blake3::hash(text.as_bytes()).to_hex()),
        }
    }

    /// A text that grows at its end (a conversation, message by message), hashed as it grows:
    /// each [`GrowingPrompt::prompt_with`] costs the length of its suffix, not of the whole
    /// text, and gives the hash [`PromptHasher::prompt`] gives of the whole.
    pub fn growing(&self) -> GrowingPrompt {
        GrowingPrompt {
            hasher: match &self.key {
                Some(k) => blake3::Hasher::new_keyed(k),
                None => blake3::Hasher::new(),
            },
            keyed: self.key.is_some(),
            chars: 0,
        }
    }

    /// A prompt object for `text`: its hash and its length in Unicode scalar values.
    pub fn prompt(&self, text: &str) -> PromptRef<'static> {
        PromptRef {
            h: Str::from(self.hash(text)),
            len: Some(text.chars().count() as u64),
        }
    }
}

/// A text hashed as it grows (see [`PromptHasher::growing`]).
#[derive(Clone)]
pub struct GrowingPrompt {
    hasher: blake3::Hasher,
    keyed: bool,
    chars: u64,
}

impl GrowingPrompt {
    /// Appends `text`.
    pub fn push(&mut self, text: &str) {
        self.hasher.update(text.as_bytes());
        self.chars += text.chars().count() as u64;
    }

    /// The prompt object of the text so far followed by `suffix` (not kept).
    pub fn prompt_with(&self, suffix: &str) -> PromptRef<'static> {
        let mut h = self.hasher.clone();
        h.update(suffix.as_bytes());
        let hex = h.finalize().to_hex();
        PromptRef {
            h: Str::from(if self.keyed {
                format!("b3k:{hex}")
            } else {
                format!("b3:{hex}")
            }),
            len: Some(self.chars + suffix.chars().count() as u64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Test vectors published in `docs/privacy.md` so other recorders can check their implementation.
    #[test]
    fn spec_test_vectors() {
        let unkeyed = PromptHasher::unkeyed();
        assert_eq!(
            unkeyed.hash("hello"),
            "b3:ea8f163db38682925e4491c5e58d4bb3506ef8c14eb78a86e908c5624a67200f"
        );
        let keyed = PromptHasher::keyed(b"test-key-material");
        assert_eq!(keyed.kid(), Some(VECTOR_KID));
        assert_eq!(keyed.hash("hello"), VECTOR_HELLO);
        assert_eq!(keyed.prompt("héllo").len, Some(5));
    }

    #[test]
    fn a_growing_text_hashes_as_the_whole() {
        for hasher in [PromptHasher::unkeyed(), PromptHasher::keyed(b"k")] {
            let mut g = hasher.growing();
            let mut whole = String::new();
            for piece in ["[", "{\"a\":1}", ",", "\"héllo\"", ""] {
                g.push(piece);
                whole.push_str(piece);
                assert_eq!(g.prompt_with("]"), hasher.prompt(&format!("{whole}]")));
            }
        }
    }

    const VECTOR_KID: &str = "k_4f0e5027";
    const VECTOR_HELLO: &str =
        "b3k:32660c472bc5267494866cd92b8fa040f0a905a6332757f3aa1409cb7c737289";

    #[test]
    fn keyed_and_unkeyed_differ_and_keys_differ() {
        let a = PromptHasher::keyed(b"key-a");
        let b = PromptHasher::keyed(b"key-b");
        assert_ne!(
            a.hash("x"),
            PromptHasher::unkeyed().hash("x").replace("b3:", "b3k:")
        );
        assert_ne!(a.hash("x"), b.hash("x"));
        assert_ne!(a.kid(), b.kid());
        assert_eq!(
            a.hash("x"),
            PromptHasher::keyed(b"key-a").hash("x"),
            "same text and key, same hash"
        );
        assert!(!format!("{a:?}").contains("key-a"));
        assert!(crate::is_hash(&a.hash("x"), true));
    }
}
