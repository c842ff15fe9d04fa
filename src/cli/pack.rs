//! `tracereplay pack`: seal and compress NDJSON traces.

use std::io::Write;

use crate::eval::error_chain;
use crate::fsutil::write_atomic;
use crate::trace::{Packed, TraceFile, pack};
use anyhow::Context;
use camino::{Utf8Path, Utf8PathBuf};

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

/// Runs `pack`; `Err` means exit 2.
pub(super) fn run(args: &PackArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    for input in &args.inputs {
        if !input.is_file() {
            anyhow::bail!("`{input}` does not exist or is not a file");
        }
    }
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create `{dir}`"))?;
    }
    let mut refused = 0;
    for input in &args.inputs {
        let dest: Utf8PathBuf = match &args.out {
            Some(dir) => dir.join(sealed_name(input)),
            None => input.with_file_name(sealed_name(input)),
        };
        match pack_one(input, &dest, args) {
            Ok(line) => writeln!(out, "{line}")?,
            Err(e) => {
                refused += 1;
                diag!("error: refused `{input}`: {}", error_chain(e.as_ref()));
            }
        }
    }
    Ok(if refused > 0 { exit::FAILURE } else { exit::OK })
}

fn pack_one(
    input: &Utf8Path,
    dest: &Utf8Path,
    args: &PackArgs,
) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
    let file = TraceFile::open(input, args.limits.limits())?;
    match pack(&file, args.limits.limits())? {
        Packed::AlreadySealed { content_hash } => {
            if file.compressed {
                if dest != input {
                    write_atomic(dest, &std::fs::read(input)?)?;
                    return Ok(format!("already sealed  {input} -> {dest}  {content_hash}"));
                }
                return Ok(format!("already sealed  {input}  {content_hash}"));
            }
            write_atomic(
                dest,
                &zstd::bulk::compress(&file.bytes, crate::trace::ZSTD_LEVEL)?,
            )?;
            Ok(format!("sealed  {input} -> {dest}  {content_hash}"))
        }
        Packed::Sealed {
            bytes,
            content_hash,
        } => {
            write_atomic(
                dest,
                &zstd::bulk::compress(&bytes, crate::trace::ZSTD_LEVEL)?,
            )?;
            Ok(format!("sealed  {input} -> {dest}  {content_hash}"))
        }
    }
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
