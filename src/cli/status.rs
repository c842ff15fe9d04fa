//! A long-running server's status, as the other long commands show progress: on a terminal, one
//! line on stderr kept current (what is open, what was written); in logs, nothing but the lines
//! the server says as things happen.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The status line, when stderr is a terminal.
pub(super) struct StatusLine(Option<ProgressBar>);

impl StatusLine {
    /// A status line on stderr when it is a terminal that draws (not `TERM=dumb`); otherwise
    /// none.
    pub(super) fn new() -> StatusLine {
        let terminal =
            std::io::stderr().is_terminal() && std::env::var_os("TERM").is_none_or(|t| t != "dumb");
        StatusLine(terminal.then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
                bar.set_style(style);
            }
            bar.enable_steady_tick(std::time::Duration::from_millis(250));
            bar
        }))
    }

    /// Whether the line is shown (else whoever reads stderr reads it as a log).
    pub(super) fn on_terminal(&self) -> bool {
        self.0.is_some()
    }

    /// Sets what the line says.
    pub(super) fn set(&self, message: String) {
        if let Some(bar) = &self.0 {
            bar.set_message(message);
        }
    }

    /// Runs `write` (a line of output) with the status line out of its way.
    pub(super) fn above<T>(&self, write: impl FnOnce() -> T) -> T {
        match &self.0 {
            Some(bar) => bar.suspend(write),
            None => write(),
        }
    }
}

impl Drop for StatusLine {
    fn drop(&mut self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}
