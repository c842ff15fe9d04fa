//! Loading scenario files: one object or an array per file, every problem reported with the file
//! (and line and column for parse errors) while the other files still load.

use std::collections::{BTreeMap, HashSet};

use camino::{Utf8Path, Utf8PathBuf};
use serde_json::{Map, Value};

use super::model::*;

/// A scenario file, or one scenario in it, that could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("cannot read `{path}`")]
    Io {
        /// The scenario file.
        path: Utf8PathBuf,
        /// The I/O failure.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid JSON.
    #[error("`{path}`, line {line}, column {column}: {detail}")]
    Parse {
        /// The scenario file.
        path: Utf8PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the JSON parser said.
        detail: String,
    },
    /// The JSON does not have the scenario shape.
    #[error("`{path}`: {detail}")]
    Invalid {
        /// The scenario file.
        path: Utf8PathBuf,
        /// What is wrong, naming the scenario by index or id.
        detail: String,
    },
}

impl ScenarioError {
    /// The file the problem is in.
    pub fn path(&self) -> &Utf8Path {
        match self {
            ScenarioError::Io { path, .. }
            | ScenarioError::Parse { path, .. }
            | ScenarioError::Invalid { path, .. } => path,
        }
    }

    /// What is wrong, without the file name.
    pub fn detail(&self) -> String {
        match self {
            ScenarioError::Io { source, .. } => format!("cannot read the file: {source}"),
            ScenarioError::Parse { detail, .. } | ScenarioError::Invalid { detail, .. } => {
                detail.clone()
            }
        }
    }

    /// The line, for parse errors.
    pub fn line(&self) -> Option<usize> {
        match self {
            ScenarioError::Parse { line, .. } => Some(*line),
            ScenarioError::Io { .. } | ScenarioError::Invalid { .. } => None,
        }
    }
}

/// Scenarios loaded from a set of files, and the problems met on the way.
#[derive(Debug, Default)]
pub struct LoadedScenarios {
    /// Every scenario that loaded, in file order.
    pub scenarios: Vec<Scenario>,
    /// Every file or entry that did not.
    pub errors: Vec<ScenarioError>,
    /// The bytes of every file given (scenario files, then suite files, contracts included;
    /// empty for a file that could not be read), for callers that scan or fingerprint them
    /// without reading them again.
    pub sources: Vec<(Utf8PathBuf, Vec<u8>)>,
}

/// One file's outcome: a parse failure, or each scenario in it loaded or not.
pub type FileResult = Result<Vec<Result<Scenario, ScenarioError>>, ScenarioError>;

/// Loads `files` (`*.scenario.json`) and `suite_files` (every `*.json` of a `--scenarios DIR`);
/// suite files that some scenario names as its contract are contracts, not scenarios, and are
/// dropped. `roots` are the directories searched: a scenario's Harness Contract must lie inside
/// the root its file was found under (with no roots, inside the scenario file's directory).
pub fn load_scenarios(
    files: &[Utf8PathBuf],
    suite_files: &[Utf8PathBuf],
    roots: &[Utf8PathBuf],
) -> LoadedScenarios {
    use rayon::prelude::*;
    // Files are parsed in parallel and kept in order.
    let listed: Vec<(&Utf8PathBuf, bool)> = (files.iter().map(|p| (p, false)))
        .chain(suite_files.iter().map(|p| (p, true)))
        .collect();
    let roots: Vec<std::path::PathBuf> = (roots.iter())
        .filter_map(|r| std::fs::canonicalize(r).ok())
        .collect();
    let per_file: Vec<(Utf8PathBuf, bool, Vec<u8>, FileResult)> = listed
        .into_par_iter()
        .map(|(path, from_suite)| {
            let (bytes, result) = read_file(path, &roots);
            (path.clone(), from_suite, bytes, result)
        })
        .collect();
    let contracts: HashSet<Utf8PathBuf> = per_file
        .iter()
        .filter_map(|(_, _, _, r)| r.as_ref().ok())
        .flatten()
        .filter_map(|s| s.as_ref().ok())
        .filter_map(|s| {
            let c = s.contract.as_deref()?;
            Some(normalize(
                &s.file.parent().unwrap_or(Utf8Path::new("")).join(c),
            ))
        })
        .collect();
    let mut out = LoadedScenarios::default();
    for (path, from_suite, bytes, result) in per_file {
        let contract = from_suite && contracts.contains(&normalize(&path));
        out.sources.push((path, bytes));
        if contract {
            continue;
        }
        match result {
            Ok(entries) => {
                for e in entries {
                    match e {
                        Ok(s) => out.scenarios.push(s),
                        Err(e) => out.errors.push(e),
                    }
                }
            }
            Err(e) => out.errors.push(e),
        }
    }
    out
}

/// Lexically normalises `a/./b/../c` to `a/c`, for comparing paths named in different ways.
fn normalize(p: &Utf8Path) -> Utf8PathBuf {
    let mut out = Utf8PathBuf::new();
    for c in p.components() {
        match c {
            camino::Utf8Component::CurDir => {}
            camino::Utf8Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_str()),
        }
    }
    out
}

/// Loads one file: the whole file fails on a parse error; otherwise each scenario in it loads or
/// fails on its own. Its contract must lie inside the file's directory.
pub fn load_file(path: &Utf8Path) -> FileResult {
    read_file(path, &[]).1
}

/// A scenario from JSON text (one scenario object), as a test builds one without writing a file:
/// its `file` is `<string>`, and a `contract` it names is resolved from the working directory
/// and must lie inside it.
impl std::str::FromStr for Scenario {
    type Err = ScenarioError;

    fn from_str(text: &str) -> Result<Scenario, ScenarioError> {
        let path = Utf8Path::new("<string>");
        let root = std::env::current_dir().and_then(std::fs::canonicalize).ok();
        let mut all = parse_file(path, text.as_bytes(), root.as_deref())?;
        match all.len() {
            1 => all.remove(0),
            n => Err(ScenarioError::Invalid {
                path: path.to_owned(),
                detail: format!("holds {n} scenarios; parse one scenario object"),
            }),
        }
    }
}

/// The largest scenario (or Harness Contract) file read; a larger one, or one that is not a
/// regular file, is a load error.
pub const MAX_SCENARIO_BYTES: u64 = 16 << 20;

/// [`load_file`], also giving the bytes read (empty when the file could not be read), with the
/// contract confined to whichever of `roots` (canonical) holds the file.
fn read_file(path: &Utf8Path, roots: &[std::path::PathBuf]) -> (Vec<u8>, FileResult) {
    match crate::fsutil::read_regular(path, MAX_SCENARIO_BYTES, "scenario file") {
        Ok(bytes) => {
            let canonical = std::fs::canonicalize(path).ok();
            let root = canonical
                .as_ref()
                .and_then(|c| {
                    roots
                        .iter()
                        .filter(|r| c.starts_with(r))
                        .max_by_key(|r| r.as_os_str().len())
                })
                .cloned()
                .or_else(|| {
                    canonical
                        .as_ref()
                        .and_then(|c| c.parent())
                        .map(|p| p.to_owned())
                });
            let result = parse_file(path, &bytes, root.as_deref());
            (bytes, result)
        }
        Err(source) => {
            let path = path.to_owned();
            (Vec::new(), Err(ScenarioError::Io { path, source }))
        }
    }
}

/// [`load_file`] over bytes read already; `root` (canonical) is where its contract must lie.
pub(crate) fn parse_file(
    path: &Utf8Path,
    bytes: &[u8],
    root: Option<&std::path::Path>,
) -> FileResult {
    let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
    let parse_error = |e: serde_json::Error| ScenarioError::Parse {
        path: path.to_owned(),
        line: e.line(),
        column: e.column(),
        detail: crate::trace::json::message_without_position(&e),
    };
    let value: Value = serde_json::from_slice(bytes).map_err(parse_error)?;
    // serde_json keeps the last of two equal keys without a word; a scenario must not (a second
    // `oracles` would silently replace the first).
    crate::trace::json::no_duplicate_keys(bytes).map_err(parse_error)?;
    let invalid = |detail: String| ScenarioError::Invalid {
        path: path.to_owned(),
        detail,
    };
    Ok(match value {
        Value::Object(obj) => vec![scenario_from(path, None, &obj, root)],
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::Object(obj) => scenario_from(path, Some(i), obj, root),
                _ => Err(invalid(format!(
                    "entry {i} of the array is not a scenario object"
                ))),
            })
            .collect(),
        _ => {
            return Err(invalid(
                "a scenario file holds one scenario object or an array of them".into(),
            ));
        }
    })
}

/// The keys of a scenario object.
const SCENARIO_KEYS: &[&str] = &[
    "id",
    "title",
    "risk",
    "type",
    "tags",
    "description",
    "notes",
    "input",
    "expected",
    "oracles",
    "scriptedTrace",
    "contract",
    "knownGap",
    "judgeCopiedContext",
    "metadata",
    "trials",
    "$schema",
];

/// The keys of `expected`.
const EXPECTED_KEYS: &[&str] = &[
    "mustCallTools",
    "mustNotCallTools",
    "finalAnswerContains",
    "finalAnswerMustNotContain",
    "maxToolCalls",
    "requiresApproval",
];

/// The keys of `obj` that are not in `allowed` (compared ignoring case), or that repeat one in
/// another spelling, worded as problems (`prefix` names the object).
fn key_problems(obj: &Map<String, Value>, allowed: &[&str], prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for key in obj.keys() {
        match allowed.iter().find(|a| a.eq_ignore_ascii_case(key)) {
            Some(a) if seen.contains(a) => out.push(format!(
                "`{prefix}{a}` is given twice, in two spellings (property names ignore case)"
            )),
            Some(a) => seen.push(a),
            None => {
                let mut m = format!(
                    "unknown key `{prefix}{key}`, which the scenario format does not define"
                );
                if let Some(meant) = crate::oracle::registry::closest(key, allowed.iter().copied())
                {
                    m.push_str(&format!("; did you mean `{prefix}{meant}`?"));
                }
                out.push(m);
            }
        }
    }
    out
}

fn scenario_from(
    path: &Utf8Path,
    index: Option<usize>,
    obj: &Map<String, Value>,
    root: Option<&std::path::Path>,
) -> Result<Scenario, ScenarioError> {
    let id = field(obj, "id")
        .and_then(Value::as_str)
        .map(str::trim)
        .unwrap_or("");
    let which = match (index, id.is_empty()) {
        (_, false) => format!("scenario `{id}`"),
        (Some(i), true) => format!("scenario {i} of the array"),
        (None, true) => "the scenario".to_owned(),
    };
    let invalid = |detail: String| ScenarioError::Invalid {
        path: path.to_owned(),
        detail: format!("{which}: {detail}"),
    };
    if id.is_empty() {
        return Err(invalid("lacks a non-blank `id`".into()));
    }
    let string = |name: &str| -> Result<Option<String>, ScenarioError> {
        match field(obj, name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(invalid(format!("`{name}` must be a string"))),
        }
    };
    let risk_set = string("risk")?.is_some();
    let risk = match string("risk")? {
        None => Risk::Low,
        Some(r) => Risk::parse(&r).ok_or_else(|| {
            invalid(format!(
                "`risk` is `{r}`, expected Low, Medium, High or Critical"
            ))
        })?,
    };
    let tags = string_list(field(obj, "tags"))
        .map_err(|()| invalid("`tags` must be an array of strings".into()))?;
    let expected = match field(obj, "expected") {
        None | Some(Value::Null) => Expected::default(),
        Some(Value::Object(e)) => expected_from(e).map_err(invalid)?,
        Some(_) => return Err(invalid("`expected` must be an object".into())),
    };
    let oracles = match field(obj, "oracles") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, o)| match o {
                Value::Object(params) => Ok(OracleSpec::new(i, params.clone())),
                _ => Err(invalid(format!("oracle {i} is not an object"))),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(invalid("`oracles` must be an array".into())),
    };
    let metadata = match field(obj, "metadata") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(Value::Object(m)) => m
            .iter()
            .filter_map(|(k, v)| metadata_string(v).map(|v| (k.clone(), v)))
            .collect(),
        Some(_) => return Err(invalid("`metadata` must be an object of strings".into())),
    };
    let known_gap = match field(obj, "knownGap") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(invalid("`knownGap` must be true or false".into())),
    };
    let judge_copied_context = match field(obj, "judgeCopiedContext") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(invalid("`judgeCopiedContext` must be true or false".into())),
    };
    let contract = string("contract")?.filter(|c| !c.trim().is_empty());
    let (trials, trials_problem) =
        match crate::trials::policy::TrialsPolicy::from_json(field(obj, "trials")) {
            Ok(p) => (p, None),
            Err(e) => (Default::default(), Some(e)),
        };
    let mut unknown_keys = key_problems(obj, SCENARIO_KEYS, "");
    if let Some(Value::Object(e)) = field(obj, "expected") {
        unknown_keys.extend(key_problems(e, EXPECTED_KEYS, "expected."));
    }
    let mut scenario = Scenario {
        id: id.to_owned(),
        title: string("title")?.unwrap_or_default(),
        risk,
        kind: string("type")?,
        tags,
        description: string("description")?,
        input: field(obj, "input").cloned(),
        expected,
        oracles,
        scripted_trace: field(obj, "scriptedTrace")
            .filter(|v| !v.is_null())
            .cloned(),
        contract_loaded: contract
            .as_deref()
            .map(|c| contract_within(path, c.trim(), root)),
        contract,
        known_gap,
        judge_copied_context,
        metadata,
        file: path.to_owned(),
        risk_set,
        unknown_keys,
        trials,
        trials_problem,
    };
    scenario.configure_oracles();
    Ok(scenario)
}

fn string_list(v: Option<&Value>) -> Result<Vec<String>, ()> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_owned).ok_or(()))
            .collect(),
        Some(_) => Err(()),
    }
}

/// The file of the contract `c` (trimmed) that the scenario file `path` names: relative to it.
pub(crate) fn contract_file(path: &Utf8Path, c: &str) -> Utf8PathBuf {
    path.parent().unwrap_or(Utf8Path::new("")).join(c.trim())
}

/// Loads the contract `c` named by the scenario file `path`: relative to the file, and resolving
/// (symlinks and `..` included) inside `root`; anything else is a load error, so a scenario
/// cannot read a file elsewhere on the machine.
fn contract_within(
    path: &Utf8Path,
    c: &str,
    root: Option<&std::path::Path>,
) -> Result<super::contract::Contract, String> {
    if Utf8Path::new(c).is_absolute() || c.starts_with('/') || c.starts_with('\\') {
        return Err(format!(
            "contract path `{c}` is absolute; name it relative to the scenario file, inside the suite"
        ));
    }
    let joined = contract_file(path, c);
    if let (Some(root), Ok(resolved)) = (root, std::fs::canonicalize(&joined)) {
        if !resolved.starts_with(root) {
            return Err(format!(
                "contract path `{c}` leads outside the suite root `{}`; keep contracts inside the suite",
                crate::paths::display_path(Utf8Path::from_path(root).unwrap_or(Utf8Path::new("?")))
            ));
        }
    }
    super::contract::load_contract(&joined)
}

/// Trims entries and drops blank ones: blank values count as not configured.
fn configured(list: Vec<String>) -> Vec<String> {
    list.into_iter()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

fn expected_from(e: &Map<String, Value>) -> Result<Expected, String> {
    let list = |name: &str| {
        string_list(field(e, name))
            .map(configured)
            .map_err(|()| format!("`expected.{name}` must be an array of strings"))
    };
    let max_tool_calls =
        match field(e, "maxToolCalls") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_u64().ok_or_else(|| {
                "`expected.maxToolCalls` must be a non-negative integer".to_owned()
            })?),
        };
    let requires_approval = match field(e, "requiresApproval") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err("`expected.requiresApproval` must be true or false".into()),
    };
    Ok(Expected {
        must_call_tools: list("mustCallTools")?,
        must_not_call_tools: list("mustNotCallTools")?,
        final_answer_contains: list("finalAnswerContains")?,
        final_answer_must_not_contain: list("finalAnswerMustNotContain")?,
        max_tool_calls,
        requires_approval,
    })
}

#[cfg(test)]
#[path = "load_tests.rs"]
mod tests;
