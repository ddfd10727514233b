//! The SQLite backend: the embedded default. One file is shared safely by many threads and
//! processes: WAL journal, `BEGIN IMMEDIATE` for every write, and lock contention retried here
//! with short randomised waits so that it never reaches a caller and no process starves.
//!
//! A record is stored as its creation-time JSON (`body`, written once, without the lifecycle
//! fields: see `Handoff::stored_body`) plus the lifecycle fields in columns, which are all an
//! update writes.

use std::cell::Cell;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, Row, ToSql, params};

use crate::chain::Hop;
use crate::clock::{from_micros, micros, opt_micros};
use crate::error::{Error, Result};
use crate::machine::{Change, Event, NewEvent};
use crate::record::{Handoff, Kind, Status};
use crate::store::backend::Watch;
use crate::store::{
    Backend, Capabilities, Doc, EventFilter, Exported, ListFilter, ReadSecret, Tx, WorkSignal,
    stored_digest,
};

mod checkpointer;
mod metrics;
mod schema;

use super::turnstile::{self, Turnstile, private_file};
use checkpointer::Checkpointer;
pub use schema::VERSION;

pub use super::Synchronous;

/// How to open an SQLite store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqliteOptions {
    /// Durability of commits.
    pub synchronous: Synchronous,
    /// How long a write waits for other processes' locks before it fails with a storage
    /// error. Waiting is internal; callers never see a busy error before this.
    pub lock_patience: Duration,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            synchronous: Synchronous::Full,
            lock_patience: Duration::from_secs(60),
        }
    }
}

/// Stores handoffs in one SQLite file.
#[derive(Debug)]
pub struct SqliteBackend {
    /// Writes, and reads inside a write.
    writer: Mutex<Connection>,
    /// Reads outside a write, on a connection of their own so that they never queue behind a
    /// write (WAL lets them read while another connection writes). `None` for in-memory
    /// databases, whose second connection would be another database.
    reader: Option<Mutex<Connection>>,
    patience: Duration,
    /// Writers from every process queue on it before they ask SQLite for the write lock.
    turnstile: Option<Turnstile>,
    /// Opened with [`SqliteBackend::open_read_only`]: writes are refused.
    read_only: bool,
    /// Copies the log back into the database file while writes go on; `None` for in-memory
    /// and read-only stores.
    checkpointer: Option<Checkpointer>,
}

/// Whether a path names a file (rather than `:memory:` or a URI).
fn is_file(path: &Path) -> bool {
    path.to_str()
        .is_none_or(|name| !name.is_empty() && name != ":memory:" && !name.starts_with("file:"))
}

impl SqliteBackend {
    /// Opens or creates the store at `path`, upgrading an older schema.
    ///
    /// A new file is created readable by its owner only (its `-wal` and `-shm` files follow
    /// its mode). A store already at this build's schema is opened without taking the write
    /// lock, so opening never waits for a writer; a file that is not a handoff-core store is
    /// refused before anything in it changes.
    pub fn open(path: impl AsRef<Path>, options: &SqliteOptions) -> Result<SqliteBackend> {
        SqliteBackend::open_as(path.as_ref(), options, false)
    }

    /// Opens the store at `path` for reading only: nothing is created, migrated or written,
    /// so a read-only file, a read-only folder or another user's store can be read, and a
    /// file that is not (yet) a store is refused as it is. Writes fail with a storage error.
    pub fn open_read_only(
        path: impl AsRef<Path>,
        options: &SqliteOptions,
    ) -> Result<SqliteBackend> {
        SqliteBackend::open_as(path.as_ref(), options, true)
    }

    fn open_as(path: &Path, options: &SqliteOptions, read_only: bool) -> Result<SqliteBackend> {
        let file = is_file(path);
        if file && !read_only && !path.exists() {
            private_file(path)
                .map_err(|e| Error::storage(format!("cannot create {}: {e}", path.display())))?;
        }
        let conn = connect(path, read_only)?;
        let mut backend = SqliteBackend {
            writer: Mutex::new(conn),
            reader: None,
            patience: options.lock_patience,
            turnstile: None,
            read_only,
            checkpointer: None,
        };
        let header = backend
            .retrying(|conn| {
                let header = schema::Header::read_settled(conn)?;
                header.check()?;
                Ok(header)
            })
            .map_err(|e| not_a_store(path, e))?;
        if read_only {
            if header.is_empty() {
                return Err(Error::storage(format!(
                    "{} is not a handoff-core store (it is empty)",
                    path.display()
                )));
            }
            if header.version() < schema::VERSION {
                return Err(Error::storage(format!(
                    "{} has schema version {}: open it for writing once to upgrade it to {}",
                    path.display(),
                    header.version(),
                    schema::VERSION
                )));
            }
        }
        if file && !read_only {
            backend.turnstile = Turnstile::open(path);
        }
        if !read_only && !header.is_current() {
            let _turn = backend.take_turn(backend.deadline())?;
            backend
                .retrying(|conn| {
                    conn.pragma_update(None, "journal_mode", "WAL")?;
                    Ok(schema::migrate(conn)?)
                })
                .map_err(|e| not_a_store(path, e))?;
        }
        let sync = match options.synchronous {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        };
        backend
            .retrying(|conn| Ok(conn.pragma_update(None, "synchronous", sync)?))
            .map_err(|e| not_a_store(path, e))?;
        if file {
            backend.reader = Some(Mutex::new(connect(path, true)?));
        }
        if file && !read_only {
            let writer = backend.writer.get_mut().unwrap_or_else(|e| e.into_inner());
            backend.checkpointer = Some(Checkpointer::start(path, writer)?);
        }
        Ok(backend)
    }

    /// When a call starting now must give up waiting; `None` for a patience too long to add
    /// to the clock (a caller's "wait forever").
    fn deadline(&self) -> Option<Instant> {
        Instant::now().checked_add(self.patience)
    }

    /// Waits for the turnstile (when the store has one) until `deadline`; `Busy` after it.
    fn take_turn(&self, deadline: Option<Instant>) -> Result<Option<turnstile::Turn<'_>>> {
        self.turnstile
            .as_ref()
            .map(|turnstile| turnstile.enter(deadline).map_err(|_| self.busy()))
            .transpose()
    }

    fn busy(&self) -> Error {
        Error::Busy {
            message: format!(
                "another writer held the store's write lock for longer than lock_patience \
                 ({:?}); the store is not damaged, try again",
                self.patience
            ),
        }
    }

    /// Takes `mutex` before `deadline`: a thread of this process stuck in a write (waiting
    /// on a stopped writer of another process) must not hold up the others past theirs.
    fn lock<'a>(
        &self,
        mutex: &'a Mutex<Connection>,
        deadline: Option<Instant>,
    ) -> Result<MutexGuard<'a, Connection>> {
        loop {
            match mutex.try_lock() {
                Ok(guard) => return Ok(guard),
                Err(std::sync::TryLockError::Poisoned(poisoned)) => {
                    return Ok(poisoned.into_inner());
                }
                Err(std::sync::TryLockError::WouldBlock) => {
                    if deadline.is_some_and(|at| Instant::now() >= at) {
                        return Err(self.busy());
                    }
                    std::thread::sleep(Duration::from_micros(fastrand::u64(50..500)));
                }
            }
        }
    }

    /// Runs `op` on the writer, starting it again while another process holds the lock, up to
    /// the patience.
    fn retrying<T>(
        &self,
        op: impl FnMut(&mut Connection) -> Result<T, Contended>,
    ) -> Result<T, Contended> {
        self.retrying_on(&self.writer, op)
    }

    /// Runs a read on the reader (the writer when there is none).
    fn reading<T>(&self, op: impl FnMut(&mut Connection) -> Result<T, Contended>) -> Result<T> {
        Ok(self.retrying_on(self.reader.as_ref().unwrap_or(&self.writer), op)?)
    }

    fn retrying_on<T>(
        &self,
        mutex: &Mutex<Connection>,
        mut op: impl FnMut(&mut Connection) -> Result<T, Contended>,
    ) -> Result<T, Contended> {
        let started = Instant::now();
        let deadline = started.checked_add(self.patience);
        let mut conn = self.lock(mutex, deadline).map_err(Contended::Core)?;
        let _deadline = Deadline::set(deadline);
        loop {
            match op(&mut conn) {
                Err(Contended::Sqlite(e)) if is_busy(&e) && started.elapsed() < self.patience => {
                    std::thread::sleep(Duration::from_micros(fastrand::u64(100..2_000)));
                }
                other => return other,
            }
        }
    }
}

/// A connection to the file at `path` with the store's settings.
fn connect(path: &Path, read_only: bool) -> Result<Connection> {
    let access = if read_only {
        OpenFlags::SQLITE_OPEN_READ_ONLY
    } else {
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE
    };
    let flags = access | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    let mut conn = Connection::open_with_flags(path, flags)
        .map_err(|e| storage(format!("cannot open {}", path.display()), e))?;
    conn.busy_handler(Some(wait_for_lock))
        .map_err(|e| storage("cannot install the busy handler", e))?;
    conn.set_prepared_statement_cache_capacity(32);
    Ok(conn)
}

/// An error inside a retried operation: SQLite's, or ours from the caller's closure.
#[derive(Debug)]
enum Contended {
    Sqlite(rusqlite::Error),
    Core(Error),
}

impl From<rusqlite::Error> for Contended {
    fn from(e: rusqlite::Error) -> Self {
        Contended::Sqlite(e)
    }
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

thread_local! {
    /// When the current call's `lock_patience` runs out (none: never). The busy handler is a
    /// plain function that SQLite calls on the calling thread, so the deadline travels in a
    /// thread-local.
    static LOCK_DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Sets the calling thread's lock deadline for as long as it lives.
struct Deadline(Option<Instant>);

impl Deadline {
    fn set(at: Option<Instant>) -> Deadline {
        Deadline(LOCK_DEADLINE.replace(at))
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        LOCK_DEADLINE.set(self.0);
    }
}

/// SQLite's own busy handler sleeps for up to 100 ms at a time, so a process that waits keeps
/// losing to one that loops; short random waits keep every process in the race. It gives up
/// when the caller's `lock_patience` is spent.
fn wait_for_lock(attempt: i32) -> bool {
    if LOCK_DEADLINE
        .get()
        .is_some_and(|deadline| Instant::now() >= deadline)
    {
        return false;
    }
    let ceiling = 50u64 << attempt.clamp(0, 5);
    std::thread::sleep(Duration::from_micros(fastrand::u64(ceiling / 2..=ceiling)));
    true
}

fn storage(message: impl Into<String>, e: rusqlite::Error) -> Error {
    Error::Storage {
        message: format!("{}: {e}", message.into()),
        source: Some(Box::new(e)),
    }
}

/// An open that failed: busy is busy (the file is fine), anything else means the file cannot
/// be used as a store.
fn not_a_store(path: &Path, e: Contended) -> Error {
    match e {
        Contended::Sqlite(e) if !is_busy(&e) => storage(
            format!("{} is not a usable handoff-core store", path.display()),
            e,
        ),
        other => Error::from(other),
    }
}

impl From<Contended> for Error {
    fn from(e: Contended) -> Self {
        match e {
            Contended::Core(e) => e,
            Contended::Sqlite(e) if is_busy(&e) => Error::Busy {
                message: format!(
                    "the store stayed locked by another process for longer than lock_patience \
                     ({e}); it is not damaged, try again"
                ),
            },
            Contended::Sqlite(e) => storage("sqlite", e),
        }
    }
}

// Column lists as macros, so that hot statements are literals built by `concat!` rather than
// strings formatted on every call.

/// The lifecycle columns, then the body: the shape every record query selects.
macro_rules! record_columns {
    () => {
        "status, claimed_by, claim_token, lease_until, heartbeat_at, attempts, completed_at, \
         outcome, priority, progress, body"
    };
}
const RECORD_COLUMNS: &str = record_columns!();
/// The column after [`RECORD_COLUMNS`], where a read that needs it selects the claim's secret.
const SECRET_COLUMN: usize = 11;

/// The columns an event is read from, of `events AS e`.
macro_rules! event_columns {
    () => {
        "e.seq, e.handoff_id, e.at, e.actor, e.detail"
    };
}

/// The columns a chain's hop is made of.
macro_rules! hop_columns {
    () => {
        "id, parent_id, from_agent, to_agent, claimed_by, kind, status, created_at"
    };
}

/// What makes a pending row claimable at `?2` (now).
macro_rules! claimable {
    () => {
        "status = 'pending' AND kind <> 'checkpoint' AND (expires_at IS NULL OR expires_at > ?2)"
    };
}

// Why `col = CAST(?1 AS TEXT)` below: with a bare `col = ?1` and an `ORDER BY` that the index
// satisfies, SQLite marks the statement as depending on the bound value, and rusqlite's
// statement cache (which clears bindings) then makes SQLite re-prepare it on every use:
// measured at about a tenth of a lifecycle. The cast keeps the same index search without it.

fn corrupt(what: &str, detail: impl std::fmt::Display) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        0,
        rusqlite::types::Type::Text,
        format!("corrupt {what}: {detail}").into(),
    )
}

fn parse<T: std::str::FromStr>(what: &str, text: &str) -> rusqlite::Result<T> {
    text.parse().map_err(|_| corrupt(what, text))
}

fn record_from_row(row: &Row<'_>) -> rusqlite::Result<Handoff> {
    let body: String = row.get(10)?;
    let mut h: Handoff = serde_json::from_str(&body).map_err(|e| corrupt("record body", e))?;
    h.status = parse("status", &row.get::<_, String>(0)?)?;
    h.claimed_by = row.get(1)?;
    h.claim_token = row.get::<_, Option<i64>>(2)?.map(|t| t as u64);
    h.lease_until = row.get::<_, Option<i64>>(3)?.map(from_micros);
    h.heartbeat_at = row.get::<_, Option<i64>>(4)?.map(from_micros);
    h.attempts = row.get(5)?;
    h.completed_at = row.get::<_, Option<i64>>(6)?.map(from_micros);
    h.outcome = row.get(7)?;
    h.priority = row.get(8)?;
    h.progress = match row.get::<_, Option<String>>(9)? {
        Some(text) => Some(serde_json::from_str(&text).map_err(|e| corrupt("progress", e))?),
        None => None,
    };
    Ok(h)
}

fn hop_from_row(row: &Row<'_>) -> rusqlite::Result<Hop> {
    let to_agent: Option<String> = row.get(3)?;
    let claimed_by: Option<String> = row.get(4)?;
    Ok(Hop {
        handoff_id: row.get(0)?,
        parent_id: row.get(1)?,
        from_agent: row.get(2)?,
        to_agent: to_agent.or(claimed_by),
        kind: parse::<Kind>("kind", &row.get::<_, String>(5)?)?,
        status: parse::<Status>("status", &row.get::<_, String>(6)?)?,
        created_at: from_micros(row.get(7)?),
    })
}

fn event_from_row(row: &Row<'_>) -> rusqlite::Result<Event> {
    let detail: String = row.get(4)?;
    Ok(Event {
        seq: row.get::<_, i64>(0)? as u64,
        handoff_id: row.get(1)?,
        at: from_micros(row.get(2)?),
        actor: row.get(3)?,
        change: serde_json::from_str::<Change>(&detail).map_err(|e| corrupt("event", e))?,
    })
}

fn get(conn: &Connection, id: &str) -> rusqlite::Result<Option<Handoff>> {
    conn.prepare_cached(concat!(
        "SELECT ",
        record_columns!(),
        " FROM handoffs WHERE id = ?1"
    ))?
    .query_row([id], record_from_row)
    .optional()
}

fn hops(conn: &Connection, task_id: &str) -> rusqlite::Result<Vec<Hop>> {
    conn.prepare_cached(concat!(
        "SELECT ",
        hop_columns!(),
        " FROM handoffs WHERE task_id = CAST(?1 AS TEXT) ORDER BY pos"
    ))?
    .query_map([task_id], hop_from_row)?
    .collect()
}

impl Backend for SqliteBackend {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            // Only an in-memory database goes without a reader connection of its own.
            durable: self.reader.is_some(),
            shared_by_processes: self.reader.is_some(),
            shared_by_machines: false,
            backup: true,
            wakes_waiters: false,
        }
    }

    fn write(&self, work: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        if self.read_only {
            return Err(Error::storage(
                "the store was opened read-only; open it for writing to change it",
            ));
        }
        self.retrying(|conn| {
            let _turn = self
                .take_turn(LOCK_DEADLINE.get())
                .map_err(Contended::Core)?;
            let mut tx = Transaction::begin(conn)?;
            let mut handle = SqliteTx::new(conn);
            if let Err(e) = work(&mut handle).and_then(|()| handle.flush()) {
                // A busy error from inside the transaction restarts the whole write.
                return Err(match handle.error.take() {
                    Some(sqlite) if is_busy(&sqlite) => Contended::Sqlite(sqlite),
                    _ => Contended::Core(e),
                });
            }
            tx.commit()?;
            Ok(())
        })
        .map_err(Error::from)
    }

    fn get(&self, id: &str) -> Result<Option<Handoff>> {
        self.reading(|conn| Ok(get(conn, id)?))
    }

    fn list(&self, filter: &ListFilter) -> Result<Vec<Handoff>> {
        let (sql, args) = filter.sql(RECORD_COLUMNS, |n| format!("CAST(?{n} AS TEXT)"));
        self.reading(|conn| {
            Ok(conn
                .prepare_cached(&sql)?
                .query_map(rusqlite::params_from_iter(&args), record_from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    fn events(&self, filter: &EventFilter) -> Result<Vec<Event>> {
        let after = filter
            .after
            .map_or(0, |seq| i64::try_from(seq).unwrap_or(i64::MAX));
        let mut texts: Vec<&str> = Vec::new();
        let mut sql = if filter.handoff_id.is_none() && filter.task_id.is_none() {
            String::from(concat!(
                "SELECT ",
                event_columns!(),
                " FROM events AS e WHERE e.seq > ?1"
            ))
        } else {
            // A handoff's events, or a task's, along their links from each handoff's latest
            // event back to the cursor (schema version 6), then in log order.
            let mut heads = String::new();
            for (column, value) in [("id", &filter.handoff_id), ("task_id", &filter.task_id)] {
                if let Some(value) = value {
                    texts.push(value);
                    heads.push_str(&format!(
                        " AND {column} = CAST(?{} AS TEXT)",
                        texts.len() + 1
                    ));
                }
            }
            format!(
                "WITH RECURSIVE linked (seq) AS ( \
                   SELECT last_event FROM handoffs WHERE last_event > ?1{heads} \
                   UNION ALL \
                   SELECT e.prev FROM events AS e JOIN linked ON e.seq = linked.seq \
                   WHERE e.prev > ?1) \
                 SELECT {} FROM linked CROSS JOIN events AS e ON e.seq = linked.seq",
                event_columns!()
            )
        };
        sql.push_str(" ORDER BY e.seq");
        if let Some(limit) = filter.limit {
            sql.push_str(&format!(
                " LIMIT {}",
                i64::try_from(limit).unwrap_or(i64::MAX)
            ));
        }
        self.reading(|conn| {
            let mut stmt = conn.prepare_cached(&sql)?;
            let mut params: Vec<&dyn rusqlite::ToSql> = vec![&after];
            params.extend(texts.iter().map(|t| t as &dyn rusqlite::ToSql));
            Ok(stmt
                .query_map(params.as_slice(), event_from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// SQLite's `PRAGMA integrity_check` (pages, indexes, constraints), then every record and
    /// event read. Nothing is repaired in place: a damaged database is restored from a backup.
    fn check(&self, _repair: bool) -> Result<crate::store::CheckReport> {
        let mut report = crate::store::CheckReport::default();
        let lines = self.reading(|conn| {
            let mut statement = conn.prepare("PRAGMA integrity_check")?;
            let lines = statement
                .query_map([], |row| row.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(lines)
        })?;
        for line in lines.into_iter().filter(|line| line != "ok") {
            report.found("integrity", format!("{line} (restore a backup)"));
        }
        crate::store::check::read_everything(self, &mut report);
        Ok(report)
    }

    /// One read transaction on the reader: WAL gives it a snapshot, and writers go on
    /// meanwhile. Each table is streamed row by row.
    fn export(&self, sink: &mut dyn FnMut(Exported) -> Result<()>) -> Result<()> {
        let mut handed = false;
        self.reading(|conn| {
            let result = export_from(conn, &mut *sink, &mut handed);
            match result {
                // Once a piece is out, a busy read must not start again (it would hand the
                // pieces twice): it fails instead.
                Err(Contended::Sqlite(e)) if handed => Err(Contended::Core(storage(
                    "sqlite: the backup's read failed",
                    e,
                ))),
                other => other,
            }
        })
    }

    fn path_stats(&self) -> Result<Vec<crate::stats::PathStats>> {
        // One row per hand-off, streamed: the statistics never hold the records.
        self.reading(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT h.from_agent, coalesce(h.to_agent, h.claimed_by), h.status, h.created_at, \
                   h.completed_at, first.at \
                 FROM handoffs AS h LEFT JOIN ( \
                   SELECT handoff_id, min(at) AS at FROM events WHERE kind = 'claimed' \
                   GROUP BY handoff_id) AS first ON first.handoff_id = h.id \
                 WHERE h.kind <> 'checkpoint' ORDER BY h.pos",
            )?;
            let mut rows = stmt.query([])?;
            let mut tally = crate::stats::Tally::default();
            while let Some(row) = rows.next()? {
                let from: Option<String> = row.get(0)?;
                let to: Option<String> = row.get(1)?;
                tally.add(crate::stats::Row {
                    from_agent: from.as_deref(),
                    to_agent: to.as_deref(),
                    status: parse("status", &row.get::<_, String>(2)?)?,
                    created_at: from_micros(row.get(3)?),
                    completed_at: row.get::<_, Option<i64>>(4)?.map(from_micros),
                    first_claim: row.get::<_, Option<i64>>(5)?.map(from_micros),
                });
            }
            Ok(tally.finish())
        })
    }

    fn queue_counts(&self) -> Result<Vec<super::backend::QueueCount>> {
        self.reading(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT status, to_agent, count(*) FROM handoffs \
                 WHERE kind <> 'checkpoint' GROUP BY status, to_agent",
            )?;
            let rows = stmt
                .query_map([], |row| {
                    Ok((
                        (row.get::<_, String>(0)?, row.get(1)?),
                        row.get::<_, i64>(2)?,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(super::backend::QueueCount::from_tally(
                rows.into_iter()
                    .map(|(key, n)| (key, u64::try_from(n).unwrap_or_default())),
            ))
        })
    }

    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn metrics(&self) -> Result<crate::metrics::Metrics> {
        self.metrics_in_sql()
    }

    fn ready(&self) -> Result<()> {
        self.schema_ready()
    }

    fn hops(&self, task_id: &str) -> Result<Vec<Hop>> {
        self.reading(|conn| Ok(hops(conn, task_id)?))
    }

    /// Watches `PRAGMA data_version` on the reader connection, which changes with every commit
    /// by any other connection, this process's writer included. An in-memory database has no
    /// reader of its own and polls.
    fn subscribe(&self) -> Result<Box<dyn WorkSignal + '_>> {
        let Some(reader) = &self.reader else {
            return Ok(Box::new(super::backend::Poll));
        };
        let data_version = move || {
            Ok(self.retrying_on(reader, |conn| {
                Ok(conn.pragma_query_value(None, "data_version", |row| row.get::<_, i64>(0))?)
            })?)
        };
        Ok(Box::new(Watch::new(data_version)?))
    }

    fn setting(&self, key: &str) -> Result<Option<String>> {
        self.reading(|conn| {
            Ok(conn
                .prepare_cached("SELECT value FROM settings WHERE key = ?1")?
                .query_row([key], |row| row.get(0))
                .optional()?)
        })
    }

    fn doc(&self, kind: &str, key: &str) -> Result<Option<Doc>> {
        self.reading(|conn| Ok(read_doc(conn, kind, key)?))
    }

    fn docs(
        &self,
        kind: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Doc)>> {
        self.reading(|conn| Ok(read_docs(conn, kind, prefix, after, limit)?))
    }
}

/// [`Backend::export`] on `conn`, in one read transaction; `handed` turns true with the first
/// piece handed to `sink`.
fn export_from(
    conn: &mut Connection,
    sink: &mut dyn FnMut(Exported) -> Result<()>,
    handed: &mut bool,
) -> Result<(), Contended> {
    let tx = conn.transaction()?;
    let mut give = |piece: Exported| {
        *handed = true;
        sink(piece).map_err(Contended::Core)
    };
    {
        let mut stmt = tx.prepare("SELECT key, value FROM settings ORDER BY key")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            give(Exported::Setting {
                key: row.get(0)?,
                value: row.get(1)?,
            })?;
        }
    }
    {
        let mut stmt = tx.prepare(concat!(
            "SELECT ",
            record_columns!(),
            ", claim_secret FROM handoffs ORDER BY pos"
        ))?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let secret = row.get::<_, Option<Vec<u8>>>(SECRET_COLUMN)?;
            give(Exported::Record {
                record: Box::new(record_from_row(row)?),
                claim_secret: stored_digest(secret.as_deref()),
            })?;
        }
    }
    {
        let mut stmt = tx.prepare(concat!(
            "SELECT ",
            event_columns!(),
            " FROM events AS e ORDER BY e.seq"
        ))?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            give(Exported::Event(event_from_row(row)?))?;
        }
    }
    {
        let mut stmt =
            tx.prepare("SELECT version, body, kind, key FROM docs ORDER BY kind, key")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            give(Exported::Doc {
                doc: doc_from_row(row)?,
                kind: row.get(2)?,
                key: row.get(3)?,
            })?;
        }
    }
    tx.commit()?;
    Ok(())
}

/// `BEGIN IMMEDIATE` … `COMMIT` through cached statements (rusqlite's `Transaction` parses
/// both for every write). Dropped without a commit, it rolls back, even when unwinding.
struct Transaction<'a> {
    conn: &'a Connection,
    open: bool,
}

impl<'a> Transaction<'a> {
    fn begin(conn: &'a Connection) -> rusqlite::Result<Self> {
        conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
        Ok(Transaction { conn, open: true })
    }

    fn commit(&mut self) -> rusqlite::Result<()> {
        self.conn.prepare_cached("COMMIT")?.execute([])?;
        self.open = false;
        Ok(())
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        if self.open && !self.conn.is_autocommit() {
            // Nothing better to do with a failed rollback than to let the next BEGIN report it.
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }
}

/// The update of a record's lifecycle columns and its latest event (`?1` its id).
macro_rules! update_lifecycle {
    () => {
        "UPDATE handoffs SET status = ?2, claimed_by = ?3, claim_token = ?4, lease_until = ?5, \
         heartbeat_at = ?6, attempts = ?7, completed_at = ?8, outcome = ?9, priority = ?10, \
         progress = ?11, last_event = coalesce(?12, last_event)"
    };
}

/// A record's lifecycle columns as SQL values, in the order its insert and its update bind
/// them (`status` to `outcome`).
struct LifecycleColumns<'a> {
    status: &'static str,
    claimed_by: &'a Option<String>,
    claim_token: Option<i64>,
    lease_until: Option<i64>,
    heartbeat_at: Option<i64>,
    attempts: &'a u32,
    completed_at: Option<i64>,
    outcome: &'a Option<String>,
    priority: i32,
    progress: Option<String>,
}

impl<'a> LifecycleColumns<'a> {
    fn of(h: &'a Handoff) -> LifecycleColumns<'a> {
        LifecycleColumns {
            status: h.status.as_str(),
            claimed_by: &h.claimed_by,
            claim_token: h.claim_token.map(|t| t as i64),
            lease_until: opt_micros(h.lease_until),
            heartbeat_at: opt_micros(h.heartbeat_at),
            attempts: &h.attempts,
            completed_at: opt_micros(h.completed_at),
            outcome: &h.outcome,
            priority: h.priority,
            progress: h.progress.as_ref().map(|p| p.to_string()),
        }
    }

    fn values(&self) -> [&dyn ToSql; 10] {
        [
            &self.status,
            self.claimed_by,
            &self.claim_token,
            &self.lease_until,
            &self.heartbeat_at,
            self.attempts,
            &self.completed_at,
            self.outcome,
            &self.priority,
            &self.progress,
        ]
    }
}

/// A write transaction. SQLite errors are kept so that [`SqliteBackend::write`] can tell a
/// busy store (retry) from a real failure.
struct SqliteTx<'a> {
    conn: &'a Connection,
    error: Option<rusqlite::Error>,
    /// The record last inserted or updated, not yet written: the events appended for it and a
    /// claim's secret set on it right after join the one statement that writes it, instead of
    /// each updating its row again. Any other call writes it first.
    held: Option<Held>,
    read_secret: ReadSecret,
}

/// A record write [`SqliteTx`] holds back.
struct Held {
    record: Handoff,
    /// Its JSON when it is new (an insert); `None` for an update of its lifecycle columns.
    body: Option<String>,
    /// The `seq` of its latest event appended meanwhile.
    last_event: Option<i64>,
    /// The digest of its claim's secret, when one was set meanwhile.
    secret: Option<Option<[u8; 32]>>,
}

impl SqliteTx<'_> {
    fn new(conn: &Connection) -> SqliteTx<'_> {
        SqliteTx {
            conn,
            error: None,
            held: None,
            read_secret: ReadSecret::default(),
        }
    }

    fn check<T>(&mut self, result: rusqlite::Result<T>) -> Result<T> {
        result.map_err(|e| {
            let wrapped = storage("sqlite", clone_error(&e));
            self.error = Some(e);
            wrapped
        })
    }

    /// The held record, when it is `id`'s.
    fn held_for(&mut self, id: &str) -> Option<&mut Held> {
        self.held.as_mut().filter(|held| held.record.id == id)
    }

    /// Holds the write of `record` (see [`SqliteTx::held`]), after writing the one held before.
    fn hold(&mut self, record: &Handoff, body: Option<String>) -> Result<()> {
        self.flush()?;
        self.held = Some(Held {
            record: record.clone(),
            body,
            last_event: None,
            secret: None,
        });
        Ok(())
    }

    /// Writes the held record, if any.
    fn flush(&mut self) -> Result<()> {
        let Some(held) = self.held.take() else {
            return Ok(());
        };
        let h = &held.record;
        let secret = held.secret.map(|digest| digest.map(|d| d.to_vec()));
        let lifecycle = LifecycleColumns::of(h);
        let result = match &held.body {
            Some(body) => {
                let (kind, created_at, expires_at) = (
                    h.kind.as_str(),
                    micros(h.created_at),
                    opt_micros(h.expires_at),
                );
                let mut values: Vec<&dyn ToSql> = vec![
                    &h.id,
                    &h.task_id,
                    &kind,
                    &h.from_agent,
                    &h.to_agent,
                    &h.parent_id,
                    &created_at,
                    &expires_at,
                ];
                let digest = secret.clone().flatten();
                values.extend(lifecycle.values());
                values.extend([body as &dyn ToSql, &held.last_event, &digest]);
                self.conn
                    .prepare_cached(
                        "INSERT INTO handoffs (id, task_id, kind, from_agent, to_agent, parent_id, \
                         created_at, expires_at, status, claimed_by, claim_token, lease_until, \
                         heartbeat_at, attempts, completed_at, outcome, priority, progress, \
                         body, last_event, claim_secret) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, \
                         ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)",
                    )
                    .and_then(|mut stmt| stmt.execute(values.as_slice()))
            }
            None => {
                let mut values: Vec<&dyn ToSql> = vec![&h.id];
                values.extend(lifecycle.values());
                values.push(&held.last_event);
                match &secret {
                    None => self
                        .conn
                        .prepare_cached(concat!(update_lifecycle!(), " WHERE id = ?1")),
                    Some(digest) => {
                        values.push(digest);
                        self.conn.prepare_cached(concat!(
                            update_lifecycle!(),
                            ", claim_secret = ?13 WHERE id = ?1"
                        ))
                    }
                }
                .and_then(|mut stmt| stmt.execute(values.as_slice()))
            }
        };
        self.check(result).map(drop)
    }
}

/// rusqlite errors are not `Clone`; keep the code and message, which is what callers see.
fn clone_error(e: &rusqlite::Error) -> rusqlite::Error {
    match e {
        rusqlite::Error::SqliteFailure(code, message) => {
            rusqlite::Error::SqliteFailure(*code, message.clone())
        }
        other => rusqlite::Error::ToSqlConversionFailure(other.to_string().into()),
    }
}

impl Tx for SqliteTx<'_> {
    fn get(&mut self, id: &str) -> Result<Option<Handoff>> {
        self.flush()?;
        let result = self
            .conn
            .prepare_cached(concat!(
                "SELECT ",
                record_columns!(),
                ", claim_secret FROM handoffs WHERE id = ?1"
            ))
            .and_then(|mut stmt| {
                stmt.query_row([id], |row| {
                    let secret = row.get::<_, Option<Vec<u8>>>(SECRET_COLUMN)?;
                    Ok((record_from_row(row)?, stored_digest(secret.as_deref())))
                })
                .optional()
            });
        Ok(self.check(result)?.map(|(record, secret)| {
            self.read_secret.keep(&record.id, secret);
            record
        }))
    }

    fn insert(&mut self, h: &Handoff) -> Result<()> {
        self.hold(h, Some(h.stored_body()))
    }

    fn update(&mut self, h: &Handoff) -> Result<()> {
        self.hold(h, None)
    }

    fn append(&mut self, event: NewEvent) -> Result<()> {
        let detail =
            serde_json::to_string(&event.change).map_err(|e| Error::storage(e.to_string()))?;
        // The event links to its handoff's latest event (schema version 6): the one appended
        // for the held record meanwhile, else the one its row names (none for a new record).
        let prev = match self.held_for(&event.handoff_id) {
            Some(held) => held.last_event,
            None => {
                self.flush()?;
                None
            }
        };
        let result = self
            .conn
            .prepare_cached(
                "INSERT INTO events (handoff_id, at, actor, kind, detail, prev) VALUES \
                 (?1, ?2, ?3, ?4, ?5, coalesce(?6, (SELECT last_event FROM handoffs WHERE id = ?1)))",
            )
            .and_then(|mut stmt| {
                stmt.execute(params![
                    event.handoff_id,
                    micros(event.at),
                    event.actor,
                    event.change.kind(),
                    detail,
                    prev,
                ])
            });
        self.check(result)?;
        let seq = self.conn.last_insert_rowid();
        if let Some(held) = self.held_for(&event.handoff_id) {
            held.last_event = Some(seq);
            return Ok(());
        }
        // An event of a record not written in this transaction: its row names it now.
        let result = self
            .conn
            .prepare_cached("UPDATE handoffs SET last_event = ?2 WHERE id = ?1")
            .and_then(|mut stmt| stmt.execute(params![event.handoff_id, seq]));
        self.check(result).map(drop)
    }

    /// The events along the record's links (there is no index on their handoff), then the
    /// row, which holds the claim digest.
    fn delete_record(&mut self, id: &str) -> Result<()> {
        self.flush()?;
        self.read_secret.forget(id);
        let result = self
            .conn
            .prepare_cached(
                "WITH RECURSIVE linked (seq) AS ( \
                   SELECT last_event FROM handoffs WHERE id = ?1 AND last_event IS NOT NULL \
                   UNION ALL \
                   SELECT e.prev FROM events AS e JOIN linked ON e.seq = linked.seq \
                   WHERE e.prev IS NOT NULL) \
                 DELETE FROM events WHERE seq IN (SELECT seq FROM linked)",
            )
            .and_then(|mut stmt| stmt.execute([id]))
            .and_then(|_| {
                self.conn
                    .prepare_cached("DELETE FROM handoffs WHERE id = ?1")
                    .and_then(|mut stmt| stmt.execute([id]))
            });
        self.check(result).map(drop)
    }

    fn set_setting(&mut self, key: &str, value: &str) -> Result<()> {
        self.flush()?;
        let result = self
            .conn
            .prepare_cached(
                "INSERT INTO settings (key, value) VALUES (?1, ?2) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            )
            .and_then(|mut stmt| stmt.execute(params![key, value]));
        self.check(result).map(drop)
    }

    fn claim_secret(&mut self, id: &str) -> Result<Option<[u8; 32]>> {
        if let Some(secret) = self.read_secret.of(id) {
            return Ok(secret);
        }
        self.flush()?;
        let result = self
            .conn
            .prepare_cached("SELECT claim_secret FROM handoffs WHERE id = ?1")
            .and_then(|mut stmt| {
                stmt.query_row([id], |row| row.get::<_, Option<Vec<u8>>>(0))
                    .optional()
            });
        Ok(stored_digest(self.check(result)?.flatten().as_deref()))
    }

    fn set_claim_secret(&mut self, id: &str, digest: Option<[u8; 32]>) -> Result<()> {
        self.read_secret.forget(id);
        if let Some(held) = self.held_for(id) {
            held.secret = Some(digest);
            return Ok(());
        }
        self.flush()?;
        let digest = digest.map(|d| d.to_vec());
        let result = self
            .conn
            .prepare_cached("UPDATE handoffs SET claim_secret = ?2 WHERE id = ?1")
            .and_then(|mut stmt| stmt.execute(params![id, digest]));
        self.check(result).map(drop)
    }

    fn hops(&mut self, task_id: &str) -> Result<Vec<Hop>> {
        self.flush()?;
        let result = hops(self.conn, task_id);
        self.check(result)
    }

    fn next_claimable(
        &mut self,
        agent: &str,
        task_id: Option<&str>,
        now: DateTime<Utc>,
        after: Option<&str>,
    ) -> Result<Option<Handoff>> {
        self.flush()?;
        let now = micros(now);
        // Skipping is rare (a policy refused the best): it gets statements of its own, so
        // that the common ones stay as the planner likes them. The cursor is the refused
        // record's place in claim order: its priority, then its position.
        let after = match after {
            None => None,
            Some(id) => {
                let place = self
                    .conn
                    .prepare_cached("SELECT priority, pos FROM handoffs WHERE id = ?1")
                    .and_then(|mut stmt| {
                        stmt.query_row(params![id], |row| {
                            Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?))
                        })
                        .optional()
                    });
                Some(self.check(place)?.unwrap_or((i64::MAX, 0)))
            }
        };
        macro_rules! in_task {
            ($extra:literal) => {
                concat!(
                    "SELECT ",
                    record_columns!(),
                    " FROM handoffs INDEXED BY handoffs_task \
                     WHERE task_id = CAST(?3 AS TEXT) AND ",
                    claimable!(),
                    " AND (to_agent IS NULL OR to_agent = CAST(?1 AS TEXT))",
                    $extra,
                    " ORDER BY priority DESC, pos LIMIT 1"
                )
            };
        }
        // Otherwise the first in claim order of two index seeks: open handoffs, and ones
        // addressed to `agent`, so the cost does not grow with the backlog.
        macro_rules! anywhere {
            ($extra:literal) => {
                concat!(
                    "SELECT ",
                    record_columns!(),
                    " FROM ( \
                       SELECT * FROM (SELECT pos FROM handoffs INDEXED BY handoffs_queue \
                         WHERE queue = '' AND to_agent IS NULL AND ",
                    claimable!(),
                    $extra,
                    " ORDER BY priority DESC, pos LIMIT 1) \
                       UNION ALL \
                       SELECT * FROM (SELECT pos FROM handoffs INDEXED BY handoffs_queue \
                         WHERE queue = CAST(?1 AS TEXT) AND to_agent = CAST(?1 AS TEXT) AND ",
                    claimable!(),
                    $extra,
                    " ORDER BY priority DESC, pos LIMIT 1) \
                     ) AS first JOIN handoffs USING (pos) ORDER BY priority DESC, pos LIMIT 1"
                )
            };
        }
        let conn = self.conn;
        let result = match (task_id, after) {
            // A task has few records: walk them in order.
            (Some(task), None) => conn.prepare_cached(in_task!("")).and_then(|mut stmt| {
                stmt.query_row(params![agent, now, task], record_from_row)
                    .optional()
            }),
            (Some(task), Some((priority, pos))) => conn
                .prepare_cached(in_task!(
                    " AND (priority < ?5 OR (priority = ?5 AND pos > ?4))"
                ))
                .and_then(|mut stmt| {
                    stmt.query_row(params![agent, now, task, pos, priority], record_from_row)
                        .optional()
                }),
            (None, None) => conn.prepare_cached(anywhere!("")).and_then(|mut stmt| {
                stmt.query_row(params![agent, now], record_from_row)
                    .optional()
            }),
            (None, Some((priority, pos))) => conn
                .prepare_cached(anywhere!(
                    " AND (priority < ?4 OR (priority = ?4 AND pos > ?3))"
                ))
                .and_then(|mut stmt| {
                    stmt.query_row(params![agent, now, pos, priority], record_from_row)
                        .optional()
                }),
        };
        self.check(result)
    }

    fn lapsed(&mut self, now: DateTime<Utc>, limit: usize) -> Result<Vec<Handoff>> {
        self.flush()?;
        // Every claim asks, and almost always nothing is due: two index probes answer that
        // for a fraction of what the query below costs (its union, join and sort are set up
        // even when they find nothing).
        let due = self
            .conn
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM handoffs INDEXED BY handoffs_queue \
                   WHERE queue <= ?1 AND status = 'claimed') \
                 OR EXISTS (SELECT 1 FROM handoffs INDEXED BY handoffs_expiry \
                   WHERE status = 'pending' AND expires_at IS NOT NULL AND expires_at <= ?1)",
            )
            .and_then(|mut stmt| stmt.query_row(params![micros(now)], |row| row.get::<_, bool>(0)));
        if !self.check(due)? {
            return Ok(Vec::new());
        }
        // A literal limit: a bound `LIMIT ?` also makes SQLite re-prepare on every use (see
        // the note on CAST above). Callers use one or two distinct limits, so few statements.
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let result = self
            .conn
            .prepare_cached(&format!(
                "SELECT {RECORD_COLUMNS} FROM ( \
                   SELECT * FROM (SELECT pos FROM handoffs INDEXED BY handoffs_queue \
                     WHERE queue <= ?1 AND status = 'claimed' \
                     ORDER BY queue LIMIT {limit}) \
                   UNION ALL \
                   SELECT * FROM (SELECT pos FROM handoffs INDEXED BY handoffs_expiry \
                     WHERE status = 'pending' AND expires_at IS NOT NULL \
                     AND expires_at <= ?1 ORDER BY expires_at LIMIT {limit}) \
                 ) AS due JOIN handoffs USING (pos) ORDER BY pos LIMIT {limit}"
            ))
            .and_then(|mut stmt| {
                stmt.query_map(params![micros(now)], record_from_row)?
                    .collect::<rusqlite::Result<Vec<_>>>()
            });
        self.check(result)
    }

    fn doc(&mut self, kind: &str, key: &str) -> Result<Option<Doc>> {
        self.flush()?;
        let result = read_doc(self.conn, kind, key);
        self.check(result)
    }

    fn insert_doc(&mut self, kind: &str, key: &str, doc: &Doc) -> Result<()> {
        self.flush()?;
        let result = self
            .conn
            .prepare_cached("INSERT INTO docs (kind, key, version, body) VALUES (?1, ?2, ?3, ?4)")
            .and_then(|mut stmt| stmt.execute(params![kind, key, doc.version as i64, doc.body]));
        self.check(result).map(drop)
    }

    fn update_doc(&mut self, kind: &str, key: &str, doc: &Doc) -> Result<()> {
        self.flush()?;
        let result = self
            .conn
            .prepare_cached("UPDATE docs SET version = ?3, body = ?4 WHERE kind = ?1 AND key = ?2")
            .and_then(|mut stmt| stmt.execute(params![kind, key, doc.version as i64, doc.body]));
        self.check(result).map(drop)
    }

    fn docs(&mut self, kind: &str, prefix: &str) -> Result<Vec<(String, Doc)>> {
        self.flush()?;
        let result = read_docs(self.conn, kind, prefix, None, usize::MAX);
        self.check(result)
    }

    fn doc_keys(&mut self, kind: &str, prefix: &str) -> Result<Vec<String>> {
        self.flush()?;
        let result = self
            .conn
            .prepare_cached(
                "SELECT key FROM docs WHERE kind = ?1 AND key >= ?2 AND key < ?2 || char(1114111) \
                 AND substr(key, 1, length(?2)) = ?2 ORDER BY key",
            )
            .and_then(|mut stmt| {
                stmt.query_map(params![kind, prefix], |row| row.get::<_, String>(0))?
                    .collect()
            });
        self.check(result)
    }

    fn copy_numbered_docs(
        &mut self,
        kind: &str,
        from: &str,
        (first, last): (u64, u64),
        to: &str,
        start: u64,
    ) -> Result<u64> {
        self.flush()?;
        // One statement: the rows never leave SQLite. Keys are `<prefix>/<n, ten digits>`, so
        // the run is a key range and `n` the key's last ten characters.
        let result = self
            .conn
            .prepare_cached(
                "INSERT INTO docs (kind, key, version, body) \
                 SELECT kind, ?4 || '/' || printf('%010d', CAST(substr(key, -10) AS INTEGER) - ?3 + ?6), \
                        version, body \
                 FROM docs WHERE kind = ?1 \
                 AND key >= ?2 || '/' || printf('%010d', ?3) AND key <= ?2 || '/' || printf('%010d', ?5)",
            )
            .and_then(|mut stmt| {
                stmt.execute(params![kind, from, first as i64, to, last as i64, start as i64])
            });
        self.check(result).map(|n| n as u64)
    }

    fn delete_doc(&mut self, kind: &str, key: &str) -> Result<()> {
        self.flush()?;
        let result = self
            .conn
            .prepare_cached("DELETE FROM docs WHERE kind = ?1 AND key = ?2")
            .and_then(|mut stmt| stmt.execute(params![kind, key]));
        self.check(result).map(drop)
    }
}

fn read_docs(
    conn: &Connection,
    kind: &str,
    prefix: &str,
    after: Option<&str>,
    limit: usize,
) -> rusqlite::Result<Vec<(String, Doc)>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    // `substr` rather than LIKE: a key may hold `%` or `_`. The range beside it (every key
    // that starts with the prefix sorts between the prefix and the prefix followed by the
    // last code point) lets SQLite read the prefix's keys from the index, not the whole kind.
    conn.prepare_cached(
        "SELECT key, version, body FROM docs WHERE kind = ?1 \
         AND key >= ?2 AND key < ?2 || char(1114111) \
         AND substr(key, 1, length(?2)) = ?2 AND key > ?3 ORDER BY key LIMIT ?4",
    )?
    .query_map(params![kind, prefix, after.unwrap_or(""), limit], |row| {
        Ok((
            row.get::<_, String>(0)?,
            Doc {
                version: row.get::<_, i64>(1)? as u64,
                body: row.get(2)?,
            },
        ))
    })?
    .collect()
}

fn read_doc(conn: &Connection, kind: &str, key: &str) -> rusqlite::Result<Option<Doc>> {
    conn.prepare_cached("SELECT version, body FROM docs WHERE kind = ?1 AND key = ?2")?
        .query_row(params![kind, key], doc_from_row)
        .optional()
}

fn doc_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Doc> {
    Ok(Doc {
        version: row.get::<_, i64>(0)? as u64,
        body: row.get(1)?,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use crate::Store;

    fn temp_store() -> (Store, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("handoff.db")).unwrap();
        (store, dir)
    }

    crate::conformance_tests!(temp_store());

    mod in_memory {
        crate::conformance_tests!(crate::Store::open(":memory:").unwrap());
    }
}

#[cfg(test)]
mod migration_tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use rusqlite::Connection;

    use super::schema;
    use crate::machine::Change;
    use crate::{Error, NewHandoff, Status, Store};

    /// A store file as version 1 wrote it: one handoff claimed by `gemini`, one pending.
    fn write_v1(path: &std::path::Path) -> (crate::Handoff, crate::Handoff) {
        let scratch = Store::memory();
        let claimed = scratch
            .create(NewHandoff::new("t1", "migrate me").from_agent("claude"))
            .unwrap();
        let pending = scratch
            .create(NewHandoff::new("t2", "still waiting"))
            .unwrap();
        let claim = scratch
            .claim(&claimed.id, "gemini", Duration::from_secs(3600))
            .unwrap();
        let mut conn = Connection::open(path).unwrap();
        schema::create_at_version(&mut conn, 1).unwrap();
        for h in [&claim.handoff, &pending] {
            conn.execute(
                "INSERT INTO handoffs (id, task_id, kind, from_agent, to_agent, parent_id, created_at, \
                 expires_at, status, claimed_by, claim_token, lease_until, attempts, completed_at, \
                 outcome, body) VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6, NULL, ?7, ?8, ?9, ?10, 0, NULL, NULL, ?11)",
                rusqlite::params![
                    h.id, h.task_id, h.kind.as_str(), h.from_agent, h.to_agent,
                    h.created_at.timestamp_micros(), h.status.as_str(), h.claimed_by,
                    h.claim_token.map(|t| t as i64), h.lease_until.map(|t| t.timestamp_micros()),
                    serde_json::to_string(h).unwrap(),
                ],
            )
            .unwrap();
        }
        for event in scratch.events(None).unwrap() {
            // Before version 4, a `created` event carried the whole record again.
            let detail = match event.change {
                Change::Created { .. } => {
                    let record = scratch.get(&event.handoff_id).unwrap().as_created();
                    serde_json::json!({"kind": "created", "detail": {"record": record}}).to_string()
                }
                ref change => serde_json::to_string(change).unwrap(),
            };
            conn.execute(
                "INSERT INTO events (handoff_id, at, actor, kind, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
                rusqlite::params![
                    event.handoff_id, event.at.timestamp_micros(), event.actor,
                    event.change.kind(), detail,
                ],
            )
            .unwrap();
        }
        (claim.handoff, pending)
    }

    #[test]
    fn opens_a_store_written_by_schema_1() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.db");
        let (claimed, pending) = write_v1(&path);

        let store = Store::open(&path).unwrap();
        let version: u32 = Connection::open(&path)
            .unwrap()
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .unwrap();
        assert_eq!(version, schema::VERSION);
        // The migration filled in when the holder was last heard from, from the event log.
        let upgraded = store.get(&claimed.id).unwrap();
        assert_eq!(upgraded.heartbeat_at, claimed.heartbeat_at);
        assert_eq!(upgraded, claimed);
        assert_eq!(store.get(&pending.id).unwrap(), pending);
        // And the store works as usual afterwards.
        let claim = store
            .claim_next("codex", None, Duration::from_secs(60))
            .unwrap()
            .unwrap();
        assert_eq!(claim.handoff.id, pending.id);
        assert_eq!(
            store.complete(&claim, "ok").unwrap().status,
            Status::Completed
        );
        let events = store.events(None).unwrap();
        assert_eq!(events.len(), 5);
        // The `created` events lost their copy of the record and still replay to it.
        assert_eq!(
            events[0].change,
            Change::Created {
                task_id: "t1".into(),
                to_agent: None,
                priority: 0,
            }
        );
        for h in store.list(&Default::default()).unwrap() {
            let log: Vec<_> = events
                .iter()
                .filter(|e| e.handoff_id == h.id)
                .cloned()
                .collect();
            // The migration linked each handoff's events (version 6), before and after it.
            assert_eq!(store.events(Some(&h.id)).unwrap(), log);
            assert_eq!(crate::machine::replay(&h, log.iter()), Some(h));
        }
        drop(store);
        // Opening again is a no-op.
        assert_eq!(
            Store::open(&path)
                .unwrap()
                .list(&Default::default())
                .unwrap()
                .len(),
            2
        );
        // The claim made before the upgrade is in the open records' index (version 7): once
        // its lease has lapsed, it is found and settled.
        let lapsed = claimed.lease_until.unwrap() + chrono::Duration::seconds(1);
        let store = Store::open(&path)
            .unwrap()
            .with_clock(std::sync::Arc::new(crate::ManualClock::new(lapsed)));
        assert_eq!(store.reap().unwrap(), 1);
        assert_ne!(store.get(&claimed.id).unwrap().status, Status::Claimed);
    }

    #[test]
    fn refuses_newer_foreign_and_corrupt_files() {
        let dir = tempfile::tempdir().unwrap();
        let newer = dir.path().join("newer.db");
        drop(Store::open(&newer).unwrap());
        Connection::open(&newer)
            .unwrap()
            .pragma_update(None, "user_version", schema::VERSION + 1)
            .unwrap();
        let err = Store::open(&newer).unwrap_err();
        assert!(
            matches!(err, Error::Storage { .. }) && err.to_string().contains("newer"),
            "{err}"
        );

        let foreign = dir.path().join("foreign.db");
        Connection::open(&foreign)
            .unwrap()
            .execute_batch("CREATE TABLE notes (x)")
            .unwrap();
        let err = Store::open(&foreign).unwrap_err();
        assert!(err.to_string().contains("another application"), "{err}");
        let tables: i64 = Connection::open(&foreign)
            .unwrap()
            .query_row("SELECT count(*) FROM sqlite_master", [], |row| row.get(0))
            .unwrap();
        assert_eq!(tables, 1, "nothing was written into the foreign database");

        let corrupt = dir.path().join("corrupt.db");
        std::fs::write(&corrupt, b"this is not a database, just text").unwrap();
        let err = Store::open(&corrupt).unwrap_err();
        assert!(matches!(err, Error::Storage { .. }), "{err}");
        assert_eq!(
            std::fs::read(&corrupt).unwrap(),
            b"this is not a database, just text"
        );
    }
}

#[cfg(test)]
mod patience_tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use super::{SqliteOptions, Synchronous};
    use crate::{Error, NewHandoff, Store};

    /// A write lock held by another connection (one that does not queue on the turnstile)
    /// makes a write fail with a `Busy` error once `lock_patience` is spent, not later.
    #[test]
    fn lock_patience_bounds_the_wait() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("locked.db");
        let options = SqliteOptions {
            synchronous: Synchronous::Normal,
            lock_patience: Duration::from_millis(300),
        };
        let store = Store::open_with(&path, &options).unwrap();
        let holder = rusqlite::Connection::open(&path).unwrap();
        holder.execute_batch("BEGIN IMMEDIATE").unwrap();
        // Returns (instead of waiting the busy handler's old minute or forever) with an error.
        let err = store.create(NewHandoff::new("t", "g")).unwrap_err();
        assert!(matches!(err, Error::Busy { .. }), "{err}");
        holder.execute_batch("ROLLBACK").unwrap();
        assert!(store.create(NewHandoff::new("t", "g")).is_ok());
    }

    /// Any patience is accepted: one too long to add to the clock means no deadline, not a
    /// panic on the first write.
    #[test]
    fn an_endless_patience_is_no_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let options = SqliteOptions {
            synchronous: Synchronous::Normal,
            lock_patience: Duration::MAX,
        };
        let store = Store::open_with(dir.path().join("patient.db"), &options).unwrap();
        assert!(store.create(NewHandoff::new("t", "g")).is_ok());
    }

    #[test]
    fn a_refused_file_gets_no_lock_sidecar() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.txt");
        std::fs::write(&path, b"not a database").unwrap();
        assert!(Store::open(&path).is_err());
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["notes.txt"]);
    }
}
