//! Harness Contracts: the planned work recorded before execution, loaded and validated.

use camino::Utf8Path;
use serde_json::{Map, Value};

use crate::trace::json::field;

/// The largest contract file read (as large as a scenario file may be).
pub const MAX_CONTRACT_BYTES: u64 = 16 << 20;

/// What kind of work an action does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionType {
    /// Reads only.
    Read,
    /// Writes files.
    Write,
    /// Runs something.
    Execute,
}

/// A `file` or `directory` entry of a read or write set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathEntry {
    /// `true` for `directory` (matches as a prefix), `false` for `file` (matches exactly).
    pub directory: bool,
    /// Normalised path.
    pub path: String,
}

/// One planned action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedAction {
    /// Action id.
    pub id: String,
    /// The tool it uses.
    pub tool_name: String,
    /// Read, write or execute.
    pub action_type: ActionType,
    /// Whether a granted approval must precede its calls.
    pub requires_approval: bool,
    /// Paths it may read.
    pub read_set: Vec<PathEntry>,
    /// Paths it may write.
    pub write_set: Vec<PathEntry>,
}

/// One verification step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerificationStep {
    /// Step id.
    pub id: String,
    /// `command`, or another kind.
    pub kind: String,
    /// The command, for `command` steps.
    pub command: Option<String>,
    /// Whether the run must perform it (default true).
    pub required: bool,
}

/// A Harness Contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contract {
    /// Contract id.
    pub id: String,
    /// Planned actions.
    pub planned_actions: Vec<PlannedAction>,
    /// Verification steps.
    pub verification_plan: Vec<VerificationStep>,
}

/// Normalises a path for comparison: `\` becomes `/`, `.` segments and leading `./` go, `..`
/// pops a segment.
pub fn normalize_path(p: &str) -> String {
    let p = p.replace('\\', "/");
    let absolute = p.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|s| *s != "..") {
                    out.pop();
                } else if !absolute {
                    out.push("..");
                }
            }
            s => out.push(s),
        }
    }
    let joined = out.join("/");
    if absolute {
        format!("/{joined}")
    } else {
        joined
    }
}

impl PathEntry {
    /// Whether `path` (normalised) falls under this entry.
    pub fn covers(&self, path: &str) -> bool {
        if self.directory {
            self.path.is_empty()
                || path == self.path
                || path.starts_with(&format!("{}/", self.path.trim_end_matches('/')))
        } else {
            path == self.path
        }
    }
}

fn string(obj: &Map<String, Value>, name: &str, at: &str) -> Result<Option<String>, String> {
    match field(obj, name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("{at}`{name}` must be a string")),
    }
}

fn boolean(obj: &Map<String, Value>, name: &str, at: &str, default: bool) -> Result<bool, String> {
    match field(obj, name) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(format!("{at}`{name}` must be true or false")),
    }
}

fn array<'v>(obj: &'v Map<String, Value>, name: &str, at: &str) -> Result<&'v [Value], String> {
    match field(obj, name) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(format!("{at}`{name}` must be an array")),
    }
}

fn path_set(obj: &Map<String, Value>, name: &str, at: &str) -> Result<Vec<PathEntry>, String> {
    array(obj, name, at)?
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let at = format!("{at}`{name}[{i}]`: ");
            let o = v.as_object().ok_or_else(|| format!("{at}not an object"))?;
            let kind = string(o, "kind", &at)?.unwrap_or_default();
            let directory = match kind.trim().to_ascii_lowercase().as_str() {
                "file" => false,
                "directory" => true,
                other => {
                    return Err(format!(
                        "{at}`kind` is `{other}`, expected `file` or `directory`"
                    ));
                }
            };
            let path = string(o, "path", &at)?
                .filter(|p| !p.trim().is_empty())
                .ok_or_else(|| format!("{at}no `path`"))?;
            Ok(PathEntry {
                directory,
                path: normalize_path(&path),
            })
        })
        .collect()
}

/// Loads and validates a contract file.
pub fn load_contract(path: &Utf8Path) -> Result<Contract, String> {
    let bytes = crate::fsutil::read_regular(path, MAX_CONTRACT_BYTES, "contract")
        .map_err(|e| format!("cannot read contract `{path}`: {e}"))?;
    parse_contract_bytes(path, &bytes)
}

/// Parses and validates the bytes of the contract file `path`.
pub(crate) fn parse_contract_bytes(path: &Utf8Path, bytes: &[u8]) -> Result<Contract, String> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        format!(
            "contract `{path}`, line {}, column {}: {e}",
            e.line(),
            e.column()
        )
    })?;
    let obj = value
        .as_object()
        .ok_or_else(|| format!("contract `{path}` is not a JSON object"))?;
    parse_contract(obj).map_err(|e| format!("contract `{path}`: {e}"))
}

fn parse_contract(obj: &Map<String, Value>) -> Result<Contract, String> {
    let planned_actions = array(obj, "plannedActions", "")?
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let at = format!("`plannedActions[{i}]`: ");
            let o = v.as_object().ok_or_else(|| format!("{at}not an object"))?;
            let tool_name = string(o, "toolName", &at)?
                .map(|t| t.trim().to_owned())
                .filter(|t| !t.is_empty())
                .ok_or_else(|| format!("{at}no `toolName`"))?;
            let action_type = match string(o, "actionType", &at)?
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
                .as_str()
            {
                "read" => ActionType::Read,
                "write" => ActionType::Write,
                "execute" => ActionType::Execute,
                other => {
                    return Err(format!(
                        "{at}`actionType` is `{other}`, expected read, write or execute"
                    ));
                }
            };
            Ok(PlannedAction {
                id: string(o, "id", &at)?.unwrap_or_else(|| format!("action-{i}")),
                tool_name,
                action_type,
                requires_approval: boolean(o, "requiresApproval", &at, false)?,
                read_set: path_set(o, "readSet", &at)?,
                write_set: path_set(o, "writeSet", &at)?,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let verification_plan = array(obj, "verificationPlan", "")?
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let at = format!("`verificationPlan[{i}]`: ");
            let o = v.as_object().ok_or_else(|| format!("{at}not an object"))?;
            let kind = string(o, "kind", &at)?.unwrap_or_default();
            let command = string(o, "command", &at)?.filter(|c| !c.trim().is_empty());
            if kind.eq_ignore_ascii_case("command") && command.is_none() {
                return Err(format!("{at}a `command` step needs a `command`"));
            }
            Ok(VerificationStep {
                id: string(o, "id", &at)?.unwrap_or_else(|| format!("step-{i}")),
                kind,
                command,
                required: boolean(o, "required", &at, true)?,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Contract {
        id: string(obj, "id", "")?.unwrap_or_default(),
        planned_actions,
        verification_plan,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_normalise_and_sets_match() {
        assert_eq!(normalize_path("./out/../out/a.txt"), "out/a.txt");
        assert_eq!(normalize_path("out\\sub\\b.txt"), "out/sub/b.txt");
        assert_eq!(normalize_path("../x"), "../x");
        let dir = PathEntry {
            directory: true,
            path: "out".into(),
        };
        assert!(dir.covers("out/a.txt") && dir.covers("out") && !dir.covers("outside/a.txt"));
        let file = PathEntry {
            directory: false,
            path: "out/a.txt".into(),
        };
        assert!(file.covers("out/a.txt") && !file.covers("out/a.txt.bak"));
    }

    #[test]
    fn invalid_contracts_say_what_is_wrong() {
        for (json, needle) in [
            (
                r#"{"plannedActions":[{"toolName":"x","actionType":"delete"}]}"#,
                "`actionType` is `delete`",
            ),
            (
                r#"{"plannedActions":[{"actionType":"read"}]}"#,
                "no `toolName`",
            ),
            (
                r#"{"plannedActions":[{"toolName":"w","actionType":"write","writeSet":[{"kind":"disk","path":"a"}]}]}"#,
                "expected `file` or `directory`",
            ),
            (
                r#"{"verificationPlan":[{"id":"v","kind":"command"}]}"#,
                "needs a `command`",
            ),
        ] {
            let v: Value = serde_json::from_str(json).unwrap();
            let err = parse_contract(v.as_object().unwrap()).unwrap_err();
            assert!(err.contains(needle), "{err}");
        }
    }
}
