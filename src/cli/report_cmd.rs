//! `tracereplay report --compare OLD.json NEW.json`: two runs side by side.

use std::io::Write;

use anyhow::{Context, bail};
use tracereplay::report::{self, ExportContext, Format, SCHEMA_VERSION, compare};
use tracereplay_trace::fsutil::write_atomic_streaming;

use super::args::ReportArgs;
use super::exit;

/// Runs `report`; `Err` means exit 2.
pub(super) fn run(args: &ReportArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let [old_path, new_path] = args.compare.as_slice() else {
        bail!("`--compare` takes two JSON reports, OLD and NEW");
    };
    let read = |path: &camino::Utf8Path| -> anyhow::Result<report::Report> {
        let r = super::merge::read_report(path)?;
        if r.schema_version != SCHEMA_VERSION {
            bail!(
                "`{path}` is a report of schema version {}; this tracereplay reads version {SCHEMA_VERSION}",
                r.schema_version
            );
        }
        Ok(r)
    };
    let (old, new) = (read(old_path)?, read(new_path)?);
    let c = compare::compare_runs(old_path.as_str(), &old, new_path.as_str(), &new);
    let ctx = ExportContext::default();
    for (format, path) in [(Format::Json, &args.json), (Format::Html, &args.html)] {
        if let Some(path) = path {
            write_atomic_streaming(path, &mut |w| format.export(&c, &ctx, w))
                .with_context(|| format!("cannot write `{path}`"))?;
        }
    }
    Format::Human.export(&c, &ctx, out)?;
    Ok(match c.failure(args.allow_removed) {
        Some(why) => {
            writeln!(out, "fails: {why}")?;
            exit::FAILURE
        }
        None => exit::OK,
    })
}
