//! Signing a trace file the pipeline has checked: the seal verified and the trace parsed before
//! its claims are made (the signing itself is [`crate::sign`]'s, which knows no pipeline).

use camino::{Utf8Path, Utf8PathBuf};

/// Signs the sealed trace file at `path`, whose stored bytes are `stored`: a detached signature
/// whose trusted comment names its seal, scenario, case and trial, its path relative to `root`
/// and the signer's run, written beside it (inside `root`, never through a symlink under it;
/// synced to disk unless the caller syncs it later, with `durable: false`). A trace that is not
/// sealed and valid is not signed.
pub fn sign_trace(
    signer: &dyn crate::sign::TraceSigner,
    root: &Utf8Path,
    (path, stored): (&Utf8Path, &[u8]),
    limits: crate::trace::Limits,
    durable: bool,
) -> Result<Utf8PathBuf, String> {
    let compressed = path.as_str().ends_with(".zst");
    let file = crate::trace::TraceFile::from_stored(path, stored, compressed, limits)
        .map_err(|e| crate::common::error_chain(&e))?;
    let opts = super::JudgeOptions {
        limits,
        require_sealed: true,
        allow_raw_prompts: true,

        prices: None,
    };
    let (seal, parsed) = super::pipeline::verify_and_parse(&file, &opts)
        .map_err(|e| crate::common::error_chain(&e))?;
    let header = &parsed.trace.header;
    let claims = crate::sign::Claims::new(
        &seal.content_hash,
        &header.scenario,
        &header.case,
        header.trial.as_ref().map(|t| t.as_str()),
        &crate::sign::relative_file(root, path),
    );
    crate::sign::write_signature(signer, root, (path, stored), &claims, durable)
}
