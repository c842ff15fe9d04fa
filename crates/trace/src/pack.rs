//! Sealing: validate every line of an NDJSON trace, copy it byte for byte (`\r\n` becomes `\n`,
//! a missing final `\n` is added) and append the footer.

use super::error::TraceError;
use super::parse::parse_trace;
use super::read::{Limits, TraceFile, normalize_line_ends};
use super::seal::footer_line;

/// What packing produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Packed {
    /// The input was unsealed; these are the sealed decompressed bytes.
    Sealed {
        /// Body plus footer.
        bytes: Vec<u8>,
        /// The content hash in the footer.
        content_hash: String,
    },
    /// The input was already sealed and verified; its bytes stay as they are.
    AlreadySealed {
        /// Its verified content hash.
        content_hash: String,
    },
}

/// Validates `file` (refusing malformed input and raw prompt text) and seals it.
pub fn pack(file: &TraceFile, limits: Limits) -> Result<Packed, TraceError> {
    let seal = file.verify_seal(false)?;
    parse_trace(file, &seal, limits)?;
    if seal.sealed {
        return Ok(Packed::AlreadySealed {
            content_hash: seal.content_hash,
        });
    }
    let mut bytes = normalize_line_ends(&file.bytes).into_owned();
    let events = memchr::memchr_iter(b'\n', &bytes).count() as u64 - 1;
    // `verify_seal` hashed exactly these normalised bytes.
    let content_hash = seal.content_hash;
    bytes.extend_from_slice(footer_line(events, &content_hash).as_bytes());
    Ok(Packed::Sealed {
        bytes,
        content_hash,
    })
}
