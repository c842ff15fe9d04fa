//! The recorder running in the background: its own runtime, signal handling in place before its
//! address is announced, idle sessions written as they go idle, and every open session written
//! when it stops.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::{Heard, Options, Recorder, SessionEnd};
use crate::running::{SHUTDOWN_GRACE, serve_until};
use crate::signals::Signals;

/// A recorder serving in the background.
pub struct RecordingServer {
    /// Where it listens.
    pub addr: SocketAddr,
    recorder: Arc<Recorder>,
    told: tokio::sync::mpsc::UnboundedReceiver<Heard>,
    signals: Option<Signals>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    runtime: Option<tokio::runtime::Runtime>,
}

/// Starts recording on `addr`; returns once it listens.
pub fn spawn(addr: SocketAddr, options: Options) -> std::io::Result<RecordingServer> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let (tell, told) = tokio::sync::mpsc::unbounded_channel();
    let recorder = Arc::new(runtime.block_on(async { Recorder::new(options, tell) })?);
    let listener = runtime.block_on(tokio::net::TcpListener::bind(addr))?;
    let local = listener.local_addr()?;
    let signals = runtime.block_on(async { Signals::install() })?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let router = recorder.clone().router();
    let task = runtime.spawn(async move {
        serve_until(router, listener, async {
            let _ = stopped.await;
        })
        .await
    });
    if let Some(idle) = recorder.options.idle {
        let every = (idle / 4).clamp(Duration::from_millis(10), Duration::from_millis(500));
        let watched = recorder.clone();
        runtime.spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                watched.end_idle();
            }
        });
    }
    Ok(RecordingServer {
        addr: local,
        recorder,
        told,
        signals: Some(signals),
        stop: Some(stop),
        task: Some(task),
        runtime: Some(runtime),
    })
}

impl RecordingServer {
    /// Waits for SIGINT, SIGTERM or SIGHUP, then stops: requests in flight get a moment to
    /// end, and every open session is written. `told` hears of each session's opening and end
    /// as they happen, on the calling thread. Returns how every session ended.
    pub fn wait(mut self, mut told: impl FnMut(&Heard)) -> Vec<SessionEnd> {
        if let (Some(rt), Some(mut signals)) = (&self.runtime, self.signals.take()) {
            let heard = &mut self.told;
            rt.block_on(async {
                loop {
                    tokio::select! {
                        _ = signals.recv() => break,
                        Some(end) = heard.recv() => told(&end),
                    }
                }
            });
        }
        self.shutdown();
        while let Ok(end) = self.told.try_recv() {
            told(&end);
        }
        self.recorder.ends()
    }

    /// Stops now (as a signal would), writing every open session.
    pub fn stop(mut self) -> Vec<SessionEnd> {
        self.shutdown();
        self.recorder.ends()
    }

    fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let (Some(rt), Some(task)) = (self.runtime.as_ref(), self.task.take()) {
            let _ = rt.block_on(task);
            let recorder = self.recorder.clone();
            rt.block_on(async move { recorder.end_all(SHUTDOWN_GRACE).await });
        }
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_timeout(Duration::from_secs(1));
        }
    }
}

impl Drop for RecordingServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}
