//! One connection to the server, for the synchronous core: its calls block the calling thread,
//! which drives the connection on a current-thread runtime of its own (so no async runtime
//! leaks into the library's API or its bindings).
//!
//! It exists for what the driver's synchronous client cannot do: send a statement in the same
//! round trip as the `BEGIN` before it or the `COMMIT` after it. A write transaction that used
//! to cost `BEGIN`, its statements and `COMMIT` one round trip each now costs one round trip
//! per statement.
//!
//! Each call waits for its reply at most the connection's reply timeout. Past it the
//! connection is closed and the call fails with [`CallError::NoReply`]: a server process that
//! is stopped, or stuck on a disk that no longer answers, keeps its socket open and its
//! kernel acknowledging, so neither TCP's limits nor keepalives would ever end the wait.

use std::cell::Cell;
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::runtime::{Runtime, RuntimeFlavor};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{
    AsyncMessage, Client, Config, Connection, Error, NoTls, Row, SimpleQueryMessage, Statement,
    ToStatement,
};
use tokio_postgres_rustls::MakeRustlsConnect;

/// Parameters of a statement, as the driver takes them.
pub(super) type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

/// How every write transaction begins: at the session's isolation level, READ COMMITTED (set
/// with the session's other settings). Naming the level here would set it in every transaction,
/// and PostgreSQL then resets every setting it knows at the transaction's end.
const BEGIN: &str = "BEGIN";

/// A connection and the runtime that drives it.
pub(super) struct Conn {
    runtime: Driver,
    client: Client,
    /// The task that reads the connection's socket; aborted, it closes the connection.
    driver: JoinHandle<()>,
    /// How long a call waits for its reply; `None`: for as long as it takes.
    reply_timeout: Cell<Option<Duration>>,
    /// The reply timeout a call gave up after, which closed the connection.
    gave_up: Cell<Option<Duration>>,
    /// One message per notification the server delivered on a channel this connection
    /// listens on.
    notified: mpsc::UnboundedReceiver<()>,
}

/// The current-thread runtime that drives one connection, on the calling thread.
///
/// The core is synchronous, but its callers may not be: an MCP server drops its store inside
/// its async runtime, and a Rust caller may call the store from an `async fn`. Tokio refuses
/// both with a panic (blocking on a runtime from within another, and waiting for a runtime's
/// threads as it drops), so a call made on an async thread blocks in a way tokio allows
/// there, and dropping does not wait.
struct Driver(Option<Runtime>);

impl Driver {
    fn new() -> std::io::Result<Driver> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(Driver(Some(runtime)))
    }

    fn runtime(&self) -> &Runtime {
        // Taken only as it drops.
        self.0
            .as_ref()
            .unwrap_or_else(|| unreachable!("a connection's runtime is used after its drop"))
    }

    /// Runs `future` to its end, driving the connection meanwhile.
    fn block_on<F>(&self, future: F) -> F::Output
    where
        F: Future + Send,
        F::Output: Send,
    {
        let runtime = self.runtime();
        match tokio::runtime::Handle::try_current().map(|handle| handle.runtime_flavor()) {
            // No async runtime here: the usual case.
            Err(_) => runtime.block_on(future),
            // A multi-thread runtime's thread: tokio hands a worker's other tasks to another
            // thread for the call, and lets a `spawn_blocking` thread (the MCP server's and
            // `serve`'s calls) block as it is.
            Ok(RuntimeFlavor::MultiThread) => {
                tokio::task::block_in_place(|| runtime.block_on(future))
            }
            // A current-thread runtime has no thread to spare: the call blocks one of its own
            // (about 35 µs more).
            Ok(_) => std::thread::scope(|scope| {
                scope
                    .spawn(|| runtime.block_on(future))
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            }),
        }
    }

    fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.runtime().spawn(future)
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            // Its tasks (the connection's driver) end now; a host name lookup still under
            // way finishes on its own thread.
            runtime.shutdown_background();
        }
    }
}

/// Why a call failed: the driver's error, or no reply within the reply timeout.
#[derive(Debug)]
pub(super) enum CallError {
    Driver(Error),
    /// The server sent no reply within this long; the connection was closed (a late reply
    /// could not be told apart from the next call's).
    NoReply(Duration),
}

impl From<Error> for CallError {
    fn from(e: Error) -> CallError {
        CallError::Driver(e)
    }
}

impl CallError {
    /// The driver's error, when it was one.
    pub(super) fn driver(&self) -> Option<&Error> {
        match self {
            CallError::Driver(e) => Some(e),
            CallError::NoReply(_) => None,
        }
    }

    /// The server's SQLSTATE, when the server refused.
    pub(super) fn code(&self) -> Option<&SqlState> {
        self.driver().and_then(Error::code)
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Driver(e) => e.fmt(f),
            CallError::NoReply(limit) => write!(
                f,
                "the server sent no reply within {} s (reply_timeout) and the connection was \
                 closed",
                limit.as_secs_f64()
            ),
        }
    }
}

impl std::error::Error for CallError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.driver().and_then(std::error::Error::source)
    }
}

/// Why a connection could not be made: the runtime, the server, or no answer in time.
pub(super) enum ConnectError {
    Runtime(std::io::Error),
    Server(Error),
    /// The server (or whatever listens at its address) accepted the connection and did not
    /// finish its start within this long.
    Silent(Duration),
}

impl Conn {
    /// Connects as `config` says, over TLS when `tls` is given (the config's `sslmode` says
    /// whether TLS may be skipped when the server does not offer it).
    ///
    /// The config's connect timeout bounds the whole start, per host: the driver applies it
    /// to the socket's connect only, and something that accepts the connection and never
    /// answers (a stalled server, a proxy with nothing behind it, the wrong port) would
    /// otherwise keep the caller waiting for good.
    pub(super) fn connect(
        config: &Config,
        tls: Option<&MakeRustlsConnect>,
        reply_timeout: Option<Duration>,
    ) -> Result<Conn, ConnectError> {
        let runtime = Driver::new().map_err(ConnectError::Runtime)?;
        // A limit too large to add up is no limit (a caller's "wait as long as it takes").
        let hosts = u32::try_from(config.get_hosts().len().max(1)).unwrap_or(u32::MAX);
        let limit = config
            .get_connect_timeout()
            .and_then(|each| each.checked_mul(hosts));
        let (tell, notified) = mpsc::unbounded_channel();
        let (client, driver) = match tls {
            None => {
                let (client, connection) =
                    runtime.block_on(within(limit, config.connect(NoTls)))?;
                (client, runtime.spawn(drive(connection, tell)))
            }
            Some(tls) => {
                let (client, connection) =
                    runtime.block_on(within(limit, config.connect(tls.clone())))?;
                (client, runtime.spawn(drive(connection, tell)))
            }
        };
        Ok(Conn {
            runtime,
            client,
            driver,
            reply_timeout: Cell::new(reply_timeout),
            gave_up: Cell::new(None),
            notified,
        })
    }

    /// Calls made meanwhile wait for their replies as long as it takes (a migration rewrites
    /// whole tables); then the reply timeout applies again.
    pub(super) fn without_reply_timeout<T>(&self, work: impl FnOnce(&Conn) -> T) -> T {
        let limit = self.reply_timeout.replace(None);
        let out = work(self);
        self.reply_timeout.set(limit);
        out
    }

    /// Blocks on `future` until it is done, or until the reply timeout, when the connection
    /// is closed.
    fn run<T, F>(&self, future: F) -> Result<T, CallError>
    where
        F: Future<Output = Result<T, Error>> + Send,
        T: Send,
    {
        if let Some(limit) = self.gave_up() {
            return Err(CallError::NoReply(limit));
        }
        let Some(limit) = self.reply_timeout.get() else {
            return Ok(self.runtime.block_on(future)?);
        };
        // The timer is made inside the runtime: made outside, it finds no clock and panics.
        self.runtime
            .block_on(async { tokio::time::timeout(limit, future).await })
            .map_err(|_| {
                // The request may still sit in the connection's queue or be half sent: only
                // ending the connection makes sure nothing more of it goes.
                self.driver.abort();
                self.gave_up.set(Some(limit));
                CallError::NoReply(limit)
            })?
            .map_err(CallError::Driver)
    }

    pub(super) fn is_closed(&self) -> bool {
        self.gave_up().is_some() || self.client.is_closed()
    }

    /// The reply timeout after which a call gave up waiting (and closed the connection).
    pub(super) fn gave_up(&self) -> Option<Duration> {
        self.gave_up.get()
    }

    pub(super) fn prepare(&self, sql: &str) -> Result<Statement, CallError> {
        self.run(self.client.prepare(sql))
    }

    pub(super) fn query<T>(&self, statement: &T, params: Params<'_>) -> Result<Vec<Row>, CallError>
    where
        T: ?Sized + ToStatement + Sync,
    {
        self.run(self.client.query(statement, params))
    }

    pub(super) fn query_opt<T>(
        &self,
        statement: &T,
        params: Params<'_>,
    ) -> Result<Option<Row>, CallError>
    where
        T: ?Sized + ToStatement + Sync,
    {
        self.run(self.client.query_opt(statement, params))
    }

    pub(super) fn query_one<T>(&self, statement: &T, params: Params<'_>) -> Result<Row, CallError>
    where
        T: ?Sized + ToStatement + Sync,
    {
        self.run(self.client.query_one(statement, params))
    }

    pub(super) fn execute<T>(&self, statement: &T, params: Params<'_>) -> Result<u64, CallError>
    where
        T: ?Sized + ToStatement + Sync,
    {
        self.run(self.client.execute(statement, params))
    }

    pub(super) fn batch_execute(&self, sql: &str) -> Result<(), CallError> {
        self.run(self.client.batch_execute(sql))
    }

    pub(super) fn simple_query(&self, sql: &str) -> Result<Vec<SimpleQueryMessage>, CallError> {
        self.run(self.client.simple_query(sql))
    }

    /// Runs the prepared `statement` in a write transaction, in one round trip with the
    /// transaction's `BEGIN` (when `begin`) and its `COMMIT` (when `commit`); its rows.
    ///
    /// The statement must be prepared: the driver sends each request when it is first polled,
    /// and a statement given as text would be parsed first, its own round trip, after which
    /// the `COMMIT` would already have gone. When the statement fails, the `COMMIT` finds the
    /// transaction aborted and rolls it back (the server answers `ROLLBACK`, not an error), so
    /// the statement's error is the one returned. `BEGIN` fails only when the connection does,
    /// and then so does every request after it.
    pub(super) fn query_in_transaction(
        &self,
        begin: bool,
        statement: &Statement,
        params: Params<'_>,
        commit: bool,
    ) -> Result<Vec<Row>, CallError> {
        self.run(around(
            &self.client,
            begin,
            self.client.query(statement, params),
            commit,
        ))
    }

    /// [`Conn::query_in_transaction`] for a statement whose rows are not wanted: how many
    /// rows it changed.
    pub(super) fn execute_in_transaction(
        &self,
        begin: bool,
        statement: &Statement,
        params: Params<'_>,
        commit: bool,
    ) -> Result<u64, CallError> {
        self.run(around(
            &self.client,
            begin,
            self.client.execute(statement, params),
            commit,
        ))
    }

    /// Blocks until a notification arrives on a channel this connection listens on, or for
    /// `timeout`, then drops the others already delivered (the caller's next look covers
    /// them too). An error when the connection is gone.
    pub(super) fn wait_for_notification(&mut self, timeout: Duration) -> Result<(), CallError> {
        let Conn {
            runtime,
            client,
            notified,
            ..
        } = self;
        // Waiting drives the connection, which reads what the server sent meanwhile. (The
        // timer is made inside the runtime: made outside, it finds no clock and panics.)
        let arrived =
            runtime.block_on(async { tokio::time::timeout(timeout, notified.recv()).await });
        if matches!(arrived, Ok(None)) || client.is_closed() {
            // The connection ended: a call says how.
            runtime.block_on(client.batch_execute(""))?;
        }
        while notified.try_recv().is_ok() {}
        Ok(())
    }
}

/// `BEGIN`, then `work`, then `COMMIT`, each only when asked for, polled together so that
/// their requests leave in that order before any reply is awaited.
async fn around<T>(
    client: &Client,
    begin: bool,
    work: impl Future<Output = Result<T, Error>>,
    commit: bool,
) -> Result<T, Error> {
    let begun = async {
        match begin {
            true => client.batch_execute(BEGIN).await,
            false => Ok(()),
        }
    };
    let committed = async {
        match commit {
            true => client.batch_execute("COMMIT").await,
            false => Ok(()),
        }
    };
    let (begun, done, committed) = join3(begun, work, committed).await;
    begun?;
    let done = done?;
    committed?;
    Ok(done)
}

/// `start`, a connection's start, given at most `limit`.
async fn within<T>(
    limit: Option<Duration>,
    start: impl Future<Output = Result<T, Error>>,
) -> Result<T, ConnectError> {
    match limit {
        Some(limit) => tokio::time::timeout(limit, start)
            .await
            .map_err(|_| ConnectError::Silent(limit))?
            .map_err(ConnectError::Server),
        None => start.await.map_err(ConnectError::Server),
    }
}

/// Reads the connection's socket while some call of its [`Conn`] blocks: routes the replies,
/// and forwards notifications to `tell` (notices are dropped).
async fn drive<S, T>(mut connection: Connection<S, T>, tell: mpsc::UnboundedSender<()>)
where
    S: AsyncRead + AsyncWrite + Unpin,
    T: AsyncRead + AsyncWrite + Unpin,
{
    while let Some(message) = poll_fn(|cx| connection.poll_message(cx)).await {
        match message {
            Ok(AsyncMessage::Notification(_)) => {
                let _ = tell.send(());
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
}

/// Polls three futures together, in order, until all are done: each sends its request on its
/// first poll, so the three leave before any reply is awaited.
async fn join3<A: Future, B: Future, C: Future>(
    a: A,
    b: B,
    c: C,
) -> (A::Output, B::Output, C::Output) {
    let (mut a, mut b, mut c) = (pin!(a), pin!(b), pin!(c));
    let (mut done_a, mut done_b, mut done_c) = (None, None, None);
    poll_fn(move |cx| {
        if done_a.is_none()
            && let Poll::Ready(out) = a.as_mut().poll(cx)
        {
            done_a = Some(out);
        }
        if done_b.is_none()
            && let Poll::Ready(out) = b.as_mut().poll(cx)
        {
            done_b = Some(out);
        }
        if done_c.is_none()
            && let Poll::Ready(out) = c.as_mut().poll(cx)
        {
            done_c = Some(out);
        }
        if done_a.is_some()
            && done_b.is_some()
            && done_c.is_some()
            && let (Some(a), Some(b), Some(c)) = (done_a.take(), done_b.take(), done_c.take())
        {
            return Poll::Ready((a, b, c));
        }
        Poll::Pending
    })
    .await
}
