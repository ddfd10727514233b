//! The PostgreSQL backend (feature `postgres`): one schema shared by processes on many
//! machines.
//!
//! Rows are locked explicitly, so writers do not queue behind one another: a record with
//! `SELECT … FOR UPDATE` when a transaction reads it to change it, the next claimable record
//! with `FOR UPDATE SKIP LOCKED` (claimers never wait for each other), a task's path with a
//! transaction-scoped advisory lock before the chain policy reads it. A transaction that meets
//! a serialisation failure, a deadlock or a concurrent create of the same id runs again from
//! the start (the store's write closure allows it).
//!
//! Event order: a transaction's events are written at its end, after the record locks that
//! order one record's (and, under the chain policy, one task's) changes, so `seq` increases
//! along every record's history and every task's path. Writers number their events while
//! holding a store-wide advisory lock in *shared* mode until commit, so they never wait for one
//! another (their commits are flushed together); a reader takes that lock in exclusive mode for
//! an instant, which waits out the writers in flight, and reads no event above the highest `seq`
//! it then sees. A reader following the log with `after = <last seq>` thus never skips an event
//! that commits late with a smaller number.
//!
//! Records are stored as in SQLite: the creation-time JSON (`body`, written once) plus the
//! lifecycle fields in columns.
//!
//! This file is the backend itself ([`PostgresBackend`]: connecting, reads, the [`Backend`]
//! calls); its parts, one job each: `url` (what a URL says), `conn` (one connection, driven on
//! its own runtime), `tls` and `passfile` (how it authenticates), `pool` (connections and their
//! prepared statements), `schema` (version and migrations), `sql` (statements and rows),
//! `errors` (what a failure means), `batch` and `tx` (the write transaction).

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use tokio_postgres::config::SslMode;
use tokio_postgres::error::{Severity, SqlState};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Row, Statement};

use crate::chain::Hop;
use crate::clock::{from_micros, micros, opt_micros};
use crate::error::{Error, Result};
use crate::machine::{Change, Event, NewEvent};
use crate::record::{Handoff, Kind, Status};
use crate::store::{
    Backend, Capabilities, Doc, EventFilter, Exported, ListFilter, ReadSecret, Tx, WorkSignal,
    stored_digest,
};

mod batch;
mod conn;
mod errors;
mod metrics;
mod passfile;
mod pool;
mod schema;
mod sql;
mod tls;
mod tx;
mod url;

use batch::DocWrites;
use conn::{CallError, Conn, ConnectError, Params};
use errors::{connection_lost, is_retryable, storage};
use pool::{Pool, Pooled};
pub use schema::VERSION;
use sql::{
    DOC_SQL, HOP_COLUMNS, RECORD_COLUMNS, SECRET_COLUMN, doc_from_row, docs_sql, event_from_row,
    hop_from_row, record_from_row,
};
use tls::TlsParams;
use tokio_postgres_rustls::MakeRustlsConnect;
use tx::PgTx;
use url::{Target, parse_url};

/// Advisory lock keys (in the schema's own key space: see [`PostgresBackend::lock_key`]).
const MIGRATION_LOCK: i64 = 1;
const EVENT_LOCK: i64 = 2;

/// The shortest time the server lets one of our transactions sit idle before ending it.
const IDLE_FLOOR: Duration = Duration::from_secs(10);

/// How much longer than the lock patience a call waits for its reply, unless the URL's
/// `reply_timeout` says otherwise: a statement may wait that long for a lock, then run.
const REPLY_MARGIN: Duration = Duration::from_secs(60);

/// How often one write runs again after serialisation failures before it gives up.
const MAX_ATTEMPTS: usize = 16;

/// How a PostgreSQL store connects.
#[derive(Clone, Debug)]
pub struct PostgresOptions {
    /// How many connections the store keeps open at most (default 8). A call that finds
    /// them all in use waits for one as long as the lock patience, then fails with
    /// [`Error::Busy`]; a worker waiting in `claim_next` for work does not hold one of them.
    pub pool_size: usize,
    /// How long connecting may take, per host: the socket, TLS, authentication (default 10 s;
    /// the URL's `connect_timeout`, when it names one, instead).
    pub connect_timeout: Duration,
    /// How long a statement waits for a lock another session holds (a record, a task's path,
    /// the event log's end) before the call fails with [`Error::Busy`], and how long one of
    /// this store's transactions may sit idle before the server ends it (at least 10 s), so
    /// that a stopped process frees what it locked (default 60 s). A call waits for the
    /// server's reply up to a minute longer, then fails with a storage error and its
    /// connection is closed (a server stopped or stuck on its disk never answers); the URL's
    /// `reply_timeout=SECONDS` sets that limit instead, `0` for none.
    pub lock_patience: Duration,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            pool_size: 8,
            connect_timeout: Duration::from_secs(10),
            lock_patience: Duration::from_secs(60),
        }
    }
}

/// A store in one PostgreSQL schema.
pub struct PostgresBackend {
    config: tokio_postgres::Config,
    /// How connections are encrypted; `None`: not at all.
    tls: Option<MakeRustlsConnect>,
    schema: String,
    /// The schema's own advisory-lock namespace, so stores sharing a database never block
    /// one another.
    lock_base: i64,
    /// How long a call waits for the server's reply (`None`: as long as it takes).
    reply_timeout: Option<Duration>,
    pool: Mutex<Pool>,
    /// Signalled whenever a connection goes back to the pool or closes.
    freed: Condvar,
    options: PostgresOptions,
    /// The URL without its password, for messages.
    shown: String,
}

impl std::fmt::Debug for PostgresBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresBackend")
            .field("url", &self.shown)
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl PostgresBackend {
    /// Connects to the schema the URL names (`?schema=NAME`, default `public`), creating it
    /// and its tables, or migrating them, as needed.
    pub fn connect(url: &str, options: &PostgresOptions) -> Result<PostgresBackend> {
        let backend = PostgresBackend::unconnected(url, options)?;
        backend.migrate()?;
        Ok(backend)
    }

    /// The store the URL names, before any connection is made.
    fn unconnected(url: &str, options: &PostgresOptions) -> Result<PostgresBackend> {
        let Target {
            mut config,
            schema,
            tls,
            reply_timeout,
            shown,
        } = parse_url(url)?;
        passfile::fill_in(&mut config);
        // The URL's own `connect_timeout`, when it names one, is the more particular wish.
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(options.connect_timeout);
        }
        let reply_timeout =
            reply_timeout.unwrap_or_else(|| options.lock_patience.checked_add(REPLY_MARGIN));
        let lock_base = i64::from(crc32(schema.as_bytes())) << 8;
        Ok(PostgresBackend {
            config,
            tls,
            schema,
            lock_base,
            reply_timeout,
            pool: Mutex::new(Pool::default()),
            freed: Condvar::new(),
            options: options.clone(),
            shown,
        })
    }

    fn lock_key(&self, key: i64) -> i64 {
        self.lock_base | key
    }

    /// The schema's name.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The channel on which commits that make work claimable notify waiting workers.
    fn channel(&self) -> String {
        format!("handoff_work_{}", self.schema)
    }
}

/// A worker's subscription: a pooled connection listening on the store's channel until it is
/// dropped.
struct Listening<'a> {
    client: Pooled<'a>,
}

impl WorkSignal for Listening<'_> {
    fn wait(&mut self, timeout: Duration) -> Result<()> {
        // One notification is enough to look again; the others are dropped so the next wait
        // does not wake for work this look already saw.
        self.client
            .wait_for_notification(timeout)
            .map_err(|e| storage("lost the notification channel", e))
    }
}

impl Drop for Listening<'_> {
    fn drop(&mut self) {
        // A connection going back to the pool must not keep collecting notifications.
        if self.client.batch_execute("UNLISTEN *").is_err() {
            self.client.conn = None;
        }
    }
}

/// CRC-32 (IEEE) of `bytes`: a stable per-schema advisory-lock namespace.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
        }
    }
    !crc
}

impl Backend for PostgresBackend {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            durable: true,
            shared_by_processes: true,
            shared_by_machines: true,
            backup: true,
            wakes_waiters: true,
        }
    }

    /// One `REPEATABLE READ` read-only transaction: its snapshot holds exactly the
    /// transactions committed when it began (so no event of a writer still in flight, nor its
    /// records), and writers go on meanwhile. Each table is read in pages by its key.
    fn export(&self, sink: &mut dyn FnMut(Exported) -> Result<()>) -> Result<()> {
        let client = self.client()?;
        client
            .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .map_err(|e| storage("cannot begin the backup's read", e))?;
        match export_from(&client, sink) {
            Ok(()) => client
                .batch_execute("COMMIT")
                .map_err(|e| storage("cannot end the backup's read", e)),
            Err(e) => {
                let _ = client.batch_execute("ROLLBACK");
                Err(e)
            }
        }
    }

    fn write(&self, work: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut pooled = self.client()?;
            let (client, statements) = pooled.split();
            // The driver's error, and the closure's when it was the closure that failed; and
            // whether it may have done anything.
            type Outcome = std::result::Result<(), (Option<CallError>, Option<Error>)>;
            let (outcome, untouched): (Outcome, bool) = {
                let mut handle = PgTx {
                    conn: client,
                    begun: false,
                    ended: false,
                    untouched: true,
                    statements,
                    error: None,
                    events: Vec::new(),
                    unsent: None,
                    unsent_inserts: Vec::new(),
                    unsent_docs: DocWrites::default(),
                    path: None,
                    read_secret: ReadSecret::default(),
                    locked_tasks: Vec::new(),
                    event_lock: self.lock_key(EVENT_LOCK),
                    task_lock_base: self.lock_base,
                    channel: self.channel(),
                };
                let outcome = match work(&mut handle) {
                    Ok(()) => handle.finish().map_err(|pg| (Some(pg), None)),
                    Err(e) => Err((handle.error.take(), Some(e))),
                };
                (outcome, handle.untouched)
                // Dropped unfinished, the transaction is rolled back.
            };
            let (pg, refusal) = match outcome {
                Ok(()) => return Ok(()),
                Err((Some(pg), refusal)) => (pg, refusal),
                // The closure refused (a rule, a missing record): the connection is fine.
                Err((None, refusal)) => {
                    return Err(refusal.unwrap_or_else(|| Error::storage("the write failed")));
                }
            };
            // A dead pooled connection, found on the transaction's first round trip: nothing
            // was done, so a new connection may begin again.
            if connection_lost(&pg) && untouched && attempt < MAX_ATTEMPTS {
                drop(pooled);
                self.drop_idle();
                continue;
            }
            // A statement prepared in a transaction that failed is not trusted again (a
            // migration by another process may also have changed what it returns).
            pooled.split().1.clear();
            if is_retryable(&pg) && attempt < MAX_ATTEMPTS {
                std::thread::sleep(Duration::from_micros(fastrand::u64(100..2_000)));
                continue;
            }
            return Err(refusal.unwrap_or_else(|| storage("the write failed", pg)));
        }
    }

    fn get(&self, id: &str) -> Result<Option<Handoff>> {
        self.reading(|client| {
            client
                .query_opt(
                    &format!("SELECT {RECORD_COLUMNS} FROM handoffs WHERE id = $1"),
                    &[&id],
                )
                .map_err(|e| storage("cannot read a record", e))?
                .map(|row| record_from_row(&row))
                .transpose()
        })
    }

    fn list(&self, filter: &ListFilter) -> Result<Vec<Handoff>> {
        let (sql, args) = filter.sql(RECORD_COLUMNS, |n| format!("${n}"));
        self.reading(|client| {
            let params: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a as _).collect();
            client
                .query(&sql, &params)
                .map_err(|e| storage("cannot list records", e))?
                .iter()
                .map(record_from_row)
                .collect()
        })
    }

    fn name(&self) -> &'static str {
        "postgres"
    }

    fn metrics(&self) -> Result<crate::metrics::Metrics> {
        self.metrics_in_sql()
    }

    fn ready(&self) -> Result<()> {
        self.schema_ready()
    }

    fn queue_counts(&self) -> Result<Vec<super::backend::QueueCount>> {
        self.reading(|client| {
            let rows = client
                .query(
                    "SELECT status, to_agent, count(*) FROM handoffs \
                     WHERE kind <> 'checkpoint' GROUP BY status, to_agent",
                    &[],
                )
                .map_err(|e| storage("cannot count records", e))?;
            Ok(super::backend::QueueCount::from_tally(rows.iter().map(
                |row| {
                    let status: String = row.get(0);
                    let to_agent: Option<String> = row.get(1);
                    let count: i64 = row.get(2);
                    ((status, to_agent), u64::try_from(count).unwrap_or_default())
                },
            )))
        })
    }

    fn events(&self, filter: &EventFilter) -> Result<Vec<Event>> {
        let after = filter
            .after
            .map_or(0, |seq| i64::try_from(seq).unwrap_or(i64::MAX));
        let mut sql = String::from(
            "SELECT e.seq, e.handoff_id, e.at, e.actor, e.detail FROM events AS e \
             WHERE e.seq > $1 AND e.seq <= $2",
        );
        let mut texts: Vec<&str> = Vec::new();
        if let Some(id) = &filter.handoff_id {
            texts.push(id);
            sql.push_str(&format!(" AND e.handoff_id = ${}", texts.len() + 2));
        }
        if let Some(task) = &filter.task_id {
            texts.push(task);
            sql.push_str(&format!(
                " AND e.handoff_id IN (SELECT id FROM handoffs WHERE task_id = ${})",
                texts.len() + 2
            ));
        }
        sql.push_str(" ORDER BY e.seq");
        if let Some(limit) = filter.limit {
            sql.push_str(&format!(
                " LIMIT {}",
                i64::try_from(limit).unwrap_or(i64::MAX)
            ));
        }
        let event_lock = self.lock_key(EVENT_LOCK);
        self.reading(|client| {
            let settled = settled_seq(client, event_lock)?;
            let mut params: Vec<&(dyn ToSql + Sync)> = vec![&after, &settled];
            params.extend(texts.iter().map(|t| t as &(dyn ToSql + Sync)));
            client
                .query(&sql, &params)
                .map_err(|e| storage("cannot read events", e))?
                .iter()
                .map(event_from_row)
                .collect()
        })
    }

    fn hops(&self, task_id: &str) -> Result<Vec<Hop>> {
        self.reading(|client| {
            client
                .query(
                    &format!("SELECT {HOP_COLUMNS} FROM handoffs WHERE task_id = $1 ORDER BY pos"),
                    &[&task_id],
                )
                .map_err(|e| storage("cannot read a chain", e))?
                .iter()
                .map(hop_from_row)
                .collect()
        })
    }

    fn subscribe(&self) -> Result<Box<dyn WorkSignal + '_>> {
        let listen = format!("LISTEN \"{}\"", self.channel());
        let mut client = self.client()?;
        if let Err(e) = client.batch_execute(&listen) {
            if !client.is_closed() {
                return Err(storage("cannot listen for work", e));
            }
            // A dead pooled connection: once more on a new one, as in `reading`.
            drop(client);
            self.drop_idle();
            client = self.client()?;
            client
                .batch_execute(&listen)
                .map_err(|e| storage("cannot listen for work", e))?;
        }
        client.uncount();
        Ok(Box::new(Listening { client }))
    }

    fn setting(&self, key: &str) -> Result<Option<String>> {
        self.reading(|client| {
            Ok(client
                .query_opt("SELECT value FROM settings WHERE key = $1", &[&key])
                .map_err(|e| storage("cannot read a setting", e))?
                .map(|row| row.get(0)))
        })
    }

    fn doc(&self, kind: &str, key: &str) -> Result<Option<Doc>> {
        self.reading(|client| {
            client
                .query_opt(DOC_SQL, &[&kind, &key])
                .map_err(|e| storage("cannot read a document", e))?
                .map(|row| doc_from_row(&row))
                .transpose()
        })
    }

    fn docs(
        &self,
        kind: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Doc)>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let after = after.unwrap_or("");
        let (sql, end) = docs_sql(prefix);
        self.reading(|client| {
            client
                .query(sql, &[&kind, &prefix, &after, &limit, &end])
                .map_err(|e| storage("cannot list documents", e))?
                .iter()
                .map(|row| Ok((row.get::<_, String>(2), doc_from_row(row)?)))
                .collect()
        })
    }
}

/// How many rows [`Backend::export`] reads at a time.
const EXPORT_PAGE: i64 = 1000;

/// [`Backend::export`] inside the snapshot transaction open on `client`.
fn export_from(client: &Conn, sink: &mut dyn FnMut(Exported) -> Result<()>) -> Result<()> {
    let read = |e| storage("cannot read the store for a backup", e);
    for row in client
        .query(
            "SELECT key, value FROM settings ORDER BY key COLLATE \"C\"",
            &[],
        )
        .map_err(read)?
    {
        sink(Exported::Setting {
            key: row.get(0),
            value: row.get(1),
        })?;
    }
    let mut after = 0i64;
    loop {
        let rows = client
            .query(
                &format!(
                    "SELECT {RECORD_COLUMNS}, claim_secret, pos FROM handoffs WHERE pos > $1 \
                     ORDER BY pos LIMIT $2"
                ),
                &[&after, &EXPORT_PAGE],
            )
            .map_err(read)?;
        let Some(last) = rows.last() else { break };
        after = last.get(SECRET_COLUMN + 1);
        for row in &rows {
            sink(Exported::Record {
                record: Box::new(record_from_row(row)?),
                claim_secret: stored_digest(row.get(SECRET_COLUMN)),
            })?;
        }
    }
    let mut after = 0i64;
    loop {
        let rows = client
            .query(
                "SELECT seq, handoff_id, at, actor, detail FROM events WHERE seq > $1 \
                 ORDER BY seq LIMIT $2",
                &[&after, &EXPORT_PAGE],
            )
            .map_err(read)?;
        let Some(last) = rows.last() else { break };
        after = last.get(0);
        for row in &rows {
            sink(Exported::Event(event_from_row(row)?))?;
        }
    }
    // Kinds in byte order too, as every other store hands them out.
    let (mut kind, mut key) = (String::new(), String::new());
    loop {
        let rows = client
            .query(
                "SELECT version, body, kind, key FROM docs \
                 WHERE kind COLLATE \"C\" > $1 OR (kind = $1 AND key > $2) \
                 ORDER BY kind COLLATE \"C\", key LIMIT $3",
                &[&kind, &key, &EXPORT_PAGE],
            )
            .map_err(read)?;
        let Some(last) = rows.last() else { break };
        (kind, key) = (last.get(2), last.get(3));
        for row in &rows {
            sink(Exported::Doc {
                doc: doc_from_row(row)?,
                kind: row.get(2),
                key: row.get(3),
            })?;
        }
    }
    Ok(())
}

/// The highest event `seq` below which no transaction in flight can still commit an event: the
/// event lock, taken exclusively, waits out the writers holding it shared (see the module doc).
/// One round trip; the lock is held for the length of `max`. A writer stopped between its
/// events and its commit delays the reader at most the session's `lock_timeout` (then `Busy`),
/// and the server ends the stopped writer's transaction after as long.
fn settled_seq(client: &mut Conn, event_lock: i64) -> Result<i64> {
    let sql = format!(
        "BEGIN; SELECT pg_advisory_xact_lock({event_lock}); \
         SELECT COALESCE(max(seq), 0) FROM events; COMMIT"
    );
    let messages = match client.simple_query(&sql) {
        Ok(messages) => messages,
        Err(e) => {
            // The failed batch leaves its transaction open on the connection.
            let _ = client.batch_execute("ROLLBACK");
            return Err(storage("cannot read the event log's end", e));
        }
    };
    // The last row is `max`'s (the lock's comes first).
    messages
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0),
            _ => None,
        })
        .next_back()
        .and_then(|max| max.parse().ok())
        .ok_or_else(|| Error::storage("cannot read the event log's end"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::sql::prefix_end;
    use super::url::{LOST_AFTER, PROBE_AFTER, PROBE_EVERY, PROBES};
    use super::*;

    #[test]
    fn a_prefix_ends_where_no_key_can_start_with_it() {
        assert_eq!(prefix_end(""), None);
        assert_eq!(prefix_end("task-1/").as_deref(), Some("task-10"));
        assert_eq!(prefix_end("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(prefix_end("\u{10FFFF}"), None);
        assert_eq!(prefix_end("\u{D7FF}").as_deref(), Some("\u{E000}"));
        for (prefix, key) in [("t/", "t/\u{10FFFF}x"), ("é", "é\u{10FFFF}")] {
            let end = prefix_end(prefix).unwrap();
            assert!(
                key.starts_with(prefix) && key < end.as_str(),
                "{prefix} {key}"
            );
        }
    }

    /// The port of something that accepts connections and never answers.
    fn silent_listener() -> u16 {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept() {
                held.push(socket);
            }
        });
        port
    }

    /// Something that accepts connections and never answers (the wrong port, a stalled
    /// server, a proxy with nothing behind it): connecting gives up after `connect_timeout`
    /// with a storage error, where the driver's own timeout covers the socket's connect only.
    #[test]
    fn a_listener_that_never_answers_is_a_storage_error_not_a_hang() {
        let port = silent_listener();
        let (done, outcome) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let options = PostgresOptions {
                connect_timeout: Duration::from_millis(300),
                ..PostgresOptions::default()
            };
            let url = format!("postgres://u@127.0.0.1:{port}/db");
            let _ = done.send(PostgresBackend::connect(&url, &options).map(drop));
        });
        // A liveness check, not a timing one: before the fix the connect never returned.
        let result = outcome
            .recv_timeout(Duration::from_secs(120))
            .expect("connecting to a silent listener hung");
        let err = result.unwrap_err();
        assert!(
            matches!(err, Error::Storage { .. }) && err.to_string().contains("did not finish"),
            "{err}"
        );
    }

    /// A call that finds all `pool_size` connections in use waits for one no longer than
    /// the lock patience, then is `Busy`; a connection given back wakes it.
    #[test]
    fn a_call_waits_for_a_connection_of_the_full_pool_then_is_busy() {
        let options = PostgresOptions {
            pool_size: 2,
            lock_patience: Duration::from_millis(200),
            ..PostgresOptions::default()
        };
        let backend =
            PostgresBackend::unconnected("postgres://u@127.0.0.1:1/db", &options).unwrap();
        backend.pool().open = 2;
        let Err(err) = backend.client() else {
            panic!("a connection beyond pool_size was made");
        };
        assert!(matches!(err, Error::Busy { .. }), "{err}");
        assert!(err.to_string().contains("pool_size"), "{err}");
        assert_eq!(backend.pool().open, 2, "a refused call changes nothing");
        // One given back (here: one that broke, so a new one may be made) lets the next
        // call try to connect, which this address refuses.
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| backend.client().map(drop));
            let mut pool = backend.pool();
            pool.open -= 1;
            backend.wake(pool);
            let err = waiter.join().unwrap().unwrap_err();
            assert!(matches!(err, Error::Storage { .. }), "{err}");
        });
        assert_eq!(
            backend.pool().open,
            1,
            "a failed connect gives its place back"
        );
    }

    /// Under `sslmode=prefer`, as libpq: a server whose TLS handshake fails (here it agrees to
    /// TLS, then answers with something that is not TLS) is connected to again without TLS.
    #[test]
    fn prefer_connects_again_without_tls_when_the_handshake_fails() {
        use std::io::{Read, Write};
        const SSL_REQUEST: u32 = 80_877_103;
        const PROTOCOL_3: u32 = 196_608;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let mut opening = Vec::new();
            for _ in 0..2 {
                let Ok((mut socket, _)) = listener.accept() else {
                    break;
                };
                socket
                    .set_read_timeout(Some(Duration::from_secs(60)))
                    .unwrap();
                let mut head = [0u8; 8];
                if socket.read_exact(&mut head).is_err() {
                    break;
                }
                let code = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
                opening.push(code);
                if code == SSL_REQUEST {
                    let mut hello = [0u8; 4096];
                    socket.write_all(b"S").unwrap();
                    let _ = socket.read(&mut hello);
                    socket.write_all(b"this is not TLS\r\n").unwrap();
                    // Until the client gives up on it.
                    while socket.read(&mut hello).is_ok_and(|n| n > 0) {}
                }
            }
            opening
        });
        let url = format!("postgres://u@127.0.0.1:{port}/db?sslmode=prefer");
        let err = PostgresBackend::connect(&url, &PostgresOptions::default()).unwrap_err();
        assert!(matches!(err, Error::Storage { .. }), "{err}");
        // Without a second attempt the server still waits for one: this ends its wait.
        drop(std::net::TcpStream::connect(("127.0.0.1", port)));
        assert_eq!(server.join().unwrap(), [SSL_REQUEST, PROTOCOL_3]);
    }

    /// The URL's `connect_timeout` (libpq's parameter) is the one used when it names one,
    /// over the options' default.
    #[test]
    fn the_urls_connect_timeout_is_the_one_used() {
        let port = silent_listener();
        let url = format!("postgres://u@127.0.0.1:{port}/db?connect_timeout=1");
        let err = PostgresBackend::connect(&url, &PostgresOptions::default()).unwrap_err();
        assert!(err.to_string().contains("within 1 s"), "{err}");
    }

    #[test]
    fn reply_timeouts_are_seconds_or_none() {
        let timeout = |url: &str| parse_url(url).map(|t| t.reply_timeout);
        assert!(matches!(timeout("postgres://u@h/d"), Ok(None)));
        assert!(matches!(
            timeout("postgres://u@h/d?reply_timeout=0"),
            Ok(Some(None))
        ));
        assert!(matches!(
            timeout("postgres://u@h/d?reply_timeout=2.5"),
            Ok(Some(Some(limit))) if limit == Duration::from_millis(2500)
        ));
        for bad in ["-1", "soon", "inf", "NaN", "1e300", "", "0.0001"] {
            let Err(err) = timeout(&format!("postgres://u@h/d?reply_timeout={bad}")) else {
                panic!("reply_timeout={bad} was accepted");
            };
            assert_eq!(err.problems()[0].field, "url.reply_timeout", "{bad}");
        }
    }

    /// libpq also takes the password as a parameter: no message carries it.
    #[test]
    fn a_password_given_as_a_parameter_stays_out_of_messages() {
        let err = PostgresBackend::connect(
            "postgres://u@127.0.0.1:1/db?password=hunter22&schema=x",
            &PostgresOptions {
                connect_timeout: Duration::from_secs(5),
                ..PostgresOptions::default()
            },
        )
        .unwrap_err();
        assert!(matches!(err, Error::Storage { .. }), "{err}");
        assert!(!err.to_string().contains("hunter22"), "{err}");
        assert!(err.to_string().contains("password=***"), "{err}");
    }

    #[test]
    fn connect_names_the_wrong_part_of_a_url() {
        assert!(crate::Store::connect("memory:").is_ok());
        for bad in ["", "http://example.com/x", "postgres://u@h/db?keepalives"] {
            let err = crate::Store::connect(bad).unwrap_err();
            assert_eq!(err.problems()[0].field, "url", "{bad}: {err}");
        }
        for (bad, field) in [
            ("postgres://u@h:notaport/db", "url.port"),
            ("postgres://u@[::1/db", "url.host"),
            (
                "postgres://u@h/db?connect_timeout=soon",
                "url.connect_timeout",
            ),
            (
                "postgres://u@h/db?target_session_attrs=maybe",
                "url.target_session_attrs",
            ),
            ("postgres://u@h/db?bogus=1", "url.bogus"),
        ] {
            let err = crate::Store::connect(bad).unwrap_err();
            assert_eq!(err.problems()[0].field, field, "{bad}: {err}");
        }
    }

    /// What `pg_stat_activity` shows an operator: `handoff`, unless the URL names the
    /// application (libpq's `fallback_application_name` yields to `application_name`).
    #[test]
    fn sessions_are_named_for_operators_unless_the_url_names_them() {
        let name = |url: &str| {
            parse_url(url)
                .unwrap()
                .config
                .get_application_name()
                .map(str::to_owned)
        };
        assert_eq!(name("postgres://u@h/d").as_deref(), Some("handoff"));
        assert_eq!(
            name("postgres://u@h/d?fallback_application_name=billing").as_deref(),
            Some("billing")
        );
        assert_eq!(
            name("postgres://u@h/d?fallback_application_name=billing&application_name=swarm-7")
                .as_deref(),
            Some("swarm-7")
        );
    }

    #[test]
    fn a_lost_peer_is_noticed_within_a_minute_unless_the_url_says_otherwise() {
        let target = parse_url("postgres://u@db.internal/d").unwrap();
        assert_eq!(target.config.get_tcp_user_timeout(), Some(&LOST_AFTER));
        assert_eq!(target.config.get_keepalives_idle(), PROBE_AFTER);
        assert_eq!(target.config.get_keepalives_interval(), Some(PROBE_EVERY));
        assert_eq!(target.config.get_keepalives_retries(), Some(PROBES));
        // As libpq reads them: `tcp_user_timeout` in milliseconds, `keepalives_count`.
        let own = parse_url(
            "postgres://u@db.internal/d?tcp_user_timeout=1500&keepalives_idle=600&keepalives_count=9",
        )
        .unwrap();
        assert_eq!(
            own.config.get_tcp_user_timeout(),
            Some(&Duration::from_millis(1500))
        );
        assert_eq!(own.config.get_keepalives_idle(), Duration::from_secs(600));
        assert_eq!(own.config.get_keepalives_interval(), Some(PROBE_EVERY));
        assert_eq!(own.config.get_keepalives_retries(), Some(9));
        // The driver's name for the count, too; `0` leaves the operating system's default.
        let driver = parse_url("postgres://u@h/d?keepalives_retries=4").unwrap();
        assert_eq!(driver.config.get_keepalives_retries(), Some(4));
        let system = parse_url("postgres://u@h/d?tcp_user_timeout=0&keepalives_count=0").unwrap();
        assert_eq!(system.config.get_tcp_user_timeout(), None);
        assert_eq!(system.config.get_keepalives_retries(), None);
        for (bad, field, rule) in [
            (
                "tcp_user_timeout=1.5",
                "url.tcp_user_timeout",
                "milliseconds",
            ),
            (
                "tcp_user_timeout=-1",
                "url.tcp_user_timeout",
                "milliseconds",
            ),
            ("keepalives_count=many", "url.keepalives_count", "probes"),
            (
                "keepalives_count=3&keepalives_retries=3",
                "url.keepalives_retries",
                "given twice",
            ),
        ] {
            let Err(err) = parse_url(&format!("postgres://u@h/d?{bad}")) else {
                panic!("{bad} was accepted");
            };
            assert_eq!(err.problems()[0].field, field, "{bad}: {err}");
            assert!(err.to_string().contains(rule), "{bad}: {err}");
        }
    }

    #[test]
    fn urls_name_the_part_that_is_wrong() {
        let Err(err) = parse_url("postgres://u@h/db?schema=Bad-Name") else {
            panic!("a bad schema name was accepted");
        };
        assert_eq!(err.problems()[0].field, "url.schema");
        for system in ["information_schema", "pg_catalog", "pg_toast", "pg_temp_1"] {
            let Err(err) = parse_url(&format!("postgres://u@h/db?schema={system}")) else {
                panic!("the system schema {system} was accepted");
            };
            assert_eq!(err.problems()[0].field, "url.schema");
            assert!(err.to_string().contains("system schema"), "{err}");
        }
        let Err(err) = parse_url("postgres://u@h/db?schema=a&sslmode=disable&schema=b") else {
            panic!("two schemas were accepted");
        };
        assert_eq!(err.problems()[0].field, "url.schema");
        let Err(err) = parse_url("postgres://u@h:notaport/db") else {
            panic!("a bad port was accepted");
        };
        assert_eq!(err.problems()[0].field, "url.port");
        let target =
            parse_url("postgres://app:secret@db.internal/agents?schema=swarm1&sslmode=disable")
                .unwrap();
        assert_eq!(target.schema, "swarm1");
        assert!(!target.shown.contains("secret"), "{}", target.shown);
    }
}

/// The conformance suite on a schema of its own per case, when `HANDOFF_TEST_POSTGRES` names
/// a server (CI always sets it, and then an unreachable server fails the tests).
#[cfg(test)]
mod conformance;
