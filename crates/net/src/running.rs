//! A replay server running in the background: started on a runtime of its own with signal
//! handling in place before its address is announced, stopped by a signal or when its sessions
//! are done, and recording what is left at the end.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::script::Script;
use super::server::{Options, Replay, SessionReport};

/// How long a connection may take to send a request's head (its request line and headers).
pub(crate) const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a shutdown waits for requests in flight before it records and exits.
pub(crate) const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

impl Replay {
    /// Runs the server on `listener` until `shutdown` completes: then it stops accepting, lets
    /// the requests in flight finish for a moment, and drops the rest.
    pub async fn run(
        self: Arc<Self>,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        serve_until(self.router(), listener, shutdown).await
    }
}

/// Serves `router` on `listener` until `shutdown` completes: then it stops accepting, lets the
/// requests in flight finish for at most `SHUTDOWN_GRACE`, and drops the rest (a stalled client
/// never holds the server open). A connection that sends no complete request head within
/// `HEADER_READ_TIMEOUT` is closed. Writes go out as they are made (no Nagle delay), so a
/// streamed answer's pieces reach the client as they are sent.
pub(crate) async fn serve_until(
    router: axum::Router,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (close, closing) = tokio::sync::watch::channel(false);
    let mut connections = tokio::task::JoinSet::new();
    let shutdown = std::pin::pin!(shutdown);
    let mut shutdown = shutdown;
    loop {
        let (stream, _) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                // Out of file descriptors, say: wait a moment rather than spin.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let service = hyper_util::service::TowerToHyperService::new(router.clone());
        let mut closing = closing.clone();
        connections.spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT);
            let conn = builder.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => return,
                _ = closing.wait_for(|c| *c) => conn.as_mut().graceful_shutdown(),
            }
            let _ = conn.await;
        });
    }
    drop(listener);
    let _ = close.send(true);
    let drained = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(SHUTDOWN_GRACE, drained).await.is_err() {
        connections.abort_all();
    }
    Ok(())
}

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
