//! `tracereplay gates`: quality gates over scenario files, optionally oracle strength.

use std::collections::BTreeMap;
use std::io::Write;

use tracereplay::report::{RowVerdict, escape_controls};
use tracereplay::trace::{TraceFile, parse_trace};
use tracereplay_core::discover::discover;
use tracereplay_core::eval::{CheckOptions, Counting, FailOn, JudgeOptions, check};
use tracereplay_core::gates::strength::{MUTANTS_PER_TRACE, Strength};
use tracereplay_core::gates::{GateProblem, check_gates};
use tracereplay_core::scenario::{Scenario, load_scenarios};

use super::args::GatesArgs;
use super::exit;

/// What the default behaviour oracles find in the traces under the paths: by lowercased
/// scenario id, for each oracle, the number of traces it fails on and its first message.
type BehaviourSeen = BTreeMap<String, BTreeMap<&'static str, (usize, String)>>;

/// What `gates` reads of the traces under its paths, each trace read once: how many traces
/// each (lowercased scenario id, case) has (from each trace's first line), and what the default
/// behaviour oracles find in those that verify and parse.
fn read_traces(
    found: &tracereplay_core::discover::Discovered,
    args: &GatesArgs,
) -> (BTreeMap<(String, String), usize>, BehaviourSeen) {
    use rayon::prelude::*;
    let limits = args.limits.limits();
    type Read = (Option<(String, String)>, Vec<(&'static str, String)>);
    let per_trace: Vec<Read> = (found.trace_files.par_iter())
        .filter_map(|path| {
            let file = TraceFile::open(path, limits).ok()?;
            let claimed = tracereplay::trace::probe_header(&file.bytes)
                .map(|(scenario, case)| (scenario.to_lowercase(), case));
            let parsed = (file.verify_seal(false).ok())
                .and_then(|seal| parse_trace(&file, &seal, limits).ok());
            let findings = parsed.map_or_else(Vec::new, |p| {
                let found = tracereplay_core::oracle::behaviour::lint(&p.trace);
                found.into_iter().map(|(o, r)| (o, r.message)).collect()
            });
            Some((claimed, findings))
        })
        .collect();
    let (mut recorded, mut seen) = (BTreeMap::new(), BehaviourSeen::new());
    for (claimed, findings) in per_trace {
        let Some((id, case)) = claimed else {
            continue;
        };
        for (oracle, message) in findings {
            let entry = seen.entry(id.clone()).or_default().entry(oracle);
            entry.or_insert((0, message)).0 += 1;
        }
        *recorded.entry((id, case)).or_default() += 1;
    }
    (recorded, seen)
}

/// `gates` suggestions: the behaviour oracles a scenario does not declare whose defaults fail
/// on some of its traces.
fn behaviour_suggestions(s: &Scenario, seen: &BehaviourSeen) -> Vec<String> {
    let declared = |name: &str| {
        s.oracles
            .iter()
            .any(|o| o.type_name().eq_ignore_ascii_case(name))
    };
    let Some(found) = seen.get(&s.id.to_lowercase()) else {
        return Vec::new();
    };
    (found.iter())
        .filter(|(oracle, _)| !declared(oracle))
        .map(|(oracle, (n, message))| {
            format!(
                "suggestion: `{oracle}` would fail on {n} of its trace(s) ({message}); consider adding {{\"type\": \"{oracle}\"}} to its oracles"
            )
        })
        .collect()
}

/// Runs `gates`; `Err` means exit 2.
pub(super) fn run(
    args: &GatesArgs,
    settings: &super::settings::Settings,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    if !(0.0..=1.0).contains(&args.min_strength) {
        anyhow::bail!(
            "`--min-strength` must be between 0 and 1, got {}",
            args.min_strength
        );
    }
    let (paths, scenario_dirs) = (settings.paths(), settings.scenarios());
    let found = discover(&paths, &scenario_dirs)?;
    let loaded = load_scenarios(&found.scenario_files, &found.suite_files, &found.roots);
    let searched: Vec<String> = (paths.iter().chain(&scenario_dirs))
        .map(|p| tracereplay_trace::paths::display_path(p))
        .collect();
    let mut problems = check_gates(&loaded, &searched.join("`, `"));
    for w in found
        .warnings
        .iter()
        .filter(|w| w.starts_with("found scenario-like"))
    {
        writeln!(out, "warning: {}", escape_controls(w))?;
    }
    let alpha = settings.alpha()?;
    let (recorded, seen) = read_traces(&found, args);
    for s in &loaded.scenarios {
        let mut warnings = tracereplay_core::gates::scenario_warnings(s);
        warnings.extend(behaviour_suggestions(s, &seen));
        warnings.extend(s.trials.warnings(alpha));
        for ((id, case), n) in recorded.range((s.id.to_lowercase(), String::new())..) {
            if *id != s.id.to_lowercase() {
                break;
            }
            if (*n as u64) < s.trials.min {
                warnings.push(format!(
                    "case `{case}` has {n} recorded trial(s), fewer than `trials.min` {}; check will judge it `error`",
                    s.trials.min
                ));
            }
        }
        for w in warnings {
            let file = tracereplay_trace::paths::display_path(&s.file);
            writeln!(
                out,
                "warning: `{file}`: scenario `{}`: {}",
                escape_controls(&s.id),
                escape_controls(&w)
            )?;
        }
    }
    // A scenario that cannot be looked at is a scenario whose gates cannot be checked.
    problems.extend(found.unreachable.iter().map(|(p, why)| GateProblem {
        file: tracereplay_trace::paths::display_path(p),
        scenario: None,
        line: None,
        column: None,
        message: why.clone(),
    }));
    problems.sort();
    for p in &problems {
        writeln!(out, "error: {}", escape_controls(&p.to_string()))?;
    }
    let mut shallow = 0;
    if args.strength {
        let flagged: Vec<&str> = problems
            .iter()
            .filter_map(|p| p.scenario.as_deref())
            .collect();
        let measurable: Vec<&Scenario> = loaded
            .scenarios
            .iter()
            .filter(|s| !flagged.contains(&s.id.as_str()))
            .collect();
        // Mutants multiply the `expr` programs run: the whole measurement has a budget of its
        // own, and a mutant left without time is not counted (it never raises a score).
        let budget = std::time::Duration::from_secs(args.expr_budget);
        let run = tracereplay_core::oracle::budget::RunBudget::starting_now(budget);
        let measured = strengths(&found, args, settings, &measurable, run);
        for s in measured? {
            match s.score() {
                None => writeln!(
                    out,
                    "not measured  {}  (no passing trace to mutate)",
                    escape_controls(&s.scenario)
                )?,
                Some(score) if score < args.min_strength => {
                    shallow += 1;
                    writeln!(
                        out,
                        "shallow {score:.2}  {}  {}/{} mutants caught over {} trace(s), below {:.2}",
                        escape_controls(&s.scenario),
                        s.caught,
                        s.total,
                        s.traces,
                        args.min_strength
                    )?;
                    for survivor in &s.survived {
                        writeln!(out, "      survived: {}", escape_controls(survivor))?;
                    }
                }
                Some(score) => writeln!(
                    out,
                    "strong  {score:.2}  {}  {}/{} mutants caught over {} trace(s)",
                    escape_controls(&s.scenario),
                    s.caught,
                    s.total,
                    s.traces
                )?,
            }
            for note in &s.weakened {
                writeln!(out, "      weakened: {}", escape_controls(note))?;
            }
            if s.unjudged > 0 {
                writeln!(
                    out,
                    "      not judged: {} mutant(s), an `expr` program out of time or budget; not counted",
                    s.unjudged
                )?;
            }
            for (trace, judged, all) in &s.sampled {
                writeln!(
                    out,
                    "      sampled: {judged} of {all} mutants of `{}` (at most {MUTANTS_PER_TRACE} per trace)",
                    escape_controls(trace)
                )?;
            }
        }
    }
    writeln!(
        out,
        "{} scenarios: {} problem(s){}",
        loaded.scenarios.len(),
        problems.len(),
        if args.strength {
            format!(", {shallow} shallow")
        } else {
            String::new()
        }
    )?;
    Ok(if problems.is_empty() && shallow == 0 {
        exit::OK
    } else {
        exit::FAILURE
    })
}

/// Strength of each scenario, measured over its passing traces, sorted by scenario id.
fn strengths(
    found: &tracereplay_core::discover::Discovered,
    args: &GatesArgs,
    settings: &super::settings::Settings,
    scenarios: &[&Scenario],
    run: tracereplay_core::oracle::budget::RunBudget,
) -> anyhow::Result<Vec<Strength>> {
    let limits = args.limits.limits();
    let prices = settings.prices()?;
    let paths = settings.paths();
    let opts = CheckOptions {
        judging: JudgeOptions {
            limits,
            prices: prices.clone(),
            ..JudgeOptions::default()
        },
        counting: Counting {
            fail_on: FailOn::None,
            ..Counting::default()
        },
        ..CheckOptions::default()
    };
    let report = check(found, &paths, &opts)?;
    let mut passing: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for row in report
        .results
        .iter()
        .filter(|r| r.verdict == RowVerdict::Pass)
    {
        if let (Some(s), Some(p)) = (&row.scenario, &row.path) {
            passing.entry(s.to_lowercase()).or_default().push(p.clone());
        }
    }
    let mut out = Vec::new();
    let mut sorted = scenarios.to_vec();
    sorted.sort_by(|a, b| a.id.cmp(&b.id));
    for scenario in sorted {
        let mut s = Strength::new(scenario);
        for path in passing
            .get(&scenario.id.to_lowercase())
            .into_iter()
            .flatten()
        {
            // The trace was judged `pass` a moment ago; read it again to mutate it.
            let file = TraceFile::open(path.as_str().into(), limits)?;
            let seal = file.verify_seal(false)?;
            let mut parsed = parse_trace(&file, &seal, limits)?;
            if let Some(p) = &prices {
                p.apply(&mut parsed.trace);
            }
            s.add_trace(scenario, path, &parsed.trace, Some(run));
        }
        out.push(s);
    }
    Ok(out)
}
