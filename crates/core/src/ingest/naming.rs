//! How an ingested run is named: its scenario and case, from the input's own identifiers, so
//! the same run gets the same name whether it is ingested alone or inside a file of many, today
//! or next week (its approved baseline is found by that name).
//!
//! Without `--name`:
//!
//! - **scenario**: `--scenario`; else the scenario the input names (an OpenClaw scenario's `id`,
//!   a message list's `scenario`); else the task (`tau-bench.task-<id>`,
//!   `tau2.<domain>.task-<id>`); else the agent (an OTel trace's `invoke_agent` agent name, or
//!   its root span's name); else the input file's stem.
//! - **case**: `--case`; else the run's identifiers that the scenario does not already hold,
//!   joined by `.` (`task-<id>` when the scenario came from elsewhere, a benchmark run's agent
//!   (tau2's `info.agent_info.llm`; for a benchmark run that names none, the input file's stem),
//!   the OTel trace id, the run's own `id`); else the importer's default (OpenClaw:
//!   `scripted`); else the input file's stem, with `-<n>` (1-based position) when the file
//!   holds several runs that carry no identifier.
//! - **trial**: a benchmark run's trial number is the header's `trial`, never part of the name,
//!   so a case's trials are one case (one that is not a valid trial id stays in the case as
//!   `trial-<n>`).
//!
//! With `--name TEMPLATE` (`{task}/{trial}`, `{agent}/{trace}`…): the text before the last `/`
//! is the scenario, after it the case (no `/`: the scenario, with the case as above). The
//! placeholders are `{task}`, `{trial}`, `{domain}`, `{agent}`, `{trace}`, `{id}`, `{source}`,
//! `{file}` (the input's stem) and `{n}` (the run's 1-based position in its input); one the run
//! does not have is an error for that run.

use super::IngestOptions;

/// What a run's input says about it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunIds {
    /// The benchmark or tool it came from (`tau-bench`, `tau2`), for scenario names.
    pub source: Option<String>,
    /// A scenario id the input names itself.
    pub scenario: Option<String>,
    /// The importer's default case when the run has no identifier of its own.
    pub case: Option<String>,
    /// A benchmark task id.
    pub task: Option<String>,
    /// A benchmark trial.
    pub trial: Option<String>,
    /// A benchmark domain (`airline`…).
    pub domain: Option<String>,
    /// An agent name (OTel `invoke_agent`) or root span name.
    pub agent: Option<String>,
    /// An OTel trace id.
    pub trace: Option<String>,
    /// The run's own `id`.
    pub id: Option<String>,
}

/// Where a run sits in its input: 1-based position and how many runs the input holds.
#[derive(Debug, Clone, Copy)]
pub struct Position {
    /// 1-based.
    pub n: usize,
    /// Runs in the input.
    pub of: usize,
}

impl RunIds {
    /// The identifiers, a blank one counting as absent.
    fn without_blanks(&self) -> RunIds {
        let keep = |v: &Option<String>| v.clone().filter(|s| !s.trim().is_empty());
        RunIds {
            source: keep(&self.source),
            scenario: keep(&self.scenario),
            case: keep(&self.case),
            task: keep(&self.task),
            trial: keep(&self.trial),
            domain: keep(&self.domain),
            agent: keep(&self.agent),
            trace: keep(&self.trace),
            id: keep(&self.id),
        }
    }

    fn task_scenario(&self) -> Option<String> {
        let task = self.task.as_ref()?;
        let mut name = String::new();
        if let Some(s) = &self.source {
            name.push_str(s);
            name.push('.');
        }
        if let Some(d) = &self.domain {
            name.push_str(d);
            name.push('.');
        }
        name.push_str("task-");
        name.push_str(task);
        Some(name)
    }

    fn placeholder(&self, key: &str, opts: &IngestOptions, at: &At) -> Option<String> {
        match key {
            "task" => self.task.clone(),
            "trial" => self.trial.clone(),
            "domain" => self.domain.clone(),
            "agent" => self.agent.clone(),
            "trace" => self.trace.clone(),
            "id" => self.id.clone(),
            "source" => self.source.clone(),
            "file" => opts.file_stem.clone(),
            "n" => Some(at.get().n.to_string()),
            _ => None,
        }
    }
}

/// A run's position as naming reads it: known, or not yet (then whether naming read it is
/// noted, so a name that does not depend on it can be given before every run is counted).
struct At {
    position: Option<Position>,
    read: std::cell::Cell<bool>,
}

impl At {
    fn get(&self) -> Position {
        self.read.set(true);
        self.position.unwrap_or(Position { n: 0, of: 0 })
    }
}

/// The scenario and case of a run, or why it cannot be named.
pub(crate) fn name(
    ids: &RunIds,
    at: Position,
    opts: &IngestOptions,
) -> Result<(String, String), String> {
    let at = At {
        position: Some(at),
        read: Default::default(),
    };
    named(ids, &at, opts)
}

/// What [`name`] gives a run wherever it sits in its input, or `None` when its name depends on
/// where it sits (its place, or how many runs the input holds).
pub(crate) fn name_anywhere(
    ids: &RunIds,
    opts: &IngestOptions,
) -> Option<Result<(String, String), String>> {
    let at = At {
        position: None,
        read: Default::default(),
    };
    let named = named(ids, &at, opts);
    (!at.read.get()).then_some(named)
}

fn named(ids: &RunIds, at: &At, opts: &IngestOptions) -> Result<(String, String), String> {
    let (scenario, case) = unchecked(&ids.without_blanks(), at, opts)?;
    // A trace's header needs both, non-blank.
    if scenario.trim().is_empty() || case.trim().is_empty() {
        return Err(format!(
            "the run's name would be blank (scenario `{scenario}`, case `{case}`); give it one with `--scenario`, `--case` or `--name`"
        ));
    }
    Ok((scenario, case))
}

fn unchecked(ids: &RunIds, at: &At, opts: &IngestOptions) -> Result<(String, String), String> {
    if let Some(template) = &opts.name {
        return from_template(template, ids, at, opts);
    }
    let (scenario, from_task) = match (&opts.scenario, &ids.scenario, ids.task_scenario()) {
        (Some(s), _, _) | (None, Some(s), _) => (s.clone(), false),
        (None, None, Some(s)) => (s, true),
        (None, None, None) => match ids.agent.clone().or_else(|| opts.file_stem.clone()) {
            Some(s) => (s, false),
            None => {
                return Err(
                    "the input names no scenario; pass `--scenario ID` or `--name TEMPLATE`".into(),
                );
            }
        },
    };
    Ok((scenario, case(ids, at, opts, from_task)))
}

fn case(ids: &RunIds, at: &At, opts: &IngestOptions, scenario_from_task: bool) -> String {
    if let Some(c) = &opts.case {
        return c.clone();
    }
    let mut parts = Vec::new();
    if let (Some(t), false) = (&ids.task, scenario_from_task) {
        parts.push(format!("task-{t}"));
    }
    // A benchmark run's agent (its model), so runs of different agents never share a name;
    // where the input does not name it, the file it came in (`gpt-4o-airline`).
    if let (Some(a), Some(_)) = (&ids.agent, &ids.task) {
        parts.push(a.clone());
    } else if let (Some(t), Some(_)) = (&ids.trial, &ids.task) {
        if crate::trace::TrialId::parse(t).is_ok() {
            parts.push(
                opts.file_stem
                    .clone()
                    .unwrap_or_else(|| "default".to_owned()),
            );
        }
    }
    // The trial is the header's `trial`, not part of the name: a case's trials share it. One
    // that is no valid trial id stays in the name.
    if let Some(t) = ids
        .trial
        .as_ref()
        .filter(|t| crate::trace::TrialId::parse(t).is_err())
    {
        parts.push(format!("trial-{t}"));
    }
    parts.extend(ids.trace.clone());
    parts.extend(ids.id.clone());
    if !parts.is_empty() {
        return parts.join(".");
    }
    if let Some(c) = &ids.case {
        return c.clone();
    }
    let stem = opts.file_stem.clone().unwrap_or_else(|| "run".to_owned());
    let at = at.get();
    if at.of > 1 {
        format!("{stem}-{}", at.n)
    } else {
        stem
    }
}

fn from_template(
    template: &str,
    ids: &RunIds,
    at: &At,
    opts: &IngestOptions,
) -> Result<(String, String), String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let close = after
            .find('}')
            .ok_or_else(|| format!("`--name {template}`: a `{{` without its `}}`"))?;
        let key = &after[..close];
        let value = ids.placeholder(key, opts, at).ok_or_else(|| {
            format!("`--name {template}`: this run has no `{{{key}}}` (the input does not give it, or it is not a placeholder: task, trial, domain, agent, trace, id, source, file, n)")
        })?;
        out.push_str(&value);
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    match out.rsplit_once('/') {
        Some((s, c)) if !s.trim().is_empty() && !c.trim().is_empty() => {
            Ok((s.to_owned(), c.to_owned()))
        }
        Some(_) => Err(format!(
            "`--name {template}` gives an empty scenario or case for this run"
        )),
        None if out.trim().is_empty() => Err(format!(
            "`--name {template}` gives an empty name for this run"
        )),
        None => Ok((out.clone(), case(ids, at, opts, false))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> IngestOptions {
        IngestOptions::for_tests(Some("runs"))
    }

    fn tau(task: &str, trial: &str) -> RunIds {
        RunIds {
            source: Some("tau2".into()),
            domain: Some("airline".into()),
            task: Some(task.into()),
            trial: Some(trial.into()),
            ..RunIds::default()
        }
    }

    #[test]
    fn benchmark_runs_are_named_by_task_and_agent_wherever_they_are() {
        let one = Position { n: 1, of: 1 };
        let many = Position { n: 37, of: 200 };
        for at in [one, many] {
            // No agent in the input: the file's stem stands for it; the trial is no name.
            assert_eq!(
                name(&tau("12", "3"), at, &opts()).unwrap(),
                ("tau2.airline.task-12".into(), "runs".into())
            );
        }
        let agent = RunIds {
            agent: Some("gpt-4.1".into()),
            ..tau("12", "3")
        };
        assert_eq!(
            name(&agent, one, &opts()).unwrap(),
            ("tau2.airline.task-12".into(), "gpt-4.1".into())
        );
        // A trial that is no trial id stays in the name.
        assert_eq!(
            name(&tau("12", "a b"), one, &opts()).unwrap(),
            ("tau2.airline.task-12".into(), "trial-a b".into())
        );
        // One scenario for all: the task moves into the case.
        let o = IngestOptions {
            scenario: Some("all".into()),
            ..opts()
        };
        assert_eq!(
            name(&tau("12", "3"), many, &o).unwrap(),
            ("all".into(), "task-12.runs".into())
        );
    }

    #[test]
    fn otel_runs_by_agent_and_trace_others_by_file() {
        let ids = RunIds {
            agent: Some("support".into()),
            trace: Some("0af7651916cd43dd8448eb211c80319c".into()),
            ..RunIds::default()
        };
        let at = Position { n: 1, of: 1 };
        assert_eq!(
            name(&ids, at, &opts()).unwrap(),
            ("support".into(), "0af7651916cd43dd8448eb211c80319c".into())
        );
        assert_eq!(
            name(&RunIds::default(), at, &opts()).unwrap(),
            ("runs".into(), "runs".into())
        );
        assert_eq!(
            name(&RunIds::default(), Position { n: 2, of: 3 }, &opts()).unwrap(),
            ("runs".into(), "runs-2".into())
        );
        let no_file = IngestOptions {
            file_stem: None,
            ..opts()
        };
        assert!(name(&RunIds::default(), at, &no_file).is_err());
    }

    #[test]
    fn blank_identifiers_count_as_absent_and_blank_names_are_refused() {
        // Found by fuzzing: an OpenClaw scenario with `"id": ""` gave a trace with a blank
        // scenario, which no reader accepts.
        let ids = RunIds {
            scenario: Some(" ".into()),
            case: Some("scripted".into()),
            ..RunIds::default()
        };
        let at = Position { n: 1, of: 1 };
        assert_eq!(
            name(&ids, at, &opts()).unwrap(),
            ("runs".into(), "scripted".into())
        );
        let blank = IngestOptions {
            scenario: Some("  ".into()),
            ..opts()
        };
        assert!(
            name(&ids, at, &blank)
                .unwrap_err()
                .contains("would be blank")
        );
    }

    #[test]
    fn templates() {
        let at = Position { n: 4, of: 9 };
        let with = |t: &str| IngestOptions {
            name: Some(t.into()),
            ..opts()
        };
        assert_eq!(
            name(&tau("7", "0"), at, &with("bench/{domain}-{task}/t{trial}")).unwrap(),
            ("bench/airline-7".into(), "t0".into())
        );
        assert_eq!(
            name(&tau("7", "0"), at, &with("{file}-{n}")).unwrap(),
            ("runs-4".into(), "task-7.runs".into())
        );
        let e = name(&tau("7", "0"), at, &with("{agent}/{trial}")).unwrap_err();
        assert!(e.contains("no `{agent}`"), "{e}");
        assert!(name(&tau("7", "0"), at, &with("{task")).is_err());
        assert!(name(&tau("7", "0"), at, &with("/{trial}")).is_err());
    }
}
