//! `tracereplay cat`: print a decompressed trace verbatim.

use std::io::Write;

use tracereplay::trace::TraceFile;
use tracereplay_core::eval::error_chain;

use super::args::CatArgs;
use super::exit;

/// Runs `cat`; `Err` means exit 2 (unreadable).
pub(super) fn run(args: &CatArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let file = TraceFile::open(&args.trace, args.limits.limits())
        .map_err(|e| anyhow::anyhow!(error_chain(&e)))?;
    out.write_all(&file.bytes)?;
    out.flush()?;
    match file.verify_seal(false) {
        Ok(seal) if seal.sealed => Ok(exit::OK),
        Ok(_) => {
            diag!(
                "note: `{}` is not sealed; seal it with `tracereplay pack`",
                args.trace
            );
            Ok(exit::OK)
        }
        Err(e) => {
            diag!("warning: {}", error_chain(&e));
            Ok(exit::FAILURE)
        }
    }
}
