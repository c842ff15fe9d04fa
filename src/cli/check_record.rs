//! `check`'s run record ([`tracereplay_core::run_record`]): which runs keep and use one, the
//! invocation it is keyed by, and what a run wrote, kept as it was written.
//!
//! Only a run whose whole output is its standard output, standard error and exit code takes
//! part: a report format that stamps the time (`html`, `otlp`) or writes a file (`github`'s step
//! summary, `--json FILE` and the like, `--artifacts`, `--attest`) does not, nor do runs that
//! read what is not a file of the suite (`--last-failed`, a remote path, `--require-signed`'s
//! keys), a partitioned run, `--timings`, `--no-cache`, or a run that shows a progress bar.

use std::io::{IsTerminal, Write};

use tracereplay_core::eval::CheckStats;
use tracereplay_core::report::Format;
use tracereplay_core::run_record::{Inputs, Invocation, MAX_OUTPUT, stamp_of};

use super::args::CheckArgs;
use super::settings::Settings;

/// The invocation a run of `args` is recorded under, when it takes part (see the module's
/// overview).
pub(super) fn invocation(args: &CheckArgs, settings: &Settings) -> Option<Invocation> {
    let writes_only_output = matches!(
        args.format,
        Format::Human | Format::Json | Format::Junit | Format::Markdown
    ) && Format::ALL.iter().all(|f| args.also_written(*f).is_none())
        && args.otlp_endpoint.is_none()
        && args.artifacts.is_none()
        && args.signing.attest.is_none();
    let reads_only_the_suite = !args.last_failed
        && !settings.require_signed()
        && !(settings.paths().iter()).any(|p| tracereplay_core::remote::is_remote(p.as_str()));
    let takes_part = writes_only_output
        && reads_only_the_suite
        && !args.no_cache
        && !args.timings
        && args.partition.is_none()
        && !settings.use_progress();
    if !takes_part {
        return None;
    }
    Invocation::new(&settings.cache_dir(), &described(args, settings))
}

/// Everything the run is asked besides its files, as bytes: the command line, the working
/// directory, the whole environment, whether the output goes to a terminal, the settings it
/// resolved to, and the binary itself.
fn described(args: &CheckArgs, settings: &Settings) -> Vec<u8> {
    let mut d = Vec::new();
    let mut part = |bytes: &[u8]| {
        d.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        d.extend_from_slice(bytes);
    };
    for arg in std::env::args_os() {
        part(arg.as_encoded_bytes());
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    part(cwd.as_os_str().as_encoded_bytes());
    let mut env: Vec<_> = std::env::vars_os().collect();
    env.sort();
    for (name, value) in env {
        part(name.as_encoded_bytes());
        part(value.as_encoded_bytes());
    }
    let exe = std::env::current_exe().ok();
    let exe_stamp = (exe.as_deref())
        .and_then(camino::Utf8Path::from_path)
        .and_then(stamp_of);
    part(
        format!(
            "{args:?}\n{settings:?}\nstdout terminal {}, stderr terminal {}\nbinary {exe:?} {exe_stamp:?}",
            std::io::stdout().is_terminal(),
            std::io::stderr().is_terminal(),
        )
        .as_bytes(),
    );
    d
}

/// A writer that keeps what passes through it (up to [`MAX_OUTPUT`] bytes) when `on`.
pub(super) struct Kept<W> {
    inner: W,
    kept: Vec<u8>,
    on: bool,
}

impl<W: Write> Kept<W> {
    pub(super) fn new(inner: W, on: bool) -> Self {
        Kept {
            inner,
            kept: Vec::new(),
            on,
        }
    }

    /// What was kept, unless keeping was off or the output outgrew it.
    fn kept(&self) -> Option<&[u8]> {
        self.on.then_some(&self.kept[..])
    }
}

impl<W: Write> Write for Kept<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        if self.on {
            if self.kept.len() + n > MAX_OUTPUT {
                self.on = false;
                self.kept = Vec::new();
            } else {
                self.kept.extend_from_slice(&buf[..n]);
            }
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// What a judged run leaves for its record: the invocation and the inputs it was judged from.
pub(super) struct ToKeep<'a> {
    pub(super) invocation: &'a Invocation,
    pub(super) inputs: &'a Inputs,
    /// Trace files judged.
    pub(super) traces: usize,
}

/// Records the run, if it found every trace's row in the result cache, wrote no pending
/// baseline, failed no write, left the cache file as it found it, and no file it read had
/// changed just before ([`Inputs::settled`]): its output is then what the same run of the same
/// files gives again. A record that cannot be written is no failure (the next run judges as
/// usual).
pub(super) fn keep<O: Write, E: Write>(
    to_keep: &ToKeep<'_>,
    stats: &CheckStats,
    failed_writes: usize,
    code: i32,
    (out, err): (&Kept<O>, &Kept<E>),
) {
    use std::sync::atomic::Ordering::Relaxed;
    let settled = stats.recalled.load(Relaxed) == to_keep.traces
        && stats.pending_written.load(Relaxed) == 0
        && failed_writes == 0
        && to_keep.inputs.settled()
        && to_keep.invocation.cache_unchanged();
    if let (true, Some(stdout), Some(stderr)) = (settled, out.kept(), err.kept()) {
        let also_read = stats.also_read.lock().unwrap_or_else(|e| e.into_inner());
        let _ = (to_keep.invocation).record(to_keep.inputs, &also_read, code, (stdout, stderr));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_past_the_limit_is_passed_on_but_not_kept() {
        let mut kept = Kept::new(Vec::new(), true);
        kept.write_all(b"report\n").unwrap();
        assert_eq!(kept.kept(), Some(&b"report\n"[..]));
        kept.write_all(&vec![b'x'; MAX_OUTPUT]).unwrap();
        assert_eq!(kept.kept(), None, "past the limit: nothing to record");
        assert_eq!(kept.inner.len(), MAX_OUTPUT + 7, "every byte still written");
        let mut off = Kept::new(Vec::new(), false);
        off.write_all(b"x").unwrap();
        assert_eq!((off.kept(), off.inner.len()), (None, 1));
    }
}
