//! A replay server running in the background: started on a runtime of its own with signal
//! handling in place before its address is announced, stopped by a signal or when its sessions
//! are done, and recording what is left at the end.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::script::Script;
use super::server::{Options, Replay, SessionReport};

/// Starts serving `scripts` on `addr` on a runtime of its own, in a background thread; returns
/// the bound address and a handle that stops the server when dropped or `stop`ped.
pub fn spawn(scripts: Vec<Script>, addr: SocketAddr, options: Options) -> std::io::Result<Running> {
    let replay = Arc::new(Replay::new(scripts, options));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let listener = runtime.block_on(tokio::net::TcpListener::bind(addr))?;
    let local = listener.local_addr()?;
    // Signal handling is in place before the caller announces the address, so a SIGTERM sent
    // right after `listening on` still records (#27).
    let signals = runtime.block_on(async { super::signals::Signals::install() })?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = replay.clone();
    let task = runtime.spawn(async move {
        served
            .run(listener, async {
                let _ = stopped.await;
            })
            .await
    });
    Ok(Running {
        addr: local,
        replay,
        signals: Some(signals),
        stop: Some(stop),
        task: Some(task),
        runtime: Some(runtime),
    })
}

/// A server running in the background.
pub struct Running {
    /// Where it listens.
    pub addr: SocketAddr,
    replay: Arc<Replay>,
    signals: Option<super::signals::Signals>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    runtime: Option<tokio::runtime::Runtime>,
}

/// When a server started with [`spawn`] stops by itself (besides SIGINT and SIGTERM).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopWhen {
    /// Only on a signal.
    Signal,
    /// Once every session was finished.
    Finished,
    /// Once every session is done with its recording: finished, or every recorded response
    /// served and then the run's end reported or a request made past the end.
    Exhausted,
}

impl SessionReport {
    fn done(&self, when: StopWhen) -> bool {
        match when {
            StopWhen::Signal => false,
            StopWhen::Finished => self.finished,
            StopWhen::Exhausted => {
                self.finished
                    || (self.served == self.recorded
                        && (self.run_end_reported || self.exhausted > 0))
            }
        }
    }
}

impl Running {
    /// Every session's report so far.
    pub fn reports(&self) -> Vec<SessionReport> {
        self.replay.reports()
    }

    /// Waits for SIGINT or SIGTERM, or until `when` says every session is done, then stops and
    /// records the sessions not recorded yet.
    /// Returns every session's report and the recordings that could not be written.
    pub fn wait(mut self, when: StopWhen) -> (Vec<SessionReport>, Vec<String>) {
        if let (Some(rt), Some(mut signals)) = (&self.runtime, self.signals.take()) {
            let replay = self.replay.clone();
            rt.block_on(async move {
                let finished = async {
                    loop {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        if when != StopWhen::Signal && replay.reports().iter().all(|r| r.done(when))
                        {
                            break;
                        }
                    }
                };
                tokio::select! {
                    _ = signals.recv() => {}
                    _ = finished => {}
                }
            });
        }
        self.shutdown();
        let problems = self.replay.record_all();
        (self.replay.reports(), problems)
    }

    fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let (Some(rt), Some(task)) = (self.runtime.as_ref(), self.task.take()) {
            let _ = rt.block_on(task);
        }
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_timeout(Duration::from_secs(1));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown();
    }
}
