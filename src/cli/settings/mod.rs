//! The settings a command runs with, resolved once from typed layers (ripgrep's low- and
//! high-level arguments, cargo-nextest's profiles): the command line, the project file's
//! selected profile, its `[profile.default]`, its top level, and the built-in defaults — each
//! layer an optional value per [`Key`], merged in that order for the keys the command reads.
//!
//! Which command reads which key is one table ([`Cmd::reads`]): `docs/configuration.md` is
//! generated from it, a test sets every (key, command) pair of it in a project file and checks
//! that the outcome changes, and a command that reads a key it does not list panics in debug
//! builds (the tests), so the table can neither promise a setting nobody reads nor hide one.

mod args;
mod attested;
mod cmd;
pub(super) mod file;
mod table;

use std::io::IsTerminal;

use anyhow::bail;
use camino::{Utf8Path, Utf8PathBuf};

use super::args::{ColorArg, DriftArg, FailOnArg};
use tracereplay_core::baseline::BaselineStore;
use tracereplay_core::diff::DriftMode;
use tracereplay_core::eval::{BaselinePolicy, Baselines, FailOn, JudgeOptions};

pub(super) use args::command_layer;
pub(super) use cmd::Cmd;
pub(super) use file::Config;
#[cfg(test)]
pub(super) use table::configuration_reference;

/// Declares [`Key`] and [`Layer`] from one list: each key's field, its type, its name in the
/// project file, its type and default as the docs show them, and what it does.
macro_rules! settings {
    ($($key:ident $field:ident: $ty:ty, $name:literal, $shown:literal, $default:literal, $doc:literal;)*) => {
        /// A setting of the project file.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub(super) enum Key { $($key,)* }

        impl Key {
            /// Every key, in the table's order.
            pub(super) const ALL: &'static [Key] = &[$(Key::$key,)*];

            /// Its name in the project file (`budget.tokens` for `tokens` in `[budget]`).
            pub(super) fn name(self) -> &'static str {
                match self { $(Key::$key => $name,)* }
            }

            /// Its type, as the docs show it.
            #[cfg_attr(not(test), allow(dead_code))]
            pub(super) fn shown_type(self) -> &'static str {
                match self { $(Key::$key => $shown,)* }
            }

            /// Its built-in default, as the docs show it.
            pub(super) fn default_text(self) -> &'static str {
                match self { $(Key::$key => $default,)* }
            }

            /// What it does.
            #[cfg_attr(not(test), allow(dead_code))]
            pub(super) fn doc(self) -> &'static str {
                match self { $(Key::$key => $doc,)* }
            }
        }

        /// One layer of settings: a value for each key it sets.
        #[derive(Debug, Clone, Default)]
        pub(super) struct Layer { $(pub(super) $field: Option<$ty>,)* }

        impl Layer {
            /// Whether this layer sets `key`.
            fn sets(&self, key: Key) -> bool {
                match key { $(Key::$key => self.$field.is_some(),)* }
            }

            /// Takes `key`'s value from `from`.
            fn take(&mut self, key: Key, from: &Layer) {
                match key { $(Key::$key => self.$field = from.$field.clone(),)* }
            }

            /// `key`'s value as `config` shows it, when this layer sets it.
            fn shown(&self, key: Key) -> Option<String> {
                match key { $(Key::$key => self.$field.as_ref().map(table::Shown::shown),)* }
            }
        }
    };
}

settings! {
    Paths paths: Vec<Utf8PathBuf>, "paths", "list of paths", "[\"traces\"]",
        "The suite's roots: what the commands that judge a suite read when no path is given, and where a trace's scenario is looked up. A path on the command line replaces them. `diff --from/--to` compares the two sides it names and ignores them.";
    Baselines baselines: Utf8PathBuf, "baselines", "path", "\"baselines\"",
        "The approved baselines directory. Off CI it may not exist yet (then nothing is compared, and the summary names it); under CI one the project file names must exist.";
    Scenarios scenarios: Vec<Utf8PathBuf>, "scenarios", "list of paths", "[]",
        "Harness suite directories whose `*.json` files are scenarios (`--scenarios`).";
    CacheDir cache_dir: Utf8PathBuf, "cache-dir", "path inside the project", "\".tracereplay/cache\"",
        "Where `check` keeps its result cache. The file may only name a directory inside the project; elsewhere is the command line's choice.";
    TrustedKeys trusted_keys: Utf8PathBuf, "trusted-keys", "path", "none",
        "The public keys signatures are checked against: a file of minisign public keys, one per line, or a directory of `*.pub` files.";
    Prices prices: Utf8PathBuf, "prices", "path", "`prices.toml` beside the project file, when there is one",
        "The price table that turns recorded token usage into US dollars.";
    BudgetTokens budget_tokens: u64, "budget.tokens", "non-negative integer", "none",
        "The most tokens (input + output, over every trace judged) a run may use.";
    BudgetCost budget_cost: f64, "budget.cost", "non-negative number (US dollars)", "none",
        "The most a run's traces may cost.";
    FailOn fail_on: FailOnArg, "fail-on", "`any` | `high` | `critical` | `none`", "\"high\"",
        "Which failing traces make the exit code 1, by their scenario's risk.";
    Drift drift: DriftArg, "drift", "`default` | `strict` | `warn` | `ignore`", "\"default\"",
        "Which drift from the approved baselines fails.";
    UsageTolerance usage_tolerance: f64, "usage-tolerance", "non-negative number (percent)", "20",
        "How far a usage total may move from the approved value before it is drift.";
    Alpha alpha: f64, "alpha", "number between 0 and 1", "0.05",
        "The false discovery rate the drift tests of trial sets are held to (Benjamini–Hochberg over a run's cases).";
    RequireSealed require_sealed: bool, "require-sealed", "boolean", "false",
        "Treat unsealed traces as integrity failures.";
    RequireSigned require_signed: bool, "require-signed", "boolean", "false",
        "Require every trace to carry a good signature by a trusted key.";
    RunId run_id: String, "run-id", "string", "none",
        "The run every signature must name (`--run-id` when the traces were recorded or signed), with `require-signed`; the record `--attest` writes states it.";
}

/// Where a resolved value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Source {
    /// The command line.
    CommandLine,
    /// A profile of the project file (its name).
    Profile(String),
    /// The project file's top level.
    TopLevel,
    /// Found beside the project file (`prices.toml`), or in the working directory.
    Found,
    /// The built-in default.
    Default,
}

/// The settings one command runs with: every key it reads, resolved.
#[derive(Debug, Clone)]
pub(super) struct Settings {
    cmd: Cmd,
    /// The merged values of the keys `cmd` reads.
    merged: Layer,
    /// Where each key `cmd` reads came from.
    sources: Vec<(Key, Source)>,
    /// The project file's own `paths` (or the default): where a trace's scenario is looked up.
    suite_roots: Vec<Utf8PathBuf>,
    /// Whether a project file names the suite's `paths` (then they are the suite: recordings go
    /// there, and checks of other directories write no pending baselines).
    project_paths: bool,
    color: ColorArg,
    /// The price table, read once as the settings are resolved (what judging uses and what an
    /// attestation hashes are the same bytes), or why it could not be: `None` without one.
    prices_read: Option<Result<PricesRead, String>>,
    /// The project file, for [`Settings::as_command`].
    project: Config,
}

/// A price table as read, with the BLAKE3 hash of the bytes it was read from.
type PricesRead = (std::sync::Arc<tracereplay_core::prices::PriceTable>, String);

impl Settings {
    /// Merges, for each key `cmd` reads, the command line's layer `cli` over `project`'s
    /// layers (profile, `[profile.default]`, top level, what was found) over the defaults.
    pub(super) fn resolve(cmd: Cmd, cli: Layer, project: &Config, color: ColorArg) -> Settings {
        let mut layers: Vec<(&Layer, Source)> = vec![(&cli, Source::CommandLine)];
        layers.extend(project.layers());
        let (mut merged, mut sources) = (Layer::default(), Vec::new());
        for &key in cmd.reads() {
            let found = layers.iter().find(|(l, _)| l.sets(key));
            let source = match found {
                Some((layer, source)) => {
                    merged.take(key, layer);
                    source.clone()
                }
                None => Source::Default,
            };
            sources.push((key, source));
        }
        let file_paths = project.layers().find_map(|(l, _)| l.paths.clone());
        let prices_read = (merged.prices.as_deref()).map(|file| {
            (super::prices::read(file))
                .map(|(table, hash)| (std::sync::Arc::new(table), hash))
                .map_err(|e| format!("{e:#}"))
        });
        Settings {
            cmd,
            merged,
            sources,
            project_paths: file_paths.is_some(),
            prices_read,
            project: project.clone(),
            suite_roots: file_paths
                .unwrap_or_else(|| vec![tracereplay_core::discover::DEFAULT_ROOT.into()]),
            color,
        }
    }

    /// The settings `cmd` would run with from the project file alone (no flags): what a server
    /// answers for another command (the recorder's `…/tracereplay/v1/next` is `trials next`).
    pub(super) fn as_command(&self, cmd: Cmd) -> Settings {
        Settings::resolve(cmd, Layer::default(), &self.project, self.color)
    }

    /// Notes that the command reads `key`: one it does not list in [`Cmd::reads`] is a bug,
    /// caught in debug builds.
    fn read(&self, key: Key) -> &Layer {
        debug_assert!(
            self.cmd.reads().contains(&key),
            "`{}` reads the setting `{}` without listing it in `Cmd::reads`",
            self.cmd.name(),
            key.name()
        );
        &self.merged
    }

    /// Where `key`'s value came from.
    pub(super) fn source(&self, key: Key) -> Source {
        (self.sources.iter())
            .find(|(k, _)| *k == key)
            .map_or(Source::Default, |(_, s)| s.clone())
    }

    /// The paths to read: the command line's, else the project file's, else `traces/`.
    pub(super) fn paths(&self) -> Vec<Utf8PathBuf> {
        (self.read(Key::Paths).paths.clone()).unwrap_or_else(|| vec!["traces/".into()])
    }

    /// The suite's directories when a project file names them (`paths`): where recordings go
    /// by default, and outside which a check writes no pending baselines.
    pub(super) fn project_paths(&self) -> Option<&[Utf8PathBuf]> {
        self.project_paths.then_some(self.suite_roots.as_slice())
    }

    /// Where a trace's scenario is looked up when the paths read do not define it: the project
    /// file's `paths`, else `traces/`.
    pub(super) fn suite_roots(&self) -> &[Utf8PathBuf] {
        self.read(Key::Paths);
        &self.suite_roots
    }

    /// `--scenarios` directories.
    pub(super) fn scenarios(&self) -> Vec<Utf8PathBuf> {
        self.read(Key::Scenarios)
            .scenarios
            .clone()
            .unwrap_or_default()
    }

    /// The baselines directory, and whether the command line named it (then it must exist).
    pub(super) fn baselines_dir(&self) -> (Utf8PathBuf, bool) {
        let dir = self.read(Key::Baselines).baselines.clone();
        let explicit = self.source(Key::Baselines) == Source::CommandLine;
        (dir.unwrap_or_else(|| "baselines".into()), explicit)
    }

    /// The result cache's directory.
    pub(super) fn cache_dir(&self) -> Utf8PathBuf {
        (self.read(Key::CacheDir).cache_dir.clone()).unwrap_or_else(|| ".tracereplay/cache".into())
    }

    /// The trusted public keys, when set.
    pub(super) fn trusted_keys(&self) -> Option<&Utf8Path> {
        self.read(Key::TrustedKeys).trusted_keys.as_deref()
    }

    /// The price table's file, when there is one.
    pub(super) fn prices_file(&self) -> Option<&Utf8Path> {
        self.read(Key::Prices).prices.as_deref()
    }

    /// The price table, read.
    pub(super) fn prices(
        &self,
    ) -> anyhow::Result<Option<std::sync::Arc<tracereplay_core::prices::PriceTable>>> {
        Ok(self.prices_read()?.map(|(table, _)| table))
    }

    /// The price table and the hash of its bytes, read once per command.
    pub(super) fn prices_read(&self) -> anyhow::Result<Option<PricesRead>> {
        // Through the key, so that a command reading prices lists them.
        if self.prices_file().is_none() {
            return Ok(None);
        }
        (self.prices_read.clone())
            .transpose()
            .map_err(anyhow::Error::msg)
    }

    /// The suite's budgets.
    pub(super) fn budget(&self) -> tracereplay::report::usage::Budget {
        tracereplay::report::usage::Budget {
            tokens: self.read(Key::BudgetTokens).budget_tokens,
            cost: self.read(Key::BudgetCost).budget_cost,
        }
    }

    /// `fail-on`.
    pub(super) fn fail_on_arg(&self) -> FailOnArg {
        self.read(Key::FailOn).fail_on.unwrap_or(FailOnArg::High)
    }

    /// `fail-on`, for the library.
    pub(super) fn fail_on(&self) -> FailOn {
        match self.fail_on_arg() {
            FailOnArg::Any => FailOn::Any,
            FailOnArg::High => FailOn::High,
            FailOnArg::Critical => FailOn::Critical,
            FailOnArg::None => FailOn::None,
        }
    }

    /// `drift`.
    pub(super) fn drift(&self) -> DriftArg {
        self.read(Key::Drift).drift.unwrap_or(DriftArg::Default)
    }

    /// `drift` as the library's mode (`ignore` judges as `default` where it means nothing).
    pub(super) fn drift_mode(&self) -> DriftMode {
        match self.drift() {
            DriftArg::Default | DriftArg::Ignore => DriftMode::Default,
            DriftArg::Strict => DriftMode::Strict,
            DriftArg::Warn => DriftMode::Warn,
        }
    }

    /// `usage-tolerance` in percent.
    pub(super) fn usage_tolerance_pct(&self) -> f64 {
        self.read(Key::UsageTolerance)
            .usage_tolerance
            .unwrap_or(tracereplay_core::eval::pipeline::DEFAULT_TOLERANCE_PERCENT)
    }

    /// `usage-tolerance` as a fraction, checked.
    pub(super) fn usage_tolerance(&self) -> anyhow::Result<f64> {
        let pct = self.usage_tolerance_pct();
        if !pct.is_finite() || pct < 0.0 {
            bail!("`usage-tolerance` must be a non-negative percentage, got {pct}");
        }
        Ok(pct / 100.0)
    }

    /// `alpha`, checked.
    pub(super) fn alpha(&self) -> anyhow::Result<f64> {
        let alpha = (self.read(Key::Alpha).alpha)
            .unwrap_or(tracereplay_core::eval::pipeline::DEFAULT_ALPHA);
        if !(alpha > 0.0 && alpha < 1.0) {
            bail!("`alpha` must be a number between 0 and 1, got {alpha}");
        }
        Ok(alpha)
    }

    /// `require-sealed`.
    pub(super) fn require_sealed(&self) -> bool {
        self.read(Key::RequireSealed)
            .require_sealed
            .unwrap_or(false)
    }

    /// `require-signed`.
    pub(super) fn require_signed(&self) -> bool {
        self.read(Key::RequireSigned)
            .require_signed
            .unwrap_or(false)
    }

    /// `run-id`: the run signatures must name.
    pub(super) fn run_id(&self) -> Option<&str> {
        self.read(Key::RunId).run_id.as_deref()
    }

    /// How traces are judged: the price table and `require-sealed` from the settings, the rest
    /// from the command's own flags.
    pub(super) fn judging(
        &self,
        limits: tracereplay::trace::Limits,
        allow_raw_prompts: bool,
    ) -> anyhow::Result<JudgeOptions> {
        Ok(JudgeOptions {
            limits,
            require_sealed: self.require_sealed(),
            allow_raw_prompts,
            prices: self.prices()?,
        })
    }

    /// The baselines directory in force: one named on the command line must exist; the
    /// project file's or the default is used when present and otherwise means "no comparison"
    /// — except under CI, where a directory the project file names but which does not exist is
    /// an error (a typo must not turn drift gating off where it gates).
    pub(super) fn resolve_baselines(&self) -> anyhow::Result<Option<Utf8PathBuf>> {
        match self.baselines_dir() {
            (dir, true) if !dir.is_dir() => {
                bail!("the baselines directory `{dir}` given with `--baselines` does not exist")
            }
            (dir, true) => Ok(Some(dir)),
            (dir, false) if dir.is_dir() => Ok(Some(dir)),
            (dir, false) if self.project_names_baselines() && super::ci::env_ci() => bail!(
                "the baselines directory `{dir}` that the project file names (`baselines`) does not exist: under CI that would turn drift gating off; commit the approved baselines (`tracereplay baseline approve`), or correct `baselines`"
            ),
            (_, false) => Ok(None),
        }
    }

    /// Whether the project file (not the built-in default) names the baselines directory.
    fn project_names_baselines(&self) -> bool {
        matches!(
            self.source(Key::Baselines),
            Source::TopLevel | Source::Profile(_)
        )
    }

    /// Whether and how baselines take part: `drift = ignore` turns them off; otherwise the
    /// directory in force with the drift mode, usage tolerance and alpha.
    pub(super) fn baselines(&self, write_pending: bool) -> anyhow::Result<Baselines> {
        self.baselines_with(write_pending, self.alpha()?, self.usage_tolerance()?)
    }

    /// [`Settings::baselines`] for a command that compares one trace at a time (`explain`):
    /// trial sets' tests, and so `alpha`, play no part.
    pub(super) fn baselines_of_single_traces(&self) -> anyhow::Result<Baselines> {
        let alpha = tracereplay_core::eval::pipeline::DEFAULT_ALPHA;
        self.baselines_with(false, alpha, self.usage_tolerance()?)
    }

    /// [`Settings::baselines`] for a command that reads only the trial-verdict regression test
    /// of trial sets (`trials next`): the usage tolerance plays no part.
    pub(super) fn baselines_of_trial_verdicts(&self) -> anyhow::Result<Baselines> {
        let tolerance = tracereplay_core::eval::pipeline::DEFAULT_TOLERANCE;
        self.baselines_with(false, self.alpha()?, tolerance)
    }

    fn baselines_with(
        &self,
        write_pending: bool,
        alpha: f64,
        tolerance: f64,
    ) -> anyhow::Result<Baselines> {
        if self.drift() == DriftArg::Ignore {
            return Ok(Baselines::Ignored);
        }
        let dir = self.resolve_baselines()?;
        let Some(dir) = dir else {
            return Ok(match self.project_names_baselines() {
                true => Baselines::Missing(self.baselines_dir().0),
                false => Baselines::Absent,
            });
        };
        Ok(Baselines::Compared {
            policy: BaselinePolicy {
                store: BaselineStore::new(dir),
                mode: self.drift_mode(),
                tolerance,
                refresh: false,
                alpha,
            },
            write_pending,
        })
    }

    /// Colours on standard output: `--color always`/`never`; with `auto`, never with
    /// `NO_COLOR`, always with `CLICOLOR_FORCE` or `FORCE_COLOR`, else only on a terminal.
    pub(super) fn use_color(&self) -> bool {
        match self.color {
            ColorArg::Always => true,
            ColorArg::Never => false,
            ColorArg::Auto if no_color() => false,
            ColorArg::Auto if env_on("CLICOLOR_FORCE") || env_on("FORCE_COLOR") => true,
            ColorArg::Auto => std::io::stdout().is_terminal(),
        }
    }

    /// The progress bar follows the colour rule, but only ever draws on a terminal (stderr):
    /// never with `--color never` or `NO_COLOR`, and forcing colours never puts it in a log.
    pub(super) fn use_progress(&self) -> bool {
        std::io::stderr().is_terminal()
            && self.color != ColorArg::Never
            && (self.color == ColorArg::Always || !no_color())
    }
}

/// Whether an environment variable is set to something other than empty, `0` or `false`.
fn env_on(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| {
        let v = v.trim();
        !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false")
    })
}

/// Whether `NO_COLOR` is set (to anything non-empty).
fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}
