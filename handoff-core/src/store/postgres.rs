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
//! Event order: a transaction's events are written at its end, under a store-wide advisory
//! lock held until commit, so `seq` increases in commit order and a reader following the log
//! with `after = <last seq>` never skips an event that commits late.
//!
//! Records are stored as in SQLite: the creation-time JSON (`body`, written once) plus the
//! lifecycle fields in columns.

use std::str::FromStr;
use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};
use postgres::error::{Severity, SqlState};
use postgres::fallible_iterator::FallibleIterator;
use postgres::{Client, IsolationLevel, NoTls, Row};

use crate::chain::Hop;
use crate::clock::{from_micros, micros, opt_micros};
use crate::error::{Error, Result};
use crate::machine::{Change, Event, NewEvent};
use crate::record::{Handoff, Kind, Status};
use crate::store::{Backend, Capabilities, EventFilter, ListFilter, Tx, WorkSignal};

/// The schema version this build writes.
pub const VERSION: i32 = 2;

/// `MIGRATIONS[v]` upgrades a schema from version `v` to `v + 1`.
const MIGRATIONS: [&str; VERSION as usize] = [
    // 0 -> 1: the layout of SQLite's version 3.
    "CREATE TABLE handoffs (
        pos BIGSERIAL PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        task_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        from_agent TEXT,
        to_agent TEXT,
        parent_id TEXT,
        created_at BIGINT NOT NULL,
        expires_at BIGINT,
        status TEXT NOT NULL,
        claimed_by TEXT,
        claim_token BIGINT,
        lease_until BIGINT,
        heartbeat_at BIGINT,
        attempts INTEGER NOT NULL DEFAULT 0,
        completed_at BIGINT,
        outcome TEXT,
        claim_secret BYTEA,
        body TEXT NOT NULL
    );
    CREATE INDEX handoffs_task ON handoffs (task_id, pos);
    CREATE INDEX handoffs_claimable ON handoffs (to_agent, pos) WHERE status = 'pending';
    CREATE INDEX handoffs_leases ON handoffs (lease_until) WHERE status = 'claimed';
    CREATE INDEX handoffs_expiry ON handoffs (expires_at)
        WHERE status = 'pending' AND expires_at IS NOT NULL;
    CREATE TABLE events (
        seq BIGSERIAL PRIMARY KEY,
        handoff_id TEXT NOT NULL,
        at BIGINT NOT NULL,
        actor TEXT,
        kind TEXT NOT NULL,
        detail TEXT NOT NULL
    );
    CREATE INDEX events_handoff ON events (handoff_id, seq);
    CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);",
    // 1 -> 2: a `created` event names the task and the addressee instead of carrying a second
    // copy of the record, which the record itself holds.
    "UPDATE events SET detail = json_build_object('kind', 'created', 'detail', json_build_object(
        'task_id', detail::json #>> '{detail,record,task_id}',
        'to_agent', detail::json #>> '{detail,record,to_agent}'))::text
    WHERE kind = 'created' AND detail::json #> '{detail,record}' IS NOT NULL;",
];

/// Advisory lock keys (in the schema's own key space: see [`PostgresBackend::lock_key`]).
const MIGRATION_LOCK: i64 = 1;
const EVENT_LOCK: i64 = 2;

/// How often one write runs again after serialisation failures before it gives up.
const MAX_ATTEMPTS: usize = 16;

/// How a PostgreSQL store connects.
#[derive(Clone, Debug)]
pub struct PostgresOptions {
    /// How many connections the store keeps open at most (default 8).
    pub pool_size: usize,
    /// How long connecting may take (default 10 s).
    pub connect_timeout: Duration,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            pool_size: 8,
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// A store in one PostgreSQL schema.
pub struct PostgresBackend {
    config: postgres::Config,
    schema: String,
    /// The schema's own advisory-lock namespace, so stores sharing a database never block
    /// one another.
    lock_base: i64,
    idle: Mutex<Vec<Client>>,
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

/// The parts of a `postgres://` URL: the driver's configuration, and the schema.
fn parse_url(url: &str) -> Result<(postgres::Config, String, String)> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut schema = "public".to_owned();
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("schema", name)) => schema = name.to_owned(),
            _ => rest.push(pair),
        }
    }
    if !is_schema_name(&schema) {
        return Err(Error::invalid(
            "url.schema",
            "must be 1 to 63 characters from a-z 0-9 _, starting with a letter or _",
        ));
    }
    let driver_url = if rest.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", rest.join("&"))
    };
    let config = postgres::Config::from_str(&driver_url)
        .map_err(|e| Error::invalid("url", format!("is not a PostgreSQL URL: {e}")))?;
    let shown = crate::store::display_url(url);
    Ok((config, schema, shown))
}

fn is_schema_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && name.len() <= 63
}

fn storage(what: &str, e: postgres::Error) -> Error {
    Error::Storage {
        message: format!("PostgreSQL: {what}: {}", reason(&e)),
        source: Some(Box::new(e)),
    }
}

/// What the server said, when it refused (the driver's own text is only "db error"), or the
/// driver's description of what went wrong on its side.
fn reason(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    }
}

/// Whether a failed call found its connection gone: closed, broken (an I/O error), or ended by
/// the server, whose FATAL errors end the session ("terminating connection due to
/// administrator command" is what a connection that sat idle through a restart says first).
fn connection_lost(e: &postgres::Error) -> bool {
    e.is_closed()
        || e.as_db_error()
            .is_some_and(|db| db.parsed_severity() == Some(Severity::Fatal))
        || std::error::Error::source(e).is_some_and(|cause| cause.is::<std::io::Error>())
}

/// Whether running the transaction again can succeed.
fn is_retryable(e: &postgres::Error) -> bool {
    e.code().is_some_and(|code| {
        *code == SqlState::T_R_SERIALIZATION_FAILURE
            || *code == SqlState::T_R_DEADLOCK_DETECTED
            || *code == SqlState::UNIQUE_VIOLATION
    })
}

const RECORD_COLUMNS: &str = "status, claimed_by, claim_token, lease_until, heartbeat_at, \
                              attempts, completed_at, outcome, body";
const HOP_COLUMNS: &str =
    "id, parent_id, from_agent, to_agent, claimed_by, kind, status, created_at";

fn corrupt(what: &str, detail: impl std::fmt::Display) -> Error {
    Error::storage(format!("corrupt {what} in the PostgreSQL store: {detail}"))
}

fn parsed<T: FromStr>(what: &str, text: &str) -> Result<T> {
    text.parse().map_err(|_| corrupt(what, text))
}

fn record_from_row(row: &Row) -> Result<Handoff> {
    let body: String = row.get(8);
    let mut h: Handoff = serde_json::from_str(&body).map_err(|e| corrupt("record body", e))?;
    h.status = parsed("status", row.get::<_, &str>(0))?;
    h.claimed_by = row.get(1);
    h.claim_token = row.get::<_, Option<i64>>(2).map(|t| t as u64);
    h.lease_until = row.get::<_, Option<i64>>(3).map(from_micros);
    h.heartbeat_at = row.get::<_, Option<i64>>(4).map(from_micros);
    h.attempts = row.get::<_, i32>(5) as u32;
    h.completed_at = row.get::<_, Option<i64>>(6).map(from_micros);
    h.outcome = row.get(7);
    Ok(h)
}

fn hop_from_row(row: &Row) -> Result<Hop> {
    let to_agent: Option<String> = row.get(3);
    let claimed_by: Option<String> = row.get(4);
    Ok(Hop {
        handoff_id: row.get(0),
        parent_id: row.get(1),
        from_agent: row.get(2),
        to_agent: to_agent.or(claimed_by),
        kind: parsed::<Kind>("kind", row.get::<_, &str>(5))?,
        status: parsed::<Status>("status", row.get::<_, &str>(6))?,
        created_at: from_micros(row.get(7)),
    })
}

fn event_from_row(row: &Row) -> Result<Event> {
    let detail: &str = row.get(4);
    Ok(Event {
        seq: row.get::<_, i64>(0) as u64,
        handoff_id: row.get(1),
        at: from_micros(row.get(2)),
        actor: row.get(3),
        change: serde_json::from_str::<Change>(detail).map_err(|e| corrupt("event", e))?,
    })
}

/// A pooled connection, returned to the pool when dropped unless it broke.
struct Pooled<'a> {
    client: Option<Client>,
    backend: &'a PostgresBackend,
}

impl std::ops::Deref for Pooled<'_> {
    type Target = Client;
    fn deref(&self) -> &Client {
        self.client.as_ref().expect("present until dropped")
    }
}

impl std::ops::DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Client {
        self.client.as_mut().expect("present until dropped")
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(client) = self.client.take()
            && !client.is_closed()
            && let Ok(mut idle) = self.backend.idle.lock()
            && idle.len() < self.backend.options.pool_size
        {
            idle.push(client);
        }
    }
}

impl PostgresBackend {
    /// Connects to the schema the URL names (`?schema=NAME`, default `public`), creating it
    /// and its tables, or migrating them, as needed.
    pub fn connect(url: &str, options: &PostgresOptions) -> Result<PostgresBackend> {
        let (mut config, schema, shown) = parse_url(url)?;
        config.connect_timeout(options.connect_timeout);
        let lock_base = i64::from(crc32(schema.as_bytes())) << 8;
        let backend = PostgresBackend {
            config,
            schema,
            lock_base,
            idle: Mutex::new(Vec::new()),
            options: options.clone(),
            shown,
        };
        backend.migrate()?;
        Ok(backend)
    }

    fn lock_key(&self, key: i64) -> i64 {
        self.lock_base | key
    }

    /// A connection from the pool, or a new one with the schema on its search path.
    fn client(&self) -> Result<Pooled<'_>> {
        // A connection the server closed (a restart, an idle timeout) is left behind.
        let idle = self
            .idle
            .lock()
            .ok()
            .and_then(|mut idle| std::iter::from_fn(|| idle.pop()).find(|c| !c.is_closed()));
        let client = match idle {
            Some(client) => client,
            None => {
                let mut client = self
                    .config
                    .connect(NoTls)
                    .map_err(|e| storage(&format!("cannot connect to {}", self.shown), e))?;
                client
                    .batch_execute(&format!("SET search_path TO \"{}\"", self.schema))
                    .map_err(|e| storage("cannot select the schema", e))?;
                client
            }
        };
        Ok(Pooled {
            client: Some(client),
            backend: self,
        })
    }

    /// Creates the schema or brings it to [`VERSION`], one process at a time.
    fn migrate(&self) -> Result<()> {
        let mut client = self.client()?;
        let mut tx = client
            .transaction()
            .map_err(|e| storage("cannot begin", e))?;
        tx.execute(
            "SELECT pg_advisory_xact_lock($1)",
            &[&self.lock_key(MIGRATION_LOCK)],
        )
        .map_err(|e| storage("cannot lock the schema for migration", e))?;
        tx.batch_execute(&format!(
            "CREATE SCHEMA IF NOT EXISTS \"{0}\";
             CREATE TABLE IF NOT EXISTS \"{0}\".handoff_schema (version INTEGER NOT NULL)",
            self.schema
        ))
        .map_err(|e| storage("cannot create the schema", e))?;
        let version: i32 = match tx
            .query_opt("SELECT version FROM handoff_schema", &[])
            .map_err(|e| storage("cannot read the schema version", e))?
        {
            Some(row) => row.get(0),
            None => {
                let foreign: i64 = tx
                    .query_one(
                        "SELECT count(*) FROM information_schema.tables \
                         WHERE table_schema = $1 AND table_name IN ('handoffs', 'events')",
                        &[&self.schema],
                    )
                    .map_err(|e| storage("cannot inspect the schema", e))?
                    .get(0);
                if foreign > 0 {
                    return Err(Error::storage(format!(
                        "schema {} has tables of another program: choose another with ?schema=NAME",
                        self.schema
                    )));
                }
                tx.execute("INSERT INTO handoff_schema (version) VALUES (0)", &[])
                    .map_err(|e| storage("cannot write the schema version", e))?;
                0
            }
        };
        if version > VERSION {
            return Err(Error::storage(format!(
                "schema {} is at version {version}, newer than this build ({VERSION}): upgrade handoff-core",
                self.schema
            )));
        }
        for (from, migration) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            tx.batch_execute(migration)
                .map_err(|e| storage(&format!("migration {from} failed"), e))?;
        }
        tx.execute("UPDATE handoff_schema SET version = $1", &[&VERSION])
            .map_err(|e| storage("cannot write the schema version", e))?;
        tx.commit()
            .map_err(|e| storage("cannot commit the migration", e))
    }

    /// Runs a read on a pooled connection; once more on a new connection when the pooled one
    /// turns out to be dead (the server restarted since it was last used).
    fn reading<T>(&self, mut op: impl FnMut(&mut Client) -> Result<T>) -> Result<T> {
        let mut client = self.client()?;
        match op(&mut client) {
            Err(_) if client.is_closed() => {
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
    fn drop_idle(&self) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.clear();
        }
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
        let mut notifications = self.client.notifications();
        // One notification is enough to look again; the others are drained so the next wait
        // does not wake for work this look already saw.
        notifications
            .timeout_iter(timeout)
            .next()
            .map_err(|e| storage("lost the notification channel", e))?;
        while let Ok(Some(_)) = notifications.iter().next() {}
        Ok(())
    }
}

impl Drop for Listening<'_> {
    fn drop(&mut self) {
        // A connection going back to the pool must not keep collecting notifications.
        if self.client.batch_execute("UNLISTEN *").is_err() {
            self.client.client = None;
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
            backup: false,
            wakes_waiters: true,
        }
    }

    fn write(&self, work: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut client = self.client()?;
            let tx = match client
                .build_transaction()
                .isolation_level(IsolationLevel::ReadCommitted)
                .start()
            {
                Ok(tx) => tx,
                // A dead pooled connection: nothing was done, so a new one may begin again.
                Err(e) if connection_lost(&e) && attempt < MAX_ATTEMPTS => {
                    self.drop_idle();
                    continue;
                }
                Err(e) => return Err(storage("cannot begin", e)),
            };
            let mut handle = PgTx {
                tx,
                error: None,
                events: Vec::new(),
                locked_tasks: Vec::new(),
                event_lock: self.lock_key(EVENT_LOCK),
                task_lock_base: self.lock_base,
                channel: self.channel(),
            };
            let outcome = match work(&mut handle) {
                Ok(()) => handle.finish(),
                Err(e) => Err(match handle.error.take() {
                    Some(pg) if is_retryable(&pg) => pg,
                    _ => return Err(e),
                }),
            };
            match outcome {
                Ok(()) => return Ok(()),
                Err(pg) if is_retryable(&pg) && attempt < MAX_ATTEMPTS => {
                    std::thread::sleep(Duration::from_micros(fastrand::u64(100..2_000)));
                }
                Err(pg) => return Err(storage("the write failed", pg)),
            }
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
        let mut sql = format!("SELECT {RECORD_COLUMNS} FROM handoffs WHERE true");
        let mut args: Vec<String> = Vec::new();
        for (column, value) in [
            ("status", filter.status.map(|s| s.as_str().to_owned())),
            ("task_id", filter.task_id.clone()),
            ("to_agent", filter.to_agent.clone()),
            ("kind", filter.kind.map(|k| k.as_str().to_owned())),
        ] {
            if let Some(value) = value {
                args.push(value);
                sql.push_str(&format!(" AND {column} = ${}", args.len()));
            }
        }
        if let Some(after) = &filter.after {
            args.push(after.clone());
            sql.push_str(&format!(
                " AND pos > COALESCE((SELECT pos FROM handoffs WHERE id = ${}), 9223372036854775807)",
                args.len()
            ));
        }
        sql.push_str(" ORDER BY pos");
        if let Some(limit) = filter.limit {
            sql.push_str(&format!(
                " LIMIT {}",
                i64::try_from(limit).unwrap_or(i64::MAX)
            ));
        }
        self.reading(|client| {
            let params: Vec<&(dyn postgres::types::ToSql + Sync)> =
                args.iter().map(|a| a as _).collect();
            client
                .query(&sql, &params)
                .map_err(|e| storage("cannot list records", e))?
                .iter()
                .map(record_from_row)
                .collect()
        })
    }

    fn events(&self, filter: &EventFilter) -> Result<Vec<Event>> {
        let after = filter
            .after
            .map_or(0, |seq| i64::try_from(seq).unwrap_or(i64::MAX));
        let mut sql = String::from(
            "SELECT e.seq, e.handoff_id, e.at, e.actor, e.detail FROM events AS e WHERE e.seq > $1",
        );
        let mut texts: Vec<&str> = Vec::new();
        if let Some(id) = &filter.handoff_id {
            texts.push(id);
            sql.push_str(&format!(" AND e.handoff_id = ${}", texts.len() + 1));
        }
        if let Some(task) = &filter.task_id {
            texts.push(task);
            sql.push_str(&format!(
                " AND e.handoff_id IN (SELECT id FROM handoffs WHERE task_id = ${})",
                texts.len() + 1
            ));
        }
        sql.push_str(" ORDER BY e.seq");
        if let Some(limit) = filter.limit {
            sql.push_str(&format!(
                " LIMIT {}",
                i64::try_from(limit).unwrap_or(i64::MAX)
            ));
        }
        self.reading(|client| {
            let mut params: Vec<&(dyn postgres::types::ToSql + Sync)> = vec![&after];
            params.extend(
                texts
                    .iter()
                    .map(|t| t as &(dyn postgres::types::ToSql + Sync)),
            );
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
}

/// One write transaction.
struct PgTx<'c> {
    tx: postgres::Transaction<'c>,
    /// The driver's error behind the last failed call, to tell a retryable failure apart.
    error: Option<postgres::Error>,
    /// Events, written at the end under the event lock (see the module doc).
    events: Vec<NewEvent>,
    /// The tasks whose path this transaction has locked.
    locked_tasks: Vec<String>,
    event_lock: i64,
    task_lock_base: i64,
    /// Where to tell waiting workers that work became claimable.
    channel: String,
}

impl PgTx<'_> {
    fn check<T>(
        &mut self,
        what: &str,
        result: std::result::Result<T, postgres::Error>,
    ) -> Result<T> {
        result.map_err(|e| {
            let err = Error::storage(format!("PostgreSQL: {what}: {}", reason(&e)));
            self.error = Some(e);
            err
        })
    }

    /// Writes the events in commit order, tells waiting workers when work became claimable
    /// (PostgreSQL delivers the notification at commit), and commits.
    fn finish(mut self) -> std::result::Result<(), postgres::Error> {
        let new_work = self.events.iter().any(|e| {
            matches!(
                e.change,
                Change::Created { .. } | Change::Released { .. } | Change::LeaseExpired { .. }
            )
        });
        if new_work {
            self.tx
                .execute("SELECT pg_notify($1, '')", &[&self.channel])?;
        }
        if !self.events.is_empty() {
            self.tx
                .execute("SELECT pg_advisory_xact_lock($1)", &[&self.event_lock])?;
            let insert = self.tx.prepare(
                "INSERT INTO events (handoff_id, at, actor, kind, detail) VALUES ($1, $2, $3, $4, $5)",
            )?;
            for event in std::mem::take(&mut self.events) {
                let detail = serde_json::to_string(&event.change).unwrap_or_default();
                self.tx.execute(
                    &insert,
                    &[
                        &event.handoff_id,
                        &micros(event.at),
                        &event.actor,
                        &event.change.kind(),
                        &detail,
                    ],
                )?;
            }
        }
        self.tx.commit()
    }

    fn query_record(
        &mut self,
        sql: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Option<Handoff>> {
        let row = self.tx.query_opt(sql, params);
        self.check("cannot read a record", row)?
            .map(|row| record_from_row(&row))
            .transpose()
    }
}

impl Tx for PgTx<'_> {
    fn get(&mut self, id: &str) -> Result<Option<Handoff>> {
        // The transaction reads a record to change it: lock it until commit.
        self.query_record(
            &format!("SELECT {RECORD_COLUMNS} FROM handoffs WHERE id = $1 FOR UPDATE"),
            &[&id],
        )
    }

    fn insert(&mut self, h: &Handoff) -> Result<()> {
        let body = serde_json::to_string(h).map_err(|e| Error::storage(e.to_string()))?;
        let claim_token = h.claim_token.map(|t| t as i64);
        let attempts = h.attempts as i32;
        let result = self.tx.execute(
            "INSERT INTO handoffs (id, task_id, kind, from_agent, to_agent, parent_id, \
             created_at, expires_at, status, claimed_by, claim_token, lease_until, \
             heartbeat_at, attempts, completed_at, outcome, body) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)",
            &[
                &h.id,
                &h.task_id,
                &h.kind.as_str(),
                &h.from_agent,
                &h.to_agent,
                &h.parent_id,
                &micros(h.created_at),
                &opt_micros(h.expires_at),
                &h.status.as_str(),
                &h.claimed_by,
                &claim_token,
                &opt_micros(h.lease_until),
                &opt_micros(h.heartbeat_at),
                &attempts,
                &opt_micros(h.completed_at),
                &h.outcome,
                &body,
            ],
        );
        self.check("cannot insert a record", result).map(drop)
    }

    fn update(&mut self, h: &Handoff) -> Result<()> {
        let claim_token = h.claim_token.map(|t| t as i64);
        let attempts = h.attempts as i32;
        let result = self.tx.execute(
            "UPDATE handoffs SET status = $2, claimed_by = $3, claim_token = $4, \
             lease_until = $5, heartbeat_at = $6, attempts = $7, completed_at = $8, \
             outcome = $9 WHERE id = $1",
            &[
                &h.id,
                &h.status.as_str(),
                &h.claimed_by,
                &claim_token,
                &opt_micros(h.lease_until),
                &opt_micros(h.heartbeat_at),
                &attempts,
                &opt_micros(h.completed_at),
                &h.outcome,
            ],
        );
        self.check("cannot update a record", result).map(drop)
    }

    fn append(&mut self, event: NewEvent) -> Result<()> {
        self.events.push(event);
        Ok(())
    }

    fn set_setting(&mut self, key: &str, value: &str) -> Result<()> {
        let result = self.tx.execute(
            "INSERT INTO settings (key, value) VALUES ($1, $2) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[&key, &value],
        );
        self.check("cannot write a setting", result).map(drop)
    }

    fn claim_secret(&mut self, id: &str) -> Result<Option<[u8; 32]>> {
        let result = self
            .tx
            .query_opt("SELECT claim_secret FROM handoffs WHERE id = $1", &[&id]);
        Ok(self
            .check("cannot read a claim", result)?
            .and_then(|row| row.get::<_, Option<Vec<u8>>>(0))
            .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok()))
    }

    fn set_claim_secret(&mut self, id: &str, digest: Option<[u8; 32]>) -> Result<()> {
        let digest = digest.map(|d| d.to_vec());
        let result = self.tx.execute(
            "UPDATE handoffs SET claim_secret = $2 WHERE id = $1",
            &[&id, &digest],
        );
        self.check("cannot write a claim", result).map(drop)
    }

    fn hops(&mut self, task_id: &str) -> Result<Vec<Hop>> {
        // The chain policy reads the path and then adds to it: one transaction per task at a
        // time, or two could both pass a limit that only one of them may.
        if !self.locked_tasks.iter().any(|t| t == task_id) {
            let key = self.task_lock_base;
            let result = self.tx.execute(
                "SELECT pg_advisory_xact_lock($1, hashtext($2))",
                &[&((key >> 8) as i32), &task_id],
            );
            self.check("cannot lock a task", result)?;
            self.locked_tasks.push(task_id.to_owned());
        }
        let result = self.tx.query(
            &format!("SELECT {HOP_COLUMNS} FROM handoffs WHERE task_id = $1 ORDER BY pos"),
            &[&task_id],
        );
        self.check("cannot read a chain", result)?
            .iter()
            .map(hop_from_row)
            .collect()
    }

    fn next_claimable(
        &mut self,
        agent: &str,
        task_id: Option<&str>,
        now: DateTime<Utc>,
        after: Option<&str>,
    ) -> Result<Option<Handoff>> {
        let now = micros(now);
        let mut sql = format!(
            "SELECT {RECORD_COLUMNS} FROM handoffs WHERE status = 'pending' \
             AND kind <> 'checkpoint' AND (expires_at IS NULL OR expires_at > $2) \
             AND (to_agent IS NULL OR to_agent = $1)"
        );
        let mut params: Vec<&(dyn postgres::types::ToSql + Sync)> = vec![&agent, &now];
        if let Some(task) = &task_id {
            params.push(task);
            sql.push_str(&format!(" AND task_id = ${}", params.len()));
        }
        if let Some(after) = &after {
            params.push(after);
            sql.push_str(&format!(
                " AND pos > COALESCE((SELECT pos FROM handoffs WHERE id = ${}), 0)",
                params.len()
            ));
        }
        // Claimers skip each other's locked rows instead of queueing behind them.
        sql.push_str(" ORDER BY pos LIMIT 1 FOR UPDATE SKIP LOCKED");
        self.query_record(&sql, &params)
    }

    fn lapsed(&mut self, now: DateTime<Utc>, limit: usize) -> Result<Vec<Handoff>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let result = self.tx.query(
            &format!(
                "SELECT {RECORD_COLUMNS} FROM handoffs WHERE \
                 (status = 'claimed' AND lease_until <= $1) \
                 OR (status = 'pending' AND expires_at IS NOT NULL AND expires_at <= $1) \
                 ORDER BY pos LIMIT $2 FOR UPDATE SKIP LOCKED"
            ),
            &[&micros(now), &limit],
        );
        self.check("cannot read lapsed records", result)?
            .iter()
            .map(record_from_row)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn connect_names_the_wrong_part_of_a_url() {
        assert!(crate::Store::connect("memory:").is_ok());
        for bad in ["", "http://example.com/x", "postgres://u@h:notaport/db"] {
            let err = crate::Store::connect(bad).unwrap_err();
            assert_eq!(err.problems()[0].field, "url", "{bad}: {err}");
        }
    }

    #[test]
    fn urls_name_the_part_that_is_wrong() {
        let err = parse_url("postgres://u@h/db?schema=Bad-Name").unwrap_err();
        assert_eq!(err.problems()[0].field, "url.schema");
        let err = parse_url("postgres://u@h:notaport/db").unwrap_err();
        assert_eq!(err.problems()[0].field, "url");
        let (_, schema, shown) =
            parse_url("postgres://app:secret@db.internal/agents?schema=swarm1&sslmode=disable")
                .unwrap();
        assert_eq!(schema, "swarm1");
        assert!(!shown.contains("secret"), "{shown}");
    }
}

/// The conformance suite on a schema of its own per case, when `HANDOFF_TEST_POSTGRES` names
/// a server (CI always sets it, and then an unreachable server fails the tests).
#[cfg(test)]
mod conformance {
    #![allow(clippy::unwrap_used)]

    use super::{PostgresBackend, PostgresOptions};
    use crate::Store;

    /// A fresh schema, dropped when the case ends.
    pub(super) struct Schema {
        url: String,
        name: String,
    }

    impl Drop for Schema {
        fn drop(&mut self) {
            if let Ok(mut client) = postgres::Client::connect(&self.url, postgres::NoTls) {
                let _ = client
                    .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.name));
            }
        }
    }

    /// A store on a new schema, or `None` (with a note) when no server is configured.
    pub(super) fn store() -> Option<(Store, Schema)> {
        let Ok(url) = std::env::var("HANDOFF_TEST_POSTGRES") else {
            eprintln!("HANDOFF_TEST_POSTGRES is not set: skipping a PostgreSQL case");
            return None;
        };
        let name = format!("hc_test_{:016x}", fastrand::u64(..));
        let separator = if url.contains('?') { '&' } else { '?' };
        let backend = PostgresBackend::connect(
            &format!("{url}{separator}schema={name}"),
            &PostgresOptions::default(),
        )
        .unwrap_or_else(|e| panic!("HANDOFF_TEST_POSTGRES={url} is unreachable: {e}"));
        Some((Store::new(backend), Schema { url, name }))
    }

    crate::conformance_tests!(optional store());

    #[test]
    fn schemas_keep_stores_apart_and_connect_reads_the_url() {
        let (Some((a, _one)), Some((b, _two))) = (store(), store()) else {
            return;
        };
        a.create(crate::NewHandoff::new("t", "only in a")).unwrap();
        assert_eq!(a.list(&Default::default()).unwrap().len(), 1);
        assert!(b.list(&Default::default()).unwrap().is_empty());

        let url = std::env::var("HANDOFF_TEST_POSTGRES").unwrap();
        let name = format!("hc_test_{:016x}", fastrand::u64(..));
        let _schema = Schema {
            url: url.clone(),
            name: name.clone(),
        };
        let separator = if url.contains('?') { '&' } else { '?' };
        let store = Store::connect(&format!("{url}{separator}schema={name}")).unwrap();
        store
            .create(crate::NewHandoff::new("t", "via connect"))
            .unwrap();
        let again = Store::connect(&format!("{url}{separator}schema={name}")).unwrap();
        assert_eq!(
            again.list(&Default::default()).unwrap()[0].goal,
            "via connect"
        );
    }
}
