//! `tracereplay trials next SCENARIO/CASE`: whether a case needs another trial — `settled` (its
//! verdict is known: a sequential policy's further trials could not change it, or a fixed
//! policy has its `min`) or `record trial K` — so that a recording loop stops paying once it
//! knows. The recorder answers the same at `GET …/record/<scenario>/<case>/tracereplay/v1/next`.

use std::io::Write;

use anyhow::{Context, anyhow, bail};
use camino::Utf8PathBuf;
use serde::Serialize;
use tracereplay::report::{RowVerdict, Source};
use tracereplay_core::diff::group_drift::GroupDrift;
use tracereplay_core::eval::{Baselines, check};
use tracereplay_core::scenario::load_scenarios;
use tracereplay_core::trials::sequential::{Step, next_step, next_trial};
use tracereplay_trace::{Limits, TrialId};

use super::args::TrialsNextArgs;
use super::exit;
use super::settings::Settings;

/// The answer, as `--json` prints it and the recorder's endpoint returns it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Answer {
    pub scenario: String,
    pub case: String,
    /// Trials judged so far.
    pub trials: u64,
    pub passed: u64,
    /// The verdict is known.
    pub settled: bool,
    /// `pass` or `fail`, once settled.
    pub verdict: Option<&'static str>,
    /// The trial to record next, until settled.
    pub next_trial: Option<String>,
    /// The policy's fewest trials, and a sequential policy's most.
    pub min: u64,
    pub max: Option<u64>,
    /// Under a `trials.drift` design, compared with an approved set: its group-sequential
    /// regression test.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<DriftAnswer>,
}

/// Where a case's group-sequential regression test stands.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct DriftAnswer {
    /// The looks of the design (current trials at each).
    pub looks: Vec<u64>,
    /// Looks reached so far.
    pub reached: usize,
    /// The look (from 1) that showed a regression.
    pub regression_at: Option<usize>,
    /// More trials could not change the outcome.
    pub settled: bool,
}

impl DriftAnswer {
    fn of(g: &GroupDrift) -> DriftAnswer {
        DriftAnswer {
            looks: g.looks.clone(),
            reached: g.p.len(),
            regression_at: g.regression_at,
            settled: g.settled,
        }
    }

    /// The current trials of the next look, when recording up to it could decide the test:
    /// none once settled, nor when every look is reached and the design still cannot judge the
    /// case (`check` says why, such as an approved set too large).
    fn next_look(&self) -> Option<u64> {
        (!self.settled)
            .then(|| self.looks.get(self.reached).copied())
            .flatten()
    }

    /// `; drift: …`.
    fn clause(&self) -> String {
        let total = self.looks.len();
        match (self.regression_at, self.settled, self.next_look()) {
            (Some(k), _, _) => format!("; drift: a regression at look {k} of {total}"),
            (None, true, _) => format!("; drift: no regression by look {total} of {total}"),
            (None, false, Some(next)) => format!(
                "; drift undecided at look {} of {total}: record up to {next}",
                self.reached
            ),
            (None, false, None) => {
                "; drift undecided: the design cannot judge this case (`check` says why)".to_owned()
            }
        }
    }
}

impl Answer {
    /// One line: `settled: pass (…)` or `record trial K (…)`.
    pub(crate) fn line(&self) -> String {
        let so_far = format!("{} of {} trial(s) pass", self.passed, self.trials);
        let policy = match self.max {
            Some(max) => format!("sequential, up to {max} trials"),
            None => format!("{} trial(s) needed", self.min),
        };
        let drift = self
            .drift
            .as_ref()
            .map(DriftAnswer::clause)
            .unwrap_or_default();
        match (&self.next_trial, self.verdict) {
            (Some(k), _) => format!("record trial {k} ({so_far}; {policy}{drift})"),
            (None, Some(v)) => format!("settled: {v} ({so_far}; {policy}{drift})"),
            (None, None) => format!("settled ({so_far}; {policy}{drift})"),
        }
    }
}

/// Runs `trials next`; `Err` means exit 2.
pub(super) fn run(
    args: &TrialsNextArgs,
    settings: &Settings,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    let (scenario, case) = args.case.split_once('/').with_context(|| {
        format!(
            "`{}` is not `SCENARIO/CASE`",
            tracereplay::report::escape_controls(&args.case)
        )
    })?;
    let answer = answer(
        settings,
        &settings.paths(),
        (scenario, case),
        (args.judging.limits.limits(), args.judging.allow_raw_prompts),
    )?;
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &answer)?;
        writeln!(out)?;
    } else {
        writeln!(out, "{}", answer.line())?;
    }
    Ok(exit::OK)
}

/// Judges the recorded trials of `scenario`/`case` under `paths` against the suite's scenarios
/// (nothing written) and says what comes next. A trial that cannot be judged is an error, and
/// so is a trace whose header cannot be read (it may be one of the case's): the loop must not
/// go on as if it had not been recorded.
pub(crate) fn answer(
    settings: &Settings,
    paths: &[Utf8PathBuf],
    (scenario, case): (&str, &str),
    (limits, allow_raw_prompts): (Limits, bool),
) -> anyhow::Result<Answer> {
    let mut found =
        tracereplay_core::discover::find(paths, &settings.scenarios(), &Default::default())?;
    found.look_up_in(settings.suite_roots());
    // The suite's own scenarios too: a case's trials given as files name a scenario beside
    // them, or in the project's paths.
    let files = found.every_scenario_file();
    let loaded = load_scenarios(&files, &found.suite_files, &found.roots);
    let same = tracereplay_trace::json::eq_ci;
    let s = (loaded.scenarios.iter())
        .find(|s| same(&s.id, scenario))
        .ok_or_else(|| {
            anyhow!(
                "no scenario `{}` in the suite: its policy says how many trials the case needs",
                tracereplay::report::escape_controls(scenario)
            )
        })?;
    let policy = &s.trials;
    let (mut n, mut passed, mut ids) = (0u64, 0u64, Vec::new());
    let mut drift = None;
    if !found.trace_files.is_empty() {
        // Under a drift design, its regression test against the approved set decides too.
        let baselines = match policy.drift {
            Some(_) => settings.baselines_of_trial_verdicts()?,
            None => Baselines::Absent,
        };
        let opts =
            super::options::judge_only(settings, paths, (limits, allow_raw_prompts), baselines)?;
        let checked = check(&found, paths, &opts)?;
        drift = (checked.cases.iter())
            .find(|c| same(&c.scenario, &s.id) && c.case == case)
            .and_then(|c| c.group_drift.as_ref())
            .map(DriftAnswer::of);
        for row in checked.results.iter() {
            // A trace whose header could not be read may be a trial of this case: the answer
            // would be a guess.
            let unknown = row.scenario.is_none() || row.case.is_none();
            let ours = row.source == Source::Trace
                && (unknown
                    || row.scenario.as_deref().is_some_and(|x| same(x, &s.id))
                        && row.case.as_deref() == Some(case));
            if !ours {
                continue;
            }
            if row.verdict == RowVerdict::Error {
                bail!(
                    "`{}` could not be judged: {}",
                    row.path.unwrap_or_default(),
                    row.error.map(|e| e.message).unwrap_or_default()
                );
            }
            n += 1;
            passed += u64::from(row.verdict == RowVerdict::Pass);
            if let Some(t) = row.trial.as_deref().and_then(|t| TrialId::parse(t).ok()) {
                ids.push(t);
            }
        }
    }
    let mut step = next_step(policy, passed, n, &ids);
    if let Some(d) = &drift {
        // A regression shown stops the recording; an undecided test needs the next look.
        if d.regression_at.is_some() {
            step = Step::Settled { passed: false };
        } else if d.next_look().is_some() && matches!(step, Step::Settled { .. }) {
            step = Step::Record(next_trial(&ids));
        }
    }
    Ok(Answer {
        scenario: s.id.clone(),
        case: case.to_owned(),
        trials: n,
        passed,
        settled: matches!(step, Step::Settled { .. }),
        verdict: match step {
            Step::Settled { passed: true } => Some("pass"),
            Step::Settled { passed: false } => Some("fail"),
            Step::Record(_) => None,
        },
        next_trial: match step {
            Step::Record(t) => Some(t.to_string()),
            Step::Settled { .. } => None,
        },
        min: policy.min,
        max: policy.sequential,
        drift,
    })
}
