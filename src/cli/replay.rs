//! `tracereplay replay serve`: an OpenAI-compatible endpoint serving recorded model outputs.

use std::io::Write;

use tracereplay_net::{load_all, server};

use super::args::{ReplayCommand, ReplayServeArgs};
use super::exit;

/// Runs `replay`; `Err` means exit 2.
pub(super) fn run(cmd: &ReplayCommand, out: &mut dyn Write) -> anyhow::Result<i32> {
    match cmd {
        ReplayCommand::Serve(args) => serve(args, out),
    }
}

fn serve(args: &ReplayServeArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    super::options::check_listen(args.server.listen, args.server.allow_remote, "is served")?;
    let scripts = load_all(&args.traces, args.limits.limits())?;
    // Each session hashes request inputs as its recording's prompts were hashed (the trace's
    // header says how): unkeyed recordings need nothing; keyed ones need the key they used.
    let keyed: Vec<&tracereplay_net::Script> = (scripts.iter())
        .filter(|s| s.hash_scheme.0 == "blake3-keyed")
        .collect();
    let hasher = match (tracereplay::trace::PromptHasher::from_env(), keyed.first()) {
        (_, None) => tracereplay::trace::PromptHasher::unkeyed(),
        (Some(h), Some(_)) => {
            if let Some(other) = keyed.iter().find(|s| {
                s.hash_scheme
                    .1
                    .as_deref()
                    .is_some_and(|k| Some(k) != h.kid())
            }) {
                anyhow::bail!(
                    "`{}` was hashed with key `{}`, and `{}` holds key `{}`: replay it with the key it was recorded with",
                    other.path,
                    other.hash_scheme.1.as_deref().unwrap_or("?"),
                    tracereplay::trace::KEY_ENV,
                    h.kid().unwrap_or("?")
                );
            }
            h
        }
        (None, Some(first)) => anyhow::bail!(
            "`{}` was recorded with keyed prompt hashes: set `{}` to the key it used, so that request inputs hash alike",
            first.path,
            tracereplay::trace::KEY_ENV
        ),
    };
    let options = server::Options {
        hasher,
        record: args.record.clone(),
        trial: args.trial.clone(),
        strict: args.strict,
        raw_prompts: tracereplay_trace::privacy::raw_prompts_opted_in(args.dev_raw_prompts),
        limits: args.limits.limits(),
        waived: std::sync::Arc::new(super::options::waived()),
        signer: super::sign::signer(&args.signing)?.map(|k| k as _),
        chunking: args.chunking,
        live: match &args.upstream {
            None => None,
            Some(url) => Some(server::Live {
                upstream: tracereplay_net::proxy::check_upstream(url, args.allow_insecure_upstream)
                    .map_err(anyhow::Error::msg)?,
                timeout: args.upstream_timeout,
                from: match (args.live_from, args.live_on_divergence) {
                    (Some(n), _) => server::LiveFrom::Request(n as usize),
                    (None, true) => server::LiveFrom::Divergence,
                    (None, false) => server::LiveFrom::Exhausted,
                },
            }),
        },
    };
    if let Some(dir) = &args.record {
        // Recordings are written under lowercased path segments (as baselines are): two
        // sessions whose names differ only in letter case would write one file, the last
        // writer winning. Refused, as `ingest` refuses two runs of one name.
        let mut by_path: std::collections::BTreeMap<String, &camino::Utf8Path> = Default::default();
        for s in &scripts {
            let name = tracereplay::trace::RunName {
                scenario: &s.scenario,
                case: &s.case,
                trial: options.trial_of(s).map(|t| t.as_str()),
            };
            let path = name.path().into_string();
            // Never over the recording being served: a diverged replay would replace it.
            let dest = dir.join(&path);
            let same = |a: &camino::Utf8Path, b: &camino::Utf8Path| matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(x), Ok(y)) if x == y);
            if same(&dest, &s.path) {
                anyhow::bail!(
                    "`--record {dir}` would write `{dest}` over the recording being served: record into another directory"
                );
            }
            if let Some(first) = by_path.insert(path.clone(), &s.path) {
                anyhow::bail!(
                    "`{first}` and `{}` would both be recorded as `{}` (names that differ only in letter case, or `--trial` naming a trial one of them is): give the runs distinct scenario, case or trial names",
                    s.path,
                    dir.join(path)
                );
            }
        }
        std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("cannot create `{dir}`: {e}"))?;
    }
    let sessions: Vec<String> = scripts
        .iter()
        .map(|s| format!("{} ({} responses)", s.key(), s.steps.len()))
        .collect();
    if options.raw_prompts {
        diag!(
            "note: the raw text of request inputs goes to `*.prompts.ndjson` sidecars beside the recordings (developer opt-in); keep them out of version control"
        );
    }
    let running = tracereplay_net::spawn(scripts, args.server.listen, options)?;
    writeln!(out, "listening on http://{}", running.addr)?;
    out.flush()?;
    for s in &sessions {
        diag!("serving {}", tracereplay::report::escape_controls(s));
    }
    let when = if args.exit_when_exhausted {
        tracereplay_net::StopWhen::Exhausted
    } else if args.exit_when_finished {
        tracereplay_net::StopWhen::Finished
    } else {
        tracereplay_net::StopWhen::Signal
    };
    let (reports, problems) = running.wait(when);
    for p in &problems {
        diag!(
            "error: cannot record {}",
            tracereplay::report::escape_controls(p)
        );
    }
    let mut diverged = false;
    for r in &reports {
        diverged |= r.diverged;
        writeln!(
            out,
            "{}: {} of {} responses served{}{}",
            tracereplay::report::escape_controls(&r.session),
            r.served,
            r.recorded,
            if r.exhausted > 0 {
                format!(", {} request(s) past the end", r.exhausted)
            } else {
                String::new()
            },
            if r.diverged { " (diverged)" } else { "" }
        )?;
        if let Some(at) = r.went_live_at {
            writeln!(
                out,
                "  went live at request {at}: {} request(s) forwarded to the upstream",
                r.live
            )?;
        }
        for d in &r.divergences {
            writeln!(
                out,
                "  divergence: {}",
                tracereplay::report::escape_controls(d)
            )?;
        }
        if let Some(p) = &r.recorded_to {
            writeln!(
                out,
                "  recorded {}",
                tracereplay::report::escape_controls(p)
            )?;
        }
        if let Some(why) = &r.not_recorded {
            diag!(
                "note: {}: not recorded: {why}",
                tracereplay::report::escape_controls(&r.session)
            );
        }
    }
    if !problems.is_empty() {
        return Ok(exit::ERROR);
    }
    Ok(if diverged { exit::FAILURE } else { exit::OK })
}
