//! `tracereplay ingest`: foreign recordings in, sealed traces out under `DIR/<scenario>/`.
//!
//! Per input it prints what it wrote (traces, events by kind), what was unchanged and what it
//! skipped, by reason. A run is never silently lost or replaced: a run the importer refuses,
//! a name two runs share, or a trace that exists with different content (without `--force`)
//! makes the exit code 1; identical content is left as it is, so ingesting again is a no-op.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use tracereplay::report::escape_controls;

use camino::{Utf8Path, Utf8PathBuf};

use tracereplay::trace::{Checked, Existing, Limits, PlaceError, Placed, Placement, RunName};
use tracereplay_core::ingest::collector::OtlpLogs;
use tracereplay_core::ingest::{
    IngestOptions, IngestOutcome, IngestedRun, InputFormat, detect, ingest_with_logs,
};
use tracereplay_trace::paths::display_path;
use tracereplay_trace::privacy::{RAW_OPT_IN_ENV, raw_prompts_opted_in};

use anyhow::{Context, bail};
use rayon::prelude::*;

use super::args::{IngestArgs, IngestFormatArg};
use super::exit;

fn format_of(arg: IngestFormatArg) -> InputFormat {
    match arg {
        IngestFormatArg::OpenclawScenario => InputFormat::OpenclawScenario,
        IngestFormatArg::OpenaiMessages => InputFormat::OpenaiMessages,
        IngestFormatArg::OtlpJson => InputFormat::OtlpJson,
        IngestFormatArg::OtlpProto => InputFormat::OtlpProto,
        IngestFormatArg::OtelSpans => InputFormat::OtelSpans,
        IngestFormatArg::Atif => InputFormat::Atif,
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

/// What one `ingest` writes to, and what it wrote so far.
pub(super) struct Ingesting<'a> {
    pub(super) args: &'a IngestArgs,
    confined: tracereplay_trace::fsutil::Confined,
    signer: Option<std::sync::Arc<tracereplay_core::sign::keys::SigningKey>>,
    /// Traces written by this run: destination → the input that wrote it.
    written: HashMap<Utf8PathBuf, String>,
    /// Files this run wrote, made durable at its end.
    durable: Vec<Utf8PathBuf>,
    /// Whether the developer opted in to raw-prompt sidecars.
    raw_prompts: bool,
    /// Secret fingerprints `.tracereplay-allow` waives.
    waived: std::collections::HashSet<String>,
    pub(super) out: &'a mut dyn Write,
}

/// Runs `ingest`; `Err` means exit 2.
pub(super) fn run(args: &IngestArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let hasher = super::options::prompt_hasher("ingest", args.prompts.unkeyed)?;
    for input in &args.inputs {
        if !tracereplay_core::remote::is_remote(input.as_str()) && !input.is_file() {
            bail!("`{input}` does not exist or is not a file");
        }
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create `{}`", args.out))?;
    let raw_opt_in = raw_prompts_opted_in(args.prompts.dev_raw_prompts);
    if raw_opt_in {
        diag!(
            "note: raw prompt text goes to `*.prompts.ndjson` sidecars (developer opt-in via `--dev-raw-prompts` or `{RAW_OPT_IN_ENV}=1`); keep them out of version control"
        );
    }
    let mut session = Ingesting {
        args,
        // Every trace written stays inside `-o DIR`, never through a symlink under it.
        confined: tracereplay_trace::fsutil::Confined::new(args.out.clone()),
        signer: super::sign::signer(&args.signing)?,
        written: HashMap::new(),
        durable: Vec::new(),
        raw_prompts: raw_opt_in,
        waived: super::options::waived(),
        out,
    };
    let opts = IngestOptions {
        hasher,
        raw_opt_in,
        scenario: args.scenario.clone(),
        case: args.case.clone(),
        name: args.name.clone(),
        file_stem: None,
        allow_empty: args.allow_empty,
    };
    let (logs, inputs) = logs_first(args)?;
    let mut failed = 0;
    for input in inputs {
        failed += if tracereplay_core::remote::is_remote(input.as_str()) {
            super::ingest_bucket::ingest(&mut session, input.as_str(), &opts)?
        } else {
            ingest_file(&mut session, input, &opts, &logs)?
        };
    }
    // Traces were written without a sync each: made durable here, together, and only them.
    session.sync()?;
    Ok(if failed > 0 { exit::FAILURE } else { exit::OK })
}

/// Reads the local inputs that are OTLP logs exports (the content of inferences sent as log
/// records) before the others, whose spans they carry content for; returns their records and
/// the other inputs, in order.
fn logs_first(args: &IngestArgs) -> anyhow::Result<(OtlpLogs, Vec<&Utf8PathBuf>)> {
    use tracereplay_core::ingest::collector::{MAX_EXPORT_BYTES, unpack};
    let mut logs = OtlpLogs::default();
    let mut rest = Vec::new();
    for input in &args.inputs {
        let may_be_logs = match args.from {
            Some(f) => matches!(f, IngestFormatArg::OtlpJson | IngestFormatArg::OtlpProto),
            None => true,
        };
        if !may_be_logs || tracereplay_core::remote::is_remote(input.as_str()) {
            rest.push(input);
            continue;
        }
        let stored = std::fs::read(input).with_context(|| format!("cannot read `{input}`"))?;
        let read = unpack(input.as_str(), &stored, MAX_EXPORT_BYTES)
            .ok()
            .and_then(|bytes| OtlpLogs::read(&bytes));
        match read {
            Some(l) => {
                diag!(
                    "`{input}`: read as OTLP logs: {} record(s) of inference content for the spans of the other inputs, {} other record(s) not used",
                    l.records(),
                    l.others()
                );
                logs.join(&l);
            }
            None => rest.push(input),
        }
    }
    if rest.is_empty() && logs.records() + logs.others() > 0 {
        bail!(
            "only OTLP logs exports were given: their records carry content for spans; pass the trace export they belong to as well"
        );
    }
    Ok((logs, rest))
}

/// Ingests one local file, its spans given what `logs` carry; the number of its runs refused.
fn ingest_file(
    session: &mut Ingesting<'_>,
    input: &Utf8Path,
    opts: &IngestOptions,
    logs: &OtlpLogs,
) -> anyhow::Result<usize> {
    use tracereplay_core::ingest::collector::{ExportKind, MAX_EXPORT_BYTES, export_kind, unpack};
    let stored = std::fs::read(input).with_context(|| format!("cannot read `{input}`"))?;
    // A collector's `*.gz` export is unpacked first, and its `*.binpb` is protobuf.
    let bytes = match unpack(input.as_str(), &stored, MAX_EXPORT_BYTES) {
        Ok(bytes) => bytes,
        Err(e) => {
            diag!("error: `{input}`: {e}");
            return Ok(1);
        }
    };
    let format = match (session.args.from, export_kind(input.as_str())) {
        (Some(f), _) => format_of(f),
        (None, Some(ExportKind::Traces(InputFormat::OtlpProto))) => {
            diag!("`{input}`: read as otlp-proto (by its name)");
            InputFormat::OtlpProto
        }
        (None, _) => match detect(&bytes) {
            Ok(f) => {
                diag!("`{input}`: read as {}", f.name());
                f
            }
            Err(e) => {
                diag!("error: `{input}`: {e}");
                return Ok(1);
            }
        },
    };
    let opts = IngestOptions {
        file_stem: Some(stem(input)),
        ..opts.clone()
    };
    // `--emit-scenarios` reads the tasks' ground truth beside the runs, on the same threads.
    let emit = session.args.emit_scenarios;
    let (outcome, truth) = rayon::join(
        || ingest_with_logs(format, &bytes, &opts, logs),
        || emit.then(|| super::ingest_emit::ground_truth(format, &bytes, &opts)),
    );
    let written = session.write(input.as_str(), format.name(), &outcome, truth)?;
    Ok(written.failed)
}

/// What [`Ingesting::write`] did with one input's runs.
pub(super) struct Written {
    /// Runs refused (by the importer, or as named).
    pub(super) failed: usize,
    /// Whether its runs were refused as named, so that nothing of it was written.
    pub(super) refused: bool,
}

impl Ingesting<'_> {
    /// Writes the runs of one input's `outcome` (read as `format`) and reports them: nothing of
    /// the input when any of its runs cannot be written as named. `truth` is its tasks' ground
    /// truth, read for `--emit-scenarios`.
    pub(super) fn write(
        &mut self,
        input: &str,
        format: &str,
        outcome: &IngestOutcome,
        truth: Option<super::ingest_emit::GroundTruth>,
    ) -> anyhow::Result<Written> {
        let args = self.args;
        let mut tally = Tally::default();
        for p in &outcome.problems {
            if p.rejected {
                tally.failed += 1;
            }
            diag!(
                "{}: `{}`, {}: {}",
                if p.rejected { "error" } else { "warning" },
                escape_controls(input),
                escape_controls(&p.position),
                escape_controls(&p.message)
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
            if let Some(by) = self.written.get(&dest) {
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
        // What stands at each name, and the secret rule over what would be written: checked
        // for all of the input's runs before any is written.
        // Not synced: the run syncs what it wrote at its end.
        let how = Placement {
            dir: &self.confined,
            raw_prompts: self.raw_prompts,
            existing: Existing::KeepSame { force: args.force },
            durable: false,
            limits: Limits::default(),
            waived: &self.waived,
        };
        let checked: Vec<Result<Checked<'_>, PlaceError>> = claimed
            .par_iter()
            .map(|(run, dest)| {
                let name = RunName {
                    scenario: &run.scenario,
                    case: &run.case,
                    trial: run.trial.as_deref(),
                };
                run.trace.check(name, dest.clone(), &how)
            })
            .collect();
        let mut on_disk = Vec::with_capacity(checked.len());
        // Whether a run could not be written as named (rather than for a secret it holds).
        let mut named = !refusals.is_empty();
        for ((run, _), there) in claimed.iter().zip(checked) {
            match there {
                Ok(there) => on_disk.push(there),
                Err(e @ PlaceError::Different { .. }) => {
                    named = true;
                    refusals.push(e.to_string());
                }
                Err(e) => refusals.push(format!(
                    "scenario `{}` case `{}`: {e}",
                    run.scenario, run.case
                )),
            }
        }
        if !refusals.is_empty() {
            // Many runs refused alike are a few lines and a count, not a line each.
            for r in super::repeats::collapse(&refusals) {
                diag!(
                    "error: `{}`: {}",
                    escape_controls(input),
                    escape_controls(&r)
                );
            }
            let (why, fix) = if named {
                (
                    "could not be written as named",
                    "name the runs apart with `--name` or `--case`, then ingest it again",
                )
            } else {
                (
                    "would write a secret",
                    "remove each secret from the recording, or waive a false positive, then ingest it again",
                )
            };
            diag!(
                "error: `{input}`: nothing of it was written ({} of its {} run(s) {why}); {fix}",
                refusals.len(),
                outcome.runs.len()
            );
            tally.failed += refusals.len();
            summarise(input, format, &tally, &outcome.skipped, self.out)?;
            return Ok(Written {
                failed: tally.failed,
                refused: true,
            });
        }
        for (_, dest) in &claimed {
            self.written.insert(dest.clone(), input.to_owned());
        }
        let signer = &self.signer;
        let stored: Vec<anyhow::Result<Stored>> = claimed
            .par_iter()
            .zip(on_disk)
            .map(|((run, dest), checked)| {
                let (stored, bytes) = match checked.write()? {
                    Placed::Unchanged { .. } => (Stored::Unchanged, None),
                    Placed::Written { stored, .. } => (Stored::Written, Some(stored)),
                };
                // What is sealed is signed, whether written now or before.
                if let Some(key) = signer {
                    sign_stored(key, run, dest, bytes, &args.out)?;
                }
                Ok(stored)
            })
            .collect();
        for ((run, dest), result) in claimed.iter().zip(stored) {
            let result = result?;
            if self.signer.is_some() {
                self.durable
                    .push(tracereplay_core::sign::signature_path(dest));
            }
            if matches!(result, Stored::Written) {
                self.durable.push(dest.clone());
                if run.trace.sidecar.is_some() {
                    self.durable.push(tracereplay::trace::sidecar_path(dest));
                }
            }
            report(run, dest, result, &mut tally, args.quiet, self.out)?;
        }
        if let Some(truth) = truth {
            let input = Utf8Path::new(input);
            // Synced with the traces, at the run's end.
            let durable = &mut self.durable;
            tally.failed += super::ingest_emit::emit_scenarios(
                (input, truth),
                args,
                &self.confined,
                durable,
                self.out,
            )?;
        }
        summarise(input, format, &tally, &outcome.skipped, self.out)?;
        Ok(Written {
            failed: tally.failed,
            refused: false,
        })
    }

    /// Makes what this run wrote so far durable.
    pub(super) fn sync(&mut self) -> anyhow::Result<()> {
        let out = &self.args.out;
        tracereplay_trace::fsutil::sync_written(&self.durable, out)
            .with_context(|| format!("cannot sync what was written under `{out}`"))?;
        self.durable.clear();
        Ok(())
    }

    /// Where this run may write: inside `-o DIR`.
    pub(super) fn confined(&self) -> &tracereplay_trace::fsutil::Confined {
        &self.confined
    }
}

/// Where a run's trace goes: its [`RunName::path`] under `-o DIR`.
fn destination(args: &IngestArgs, run: &IngestedRun) -> Utf8PathBuf {
    let name = RunName {
        scenario: &run.scenario,
        case: &run.case,
        trial: run.trial.as_deref(),
    };
    args.out.join(name.path())
}

/// What became of one run's trace.
enum Stored {
    Written,
    /// The same content was there already.
    Unchanged,
}

/// Signs the trace of `run` at `dest` with what the run already says of it (not synced: the run
/// syncs what it wrote at its end). `stored` are the bytes just written; a trace that was there
/// already is read.
fn sign_stored(
    key: &tracereplay_core::sign::keys::SigningKey,
    run: &IngestedRun,
    dest: &Utf8Path,
    stored: Option<Vec<u8>>,
    root: &Utf8Path,
) -> anyhow::Result<()> {
    let stored = match stored {
        Some(bytes) => bytes,
        None => std::fs::read(dest).with_context(|| format!("cannot read `{dest}` to sign it"))?,
    };
    let claims = tracereplay_core::sign::Claims::new(
        &run.trace.content_hash,
        &run.scenario,
        &run.case,
        run.trial.as_deref(),
        &tracereplay_core::sign::relative_file(root, dest),
    );
    tracereplay_core::sign::write_signature(key, root, (dest, &stored), &claims, false)
        .map_err(|e| anyhow::anyhow!("cannot sign `{dest}`: {e}"))?;
    Ok(())
}

/// Reports one run's outcome, in input order.
fn report(
    run: &IngestedRun,
    dest: &Utf8Path,
    stored: Stored,
    tally: &mut Tally,
    quiet: bool,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let shown = display_path(dest);
    let mut out = |line: String| -> std::io::Result<()> {
        if quiet {
            return Ok(());
        }
        // Run names come from the input: a control character in one is shown escaped.
        writeln!(out, "{}", escape_controls(&line))
    };
    let (scenario, case, hash) = (&run.scenario, &run.case, &run.trace.content_hash);
    match stored {
        Stored::Written => {
            tally.written += 1;
            for (k, n) in &run.events {
                *tally.events.entry(k).or_default() += n;
            }
            out(format!("wrote {shown}  {scenario}/{case}  {hash}"))?;
        }
        Stored::Unchanged => {
            tally.unchanged += 1;
            out(format!("unchanged {shown}  {scenario}/{case}  {hash}"))?;
        }
    }
    Ok(())
}

/// One line per input: what was written, unchanged and skipped.
fn summarise(
    input: &str,
    format: &str,
    tally: &Tally,
    skipped: &BTreeMap<String, usize>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let events: Vec<String> = (tally.events.iter())
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    let mut line = format!(
        "`{input}` ({format}): {} trace(s) written, {} unchanged, {} refused",
        tally.written, tally.unchanged, tally.failed
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
    writeln!(out, "{}", escape_controls(&line))?;
    Ok(())
}
