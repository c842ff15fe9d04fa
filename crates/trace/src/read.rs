//! Reading trace files: bounded decompression and seal verification.

use std::borrow::Cow;
use std::cell::RefCell;
use std::io::Read;

use camino::{Utf8Path, Utf8PathBuf};

use super::error::TraceError;
use super::seal::{content_hash, is_footer_line, parse_footer};

/// Size limits applied while reading. Past a limit the trace is rejected; decompression stops at
/// the limit and never allocates past it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest accepted line, in bytes (default 16 MiB, `--max-line-bytes`).
    pub max_line_bytes: u64,
    /// Largest accepted decompressed trace, in bytes (default 256 MiB, `--max-trace-bytes`).
    pub max_trace_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_line_bytes: 16 << 20,
            max_trace_bytes: 256 << 20,
        }
    }
}

impl Limits {
    /// The largest stored (on-disk) trace accepted before decoding: the decompressed limit, and
    /// for a compressed trace a little more, since incompressible data grows a little under
    /// zstd; the exact limit is then enforced on the decompressed bytes.
    pub fn stored_cap(&self, compressed: bool) -> u64 {
        if compressed {
            (self.max_trace_bytes).saturating_add(self.max_trace_bytes / 64 + 4096)
        } else {
            self.max_trace_bytes
        }
    }
}

/// Whether a path names a trace file (`*.trace.ndjson` or `*.trace.ndjson.zst`).
pub fn is_trace_path(path: &Utf8Path) -> bool {
    let name = path.file_name().unwrap_or("");
    name.ends_with(".trace.ndjson") || name.ends_with(".trace.ndjson.zst")
}

/// A trace file's decompressed bytes.
#[derive(Debug)]
pub struct TraceFile {
    /// Where it was read from.
    pub path: Utf8PathBuf,
    /// The decompressed bytes, footer included.
    pub bytes: Vec<u8>,
    /// Whether the file was zstd-compressed (`.zst`).
    pub compressed: bool,
}

/// What the seal check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seal {
    /// Whether the trace ends with a valid footer.
    pub sealed: bool,
    /// The trace's identity: the footer's verified hash, or for an unsealed trace the hash
    /// `pack` will seal it with.
    pub content_hash: String,
    /// Length of the body (header and events) in `bytes`, footer excluded.
    pub body_len: usize,
    /// Lines after the header, as counted when the seal was checked: how many events parsing
    /// should expect (only a size hint; the lines are validated when parsed).
    pub event_lines: usize,
}

thread_local! {
    // One reused decompression context per worker thread, as the performance budget asks.
    static DCTX: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
    static READ_BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl TraceFile {
    /// Reads and (for `.zst`) decompresses a trace file within `limits`.
    pub fn open(path: &Utf8Path, limits: Limits) -> Result<TraceFile, TraceError> {
        TraceFile::open_with(path, limits, &mut |_| false)
            .map(|file| file.expect("an inspector that never stops reading gives a file"))
    }

    /// [`TraceFile::open`], showing the stored bytes (compressed or not) to `inspect` before
    /// decoding them: when it returns `true` (it has what it needed, e.g. a cache hit for them),
    /// nothing is decompressed or kept and the result is `Ok(None)`.
    pub fn open_with(
        path: &Utf8Path,
        limits: Limits,
        inspect: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<Option<TraceFile>, TraceError> {
        let io = |source| TraceError::Io {
            path: path.to_owned(),
            source,
        };
        let compressed = path.as_str().ends_with(".zst");
        // Open once and size from the open file: one path lookup per trace. Opened without
        // blocking, so that a FIFO in a trace's place cannot stall the run; only a regular
        // file is read.
        let mut handle = crate::fsutil::open_nonblocking(path).map_err(io)?;
        let meta = handle.metadata().map_err(io)?;
        if !meta.is_file() {
            return Err(TraceError::Unreadable {
                path: path.to_owned(),
                detail: "not a regular file (a FIFO, device or directory); not read".into(),
            });
        }
        let len = meta.len();
        let file_cap = limits.stored_cap(compressed);
        let too_large = || TraceError::TooLarge {
            path: path.to_owned(),
            line: None,
            what: "the decompressed trace",
            limit: limits.max_trace_bytes,
            flag: "--max-trace-bytes",
        };
        if len > file_cap {
            return Err(too_large());
        }
        // The stored bytes into `raw`, within the cap, shown to `inspect`: `Ok(false)` when it
        // had what it needed.
        let mut read = |raw: &mut Vec<u8>| -> Result<bool, TraceError> {
            read_known_size(&mut handle, len, file_cap, raw).map_err(io)?;
            if raw.len() as u64 > file_cap {
                return Err(too_large());
            }
            Ok(!inspect(raw))
        };
        let bytes = if compressed {
            // Compressed bytes are only needed until they are decompressed: read them into a
            // buffer each worker thread reuses, so no fresh pages are faulted in per trace.
            READ_BUF.with(|cell| -> Result<Option<Vec<u8>>, TraceError> {
                let mut raw = cell.borrow_mut();
                raw.clear();
                if !read(&mut raw)? {
                    return Ok(None);
                }
                decompress_trace(path, &raw, limits).map(Some)
            })?
        } else {
            let mut raw = Vec::with_capacity(len as usize);
            read(&mut raw)?.then_some(raw)
        };
        Ok(bytes.map(|bytes| TraceFile {
            path: path.to_owned(),
            bytes,
            compressed,
        }))
    }

    /// A trace from its stored bytes, as they would be on disk (zstd-compressed when
    /// `compressed`), within `limits`: what [`TraceFile::open`] does once it has read the file.
    pub fn from_stored(
        path: impl Into<Utf8PathBuf>,
        stored: &[u8],
        compressed: bool,
        limits: Limits,
    ) -> Result<TraceFile, TraceError> {
        let path = path.into();
        let too_large = || TraceError::TooLarge {
            path: path.clone(),
            line: None,
            what: "the decompressed trace",
            limit: limits.max_trace_bytes,
            flag: "--max-trace-bytes",
        };
        let bytes = if compressed {
            decompress_trace(&path, stored, limits)?
        } else if stored.len() as u64 > limits.max_trace_bytes {
            return Err(too_large());
        } else {
            stored.to_vec()
        };
        Ok(TraceFile {
            path,
            bytes,
            compressed,
        })
    }

    /// Builds a trace file from bytes already in memory (decompressed).
    pub fn from_bytes(path: impl Into<Utf8PathBuf>, bytes: Vec<u8>, compressed: bool) -> Self {
        TraceFile {
            path: path.into(),
            bytes,
            compressed,
        }
    }

    /// Verifies the seal: a footer must be the last line, count the event lines and hash the
    /// bytes before it. A `.zst` must be sealed; an uncompressed trace may be unsealed (then its
    /// content hash is the hash of its normalised bytes), unless `require_sealed`.
    pub fn verify_seal(&self, require_sealed: bool) -> Result<Seal, TraceError> {
        let integrity = |detail: String| TraceError::Integrity {
            path: self.path.clone(),
            detail,
        };
        let bytes = &self.bytes;
        if bytes.is_empty() {
            return Err(TraceError::Unreadable {
                path: self.path.clone(),
                detail: "empty trace file: a trace starts with a header line".into(),
            });
        }
        let trimmed = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let last_start = memchr::memrchr(b'\n', trimmed).map_or(0, |p| p + 1);
        let last = &trimmed[last_start..];
        let last = if self.compressed {
            last
        } else {
            last.strip_suffix(b"\r").unwrap_or(last)
        };
        if is_footer_line(last) {
            let footer = parse_footer(last).map_err(integrity)?;
            let body = &bytes[..last_start];
            let event_lines = memchr::memchr_iter(b'\n', body).count().saturating_sub(1);
            if last_start == 0 {
                return Err(integrity(
                    "the footer is the only line; the header is missing".into(),
                ));
            }
            if footer.events != event_lines as u64 {
                return Err(integrity(format!(
                    "footer counts {} events but the trace has {event_lines} event lines",
                    footer.events
                )));
            }
            let actual = content_hash(body);
            if actual != footer.content_hash {
                return Err(integrity(format!(
                    "content hash mismatch: footer says {}, the bytes hash to {actual}; the trace was modified after sealing",
                    footer.content_hash
                )));
            }
            return Ok(Seal {
                sealed: true,
                content_hash: actual,
                body_len: last_start,
                event_lines,
            });
        }
        if self.compressed {
            return Err(integrity(
                "a compressed trace must end with a footer and this one has none (truncated, or never sealed; seal it with `tracereplay pack`)".into(),
            ));
        }
        if require_sealed {
            return Err(integrity(
                "the trace is not sealed and `--require-sealed` is set; seal it with `tracereplay pack`".into(),
            ));
        }
        Ok(Seal {
            sealed: false,
            content_hash: content_hash(&normalize_line_ends(bytes)),
            body_len: bytes.len(),
            event_lines: memchr::memchr_iter(b'\n', bytes).count().saturating_sub(1),
        })
    }
}

/// `\r\n` read as `\n` and a final `\n` added if missing: the bytes `pack` seals.
pub fn normalize_line_ends(bytes: &[u8]) -> Cow<'_, [u8]> {
    let has_cr = memchr::memmem::find(bytes, b"\r\n").is_some();
    let ends_nl = bytes.last() == Some(&b'\n');
    if !has_cr && ends_nl {
        return Cow::Borrowed(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len() + 1);
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
            i += 1;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    if out.last() != Some(&b'\n') && !out.is_empty() {
        out.push(b'\n');
    }
    Cow::Owned(out)
}

/// Reads a file whose size `fstat` gave as `len`, and at most `cap + 1` bytes should it have
/// grown since (the caller refuses more than `cap`). Through `Take`, not `File::read_to_end`,
/// which would `fstat` and `lseek` again to size its buffer: two system calls per trace saved.
fn read_known_size(
    file: &mut std::fs::File,
    len: u64,
    cap: u64,
    buf: &mut Vec<u8>,
) -> std::io::Result<()> {
    buf.reserve(usize::try_from(len).unwrap_or(0).saturating_add(1));
    file.take(len.saturating_add(1)).read_to_end(buf)?;
    if buf.len() as u64 > len {
        let room = cap.saturating_add(1).saturating_sub(buf.len() as u64);
        file.take(room).read_to_end(buf)?;
    }
    Ok(())
}

/// Decompresses a stored trace within `limits`, naming `path` in errors.
fn decompress_trace(path: &Utf8Path, raw: &[u8], limits: Limits) -> Result<Vec<u8>, TraceError> {
    decompress(raw, limits.max_trace_bytes).map_err(|e| match e {
        DecompressError::TooLarge => TraceError::TooLarge {
            path: path.to_owned(),
            line: None,
            what: "the decompressed trace",
            limit: limits.max_trace_bytes,
            flag: "--max-trace-bytes",
        },
        DecompressError::Corrupt(detail) => TraceError::Unreadable {
            path: path.to_owned(),
            detail: format!("not a valid zstd stream ({detail}); the file is corrupt or truncated"),
        },
    })
}

enum DecompressError {
    TooLarge,
    Corrupt(String),
}

/// Decompresses within `limit`: a single frame whose header states a size within the limit is
/// decoded in bulk into an exactly sized buffer with the thread's reused context; anything else
/// (streamed frames without a size, concatenated frames, corrupt data) goes through a streaming
/// decoder that stops one byte past the limit and reports corruption precisely.
fn decompress(raw: &[u8], limit: u64) -> Result<Vec<u8>, DecompressError> {
    if let Ok(Some(size)) = zstd::zstd_safe::get_frame_content_size(raw) {
        if size > limit {
            return Err(DecompressError::TooLarge);
        }
        if frame_len(raw) == Some(raw.len()) {
            let bulk = DCTX.with(|cell| {
                let mut slot = cell.borrow_mut();
                if slot.is_none() {
                    *slot = zstd::bulk::Decompressor::new().ok();
                }
                slot.as_mut()
                    .and_then(|d| d.decompress(raw, size as usize).ok())
            });
            if let Some(out) = bulk.filter(|o| o.len() as u64 == size) {
                return Ok(out);
            }
        }
    }
    let mut decoder = zstd::stream::read::Decoder::new(raw)
        .map_err(|e| DecompressError::Corrupt(e.to_string()))?;
    read_bounded(&mut decoder, limit)
}

fn frame_len(raw: &[u8]) -> Option<usize> {
    zstd::zstd_safe::find_frame_compressed_size(raw).ok()
}

/// Reads everything `reader` gives, refusing more than `limit` bytes. The output is gathered in
/// 1 MiB pieces and joined only once complete, so a decompression bomb is stopped having cost
/// the limit and one piece, not the doubling of a growing buffer (which reached twice the limit).
fn read_bounded(reader: &mut impl Read, limit: u64) -> Result<Vec<u8>, DecompressError> {
    const PIECE: usize = 1 << 20;
    let corrupt = |e: std::io::Error| DecompressError::Corrupt(e.to_string());
    let mut pieces: Vec<Vec<u8>> = Vec::new();
    let mut total: u64 = 0;
    loop {
        let mut piece = Vec::new();
        let want = (PIECE as u64).min(limit.saturating_add(1) - total);
        reader.take(want).read_to_end(&mut piece).map_err(corrupt)?;
        total += piece.len() as u64;
        if total > limit {
            return Err(DecompressError::TooLarge);
        }
        let last = (piece.len() as u64) < want;
        pieces.push(piece);
        if last {
            break;
        }
    }
    if pieces.len() == 1 {
        return Ok(pieces.pop().unwrap_or_default());
    }
    let mut out = Vec::with_capacity(total as usize);
    for p in pieces {
        out.extend_from_slice(&p);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A decompression bomb is stopped one byte past the limit: the reader is not drained, and
    /// what is held never exceeds the limit and one piece.
    #[test]
    fn a_bomb_is_stopped_at_the_limit() {
        struct Zeros(u64);
        impl Read for Zeros {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                buf.fill(0);
                self.0 += buf.len() as u64;
                Ok(buf.len())
            }
        }
        let mut bomb = Zeros(0);
        assert!(matches!(
            read_bounded(&mut bomb, 3 << 20),
            Err(DecompressError::TooLarge)
        ));
        assert!(bomb.0 <= (3 << 20) + (1 << 20), "read {} bytes", bomb.0);
        let mut small = &[7u8; 2_500_000][..];
        assert_eq!(
            read_bounded(&mut small, 3 << 20).ok().map(|v| v.len()),
            Some(2_500_000)
        );
    }

    #[test]
    fn reading_stops_past_the_cap_even_when_a_file_grew() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        std::fs::write(&path, [7u8; 100]).unwrap();
        let read = |len, cap| {
            let mut buf = Vec::new();
            let mut file = std::fs::File::open(&path).unwrap();
            read_known_size(&mut file, len, cap, &mut buf).unwrap();
            buf.len()
        };
        assert_eq!(read(100, 200), 100);
        // `fstat` said 10 bytes, and the file holds 100: read on, but not past the cap.
        assert_eq!(read(10, 200), 100);
        assert_eq!(read(10, 50), 51);
    }

    #[test]
    fn normalisation_matches_pack() {
        assert_eq!(&*normalize_line_ends(b"a\r\nb"), b"a\nb\n");
        assert_eq!(&*normalize_line_ends(b"a\nb\n"), b"a\nb\n");
        assert!(matches!(normalize_line_ends(b"a\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn decompression_is_bounded() {
        let data = vec![b'x'; 10_000];
        let z = zstd::bulk::compress(&data, 3).unwrap();
        assert_eq!(decompress(&z, 10_000).ok().unwrap(), data);
        assert!(matches!(
            decompress(&z, 9_999),
            Err(DecompressError::TooLarge)
        ));
        // Streamed frames carry no content size: the bound must still hold.
        let mut streamed = Vec::new();
        let mut enc = zstd::stream::write::Encoder::new(&mut streamed, 3).unwrap();
        std::io::Write::write_all(&mut enc, &data).unwrap();
        enc.finish().unwrap();
        assert!(matches!(
            decompress(&streamed, 100),
            Err(DecompressError::TooLarge)
        ));
        assert_eq!(decompress(&streamed, 10_000).ok().unwrap(), data);
        // Two concatenated frames decode as one stream.
        let mut two = z.clone();
        two.extend_from_slice(&z);
        assert_eq!(decompress(&two, 20_000).ok().unwrap().len(), 20_000);
        // Truncation is an error, not a silent short read.
        assert!(matches!(
            decompress(&z[..z.len() - 3], 10_000),
            Err(DecompressError::Corrupt(_))
        ));
    }
}
