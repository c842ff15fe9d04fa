//! `tracereplay replay serve`: an OpenAI-compatible endpoint serving recorded model outputs.

use std::io::Write;

use crate::replay::{load_all, server};

use super::args::{ReplayCommand, ReplayServeArgs};
use super::exit;

/// Runs `replay`; `Err` means exit 2.
pub(super) fn run(cmd: &ReplayCommand, out: &mut dyn Write) -> anyhow::Result<i32> {
    match cmd {
        ReplayCommand::Serve(args) => serve(args, out),
    }
}

fn serve(args: &ReplayServeArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    if !args.listen.ip().is_loopback() {
        if !args.allow_remote {
            anyhow::bail!(
                "`{}` is not a loopback address: anyone who reaches it is served; pass --allow-remote to mean it",
                args.listen
            );
        }
        diag!(
            "warning: listening on {}, which is not loopback: anyone who reaches it is served",
            args.listen
        );
    }
    let scripts = load_all(&args.traces, crate::trace::Limits::default())?;
    let sessions: Vec<String> = scripts
        .iter()
        .map(|s| format!("{} ({} responses)", s.key(), s.steps.len()))
        .collect();
    let running = server::spawn(scripts, args.listen)?;
    writeln!(out, "listening on http://{}", running.addr)?;
    out.flush()?;
    for s in &sessions {
        diag!("serving {s}");
    }
    let reports = running.wait(args.exit_when_finished);
    let mut diverged = false;
    for r in &reports {
        diverged |= r.diverged;
        writeln!(
            out,
            "{}: {} of {} responses served{}{}",
            r.session,
            r.served,
            r.recorded,
            if r.exhausted > 0 {
                format!(", {} request(s) past the end", r.exhausted)
            } else {
                String::new()
            },
            if r.diverged { " (diverged)" } else { "" }
        )?;
    }
    Ok(if diverged { exit::FAILURE } else { exit::OK })
}
