//! Baseline files on disk: `baselines/<scenario>/<case>.baseline.json`, their pending `.new` and
//! `.deleted` companions, and atomic writes that can never escape the baselines directory.

use camino::{Utf8Path, Utf8PathBuf};
use serde::{Deserialize, Serialize};

use super::behaviour::Behaviour;
use super::set::Approved;
use crate::common::segment::encode_segment;
use crate::fsutil::{Confined, read_regular};

/// The largest baseline file read (a baseline is a small multiple of its trace's behaviour, and
/// large values in it are summaries): a bigger file, or one that is not a regular file (a
/// FIFO, `/dev/zero`), is reported as invalid and never read.
pub const MAX_BASELINE_BYTES: u64 = 64 << 20;

/// `format` of a baseline file.
pub const BASELINE_FORMAT: &str = "tracereplay.baseline";
/// The baseline format version this tool reads and writes.
pub const BASELINE_VERSION: u64 = 1;
/// Suffix of an approved baseline.
pub const APPROVED_SUFFIX: &str = ".baseline.json";
/// Suffix of a pending new or changed baseline.
pub const NEW_SUFFIX: &str = ".baseline.json.new";
/// Suffix of a pending removal.
pub const DELETED_SUFFIX: &str = ".baseline.json.deleted";

/// A baseline file: a small header and the normalised behaviour.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineFile {
    /// Always [`BASELINE_FORMAT`].
    pub format: String,
    /// Always [`BASELINE_VERSION`].
    pub version: u64,
    /// Scenario id.
    pub scenario: String,
    /// Case.
    pub case: String,
    /// Content hash of the approved trace.
    pub content_hash: String,
    /// The tool version that wrote it (information only, never compared).
    pub tool_version: String,
    /// What the run did.
    pub behaviour: Behaviour,
}

/// A baseline file that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    /// I/O failure.
    #[error("cannot read baseline `{path}`")]
    Io {
        /// The file.
        path: Utf8PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Not a baseline this version understands.
    #[error(
        "baseline `{path}` is not valid: {detail}; fix it or remove it and re-approve with `tracereplay baseline approve`"
    )]
    Invalid {
        /// The file.
        path: Utf8PathBuf,
        /// What is wrong.
        detail: String,
    },
}

impl BaselineFile {
    /// A baseline for a run.
    pub fn new(scenario: &str, case: &str, content_hash: &str, behaviour: Behaviour) -> Self {
        BaselineFile {
            format: BASELINE_FORMAT.to_owned(),
            version: BASELINE_VERSION,
            scenario: scenario.to_owned(),
            case: case.to_owned(),
            content_hash: content_hash.to_owned(),
            tool_version: env!("CARGO_PKG_VERSION").to_owned(),
            behaviour,
        }
    }

    /// The file's text in the baseline layout (sorted keys, two-space indent, an array of
    /// scalars on one line; see `text.rs`), ending in a newline.
    pub fn to_text(&self) -> String {
        super::text::baseline_text(self)
    }

    /// Reads and validates a baseline file (a regular file of at most
    /// [`MAX_BASELINE_BYTES`]).
    pub fn read(path: &Utf8Path) -> Result<BaselineFile, BaselineError> {
        let bytes = read_regular(path, MAX_BASELINE_BYTES, "baseline").map_err(|source| {
            BaselineError::Io {
                path: path.to_owned(),
                source,
            }
        })?;
        Self::parse(path, &bytes)
    }

    /// Parses baseline bytes read from `path`.
    pub fn parse(path: &Utf8Path, bytes: &[u8]) -> Result<BaselineFile, BaselineError> {
        BaselineFile::parse_with(path, bytes, Header::of(bytes))
    }

    /// [`BaselineFile::parse`] given the file's [`Header`]. A well-formed file of this format
    /// and version is read straight into its type; anything else takes the path that reads it
    /// as a JSON value first, which words every error (and lets a key given twice count once,
    /// the last).
    pub(crate) fn parse_with(
        path: &Utf8Path,
        bytes: &[u8],
        header: Option<Header>,
    ) -> Result<BaselineFile, BaselineError> {
        let current = header.is_some_and(|h| {
            h.format.as_deref() == Some(BASELINE_FORMAT) && h.version == Some(BASELINE_VERSION)
        });
        if current {
            if let Ok(file) = serde_json::from_slice::<BaselineFile>(bytes) {
                return Ok(file);
            }
        }
        let invalid = |detail: String| BaselineError::Invalid {
            path: path.to_owned(),
            detail,
        };
        let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
            invalid(format!(
                "line {}, column {}: {}",
                e.line(),
                e.column(),
                crate::trace::json::message_without_position(&e)
            ))
        })?;
        if value.get("format").and_then(|f| f.as_str()) != Some(BASELINE_FORMAT) {
            return Err(invalid(format!("`format` is not `{BASELINE_FORMAT}`")));
        }
        match value.get("version").and_then(|v| v.as_u64()) {
            Some(BASELINE_VERSION) => {}
            Some(v) => {
                return Err(invalid(format!(
                    "unknown baseline version {v} (this tracereplay reads version {BASELINE_VERSION})"
                )));
            }
            None => return Err(invalid("`version` is missing or not an integer".into())),
        }
        serde_json::from_value(value).map_err(|e| invalid(e.to_string()))
    }

    /// Writes `text` to `path` atomically, inside `store`'s directory (never through a
    /// symlink).
    pub fn write_text(store: &BaselineStore, path: &Utf8Path, text: &str) -> std::io::Result<()> {
        store.confined().write(path, text.as_bytes(), true)
    }
}

/// A baseline file's `format` and `version`, as a parsed JSON value would give them (a string,
/// an unsigned integer; the last of a key given twice), read without building the value.
#[derive(Debug, Default)]
pub(crate) struct Header {
    /// `format`, when a string.
    pub(crate) format: Option<String>,
    /// `version`, when an unsigned integer.
    pub(crate) version: Option<u64>,
}

impl Header {
    /// The header of `bytes`; `None` when they are not one JSON object.
    pub(crate) fn of(bytes: &[u8]) -> Option<Header> {
        serde_json::from_slice(bytes).ok()
    }
}

impl<'de> serde::Deserialize<'de> for Header {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Header, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Header;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Header, A::Error> {
                let mut h = Header::default();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "format" => {
                            let v: serde_json::Value = map.next_value()?;
                            h.format = v.as_str().map(str::to_owned);
                        }
                        "version" => {
                            let v: serde_json::Value = map.next_value()?;
                            h.version = v.as_u64();
                        }
                        _ => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(h)
            }
        }
        d.deserialize_map(V)
    }
}

/// Where the baselines of a suite live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaselineStore {
    /// The baselines directory.
    pub dir: Utf8PathBuf,
}

/// A baseline found on disk.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct StoredCase {
    /// Encoded scenario segment.
    pub scenario_segment: String,
    /// Encoded case segment.
    pub case_segment: String,
    /// The file.
    pub path: Utf8PathBuf,
}

impl BaselineStore {
    /// A store rooted at `dir`.
    pub fn new(dir: impl Into<Utf8PathBuf>) -> Self {
        BaselineStore { dir: dir.into() }
    }

    /// Writes, removals and renames confined to the store's directory.
    pub fn confined(&self) -> Confined {
        Confined::new(self.dir.clone())
    }

    /// The approved baseline's path for (scenario, case).
    pub fn approved_path(&self, scenario: &str, case: &str) -> Utf8PathBuf {
        self.dir
            .join(encode_segment(scenario))
            .join(format!("{}{APPROVED_SUFFIX}", encode_segment(case)))
    }

    /// Reads the approved baseline of (scenario, case) — never through a symlink: a symlink in
    /// the scenario directory's place or the file's (which a pull request can add inside
    /// `baselines/`) is refused, as writes refuse it, so nothing outside the store is ever
    /// taken for an approved baseline. (The store's root may be a symlink: the user's choice.)
    pub fn read_approved(&self, scenario: &str, case: &str) -> Result<Approved, BaselineError> {
        let path = self.approved_path(scenario, case);
        let dir = self.dir.join(encode_segment(scenario));
        for p in [&dir, &path] {
            if std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(BaselineError::Io {
                    path: path.clone(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        format!(
                            "`{p}` is a symlink; approved baselines are never read through one (it could lead anywhere); replace it with the file itself"
                        ),
                    ),
                });
            }
        }
        Approved::read_unlinked(&path)
    }

    /// `<approved>.new`.
    pub fn new_path(&self, scenario: &str, case: &str) -> Utf8PathBuf {
        with_suffix(&self.approved_path(scenario, case), ".new")
    }

    /// `<approved>.deleted`.
    pub fn deleted_path(&self, scenario: &str, case: &str) -> Utf8PathBuf {
        with_suffix(&self.approved_path(scenario, case), ".deleted")
    }

    /// Every file in the store ending with `suffix`, as (scenario segment, case segment, path),
    /// sorted. Only the two-level layout is considered, and only real directories and regular
    /// files: a symlink inside the store (which a pull request can add) is never followed, so
    /// nothing it leads to is taken for a baseline, marked obsolete or accepted. The scenario
    /// directories are read in parallel (on the current rayon pool).
    pub fn list(&self, suffix: &str) -> Vec<StoredCase> {
        use rayon::prelude::*;
        let Ok(dirs) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let scenarios: Vec<String> = (dirs.filter_map(Result::ok))
            .filter(|d| d.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|d| d.file_name().into_string().ok())
            .filter(|segment| !segment.starts_with('.'))
            .collect();
        let mut out: Vec<StoredCase> = (scenarios.into_par_iter())
            .flat_map_iter(|segment| self.list_scenario(segment, suffix))
            .collect();
        out.par_sort_unstable();
        out
    }

    /// The files ending with `suffix` in one scenario's directory (regular files only).
    fn list_scenario(&self, scenario_segment: String, suffix: &str) -> Vec<StoredCase> {
        let dir = self.dir.join(&scenario_segment);
        let Ok(files) = std::fs::read_dir(&dir) else {
            return Vec::new();
        };
        (files.filter_map(Result::ok))
            .filter(|f| f.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|f| {
                let name = f.file_name().into_string().ok()?;
                let case_segment = name.strip_suffix(suffix)?.to_owned();
                Some(StoredCase {
                    scenario_segment: scenario_segment.clone(),
                    case_segment,
                    path: dir.join(&name),
                })
            })
            .collect()
    }
}

fn with_suffix(p: &Utf8Path, suffix: &str) -> Utf8PathBuf {
    Utf8PathBuf::from(format!("{p}{suffix}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::segment::{MAX_SEGMENT_BYTES, decode_segment};

    #[test]
    fn hostile_ids_never_escape_the_directory() {
        let store = BaselineStore::new("baselines");
        for (scenario, case, want) in [
            (
                "Agent.Tool.Basic",
                "default",
                "baselines/agent.tool.basic/default.baseline.json",
            ),
            ("..", "x", "baselines/%2E%2E/x.baseline.json"),
            (".", "..", "baselines/%2E/%2E%2E.baseline.json"),
            (
                "../../etc",
                "passwd",
                "baselines/..%2F..%2Fetc/passwd.baseline.json",
            ),
            (
                "a/b\\c",
                "c:d e",
                "baselines/a%2Fb%5Cc/c%3Ad%20e.baseline.json",
            ),
            ("/abs", "\0", "baselines/%2Fabs/%00.baseline.json"),
            (
                "Ünï",
                "sample-1",
                "baselines/%C3%BCn%C3%AF/sample-1.baseline.json",
            ),
        ] {
            let p = store.approved_path(scenario, case);
            assert_eq!(p.as_str(), want);
            assert_eq!(p.components().count(), 3, "{p}");
            assert!(p.starts_with("baselines"));
        }
        assert_eq!(decode_segment("a%2Fb%5Cc"), "a/b\\c");
        // Over-long ids are cut with a hash suffix: bounded, stable, distinct.
        let long = "é".repeat(100);
        let seg = encode_segment(&long);
        assert!(seg.len() <= MAX_SEGMENT_BYTES, "{}", seg.len());
        assert_eq!(seg, encode_segment(&long.to_uppercase()));
        assert_ne!(seg, encode_segment(&format!("{long}x")));
        assert!(seg.contains('~') && !seg[..seg.find('~').unwrap()].ends_with('%'));
        let plain = "a".repeat(MAX_SEGMENT_BYTES);
        assert_eq!(encode_segment(&plain), plain);
        assert_eq!(decode_segment("%C3%BCn"), "ün");
    }

    /// The demo's baselines read straight into their type give what reading them as a JSON value
    /// first gives; a key given twice (which the straight read refuses) counts once, the last, as
    /// it always did; a damaged file's message is unchanged.
    #[test]
    fn the_straight_read_agrees_with_the_value_read() {
        let path = Utf8Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../baselines/agent.tool.basic/default.baseline.json"
        ));
        let bytes = std::fs::read(path).unwrap();
        let straight = BaselineFile::parse(path, &bytes).unwrap();
        let via_value = BaselineFile::parse_with(path, &bytes, None).unwrap();
        assert_eq!(straight, via_value);
        let text = String::from_utf8(bytes).unwrap();
        let twice = text.replacen("\"case\"", "\"case\": \"first\",\n  \"case\"", 1);
        assert_ne!(twice, text);
        let b = BaselineFile::parse(path, twice.as_bytes()).unwrap();
        assert_eq!(b.case, via_value.case);
        let header = Header::of(twice.as_bytes()).unwrap();
        assert_eq!(header.format.as_deref(), Some(BASELINE_FORMAT));
        let cut = &text.as_bytes()[..text.len() / 2];
        let (a, b) = (
            BaselineFile::parse(path, cut).unwrap_err().to_string(),
            BaselineFile::parse_with(path, cut, None)
                .unwrap_err()
                .to_string(),
        );
        assert_eq!(a, b);
        assert!(a.contains("line"), "{a}");
    }

    /// The listing, read in parallel, is the same sorted list whatever the thread count: the
    /// files of each scenario directory with the suffix asked for, and nothing else (no hidden
    /// directory, no file at the top, no symlink, no other suffix).
    #[test]
    fn the_listing_is_sorted_and_takes_only_what_the_layout_holds() {
        let dir = tempfile::tempdir().unwrap();
        let root = Utf8Path::from_path(dir.path()).unwrap();
        for s in (0..40).rev() {
            std::fs::create_dir(root.join(format!("s{s:02}"))).unwrap();
            for c in [3, 1, 2] {
                let file = root.join(format!("s{s:02}/c{c}{APPROVED_SUFFIX}"));
                std::fs::write(file, "{}").unwrap();
            }
        }
        std::fs::write(root.join(format!("s07/c9{NEW_SUFFIX}")), "{}").unwrap();
        std::fs::create_dir(root.join(".hidden")).unwrap();
        std::fs::write(root.join(format!(".hidden/c{APPROVED_SUFFIX}")), "{}").unwrap();
        std::fs::write(root.join(format!("top{APPROVED_SUFFIX}")), "{}").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(
            root.join(format!("s00/c1{APPROVED_SUFFIX}")),
            root.join(format!("s01/link{APPROVED_SUFFIX}")),
        )
        .unwrap();
        let store = BaselineStore::new(root);
        let want: Vec<StoredCase> = (0..40)
            .flat_map(|s| {
                (1..=3).map(move |c| StoredCase {
                    scenario_segment: format!("s{s:02}"),
                    case_segment: format!("c{c}"),
                    path: root.join(format!("s{s:02}/c{c}{APPROVED_SUFFIX}")),
                })
            })
            .collect();
        for threads in [1, 4] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build();
            assert_eq!(pool.unwrap().install(|| store.list(APPROVED_SUFFIX)), want);
        }
        let pending = store.list(NEW_SUFFIX);
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].path, root.join(format!("s07/c9{NEW_SUFFIX}")));
        assert!(
            BaselineStore::new(root.join("absent"))
                .list(APPROVED_SUFFIX)
                .is_empty()
        );
    }
}
