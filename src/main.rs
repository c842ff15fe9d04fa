//! The `tracereplay` binary: the command layer lives in the library (`tracereplay::cli`, the
//! default `cli` feature); this file only picks the allocator and exits with its code.

/// mimalloc: faster than the system allocator for tens of thousands of small result rows, and it
/// returns memory to the system more readily (lower peak RSS on large suites).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(tracereplay::cli::main());
}
