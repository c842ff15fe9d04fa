//! `tracereplay ingest`: foreign recordings in, sealed traces out under `DIR/<scenario>/`.
//!
//! Per input it prints what it wrote (traces, events by kind), what was unchanged and what it
//! skipped, by reason. A run is never silently lost or replaced: a run the importer refuses,
//! a name two runs share, or a trace that exists with different content (without `--force`)
//! makes the exit code 1; identical content is left as it is, so ingesting again is a no-op.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;

use camino::{Utf8Path, Utf8PathBuf};

use tracereplay::baseline::encode_trace_segment;
use tracereplay::ingest::{Format, IngestOptions, IngestedRun, detect, ingest};
use tracereplay::paths::display_path;
use tracereplay::privacy::{KEY_ENV, PromptHasher, RAW_OPT_IN_ENV, raw_prompts_opted_in};
use tracereplay::trace::Limits;

use super::options::{AtDestination, at_destination, not_replaced};
use anyhow::{Context, bail};
use rayon::prelude::*;

use super::args::{IngestArgs, IngestFormatArg};
use super::exit;

fn format_of(arg: IngestFormatArg) -> Format {
    match arg {
        IngestFormatArg::OpenclawScenario => Format::OpenclawScenario,
        IngestFormatArg::OpenaiMessages => Format::OpenaiMessages,
        IngestFormatArg::OtlpJson => Format::OtlpJson,
        IngestFormatArg::OtelSpans => Format::OtelSpans,
    }
}

/// The file's name up to its first `.` (`runs.jsonl` → `runs`).
fn stem(path: &Utf8Path) -> String {
    let name = path.file_name().unwrap_or("run");
    name.split('.').next().unwrap_or(name).to_owned()
}

/// What happened to one input.
#[derive(Default)]
struct Tally {
    written: usize,
    unchanged: usize,
    failed: usize,
    events: BTreeMap<&'static str, usize>,
}

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
        if tracereplay::remote::is_remote(input.as_str()) {
            bail!(
                "`{input}`: `ingest` reads local files only (reading a collector's bucket is not built yet); copy the objects out first"
            );
        }
        if !input.is_file() {
            bail!("`{input}` does not exist or is not a file");
        }
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create `{}`", args.out))?;
    let signer = super::sign::signer(&args.signing)?;
    // Every trace written stays inside `-o DIR`, never through a symlink under it.
    let confined = tracereplay::fsutil::Confined::new(args.out.clone());
    let raw_opt_in = raw_prompts_opted_in(args.dev_raw_prompts);
    if raw_opt_in {
        diag!(
            "note: raw prompt text goes to `*.prompts.ndjson` sidecars (developer opt-in via `--dev-raw-prompts` or `{RAW_OPT_IN_ENV}=1`); keep them out of version control"
        );
    }
    // Traces written by this run: destination → the input that wrote it.
    let mut written: HashMap<Utf8PathBuf, Utf8PathBuf> = HashMap::new();
    // Files this run wrote, made durable at its end.
    let mut durable: Vec<Utf8PathBuf> = Vec::new();
    let mut failed = 0;
    for input in &args.inputs {
        let bytes = std::fs::read(input).with_context(|| format!("cannot read `{input}`"))?;
        let format = match args.from {
            Some(f) => format_of(f),
            None => match detect(&bytes) {
                Ok(f) => {
                    diag!("`{input}`: read as {}", f.name());
                    f
                }
                Err(e) => {
                    diag!("error: `{input}`: {e}");
                    failed += 1;
                    continue;
                }
            },
        };
        let opts = IngestOptions {
            hasher: hasher.clone(),
            raw_opt_in,
            scenario: args.scenario.clone(),
            case: args.case.clone(),
            name: args.name.clone(),
            file_stem: Some(stem(input)),
            allow_empty: args.allow_empty,
        };
        let outcome = ingest(format, &bytes, &opts);
        let mut tally = Tally::default();
        for p in &outcome.problems {
            if p.rejected {
                tally.failed += 1;
            }
            diag!(
                "{}: `{input}`, {}: {}",
                if p.rejected { "error" } else { "warning" },
                p.position,
                p.message
            );
        }
        if outcome.runs.is_empty() && outcome.problems.is_empty() {
            diag!("error: `{input}`: no run found");
            tally.failed += 1;
        }
        // Names are claimed in order; an input any of whose runs cannot be written as named
        // (its name taken by an earlier run of this ingest, or a different trace on disk
        // without `--force`) writes nothing, so fixing the names and ingesting again is safe.
        let mut claimed = Vec::new();
        let mut refusals = Vec::new();
        let mut mine: HashMap<Utf8PathBuf, &IngestedRun> = HashMap::new();
        for run in &outcome.runs {
            let dest = destination(args, run);
            if let Some(by) = written.get(&dest) {
                refusals.push(format!(
                    "scenario `{}` case `{}` was already written by `{by}` in this run (`{}`)",
                    run.scenario,
                    run.case,
                    display_path(&dest)
                ));
            } else if let Some(first) = mine.get(&dest) {
                refusals.push(format!(
                    "scenario `{}` case `{}` names two of its runs (`{}`; the first is {}/{})",
                    run.scenario,
                    run.case,
                    display_path(&dest),
                    first.scenario,
                    first.case
                ));
            } else {
                mine.insert(dest.clone(), run);
                claimed.push((run, dest));
            }
        }
        let on_disk: Vec<AtDestination> = claimed
            .par_iter()
            .map(|(run, dest)| at_destination(dest, &run.trace.content_hash, Limits::default()))
            .collect();
        for ((run, dest), there) in claimed.iter().zip(&on_disk) {
            if let (AtDestination::Different(h), false) = (there, args.force) {
                refusals.push(not_replaced(dest, h.as_deref(), &run.trace.content_hash));
            }
        }
        if !refusals.is_empty() {
            for r in &refusals {
                diag!("error: `{input}`: {r}");
            }
            diag!(
                "error: `{input}`: nothing of it was written ({} of its {} run(s) could not be written as named); name the runs apart with `--name` or `--case`, then ingest it again",
                refusals.len(),
                outcome.runs.len()
            );
            tally.failed += refusals.len();
            summarise(input, format, &tally, &outcome.skipped, out)?;
            failed += tally.failed;
            continue;
        }
        for (_, dest) in &claimed {
            written.insert(dest.clone(), input.to_owned());
        }
        let stored: Vec<anyhow::Result<Stored>> = claimed
            .par_iter()
            .zip(on_disk)
            .map(|((run, dest), there)| {
                let (stored, bytes) = match there {
                    AtDestination::Same => (Stored::Unchanged, None),
                    _ => (Stored::Written, Some(store(run, dest, &confined)?)),
                };
                // What is sealed is signed, whether written now or before.
                if let Some(key) = &signer {
                    sign_stored(key, run, dest, bytes, &args.out)?;
                }
                Ok(stored)
            })
            .collect();
        for ((run, dest), result) in claimed.iter().zip(stored) {
            let result = result?;
            if signer.is_some() {
                durable.push(tracereplay::sign::signature_path(dest));
            }
            if matches!(result, Stored::Written) {
                durable.push(dest.clone());
                if run.trace.sidecar.is_some() {
                    durable.push(tracereplay::trace::sidecar_path(dest));
                }
            }
            report(run, dest, result, &mut tally, out)?;
        }
        if args.emit_scenarios {
            tally.failed += emit_scenarios(format, &bytes, input, args, &opts, &confined, out)?;
        }
        summarise(input, format, &tally, &outcome.skipped, out)?;
        failed += tally.failed;
    }
    // Traces were written without a sync each: made durable here, together, and only them.
    tracereplay::fsutil::sync_written(&durable, &args.out)
        .with_context(|| format!("cannot sync what was written under `{}`", args.out))?;
    Ok(if failed > 0 { exit::FAILURE } else { exit::OK })
}

/// Where a run's trace goes: `DIR/<scenario>/<case>.trace.ndjson.zst`, or for a trial of a
/// case `DIR/<scenario>/<case>/<trial>.trace.ndjson.zst`.
fn destination(args: &IngestArgs, run: &IngestedRun) -> Utf8PathBuf {
    let dir = args.out.join(encode_trace_segment(&run.scenario));
    match &run.trial {
        None => dir.join(format!(
            "{}.trace.ndjson.zst",
            encode_trace_segment(&run.case)
        )),
        Some(t) => (dir.join(encode_trace_segment(&run.case)))
            .join(format!("{}.trace.ndjson.zst", encode_trace_segment(t))),
    }
}

/// What became of one run's trace.
enum Stored {
    Written,
    /// The same content was there already.
    Unchanged,
}

/// Writes one run's trace and its sidecar (not synced: the run syncs what it wrote at its end);
/// the trace's stored bytes.
fn store(
    run: &IngestedRun,
    dest: &Utf8Path,
    confined: &tracereplay::fsutil::Confined,
) -> anyhow::Result<Vec<u8>> {
    let bytes = (run.trace.compress())
        .and_then(|bytes| confined.write(dest, &bytes, false).map(|()| bytes))
        .with_context(|| format!("cannot write `{dest}`"))?;
    if let Some(sidecar) = &run.trace.sidecar {
        let side = tracereplay::trace::sidecar_path(dest);
        (confined.write(&side, sidecar, false))
            .with_context(|| format!("cannot write `{side}`"))?;
    }
    Ok(bytes)
}

/// Signs the trace of `run` at `dest` with what the run already says of it (not synced: the run
/// syncs what it wrote at its end). `stored` are the bytes just written; a trace that was there
/// already is read.
fn sign_stored(
    key: &tracereplay::sign::keys::SigningKey,
    run: &IngestedRun,
    dest: &Utf8Path,
    stored: Option<Vec<u8>>,
    root: &Utf8Path,
) -> anyhow::Result<()> {
    let stored = match stored {
        Some(bytes) => bytes,
        None => std::fs::read(dest).with_context(|| format!("cannot read `{dest}` to sign it"))?,
    };
    let file = dest.file_name().unwrap_or_default();
    let claims = tracereplay::sign::Claims::new(
        &run.trace.content_hash,
        &run.scenario,
        &run.case,
        run.trial.as_deref(),
        file,
    );
    tracereplay::sign::write_signature(key, root, (dest, &stored), &claims, false)
        .map_err(|e| anyhow::anyhow!("cannot sign `{dest}`: {e}"))?;
    Ok(())
}

/// Reports one run's outcome, in input order.
fn report(
    run: &IngestedRun,
    dest: &Utf8Path,
    stored: Stored,
    tally: &mut Tally,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let shown = display_path(dest);
    let (scenario, case, hash) = (&run.scenario, &run.case, &run.trace.content_hash);
    match stored {
        Stored::Written => {
            tally.written += 1;
            for (k, n) in &run.events {
                *tally.events.entry(k).or_default() += n;
            }
            writeln!(out, "wrote {shown}  {scenario}/{case}  {hash}")?;
        }
        Stored::Unchanged => {
            tally.unchanged += 1;
            writeln!(out, "unchanged {shown}  {scenario}/{case}  {hash}")?;
        }
    }
    Ok(())
}

/// One line per input: what was written, unchanged and skipped.
fn summarise(
    input: &Utf8Path,
    format: Format,
    tally: &Tally,
    skipped: &BTreeMap<String, usize>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let events: Vec<String> = (tally.events.iter())
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    let mut line = format!(
        "`{input}` ({}): {} trace(s) written, {} unchanged, {} refused",
        format.name(),
        tally.written,
        tally.unchanged,
        tally.failed
    );
    if !events.is_empty() {
        line.push_str(&format!("; events written: {}", events.join(", ")));
    }
    // Span kinds not mapped, all of them; attributes ignored, the most frequent six.
    let (mut attrs, kinds): (Vec<_>, Vec<_>) =
        skipped.iter().partition(|(k, _)| k.ends_with("(ignored)"));
    let mut listed: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
    attrs.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    listed.extend(attrs.iter().take(6).map(|(k, n)| format!("{n}× {k}")));
    if attrs.len() > 6 {
        listed.push(format!("{} other attributes (ignored)", attrs.len() - 6));
    }
    if !listed.is_empty() {
        line.push_str(&format!("; skipped: {}", listed.join(", ")));
    }
    writeln!(out, "{line}")?;
    Ok(())
}

/// `--emit-scenarios`: one scenario file per task, beside the traces; returns the number of
/// scenario files refused.
fn emit_scenarios(
    format: Format,
    bytes: &[u8],
    input: &Utf8Path,
    args: &IngestArgs,
    opts: &IngestOptions,
    confined: &tracereplay::fsutil::Confined,
    out: &mut dyn Write,
) -> anyhow::Result<usize> {
    if format != Format::OpenaiMessages {
        diag!(
            "warning: `{input}`: `--emit-scenarios` reads tau-bench and tau2-bench results; this input has no ground truth to emit"
        );
        return Ok(0);
    }
    let mut refused = 0;
    let emitted = match tracereplay::ingest::ground_truth::scenarios(bytes, opts) {
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
    for (id, text) in emitted {
        let dest = args
            .out
            .join(encode_trace_segment(&id))
            .join(format!("{}.scenario.json", encode_trace_segment(&id)));
        let shown = display_path(&dest);
        // Read as any input is read: a regular file, within a bound (a symlink to `/dev/zero`
        // or a FIFO in the scenario's place is refused, never read).
        let limit = tracereplay::scenario::MAX_SCENARIO_BYTES;
        match tracereplay::fsutil::read_regular(&dest, limit, "existing scenario") {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound && !args.force => {
                diag!(
                    "error: `{input}`: `{shown}` is there and cannot be read ({e}); not replaced — pass `--force` to replace it"
                );
                refused += 1;
                continue;
            }
            Ok(old) if old == text.as_bytes() => {
                writeln!(out, "unchanged {shown}  scenario {id}")?;
                continue;
            }
            Ok(_) if !args.force => {
                diag!(
                    "error: `{input}`: `{shown}` holds a different scenario; not replaced (a reviewed scenario is not overwritten) — pass `--force` to replace it"
                );
                refused += 1;
                continue;
            }
            _ => {}
        }
        confined
            .write(&dest, text.as_bytes(), true)
            .with_context(|| format!("cannot write `{dest}`"))?;
        writeln!(out, "wrote {shown}  scenario {id}")?;
    }
    Ok(refused)
}
