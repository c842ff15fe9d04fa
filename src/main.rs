//! The `tracereplay` binary: the command layer ([`cli`]: flags, rendering, exit codes) over the
//! library's public API, which it reaches only through `tracereplay::…` like any other user.

mod cli;

/// mimalloc: faster than the system allocator for tens of thousands of small result rows, and it
/// returns memory to the system more readily (lower peak RSS on large suites).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // `expr` oracles run their jq programs in a child process of this same binary, so that a
    // program that recurses too deep or never ends cannot take the run down with it.
    if std::env::args_os().nth(1).as_deref()
        == Some(std::ffi::OsStr::new(
            tracereplay_core::oracle::expr::WORKER_ARG,
        ))
    {
        std::process::exit(tracereplay_core::oracle::expr::worker_main());
    }
    if let Ok(exe) = std::env::current_exe() {
        tracereplay_core::oracle::expr::use_worker(exe);
    }
    std::process::exit(cli::main());
}
