//! The command line's layer: what each command's flags set, typed (an absent flag sets
//! nothing, so the project file and the defaults show through).

use camino::Utf8PathBuf;

use super::{Cmd, Layer};
use crate::cli::args::{
    BaselineCommand, CheckSigningArgs, Command, DriftArgs, JudgingArgs, SuiteArgs, TrialsCommand,
};

/// A list given on the command line; an empty one sets nothing.
fn list(v: &[Utf8PathBuf]) -> Option<Vec<Utf8PathBuf>> {
    (!v.is_empty()).then(|| v.to_vec())
}

/// A flag and its `--no-` form: `Some` only when one of them was given.
fn switch(on: bool, off: bool) -> Option<bool> {
    match (on, off) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    }
}

impl SuiteArgs {
    fn apply(&self, l: &mut Layer) {
        l.paths = list(&self.paths);
        l.scenarios = list(&self.scenario_dirs);
    }
}

impl JudgingArgs {
    fn apply(&self, l: &mut Layer) {
        l.require_sealed = switch(self.require_sealed, self.no_require_sealed);
        l.prices = self.prices.clone();
    }
}

impl DriftArgs {
    fn apply(&self, l: &mut Layer) {
        l.drift = self.drift;
        l.usage_tolerance = self.usage_tolerance;
    }
}

impl CheckSigningArgs {
    fn apply(&self, l: &mut Layer) {
        l.require_signed = switch(self.require_signed, self.no_require_signed);
        l.trusted_keys = self.trusted_keys.clone();
        l.run_id = self.signing.run_id.clone();
    }
}

/// Which settings `cmd` reads, and what its command line sets of them.
pub(in crate::cli) fn command_layer(cmd: &Command) -> (Cmd, Layer) {
    let mut l = Layer::default();
    let which = match cmd {
        Command::Check(a) => {
            a.suite.apply(&mut l);
            a.judging.apply(&mut l);
            a.drift.apply(&mut l);
            l.alpha = a.alpha.alpha;
            a.signing.apply(&mut l);
            l.baselines = a.baselines.clone();
            l.cache_dir = a.cache_dir.clone();
            l.fail_on = a.fail_on;
            l.budget_tokens = a.budget.budget_tokens;
            l.budget_cost = a.budget.budget_cost;
            Cmd::Check
        }
        Command::Diff(a) => {
            l.paths = list(&a.paths);
            l.scenarios = list(&a.scenario_dirs);
            l.baselines = a.baselines.clone();
            a.judging.apply(&mut l);
            a.drift.apply(&mut l);
            l.alpha = a.alpha.alpha;
            Cmd::Diff
        }
        Command::Explain(a) => {
            l.paths = list(&a.paths);
            l.scenarios = list(&a.scenario_dirs);
            l.baselines = a.baselines.clone();
            a.judging.apply(&mut l);
            a.drift.apply(&mut l);
            Cmd::Explain
        }
        Command::Verify(a) => {
            l.paths = list(&a.paths);
            l.trusted_keys = a.trusted_keys.clone();
            Cmd::Verify
        }
        Command::VerifyAttestation(a) => {
            l.trusted_keys = a.trusted_keys.clone();
            Cmd::VerifyAttestation
        }
        Command::Lint(a) => {
            a.suite.apply(&mut l);
            l.prices = a.prices.clone();
            Cmd::Lint
        }
        Command::Gates(a) => {
            a.suite.apply(&mut l);
            l.prices = a.prices.clone();
            l.alpha = a.alpha;
            Cmd::Gates
        }
        Command::Baseline(b) => match b {
            BaselineCommand::Approve(a) => {
                a.suite.apply(&mut l);
                a.judging.apply(&mut l);
                l.baselines = a.dir.baselines.clone();
                Cmd::BaselineApprove
            }
            BaselineCommand::Pending(a) => {
                l.baselines = a.dir.baselines.clone();
                Cmd::BaselinePending
            }
            BaselineCommand::Review(a) => {
                l.baselines = a.filter.dir.baselines.clone();
                Cmd::BaselineReview
            }
            BaselineCommand::Accept(a) => {
                l.baselines = a.filter.dir.baselines.clone();
                Cmd::BaselineAccept
            }
            BaselineCommand::Reject(a) => {
                l.baselines = a.dir.baselines.clone();
                Cmd::BaselineReject
            }
        },
        Command::Trials(c) => match c {
            TrialsCommand::Plan(a) => {
                a.suite.apply(&mut l);
                a.judging.apply(&mut l);
                l.baselines = a.baselines.clone();
                l.alpha = a.alpha.alpha;
                Cmd::TrialsPlan
            }
            TrialsCommand::Next(a) => {
                a.suite.apply(&mut l);
                a.judging.apply(&mut l);
                l.baselines = a.baselines.clone();
                l.drift = a.drift;
                l.alpha = a.alpha.alpha;
                Cmd::TrialsNext
            }
        },
        Command::Config => Cmd::Config,
        // Every other command says so by name: a new one must choose its settings here.
        Command::Pack(_)
        | Command::Cat(_)
        | Command::Sign(_)
        | Command::Init
        | Command::Merge(_)
        | Command::Report(_)
        | Command::Ingest(_)
        | Command::Export(_)
        | Command::Key(_)
        | Command::Completions { .. }
        | Command::Man
        | Command::Replay(_)
        | Command::Record(_)
        | Command::Collect(_) => Cmd::None,
    };
    (which, l)
}
