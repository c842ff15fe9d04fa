//! The command layer (the `cli` feature): parse flags, call the library, render, pick the exit
//! code.
//!
//! Nothing here prints with `print!`/`eprintln!` (they panic when the reader has gone, as in
//! `2>&1 | head`): results go through the `out` writer, whose broken pipe ends the run quietly,
//! and diagnostics through `diag!`, which drops what a closed stderr cannot take.
#![deny(clippy::print_stdout, clippy::print_stderr)]

/// `eprintln!` that never panics: a diagnostic to a closed stderr (`2>&1 | head`) is dropped,
/// where `eprintln!` would panic.
macro_rules! diag {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub(crate) mod args;
mod baseline;
mod cat;
mod check;
mod check_last;
mod check_record;
mod ci;
mod collect;
mod diff;
pub(crate) mod exit;
mod explain;
mod export;
mod gates;
mod ingest;
mod ingest_bucket;
mod ingest_emit;
mod init;
mod key;
mod lint;
mod merge;
mod options;
mod otlp;
mod pack;
mod pager;
mod pending_diff;
mod prices;
mod record;
mod repeats;
mod replay;
mod report_cmd;
mod review;
mod scope;
mod settings;
mod sign;
mod status;
mod trials;
mod trials_group;
mod trials_next;
mod verify;

use std::io::Write;

use args::{Cli, Command};

/// The whole command line: parse the process's arguments, run, print any error, and return
/// the exit code.
pub(crate) fn main() -> i32 {
    // Temporary files older than this are leftovers of a killed run.
    tracereplay_trace::fsutil::mark_run_start();
    use clap::Parser;
    let parsed = match Cli::try_parse() {
        Ok(p) => p,
        Err(e) => e.exit(),
    };
    // The project file, read the same way for every command, and the command line's settings
    // over it: one typed value of settings per command.
    let project = settings::Config::load(parsed.config.as_deref()).and_then(|mut c| {
        c.choose_profile(parsed.profile.as_deref(), ci::env_ci())?;
        Ok(c)
    });
    let project = match project {
        Ok(c) => c,
        Err(e) => {
            diag!("error: {e:#}");
            return exit::ERROR;
        }
    };
    project.warn_shadowed();
    let (which, cli_layer) = settings::command_layer(&parsed.command);
    let settings = settings::Settings::resolve(which, cli_layer, &project, parsed.color);
    if matches!(parsed.command, Command::Config) {
        // Paths from the file and the working directory are shown with control characters
        // escaped, line by line, as every report shows what an input controls.
        let mut text = Vec::new();
        let _ = settings.print(&project, &mut text);
        let shown: String = (String::from_utf8_lossy(&text).lines())
            .map(|l| tracereplay::report::escape_controls(l) + "\n")
            .collect();
        return match std::io::stdout().lock().write_all(shown.as_bytes()) {
            Ok(()) => exit::OK,
            Err(_) => exit::OK,
        };
    }
    // Not locked: `check` writes its report from a worker thread of its pool.
    let mut out = std::io::BufWriter::new(std::io::stdout());
    match run(&parsed, &settings, &mut out)
        .and_then(|c| out.flush().map(|()| c).map_err(Into::into))
    {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => exit::OK,
        Err(e) => {
            let _ = out.flush();
            // A URL the user gave may hold a password or a token: never printed.
            diag!(
                "error: {}",
                tracereplay_trace::paths::redact_urls_in(&format!("{e:#}"))
            );
            exit::ERROR
        }
    }
}

/// A reader that closed the pipe early (`| head`) is not an error.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Runs a parsed command line with the settings resolved from it and the project file, writing
/// results to `out`; `Err` means exit 2.
fn run(
    cli: &Cli,
    settings: &settings::Settings,
    out: &mut (dyn Write + Send),
) -> anyhow::Result<i32> {
    match &cli.command {
        Command::Check(a) => check::run(a, settings, out),
        Command::Pack(a) => pack::run(a, out),
        Command::Cat(a) => cat::run(a, out),
        Command::Verify(a) => verify::run(a, settings, out),
        Command::Sign(a) => sign::run_sign(a, out),
        Command::VerifyAttestation(a) => sign::run_verify_attestation(a, settings, out),
        Command::Diff(a) => diff::run(a, settings, out),
        Command::Explain(a) => explain::run(a, settings, out),
        Command::Gates(a) => gates::run(a, settings, out),
        Command::Lint(a) => lint::run(a, settings, out),
        Command::Ingest(a) => ingest::run(a, out),
        Command::Export(a) => export::run(a, out),
        Command::Merge(a) => merge::run(a, settings, out),
        Command::Report(a) => report_cmd::run(a, out),
        Command::Init => init::run(out),
        Command::Key(c) => key::run(c, out),
        Command::Baseline(c) => baseline::run(c, settings, out),
        Command::Trials(c) => trials::run(c, settings, out),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let shell = match shell {
                args::ShellArg::Bash => clap_complete::Shell::Bash,
                args::ShellArg::Zsh => clap_complete::Shell::Zsh,
                args::ShellArg::Fish => clap_complete::Shell::Fish,
                args::ShellArg::Powershell => clap_complete::Shell::PowerShell,
                args::ShellArg::Elvish => clap_complete::Shell::Elvish,
            };
            clap_complete::generate(shell, &mut Cli::command(), "tracereplay", out);
            Ok(exit::OK)
        }
        Command::Config => Ok(exit::OK),
        Command::Replay(c) => replay::run(c, out),
        Command::Record(a) => record::run(a, settings, out),
        Command::Collect(a) => collect::run(a, out),
        Command::Man => {
            use clap::CommandFactory;
            clap_mangen::Man::new(Cli::command()).render(out)?;
            Ok(exit::OK)
        }
    }
}

/// The command-line reference (`docs/cli.md`), generated from the flag definitions so it
/// cannot drift from them: every command's help, as `--help` prints it.
#[cfg(test)]
fn reference() -> String {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    cmd.build();
    let mut out = String::from(
        "# Command-line reference\n\nGenerated from the flag definitions (`cargo test` checks this file is current;\n`UPDATE_DOCS=1 cargo test --bin tracereplay cli_reference` rewrites it).\n",
    );
    fn walk(cmd: &clap::Command, path: &str, out: &mut String) {
        let name = if path.is_empty() {
            cmd.get_name().to_owned()
        } else {
            format!("{path} {}", cmd.get_name())
        };
        let mut c = cmd.clone().bin_name(&name);
        let help = c.render_long_help().to_string();
        out.push_str(&format!(
            "\n## `{name}`\n\n```text\n{}\n```\n",
            help.trim_end()
        ));
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            walk(sub, &name, out);
        }
    }
    walk(&cmd, "", &mut out);
    out
}

#[cfg(test)]
mod tests {
    /// `docs/configuration.md` is generated from the settings' table; this keeps the committed
    /// file current.
    #[test]
    fn configuration_reference_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/configuration.md");
        let want = super::settings::configuration_reference();
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "docs/configuration.md is out of date: run `UPDATE_DOCS=1 cargo test --bin tracereplay configuration_reference`"
        );
    }

    /// `docs/cli.md` is generated from the flag definitions; this keeps the committed file
    /// current.
    #[test]
    fn cli_reference_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/cli.md");
        let want = super::reference();
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "docs/cli.md is out of date: run `UPDATE_DOCS=1 cargo test --bin tracereplay cli_reference`"
        );
    }
}
