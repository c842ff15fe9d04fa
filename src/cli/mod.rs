//! The binary's command layer: parse flags, call the library, render, pick the exit code.

pub mod args;
mod baseline;
mod cat;
mod check;
mod ci;
mod diff;
pub mod exit;
mod explain;
mod gates;
mod ingest;
mod init;
mod key;
mod lint;
mod merge;
mod pack;
mod verify;

use std::io::Write;

use args::{Cli, Command};

/// Runs a parsed command line, writing results to `out`; `Err` means exit 2.
pub fn run(cli: &Cli, out: &mut dyn Write) -> anyhow::Result<i32> {
    match &cli.command {
        Command::Check(a) => check::run(a, out),
        Command::Pack(a) => pack::run(a, out),
        Command::Cat(a) => cat::run(a, out),
        Command::Verify(a) => verify::run(a, out),
        Command::Diff(a) => diff::run(a, out),
        Command::Explain(a) => explain::run(a, out),
        Command::Gates(a) => gates::run(a, out),
        Command::Lint(a) => lint::run(a, out),
        Command::Ingest(a) => ingest::run(a, out),
        Command::Merge(a) => merge::run(a, out),
        Command::Init => init::run(out),
        Command::Key(c) => key::run(c, out),
        Command::Baseline(c) => baseline::run(c, out),
    }
}
