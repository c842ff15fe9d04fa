//! Signing on the command line: the signing key of the commands that write traces, `key new
//! --sign`, `sign`, and `verify-attestation`.

use std::io::Write;
use std::sync::Arc;

use anyhow::Context;
use camino::{Utf8Path, Utf8PathBuf};
use rayon::prelude::*;

use tracereplay::report::escape_controls;
use tracereplay::trace::{Limits, TraceFile};
use tracereplay_core::sign::attest::{self, TraceNow};
use tracereplay_core::sign::keys::{SigningKey, TrustedKeys, signing_key_from_env_or};
use tracereplay_trace::paths::display_path;

use super::args::{SignArgs, SigningArgs, VerifyAttestationArgs};
use super::exit;

/// The signing key `args` (or `TRACEREPLAY_SIGNING_KEY`) name, if any; said on stderr by its
/// key id. A key that does not read stops the command (exit 2): traces that should be signed
/// are never written unsigned.
pub(super) fn signer(args: &SigningArgs) -> anyhow::Result<Option<Arc<SigningKey>>> {
    let key = signing_key_from_env_or(args.signing_key.as_deref())?;
    let key = key.map(|k| k.for_run(args.run_id.clone()));
    if let Some(k) = &key {
        diag!("note: signing with key {}", k.key_id());
    }
    Ok(key.map(Arc::new))
}

/// The commit the working directory is at: `GITHUB_SHA` or `CI_COMMIT_SHA` when set (CI knows
/// best), else `git rev-parse HEAD` where git and a commit are there; `None` otherwise.
pub(super) fn current_commit() -> Option<String> {
    for var in ["GITHUB_SHA", "CI_COMMIT_SHA"] {
        if let Some(v) = std::env::var(var).ok().filter(|v| !v.trim().is_empty()) {
            return Some(v.trim().to_owned());
        }
    }
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--verify", "--quiet", "HEAD"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let sha = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && sha.len() >= 40 && sha.bytes().all(|b| b.is_ascii_hexdigit()))
        .then_some(sha)
}

/// The trusted keys at `path`, which `what` needs.
pub(super) fn trusted(path: Option<&Utf8Path>, what: &str) -> anyhow::Result<TrustedKeys> {
    let Some(path) = path else {
        anyhow::bail!(
            "{what} needs the public keys to trust: pass `--trusted-keys PATH` (a `.pub` file, or a directory of them), or set `trusted-keys` in `tracereplay.toml`"
        );
    };
    Ok(TrustedKeys::load(path)?)
}

/// Signs the trace file just written at `path` under `root` (the directory its place is
/// named relative to); the signature's path.
pub(super) fn sign_written(
    signer: &SigningKey,
    path: &Utf8Path,
    root: Option<&Utf8Path>,
    limits: Limits,
    durable: bool,
) -> Result<Utf8PathBuf, String> {
    let stored = tracereplay_trace::fsutil::read_regular(path, limits.max_trace_bytes, "trace")
        .map_err(|e| format!("cannot read `{path}`: {e}"))?;
    let parent = path.parent().filter(|d| !d.as_str().is_empty());
    let root = root
        .filter(|r| path.starts_with(r))
        .or(parent)
        .unwrap_or(".".into());
    tracereplay_core::sign::sign_trace(signer, root, (path, &stored), limits, durable)
}

/// The directory of `paths` a trace at `trace` was found under (the longest), if any.
fn root_of<'p>(paths: &'p [Utf8PathBuf], trace: &Utf8Path) -> Option<&'p Utf8Path> {
    (paths.iter())
        .filter(|p| p.is_dir() && trace.starts_with(p))
        .max_by_key(|p| p.as_str().len())
        .map(Utf8PathBuf::as_path)
}

/// `key new --sign -o DIR`: a new key pair, the secret key written with mode 0600; never over
/// an existing key.
pub(super) fn new_key_pair(dir: &Utf8Path, out: &mut dyn Write) -> anyhow::Result<i32> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create `{dir}`"))?;
    let (secret, public) = (dir.join("tracereplay.key"), dir.join("tracereplay.pub"));
    for p in [&secret, &public] {
        if p.symlink_metadata().is_ok() {
            anyhow::bail!(
                "`{p}` exists; a key is never overwritten (move it away first, or choose another directory)"
            );
        }
    }
    let pair = tracereplay_core::sign::keys::generate()?;
    write_new(&secret, pair.secret.as_bytes(), 0o600)?;
    write_new(&public, pair.public.as_bytes(), 0o644)?;
    writeln!(out, "{}", pair.key_id)?;
    diag!(
        "wrote `{public}` (commit it: checks trust it with `--trusted-keys {public}`) and `{secret}` (keep it secret: store its content as the `{}` secret of your CI, then delete it); key id {}",
        tracereplay_core::sign::SIGNING_KEY_ENV,
        pair.key_id
    );
    Ok(exit::OK)
}

/// Writes a new file (never an existing one) with `mode` on Unix, synced.
fn write_new(path: &Utf8Path, bytes: &[u8], mode: u32) -> anyhow::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options
        .open(path)
        .with_context(|| format!("cannot create `{path}`"))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("cannot write `{path}`"))?;
    Ok(())
}

/// `tracereplay sign PATH…`.
pub(super) fn run_sign(args: &SignArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let Some(key) = signer(&args.signing)? else {
        anyhow::bail!(
            "no signing key: set `{}` to a secret key file's content, or pass `--signing-key FILE` (make a key pair with `tracereplay key new --sign -o DIR`)",
            tracereplay_core::sign::SIGNING_KEY_ENV
        );
    };
    let found = tracereplay_core::discover::discover(&args.paths, &[])?;
    if found.trace_files.is_empty() {
        anyhow::bail!("no trace files (`*.trace.ndjson.zst`, `*.trace.ndjson`) found to sign");
    }
    let limits = args.limits.limits();
    let mut lines: Vec<(String, Result<Utf8PathBuf, String>)> = (found.trace_files.par_iter())
        .map(|p| {
            let root = root_of(&args.paths, p);
            (display_path(p), sign_written(&key, p, root, limits, true))
        })
        .collect();
    lines.sort_by(|a, b| a.0.cmp(&b.0));
    let mut failed = 0;
    for (path, outcome) in &lines {
        match outcome {
            Ok(sig) => writeln!(
                out,
                "signed  {}  {}  by {}",
                escape_controls(path),
                escape_controls(&display_path(sig)),
                key.key_id()
            )?,
            Err(why) => {
                failed += 1;
                writeln!(
                    out,
                    "FAIL    {}  {}",
                    escape_controls(path),
                    escape_controls(why)
                )?;
            }
        }
    }
    writeln!(
        out,
        "\n{} traces: {} signed, {failed} failed",
        lines.len(),
        lines.len() - failed
    )?;
    Ok(if failed > 0 { exit::FAILURE } else { exit::OK })
}

/// `tracereplay verify-attestation FILE --trusted-keys … [--traces PATH…]`.
pub(super) fn run_verify_attestation(
    args: &VerifyAttestationArgs,
    settings: &super::settings::Settings,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    let trusted = trusted(settings.trusted_keys(), "`verify-attestation`")?;
    let file = &args.attestation;
    // A record of a run lists every judged trace: bounded, and never a FIFO waited on.
    let bytes = tracereplay_trace::fsutil::read_regular(file, 1 << 30, "attestation")
        .with_context(|| format!("cannot read the attestation `{file}`"))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("the attestation `{file}` is not UTF-8"))?;
    let verified = match attest::verify(&text, &trusted) {
        Ok(v) => v,
        Err(e) => {
            writeln!(out, "FAIL  attestation `{file}` {e}")?;
            return Ok(exit::FAILURE);
        }
    };
    let p = &verified.statement.predicate;
    writeln!(
        out,
        "ok    attestation `{file}`: signed by trusted key {}",
        verified.key_id
    )?;
    let when = p
        .time
        .map_or_else(|| "no time".to_owned(), tracereplay::report::rfc3339);
    let commit = p.commit.as_deref().unwrap_or("no commit");
    let run = p
        .run_id
        .as_deref()
        .map_or_else(String::new, |r| format!(", run `{r}`"));
    writeln!(
        out,
        "      the run: exit code {}, ended {when}, {commit}{}",
        p.exit_code,
        escape_controls(&run)
    )?;
    let now = tracereplay::report::html::report_time_nanos() / 1_000_000_000;
    let want = attest::Expectations {
        passed: !args.signature_only,
        dated: !args.signature_only,
        max_age: args.max_age,
        now,
        commit: args.commit.clone(),
        run_id: args.run_id.clone(),
    };
    let shortfalls = attest::shortfalls(&verified.statement, &want);
    for s in &shortfalls {
        writeln!(out, "FAIL  {}", escape_controls(s))?;
    }
    let sealed = p.results.iter().filter(|r| r.seal.is_some()).count();
    writeln!(
        out,
        "      {} {}: {} results ({sealed} sealed traces), {} scenario files, exit code {}",
        p.tool.name,
        p.tool.version,
        p.results.len(),
        p.scenarios.len(),
        p.exit_code
    )?;
    writeln!(out, "      options: {}", p.options.join(" "))?;
    let failed = if shortfalls.is_empty() {
        exit::OK
    } else {
        exit::FAILURE
    };
    if args.traces.is_empty() {
        return Ok(failed);
    }
    let found = tracereplay_core::discover::discover(&args.traces, &[])?;
    let limits = args.limits.limits();
    let now: Vec<TraceNow> = (found.trace_files.par_iter())
        .map(|path| trace_now(path, limits))
        .collect();
    let check = attest::check_traces(&verified.statement, &now);
    for problem in &check.problems {
        writeln!(out, "FAIL  {}", escape_controls(problem))?;
    }
    // A trace the run did not judge could be one it should have failed on.
    let (level, extra_fails) = if args.allow_extra {
        ("note", false)
    } else {
        ("FAIL", !check.unattested.is_empty())
    };
    for path in &check.unattested {
        writeln!(
            out,
            "{level}  `{}` is not named by the attestation (the run did not judge it){}",
            escape_controls(path),
            if args.allow_extra {
                ""
            } else {
                "; pass `--allow-extra` if it was added after the run"
            }
        )?;
    }
    writeln!(
        out,
        "\n{sealed} attested traces: {} match, {} do not; {} not attested",
        check.matched,
        check.problems.len(),
        check.unattested.len()
    )?;
    Ok(if check.problems.is_empty() && !extra_fails {
        failed
    } else {
        exit::FAILURE
    })
}

/// What a trace file is now: its bytes' digest and its seal.
fn trace_now(path: &Utf8Path, limits: Limits) -> TraceNow {
    let mut sha256 = String::new();
    let opened = TraceFile::open_with(path, limits, &mut |stored| {
        sha256 = attest::sha256_of(stored);
        false
    });
    let seal = opened
        .map(|f| f.expect("read to the end when `inspect` says so"))
        .and_then(|f| f.verify_seal(true))
        .map(|s| s.content_hash)
        .map_err(|e| tracereplay_core::eval::error_chain(&e));
    TraceNow {
        path: display_path(path),
        sha256,
        seal,
    }
}
