//! The settings as people read them: `tracereplay config` (what `check` runs with, and where
//! each value came from) and `docs/configuration.md` (every key, its type and default, and the
//! commands that read it), both from [`super::Key`] and [`super::Cmd::reads`].

use std::io::Write;

use camino::Utf8PathBuf;
use clap::ValueEnum;

use super::{Config, Settings, Source};
use crate::cli::args::{DriftArg, FailOnArg};

/// A setting's value as text.
pub(super) trait Shown {
    fn shown(&self) -> String;
}

impl Shown for Vec<Utf8PathBuf> {
    fn shown(&self) -> String {
        let all: Vec<&str> = self.iter().map(|p| p.as_str()).collect();
        all.join(", ")
    }
}

impl Shown for Utf8PathBuf {
    fn shown(&self) -> String {
        self.to_string()
    }
}

macro_rules! shown_by_display {
    ($($t:ty),*) => { $(impl Shown for $t { fn shown(&self) -> String { self.to_string() } })* };
}
shown_by_display!(u64, f64, bool, String);

macro_rules! shown_by_value_name {
    ($($t:ty),*) => {
        $(impl Shown for $t {
            fn shown(&self) -> String {
                self.to_possible_value()
                    .map_or_else(String::new, |p| p.get_name().to_owned())
            }
        })*
    };
}
shown_by_value_name!(FailOnArg, DriftArg);

impl Settings {
    /// `tracereplay config`: the settings `check` runs with, and where each came from.
    pub(in crate::cli) fn print(
        &self,
        project: &Config,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        let file = project.file().map(tracereplay_trace::paths::display_path);
        match &file {
            Some(f) => writeln!(out, "file: {f}")?,
            None => writeln!(
                out,
                "file: none (no `{}` in the working directory or its parents)",
                super::file::FILE_NAME
            )?,
        }
        let (profile, why) = project.profile();
        writeln!(out, "profile: {profile} ({why})")?;
        let file = file.unwrap_or_default();
        let shadowed = project.shadowed();
        for &key in self.cmd.reads() {
            let (value, source) = match self.source(key) {
                Source::Default => (shown_default(key.default_text()), "default".to_owned()),
                source => {
                    let value = self.merged.shown(key).unwrap_or_default();
                    let from = match source {
                        Source::CommandLine => "the command line".to_owned(),
                        Source::Profile(name) => format!("{file} ([profile.{name}])"),
                        Source::TopLevel => format!("{file} ({})", key.name()),
                        Source::Found if file.is_empty() => "the working directory".to_owned(),
                        Source::Found | Source::Default => "the project's root".to_owned(),
                    };
                    (value, from)
                }
            };
            // A value from the project file may hold any character: shown escaped.
            let value = tracereplay::report::escape_controls(&value);
            writeln!(out, "{:<16} {value:<28} {source}", key.name())?;
            if let Some((_, top, _)) = shadowed.iter().find(|(k, _, _)| *k == key) {
                let top = tracereplay::report::escape_controls(top);
                writeln!(
                    out,
                    "{:<16} (shadows `{top}` at the file's top level, which never takes effect)",
                    ""
                )?;
            }
        }
        writeln!(out, "(a flag on the command line wins over these)")
    }
}

/// A default as `config` shows it: a value without its TOML quotes, "(none)" for none.
pub(super) fn shown_default(d: &str) -> String {
    match d {
        "[]" | "none" => "(none)".to_owned(),
        _ if d.starts_with('`') => "(none)".to_owned(),
        _ if d.starts_with('[') => d.trim_matches(['[', ']', '"']).to_owned() + "/",
        _ => d.trim_matches('"').to_owned(),
    }
}

/// `docs/configuration.md`: every key of the project file, its type and default, and the
/// commands that read it.
#[cfg(test)]
pub(in crate::cli) fn configuration_reference() -> String {
    use super::{Cmd, Key};
    let mut out = String::from(
        "# Configuration: the project file\n\nGenerated from the code (`cargo test` checks this file is current;\n`UPDATE_DOCS=1 cargo test --bin tracereplay configuration_reference` rewrites it).\n\n",
    );
    out.push_str(INTRO);
    out.push_str("\n| key | type | default | read by |\n|---|---|---|---|\n");
    for &key in Key::ALL {
        let readers: Vec<String> = (Cmd::ALL.iter())
            .filter(|c| c.reads().contains(&key))
            .map(|c| format!("`{}`", c.name()))
            .collect();
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            key.name(),
            key.shown_type(),
            code_default(key.default_text()),
            readers.join(", ")
        ));
    }
    out.push_str("\n## The keys\n\n");
    for &key in Key::ALL {
        out.push_str(&format!("- **`{}`**: {}\n", key.name(), key.doc()));
    }
    out
}

/// A default as the table shows it: a TOML value in code, prose as it is.
#[cfg(test)]
fn code_default(d: &str) -> String {
    let is_value =
        d.starts_with('"') || d.starts_with('[') || d.parse::<f64>().is_ok() || d == "false";
    if is_value {
        format!("`{d}`")
    } else {
        d.to_owned()
    }
}

#[cfg(test)]
const INTRO: &str = r#"`tracereplay.toml` says where a project's suite is and how it is judged. A command finds it
by walking up from the working directory (or takes `--config FILE`); paths in it are relative to
the file, so a command behaves the same from any subdirectory. `tracereplay config` prints what
`check` runs with and where each value came from.

Every key may stand at the top level or in a profile (`[profile.NAME]`). A command takes each
setting it reads from the first of these that gives it:

1. the command line (a flag, or the paths given as arguments — which replace the file's
   `paths`, never add to them);
2. the selected profile: `--profile NAME`, else `ci` under CI (`CI` or `TF_BUILD` set) when the
   file defines it;
3. `[profile.default]`;
4. the file's top level;
5. the built-in default.

`require-sealed` and `require-signed` set to `true` in the file are turned off for one run with
`--no-require-sealed` and `--no-require-signed`. `diff --from OLD --to NEW` compares the two sides
it names and ignores `paths`. An unknown key is an error naming the closest known one. A key
set both at the top level and in `[profile.default]` is warned about by every command (the top
level's value never takes effect), and `config` shows it under the value that wins.

```toml
paths = ["traces"]
baselines = "baselines"
prices = "prices.toml"

fail-on = "high"
drift = "default"

[budget]
tokens = 2_000_000
cost = 5.00

[profile.ci]
require-sealed = true
```
"#;
