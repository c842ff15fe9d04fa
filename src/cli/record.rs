//! `tracereplay record`: the recording proxy.

use std::io::Write;

use tracereplay::report::escape_controls;
use tracereplay_net::proxy;
use tracereplay_trace::privacy::raw_prompts_opted_in;

use super::args::RecordArgs;
use super::exit;

/// Runs `record` until SIGINT, SIGTERM or SIGHUP; `Err` means exit 2. Exits 1 when a session
/// could not be written (a secret in it, a file in its place), 0 otherwise.
pub(super) fn run(
    args: &RecordArgs,
    settings: &super::settings::Settings,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    // Recordings belong to the suite: by default, its first directory.
    let dir = match (&args.out, settings.project_paths()) {
        (Some(dir), _) => dir.clone(),
        (None, Some([first, ..])) if !first.as_str().contains("://") => first.clone(),
        (None, Some([first, ..])) => anyhow::bail!(
            "`record` needs `--out DIR`: the suite's first path, `{first}`, is in object storage, and recordings are written to a local directory"
        ),
        (None, _) => anyhow::bail!(
            "`record` needs `--out DIR`: no project file (`tracereplay.toml`, made by `tracereplay init`) names the suite's `paths` to record into"
        ),
    };
    super::options::check_listen(
        args.server.listen,
        args.server.allow_remote,
        "can spend the credentials its requests carry",
    )?;
    let upstream = proxy::check_upstream(&args.upstream, args.allow_insecure_upstream)
        .map_err(anyhow::Error::msg)?;
    let hasher = super::options::prompt_hasher("record", args.prompts.unkeyed)?;
    std::fs::create_dir_all(&dir).map_err(|e| anyhow::anyhow!("cannot create `{dir}`: {e}"))?;
    let raw_prompts = raw_prompts_opted_in(args.prompts.dev_raw_prompts);
    if raw_prompts {
        diag!(
            "note: the raw text of request inputs goes to `*.prompts.ndjson` sidecars beside the recordings (developer opt-in); keep them out of version control"
        );
    }
    let options = proxy::Options {
        upstream,
        out: dir.clone(),
        hasher,
        raw_prompts,
        trial: args.trial.clone(),
        idle: args.idle,
        upstream_timeout: args.upstream_timeout,
        limits: args.limits.limits(),
        waived: std::sync::Arc::new(super::options::waived()),
        signer: super::sign::signer(&args.signing)?.map(|k| k as _),
        replace: args.replace,
        next: Some(next_trial(settings, &dir, &args.limits)),
    };
    let server = proxy::spawn(args.server.listen, options)?;
    writeln!(out, "listening on http://{}", server.addr)?;
    out.flush()?;
    diag!(
        "recording to `{}`, forwarding to {}",
        escape_controls(dir.as_str()),
        escape_controls(&tracereplay_trace::paths::redact_url(&args.upstream))
    );
    // What is open and what was written: a status line on a terminal; in logs, a line as
    // each session opens.
    let status = super::status::StatusLine::new();
    let (mut open, mut written) = (0usize, 0usize);
    let ends = server.wait(|heard| {
        let end = match heard {
            proxy::Heard::Opened(session) => {
                open += 1;
                if !status.on_terminal() {
                    diag!("opened {}", escape_controls(session));
                }
                status.set(format!(
                    "recording: {open} session(s) open, {written} written"
                ));
                return;
            }
            proxy::Heard::Ended(end) => end,
        };
        open = open.saturating_sub(1);
        let session = escape_controls(&end.session);
        status.above(|| match (&end.recorded_to, &end.not_recorded) {
            (Some(path), _) => {
                written += 1;
                // Each written session is a line of stdout, as it is written.
                let _ = writeln!(
                    out,
                    "recorded {session}: {} request(s) ({}) -> {}",
                    end.requests,
                    escape_controls(&end.ended),
                    escape_controls(path)
                );
                let _ = out.flush();
            }
            (None, Some(why)) if end.failed => diag!("error: {session}: {}", escape_controls(why)),
            (None, Some(why)) => diag!("note: {session}: not recorded: {}", escape_controls(why)),
            (None, None) => {}
        });
        status.set(format!(
            "recording: {open} session(s) open, {written} written"
        ));
    });
    drop(status);
    let failed = ends.iter().filter(|e| e.failed).count();
    let written = ends.iter().filter(|e| e.recorded_to.is_some()).count();
    diag!("{written} session(s) recorded, {failed} refused");
    Ok(if failed > 0 { exit::FAILURE } else { exit::OK })
}

/// The recorder's `…/tracereplay/v1/next`: `trials next` over the recordings' directory, with
/// the project file's settings (as `tracereplay trials next` run there without flags).
fn next_trial(
    settings: &super::settings::Settings,
    dir: &camino::Utf8Path,
    limits: &super::args::LimitArgs,
) -> proxy::NextTrial {
    let settings = settings.as_command(super::settings::Cmd::TrialsNext);
    let (paths, limits) = (vec![dir.to_owned()], limits.limits());
    std::sync::Arc::new(move |scenario: &str, case: &str| {
        super::trials_next::answer(&settings, &paths, (scenario, case), (limits, false))
            .map(|a| serde_json::to_value(a).expect("an answer serialises"))
            .map_err(|e| format!("{e:#}"))
    })
}
