//! The pool: connections with the statements prepared on them, at most `pool_size` open, a
//! call waiting for one as long as the lock patience.

use super::*;

/// A connection and the statements prepared on it: a statement prepared once is sent as a
/// name and its parameters afterwards, one round trip where the text costs two.
pub(super) struct Connection {
    pub(super) client: Conn,
    pub(super) statements: HashMap<String, Statement>,
}

/// The store's connections: those idle, and how many are open in all (idle or in use),
/// which `pool_size` bounds. A worker's listening connection is not counted while it
/// listens: it waits for notifications, and its claims take connections of their own.
#[derive(Default)]
pub(super) struct Pool {
    pub(super) idle: Vec<Connection>,
    pub(super) open: usize,
    /// Calls waiting for a connection.
    pub(super) waiting: usize,
}

/// A pooled connection, returned to the pool when dropped unless it broke.
pub(super) struct Pooled<'a> {
    pub(super) conn: Option<Connection>,
    pub(super) backend: &'a PostgresBackend,
    /// Whether it counts against `pool_size` (all but a listening one).
    pub(super) counted: bool,
}

impl<'a> Pooled<'a> {
    fn counted(conn: Connection, backend: &'a PostgresBackend) -> Pooled<'a> {
        Pooled {
            conn: Some(conn),
            backend,
            counted: true,
        }
    }

    /// Stops counting it against `pool_size` while it is held (it listens).
    pub(super) fn uncount(&mut self) {
        if std::mem::replace(&mut self.counted, false) {
            let mut pool = self.backend.pool();
            pool.open -= 1;
            self.backend.wake(pool);
        }
    }

    /// The client and its prepared statements, to be borrowed side by side.
    pub(super) fn split(&mut self) -> (&mut Conn, &mut HashMap<String, Statement>) {
        let conn = self.conn.as_mut().expect("present until dropped");
        (&mut conn.client, &mut conn.statements)
    }
}

impl std::ops::Deref for Pooled<'_> {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        &self.conn.as_ref().expect("present until dropped").client
    }
}

impl std::ops::DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Conn {
        &mut self.conn.as_mut().expect("present until dropped").client
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        let conn = self.conn.take().filter(|conn| !conn.client.is_closed());
        let mut pool = self.backend.pool();
        match conn {
            Some(conn) if self.counted || pool.open < self.backend.options.pool_size => {
                pool.open += usize::from(!self.counted);
                pool.idle.push(conn);
            }
            // Broken (or one too many, from listening): closed as it drops.
            _ => pool.open -= usize::from(self.counted),
        }
        self.backend.wake(pool);
    }
}

impl PostgresBackend {
    pub(super) fn pool(&self) -> MutexGuard<'_, Pool> {
        // Every change to the pool is one assignment: a panic leaves it consistent.
        self.pool.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Unlocks `pool`, waking the calls waiting for a connection, if any, to look again (a
    /// wake-up costs a system call, which most calls need not pay).
    pub(super) fn wake(&self, pool: MutexGuard<'_, Pool>) {
        let waiting = pool.waiting > 0;
        drop(pool);
        if waiting {
            self.freed.notify_all();
        }
    }

    /// A connection from the pool, or a new one with the schema on its search path when
    /// fewer than `pool_size` are open. When all are in use, the call waits for one as long as
    /// the lock patience, then fails with [`Error::Busy`].
    pub(super) fn client(&self) -> Result<Pooled<'_>> {
        let deadline = Instant::now().checked_add(self.options.lock_patience);
        let mut pool = self.pool();
        loop {
            // A connection the server closed (a restart, an idle timeout) is left behind.
            while let Some(conn) = pool.idle.pop() {
                if !conn.client.is_closed() {
                    return Ok(Pooled::counted(conn, self));
                }
                pool.open = pool.open.saturating_sub(1);
            }
            if pool.open < self.options.pool_size {
                pool.open += 1;
                break;
            }
            pool.waiting += 1;
            pool = match deadline {
                None => self
                    .freed
                    .wait(pool)
                    .unwrap_or_else(PoisonError::into_inner),
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        pool.waiting -= 1;
                        return Err(Error::Busy {
                            message: format!(
                                "PostgreSQL: all {} connections of the store (pool_size) were \
                                 in use for longer than its lock patience; nothing was changed",
                                self.options.pool_size
                            ),
                        });
                    }
                    self.freed
                        .wait_timeout(pool, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
            pool.waiting -= 1;
        }
        drop(pool);
        match self.connect_one() {
            Ok(conn) => Ok(Pooled::counted(conn, self)),
            Err(e) => {
                let mut pool = self.pool();
                pool.open -= 1;
                self.wake(pool);
                Err(e)
            }
        }
    }

    /// A new connection with the session set up.
    pub(super) fn connect_one(&self) -> Result<Connection> {
        let what = format!("cannot connect to {}", self.shown);
        let client = Conn::connect(&self.config, self.tls.as_ref(), self.reply_timeout)
            .or_else(|e| match e {
                // libpq's `prefer`: a handshake that fails is tried again without TLS.
                ConnectError::Server(e)
                    if self.tls.is_some()
                        && self.config.get_ssl_mode() == SslMode::Prefer
                        && tls::handshake_failed(&e) =>
                {
                    Conn::connect(&self.config, None, self.reply_timeout)
                }
                e => Err(e),
            })
            .map_err(|e| match e {
                ConnectError::Server(e) => storage(&what, e.into()),
                ConnectError::Runtime(e) => Error::storage(format!("PostgreSQL: {what}: {e}")),
                ConnectError::Silent(limit) => Error::storage(format!(
                    "PostgreSQL: {what}: it accepted the connection and did not finish \
                     starting it within {} s (connect_timeout)",
                    limit.as_secs_f64()
                )),
            })?;
        // Session settings, so that no transaction pays a round trip for them. A lock_timeout
        // of 0 would mean no limit; an idle timeout is never so short that a busy machine's
        // scheduling delay between two statements trips it. Generic plans: the statements are
        // prepared once per connection and their best plan does not depend on the values
        // (keys, times, arrays); left to choose, the server planned the larger writes again
        // on every execution, a sixth of its work in a task's step.
        let patience = self.options.lock_patience.as_millis().max(1);
        let idle = patience.max(IDLE_FLOOR.as_millis());
        client
            .batch_execute(&format!(
                "SET search_path TO \"{}\"; SET lock_timeout = {patience}; \
                 SET idle_in_transaction_session_timeout = {idle}; \
                 SET plan_cache_mode = force_generic_plan; \
                 SET default_transaction_isolation = 'read committed'",
                self.schema
            ))
            .map_err(|e| storage("cannot set up the session", e))?;
        Ok(Connection {
            client,
            statements: HashMap::new(),
        })
    }

    /// Runs a read on a pooled connection; once more on a new connection when the pooled one
    /// turns out to be dead (the server restarted since it was last used), but not after a
    /// call gave up waiting for its reply, which the next would wait as long for.
    pub(super) fn reading<T>(&self, mut op: impl FnMut(&mut Conn) -> Result<T>) -> Result<T> {
        let mut client = self.client()?;
        match op(&mut client) {
            Err(_) if client.is_closed() && client.gave_up().is_none() => {
                drop(client);
                self.drop_idle();
                op(&mut *self.client()?)
            }
            other => other,
        }
    }

    /// Closes every idle connection, once a pooled one turned out dead. An idle connection
    /// does not notice that the server went away (nothing reads it); its next call fails (the
    /// server's "terminating connection" or an I/O error) and only then closes it. The others
    /// were opened to the same server and most likely died with it (a restart, a failover):
    /// kept, each would fail one more call after the server is back; dropped, the retry
    /// connects anew.
    pub(super) fn drop_idle(&self) {
        let mut pool = self.pool();
        pool.open -= pool.idle.len();
        pool.idle.clear();
        self.wake(pool);
    }
}
