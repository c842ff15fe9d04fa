//! `tracereplay pack`: seal and compress NDJSON traces.

use std::io::Write;

use anyhow::Context;
use camino::{Utf8Path, Utf8PathBuf};
use tracereplay::trace::{Packed, TraceFile, pack};
use tracereplay_core::eval::error_chain;

use super::args::PackArgs;
use super::exit;

/// `NAME.trace.ndjson` → `NAME.trace.ndjson.zst` (a bare `NAME.ndjson` gains `.trace`).
fn sealed_name(input: &Utf8Path) -> String {
    let name = input.file_name().unwrap_or("trace");
    let stem = name.strip_suffix(".zst").unwrap_or(name);
    let stem = stem.strip_suffix(".ndjson").unwrap_or(stem);
    let stem = stem.strip_suffix(".trace").unwrap_or(stem);
    format!("{stem}.trace.ndjson.zst")
}

/// The NDJSON traces (`*.trace.ndjson`) under `dir`, in name order, each with its directory
/// relative to `dir`; symbolic links to directories are not followed.
fn traces_under(dir: &Utf8Path) -> anyhow::Result<Vec<(Utf8PathBuf, Utf8PathBuf)>> {
    fn walk(
        dir: &Utf8Path,
        rel: &Utf8Path,
        out: &mut Vec<(Utf8PathBuf, Utf8PathBuf)>,
    ) -> anyhow::Result<()> {
        let mut entries: Vec<_> = (dir.read_dir_utf8())
            .with_context(|| format!("cannot list `{dir}`"))?
            .collect::<Result<_, _>>()
            .with_context(|| format!("cannot list `{dir}`"))?;
        entries.sort_by(|a, b| a.file_name().cmp(b.file_name()));
        for e in entries {
            let kind = e
                .file_type()
                .with_context(|| format!("cannot read `{}`", e.path()))?;
            if kind.is_dir() {
                walk(e.path(), &rel.join(e.file_name()), out)?;
            } else if e.file_name().ends_with(".trace.ndjson") {
                out.push((e.path().to_owned(), rel.to_owned()));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, Utf8Path::new(""), &mut out)?;
    if out.is_empty() {
        anyhow::bail!("no NDJSON trace (`*.trace.ndjson`) under `{dir}`");
    }
    Ok(out)
}

/// Each input trace with where its sealed copy goes: a file as given, a directory's
/// `*.trace.ndjson` files (with `-o`, keeping their place under the directory).
/// Each input, where it is written, and the directory its place is named relative to in its
/// signature (`-o DIR`, else the directory given, else none: its own).
type Job = (Utf8PathBuf, Utf8PathBuf, Option<Utf8PathBuf>);

fn plan(args: &PackArgs) -> anyhow::Result<Vec<Job>> {
    let mut jobs = Vec::new();
    for input in &args.inputs {
        let found = if input.is_file() {
            vec![(input.clone(), Utf8PathBuf::new())]
        } else if input.is_dir() {
            traces_under(input)?
        } else {
            anyhow::bail!("`{input}` does not exist or is not a file or directory");
        };
        let root = args
            .out
            .clone()
            .or_else(|| input.is_dir().then(|| input.clone()));
        for (trace, rel) in found {
            let dest = match &args.out {
                Some(dir) => dir.join(rel).join(sealed_name(&trace)),
                None => trace.with_file_name(sealed_name(&trace)),
            };
            jobs.push((trace, dest, root.clone()));
        }
    }
    Ok(jobs)
}

/// Runs `pack`; `Err` means exit 2.
pub(super) fn run(args: &PackArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let jobs = plan(args)?;
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create `{dir}`"))?;
    }
    let signer = super::sign::signer(&args.signing)?;
    let waived = super::options::waived();
    let mut refused = 0;
    for (input, dest, root) in &jobs {
        let (input, dest) = (input.as_path(), dest.as_path());
        if let Some(parent) = dest.parent().filter(|p| !p.as_str().is_empty()) {
            if let Err(e) = std::fs::create_dir_all(parent) {
                refused += 1;
                diag!("error: refused `{input}`: cannot create `{parent}`: {e}");
                continue;
            }
        }
        let packed = pack_one(input, dest, args, &waived).and_then(|line| match &signer {
            // What is sealed is signed, whether just now or before.
            Some(key) => {
                super::sign::sign_written(key, dest, root.as_deref(), args.limits.limits(), true)
                    .map(|_| format!("{line}  signed by {}", key.key_id()))
                    .map_err(|e| format!("sealed `{dest}`, but cannot sign it: {e}").into())
            }
            None => Ok(line),
        });
        match packed {
            Ok(line) => writeln!(out, "{line}")?,
            Err(e) => {
                refused += 1;
                diag!("error: refused `{input}`: {}", error_chain(e.as_ref()));
            }
        }
    }
    Ok(if refused > 0 { exit::FAILURE } else { exit::OK })
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The trace without its last line, when that line is a footer.
fn without_footer(bytes: &[u8]) -> Option<Vec<u8>> {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let start = body.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    tracereplay::trace::is_footer_line(&body[start..]).then(|| bytes[..start].to_vec())
}

fn pack_one(
    input: &Utf8Path,
    dest: &Utf8Path,
    args: &PackArgs,
    waived: &std::collections::HashSet<String>,
) -> Result<String, BoxError> {
    let limits = args.limits.limits();
    let mut file = TraceFile::open(input, limits)?;
    let mut resealed = false;
    if let Err(e) = file.verify_seal(false) {
        let edited = without_footer(&file.bytes).filter(|_| e.category() == "integrity");
        match (args.reseal, edited) {
            // An edited copy: validated and sealed again, and said so.
            (true, Some(body)) => {
                file = TraceFile::from_bytes(file.path.clone(), body, file.compressed);
                resealed = true;
            }
            (false, Some(_)) => {
                return Err(format!(
                    "{}; if the edit is meant, drop the last line (the footer) and pack it again, or `tracereplay pack --reseal` to validate and seal the edited copy",
                    error_chain(&e)
                )
                .into());
            }
            _ => return Err(e.into()),
        }
    }
    let (bytes, content_hash, verb) = match pack(&file, limits)? {
        Packed::AlreadySealed { content_hash } if file.compressed && dest == input => {
            return Ok(format!("already sealed  {input}  {content_hash}"));
        }
        Packed::AlreadySealed { content_hash } => {
            (file.bytes.clone(), content_hash, "already sealed")
        }
        Packed::Sealed {
            bytes,
            content_hash,
        } => (
            bytes,
            content_hash,
            if resealed { "resealed" } else { "sealed" },
        ),
    };
    // Placed as every trace is: the secret rule over what is written, and a different trace
    // at the destination kept unless `--force`, as `ingest` keeps it (an edited trace sealed
    // again replaces itself).
    use tracereplay::trace::{Existing, Placed, Placement, RunName, SealedTrace};
    let sealed = SealedTrace {
        bytes,
        content_hash: content_hash.clone(),
        sidecar: None,
    };
    let dir = tracereplay_trace::fsutil::Confined::new(dest.parent().unwrap_or(".".into()));
    let how = Placement {
        dir: &dir,
        raw_prompts: false,
        existing: Existing::KeepSame {
            force: args.force || dest == input,
        },
        durable: true,
        limits,
        waived,
    };
    // Kept or replaced by content: which run it is is never asked.
    let run = RunName {
        scenario: "",
        case: "",
        trial: None,
    };
    if let Placed::Unchanged { .. } = sealed.check(run, dest.to_owned(), &how)?.write()? {
        return Ok(format!("unchanged  {input} -> {dest}  {content_hash}"));
    }
    let mut note = if resealed {
        " (the edited trace was validated and sealed again)".to_owned()
    } else {
        String::new()
    };
    // An unsealed source left beside its sealed copy is the same trace twice to discovery.
    let beside = dest != input && dest.parent() == input.parent() && !file.compressed;
    if beside && args.rm_source {
        std::fs::remove_file(input)?;
        note.push_str("; the unsealed source removed");
    } else if beside {
        note.push_str("; the unsealed source is still beside it, and `check` would read both: remove it, or pack with `--rm-source`");
    }
    Ok(format!("{verb}  {input} -> {dest}  {content_hash}{note}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_names() {
        for (input, want) in [
            ("a/x.trace.ndjson", "x.trace.ndjson.zst"),
            ("x.ndjson", "x.trace.ndjson.zst"),
            ("x.trace.ndjson.zst", "x.trace.ndjson.zst"),
        ] {
            assert_eq!(sealed_name(Utf8Path::new(input)), want);
        }
    }
}
