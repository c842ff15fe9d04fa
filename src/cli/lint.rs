//! `tracereplay lint`: privacy and secret lint over traces and scenarios.

use std::io::Write;

use camino::Utf8Path;
use rayon::prelude::*;
use tracereplay::report::{ExportContext, Format, escape_controls};
use tracereplay::trace::{Seal, TraceError, parse_trace_with};
use tracereplay_core::eval::error_chain;
use tracereplay_trace::paths::display_path;
use tracereplay_trace::privacy::lint::{
    Finding, LintReport, scan_scenarios_and_sidecars, scan_secrets,
};

use super::args::LintArgs;
use super::exit;

/// Runs `lint`; `Err` means exit 2.
pub(super) fn run(
    args: &LintArgs,
    settings: &super::settings::Settings,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    let found = tracereplay_core::discover::find(
        &settings.paths(),
        &settings.scenarios(),
        &Default::default(),
    )?;
    let prices = settings.prices()?;
    let remote = found.remote.as_deref();
    if found.trace_files.is_empty()
        && found.scenario_files.is_empty()
        && found.suite_files.is_empty()
        && found.sidecar_files.is_empty()
        && found.unreachable.is_empty()
    {
        anyhow::bail!("nothing to lint under the given paths");
    }
    let waived = super::options::waived();
    let mode = args.secrets.mode();
    let limits = args.limits.limits();
    let mut findings: Vec<Finding> = found
        .trace_files
        .par_iter()
        .flat_map_iter(|path| {
            let mut found = lint_trace(remote, path, limits, mode, &waived, args.allow_raw_prompts);
            if args.behaviour || prices.is_some() {
                found.extend(parsed_findings(
                    remote,
                    path,
                    limits,
                    args.allow_raw_prompts,
                    args.behaviour,
                    prices.as_deref(),
                ));
            }
            found
        })
        .collect();
    // What discovery could not look at could hold anything.
    findings.extend(found.unreachable.iter().map(|(p, why)| Finding {
        file: display_path(p),
        line: None,
        kind: "unreadable".into(),
        fingerprint: None,
        prefix: None,
        message: format!(
            "cannot be read, so it cannot be shown to be free of raw prompts and secrets: {why}"
        ),
        fails: true,
    }));
    let scenario_bytes: Vec<(&camino::Utf8PathBuf, Vec<u8>)> = found
        .scenario_files
        .iter()
        .chain(&found.suite_files)
        .map(|f| {
            let limit = tracereplay_core::scenario::MAX_SCENARIO_BYTES;
            (
                f,
                tracereplay_trace::fsutil::read_regular(f, limit, "scenario file")
                    .unwrap_or_default(),
            )
        })
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
    let lint = LintReport(findings);
    Format::from(args.format).export(&lint, &ExportContext::default(), out)?;
    Ok(if lint.failing() > 0 {
        exit::FAILURE
    } else {
        exit::OK
    })
}

/// The warnings of one parsed trace file: what the default behaviour oracles find (with
/// `behaviour`), and each model whose usage the trace records without a cost that the price
/// table cannot price (with `prices`), once per model. A trace that does not verify or parse
/// has none here (the privacy lint reports it).
fn parsed_findings(
    remote: Option<&tracereplay_core::remote::Remote>,
    path: &camino::Utf8PathBuf,
    limits: tracereplay::trace::Limits,
    allow_raw_prompts: bool,
    behaviour: bool,
    prices: Option<&tracereplay_core::prices::PriceTable>,
) -> Vec<Finding> {
    let opts = tracereplay_core::eval::JudgeOptions {
        limits,
        require_sealed: false,
        allow_raw_prompts,
        prices: None,
    };
    let Ok(file) = tracereplay_core::remote::open(remote, path, limits) else {
        return Vec::new();
    };
    let Ok((_, parsed)) = tracereplay_core::eval::pipeline::verify_and_parse(&file, &opts) else {
        return Vec::new();
    };
    let shown = display_path(path);
    let warning = |kind: &str, message: String| Finding {
        file: shown.clone(),
        line: None,
        kind: kind.into(),
        fingerprint: None,
        prefix: None,
        message,
        fails: false,
    };
    let mut found = Vec::new();
    if behaviour {
        found.extend(
            (tracereplay_core::oracle::behaviour::lint(&parsed.trace).into_iter())
                .map(|(oracle, r)| warning(oracle, format!("{oracle}: {}", r.message))),
        );
    }
    if let Some(table) = prices {
        found.extend(
            table.unpriced(&parsed.trace).into_iter().map(|(model, line)| {
                let mut f = warning(
                    "unpriced-model",
                    format!(
                        "model `{}` records token usage but no cost, and the price table has no price for it: its cost is unknown to `max-cost` and `budget.cost`",
                        escape_controls(&model)
                    ),
                );
                f.line = Some(line);
                f
            }),
        );
    }
    found
}

/// The findings of one trace file. A trace that cannot be read (corrupt, truncated, over a size
/// limit, not a file) is a finding itself: it could hold anything, so it is never called clean.
fn lint_trace(
    remote: Option<&tracereplay_core::remote::Remote>,
    path: &camino::Utf8PathBuf,
    limits: tracereplay::trace::Limits,
    mode: tracereplay_trace::privacy::lint::SecretsMode,
    waived: &std::collections::HashSet<String>,
    allow_raw_prompts: bool,
) -> Vec<Finding> {
    let shown = display_path(path);
    let finding = |line, kind: &str, message: String| Finding {
        file: shown.clone(),
        line,
        kind: kind.into(),
        fingerprint: None,
        prefix: None,
        message,
        fails: true,
    };
    let file = match tracereplay_core::remote::open(remote, path, limits) {
        Ok(file) => file,
        Err(e) => {
            let message = format!(
                "cannot be read, so it cannot be shown to be free of raw prompts and secrets: {}",
                error_chain(&e)
            );
            return vec![finding(e.line(), "unreadable", message)];
        }
    };
    let mut found = scan_secrets(&shown, &file.bytes, mode, waived);
    // A broken seal does not stop the privacy check: the body is read up to the last line
    // whatever the footer says.
    let seal = file.verify_seal(false).unwrap_or_else(|_| {
        let trimmed = file.bytes.strip_suffix(b"\n").unwrap_or(&file.bytes);
        let last = memchr::memrchr(b'\n', trimmed).map_or(0, |p| p + 1);
        let body_len = if tracereplay::trace::is_footer_line(&trimmed[last..]) {
            last
        } else {
            file.bytes.len()
        };
        Seal {
            sealed: false,
            content_hash: String::new(),
            body_len,
            event_lines: 0,
        }
    });
    match parse_trace_with(&file, &seal, limits, allow_raw_prompts).map_err(|e| (e.advice(), e)) {
        Err((advice, TraceError::Privacy { line, detail, .. })) => {
            found.push(finding(
                Some(line),
                "raw-prompt",
                format!("{detail}{advice}"),
            ));
        }
        // Parsing stops at the first problem, so the lines after it were never looked at.
        Err((_, e)) => {
            let message = format!(
                "cannot be read whole, so the rest of it cannot be shown to be free of raw prompts: {}",
                error_chain(&e)
            );
            found.push(finding(e.line(), "unreadable", message));
        }
        Ok(_) => {}
    }
    found
}
