//! `tracereplay export --to atif`: a trace as another format's document.

use std::io::Write;

use anyhow::Context;

use super::args::ExportArgs;
use super::exit;

/// Runs `export`; `Err` means exit 2.
pub(super) fn run(args: &ExportArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let limits = args.limits.limits();
    let file = tracereplay::trace::TraceFile::open(&args.trace, limits)
        .with_context(|| format!("`{}`", args.trace))?;
    let seal = file
        .verify_seal(false)
        .with_context(|| format!("`{}`", args.trace))?;
    let parsed = tracereplay::trace::parse_trace(&file, &seal, limits)
        .with_context(|| format!("`{}`", args.trace))?;
    let (doc, dropped) = tracereplay_core::ingest::atif_export::export(&parsed.trace);
    let mut text = serde_json::to_string_pretty(&doc)?;
    text.push('\n');
    match &args.out {
        Some(path) => tracereplay_trace::fsutil::write_atomic(path, text.as_bytes())
            .with_context(|| format!("cannot write `{path}`"))?,
        None => out.write_all(text.as_bytes())?,
    }
    if !dropped.is_empty() {
        let list: Vec<String> = dropped.iter().map(|(k, n)| format!("{n} {k}")).collect();
        diag!("note: no place in ATIF, dropped: {}", list.join(", "));
    }
    Ok(exit::OK)
}
