//! The `tracereplay` binary: flags in, exit code out; the library does the work.

mod cli;

/// mimalloc: faster than the system allocator for tens of thousands of small result rows, and it
/// returns memory to the system more readily (lower peak RSS on large suites).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::Write;

use clap::Parser;

fn main() {
    // Temporary files older than this are leftovers of a killed run.
    tracereplay::fsutil::mark_run_start();
    let parsed = cli::args::Cli::parse();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let code = match cli::run(&parsed, &mut out)
        .and_then(|c| out.flush().map(|()| c).map_err(Into::into))
    {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => cli::exit::OK,
        Err(e) => {
            let _ = out.flush();
            eprintln!("error: {e:#}");
            cli::exit::ERROR
        }
    };
    std::process::exit(code);
}

/// A reader that closed the pipe early (`| head`) is not an error.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
