//! `tracereplay verify`: check seals without judging.

use std::io::Write;

use rayon::prelude::*;
use tracereplay::report::escape_controls;
use tracereplay_core::eval::error_chain;
use tracereplay_core::sign::SignatureCheck;
use tracereplay_trace::paths::display_path;

use super::args::VerifyArgs;
use super::exit;

/// Runs `verify`; `Err` means exit 2.
pub(super) fn run(
    args: &VerifyArgs,
    settings: &super::settings::Settings,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    let found = tracereplay_core::discover::find(&settings.paths(), &[], &Default::default())?;
    let remote = found.remote.as_deref();
    if found.trace_files.is_empty() && found.unreachable.is_empty() {
        anyhow::bail!("no trace files (`*.trace.ndjson.zst`, `*.trace.ndjson`) found to verify");
    }
    let limits = args.limits.limits();
    let trusted = (settings.trusted_keys())
        .map(|p| super::sign::trusted(Some(p), "`verify --trusted-keys`"))
        .transpose()?;
    let mut lines: Vec<(String, bool, String)> = found
        .trace_files
        .par_iter()
        .map(|path| {
            let shown = display_path(path);
            let mut signature = None;
            let outcome =
                tracereplay_core::remote::open_with(remote, path, limits, &mut |stored| {
                    if let Some(keys) = &trusted {
                        signature = Some(keys.check(path, stored));
                    }
                    false
                });
            let outcome = outcome
                .map(|f| f.expect("read to the end when `inspect` says so"))
                .and_then(|f| f.verify_seal(false));
            match (outcome, signature) {
                (Ok(seal), Some(signature)) if seal.sealed => match signed(signature, &seal) {
                    Ok(key_id) => (
                        shown,
                        true,
                        format!("{}  signed by {key_id}", seal.content_hash),
                    ),
                    Err(why) => (shown, false, why),
                },
                (Ok(seal), _) if seal.sealed => (shown, true, seal.content_hash),
                (Ok(_), _) => (
                    shown,
                    false,
                    "not sealed; seal it with `tracereplay pack`".to_owned(),
                ),
                (Err(e), _) => (shown, false, error_chain(&e)),
            }
        })
        .collect();
    // What could not be looked at may be a trace: never counted as intact.
    lines.extend((found.unreachable.iter()).map(|(p, why)| (display_path(p), false, why.clone())));
    lines.sort();
    let mut bad = 0;
    for (path, ok, detail) in &lines {
        let (path, detail) = (escape_controls(path), escape_controls(detail));
        if *ok {
            writeln!(out, "ok    {path}  {detail}")?;
        } else {
            bad += 1;
            writeln!(out, "FAIL  {path}  {detail}")?;
        }
    }
    writeln!(
        out,
        "\n{} traces: {} sealed and intact, {bad} failed",
        lines.len(),
        lines.len() - bad
    )?;
    Ok(if bad > 0 { exit::FAILURE } else { exit::OK })
}

/// The key id of a signature that holds and names this trace's seal (when it names one), or
/// what is wrong with it.
fn signed(
    signature: Result<tracereplay_core::sign::Signed, tracereplay_core::sign::SignatureProblem>,
    seal: &tracereplay::trace::Seal,
) -> Result<String, String> {
    let signed = signature.map_err(|p| p.to_string())?;
    match tracereplay_core::sign::Claims::of_comment(&signed.comment) {
        Some(claims) if claims.seal != seal.content_hash => Err(format!(
            "is signed by key {}, but its trusted comment names seal `{}` (the trace has `{}`)",
            signed.key_id, claims.seal, seal.content_hash
        )),
        _ => Ok(signed.key_id),
    }
}
