//! The signals that stop `replay serve`, `record` and `collect`, registered before the address
//! is announced: SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 each stop the server the
//! same way, recording every open session first. (SIGHUP is what a closed terminal or a stopped
//! `nohup`-less job sends; the defaults of all six would end the process with the sessions
//! unwritten.)

/// The stopping signals, listened for from the moment the server is bound.
pub(crate) struct Signals {
    #[cfg(unix)]
    heard: Vec<tokio::signal::unix::Signal>,
}

impl Signals {
    /// Registers the handlers (inside the server's runtime).
    pub(crate) fn install() -> std::io::Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let kinds = [
                SignalKind::interrupt(),
                SignalKind::terminate(),
                SignalKind::hangup(),
                SignalKind::quit(),
                SignalKind::user_defined1(),
                SignalKind::user_defined2(),
            ];
            let heard = kinds.into_iter().map(signal).collect::<Result<_, _>>()?;
            Ok(Signals { heard })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    /// Completes on the first stopping signal.
    pub(crate) async fn recv(&mut self) {
        #[cfg(unix)]
        {
            let each = self.heard.iter_mut().map(|s| Box::pin(s.recv()));
            let _ = futures::future::select_all(each).await;
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}
