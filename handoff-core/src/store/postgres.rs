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

mod conn;
mod passfile;
mod tls;
use conn::{CallError, Conn, ConnectError, Params};
use tls::TlsParams;
use tokio_postgres_rustls::MakeRustlsConnect;

/// The schema version this build writes.
pub const VERSION: i32 = 6;

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
    // 2 -> 3: the open work in insertion order, so that the next claim reads its first rows
    // instead of walking past every record claimed before it.
    "CREATE INDEX handoffs_pending ON handoffs (pos) WHERE status = 'pending';",
    // 3 -> 4: a task's path read after its lock is held, for a statement that finds the task
    // only as it runs (`lapsed_or_next`). A volatile function's query takes its own snapshot,
    // after the lock: the statement's snapshot, taken before, could miss the path's last
    // change. PL/pgSQL keeps its plans for the session (an SQL function is planned on every
    // call). `handoffs` is the one on the search path, the store's schema, as the function is.
    // The hops are JSON arrays in `HOP_COLUMNS`' order.
    "CREATE FUNCTION locked_path(lock_key integer, task text) RETURNS text
        LANGUAGE plpgsql VOLATILE AS $$
    BEGIN
        PERFORM pg_advisory_xact_lock(lock_key, hashtext(task));
        RETURN (SELECT COALESCE(json_agg(json_build_array(id, parent_id, from_agent, to_agent,
            claimed_by, kind, status, created_at) ORDER BY pos), '[]')::text
            FROM handoffs WHERE task_id = task);
    END $$;",
    // 4 -> 5: versioned documents the core keeps beside the records (tasks and their steps).
    "CREATE TABLE docs (
        kind TEXT NOT NULL,
        key TEXT NOT NULL,
        version BIGINT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (kind, key)
    );",
    // 5 -> 6: document keys in byte order, so that the documents under a prefix (a task's
    // steps, its log) are one range of the primary key instead of a scan of them all; and
    // claims that do not walk past the work addressed to other agents.
    "ALTER TABLE docs ALTER COLUMN key TYPE TEXT COLLATE \"C\";
    -- The open records in insertion order: with `handoffs_claimable` for an agent's own, the
    -- two ordered scans a claim merges (see `next_ctes`).
    CREATE INDEX handoffs_open ON handoffs (pos) WHERE status = 'pending' AND to_agent IS NULL;",
];

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

/// The parts of a `postgres://` URL: the driver's configuration, the schema, TLS, the reply
/// timeout when it names one, and the URL without its password for messages.
struct Target {
    config: tokio_postgres::Config,
    schema: String,
    tls: Option<MakeRustlsConnect>,
    reply_timeout: Option<Option<Duration>>,
    shown: String,
}

fn parse_url(url: &str) -> Result<Target> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut schema = "public".to_owned();
    let mut reply_timeout = None;
    let mut tls = TlsParams::default();
    let mut peers = PeerLimits::default();
    let mut fallback_name = None;
    let mut rest = Vec::new();
    let mut seen = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let Some((key, raw)) = pair.split_once('=') else {
            rest.push(pair);
            continue;
        };
        let ours = ["schema", "reply_timeout", "fallback_application_name"].contains(&key)
            || PeerLimits::KEYS.contains(&key)
            || TlsParams::KEYS.contains(&key);
        if !ours {
            rest.push(pair);
            continue;
        }
        // Which of two schemas (or TLS modes) was meant cannot be guessed.
        let setting = PeerLimits::setting(key);
        if seen.contains(&setting) {
            return Err(Error::invalid(format!("url.{key}"), "is given twice"));
        }
        seen.push(setting);
        let value = percent_decoded(raw).ok_or_else(|| {
            Error::invalid(
                format!("url.{key}"),
                "has a malformed %-escape or is not UTF-8",
            )
        })?;
        if key == "schema" {
            schema = value;
        } else if key == "reply_timeout" {
            reply_timeout = Some(seconds("url.reply_timeout", &value)?);
        } else if key == "fallback_application_name" {
            fallback_name = Some(value);
        } else if PeerLimits::KEYS.contains(&key) {
            peers.take(key, &value)?;
        } else {
            tls.take(key, &value)?;
        }
    }
    if !is_schema_name(&schema) {
        return Err(Error::invalid(
            "url.schema",
            "must be 1 to 63 characters from a-z 0-9 _, starting with a letter or _",
        ));
    }
    // The store creates and drops its tables there: never among PostgreSQL's own catalogs.
    if schema == "information_schema" || schema.starts_with("pg_") {
        return Err(Error::invalid(
            "url.schema",
            format!("must not be a system schema ({schema}): PostgreSQL keeps its catalogs there"),
        ));
    }
    let driver_url = if rest.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", rest.join("&"))
    };
    let mut config = tokio_postgres::Config::from_str(&driver_url).map_err(|e| unreadable(&e))?;
    peers.apply(&mut config, &rest);
    // What `pg_stat_activity` shows an operator for these sessions, unless the URL names it:
    // libpq's `fallback_application_name`, which the driver does not know, else `handoff`.
    if config.get_application_name().is_none() {
        config.application_name(fallback_name.as_deref().unwrap_or(DEFAULT_APPLICATION_NAME));
    }
    let tls = tls.apply(&mut config)?;
    let shown = crate::store::display_url(url);
    Ok(Target {
        config,
        schema,
        tls,
        reply_timeout,
        shown,
    })
}

/// The driver's refusal of a URL, naming the part it could not read: `url.NAME` for an option
/// it does not know or whose value it cannot read (its reason names the option between
/// backticks), `url` otherwise.
fn unreadable(e: &tokio_postgres::Error) -> Error {
    let Some(cause) = std::error::Error::source(e).map(ToString::to_string) else {
        return Error::invalid("url", format!("is not a PostgreSQL URL: {e}"));
    };
    let named = cause.split('`').nth(1).filter(|name| {
        name.len() <= 63 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    });
    match named {
        Some(name) if cause.starts_with("unknown option") => Error::invalid(
            format!("url.{name}"),
            "is not a parameter of a PostgreSQL URL",
        ),
        Some(name) => Error::invalid(format!("url.{name}"), format!("cannot be read ({cause})")),
        None => Error::invalid("url", format!("is not a PostgreSQL URL: {cause}")),
    }
}

/// A URL parameter given in seconds (decimals allowed): `0` for no limit.
fn seconds(field: &str, value: &str) -> Result<Option<Duration>> {
    let rule = "must be 0 (no limit) or a number of seconds from 0.001 to 4294967295";
    let seconds: f64 = value
        .trim()
        .parse()
        .map_err(|_| Error::invalid(field, rule))?;
    if seconds == 0.0 {
        return Ok(None);
    }
    if !(0.001..=f64::from(u32::MAX)).contains(&seconds) {
        return Err(Error::invalid(field, rule));
    }
    Ok(Some(Duration::from_secs_f64(seconds)))
}

/// The `application_name` of the store's sessions when the URL names none.
const DEFAULT_APPLICATION_NAME: &str = "handoff";

/// How long a statement sent on a connection may go unacknowledged before the connection is
/// taken for lost (the server's machine gone, the network between cut); the operating system's
/// default is about 15 minutes, which a call would spend blocked.
const LOST_AFTER: Duration = Duration::from_secs(30);
/// When an idle connection starts being probed, how often, and how many unanswered probes
/// lose it: about a minute, where the operating system's default is over two hours.
const PROBE_AFTER: Duration = Duration::from_secs(30);
const PROBE_EVERY: Duration = Duration::from_secs(10);
const PROBES: u32 = 3;

/// The URL's own limits for a lost peer, read as libpq reads them: the driver takes
/// `tcp_user_timeout` in seconds where libpq takes milliseconds (a URL written for libpq would
/// wait a thousand times longer), and knows `keepalives_count` only as `keepalives_retries`.
/// `None`: not given; `Some(None)`: `0`, the operating system's default.
#[derive(Default)]
struct PeerLimits {
    unacknowledged: Option<Option<Duration>>,
    probes: Option<Option<u32>>,
}

impl PeerLimits {
    const KEYS: [&'static str; 3] = ["tcp_user_timeout", "keepalives_count", "keepalives_retries"];

    /// The setting `key` sets: `keepalives_retries` is the driver's name for libpq's
    /// `keepalives_count`, so the two may not both be given.
    fn setting(key: &str) -> &str {
        if key == "keepalives_retries" {
            "keepalives_count"
        } else {
            key
        }
    }

    fn take(&mut self, key: &str, value: &str) -> Result<()> {
        // A whole number of `unit`; `None` for 0.
        let whole = |unit: &str| -> Result<Option<u32>> {
            let number: u32 = value.trim().parse().map_err(|_| {
                Error::invalid(
                    format!("url.{key}"),
                    format!("must be a whole number of {unit} (0: the operating system's default)"),
                )
            })?;
            Ok((number > 0).then_some(number))
        };
        if key == "tcp_user_timeout" {
            let millis = whole("milliseconds")?;
            self.unacknowledged = Some(millis.map(|ms| Duration::from_millis(ms.into())));
        } else {
            self.probes = Some(whole("probes")?);
        }
        Ok(())
    }

    /// Sets the limits the URL gave, and the store's own where it named none (`params`: the
    /// parameters the driver read).
    fn apply(&self, config: &mut tokio_postgres::Config, params: &[&str]) {
        let named = |key: &str| params.iter().any(|p| p.split('=').next() == Some(key));
        if let Some(limit) = self.unacknowledged.unwrap_or(Some(LOST_AFTER)) {
            config.tcp_user_timeout(limit);
        }
        if !named("keepalives_idle") {
            config.keepalives_idle(PROBE_AFTER);
        }
        if !named("keepalives_interval") {
            config.keepalives_interval(PROBE_EVERY);
        }
        if let Some(probes) = self.probes.unwrap_or(Some(PROBES)) {
            config.keepalives_retries(probes);
        }
    }
}

/// `text` with its `%XX` escapes decoded; `None` when one is malformed or the result is not
/// UTF-8.
fn percent_decoded(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&byte, after)) = rest.split_first() {
        if byte == b'%' {
            let hex = std::str::from_utf8(after.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &after[2..];
        } else {
            bytes.push(byte);
            rest = after;
        }
    }
    String::from_utf8(bytes).ok()
}

fn is_schema_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && name.len() <= 63
}

fn storage(what: &str, e: CallError) -> Error {
    if let Some(busy) = busy(what, &e) {
        return busy;
    }
    Error::Storage {
        message: format!("PostgreSQL: {what}: {}", reason(&e)),
        source: Some(Box::new(e)),
    }
}

/// Why a connection would find prepared statements it did not make, or miss its own: its
/// server session is shared between clients, which the store cannot work with (it keeps its
/// schema, settings and statements in its session).
const SHARED_SESSION: &str = "; the server session is shared with other clients between \
    transactions, as a pooler in transaction mode does (PgBouncer's pool_mode=transaction): \
    connect directly or through session pooling";

/// [`Error::Busy`] when `e` is the session's `lock_timeout` running out.
fn busy(what: &str, e: &CallError) -> Option<Error> {
    (e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE)).then(|| Error::Busy {
        message: format!(
            "PostgreSQL: {what}: another session held a lock for longer than the store's lock \
             patience (it may be stopped or stuck); nothing was changed"
        ),
    })
}

/// What the server said, when it refused (the driver's own text is only "db error"), or the
/// driver's description of what went wrong on its side with its causes (a refused certificate
/// is the cause of "error performing TLS handshake").
fn reason(e: &CallError) -> String {
    let Some(e) = e.driver() else {
        return e.to_string();
    };
    match e.as_db_error() {
        Some(db) => {
            let shared = [
                SqlState::DUPLICATE_PSTATEMENT,
                SqlState::INVALID_SQL_STATEMENT_NAME,
            ]
            .contains(db.code());
            let hint = if shared { SHARED_SESSION } else { "" };
            format!("{} ({}){hint}", db.message(), db.code().code())
        }
        None => {
            let mut text = e.to_string();
            let mut cause = std::error::Error::source(e);
            while let Some(inner) = cause {
                text = format!("{text}: {inner}");
                cause = inner.source();
            }
            text
        }
    }
}

/// Whether a failed call found its connection gone: closed, broken (an I/O error), or ended by
/// the server, whose FATAL errors end the session ("terminating connection due to
/// administrator command" is what a connection that sat idle through a restart says first).
fn connection_lost(e: &CallError) -> bool {
    let Some(e) = e.driver() else {
        // Given up on: running the write again on a new connection could wait as long again.
        return false;
    };
    e.is_closed()
        || e.as_db_error()
            .is_some_and(|db| db.parsed_severity() == Some(Severity::Fatal))
        || std::error::Error::source(e).is_some_and(|cause| cause.is::<std::io::Error>())
}

/// Whether running the transaction again can succeed.
fn is_retryable(e: &CallError) -> bool {
    e.code().is_some_and(|code| {
        *code == SqlState::T_R_SERIALIZATION_FAILURE
            || *code == SqlState::T_R_DEADLOCK_DETECTED
            || *code == SqlState::UNIQUE_VIOLATION
    })
}

const RECORD_COLUMNS: &str = "status, claimed_by, claim_token, lease_until, heartbeat_at, \
                              attempts, completed_at, outcome, body";
/// Open work at the time `$2` that a claim may take, addressed to anyone (see
/// [`next_ctes`] for whom).
const OPEN_WORK: &str = "status = 'pending' AND kind <> 'checkpoint' \
                         AND (expires_at IS NULL OR expires_at > $2)";
/// How many of the oldest open records, and of the oldest addressed to the claimer, a claim
/// considers (see [`next_ctes`]); when other claimers hold every one of them, how many it
/// considers next; and after that, all of them.
const CANDIDATES: [usize; 2] = [64, 4_096];

/// What a row of a claim's read is ([`next_claimable`](Tx::next_claimable), `lapsed_or_next`):
/// the value of its column [`KIND_COLUMN`].
#[derive(Clone, Copy, PartialEq)]
enum RowKind {
    /// Records are due (`lapsed_or_next`): they are read on their own and settled first, and
    /// the candidate the row may carry is not taken.
    Due = 0,
    /// The row is the record to take.
    Next = 1,
    /// No row is for the taking among the candidates, and all of them may have been taken by
    /// other claimers: there may be more beyond them (more [`CANDIDATES`] look).
    Saturated = 2,
}

/// The column after [`RECORD_COLUMNS`] that says a row's [`RowKind`].
const KIND_COLUMN: usize = 9;

impl RowKind {
    fn of(row: &Row) -> Result<RowKind> {
        match row.get::<_, i32>(KIND_COLUMN) {
            0 => Ok(RowKind::Due),
            1 => Ok(RowKind::Next),
            2 => Ok(RowKind::Saturated),
            other => Err(corrupt("claim read", other)),
        }
    }
}

/// The `WITH` entries that find the next record a claim may take, locked, skipping the rows
/// other claimers hold: `next`, with the columns `columns`, and for a claim from any task
/// `candidates`. `filter` adds conditions, `task` is the parameter naming the task when there
/// is one, `limit` how many candidates each scan gives (`None`: all).
///
/// A task has few records: they are walked in order. Otherwise the candidates are the oldest
/// of the open records and of the agent's own, two short ordered index scans (so that a claim
/// never walks past the work addressed to other agents), and the record is the oldest of them
/// that nobody holds, read through the primary key in order. Written as a union of the two
/// scans joined to the table, the scans under the join had no limit to stop at, and whether
/// PostgreSQL read a few entries or sorted every pending record depended on its statistics
/// (with small records it sorted: 1.5 ms a claim at 3,000 pending, against 0.1 ms this way).
fn next_ctes(columns: &str, task: Option<usize>, filter: &str, limit: Option<usize>) -> String {
    const LOCK: &str = "ORDER BY pos LIMIT 1 FOR UPDATE OF handoffs SKIP LOCKED";
    if let Some(task) = task {
        return format!(
            "next AS MATERIALIZED (SELECT {columns} FROM handoffs WHERE {OPEN_WORK} \
             AND (to_agent IS NULL OR to_agent = $1) AND task_id = ${task}{filter} {LOCK})"
        );
    }
    let limit = limit.map(|n| format!(" LIMIT {n}")).unwrap_or_default();
    let scan = |addressed: &str| {
        format!(
            "(SELECT pos FROM handoffs WHERE {OPEN_WORK} AND {addressed}{filter} \
             ORDER BY pos{limit})"
        )
    };
    format!(
        "candidates AS MATERIALIZED (SELECT ARRAY({} UNION ALL {}) AS list), \
         next AS MATERIALIZED (SELECT {columns} FROM handoffs \
           WHERE pos = ANY((SELECT list FROM candidates)::int8[]) AND status = 'pending' {LOCK})",
        scan("to_agent IS NULL"),
        scan("to_agent = $1")
    )
}

/// When a claim can have found its candidates all taken by other claimers, so that there may be
/// more beyond them ([`RowKind::Saturated`]): it looked at a `limit` of them (not at a task's
/// records) and there were as many. The condition, over [`next_ctes`]' `candidates`.
fn saturation(task: Option<usize>, limit: Option<usize>) -> Option<String> {
    let limit = limit.filter(|_| task.is_none())?;
    Some(format!(
        "(SELECT cardinality(list) FROM candidates) >= {limit}"
    ))
}

/// The row that reports [`RowKind::Saturated`] (every column of a record `NULL`), when the
/// claim took none of its candidates and [`saturation`] holds.
fn saturated_row(task: Option<usize>, limit: Option<usize>) -> String {
    let Some(saturated) = saturation(task, limit) else {
        return String::new();
    };
    let nulls = ["NULL"; KIND_COLUMN].join(", ");
    format!(
        " UNION ALL SELECT {nulls}, {} WHERE {saturated} AND NOT EXISTS (SELECT 1 FROM next)",
        RowKind::Saturated as i32
    )
}

/// The records with a time-driven change due at the time `$2`.
const DUE: &str = "((status = 'claimed' AND lease_until <= $2) \
                   OR (status = 'pending' AND expires_at IS NOT NULL AND expires_at <= $2))";
/// Whether any record is due at the time `$2` ([`DUE`]): the first entry of each of the two
/// indexes that order leases and expiries, where the search stops at once.
const DUE_PROBE: &str = "EXISTS (SELECT 1 FROM handoffs WHERE status = 'claimed' \
                           AND lease_until <= $2) \
                         OR EXISTS (SELECT 1 FROM handoffs WHERE status = 'pending' \
                           AND expires_at IS NOT NULL AND expires_at <= $2)";
/// Up to `$1` records due at `$2` ([`DUE`]), locked, oldest first. They are found as the
/// first entries of the two indexes that order leases and expiries, which stop at once when
/// nothing is due. A plan for `DUE` itself, made once for every time `$2`, could walk the whole
/// table in `pos` order looking for one, and did once most records were claimed (2.5 ms a
/// claim at 3,000 records).
fn due_sql() -> String {
    format!(
        "SELECT {RECORD_COLUMNS} FROM handoffs WHERE pos = ANY(ARRAY(\
           (SELECT pos FROM handoffs WHERE status = 'claimed' AND lease_until <= $2 \
            ORDER BY lease_until LIMIT $1) \
           UNION ALL \
           (SELECT pos FROM handoffs WHERE status = 'pending' AND expires_at IS NOT NULL \
            AND expires_at <= $2 ORDER BY expires_at LIMIT $1))) \
         AND {DUE} ORDER BY pos LIMIT $1 FOR UPDATE SKIP LOCKED"
    )
}
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

/// The hops `locked_path` returns.
fn hops_from_json(json: &str) -> Result<Vec<Hop>> {
    type Columns = (
        String,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        String,
        String,
        i64,
    );
    let rows: Vec<Columns> = serde_json::from_str(json).map_err(|e| corrupt("task path", e))?;
    rows.into_iter()
        .map(
            |(handoff_id, parent_id, from_agent, to_agent, claimed_by, kind, status, created)| {
                Ok(Hop {
                    handoff_id,
                    parent_id,
                    from_agent,
                    to_agent: to_agent.or(claimed_by),
                    kind: parsed::<Kind>("kind", &kind)?,
                    status: parsed::<Status>("status", &status)?,
                    created_at: from_micros(created),
                })
            },
        )
        .collect()
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

/// A connection and the statements prepared on it: a statement prepared once is sent as a
/// name and its parameters afterwards, one round trip where the text costs two.
struct Connection {
    client: Conn,
    statements: HashMap<String, Statement>,
}

/// The store's connections: those idle, and how many are open in all (idle or in use),
/// which `pool_size` bounds. A worker's listening connection is not counted while it
/// listens: it waits for notifications, and its claims take connections of their own.
#[derive(Default)]
struct Pool {
    idle: Vec<Connection>,
    open: usize,
    /// Calls waiting for a connection.
    waiting: usize,
}

/// A pooled connection, returned to the pool when dropped unless it broke.
struct Pooled<'a> {
    conn: Option<Connection>,
    backend: &'a PostgresBackend,
    /// Whether it counts against `pool_size` (all but a listening one).
    counted: bool,
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
    fn uncount(&mut self) {
        if std::mem::replace(&mut self.counted, false) {
            let mut pool = self.backend.pool();
            pool.open -= 1;
            self.backend.wake(pool);
        }
    }

    /// The client and its prepared statements, to be borrowed side by side.
    fn split(&mut self) -> (&mut Conn, &mut HashMap<String, Statement>) {
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

    fn pool(&self) -> MutexGuard<'_, Pool> {
        // Every change to the pool is one assignment: a panic leaves it consistent.
        self.pool.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Unlocks `pool`, waking the calls waiting for a connection, if any, to look again (a
    /// wake-up costs a system call, which most calls need not pay).
    fn wake(&self, pool: MutexGuard<'_, Pool>) {
        let waiting = pool.waiting > 0;
        drop(pool);
        if waiting {
            self.freed.notify_all();
        }
    }

    /// A connection from the pool, or a new one with the schema on its search path when
    /// fewer than `pool_size` are open. When all are in use, the call waits for one as long as
    /// the lock patience, then fails with [`Error::Busy`].
    fn client(&self) -> Result<Pooled<'_>> {
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
    fn connect_one(&self) -> Result<Connection> {
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

    /// Creates the schema or brings it to [`VERSION`], one process at a time.
    fn migrate(&self) -> Result<()> {
        let client = self.client()?;
        client
            .batch_execute("BEGIN")
            .map_err(|e| storage("cannot begin", e))?;
        let migrated = self.migrate_in(&client).and_then(|()| {
            client
                .batch_execute("COMMIT")
                .map_err(|e| storage("cannot commit the migration", e))
        });
        if migrated.is_err() {
            // A connection that cannot even roll back is not pooled again.
            let _ = client.batch_execute("ROLLBACK");
        }
        migrated
    }

    /// The migration's statements, in the transaction [`PostgresBackend::migrate`] began.
    fn migrate_in(&self, tx: &Conn) -> Result<()> {
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
            // A migration may rewrite a large table: no reply timeout cuts it short.
            tx.without_reply_timeout(|tx| tx.batch_execute(migration))
                .map_err(|e| storage(&format!("migration {from} failed"), e))?;
        }
        tx.execute("UPDATE handoff_schema SET version = $1", &[&VERSION])
            .map_err(|e| storage("cannot write the schema version", e))
            .map(drop)
    }

    /// Runs a read on a pooled connection; once more on a new connection when the pooled one
    /// turns out to be dead (the server restarted since it was last used), but not after a
    /// call gave up waiting for its reply, which the next would wait as long for.
    fn reading<T>(&self, mut op: impl FnMut(&mut Conn) -> Result<T>) -> Result<T> {
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
    fn drop_idle(&self) {
        let mut pool = self.pool();
        pool.open -= pool.idle.len();
        pool.idle.clear();
        self.wake(pool);
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
        after = last.get(10);
        for row in &rows {
            sink(Exported::Record {
                record: Box::new(record_from_row(row)?),
                claim_secret: stored_digest(row.get(9)),
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

/// Documents of kind `$1` with keys from `$2` on (the prefix) and below `$5` (the end of the
/// prefix's range, [`prefix_end`]), after `$3`, at most `$4`, in byte order (the keys'
/// collation, as SQLite and the other stores order them).
const DOCS_SQL: &str = "SELECT version, body, key FROM docs WHERE kind = $1 \
                        AND key >= $2 AND key < $5 AND key > $3 ORDER BY key LIMIT $4";
/// [`DOCS_SQL`] for a prefix whose range has no end (the empty one): `$5` is unused.
const DOCS_TO_END_SQL: &str = "SELECT version, body, key FROM docs WHERE kind = $1 \
                               AND key >= $2 AND key > $3 AND $5::text IS NULL \
                               ORDER BY key LIMIT $4";

/// The least key above every key that starts with `prefix`, in byte order (the order of code
/// points): the prefix with its last character raised by one, a last U+10FFFF dropped and the
/// one before raised; `None` when there is no such key (the empty prefix).
fn prefix_end(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        // `from_u32` skips the surrogates, which no string holds.
        if let Some(next) = (last as u32 + 1..=char::MAX as u32).find_map(char::from_u32) {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// The statement that lists the documents under `prefix`, and its `$5`.
fn docs_sql(prefix: &str) -> (&'static str, Option<String>) {
    match prefix_end(prefix) {
        Some(end) => (DOCS_SQL, Some(end)),
        None => (DOCS_TO_END_SQL, None),
    }
}

/// The document of kind `$1` and key `$2`.
const DOC_SQL: &str = "SELECT version, body FROM docs WHERE kind = $1 AND key = $2";
/// [`DOC_SQL`], the row locked until the transaction ends.
const DOC_LOCKED_SQL: &str =
    "SELECT version, body FROM docs WHERE kind = $1 AND key = $2 FOR UPDATE";

fn doc_from_row(row: &Row) -> Result<Doc> {
    let version: i64 = row.get(0);
    Ok(Doc {
        version: u64::try_from(version).map_err(|e| corrupt("document version", e))?,
        body: row.get(1),
    })
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

/// A record write held back by [`PgTx`]: its new lifecycle, the digest of its new claim secret,
/// or both in one row version.
#[derive(Default)]
struct Unsent {
    id: String,
    record: Option<Handoff>,
    secret: Option<Option<Vec<u8>>>,
}

/// How many new records a transaction holds back before it sends them.
const MAX_HELD_INSERTS: usize = 16;

/// A new record's row, held back by [`PgTx`], its values as PostgreSQL takes them.
struct Insert {
    id: String,
    task_id: String,
    kind: &'static str,
    from_agent: Option<String>,
    to_agent: Option<String>,
    parent_id: Option<String>,
    created_at: i64,
    expires_at: Option<i64>,
    status: &'static str,
    claimed_by: Option<String>,
    claim_token: Option<i64>,
    lease_until: Option<i64>,
    heartbeat_at: Option<i64>,
    attempts: i32,
    completed_at: Option<i64>,
    outcome: Option<String>,
    body: String,
}

impl Insert {
    fn of(h: &Handoff) -> Insert {
        Insert {
            id: h.id.clone(),
            task_id: h.task_id.clone(),
            kind: h.kind.as_str(),
            from_agent: h.from_agent.clone(),
            to_agent: h.to_agent.clone(),
            parent_id: h.parent_id.clone(),
            created_at: micros(h.created_at),
            expires_at: opt_micros(h.expires_at),
            status: h.status.as_str(),
            claimed_by: h.claimed_by.clone(),
            claim_token: h.claim_token.map(|t| t as i64),
            lease_until: opt_micros(h.lease_until),
            heartbeat_at: opt_micros(h.heartbeat_at),
            attempts: h.attempts as i32,
            completed_at: opt_micros(h.completed_at),
            outcome: h.outcome.clone(),
            body: h.stored_body(),
        }
    }

    /// The statement that inserts one row, its values from `$first` on.
    fn sql(first: usize) -> String {
        let values: Vec<String> = (first..first + 17).map(|n| format!("${n}")).collect();
        format!(
            "INSERT INTO handoffs (id, task_id, kind, from_agent, to_agent, parent_id, \
             created_at, expires_at, status, claimed_by, claim_token, lease_until, \
             heartbeat_at, attempts, completed_at, outcome, body) VALUES ({})",
            values.join(", ")
        )
    }

    fn params(&self) -> [&(dyn ToSql + Sync); 17] {
        [
            &self.id,
            &self.task_id,
            &self.kind,
            &self.from_agent,
            &self.to_agent,
            &self.parent_id,
            &self.created_at,
            &self.expires_at,
            &self.status,
            &self.claimed_by,
            &self.claim_token,
            &self.lease_until,
            &self.heartbeat_at,
            &self.attempts,
            &self.completed_at,
            &self.outcome,
            &self.body,
        ]
    }
}

/// Document writes held back by [`PgTx`], one per document: a later write of a document
/// already held replaces the held one (an update of a held insert stays an insert).
#[derive(Default)]
struct DocWrites {
    rows: Vec<DocWrite>,
    /// `(kind, key)` → its place in `rows`.
    index: HashMap<(String, String), usize>,
}

struct DocWrite {
    kind: String,
    key: String,
    version: i64,
    body: String,
    insert: bool,
}

/// The columns of `rows`, as arrays for [`doc_writes_sql`].
fn doc_columns<'a>(rows: &[&'a DocWrite]) -> (Vec<&'a str>, Vec<&'a str>, Vec<i64>, Vec<&'a str>) {
    (
        rows.iter().map(|w| w.kind.as_str()).collect(),
        rows.iter().map(|w| w.key.as_str()).collect(),
        rows.iter().map(|w| w.version).collect(),
        rows.iter().map(|w| w.body.as_str()).collect(),
    )
}

/// Two data-modifying `WITH` entries that write a batch of [`DocWrites`], their arrays from
/// `$first` on: kinds, keys, versions and bodies of the inserts, then of the updates.
fn doc_writes_sql(first: usize) -> String {
    let n = |i: usize| first + i;
    format!(
        "docs_inserted AS (INSERT INTO docs (kind, key, version, body) \
         SELECT * FROM unnest(${}::text[], ${}::text[], ${}::int8[], ${}::text[])), \
         docs_updated AS (UPDATE docs SET version = u.version, body = u.body \
         FROM unnest(${}::text[], ${}::text[], ${}::int8[], ${}::text[]) \
         AS u(kind, key, version, body) WHERE docs.kind = u.kind AND docs.key = u.key)",
        n(0),
        n(1),
        n(2),
        n(3),
        n(4),
        n(5),
        n(6),
        n(7)
    )
}

/// The arrays [`doc_writes_sql`] takes.
struct DocArrays<'a> {
    inserts: (Vec<&'a str>, Vec<&'a str>, Vec<i64>, Vec<&'a str>),
    updates: (Vec<&'a str>, Vec<&'a str>, Vec<i64>, Vec<&'a str>),
}

impl<'a> DocArrays<'a> {
    fn of(writes: &'a DocWrites) -> DocArrays<'a> {
        let (inserts, updates): (Vec<&DocWrite>, Vec<&DocWrite>) =
            writes.rows.iter().partition(|w| w.insert);
        DocArrays {
            inserts: doc_columns(&inserts),
            updates: doc_columns(&updates),
        }
    }

    fn params(&self) -> [&(dyn ToSql + Sync); 8] {
        let (ik, ikey, iv, ib) = &self.inserts;
        let (uk, ukey, uv, ub) = &self.updates;
        [ik, ikey, iv, ib, uk, ukey, uv, ub]
    }
}

impl DocWrites {
    /// Holds a write; `false` when it is a second insert of a document held already, which
    /// must reach the server after the first (to fail there, as it would have on its own).
    fn hold(&mut self, kind: &str, key: &str, doc: &Doc, insert: bool) -> bool {
        let version = doc.version as i64;
        if let Some(&at) = self.index.get(&(kind.to_owned(), key.to_owned())) {
            if insert {
                return false;
            }
            let held = &mut self.rows[at];
            held.version = version;
            held.body.clone_from(&doc.body);
            return true;
        }
        self.index
            .insert((kind.to_owned(), key.to_owned()), self.rows.len());
        self.rows.push(DocWrite {
            kind: kind.to_owned(),
            key: key.to_owned(),
            version,
            body: doc.body.clone(),
            insert,
        });
        true
    }
}

/// The lifecycle columns [`Tx::update`] writes, numbered from `$first` (the id) on; the claim
/// secret's digest follows when `with_secret`.
fn update_sql(first: usize, with_secret: bool, record: bool) -> String {
    let n = |i: usize| first + i;
    let mut set: Vec<String> = Vec::new();
    if record {
        for (i, column) in [
            "status",
            "claimed_by",
            "claim_token",
            "lease_until",
            "heartbeat_at",
            "attempts",
            "completed_at",
            "outcome",
        ]
        .iter()
        .enumerate()
        {
            set.push(format!("{column} = ${}", n(i + 1)));
        }
    }
    if with_secret {
        set.push(format!("claim_secret = ${}", n(set.len() + 1)));
    }
    format!("UPDATE handoffs SET {} WHERE id = ${first}", set.join(", "))
}

/// A record's lifecycle fields as PostgreSQL values, in [`update_sql`]'s order.
struct Lifecycle<'a> {
    status: &'static str,
    claimed_by: &'a Option<String>,
    claim_token: Option<i64>,
    lease_until: Option<i64>,
    heartbeat_at: Option<i64>,
    attempts: i32,
    completed_at: Option<i64>,
    outcome: &'a Option<String>,
}

impl<'a> Lifecycle<'a> {
    fn of(h: &'a Handoff) -> Lifecycle<'a> {
        Lifecycle {
            status: h.status.as_str(),
            claimed_by: &h.claimed_by,
            claim_token: h.claim_token.map(|t| t as i64),
            lease_until: opt_micros(h.lease_until),
            heartbeat_at: opt_micros(h.heartbeat_at),
            attempts: h.attempts as i32,
            completed_at: opt_micros(h.completed_at),
            outcome: &h.outcome,
        }
    }

    fn params(&self) -> [&(dyn ToSql + Sync); 8] {
        [
            &self.status,
            self.claimed_by,
            &self.claim_token,
            &self.lease_until,
            &self.heartbeat_at,
            &self.attempts,
            &self.completed_at,
            self.outcome,
        ]
    }
}

/// One write transaction.
struct PgTx<'c> {
    conn: &'c Conn,
    /// Whether `BEGIN` went (with the first statement).
    begun: bool,
    /// Whether `COMMIT` went, or was not needed.
    ended: bool,
    /// Whether nothing of this transaction can have taken effect: no round trip of it was
    /// answered and no `COMMIT` went. While so, a lost connection means nothing was done; once
    /// a `COMMIT` has gone, a lost answer leaves it unknown, and the write is not run again.
    untouched: bool,
    /// The connection's prepared statements.
    statements: &'c mut HashMap<String, Statement>,
    /// The last record write not sent yet: held back so that it travels with the next
    /// statement the transaction must send anyway (at best the events' insert at commit),
    /// sent on its own before anything else reads or writes.
    unsent: Option<Unsent>,
    /// New records not sent yet: sent before the next statement that reads, or at commit
    /// inside the statement that writes the events.
    unsent_inserts: Vec<Insert>,
    /// Document writes not sent yet: sent together, as one statement, before the next
    /// statement that reads or at commit, however many the transaction made.
    unsent_docs: DocWrites,
    /// The driver's error behind the last failed call, to tell a retryable failure apart.
    error: Option<CallError>,
    /// Events, written at the end under the event lock (see the module doc).
    events: Vec<NewEvent>,
    /// The tasks whose path this transaction has locked.
    locked_tasks: Vec<String>,
    /// A locked task's path read ahead by `lapsed_or_next`, until this transaction writes.
    path: Option<(String, Vec<Hop>)>,
    read_secret: ReadSecret,
    event_lock: i64,
    task_lock_base: i64,
    /// Where to tell waiting workers that work became claimable.
    channel: String,
}

impl Drop for PgTx<'_> {
    fn drop(&mut self) {
        // A transaction left unfinished (the closure refused, a statement failed) is rolled
        // back before its connection goes back to the pool; one that cannot be is closed.
        if self.begun && !self.ended {
            let _ = self.conn.batch_execute("ROLLBACK");
        }
    }
}

impl PgTx<'_> {
    /// The statement `sql`, prepared on this connection the first time it is used.
    fn statement(&mut self, sql: &str) -> std::result::Result<Statement, CallError> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.conn.prepare(sql);
        let statement = self.answered(statement)?;
        self.statements.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }

    /// `result`, noting that the server answered.
    fn answered<T>(
        &mut self,
        result: std::result::Result<T, CallError>,
    ) -> std::result::Result<T, CallError> {
        self.untouched &= result.is_err();
        result
    }

    /// Whether the next statement must carry the transaction's `BEGIN`: the first one does.
    fn begin(&mut self) -> bool {
        !std::mem::replace(&mut self.begun, true)
    }

    /// Runs `sql` as a prepared statement; the rows it returns.
    fn query(&mut self, sql: &str, params: Params<'_>) -> std::result::Result<Vec<Row>, CallError> {
        let statement = self.statement(sql)?;
        let begin = self.begin();
        let rows = self
            .conn
            .query_in_transaction(begin, &statement, params, false);
        self.answered(rows)
    }

    /// Runs `sql` as a prepared statement; how many rows it changed.
    fn execute(&mut self, sql: &str, params: Params<'_>) -> std::result::Result<u64, CallError> {
        self.execute_then(sql, params, false)
    }

    /// Runs `sql` as a prepared statement and commits, in one round trip (with the `BEGIN`
    /// too when it is the transaction's only statement).
    fn execute_and_commit(
        &mut self,
        sql: &str,
        params: Params<'_>,
    ) -> std::result::Result<(), CallError> {
        self.execute_then(sql, params, true).map(drop)
    }

    fn execute_then(
        &mut self,
        sql: &str,
        params: Params<'_>,
        commit: bool,
    ) -> std::result::Result<u64, CallError> {
        let statement = self.statement(sql)?;
        let begin = self.begin();
        if commit {
            self.ended = true;
            self.untouched = false;
        }
        let changed = self
            .conn
            .execute_in_transaction(begin, &statement, params, commit);
        self.answered(changed)
    }

    /// Commits what was sent; a transaction that sent nothing has nothing to commit.
    fn commit(&mut self) -> std::result::Result<(), CallError> {
        if !std::mem::replace(&mut self.ended, true) && self.begun {
            self.untouched = false;
            self.conn.batch_execute("COMMIT")?;
        }
        Ok(())
    }

    fn check<T>(&mut self, what: &str, result: std::result::Result<T, CallError>) -> Result<T> {
        result.map_err(|e| {
            let err = busy(what, &e)
                .unwrap_or_else(|| Error::storage(format!("PostgreSQL: {what}: {}", reason(&e))));
            self.error = Some(e);
            err
        })
    }

    /// Writes the events in commit order (one statement, under the event lock, with the record
    /// write still unsent), tells waiting workers when work became claimable (PostgreSQL
    /// delivers the notification at commit), and commits.
    fn finish(&mut self) -> std::result::Result<(), CallError> {
        if self.events.is_empty() {
            self.send_inserts()?;
            self.send_unsent()?;
            // A transaction that wrote only documents (an agent's memory, say) sends them
            // with its `COMMIT`.
            return self.send_docs(true);
        }
        let new_work = self.events.iter().any(|e| {
            matches!(
                e.change,
                Change::Created { .. }
                    | Change::Released { .. }
                    | Change::LeaseExpired { .. }
                    | Change::AttemptFailed { .. }
            )
        });
        let events = std::mem::take(&mut self.events);
        let ids: Vec<&str> = events.iter().map(|e| e.handoff_id.as_str()).collect();
        let ats: Vec<i64> = events.iter().map(|e| micros(e.at)).collect();
        let actors: Vec<Option<&str>> = events.iter().map(|e| e.actor.as_deref()).collect();
        let kinds: Vec<&str> = events.iter().map(|e| e.change.kind()).collect();
        let details: Vec<String> = events
            .iter()
            .map(|e| serde_json::to_string(&e.change).unwrap_or_default())
            .collect();
        let lock = self.event_lock;
        // Most transactions write one event (a claim, a completion): its values go as they
        // are, which spares the server the arrays' parsing, their unnesting and its sort.
        let single = events.len() == 1;
        let mut params: Vec<&(dyn ToSql + Sync)> = if single {
            vec![&lock, &ids[0], &ats[0], &actors[0], &kinds[0], &details[0]]
        } else {
            vec![&lock, &ids, &ats, &actors, &kinds, &details]
        };
        // Everything held back travels in this one statement, each write a `WITH` entry.
        let mut with: Vec<String> = Vec::new();
        let inserts = std::mem::take(&mut self.unsent_inserts);
        for (n, insert) in inserts.iter().enumerate() {
            with.push(format!(
                "inserted_{n} AS ({})",
                Insert::sql(params.len() + 1)
            ));
            params.extend(insert.params());
        }
        let unsent = self.unsent.take();
        let lifecycle = unsent
            .as_ref()
            .and_then(|u| u.record.as_ref())
            .map(Lifecycle::of);
        if let Some(u) = &unsent {
            let update = update_sql(params.len() + 1, u.secret.is_some(), lifecycle.is_some());
            with.push(format!("written AS ({update})"));
            params.push(&u.id);
            if let Some(lifecycle) = &lifecycle {
                params.extend(lifecycle.params());
            }
            if let Some(secret) = &u.secret {
                params.push(secret);
            }
        }
        let writes = std::mem::take(&mut self.unsent_docs);
        let arrays = DocArrays::of(&writes);
        if !writes.rows.is_empty() {
            with.push(doc_writes_sql(params.len() + 1));
            params.extend(arrays.params());
        }
        // Every row needs the lock's row, so the lock is held before the first `seq` is
        // drawn; rows are numbered in the order of the array.
        with.push("lock AS (SELECT pg_advisory_xact_lock_shared($1))".to_owned());
        let mut from = "lock".to_owned();
        // Waiting workers learn of new work at commit, from the same statement.
        let channel = self.channel.clone();
        if new_work {
            with.push(format!(
                "notified AS (SELECT pg_notify(${}, ''))",
                params.len() + 1
            ));
            params.push(&channel);
            from.push_str(", notified");
        }
        let rows = if single {
            format!("SELECT $2::text, $3::int8, $4::text, $5::text, $6::text FROM {from}")
        } else {
            format!(
                "SELECT e.handoff_id, e.at, e.actor, e.kind, e.detail FROM {from}, \
                 unnest($2::text[], $3::int8[], $4::text[], $5::text[], $6::text[]) \
                 WITH ORDINALITY AS e(handoff_id, at, actor, kind, detail, n) ORDER BY e.n"
            )
        };
        let sql = format!(
            "WITH {} INSERT INTO events (handoff_id, at, actor, kind, detail) {rows}",
            with.join(", ")
        );
        self.execute_and_commit(&sql, &params)
    }

    /// Sends the record write held back, if any.
    fn send_unsent(&mut self) -> std::result::Result<(), CallError> {
        let Some(u) = self.unsent.take() else {
            return Ok(());
        };
        self.path = None;
        let lifecycle = u.record.as_ref().map(Lifecycle::of);
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&u.id];
        if let Some(lifecycle) = &lifecycle {
            params.extend(lifecycle.params());
        }
        if let Some(secret) = &u.secret {
            params.push(secret);
        }
        let sql = update_sql(1, u.secret.is_some(), lifecycle.is_some());
        self.execute(&sql, &params).map(drop)
    }

    /// The held-back write of the record `id`, to add to: another record's is sent first.
    fn hold(&mut self, id: &str) -> Result<&mut Unsent> {
        let inserted_unsent = self.unsent_inserts.iter().any(|i| i.id == id);
        if inserted_unsent || self.unsent.as_ref().is_some_and(|u| u.id != id) {
            self.flush()?;
        }
        Ok(self.unsent.get_or_insert_with(|| Unsent {
            id: id.to_owned(),
            ..Unsent::default()
        }))
    }

    /// Sends the document writes held back, if any, in one statement; with the transaction's
    /// `COMMIT` when `commit` (which goes alone when there are none).
    fn send_docs(&mut self, commit: bool) -> std::result::Result<(), CallError> {
        let writes = std::mem::take(&mut self.unsent_docs);
        if writes.rows.is_empty() {
            return if commit { self.commit() } else { Ok(()) };
        }
        let arrays = DocArrays::of(&writes);
        let sql = format!("WITH {} SELECT 1", doc_writes_sql(1));
        if commit {
            self.execute_and_commit(&sql, &arrays.params())
        } else {
            self.execute(&sql, &arrays.params()).map(drop)
        }
    }

    /// Sends the new records held back, if any, one statement each.
    fn send_inserts(&mut self) -> std::result::Result<(), CallError> {
        // Every read flushes first: with nothing held, not even the statement's text is made.
        if self.unsent_inserts.is_empty() {
            return Ok(());
        }
        let sql = Insert::sql(1);
        for insert in std::mem::take(&mut self.unsent_inserts) {
            self.execute(&sql, &insert.params())?;
        }
        Ok(())
    }

    /// Sends the writes held back ([`PgTx::send_inserts`], [`PgTx::send_unsent`],
    /// [`PgTx::send_docs`]) before a statement that must see them.
    fn flush(&mut self) -> Result<()> {
        let result = self.send_inserts();
        self.check("cannot insert a record", result)?;
        let result = self.send_unsent();
        self.check("cannot update a record", result)?;
        let result = self.send_docs(false);
        self.check("cannot write a document", result)
    }

    /// Sends the document writes held back before a statement on documents that must see
    /// them. Record writes stay held: no statement on documents reads records, and one
    /// statement less in a claim or a completion that reads its step is a round trip less.
    fn flush_docs(&mut self) -> Result<()> {
        let result = self.send_docs(false);
        self.check("cannot write a document", result)
    }

    /// Holds a document write for [`PgTx::send_docs`].
    fn hold_doc(&mut self, kind: &str, key: &str, doc: &Doc, insert: bool) -> Result<()> {
        if !self.unsent_docs.hold(kind, key, doc, insert) {
            self.flush()?;
            self.unsent_docs.hold(kind, key, doc, insert);
        }
        Ok(())
    }

    /// [`Tx::next_claimable`], looking first at `CANDIDATES[first]` candidates of each scan: a
    /// claim that found every one of the first ones held starts with the next number.
    fn claimable(
        &mut self,
        agent: &str,
        task_id: Option<&str>,
        now: DateTime<Utc>,
        after: Option<&str>,
        first: usize,
    ) -> Result<Option<Handoff>> {
        self.flush()?;
        let now = micros(now);
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&agent, &now];
        let task = task_id.as_ref().map(|task| {
            params.push(task);
            params.len()
        });
        let filter = match &after {
            Some(after) => {
                params.push(after);
                format!(
                    " AND pos > COALESCE((SELECT pos FROM handoffs WHERE id = ${}), 0)",
                    params.len()
                )
            }
            None => String::new(),
        };
        let limits = CANDIDATES.iter().skip(first).copied().map(Some);
        for limit in limits.chain([None]) {
            let sql = format!(
                "WITH {} SELECT {RECORD_COLUMNS}, {} FROM next{}",
                next_ctes(RECORD_COLUMNS, task, &filter, limit),
                RowKind::Next as i32,
                saturated_row(task, limit)
            );
            let result = self.query(&sql, &params);
            let rows = self.check("cannot read claimable records", result)?;
            match rows.first() {
                Some(row) if RowKind::of(row)? == RowKind::Saturated => continue,
                Some(row) => return record_from_row(row).map(Some),
                None => return Ok(None),
            }
        }
        Ok(None)
    }

    /// The document `key` of `kind`, read by `sql` ([`DOC_SQL`] or [`DOC_LOCKED_SQL`]).
    fn read_doc(&mut self, sql: &str, kind: &str, key: &str) -> Result<Option<Doc>> {
        self.flush_docs()?;
        let rows = self.query(sql, &[&kind, &key]);
        self.check("cannot read a document", rows)?
            .first()
            .map(doc_from_row)
            .transpose()
    }
}

impl Tx for PgTx<'_> {
    fn get(&mut self, id: &str) -> Result<Option<Handoff>> {
        self.flush()?;
        // The transaction reads a record to change it: lock it until commit.
        let rows = self.query(
            &format!(
                "SELECT {RECORD_COLUMNS}, claim_secret FROM handoffs WHERE id = $1 FOR UPDATE"
            ),
            &[&id],
        );
        let Some(row) = self.check("cannot read a record", rows)?.into_iter().next() else {
            return Ok(None);
        };
        let record = record_from_row(&row)?;
        self.read_secret.keep(&record.id, stored_digest(row.get(9)));
        Ok(Some(record))
    }

    fn insert(&mut self, h: &Handoff) -> Result<()> {
        self.path = None;
        // A batch sends its records as it goes: one statement takes at most 65,535 values.
        if self.unsent_inserts.len() >= MAX_HELD_INSERTS {
            self.flush()?;
        }
        self.unsent_inserts.push(Insert::of(h));
        Ok(())
    }

    fn update(&mut self, h: &Handoff) -> Result<()> {
        // A record made in this transaction and not sent yet is sent as it is now.
        if let Some(held) = self.unsent_inserts.iter_mut().find(|i| i.id == h.id) {
            *held = Insert::of(h);
            return Ok(());
        }
        let unsent = self.hold(&h.id)?;
        unsent.record = Some(h.clone());
        Ok(())
    }

    fn append(&mut self, event: NewEvent) -> Result<()> {
        self.events.push(event);
        Ok(())
    }

    /// The row (with its claim digest) and its events, in one statement; events of it this
    /// transaction holds back go unwritten.
    fn delete_record(&mut self, id: &str) -> Result<()> {
        self.events.retain(|e| e.handoff_id != id);
        self.flush()?;
        self.read_secret.forget(id);
        self.path = None;
        let result = self.execute(
            "WITH gone AS (DELETE FROM events WHERE handoff_id = $1) \
             DELETE FROM handoffs WHERE id = $1",
            &[&id],
        );
        self.check("cannot remove a record", result).map(drop)
    }

    fn set_setting(&mut self, key: &str, value: &str) -> Result<()> {
        self.flush()?;
        let result = self.execute(
            "INSERT INTO settings (key, value) VALUES ($1, $2) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[&key, &value],
        );
        self.check("cannot write a setting", result).map(drop)
    }

    fn claim_secret(&mut self, id: &str) -> Result<Option<[u8; 32]>> {
        if let Some(Unsent {
            id: unsent,
            secret: Some(digest),
            ..
        }) = &self.unsent
            && unsent == id
        {
            return Ok(stored_digest(digest.as_deref()));
        }
        if let Some(secret) = self.read_secret.of(id) {
            return Ok(secret);
        }
        let result = self.query("SELECT claim_secret FROM handoffs WHERE id = $1", &[&id]);
        Ok(self
            .check("cannot read a claim", result)?
            .first()
            .and_then(|row| stored_digest(row.get(0))))
    }

    fn set_claim_secret(&mut self, id: &str, digest: Option<[u8; 32]>) -> Result<()> {
        self.read_secret.forget(id);
        let unsent = self.hold(id)?;
        unsent.secret = Some(digest.map(|d| d.to_vec()));
        Ok(())
    }

    fn hops(&mut self, task_id: &str) -> Result<Vec<Hop>> {
        self.flush()?;
        if let Some((task, hops)) = self.path.take()
            && task == task_id
        {
            return Ok(hops);
        }
        // The chain policy reads the path and then adds to it: one transaction per task at a
        // time, or two could both pass a limit that only one of them may.
        if !self.locked_tasks.iter().any(|t| t == task_id) {
            let key = self.task_lock_base;
            let result = self.execute(
                "SELECT pg_advisory_xact_lock($1, hashtext($2))",
                &[&((key >> 8) as i32), &task_id],
            );
            self.check("cannot lock a task", result)?;
            self.locked_tasks.push(task_id.to_owned());
        }
        let result = self.query(
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
        self.claimable(agent, task_id, now, after, 0)
    }

    fn lapsed(&mut self, now: DateTime<Utc>, limit: usize) -> Result<Vec<Handoff>> {
        self.flush()?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let result = self.query(&due_sql(), &[&limit, &micros(now)]);
        self.check("cannot read lapsed records", result)?
            .iter()
            .map(record_from_row)
            .collect()
    }

    /// One statement with a small plan (PostgreSQL builds every node of a plan again at each
    /// execution, and reading the due records in the same statement made that half of a
    /// claim's CPU): the candidate, locked; its task's path locked and read when asked (after
    /// the row is locked, so only for the row returned), kept for the [`Tx::hops`] that
    /// follows; and whether any record is due, probed on the indexes of leases and expiries.
    /// Only when one is due are they read, by [`Tx::lapsed`].
    fn lapsed_or_next(
        &mut self,
        agent: &str,
        task_id: Option<&str>,
        now: DateTime<Utc>,
        limit: usize,
        lock_open_path: bool,
    ) -> Result<(Vec<Handoff>, Option<Handoff>)> {
        self.flush()?;
        let at = micros(now);
        let path_lock = (self.task_lock_base >> 8) as i32;
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&agent, &at, &lock_open_path, &path_lock];
        let task = task_id.as_ref().map(|task| {
            params.push(task);
            params.len()
        });
        let candidates = Some(CANDIDATES[0]);
        let next = next_ctes(
            &format!("{RECORD_COLUMNS}, to_agent, task_id"),
            task,
            "",
            candidates,
        );
        let saturated = saturation(task, candidates).unwrap_or_else(|| "false".to_owned());
        let sql = format!(
            "WITH probe AS MATERIALIZED (SELECT {DUE_PROBE} AS due), {next} \
             SELECT {RECORD_COLUMNS}, CASE WHEN probe.due THEN {} \
               WHEN next.status IS NOT NULL THEN {} ELSE {} END, \
               CASE WHEN $3 AND NOT probe.due AND next.to_agent IS NULL \
                 AND next.task_id IS NOT NULL THEN locked_path($4, next.task_id) END \
             FROM probe LEFT JOIN next ON true \
             WHERE probe.due OR next.status IS NOT NULL OR {saturated}",
            RowKind::Due as i32,
            RowKind::Next as i32,
            RowKind::Saturated as i32,
        );
        let result = self.query(&sql, &params);
        let rows = self.check("cannot read claimable records", result)?;
        let Some(row) = rows.first() else {
            return Ok((Vec::new(), None));
        };
        match RowKind::of(row)? {
            RowKind::Due => {
                let due = self.lapsed(now, limit)?;
                if due.is_empty() {
                    // Other claimers hold every one of them, to settle them: the claim goes on.
                    return Ok((due, self.claimable(agent, task_id, now, None, 0)?));
                }
                Ok((due, None))
            }
            RowKind::Next => {
                let record = record_from_row(row)?;
                if let Some(hops) = row.get::<_, Option<&str>>(KIND_COLUMN + 1) {
                    self.locked_tasks.push(record.task_id.clone());
                    self.path = Some((record.task_id.clone(), hops_from_json(hops)?));
                }
                Ok((Vec::new(), Some(record)))
            }
            // Every candidate was taken: more of the queue is looked at, and the chain policy's
            // read of the path (`hops`) locks it itself.
            RowKind::Saturated => Ok((Vec::new(), self.claimable(agent, task_id, now, None, 1)?)),
        }
    }

    fn peek_doc(&mut self, kind: &str, key: &str) -> Result<Option<Doc>> {
        self.read_doc(DOC_SQL, kind, key)
    }

    fn doc(&mut self, kind: &str, key: &str) -> Result<Option<Doc>> {
        self.read_doc(DOC_LOCKED_SQL, kind, key)
    }

    /// One round trip, the rows locked in key order.
    fn docs_at(&mut self, places: &[(&str, &str)]) -> Result<Vec<Option<Doc>>> {
        self.flush_docs()?;
        let kinds: Vec<&str> = places.iter().map(|(kind, _)| *kind).collect();
        let keys: Vec<&str> = places.iter().map(|(_, key)| *key).collect();
        let rows = self.query(
            "SELECT d.version, d.body, p.n FROM docs AS d \
             JOIN unnest($1::text[], $2::text[]) WITH ORDINALITY AS p(kind, key, n) \
             ON d.kind = p.kind AND d.key = p.key ORDER BY d.kind, d.key FOR UPDATE OF d",
            &[&kinds, &keys],
        );
        let mut found = vec![None; places.len()];
        for row in self.check("cannot read documents", rows)? {
            let at = usize::try_from(row.get::<_, i64>(2) - 1)
                .map_err(|e| corrupt("document place", e))?;
            if let Some(slot) = found.get_mut(at) {
                *slot = Some(doc_from_row(&row)?);
            }
        }
        Ok(found)
    }

    fn insert_doc(&mut self, kind: &str, key: &str, doc: &Doc) -> Result<()> {
        self.hold_doc(kind, key, doc, true)
    }

    fn update_doc(&mut self, kind: &str, key: &str, doc: &Doc) -> Result<()> {
        self.hold_doc(kind, key, doc, false)
    }

    fn delete_doc(&mut self, kind: &str, key: &str) -> Result<()> {
        self.flush_docs()?;
        let result = self.execute(
            "DELETE FROM docs WHERE kind = $1 AND key = $2",
            &[&kind, &key],
        );
        self.check("cannot remove a document", result).map(drop)
    }

    fn docs(&mut self, kind: &str, prefix: &str) -> Result<Vec<(String, Doc)>> {
        self.flush_docs()?;
        let (sql, end) = docs_sql(prefix);
        let rows = self.query(sql, &[&kind, &prefix, &"", &i64::MAX, &end]);
        self.check("cannot list documents", rows)?
            .iter()
            .map(|row| Ok((row.get::<_, String>(2), doc_from_row(row)?)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

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
mod conformance {
    #![allow(clippy::unwrap_used)]

    use super::{PostgresBackend, PostgresOptions};
    use crate::Store;

    /// A fresh schema, dropped when the case ends.
    pub(super) struct Schema {
        url: String,
        name: String,
    }

    impl Schema {
        /// A new schema's name on the server at `url` (created by the first store on it).
        pub(super) fn fresh(url: &str) -> Schema {
            Schema {
                url: url.to_owned(),
                name: format!("hc_test_{:016x}", fastrand::u64(..)),
            }
        }

        /// The URL of this schema's store on `server` (the test server, or another way to
        /// reach it), with `params` (`&key=value…`) after the schema.
        pub(super) fn url_on(&self, server: &str, params: &str) -> String {
            let separator = if server.contains('?') { '&' } else { '?' };
            format!("{server}{separator}schema={}{params}", self.name)
        }

        /// The URL of this schema's store on the test server.
        pub(super) fn store_url(&self) -> String {
            self.url_on(&self.url, "")
        }
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
        let schema = Schema::fresh(&url);
        let backend = PostgresBackend::connect(&schema.store_url(), &PostgresOptions::default())
            .unwrap_or_else(|e| panic!("HANDOFF_TEST_POSTGRES={url} is unreachable: {e}"));
        Some((Store::new(backend), schema))
    }

    crate::conformance_tests!(optional store());

    /// How a store moves from SQLite to PostgreSQL: a backup of the one restored into the
    /// other answers `list`, `events`, `get_task` and `replay` the same, and work goes on.
    #[cfg(feature = "sqlite")]
    #[test]
    fn a_sqlite_store_moves_to_postgresql_by_backup_and_restore() {
        use std::sync::Arc;
        use std::time::Duration;

        use crate::plan::StepSpec;
        use crate::task::NewTask;
        use crate::{EventFilter, ListFilter, ManualClock, NewHandoff};

        let Some((target, _schema)) = store() else {
            return;
        };
        let minute = Duration::from_secs(60);
        let clock = Arc::new(ManualClock::at_epoch());
        let dir = tempfile::tempdir().unwrap();
        let sqlite = Store::open(dir.path().join("handoff.db"))
            .unwrap()
            .with_clock(clock.clone());
        let target = target.with_clock(clock.clone());
        let first = sqlite
            .create(
                NewHandoff::new("move", "Move the store")
                    .from_agent("ops")
                    .to_agent("db"),
            )
            .unwrap();
        let held = sqlite.claim(&first.id, "db", minute).unwrap();
        let task = sqlite
            .create_task(NewTask {
                name: "Two steps".into(),
                steps: vec![
                    StepSpec::new("dump", "Dump", "db"),
                    StepSpec::new("load", "Load", "db").after(["dump"]),
                ],
                ..NewTask::default()
            })
            .unwrap()
            .header
            .id;
        sqlite.start_task(&task).unwrap();
        clock.advance(Duration::from_secs(5));
        let dump = sqlite
            .claim_next("db", Some(&task), minute)
            .unwrap()
            .unwrap();
        sqlite.complete(&dump, "dumped").unwrap();

        let path = dir.path().join("move.backup");
        let written = sqlite.backup(&path).unwrap();
        assert_eq!(target.restore(&path).unwrap(), written);

        let all = ListFilter::default();
        assert_eq!(sqlite.list(&all).unwrap(), target.list(&all).unwrap());
        assert_eq!(sqlite.events(None).unwrap(), target.events(None).unwrap());
        let of_task = EventFilter {
            task_id: Some(task.clone()),
            ..EventFilter::default()
        };
        assert_eq!(
            sqlite.events_page(&of_task).unwrap(),
            target.events_page(&of_task).unwrap()
        );
        assert_eq!(
            sqlite.get_task(&task).unwrap(),
            target.get_task(&task).unwrap()
        );
        assert_eq!(
            sqlite.replay(&task, false).unwrap(),
            target.replay(&task, false).unwrap()
        );
        // The claim taken on SQLite is settled on PostgreSQL; the task goes on there.
        target.complete(&held, "moved").unwrap();
        let load = target
            .claim_next("db", Some(&task), minute)
            .unwrap()
            .unwrap();
        target.complete(&load, "loaded").unwrap();
        assert_eq!(
            target.get_task(&task).unwrap().header.status,
            crate::task::TaskStatus::Completed
        );
    }

    /// A store called from async code and dropped there, as an MCP server drops its store
    /// inside its runtime and as a Rust caller may use one from `#[tokio::main]`: tokio
    /// refuses, with a panic, to block on one runtime inside another and to wait for a
    /// runtime's threads as it drops. Neither may reach the caller, on either kind of runtime,
    /// from a task, from the runtime's own `block_on`, or from `spawn_blocking`.
    #[test]
    fn a_store_is_called_and_dropped_inside_an_async_runtime() {
        use std::sync::Arc;
        let Some((store, _schema)) = store() else {
            return;
        };
        let store = Arc::new(store);
        fn lifecycle(store: &crate::Store, task: &str) {
            let lease = std::time::Duration::from_secs(60);
            let created = store
                .create(crate::NewHandoff::new(task, "Called from async code").to_agent(task))
                .unwrap();
            let claim = store.claim_next(task, None, lease).unwrap().unwrap();
            assert_eq!(claim.handoff_id(), created.id);
            store.complete(&claim, "done").unwrap();
            // A wait listens on a connection of its own.
            let nothing = store
                .claim_next_wait(task, None, lease, std::time::Duration::from_millis(50))
                .unwrap();
            assert!(nothing.is_none());
        }
        for multi in [false, true] {
            let mut builder = if multi {
                tokio::runtime::Builder::new_multi_thread()
            } else {
                tokio::runtime::Builder::new_current_thread()
            };
            let runtime = builder.enable_all().build().unwrap();
            let tag = if multi { "multi" } else { "current" };
            let (a, b) = (Arc::clone(&store), Arc::clone(&store));
            runtime.block_on(async move {
                lifecycle(&a, &format!("{tag}-block-on"));
                tokio::spawn(async move { lifecycle(&b, &format!("{tag}-task")) })
                    .await
                    .unwrap();
            });
            let c = Arc::clone(&store);
            let blocking =
                runtime.spawn_blocking(move || lifecycle(&c, &format!("{tag}-blocking")));
            runtime.block_on(blocking).unwrap();
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move { drop(store) });
    }

    /// Writers number their events without waiting for one another, so one can commit a
    /// larger `seq` before another commits a smaller one: a reader following the log must
    /// not hand out the larger one first (its cursor would then skip the smaller for good).
    #[test]
    fn a_cursor_never_skips_an_event_that_commits_late() {
        let Ok(url) = std::env::var("HANDOFF_TEST_POSTGRES") else {
            return;
        };
        let schema = Schema::fresh(&url);
        let backend = PostgresBackend::connect(&schema.store_url(), &Default::default()).unwrap();
        let event_lock = backend.lock_key(super::EVENT_LOCK);
        let store = Store::new(backend);
        let first = store.create(crate::NewHandoff::new("t", "first")).unwrap();
        let cursor = store.events(Some(&first.id)).unwrap()[0].seq;

        // A writer in flight: its event has its number and is not committed.
        let mut late = postgres::Client::connect(&schema.url, postgres::NoTls).unwrap();
        let mut tx = late.transaction().unwrap();
        tx.batch_execute(&format!("SET LOCAL search_path TO \"{}\"", schema.name))
            .unwrap();
        tx.execute("SELECT pg_advisory_xact_lock_shared($1)", &[&event_lock])
            .unwrap();
        tx.execute(
            "INSERT INTO events (handoff_id, at, actor, kind, detail) \
             SELECT handoff_id, at, actor, kind, detail FROM events WHERE handoff_id = $1",
            &[&first.id],
        )
        .unwrap();
        // Another commits after it, with a larger number.
        let second = store.create(crate::NewHandoff::new("t", "second")).unwrap();

        let page = std::thread::scope(|scope| {
            let reader = scope.spawn(|| {
                store.events_page(&crate::EventFilter {
                    after: Some(cursor),
                    ..Default::default()
                })
            });
            std::thread::sleep(std::time::Duration::from_millis(300));
            tx.commit().unwrap();
            reader.join().unwrap().unwrap()
        });
        let ids: Vec<&str> = page.iter().map(|e| e.handoff_id.as_str()).collect();
        assert_eq!(ids, [first.id.as_str(), second.id.as_str()], "{page:?}");
        assert!(page[0].seq < page[1].seq);
    }

    /// A claim reads the task's path after taking its lock, so a change another transaction
    /// made to the path while holding the lock is seen: here the parent's claim by `w` makes
    /// `w` taking the child a revisit, which the default policy refuses.
    #[test]
    fn a_claim_sees_the_path_as_the_lock_holder_left_it() {
        let Some((store, schema)) = store() else {
            return;
        };
        let parent = store
            .create(crate::NewHandoff::new("t", "parent").from_agent("a"))
            .unwrap();
        let child = store
            .create(
                crate::NewHandoff::new("t", "child")
                    .from_agent("b")
                    .parent_id(&parent.id),
            )
            .unwrap();

        // Another writer holds the path and gives the parent to `w`.
        let mut other = postgres::Client::connect(&schema.url, postgres::NoTls).unwrap();
        let mut tx = other.transaction().unwrap();
        tx.batch_execute(&format!("SET LOCAL search_path TO \"{}\"", schema.name))
            .unwrap();
        let path_lock = store_lock_base(&schema) >> 8;
        tx.execute(
            "SELECT pg_advisory_xact_lock($1, hashtext('t'))",
            &[&(path_lock as i32)],
        )
        .unwrap();
        tx.execute(
            "UPDATE handoffs SET status = 'claimed', claimed_by = 'w' WHERE id = $1",
            &[&parent.id],
        )
        .unwrap();

        let claimed = std::thread::scope(|scope| {
            let claimer =
                scope.spawn(|| store.claim_next("w", None, std::time::Duration::from_secs(60)));
            std::thread::sleep(std::time::Duration::from_millis(300));
            tx.commit().unwrap();
            claimer.join().unwrap().unwrap()
        });
        assert!(claimed.is_none(), "{claimed:?}");
        assert_eq!(store.get(&child.id).unwrap().status, crate::Status::Pending);
    }

    /// A session (a process stopped inside its transaction, say) that holds every record's
    /// lock and the event log's end, until it rolls back.
    fn stuck_session(schema: &Schema) -> postgres::Client {
        let mut stuck = postgres::Client::connect(&schema.url, postgres::NoTls).unwrap();
        stuck
            .batch_execute(&format!(
                "BEGIN; SET LOCAL search_path TO \"{}\"; \
                 SELECT 1 FROM handoffs FOR UPDATE; \
                 SELECT pg_advisory_xact_lock_shared({})",
                schema.name,
                store_lock_base(schema) | super::EVENT_LOCK
            ))
            .unwrap();
        stuck
    }

    /// With a stuck session holding every lock, a claim and a read of the log through `other`
    /// (a second store on the same schema) each fail as `check` expects, changing nothing;
    /// once the session rolls back, the same calls succeed.
    fn stuck_then_freed(
        store: &crate::Store,
        schema: &Schema,
        other: &crate::Store,
        check: impl Fn(&crate::Error),
    ) {
        let h = store.create(crate::NewHandoff::new("t", "g")).unwrap();
        let lease = std::time::Duration::from_secs(60);
        let mut stuck = stuck_session(schema);
        let before = store.get(&h.id).unwrap();
        check(&other.claim(&h.id, "w", lease).unwrap_err());
        check(&other.events(None).unwrap_err());
        assert_eq!(store.get(&h.id).unwrap(), before);

        stuck.batch_execute("ROLLBACK").unwrap();
        assert!(other.claim(&h.id, "w", lease).is_ok());
        assert_eq!(other.events(None).unwrap().len(), 2);
    }

    /// A session that holds a record's lock (a process stopped inside its transaction) delays
    /// a writer of that record, and a reader of the log, at most the store's lock patience:
    /// then `Busy`, with nothing changed; once the lock is gone the same calls succeed.
    #[test]
    fn a_stuck_session_makes_others_busy_not_hung() {
        let Some((store, schema)) = store() else {
            return;
        };
        let options = crate::ConnectOptions {
            lock_patience: std::time::Duration::from_millis(300),
            ..Default::default()
        };
        let patient = crate::Store::connect_with(&schema.store_url(), &options).unwrap();
        stuck_then_freed(&store, &schema, &patient, |err| {
            assert_eq!(err.kind(), crate::ErrorKind::Busy, "{err}");
        });
    }

    /// A call the server does not answer (its process stopped, its disk hung: the socket stays
    /// open and the kernel keeps acknowledging, so no TCP limit ends the wait) gives up after
    /// the URL's `reply_timeout` with a storage error naming it, and closes its connection;
    /// the store's next call, on a new connection, succeeds. Here a session holding the
    /// locks, with the store's lock patience far longer, stands in for the silent server.
    #[test]
    fn a_call_gives_up_after_the_reply_timeout_and_the_next_recovers() {
        let Some((store, schema)) = store() else {
            return;
        };
        let impatient =
            crate::Store::connect(&schema.url_on(&schema.url, "&reply_timeout=0.3")).unwrap();
        stuck_then_freed(&store, &schema, &impatient, |err| {
            assert_eq!(err.kind(), crate::ErrorKind::Storage, "{err}");
            assert!(err.to_string().contains("reply_timeout"), "{err}");
        });
    }

    /// `pool_size` bounds the connections a store opens: with one, a read made while a
    /// claim holds it (waiting on a stuck session's lock until its reply timeout) waits for
    /// that connection instead of opening a second, so it ends after the claim.
    #[test]
    fn a_store_opens_no_more_connections_than_its_pool_size() {
        let Some((store, schema)) = store() else {
            return;
        };
        let h = store.create(crate::NewHandoff::new("t", "g")).unwrap();
        let name = format!("hc_pool_{:08x}", fastrand::u32(..));
        let url = schema.url_on(
            &schema.url,
            &format!("&reply_timeout=1&application_name={name}"),
        );
        let options = crate::ConnectOptions {
            pool_size: 1,
            lock_patience: std::time::Duration::from_secs(60),
            ..Default::default()
        };
        let small = crate::Store::connect_with(&url, &options).unwrap();
        let mut stuck = stuck_session(&schema);
        let mut watch = postgres::Client::connect(&schema.url, postgres::NoTls).unwrap();
        let (done, finished) = std::sync::mpsc::channel();
        let (small, id) = (&small, h.id.as_str());
        std::thread::scope(|scope| {
            let claim_done = done.clone();
            scope.spawn(move || {
                let claim = small.claim(id, "w", std::time::Duration::from_secs(60));
                claim_done.send(("claim", claim.is_ok())).unwrap();
            });
            // Once the claim waits on the lock, its connection is the pool's only one.
            let started = std::time::Instant::now();
            while watch
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity \
                     WHERE application_name = $1 AND wait_event_type = 'Lock'",
                    &[&name],
                )
                .unwrap()
                .get::<_, i64>(0)
                == 0
            {
                assert!(started.elapsed() < std::time::Duration::from_secs(60));
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            scope.spawn(move || {
                let read = small.get(id);
                done.send(("read", read.is_ok())).unwrap();
            });
            assert_eq!(finished.recv().unwrap(), ("claim", false));
            assert_eq!(finished.recv().unwrap(), ("read", true));
        });
        stuck.batch_execute("ROLLBACK").unwrap();
        assert!(
            small
                .claim(&h.id, "w", std::time::Duration::from_secs(60))
                .is_ok()
        );
    }

    /// A claim looks at the oldest few open records first: when other claimers hold every
    /// one of them, it looks further instead of answering that there is nothing to claim,
    /// through `claim_next` (one statement with the lapsed leases) and on its own (after the
    /// chain policy skipped a record).
    #[test]
    fn a_claim_finds_work_past_every_candidate_others_hold() {
        let Some((store, schema)) = store() else {
            return;
        };
        let news =
            (0..super::CANDIDATES[0] + 2).map(|i| crate::NewHandoff::new(format!("t{i}"), "g"));
        let created = store.create_many(news.collect()).unwrap();
        let mut other = postgres::Client::connect(&schema.url, postgres::NoTls).unwrap();
        let mut tx = other.transaction().unwrap();
        tx.batch_execute(&format!(
            "SET LOCAL search_path TO \"{}\"; \
             SELECT 1 FROM handoffs ORDER BY pos LIMIT {} FOR UPDATE",
            schema.name,
            super::CANDIDATES[0]
        ))
        .unwrap();
        let lease = std::time::Duration::from_secs(60);
        let first = store.claim_next("w", None, lease).unwrap().unwrap();
        assert_eq!(first.handoff.id, created[super::CANDIDATES[0]].id);
        // `next_claimable` on its own, as a claim calls it after the policy refused a record.
        let mut found = None;
        store
            .backend
            .write(&mut |tx| {
                found = tx.next_claimable("w", None, chrono::Utc::now(), None)?;
                Ok(())
            })
            .unwrap();
        assert_eq!(
            found.map(|h| h.id),
            Some(created[super::CANDIDATES[0] + 1].id.clone())
        );
        tx.rollback().unwrap();
        assert_eq!(
            store
                .claim_next("w", None, lease)
                .unwrap()
                .unwrap()
                .handoff
                .id,
            created[0].id
        );
    }

    /// A claim reads due records only when its probe finds one; when other claimers hold
    /// every due record (to settle it), it takes the open work instead of answering that
    /// there is nothing, and the next claim settles and takes the lapsed record first.
    #[test]
    fn a_claim_takes_open_work_while_others_settle_the_lapsed() {
        let Some((store, schema)) = store() else {
            return;
        };
        let clock = std::sync::Arc::new(crate::clock::ManualClock::at_epoch());
        let store = store.with_clock(clock.clone());
        let lapsing = store.create(crate::NewHandoff::new("t1", "g")).unwrap();
        let open = store.create(crate::NewHandoff::new("t2", "g")).unwrap();
        let lease = std::time::Duration::from_secs(60);
        let held = store.claim_next("w", None, lease).unwrap().unwrap();
        assert_eq!(held.handoff.id, lapsing.id);
        clock.advance(std::time::Duration::from_secs(61));

        let mut other = postgres::Client::connect(&schema.url, postgres::NoTls).unwrap();
        let mut tx = other.transaction().unwrap();
        tx.batch_execute(&format!(
            "SET LOCAL search_path TO \"{}\"; \
             SELECT 1 FROM handoffs WHERE id = '{}' FOR UPDATE",
            schema.name, lapsing.id
        ))
        .unwrap();
        let taken = store.claim_next("v", None, lease).unwrap().unwrap();
        assert_eq!(taken.handoff.id, open.id);
        tx.rollback().unwrap();

        let retaken = store.claim_next("v", None, lease).unwrap().unwrap();
        assert_eq!(retaken.handoff.id, lapsing.id);
        assert_eq!(
            retaken.handoff.attempts, 1,
            "the lapsed lease was settled first"
        );
    }

    /// The advisory-lock namespace of the store on `schema`.
    fn store_lock_base(schema: &Schema) -> i64 {
        PostgresBackend::connect(&schema.store_url(), &Default::default())
            .unwrap()
            .lock_base
    }

    /// Several hosts are tried in order, as libpq tries them: a first one that refuses
    /// (here a port nothing listens on) leaves the store on the next, which a primary/standby
    /// pair relies on with `target_session_attrs=read-write`.
    #[test]
    fn a_url_with_several_hosts_reaches_the_one_that_answers() {
        let Some((store, schema)) = store() else {
            return;
        };
        let h = store.create(crate::NewHandoff::new("t", "g")).unwrap();
        let url = schema.url_on(&schema.url, "&target_session_attrs=read-write");
        let (scheme, rest) = url.split_once("://").unwrap();
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (user, hosts) = match authority.rsplit_once('@') {
            Some((user, hosts)) => (format!("{user}@"), hosts),
            None => (String::new(), authority),
        };
        let several = format!("{scheme}://{user}127.0.0.1:1,{hosts}/{path}");
        let other = crate::Store::connect(&several).unwrap();
        assert_eq!(other.get(&h.id).unwrap(), h);
    }

    #[test]
    fn schemas_keep_stores_apart_and_connect_reads_the_url() {
        let (Some((a, _one)), Some((b, _two))) = (store(), store()) else {
            return;
        };
        a.create(crate::NewHandoff::new("t", "only in a")).unwrap();
        assert_eq!(a.list(&Default::default()).unwrap().len(), 1);
        assert!(b.list(&Default::default()).unwrap().is_empty());

        let schema = Schema::fresh(&std::env::var("HANDOFF_TEST_POSTGRES").unwrap());
        let store = Store::connect(&schema.store_url()).unwrap();
        store
            .create(crate::NewHandoff::new("t", "via connect"))
            .unwrap();
        let again = Store::connect(&schema.store_url()).unwrap();
        assert_eq!(
            again.list(&Default::default()).unwrap()[0].goal,
            "via connect"
        );
    }
}
