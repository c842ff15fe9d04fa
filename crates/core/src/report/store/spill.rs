//! Where encoded rows are held: their own allocation, a range of a buffer shared with other rows
//! (the result cache's file, read once), or a range of a file (rows beyond the run's memory
//! budget, and the rows of a result cache too large to read whole).

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::wire::{encode, head_of};
use super::{Row, RowMeta};
use crate::report::ResultRow;

/// One encoded row: its own allocation, a range of a buffer shared with other rows (the result
/// cache's file, read once, is never copied row by row), or a range of a file (rows beyond the
/// run's memory budget, see [`Spill`], and the rows of a result cache too large to read whole).
#[derive(Clone)]
pub(crate) struct RowBytes(pub(super) Repr);

#[derive(Clone)]
pub(super) enum Repr {
    Own(Box<[u8]>),
    Shared(Arc<Vec<u8>>, std::ops::Range<usize>),
    InFile(Arc<RowFile>, u64, u32),
    /// In a file, with its leading fields ([`super::RowHead`]) also held in the file's heads
    /// (offset and length there).
    InFileHeaded(Arc<RowFile>, u64, u32, u32, u32),
}

// Every result row of a run is held as one: no larger than a shared range.
const _: () = assert!(std::mem::size_of::<RowBytes>() <= 32);

impl RowBytes {
    /// `range` of a shared buffer (panics if it is out of bounds, which callers check).
    pub(crate) fn shared(buf: Arc<Vec<u8>>, range: std::ops::Range<usize>) -> RowBytes {
        assert!(range.end <= buf.len() && range.start <= range.end);
        RowBytes(Repr::Shared(buf, range))
    }

    /// `len` bytes of `file` at offset `at`, read when needed.
    pub(crate) fn in_file(file: Arc<RowFile>, at: u64, len: u32) -> RowBytes {
        RowBytes(Repr::InFile(file, at, len))
    }

    /// [`RowBytes::in_file`], with the row's leading fields ([`super::head_len`] bytes) also
    /// held in the file's heads ([`RowFile::with_heads`]) at `head` (offset and length), so that
    /// reading them reads no file (panics if `head` is out of their bounds, which callers check).
    pub(crate) fn in_file_headed(
        file: Arc<RowFile>,
        at: u64,
        len: u32,
        head: (u32, u32),
    ) -> RowBytes {
        let (start, n) = (head.0 as usize, head.1 as usize);
        assert!(file.heads.get(start..start + n).is_some());
        RowBytes(Repr::InFileHeaded(file, at, len, head.0, head.1))
    }

    /// The bytes that hold at least the row's leading fields ([`super::RowHead`]; all of them
    /// unless those fields are held apart): borrowed unless read back from a file.
    pub(crate) fn head(&self) -> Cow<'_, [u8]> {
        match &self.0 {
            Repr::InFileHeaded(file, _, _, start, len) => {
                let start = *start as usize;
                Cow::Borrowed(&file.heads[start..start + *len as usize])
            }
            _ => self.load(),
        }
    }

    /// The bytes: borrowed when held in memory, read back when in a file. A file that can no
    /// longer be read gives no bytes, which decode as an error row, and marks itself
    /// ([`Rows::unreadable`]) so the run can fail rather than report from rows it lost.
    pub(crate) fn load(&self) -> Cow<'_, [u8]> {
        match &self.0 {
            Repr::Own(b) => Cow::Borrowed(b),
            Repr::Shared(buf, range) => Cow::Borrowed(&buf[range.clone()]),
            Repr::InFile(file, at, len) | Repr::InFileHeaded(file, at, len, ..) => {
                Cow::Owned(file.read(*at, *len).unwrap_or_else(|_| {
                    file.failed.store(true, Ordering::Relaxed);
                    Vec::new()
                }))
            }
        }
    }

    /// The bytes, or the error that kept a file's bytes from being read back (for content
    /// that must never be taken as empty, such as a pending baseline about to be written).
    pub(crate) fn try_load(&self) -> std::io::Result<Cow<'_, [u8]>> {
        match &self.0 {
            Repr::InFile(file, at, len) | Repr::InFileHeaded(file, at, len, ..) => {
                file.read(*at, *len).map(Cow::Owned)
            }
            _ => Ok(self.load()),
        }
    }

    /// The file the row is held in, if it is.
    pub(super) fn file(&self) -> Option<&RowFile> {
        match &self.0 {
            Repr::InFile(file, ..) | Repr::InFileHeaded(file, ..) => Some(file),
            _ => None,
        }
    }

    /// The length in bytes.
    fn len(&self) -> usize {
        match &self.0 {
            Repr::Own(b) => b.len(),
            Repr::Shared(_, range) => range.len(),
            Repr::InFile(_, _, len) | Repr::InFileHeaded(_, _, len, ..) => *len as usize,
        }
    }
}

impl From<Box<[u8]>> for RowBytes {
    fn from(b: Box<[u8]>) -> RowBytes {
        RowBytes(Repr::Own(b))
    }
}

impl PartialEq for RowBytes {
    fn eq(&self, other: &RowBytes) -> bool {
        self.load() == other.load()
    }
}

impl Eq for RowBytes {}

impl std::fmt::Debug for RowBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RowBytes({} bytes)", self.len())
    }
}

/// A file that holds encoded rows at known offsets, read (and, for the run's spill file,
/// appended to) from any thread.
#[derive(Debug)]
pub(crate) struct RowFile {
    file: std::fs::File,
    /// Where the next appended row goes.
    end: AtomicU64,
    /// A read failed.
    pub(super) failed: std::sync::atomic::AtomicBool,
    /// The leading fields of rows held in the file, copied out ([`RowFile::with_heads`]).
    heads: Vec<u8>,
    /// Reads and writes that move the file position take turns (positioned I/O on Unix needs
    /// none).
    #[cfg(not(unix))]
    turn: std::sync::Mutex<()>,
}

impl RowFile {
    /// `file`, whose first `len` bytes are taken (appends go after them).
    pub(crate) fn new(file: std::fs::File, len: u64) -> RowFile {
        RowFile::with_heads(file, len, Vec::new())
    }

    /// [`RowFile::new`], with `heads`: the leading fields of rows in the file, each row held
    /// as [`RowBytes::in_file_headed`] naming its range of them.
    pub(crate) fn with_heads(file: std::fs::File, len: u64, heads: Vec<u8>) -> RowFile {
        RowFile {
            file,
            end: AtomicU64::new(len),
            failed: std::sync::atomic::AtomicBool::new(false),
            heads,
            #[cfg(not(unix))]
            turn: std::sync::Mutex::new(()),
        }
    }

    /// `len` bytes at offset `at`.
    pub(crate) fn read(&self, at: u64, len: u32) -> std::io::Result<Vec<u8>> {
        let mut buf = vec![0; len as usize];
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileExt;
            self.file.read_exact_at(&mut buf, at)?;
        }
        #[cfg(not(unix))]
        {
            use std::io::{Read, Seek, SeekFrom};
            let _turn = self.turn.lock().unwrap_or_else(|e| e.into_inner());
            (&self.file).seek(SeekFrom::Start(at))?;
            (&self.file).read_exact(&mut buf)?;
        }
        Ok(buf)
    }

    /// Appends `bytes`, returning their offset.
    fn append(&self, bytes: &[u8]) -> std::io::Result<u64> {
        let at = self.end.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileExt;
            self.file.write_all_at(bytes, at)?;
        }
        #[cfg(not(unix))]
        {
            use std::io::{Seek, SeekFrom, Write};
            let _turn = self.turn.lock().unwrap_or_else(|e| e.into_inner());
            (&self.file).seek(SeekFrom::Start(at))?;
            (&self.file).write_all(bytes)?;
        }
        Ok(at)
    }
}

/// Where a run's rows go: memory, up to a budget of encoded bytes, then an anonymous temporary
/// file (removed when the run ends), so memory stops growing with the suite. Which rows are
/// kept in memory depends on scheduling, but a row reads back as the same bytes wherever it is
/// held, so the report does not. Should the temporary file fail, rows stay in memory.
#[derive(Debug)]
pub(crate) struct Spill {
    budget: usize,
    held: AtomicUsize,
    file: std::sync::OnceLock<Option<Arc<RowFile>>>,
}

impl Spill {
    /// Rows held in memory until their encodings total `budget` bytes.
    pub(crate) fn new(budget: usize) -> Spill {
        Spill {
            budget,
            held: AtomicUsize::new(0),
            file: std::sync::OnceLock::new(),
        }
    }

    /// Encodes `row` and keeps it in memory or in the file.
    pub(crate) fn row(&self, row: &ResultRow) -> Row {
        Row {
            meta: RowMeta::of(&head_of(row)),
            bytes: self.keep(encode(row)),
        }
    }

    /// Keeps `bytes` (other than a row: a pending baseline's text) in memory or in the file,
    /// under the same budget as the rows.
    pub(crate) fn keep(&self, bytes: Box<[u8]>) -> RowBytes {
        let len = bytes.len();
        if self.held.fetch_add(len, Ordering::Relaxed) + len <= self.budget {
            return bytes.into();
        }
        self.held.fetch_sub(len, Ordering::Relaxed);
        let file = self.file.get_or_init(|| {
            let file = tempfile::tempfile().ok()?;
            Some(Arc::new(RowFile::new(file, 0)))
        });
        match (file, u32::try_from(len)) {
            (Some(file), Ok(len32)) => match file.append(&bytes) {
                Ok(at) => RowBytes::in_file(file.clone(), at, len32),
                Err(_) => bytes.into(),
            },
            _ => bytes.into(),
        }
    }
}
