//! Quality gates over scenario files: every problem listed, each with its file (and line and
//! column for parse errors), so a suite cannot give false confidence.

mod hostile;
pub mod strength;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::oracle::registry::{self, Family};
use crate::oracle::{canonical_type, misconfigurations};
use crate::paths::display_path;
use crate::scenario::{LoadedScenarios, Scenario};

/// One gate problem.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct GateProblem {
    /// The file, relative to the working directory.
    pub file: String,
    /// The scenario, where there is one.
    pub scenario: Option<String>,
    /// Line: of a parse error, or of the key a misconfigured oracle's problem names.
    pub line: Option<usize>,
    /// Column, with the line.
    pub column: Option<usize>,
    /// What is wrong and what to do.
    pub message: String,
}

impl std::fmt::Display for GateProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`", self.file)?;
        if let (Some(l), Some(c)) = (self.line, self.column) {
            write!(f, ", line {l}, column {c}")?;
        }
        if let Some(s) = &self.scenario {
            write!(f, ": scenario `{s}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

const TOOL_TAGS: &[&str] = &["tool-use", "tool", "tools"];
const APPROVAL_TAGS: &[&str] = &["approval", "safety", "security"];

/// The names of the oracle types of a `gates` family, for messages.
fn family_names(family: Family) -> String {
    let names: Vec<&str> = (registry::TYPES.iter())
        .filter(|t| t.family == family)
        .map(|t| t.name)
        .collect();
    names.join(", ")
}

/// The gate problems of one scenario on its own (duplicates are a suite-level rule).
pub fn scenario_problems(s: &Scenario) -> Vec<String> {
    problems(s).into_iter().map(|(m, _)| m).collect()
}

/// Where in its scenario's file the problem of oracle `index` is: the key the problem names
/// (`args.sport`), else the oracle itself; `(line, column)`.
fn oracle_location(s: &Scenario, index: usize) -> Option<(usize, usize)> {
    let text = std::fs::read_to_string(&s.file).ok()?;
    // A file holds one scenario, or an array of them: this one is the first with its id.
    let at = match serde_json::from_str::<serde_json::Value>(&text).ok()? {
        serde_json::Value::Array(items) => {
            let id =
                |v: &serde_json::Value| v.get("id").and_then(|i| i.as_str()).map(str::to_lowercase);
            let n = (items.iter()).position(|v| id(v).as_deref() == Some(&s.id.to_lowercase()))?;
            vec![n.to_string()]
        }
        _ => Vec::new(),
    };
    let key = (s.oracles.iter())
        .find(|o| o.index == index)
        .and_then(|o| o.misconfiguration())
        .and_then(|e| e.keys().next().map(crate::scenario::locate::segments))
        .unwrap_or_default();
    let mut path: Vec<String> = at;
    path.extend(["oracles".to_owned(), index.to_string()]);
    path.extend(key);
    let path: Vec<&str> = path.iter().map(String::as_str).collect();
    crate::scenario::locate::locate(&text, &path)
}

/// [`scenario_problems`], each with the index of the oracle it is about, if one.
fn problems(s: &Scenario) -> Vec<(String, Option<usize>)> {
    let mut out: Vec<String> = s.unknown_keys.clone();
    out.extend(s.trials_problem.clone());
    if !s.risk_set {
        out.push(
            "risk not set: failures of this scenario never fail the run under the default --fail-on high; set `risk` to Low, Medium, High or Critical".to_owned(),
        );
    }
    if s.title.trim().is_empty() {
        out.push("`title` is blank".to_owned());
    }
    if s.oracles.is_empty() {
        out.push("no oracles, so it proves nothing; add at least one to `oracles`".to_owned());
    }
    let mut out: Vec<(String, Option<usize>)> = out.into_iter().map(|m| (m, None)).collect();
    let contract_broken = matches!(s.contract_loaded, Some(Err(_)));
    for (index, written, message) in misconfigurations(&s.oracles) {
        if contract_broken && canonical_type(&written) == Some("contract-conformant") {
            continue; // reported once below, as the contract's own problem
        }
        let message = match canonical_type(&written) {
            Some(_) => format!(
                "oracle {index} (`{written}`): {}",
                message.trim_start_matches("misconfigured: ")
            ),
            None if written.is_empty() => format!("oracle {index} has no `type`"),
            None => format!(
                "oracle {index} has unknown type `{written}` (judged as `unknown:{written}`){}",
                registry::closest(&written, crate::oracle::known_types())
                    .map(|m| format!("; did you mean `{m}`?"))
                    .unwrap_or_default()
            ),
        };
        out.push((message, Some(index)));
    }
    // A composing oracle counts as the families of the oracles inside it (a `not` of a
    // `tool-called` still judges tools).
    let families: Vec<Family> = (s.oracles.iter())
        .filter_map(|o| Some((registry::lookup(o.type_name())?, o)))
        .flat_map(|(t, o)| match &o.oracle {
            Some(Ok(oracle)) if t.family == Family::Composite => {
                crate::oracle::compose::leaf_kinds(t.name, oracle)
                    .into_iter()
                    .filter_map(registry::lookup)
                    .map(|l| l.family)
                    .collect()
            }
            _ => vec![t.family],
        })
        .collect();
    if TOOL_TAGS.iter().any(|t| s.has_tag(t))
        && s.expected.must_call_tools.is_empty()
        && s.expected.must_not_call_tools.is_empty()
        && !families.contains(&Family::Tool)
    {
        let m = format!(
            "is tagged as tool use but has no tool oracle ({}) and no `expected.mustCallTools`/`mustNotCallTools`",
            family_names(Family::Tool)
        );
        out.push((m, None));
    }
    let approval_scoped =
        APPROVAL_TAGS.iter().any(|t| s.has_tag(t)) || s.expected.requires_approval.is_some();
    if approval_scoped && !families.contains(&Family::Approval) {
        let m = format!(
            "is about approvals or safety but has no {} oracle",
            family_names(Family::Approval).replace(", no-", " or no-")
        );
        out.push((m, None));
    }
    if let Some(Err(e)) = &s.contract_loaded {
        out.push((format!("its contract does not load: {e}"), None));
    }
    out
}

/// What `gates` warns about in a scenario without failing it: settings that can never apply,
/// such as an `argsMatchOverrides` entry for a tool none of the oracle's expected calls names.
pub fn scenario_warnings(s: &Scenario) -> Vec<String> {
    use crate::oracle::Oracle;
    use crate::oracle::sequence::{SeqConfig, Split};
    fn sequences<'o>(o: &'o Oracle, out: &mut Vec<&'o SeqConfig>) {
        match o {
            Oracle::ToolSequence(cfg) => out.push(cfg),
            Oracle::Not(i) => sequences(&i.oracle, out),
            Oracle::AllOf(is) | Oracle::AnyOf(is) => {
                is.iter().for_each(|i| sequences(&i.oracle, out))
            }
            Oracle::Threshold { inner, .. } | Oracle::Turn { inner, .. } => sequences(inner, out),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for spec in &s.oracles {
        let Some(Ok(oracle)) = &spec.oracle else {
            continue;
        };
        let mut found = Vec::new();
        sequences(oracle, &mut found);
        for cfg in found {
            let lists: Vec<&crate::oracle::sequence::ExpectedCall> = match &cfg.split {
                Split::Whole => cfg.expected.iter().collect(),
                Split::Turns(l) | Split::Inferences(l) => l.iter().flatten().collect(),
            };
            for (tool, mode) in &cfg.overrides {
                let names = |e: &&crate::oracle::sequence::ExpectedCall| {
                    crate::oracle::names::tool_matches(tool, &e.tool)
                        || crate::oracle::names::tool_matches(&e.tool, tool)
                };
                if !lists.iter().any(names) {
                    out.push(format!(
                        "oracle {} (`{}`): `argsMatchOverrides.{tool}` names a tool no expected call has, so it never applies",
                        spec.index,
                        spec.type_name()
                    ));
                }
                // A path missing on both sides passes (the spec's rule), so a path that names
                // nothing in any expected call's arguments (a typo: `ordr.id`) compares nothing.
                let crate::oracle::jsoneq::ArgsMatch::Paths(paths) = mode else {
                    continue;
                };
                let args: Vec<&serde_json::Value> = (lists.iter())
                    .filter(|e| names(e))
                    .filter_map(|e| e.args.as_ref())
                    .collect();
                for path in paths.iter().filter(|_| !args.is_empty()) {
                    if !args
                        .iter()
                        .any(|a| crate::oracle::jsoneq::resolve_path(a, path).is_some())
                    {
                        out.push(format!(
                            "oracle {} (`{}`): `argsMatchOverrides.{tool}` path `{path}` names nothing in the expected arguments of `{tool}`; a path missing on both sides passes, so it compares nothing",
                            spec.index,
                            spec.type_name()
                        ));
                    }
                }
            }
        }
    }
    out
}

/// Every gate problem of a loaded suite, sorted; `searched` names where it was looked for.
pub fn check_gates(loaded: &LoadedScenarios, searched: &str) -> Vec<GateProblem> {
    let mut out = Vec::new();
    for e in &loaded.errors {
        let (line, column) = match e {
            crate::scenario::ScenarioError::Parse { line, column, .. } => {
                (Some(*line), Some(*column))
            }
            _ => (None, None),
        };
        let message = e.detail();
        out.push(GateProblem {
            file: display_path(e.path()),
            scenario: None,
            line,
            column,
            message,
        });
    }
    if loaded.scenarios.is_empty() {
        out.push(GateProblem {
            file: searched.to_owned(),
            scenario: None,
            line: None,
            column: None,
            message: "no scenarios found (scenario files are named `*.scenario.json`)".into(),
        });
    }
    let mut by_id: BTreeMap<String, Vec<&Scenario>> = BTreeMap::new();
    for s in &loaded.scenarios {
        by_id.entry(s.id.to_lowercase()).or_default().push(s);
        for (message, oracle) in problems(s) {
            let at = oracle.and_then(|index| oracle_location(s, index));
            out.push(GateProblem {
                file: display_path(&s.file),
                scenario: Some(s.id.clone()),
                line: at.map(|(line, _)| line),
                column: at.map(|(_, column)| column),
                message,
            });
        }
    }
    for group in by_id.values().filter(|g| g.len() > 1) {
        let files: Vec<String> = group
            .iter()
            .map(|s| format!("`{}`", display_path(&s.file)))
            .collect();
        for s in group {
            out.push(GateProblem {
                file: display_path(&s.file),
                scenario: Some(s.id.clone()),
                line: None,
                column: None,
                message: format!(
                    "duplicate id (ids are unique case-insensitively; defined in {})",
                    files.join(", ")
                ),
            });
        }
    }
    out.sort();
    out
}
