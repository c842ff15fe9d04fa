//! The project file, `tracereplay.toml`: found by walking up from the working directory (or
//! named with `--config FILE`), it gives a [`Layer`] of settings at its top level and one per
//! profile, the way nextest has them.
//!
//! ```toml
//! paths = ["traces"]              # suite roots (default `traces/`)
//! baselines = "baselines"         # approved baselines
//! scenarios = ["harness/suite"]   # `--scenarios` directories
//! cache-dir = ".tracereplay/cache"
//! trusted-keys = "keys"           # public keys signatures are checked against
//! prices = "prices.toml"          # the price table (default: `prices.toml` beside this file)
//!
//! [budget]                        # the suite's totals `check` holds the run to
//! tokens = 2_000_000
//! cost = 5.00
//!
//! [profile.default]               # over the top level, for every profile
//! fail-on = "high"
//!
//! [profile.ci]                    # chosen automatically under CI
//! require-sealed = true
//! ```
//!
//! Every setting may stand at the top level or in a profile. Paths are relative to the file,
//! so a command behaves the same from any subdirectory. An unknown key is an error naming the
//! closest known one.

use std::collections::BTreeMap;

use anyhow::{Context, bail};
use camino::{Utf8Path, Utf8PathBuf};
use clap::ValueEnum;

use super::{Key, Layer, Source};
use crate::cli::args::{DriftArg, FailOnArg};

/// The file's name.
pub(in crate::cli) const FILE_NAME: &str = "tracereplay.toml";

/// A loaded project file (empty when there is none).
#[derive(Debug, Clone, Default)]
pub(in crate::cli) struct Config {
    /// The file, when one was found.
    file: Option<Utf8PathBuf>,
    /// Its top level.
    top: Layer,
    /// Its profiles.
    profiles: BTreeMap<String, Layer>,
    /// What was found rather than set: `prices.toml` beside the file (or, without a file, in
    /// the working directory).
    found: Layer,
    /// The profile in use, and why.
    profile: (String, &'static str),
}

/// The keys a layer's table may hold (`budget` for `budget.tokens` and `budget.cost`).
fn table_keys() -> Vec<&'static str> {
    let mut keys: Vec<&str> = (Key::ALL.iter())
        .map(|k| k.name())
        .filter(|n| !n.starts_with("budget."))
        .collect();
    keys.push("budget");
    keys
}

/// `key` is unknown among `known`: the error, with the closest known key.
fn unknown(file: &Utf8Path, at: &str, key: &str, known: &[&str]) -> anyhow::Error {
    let hint = tracereplay_core::oracle::registry::closest(key, known.iter().copied())
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

/// One table's settings: the top level's (`at` empty) or a profile's (`profile.NAME.`).
fn layer_of(file: &Utf8Path, base: &Utf8Path, at: &str, t: &toml::Table) -> anyhow::Result<Layer> {
    let mut l = Layer::default();
    for (k, v) in t {
        let key = format!("{at}{k}");
        let path = || string(file, &key, v).map(|s| resolve(base, &s));
        let paths = || {
            let list = strings(file, &key, v)?;
            anyhow::Ok(list.iter().map(|p| resolve(base, p)).collect::<Vec<_>>())
        };
        match k.as_str() {
            "paths" => l.paths = Some(paths()?),
            "scenarios" => l.scenarios = Some(paths()?),
            "baselines" => l.baselines = Some(path()?),
            "trusted-keys" => l.trusted_keys = Some(path()?),
            "run-id" => l.run_id = Some(string(file, &key, v)?),
            "prices" => l.prices = Some(path()?),
            "cache-dir" => {
                // The cache is written even under CI: a project file may only put it inside
                // the project. Elsewhere is the command line's choice (`--cache-dir`).
                let dir = string(file, &key, v)?;
                let inside = Utf8Path::new(&dir).components().all(|c| {
                    matches!(
                        c,
                        camino::Utf8Component::Normal(_) | camino::Utf8Component::CurDir
                    )
                });
                if !inside {
                    bail!(
                        "`{file}`: `{key}` `{}` leaves the project (an absolute path, or `..`); give a directory inside it, or pass `--cache-dir DIR` on the command line",
                        tracereplay::report::escape_controls(&dir)
                    );
                }
                l.cache_dir = Some(resolve(base, &dir));
            }
            "budget" => (l.budget_tokens, l.budget_cost) = budget_of(file, &key, v)?,
            "fail-on" => {
                let s = string(file, &key, v)?;
                l.fail_on = Some(FailOnArg::from_str(&s, true).map_err(|_| {
                    anyhow::anyhow!("`{file}`: `{key}` is `{s}`, not any, high, critical or none")
                })?);
            }
            "drift" => {
                let s = string(file, &key, v)?;
                l.drift = Some(DriftArg::from_str(&s, true).map_err(|_| {
                    anyhow::anyhow!(
                        "`{file}`: `{key}` is `{s}`, not default, strict, warn or ignore"
                    )
                })?);
            }
            "usage-tolerance" => {
                let n = (v.as_float().or_else(|| v.as_integer().map(|i| i as f64)))
                    .filter(|n| *n >= 0.0 && n.is_finite())
                    .with_context(|| format!("`{file}`: `{key}` must be a number of percent"))?;
                l.usage_tolerance = Some(n);
            }
            "alpha" => {
                let n = (v.as_float())
                    .filter(|n| *n > 0.0 && *n < 1.0)
                    .with_context(|| {
                        format!("`{file}`: `{key}` must be a number between 0 and 1")
                    })?;
                l.alpha = Some(n);
            }
            "require-sealed" | "require-signed" => {
                let on = v
                    .as_bool()
                    .with_context(|| format!("`{file}`: `{key}` must be true or false"))?;
                if k == "require-sealed" {
                    l.require_sealed = Some(on);
                } else {
                    l.require_signed = Some(on);
                }
            }
            "profile" if at.is_empty() => {}
            other => {
                let mut known = table_keys();
                if at.is_empty() {
                    known.push("profile");
                }
                return Err(unknown(file, at, other, &known));
            }
        }
    }
    Ok(l)
}

/// `[budget]`: `tokens` (a non-negative integer) and `cost` (non-negative US dollars).
fn budget_of(
    file: &Utf8Path,
    at: &str,
    v: &toml::Value,
) -> anyhow::Result<(Option<u64>, Option<f64>)> {
    let t = v
        .as_table()
        .with_context(|| format!("`{file}`: `{at}` must be a table"))?;
    let mut out = (None, None);
    for (k, v) in t {
        match (k.as_str(), v) {
            ("tokens", toml::Value::Integer(n)) if *n >= 0 => out.0 = Some(*n as u64),
            ("tokens", _) => bail!("`{file}`: `{at}.tokens` must be a non-negative integer"),
            ("cost", toml::Value::Integer(n)) if *n >= 0 => out.1 = Some(*n as f64),
            ("cost", toml::Value::Float(c)) if *c >= 0.0 && c.is_finite() => out.1 = Some(*c),
            ("cost", _) => {
                bail!("`{file}`: `{at}.cost` must be a non-negative number of US dollars")
            }
            (other, _) => {
                return Err(unknown(file, &format!("{at}."), other, &["tokens", "cost"]));
            }
        }
    }
    Ok(out)
}

impl Config {
    /// The project file named by `explicit`, else the first `tracereplay.toml` in the working
    /// directory or its parents; an empty config when there is none.
    pub(in crate::cli) fn load(explicit: Option<&Utf8Path>) -> anyhow::Result<Config> {
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
        let prices_name = crate::cli::prices::FILE_NAME;
        let Some(file) = file else {
            let prices = Utf8Path::new(prices_name);
            let found = Layer {
                // Any entry of that name is read (a FIFO or a directory is then an error, never
                // silently no prices).
                prices: (prices.symlink_metadata().is_ok()).then(|| prices.to_owned()),
                ..Layer::default()
            };
            return Ok(Config {
                found,
                ..Config::default()
            });
        };
        let text = tracereplay_trace::fsutil::read_regular(&file, 1 << 20, "project file")
            .with_context(|| format!("cannot read `{file}`"))?;
        let text = String::from_utf8(text).with_context(|| format!("`{file}` is not UTF-8"))?;
        let table: toml::Table =
            toml::from_str(&text).map_err(|e| anyhow::anyhow!("`{file}`: {e}"))?;
        let base = file
            .canonicalize_utf8()
            .ok()
            .and_then(|f| f.parent().map(Utf8Path::to_owned))
            .unwrap_or_else(|| ".".into());
        let shown = tracereplay_trace::paths::display_path(&file);
        let shown = Utf8Path::new(&shown);
        let mut c = Config {
            file: Some(file.clone()),
            top: layer_of(shown, &base, "", &table)?,
            found: Layer {
                prices: (base.join(prices_name).symlink_metadata().is_ok())
                    .then(|| resolve(&base, prices_name)),
                ..Layer::default()
            },
            ..Config::default()
        };
        if let Some(v) = table.get("profile") {
            let profiles = v
                .as_table()
                .with_context(|| format!("`{shown}`: `profile` must be a table"))?;
            for (name, p) in profiles {
                let t = p
                    .as_table()
                    .with_context(|| format!("`{shown}`: `profile.{name}` must be a table"))?;
                let at = format!("profile.{name}.");
                c.profiles
                    .insert(name.clone(), layer_of(shown, &base, &at, t)?);
            }
        }
        Ok(c)
    }

    /// Picks the profile: `--profile`, else `ci` under CI when defined, else `default`.
    pub(in crate::cli) fn choose_profile(
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
                    tracereplay_core::oracle::registry::closest(p, names.iter().copied())
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

    /// The file's layers, highest precedence first: the chosen profile, `[profile.default]`,
    /// the top level, then what was found.
    pub(super) fn layers(&self) -> impl Iterator<Item = (&Layer, Source)> {
        let chosen = &self.profile.0;
        let chosen_layer = (chosen != "default")
            .then(|| self.profiles.get(chosen))
            .flatten()
            .map(|l| (l, Source::Profile(chosen.clone())));
        let default =
            (self.profiles.get("default")).map(|l| (l, Source::Profile("default".into())));
        (chosen_layer.into_iter())
            .chain(default)
            .chain([(&self.top, Source::TopLevel), (&self.found, Source::Found)])
    }

    /// The keys the file sets both at its top level and in `[profile.default]`, with the two
    /// values: the top level's never takes effect (a profile wins over the top level).
    pub(in crate::cli) fn shadowed(&self) -> Vec<(Key, String, String)> {
        let Some(default) = self.profiles.get("default") else {
            return Vec::new();
        };
        (Key::ALL.iter())
            .filter_map(|&k| {
                let top = self.top.shown(k)?;
                Some((k, top, default.shown(k)?))
            })
            .collect()
    }

    /// Says, once per command, what [`Config::shadowed`] finds.
    pub(in crate::cli) fn warn_shadowed(&self) {
        let file = self
            .file
            .as_deref()
            .map(tracereplay_trace::paths::display_path);
        for (key, top, default) in self.shadowed() {
            let (top, default) = (
                tracereplay::report::escape_controls(&top),
                tracereplay::report::escape_controls(&default),
            );
            diag!(
                "warning: `{}`: `{}` at the top level ({top}) never takes effect: `[profile.default]` sets it too ({default}), and a profile wins over the top level; keep one of the two",
                file.as_deref().unwrap_or_default(),
                key.name()
            );
        }
    }

    /// The file, when there is one.
    pub(in crate::cli) fn file(&self) -> Option<&Utf8Path> {
        self.file.as_deref()
    }

    /// The profile in use, and why.
    pub(in crate::cli) fn profile(&self) -> (&str, &str) {
        (&self.profile.0, self.profile.1)
    }
}
