//! `tracereplay lint`: privacy and secret lint over traces and scenarios.

use std::io::Write;

use camino::Utf8Path;
use rayon::prelude::*;
use tracereplay::discover::{discover, display_path};
use tracereplay::privacy::lint::{
    Finding, read_allow_file, scan_scenarios_and_sidecars, scan_secrets,
};
use tracereplay::report::escape_controls;
use tracereplay::trace::{TraceError, TraceFile, parse_trace};

use super::args::{FormatArg, LintArgs};
use super::check::ALLOW_FILE;
use super::exit;

/// Runs `lint`; `Err` means exit 2.
pub fn run(args: &LintArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let found = discover(&args.paths, &args.scenario_dirs)?;
    if found.trace_files.is_empty()
        && found.scenario_files.is_empty()
        && found.suite_files.is_empty()
        && found.sidecar_files.is_empty()
    {
        anyhow::bail!("nothing to lint under the given paths");
    }
    let waived = read_allow_file(Utf8Path::new(ALLOW_FILE));
    let mode = args.secrets.mode();
    let limits = args.limits.limits();
    let mut findings: Vec<Finding> = found
        .trace_files
        .par_iter()
        .flat_map_iter(|path| {
            let shown = display_path(path);
            let Ok(file) = TraceFile::open(path, limits) else {
                return Vec::new();
            };
            let mut f = scan_secrets(&shown, &file.bytes, mode, &waived);
            // A prompt object carrying `text` is raw prompt text inside the trace: always fails.
            if let Ok(seal) = file.verify_seal(false) {
                if let Err(TraceError::Privacy { line, detail, .. }) =
                    parse_trace(&file, &seal, limits)
                {
                    f.push(Finding {
                        file: shown.clone(),
                        line: Some(line),
                        kind: "raw-prompt".into(),
                        fingerprint: None,
                        prefix: None,
                        message: detail,
                        fails: true,
                    });
                }
            }
            f
        })
        .collect();
    let scenario_bytes: Vec<(&camino::Utf8PathBuf, Vec<u8>)> = found
        .scenario_files
        .iter()
        .chain(&found.suite_files)
        .map(|f| (f, std::fs::read(f).unwrap_or_default()))
        .collect();
    let sources: Vec<(&Utf8Path, &[u8])> = scenario_bytes
        .iter()
        .map(|(p, b)| (p.as_path(), b.as_slice()))
        .collect();
    findings.extend(scan_scenarios_and_sidecars(
        &sources,
        &found.sidecar_files,
        mode,
        &waived,
        args.allow_raw_prompts,
    ));
    findings.sort();
    match args.format {
        FormatArg::Json => {
            serde_json::to_writer_pretty(&mut *out, &findings)?;
            writeln!(out)?;
        }
        FormatArg::Human => {
            for f in &findings {
                let level = if f.fails { "error  " } else { "warning" };
                let (at, message) = (f.located(), &f.message);
                let (at, message) = (escape_controls(&at), escape_controls(message));
                writeln!(out, "{level}  {at}\n      {message}")?;
            }
            writeln!(
                out,
                "{} finding(s), {} failing",
                findings.len(),
                findings.iter().filter(|f| f.fails).count()
            )?;
        }
    }
    Ok(if findings.iter().any(|f| f.fails) {
        exit::FAILURE
    } else {
        exit::OK
    })
}
