//! `tracereplay ingest`: foreign recordings in, sealed traces out under `DIR/<scenario>/`.

use std::collections::HashSet;
use std::io::Write;

use crate::baseline::encode_segment;
use crate::discover::display_path;
use crate::ingest::{Format, IngestOptions, ingest};
use crate::privacy::{KEY_ENV, PromptHasher, RAW_OPT_IN_ENV, raw_prompts_opted_in};
use anyhow::{Context, bail};

use super::args::{IngestArgs, IngestFormatArg};
use super::exit;

/// Runs `ingest`; `Err` means exit 2.
pub(super) fn run(args: &IngestArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let hasher = match (PromptHasher::from_env(), args.unkeyed) {
        (_, true) => PromptHasher::unkeyed(),
        (Some(h), false) => h,
        (None, false) => bail!(
            "`ingest` hashes prompts with a key: set `{KEY_ENV}` (make one with `tracereplay key new`), or pass `--unkeyed` for unkeyed hashes"
        ),
    };
    for input in &args.inputs {
        if !input.is_file() {
            bail!("`{input}` does not exist or is not a file");
        }
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create `{}`", args.out))?;
    // Every trace written stays inside `-o DIR`, never through a symlink under it.
    let confined = crate::fsutil::Confined::new(args.out.clone());
    let format = match args.from {
        IngestFormatArg::OpenclawScenario => Format::OpenclawScenario,
        IngestFormatArg::OpenaiMessages => Format::OpenaiMessages,
        IngestFormatArg::OtlpJson => Format::OtlpJson,
    };
    let raw_opt_in = raw_prompts_opted_in(args.dev_raw_prompts);
    if raw_opt_in {
        diag!(
            "note: raw prompt text goes to `*.prompts.ndjson` sidecars (developer opt-in via `--dev-raw-prompts` or `{RAW_OPT_IN_ENV}=1`); keep them out of version control"
        );
    }
    let mut written: HashSet<String> = HashSet::new();
    let mut rejected = 0;
    for input in &args.inputs {
        // With several inputs, each file's runs are told apart by the file's name.
        let case = args.case.clone().or_else(|| {
            (args.inputs.len() > 1).then(|| {
                let name = input.file_name().unwrap_or("run");
                name.split('.').next().unwrap_or(name).to_owned()
            })
        });
        let opts = IngestOptions {
            hasher: hasher.clone(),
            raw_opt_in,
            scenario: args.scenario.clone(),
            case,
        };
        let bytes = std::fs::read(input).with_context(|| format!("cannot read `{input}`"))?;
        let outcome = ingest(format, &bytes, &opts);
        for p in &outcome.problems {
            if p.rejected {
                rejected += 1;
            }
            diag!(
                "{}: `{input}`, {}: {}",
                if p.rejected { "error" } else { "warning" },
                p.position,
                p.message
            );
        }
        for run in outcome.runs {
            let dest = args
                .out
                .join(encode_segment(&run.scenario))
                .join(format!("{}.trace.ndjson.zst", encode_segment(&run.case)));
            if !written.insert(dest.to_string()) {
                rejected += 1;
                diag!(
                    "error: `{input}`: scenario `{}` case `{}` was already written in this run; give the inputs distinct `--case` names",
                    run.scenario,
                    run.case
                );
                continue;
            }
            run.trace
                .write_in(&confined, &dest)
                .with_context(|| format!("cannot write `{dest}`"))?;
            writeln!(
                out,
                "wrote {}  {}/{}  {}",
                display_path(&dest),
                run.scenario,
                run.case,
                run.trace.content_hash
            )?;
        }
    }
    Ok(if rejected > 0 {
        exit::FAILURE
    } else {
        exit::OK
    })
}
