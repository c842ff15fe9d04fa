//! The project file, `tracereplay.toml`: found by walking up from the working directory (or
//! named with `--config FILE`), it says where the suite is and how it is judged, in profiles the
//! way nextest has them.
//!
//! ```toml
//! paths = ["traces"]              # suite roots (default `traces/`)
//! baselines = "baselines"         # approved baselines
//! scenarios = ["harness/suite"]   # `--scenarios` directories
//! cache-dir = ".tracereplay/cache"
//! trusted-keys = "keys"          # public keys signatures are checked against
//!
//! [budget]                      # the suite's totals `check` holds the run to
//! tokens = 2_000_000              # input + output tokens over every trace
//! cost = 5.00                     # US dollars (priced with `prices.toml`)
//!
//! [profile.default]
//! fail-on = "high"                # any | high | critical | none
//! drift = "default"               # default | strict | warn | ignore
//! usage-tolerance = 20            # percent
//! require-sealed = false
//!
//! [profile.ci]                    # chosen automatically under CI; inherits `default`
//! require-sealed = true
//! require-signed = true           # every trace signed by a trusted key
//! ```
//!
//! A `prices.toml` beside the file (or, without one, in the working directory) is the price
//! table `--prices` defaults to. Paths are relative to the file, so a command behaves the same from any subdirectory. A flag
//! given on the command line wins over the file; the file wins over the built-in defaults.
//! `--profile NAME` picks a profile; under CI, `ci` is picked when the file defines it. An
//! unknown key is an error naming the closest known one. `tracereplay config` prints the
//! resolved settings and where each came from.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::{Context, bail};
use camino::{Utf8Path, Utf8PathBuf};
use clap::ArgMatches;
use clap::ValueEnum;
use clap::parser::ValueSource;

use super::args::{DriftArg, FailOnArg};

/// The file's name.
pub(super) const FILE_NAME: &str = "tracereplay.toml";

const TOP_KEYS: &[&str] = &[
    "paths",
    "baselines",
    "scenarios",
    "cache-dir",
    "trusted-keys",
    "budget",
    "profile",
];
const PROFILE_KEYS: &[&str] = &[
    "fail-on",
    "drift",
    "usage-tolerance",
    "alpha",
    "require-sealed",
    "require-signed",
];

/// One profile's settings (`None`: not set).
#[derive(Debug, Clone, Default)]
struct Profile {
    fail_on: Option<FailOnArg>,
    drift: Option<DriftArg>,
    usage_tolerance: Option<f64>,
    alpha: Option<f64>,
    require_sealed: Option<bool>,
    require_signed: Option<bool>,
}

/// A loaded project file.
#[derive(Debug, Clone, Default)]
pub(super) struct Config {
    /// The file, when one was found.
    file: Option<Utf8PathBuf>,
    paths: Option<Vec<Utf8PathBuf>>,
    baselines: Option<Utf8PathBuf>,
    scenarios: Option<Vec<Utf8PathBuf>>,
    cache_dir: Option<Utf8PathBuf>,
    trusted_keys: Option<Utf8PathBuf>,
    /// `prices.toml` at the project's root, when there is one.
    prices: Option<Utf8PathBuf>,
    /// `[budget]`: tokens and US dollars.
    budget: (Option<u64>, Option<f64>),
    profiles: BTreeMap<String, Profile>,
    /// The profile in use, and why.
    profile: (String, &'static str),
}

/// `key` is unknown among `known`: the error, with the closest known key.
fn unknown(file: &Utf8Path, at: &str, key: &str, known: &[&str]) -> anyhow::Error {
    let hint = tracereplay::oracle::registry::closest(key, known.iter().copied())
        .map(|k| format!("; did you mean `{k}`?"))
        .unwrap_or_default();
    anyhow::anyhow!(
        "`{file}`: unknown key `{at}{key}`{hint} (known: {})",
        known.join(", ")
    )
}

/// `base` joined with `p`, shown relative to the working directory when it is under it.
fn resolve(base: &Utf8Path, p: &str) -> Utf8PathBuf {
    let joined = base.join(p);
    let cwd = std::env::current_dir()
        .ok()
        .and_then(|d| Utf8PathBuf::from_path_buf(d).ok());
    match cwd.and_then(|c| joined.strip_prefix(&c).ok().map(Utf8Path::to_owned)) {
        Some(rel) if rel.as_str().is_empty() => ".".into(),
        Some(rel) => rel,
        None => joined,
    }
}

fn string(file: &Utf8Path, key: &str, v: &toml::Value) -> anyhow::Result<String> {
    v.as_str()
        .map(str::to_owned)
        .with_context(|| format!("`{file}`: `{key}` must be a string"))
}

fn strings(file: &Utf8Path, key: &str, v: &toml::Value) -> anyhow::Result<Vec<String>> {
    match v {
        toml::Value::String(s) => Ok(vec![s.clone()]),
        toml::Value::Array(items) => items.iter().map(|i| string(file, key, i)).collect(),
        _ => bail!("`{file}`: `{key}` must be a string or a list of strings"),
    }
}

fn profile_of(file: &Utf8Path, name: &str, t: &toml::Table) -> anyhow::Result<Profile> {
    let at = format!("profile.{name}.");
    let mut p = Profile::default();
    for (k, v) in t {
        let key = format!("{at}{k}");
        match k.as_str() {
            "fail-on" => {
                let s = string(file, &key, v)?;
                p.fail_on = Some(FailOnArg::from_str(&s, true).map_err(|_| {
                    anyhow::anyhow!("`{file}`: `{key}` is `{s}`, not any, high, critical or none")
                })?);
            }
            "drift" => {
                let s = string(file, &key, v)?;
                p.drift = Some(DriftArg::from_str(&s, true).map_err(|_| {
                    anyhow::anyhow!(
                        "`{file}`: `{key}` is `{s}`, not default, strict, warn or ignore"
                    )
                })?);
            }
            "usage-tolerance" => {
                let n = v
                    .as_float()
                    .or_else(|| v.as_integer().map(|i| i as f64))
                    .filter(|n| *n >= 0.0)
                    .with_context(|| format!("`{file}`: `{key}` must be a number of percent"))?;
                p.usage_tolerance = Some(n);
            }
            "alpha" => {
                let n = v
                    .as_float()
                    .filter(|n| *n > 0.0 && *n < 1.0)
                    .with_context(|| {
                        format!("`{file}`: `{key}` must be a number between 0 and 1")
                    })?;
                p.alpha = Some(n);
            }
            "require-sealed" | "require-signed" => {
                let on = v
                    .as_bool()
                    .with_context(|| format!("`{file}`: `{key}` must be true or false"))?;
                if k == "require-sealed" {
                    p.require_sealed = Some(on);
                } else {
                    p.require_signed = Some(on);
                }
            }
            other => return Err(unknown(file, &at, other, PROFILE_KEYS)),
        }
    }
    Ok(p)
}

impl Config {
    /// The project file named by `explicit`, else the first `tracereplay.toml` in the working
    /// directory or its parents; an empty config when there is none.
    pub(super) fn load(explicit: Option<&Utf8Path>) -> anyhow::Result<Config> {
        let file = match explicit {
            Some(f) => {
                if !f.is_file() {
                    bail!("`--config {f}`: no such file");
                }
                Some(f.to_owned())
            }
            None => {
                let cwd = std::env::current_dir().context("cannot read the working directory")?;
                // The first directory with an entry of that name decides: a file there that
                // cannot be read (a directory, a FIFO, a dangling symlink) is an error, never
                // a reason to use a parent directory's file instead.
                cwd.ancestors()
                    .map(|d| d.join(FILE_NAME))
                    .find(|f| f.symlink_metadata().is_ok())
                    .and_then(|f| Utf8PathBuf::from_path_buf(f).ok())
            }
        };
        let Some(file) = file else {
            let prices = Utf8Path::new(super::prices::FILE_NAME);
            return Ok(Config {
                prices: prices.is_file().then(|| prices.to_owned()),
                ..Config::default()
            });
        };
        let text = tracereplay::fsutil::read_regular(&file, 1 << 20, "project file")
            .with_context(|| format!("cannot read `{file}`"))?;
        let text = String::from_utf8(text).with_context(|| format!("`{file}` is not UTF-8"))?;
        let table: toml::Table =
            toml::from_str(&text).map_err(|e| anyhow::anyhow!("`{file}`: {e}"))?;
        let base = file
            .canonicalize_utf8()
            .ok()
            .and_then(|f| f.parent().map(Utf8Path::to_owned))
            .unwrap_or_else(|| ".".into());
        let shown = tracereplay::paths::display_path(&file);
        let shown = Utf8Path::new(&shown);
        let prices = base.join(super::prices::FILE_NAME);
        let mut c = Config {
            file: Some(file.clone()),
            prices: prices
                .is_file()
                .then(|| resolve(&base, super::prices::FILE_NAME)),
            ..Config::default()
        };
        for (k, v) in &table {
            match k.as_str() {
                "paths" => {
                    let list = strings(shown, k, v)?;
                    c.paths = Some(list.iter().map(|p| resolve(&base, p)).collect());
                }
                "scenarios" => {
                    let list = strings(shown, k, v)?;
                    c.scenarios = Some(list.iter().map(|p| resolve(&base, p)).collect());
                }
                "baselines" => c.baselines = Some(resolve(&base, &string(shown, k, v)?)),
                "trusted-keys" => c.trusted_keys = Some(resolve(&base, &string(shown, k, v)?)),
                "cache-dir" => {
                    // The cache is written even under CI: a project file may only put it inside
                    // the project. Elsewhere is the command line's choice (`--cache-dir`).
                    let dir = string(shown, k, v)?;
                    let inside = Utf8Path::new(&dir).components().all(|c| {
                        matches!(
                            c,
                            camino::Utf8Component::Normal(_) | camino::Utf8Component::CurDir
                        )
                    });
                    if !inside {
                        bail!(
                            "`{shown}`: `cache-dir` `{}` leaves the project (an absolute path, or `..`); give a directory inside it, or pass `--cache-dir DIR` on the command line",
                            tracereplay::report::escape_controls(&dir)
                        );
                    }
                    c.cache_dir = Some(resolve(&base, &dir));
                }
                "budget" => c.budget = budget_of(shown, v)?,
                "profile" => {
                    let profiles = v
                        .as_table()
                        .with_context(|| format!("`{shown}`: `profile` must be a table"))?;
                    for (name, p) in profiles {
                        let t = p.as_table().with_context(|| {
                            format!("`{shown}`: `profile.{name}` must be a table")
                        })?;
                        c.profiles.insert(name.clone(), profile_of(shown, name, t)?);
                    }
                }
                other => return Err(unknown(shown, "", other, TOP_KEYS)),
            }
        }
        Ok(c)
    }

    /// Picks the profile: `--profile`, else `ci` under CI when defined, else `default`.
    pub(super) fn choose_profile(
        &mut self,
        flag: Option<&str>,
        under_ci: bool,
    ) -> anyhow::Result<()> {
        self.profile = match flag {
            Some(p) if p == "default" || self.profiles.contains_key(p) => {
                (p.to_owned(), "`--profile`")
            }
            Some(p) => {
                let names: Vec<&str> = self.profiles.keys().map(String::as_str).collect();
                bail!(
                    "`--profile {p}`: no such profile{} (defined: {})",
                    tracereplay::oracle::registry::closest(p, names.iter().copied())
                        .map(|k| format!("; did you mean `{k}`?"))
                        .unwrap_or_default(),
                    if names.is_empty() {
                        "none".to_owned()
                    } else {
                        names.join(", ")
                    }
                )
            }
            None if under_ci && self.profiles.contains_key("ci") => ("ci".into(), "under CI"),
            None => ("default".into(), "the default"),
        };
        Ok(())
    }

    /// A profile setting: the chosen profile's, else `default`'s; with the profile it came from.
    fn setting<T: Clone>(&self, get: impl Fn(&Profile) -> Option<T>) -> Option<(T, String)> {
        let chosen = &self.profile.0;
        (self
            .profiles
            .get(chosen)
            .and_then(&get)
            .map(|v| (v, chosen.clone())))
        .or_else(|| {
            (self.profiles.get("default").and_then(&get)).map(|v| (v, "default".to_owned()))
        })
    }

    fn source_in_file(&self, what: &str) -> String {
        let file = self.file.as_deref().map(tracereplay::paths::display_path);
        format!("{} ({what})", file.unwrap_or_default())
    }

    /// The file's settings as command-line arguments, for whichever subcommand `matches` holds:
    /// each setting goes to every subcommand that declares an argument of its id, unless the
    /// command line gave that argument itself. Resolved once, the same way for every command
    /// (a new subcommand that declares `--drift` reads the file's `drift` without being listed
    /// anywhere). Returns the arguments to append to the command line.
    pub(super) fn arguments(&self, cmd: &clap::Command, matches: &ArgMatches) -> Vec<String> {
        // The innermost subcommand and its definition.
        let (mut sub, mut def) = (matches, cmd);
        while let Some((name, m)) = sub.subcommand() {
            match def.find_subcommand(name) {
                Some(d) => (sub, def) = (m, d),
                None => return Vec::new(),
            }
        }
        let fail_on = self.setting(|p| p.fail_on).map(|v| v.0);
        let drift = self.setting(|p| p.drift).map(|v| v.0);
        let tolerance = self.setting(|p| p.usage_tolerance).map(|v| v.0);
        let alpha = self.setting(|p| p.alpha).map(|v| v.0);
        let sealed = self.setting(|p| p.require_sealed).map(|v| v.0);
        let signed = self.setting(|p| p.require_signed).map(|v| v.0);
        let name = |v: &dyn Fn() -> Option<clap::builder::PossibleValue>| {
            v().map(|p| p.get_name().to_owned())
        };
        let list = |v: &Option<Vec<Utf8PathBuf>>| {
            v.as_ref()
                .map(|l| l.iter().map(|p| p.to_string()).collect::<Vec<_>>())
        };
        let one = |v: Option<String>| v.map(|v| vec![v]);
        let settings: [(&str, Option<Vec<String>>); 14] = [
            ("prices", one(self.prices.as_ref().map(|p| p.to_string()))),
            ("budget_tokens", one(self.budget.0.map(|t| t.to_string()))),
            ("budget_cost", one(self.budget.1.map(|c| c.to_string()))),
            ("paths", list(&self.paths)),
            ("scenario_dirs", list(&self.scenarios)),
            (
                "cache_dir",
                self.cache_dir.as_ref().map(|d| vec![d.to_string()]),
            ),
            (
                "fail_on",
                fail_on
                    .and_then(|f| name(&|| f.to_possible_value()))
                    .map(|v| vec![v]),
            ),
            (
                "drift",
                drift
                    .and_then(|d| name(&|| d.to_possible_value()))
                    .map(|v| vec![v]),
            ),
            ("usage_tolerance", tolerance.map(|t| vec![t.to_string()])),
            ("alpha", alpha.map(|a| vec![a.to_string()])),
            // A flag: only `true` can be given.
            ("require_sealed", sealed.filter(|s| *s).map(|_| Vec::new())),
            ("require_signed", signed.filter(|s| *s).map(|_| Vec::new())),
            (
                "trusted_keys",
                self.trusted_keys.as_ref().map(|d| vec![d.to_string()]),
            ),
            (
                "baselines",
                self.baselines.as_ref().map(|d| vec![d.to_string()]),
            ),
        ];
        let (mut out, mut positional) = (Vec::new(), Vec::new());
        for (id, values) in settings {
            let (Some(values), Some(arg)) =
                (values, def.get_arguments().find(|a| a.get_id() == id))
            else {
                continue;
            };
            if sub.value_source(id) == Some(ValueSource::CommandLine) {
                continue;
            }
            // `--baselines` given explicitly must exist; where it has no default (`check`,
            // `diff`, `explain`), the file's directory is the default instead (below).
            if id == "baselines" && arg.get_default_values().is_empty() {
                continue;
            }
            match arg.get_long() {
                Some(long) if values.is_empty() => out.push(format!("--{long}")),
                Some(long) => out.extend(values.into_iter().map(|v| format!("--{long}={v}"))),
                None => positional.extend(values),
            }
        }
        // Positional values after `--`, so that no option taking an optional value
        // (`--artifacts [DIR]`) swallows them.
        if !positional.is_empty() {
            out.push("--".to_owned());
            out.extend(positional);
        }
        out
    }

    /// What the file says that is no argument of every command: the suite's roots (where a
    /// trace's scenario is looked up), and the baselines directory used when `--baselines` is
    /// not given.
    pub(super) fn defaults(&self) -> (Option<Vec<Utf8PathBuf>>, Option<Utf8PathBuf>) {
        (self.paths.clone(), self.baselines.clone())
    }

    /// `tracereplay config`: the settings `check` runs with, and where each came from.
    pub(super) fn print(&self, out: &mut dyn Write) -> std::io::Result<()> {
        match &self.file {
            Some(f) => writeln!(out, "file: {}", tracereplay::paths::display_path(f))?,
            None => writeln!(
                out,
                "file: none (no `{FILE_NAME}` in the working directory or its parents)"
            )?,
        }
        writeln!(out, "profile: {} ({})", self.profile.0, self.profile.1)?;
        let list = |v: &[Utf8PathBuf]| v.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(", ");
        let mut line = |key: &str, value: String, source: String| {
            writeln!(out, "{key:<16} {value:<28} {source}")
        };
        let default = || "default".to_owned();
        line(
            "paths",
            self.paths.as_deref().map_or("traces/".into(), list),
            self.paths
                .as_ref()
                .map_or_else(default, |_| self.source_in_file("paths")),
        )?;
        line(
            "baselines",
            self.baselines
                .as_ref()
                .map_or("baselines".into(), |b| b.to_string()),
            self.baselines
                .as_ref()
                .map_or_else(default, |_| self.source_in_file("baselines")),
        )?;
        line(
            "scenarios",
            self.scenarios.as_deref().map_or("(none)".into(), list),
            self.scenarios
                .as_ref()
                .map_or_else(default, |_| self.source_in_file("scenarios")),
        )?;
        line(
            "cache-dir",
            self.cache_dir
                .as_ref()
                .map_or(".tracereplay/cache".into(), |d| d.to_string()),
            self.cache_dir
                .as_ref()
                .map_or_else(default, |_| self.source_in_file("cache-dir")),
        )?;
        let from = |p: Option<String>| {
            p.map_or_else(default, |name| {
                self.source_in_file(&format!("[profile.{name}]"))
            })
        };
        let fail_on = self.setting(|p| p.fail_on);
        line(
            "fail-on",
            fail_on.as_ref().map_or("high".into(), |(f, _)| name_of(*f)),
            from(fail_on.map(|v| v.1)),
        )?;
        let drift = self.setting(|p| p.drift);
        line(
            "drift",
            drift
                .as_ref()
                .map_or("default".into(), |(d, _)| name_of(*d)),
            from(drift.map(|v| v.1)),
        )?;
        let tol = self.setting(|p| p.usage_tolerance);
        line(
            "usage-tolerance",
            tol.as_ref().map_or("20".into(), |(t, _)| t.to_string()),
            from(tol.map(|v| v.1)),
        )?;
        let alpha = self.setting(|p| p.alpha);
        line(
            "alpha",
            alpha.as_ref().map_or("0.05".into(), |(a, _)| a.to_string()),
            from(alpha.map(|v| v.1)),
        )?;
        let sealed = self.setting(|p| p.require_sealed);
        line(
            "require-sealed",
            sealed
                .as_ref()
                .map_or("false".into(), |(s, _)| s.to_string()),
            from(sealed.map(|v| v.1)),
        )?;
        let signed = self.setting(|p| p.require_signed);
        line(
            "require-signed",
            signed
                .as_ref()
                .map_or("false".into(), |(s, _)| s.to_string()),
            from(signed.map(|v| v.1)),
        )?;
        line(
            "trusted-keys",
            self.trusted_keys
                .as_ref()
                .map_or("(none)".into(), |d| d.to_string()),
            self.trusted_keys
                .as_ref()
                .map_or_else(default, |_| self.source_in_file("trusted-keys")),
        )?;
        line(
            "prices",
            self.prices
                .as_ref()
                .map_or("(none)".into(), |d| d.to_string()),
            if self.prices.is_some() {
                "the project's root".to_owned()
            } else {
                default()
            },
        )?;
        let budget = |v: Option<String>| {
            let source = v.is_some().then(|| self.source_in_file("[budget]"));
            (
                v.unwrap_or_else(|| "(none)".into()),
                source.unwrap_or_else(default),
            )
        };
        let (tokens, source) = budget(self.budget.0.map(|t| t.to_string()));
        line("budget.tokens", tokens, source)?;
        let (cost, source) = budget(self.budget.1.map(|c| format!("${c}")));
        line("budget.cost", cost, source)?;
        writeln!(out, "(a flag on the command line wins over these)")
    }
}

/// `[budget]`: `tokens` (a non-negative integer) and `cost` (non-negative US dollars).
fn budget_of(file: &Utf8Path, v: &toml::Value) -> anyhow::Result<(Option<u64>, Option<f64>)> {
    let t = v
        .as_table()
        .with_context(|| format!("`{file}`: `budget` must be a table"))?;
    let mut out = (None, None);
    for (k, v) in t {
        match (k.as_str(), v) {
            ("tokens", toml::Value::Integer(n)) if *n >= 0 => out.0 = Some(*n as u64),
            ("tokens", _) => bail!("`{file}`: `budget.tokens` must be a non-negative integer"),
            ("cost", toml::Value::Integer(n)) if *n >= 0 => out.1 = Some(*n as f64),
            ("cost", toml::Value::Float(c)) if *c >= 0.0 && c.is_finite() => out.1 = Some(*c),
            ("cost", _) => {
                bail!("`{file}`: `budget.cost` must be a non-negative number of US dollars")
            }
            (other, _) => return Err(unknown(file, "budget.", other, &["tokens", "cost"])),
        }
    }
    Ok(out)
}

/// A value's command-line spelling.
fn name_of(v: impl ValueEnum) -> String {
    v.to_possible_value()
        .map_or_else(String::new, |p| p.get_name().to_owned())
}
