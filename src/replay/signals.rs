//! SIGINT, SIGTERM and SIGHUP for `replay serve`, registered before the address is announced:
//! each stops the server the same way, recording every open session first. (SIGHUP is what a
//! closed terminal or a stopped `nohup`-less job sends; its default would end the process with
//! the sessions unwritten.)

/// SIGINT, SIGTERM and SIGHUP, listened for from the moment the server is bound.
pub(crate) struct Signals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
    #[cfg(unix)]
    hangup: tokio::signal::unix::Signal,
}

impl Signals {
    /// Registers the handlers (inside the server's runtime).
    pub(crate) fn install() -> std::io::Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Signals {
                interrupt: signal(SignalKind::interrupt())?,
                terminate: signal(SignalKind::terminate())?,
                hangup: signal(SignalKind::hangup())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    /// Completes on the first SIGINT, SIGTERM or SIGHUP.
    pub(crate) async fn recv(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
            _ = self.hangup.recv() => {}
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}
