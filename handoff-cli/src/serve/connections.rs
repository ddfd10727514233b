//! The server's connections: accepted until it stops, each served over HTTP/1.1 with a deadline
//! for every request's head, and drained when it stops.
//!
//! `axum::serve` gives its connections no timer, so a client that opened a connection and sent
//! part of a request, or nothing, held it for good; enough of them used up the process's file
//! descriptors, and a single one kept a stopping server from ever exiting (it waits for every
//! connection to close). Here a connection that has not sent a whole request head within the
//! idle timeout (a new one, or one kept alive between requests) is closed, and a stop waits for
//! the requests under way for [`GRACE`] at most.

use std::future::Future;
use std::io;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

/// How long a stopping server waits for the requests under way (a waiting `claim-next` ends
/// within a second of the stop, see `api::waiting`) before it leaves them. A store call under
/// way still runs to its end: the runtime waits for its blocking threads.
const GRACE: Duration = Duration::from_secs(10);

/// How long the accept loop rests after an error that is not one connection's (out of file
/// descriptors, say) before it accepts again.
const ACCEPT_REST: Duration = Duration::from_millis(100);

/// Whether the server is stopping: every clone sees the stop once it has begun.
#[derive(Clone)]
pub(crate) struct Stop(watch::Receiver<bool>);

impl Stop {
    /// A stop that begins when `signal` completes (it is polled on the current runtime).
    pub(crate) fn on(signal: impl Future<Output = ()> + Send + 'static) -> Stop {
        let (begin, stop) = watch::channel(false);
        tokio::spawn(async move {
            signal.await;
            let _ = begin.send(true);
        });
        Stop(stop)
    }

    /// Whether the stop has begun.
    pub(crate) fn has_begun(&self) -> bool {
        *self.0.borrow()
    }

    /// Completes once the stop has begun (at once if it has).
    pub(crate) async fn begun(&self) {
        let mut stop = self.0.clone();
        // An error means the sender is gone, which it only is once it has sent.
        let _ = stop.wait_for(|begun| *begun).await;
    }
}

/// Serves `router` on the connections `listener` accepts until `stop` begins, then lets the
/// requests under way finish ([`GRACE`] at most). A connection is closed when a request's head
/// has not fully arrived `idle_timeout` after the connection was opened or its last answer sent.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    stop: Stop,
    idle_timeout: Duration,
) {
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stop.begun() => break,
        };
        // Reap the connections that have ended, so that the set holds only open ones.
        while connections.try_join_next().is_some() {}
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) if concerns_one_connection(&e) => continue,
            Err(_) => {
                tokio::select! {
                    () = tokio::time::sleep(ACCEPT_REST) => continue,
                    () = stop.begun() => break,
                }
            }
        };
        let service = TowerToHyperService::new(router.clone());
        let stop = stop.clone();
        connections.spawn(async move {
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(idle_timeout);
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            tokio::select! {
                // A connection's error (a reset, a malformed request, the head's deadline) is
                // its client's; hyper has answered what could be answered.
                _ = connection.as_mut() => return,
                () = stop.begun() => connection.as_mut().graceful_shutdown(),
            }
            let _ = connection.await;
        });
    }
    drop(listener);
    let drained = async { while connections.join_next().await.is_some() {} };
    // Past the grace, the connections left are dropped with the set.
    let _ = tokio::time::timeout(GRACE, drained).await;
}

/// Whether an `accept` error concerns only the connection being accepted (the next may work).
fn concerns_one_connection(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::Interrupted
    )
}
