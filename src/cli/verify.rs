//! `tracereplay verify`: check seals without judging.

use std::io::Write;

use crate::discover::discover;
use crate::eval::error_chain;
use crate::paths::display_path;
use crate::report::escape_controls;
use crate::trace::TraceFile;
use rayon::prelude::*;

use super::args::VerifyArgs;
use super::exit;

/// Runs `verify`; `Err` means exit 2.
pub(super) fn run(args: &VerifyArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let found = discover(&args.paths, &[])?;
    if found.trace_files.is_empty() && found.unreachable.is_empty() {
        anyhow::bail!("no trace files (`*.trace.ndjson.zst`, `*.trace.ndjson`) found to verify");
    }
    let limits = args.limits.limits();
    let mut lines: Vec<(String, bool, String)> = found
        .trace_files
        .par_iter()
        .map(|path| {
            let shown = display_path(path);
            let outcome = TraceFile::open(path, limits).and_then(|f| f.verify_seal(false));
            match outcome {
                Ok(seal) if seal.sealed => (shown, true, seal.content_hash),
                Ok(_) => (
                    shown,
                    false,
                    "not sealed; seal it with `tracereplay pack`".to_owned(),
                ),
                Err(e) => (shown, false, error_chain(&e)),
            }
        })
        .collect();
    // What could not be looked at may be a trace: never counted as intact.
    lines.extend((found.unreachable.iter()).map(|(p, why)| (display_path(p), false, why.clone())));
    lines.sort();
    let mut bad = 0;
    for (path, ok, detail) in &lines {
        let (path, detail) = (escape_controls(path), escape_controls(detail));
        if *ok {
            writeln!(out, "ok    {path}  {detail}")?;
        } else {
            bad += 1;
            writeln!(out, "FAIL  {path}  {detail}")?;
        }
    }
    writeln!(
        out,
        "\n{} traces: {} sealed and intact, {bad} failed",
        lines.len(),
        lines.len() - bad
    )?;
    Ok(if bad > 0 { exit::FAILURE } else { exit::OK })
}
