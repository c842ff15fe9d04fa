//! `tracereplay collect`: the OTLP/HTTP receiver.

use std::io::Write;

use tracereplay::internal::privacy::raw_prompts_opted_in;
use tracereplay::internal::replay::collect;
use tracereplay::report::escape_controls;

use super::args::CollectArgs;
use super::exit;

/// Runs `collect` until SIGINT, SIGTERM or SIGHUP; `Err` means exit 2; 1 when a run could not
/// be written.
pub(super) fn run(args: &CollectArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    super::options::check_listen(
        args.server.listen,
        args.server.allow_remote,
        "can write traces",
    )?;
    let hasher = super::options::prompt_hasher("collect", args.prompts.unkeyed)?;
    std::fs::create_dir_all(&args.out)
        .map_err(|e| anyhow::anyhow!("cannot create `{}`: {e}", args.out))?;
    let options = collect::CollectOptions {
        out: args.out.clone(),
        ingest: tracereplay::internal::ingest::IngestOptions {
            hasher,
            raw_opt_in: raw_prompts_opted_in(args.prompts.dev_raw_prompts),
            scenario: args.scenario.clone(),
            case: None,
            name: None,
            file_stem: None,
            allow_empty: false,
        },
        idle: args.idle,
        settle: args.settle,
        max_open_runs: args.max_open_runs.max(1),
        max_buffered: args.max_buffered_mb.max(1) << 20,
        body_limit: 64 << 20,
        limits: args.limits.limits(),
    };
    let receiving = collect::spawn(args.server.listen, options)?;
    writeln!(out, "listening on http://{}", receiving.addr)?;
    out.flush()?;
    let mut failed = 0usize;
    receiving.wait(|c| match &c.outcome {
        Ok(path) => {
            let _ = writeln!(
                out,
                "collected {} -> {}",
                escape_controls(&c.run),
                escape_controls(path)
            );
            let _ = out.flush();
        }
        Err(why) => {
            failed += 1;
            diag!(
                "error: {}: {}",
                escape_controls(&c.run),
                escape_controls(why)
            );
        }
    });
    Ok(if failed > 0 { exit::FAILURE } else { exit::OK })
}
