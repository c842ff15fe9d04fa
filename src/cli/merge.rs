//! `tracereplay merge`: one report and one exit code from partitioned JSON reports.

use std::io::Write;

use anyhow::Context;
use tracereplay::report::{self, ExportContext, Format, Report};
use tracereplay_trace::fsutil::write_atomic_streaming;

use super::args::MergeArgs;
use super::exit;

/// The share key from `TRACEREPLAY_SHARE_KEY` (a CI secret), when it is set: the shares'
/// digests are keyed with it, and `merge` takes only shares keyed with it.
pub(super) fn share_key() -> Option<tracereplay_core::eval::ShareKey> {
    let value =
        std::env::var_os(tracereplay_core::eval::SHARE_KEY_ENV).filter(|v| !v.is_empty())?;
    Some(tracereplay_core::eval::ShareKey::from_material(
        value.as_encoded_bytes(),
    ))
}

/// The largest JSON report `merge` and `report --compare` read (a report of 20,000 traces is
/// about 48 MB).
const MAX_REPORT_BYTES: u64 = 4 << 30;

/// Reads a JSON report (`check --json`) through a buffer: it is parsed (and its rows encoded)
/// as it is read, never held whole.
pub(super) fn read_report(path: &camino::Utf8Path) -> anyhow::Result<Report> {
    let (file, _) = tracereplay_trace::fsutil::open_regular(path, MAX_REPORT_BYTES, "JSON report")
        .with_context(|| format!("cannot read `{path}`"))?;
    serde_json::from_reader(std::io::BufReader::with_capacity(1 << 16, file)).map_err(|e| {
        let what = if e.is_io() {
            format!("cannot read `{path}`")
        } else {
            format!("`{path}` is not a tracereplay JSON report")
        };
        anyhow::Error::new(e).context(what)
    })
}

/// Runs `merge`; `Err` means exit 2.
pub(super) fn run(
    args: &MergeArgs,
    settings: &super::settings::Settings,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    let mut reports = Vec::new();
    let (urls, local): (Vec<&camino::Utf8PathBuf>, Vec<&camino::Utf8PathBuf>) =
        (args.reports.iter()).partition(|p| tracereplay_core::remote::is_remote(p.as_str()));
    for path in local {
        reports.push((path.to_string(), read_report(path)?));
    }
    // Shares kept in a bucket: each URL names a report, or a prefix holding the `*.json` ones.
    if !urls.is_empty() {
        let urls: Vec<camino::Utf8PathBuf> = urls.into_iter().cloned().collect();
        for (url, bytes) in tracereplay_core::remote::read_reports(&urls, &Default::default())? {
            let report = serde_json::from_slice(&bytes)
                .with_context(|| format!("`{url}` is not a tracereplay JSON report"))?;
            reports.push((url.to_string(), report));
        }
    }
    let merged = tracereplay_core::eval::merge_with(reports, share_key().as_ref())?;
    let html = report::html::HtmlContext {
        exit_code: if merged.is_failure() {
            exit::FAILURE
        } else {
            exit::OK
        },
        flags: vec![format!("merged from {} report(s)", args.reports.len())],
        generated: Some(report::html::generated_now()),
        limits: tracereplay::trace::Limits::default(),
        waived: super::options::waived(),
        raw_prompts: false,
    };
    let ctx = ExportContext {
        html: Some(&html),
        ..ExportContext::default()
    };
    // The files it also writes, each through its format's exporter.
    for (format, path) in [(Format::Json, &args.json), (Format::Html, &args.html)] {
        if let Some(path) = path {
            write_atomic_streaming(path, &mut |out| format.export(&merged, &ctx, out))
                .with_context(|| format!("cannot write `{path}`"))?;
        }
    }
    super::check::render(
        args.format,
        &merged,
        None,
        (false, settings.use_color()),
        &ctx,
        out,
    )?;
    Ok(if merged.is_failure() {
        exit::FAILURE
    } else {
        exit::OK
    })
}
