//! The approved baselines by content, for the result cache: a cached row holds only while the
//! approved baseline it was compared with is what it was, and a fresh checkout (new inodes and
//! times, same bytes — a CI runner with a restored cache) must still find its rows. So each
//! baseline is keyed by the hash of its bytes ([`ByContent::by_path`], part of each entry's
//! dependency key); the cache records, beside that, each baseline's stat fingerprint, and a
//! baseline whose fingerprint is the one recorded is not read again. Only a changed or new file
//! (or every file, once, on a fresh checkout) is read.
//!
//! The record is a table of lines `STAT CONTENT PATH` after the first line of the cache's
//! context, under its MAC like the rest.

use camino::Utf8Path;
use rayon::prelude::*;

/// What a cache file recorded of each approved baseline: the hash of its stat fingerprint and
/// of its bytes, by path.
#[derive(Default)]
pub(super) struct Known<'a>(foldhash::HashMap<&'a str, (&'a str, &'a str)>);

/// Each approved baseline's key, by its path as a row shows it (looked up once per recalled
/// row: a fast hash, as the paths are this run's own).
pub(super) type ByPath = foldhash::HashMap<String, super::cache::RowKey>;

/// A cache file's context split into its fingerprint (the first line) and the approved
/// baselines' record (the lines after it).
pub(super) fn split_context(context: &str) -> (&str, &str) {
    context.split_once('\n').unwrap_or((context, ""))
}

/// The record in a cache file's context ([`split_context`]).
pub(super) fn record_in(context: &str) -> &str {
    split_context(context).1
}

impl<'a> Known<'a> {
    /// The record in a cache file's context ([`record_in`]).
    pub(super) fn parse(context: &'a str) -> Known<'a> {
        let table = record_in(context);
        let lines = table.lines().filter_map(|l| {
            let (stat, rest) = l.split_once(' ')?;
            let (content, path) = rest.split_once(' ')?;
            Some((path, (stat, content)))
        });
        Known(lines.collect())
    }
}

/// The hex of the first 16 bytes of BLAKE3 over `bytes`.
fn short_hash(bytes: &[u8]) -> String {
    let hash = blake3::hash(bytes);
    hash.to_hex()[..32].to_owned()
}

/// What [`by_content`] found.
pub(super) struct ByContent {
    /// Each baseline's key (of its content hash), by its path as a row shows it.
    pub(super) by_path: ByPath,
    /// The record to keep for the next run; `None` when it is the one `known` came from (every
    /// baseline as recorded, none added or gone).
    pub(super) record: Option<String>,
}

/// Each approved baseline of `paths` by content: the hash `known` records for the path when its
/// stat fingerprint is the recorded one, else the hash of its bytes read now (in parallel).
pub(super) fn by_content<P: AsRef<Utf8Path> + Sync>(paths: &[P], known: &Known<'_>) -> ByContent {
    // Per baseline, in parallel: what it is found to be now.
    let found: Vec<Found> = (paths.par_iter())
        .map(|path| {
            let path = path.as_ref();
            let meta = std::fs::metadata(path);
            let stat = meta
                .as_ref()
                .ok()
                .map(|m| short_hash(&super::cache::stamp(m)));
            let recorded = (known.0.get(path.as_str()))
                .filter(|(s, _)| stat.as_deref() == Some(*s))
                .map(|(_, c)| (*c).to_owned());
            let as_recorded = recorded.is_some();
            let content = recorded.unwrap_or_else(|| match std::fs::read(path) {
                Ok(bytes) => short_hash(&bytes),
                // Not a hash: an unreadable baseline is judged (and reported) afresh.
                Err(e) => format!("unreadable:{:?}", e.kind()),
            });
            Found {
                shown: crate::paths::display_path(path),
                key: key_of(&content),
                content,
                stat,
                as_recorded,
            }
        })
        .collect();
    let unchanged = found.len() == known.0.len() && found.iter().all(|f| f.as_recorded);
    let record = (!unchanged).then(|| {
        let mut table = String::new();
        for (path, f) in paths.iter().zip(&found) {
            let path = path.as_ref();
            // A path that would break the table's lines is never recorded: it is read every run.
            let recordable = !path.as_str().contains(['\n', '\r']) && !f.content.contains(' ');
            if let Some(stat) = f.stat.as_deref().filter(|_| recordable) {
                table.push_str(&format!("{stat} {} {path}\n", f.content));
            }
        }
        table
    });
    let by_path = found.into_iter().map(|f| (f.shown, f.key)).collect();
    ByContent { by_path, record }
}

/// One approved baseline as [`by_content`] finds it.
struct Found {
    /// Its path as a row shows it.
    shown: String,
    /// Its key ([`key_of`] its content hash).
    key: super::cache::RowKey,
    /// The hash of its bytes (as recorded, when its stat is), or why it could not be read.
    content: String,
    /// The hash of its stat fingerprint, when it has one.
    stat: Option<String>,
    /// Whether its stat and content are the ones recorded.
    as_recorded: bool,
}

/// A baseline's key: of its content hash (or of why it could not be read).
fn key_of(content: &str) -> super::cache::RowKey {
    super::trace_keys::first_16(blake3::hash(content.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use camino::Utf8PathBuf;

    #[test]
    fn a_recorded_baseline_is_not_read_again_and_a_changed_one_is() {
        let dir = tempfile::tempdir().unwrap();
        let a = Utf8PathBuf::from_path_buf(dir.path().join("a.baseline.json")).unwrap();
        let b = Utf8PathBuf::from_path_buf(dir.path().join("b.baseline.json")).unwrap();
        std::fs::write(&a, "one").unwrap();
        std::fs::write(&b, "two").unwrap();
        let paths = vec![a.clone(), b.clone()];
        let first = by_content(&paths, &Known::default());
        let table = first
            .record
            .clone()
            .expect("a first run records every baseline");
        let shown = [a.as_str(), b.as_str()].map(|p| crate::paths::display_path(p.into()));
        let hashes = |found: &ByContent| shown.clone().map(|p| found.by_path[&p]);
        let key = |content: &[u8]| key_of(&short_hash(content));
        assert_eq!(hashes(&first)[0], key(b"one"));
        // A record that says otherwise of a file whose stat is unchanged is believed (that is
        // the point: no read); one whose stat changed is not.
        let forged = table.replace(&short_hash(b"one"), &"0".repeat(32));
        let context = format!("fingerprint\n{forged}");
        let again = by_content(&paths, &Known::parse(&context));
        assert_eq!(hashes(&again)[0], key_of(&"0".repeat(32)));
        assert!(again.record.is_none(), "nothing changed: the record stays");
        std::fs::write(&a, "changed").unwrap();
        let after_edit = by_content(&paths, &Known::parse(&context));
        assert_eq!(hashes(&after_edit)[0], key(b"changed"));
        assert_eq!(hashes(&after_edit)[1], key(b"two"));
        assert!(after_edit.record.is_some());
        // A fresh checkout: new stats, the same bytes, the same content hashes.
        std::fs::remove_file(&b).unwrap();
        std::fs::write(&b, "two").unwrap();
        let fresh = by_content(&paths, &Known::parse(&context));
        assert_eq!(hashes(&fresh)[1], key(b"two"));
    }
}
