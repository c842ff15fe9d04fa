//! `ingest --emit-scenarios`: the scenario files of a benchmark's tasks, written beside their
//! traces.

use std::io::Write;

use anyhow::Context;
use camino::{Utf8Path, Utf8PathBuf};
use rayon::prelude::*;
use tracereplay_core::baseline::encode_trace_segment;
use tracereplay_core::ingest::{IngestOptions, InputFormat};
use tracereplay_trace::paths::display_path;

use super::args::IngestArgs;

/// What becomes of one emitted scenario file.
enum Emit {
    Written,
    Unchanged,
    Refused(String),
}

/// An input's ground truth for `--emit-scenarios`: each task's id and scenario text, or why
/// they cannot be read; `None` for a format that holds none.
pub(super) type GroundTruth = Option<Result<Vec<(String, String)>, String>>;

/// The ground truth of `bytes`, read as `format`.
pub(super) fn ground_truth(format: InputFormat, bytes: &[u8], opts: &IngestOptions) -> GroundTruth {
    (format == InputFormat::OpenaiMessages)
        .then(|| tracereplay_core::ingest::ground_truth::scenarios(bytes, opts))
}

/// `--emit-scenarios`: one scenario file per task of `input`'s ground truth, beside the
/// traces; returns the number refused. Each file is compared with what stands at its name and
/// written in parallel, not synced: each written is added to `durable`, which the run syncs at
/// its end. What happened to each is said in the tasks' order, every file written included,
/// before the first write that failed ends the run.
pub(super) fn emit_scenarios(
    (input, truth): (&Utf8Path, GroundTruth),
    args: &IngestArgs,
    confined: &tracereplay_trace::fsutil::Confined,
    durable: &mut Vec<Utf8PathBuf>,
    out: &mut dyn Write,
) -> anyhow::Result<usize> {
    let Some(truth) = truth else {
        diag!(
            "warning: `{input}`: `--emit-scenarios` reads tau-bench and tau2-bench results; this input has no ground truth to emit"
        );
        return Ok(0);
    };
    let emitted = match truth {
        Ok(e) => e,
        Err(e) => {
            diag!("error: `{input}`: {e}");
            return Ok(1);
        }
    };
    if emitted.is_empty() {
        diag!(
            "warning: `{input}`: no benchmark task with expected actions found; no scenario emitted"
        );
    }
    let place = |(id, text): &(String, String)| -> (Utf8PathBuf, anyhow::Result<Emit>) {
        let segment = encode_trace_segment(id);
        let dest = (args.out.join(&segment)).join(format!("{segment}.scenario.json"));
        let shown = display_path(&dest);
        // Read as any input is read: a regular file, within a bound (a symlink to `/dev/zero`
        // or a FIFO in the scenario's place is refused, never read).
        let limit = tracereplay_core::scenario::MAX_SCENARIO_BYTES;
        let refused = match tracereplay_trace::fsutil::read_regular(
            &dest,
            limit,
            "existing scenario",
        ) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound && !args.force => Some(format!(
                "`{shown}` is there and cannot be read ({e}); not replaced — pass `--force` to replace it"
            )),
            Ok(old) if old == text.as_bytes() => return (dest, Ok(Emit::Unchanged)),
            Ok(_) if !args.force => Some(format!(
                "`{shown}` holds a different scenario; not replaced (a reviewed scenario is not overwritten) — pass `--force` to replace it"
            )),
            _ => None,
        };
        if let Some(why) = refused {
            return (dest, Ok(Emit::Refused(why)));
        }
        let written = (confined.write(&dest, text.as_bytes(), false))
            .with_context(|| format!("cannot write `{dest}`"));
        (dest, written.map(|()| Emit::Written))
    };
    let placed: Vec<(Utf8PathBuf, anyhow::Result<Emit>)> = emitted.par_iter().map(place).collect();
    let (mut refused, mut failed) = (0, None);
    for ((id, _), (dest, outcome)) in emitted.iter().zip(placed) {
        let shown = display_path(&dest);
        match outcome {
            Ok(Emit::Written) => {
                writeln!(out, "wrote {shown}  scenario {id}")?;
                durable.push(dest);
            }
            Ok(Emit::Unchanged) => writeln!(out, "unchanged {shown}  scenario {id}")?,
            Ok(Emit::Refused(why)) => {
                diag!("error: `{input}`: {why}");
                refused += 1;
            }
            Err(e) => {
                failed.get_or_insert(e);
            }
        }
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(refused),
    }
}
