//! The SQLite schema, its version, and the migrations that bring an older file up to date.
//!
//! `PRAGMA user_version` holds the schema version and `PRAGMA application_id` marks the file as
//! a handoff-core store, so that opening some other database fails cleanly instead of
//! writing into it.

use rusqlite::{Connection, TransactionBehavior};

/// The schema version this build writes.
pub const VERSION: u32 = 8;

/// "HOFF": marks a file as a handoff-core store.
const APPLICATION_ID: i32 = 0x484F_4646;

/// `MIGRATIONS[v]` upgrades a store from version `v` to `v + 1`.
const MIGRATIONS: [&str; VERSION as usize] = [
    // 0 -> 1: the first layout.
    "CREATE TABLE handoffs (
        pos INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        task_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        from_agent TEXT,
        to_agent TEXT,
        parent_id TEXT,
        created_at INTEGER NOT NULL,
        expires_at INTEGER,
        status TEXT NOT NULL,
        claimed_by TEXT,
        claim_token INTEGER,
        lease_until INTEGER,
        attempts INTEGER NOT NULL DEFAULT 0,
        completed_at INTEGER,
        outcome TEXT,
        body TEXT NOT NULL
    );
    CREATE INDEX handoffs_task ON handoffs (task_id, pos);
    CREATE INDEX handoffs_claimable ON handoffs (to_agent, pos) WHERE status = 'pending';
    CREATE TABLE events (
        seq INTEGER PRIMARY KEY,
        handoff_id TEXT NOT NULL,
        at INTEGER NOT NULL,
        actor TEXT,
        kind TEXT NOT NULL,
        detail TEXT NOT NULL
    );
    CREATE INDEX events_handoff ON events (handoff_id, seq);",
    // 1 -> 2: when the holder was last heard from (for `stalled`), and indexes that let
    // lapsed leases and expired handoffs be found without a scan.
    "ALTER TABLE handoffs ADD COLUMN heartbeat_at INTEGER;
    UPDATE handoffs SET heartbeat_at = (
        SELECT max(at) FROM events
        WHERE events.handoff_id = handoffs.id AND events.kind IN ('claimed', 'heartbeat')
    ) WHERE claimed_by IS NOT NULL;
    CREATE INDEX handoffs_leases ON handoffs (lease_until) WHERE status = 'claimed';
    CREATE INDEX handoffs_expiry ON handoffs (expires_at)
        WHERE status = 'pending' AND expires_at IS NOT NULL;",
    // 2 -> 3: the digest of the current claim's secret (never selected with a record), and
    // store-wide settings such as the saved chain policy.
    "ALTER TABLE handoffs ADD COLUMN claim_secret BLOB;
    CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);",
    // 3 -> 4: a `created` event names the task and the addressee instead of carrying a second
    // copy of the record, which the record itself holds.
    "UPDATE events SET detail = json_object('kind', 'created', 'detail', json_object(
        'task_id', json_extract(detail, '$.detail.record.task_id'),
        'to_agent', json_extract(detail, '$.detail.record.to_agent')))
    WHERE kind = 'created' AND json_type(detail, '$.detail.record') IS NOT NULL;",
    // 4 -> 5: versioned documents the core keeps beside the records (tasks and their steps).
    "CREATE TABLE docs (
        kind TEXT NOT NULL,
        key TEXT NOT NULL,
        version INTEGER NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (kind, key)
    );",
    // 5 -> 6: each event links to the previous event of its handoff, and each handoff to its
    // latest event, so that a handoff's events are found along the links instead of through
    // an index on (handoff_id, seq): one B-tree fewer written by every transaction (a sixth
    // of the pages a lifecycle writes). The links are filled in with the index, then it goes.
    "ALTER TABLE events ADD COLUMN prev INTEGER;
    ALTER TABLE handoffs ADD COLUMN last_event INTEGER;
    UPDATE events SET prev = (
        SELECT max(p.seq) FROM events AS p
        WHERE p.handoff_id = events.handoff_id AND p.seq < events.seq
    );
    UPDATE handoffs SET last_event = (
        SELECT max(e.seq) FROM events AS e WHERE e.handoff_id = handoffs.id
    );
    DROP INDEX events_handoff;",
    // 6 -> 7: one index over the open records instead of two: pending ones keyed by their
    // addressee ('' for anyone), claimed ones by their lease's end (an integer, which sorts
    // before any text). A claim moves its record's entry within one B-tree, and while the
    // queue is short (the usual case) within one page: a page fewer written per claim, and
    // per protocol message sent in the transaction that settles a claim.
    "ALTER TABLE handoffs ADD COLUMN queue AS (CASE status
        WHEN 'pending' THEN coalesce(to_agent, '')
        WHEN 'claimed' THEN lease_until END) VIRTUAL;
    CREATE INDEX handoffs_queue ON handoffs (queue, pos) WHERE queue IS NOT NULL;
    DROP INDEX handoffs_claimable;
    DROP INDEX handoffs_leases;",
    // 7 -> 8: priorities (claim_next takes the highest first, the oldest within one, from the
    // same index, now keyed by priority within each queue) and the holder's last progress.
    "ALTER TABLE handoffs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE handoffs ADD COLUMN progress TEXT;
    DROP INDEX handoffs_queue;
    CREATE INDEX handoffs_queue ON handoffs (queue, priority DESC, pos) WHERE queue IS NOT NULL;",
];

/// What a file says about itself, read without writing anything.
#[derive(Debug)]
pub(super) struct Header {
    version: u32,
    application: i32,
    tables: i64,
    /// `wal`, `delete`, ...
    pub(super) journal_mode: String,
}

impl Header {
    /// Reads the file's header in one read transaction, so that a store another process is
    /// creating meanwhile is seen whole or not at all (read field by field, a file caught
    /// between its tables and its `application_id` looked like another application's).
    pub(super) fn read_settled(conn: &Connection) -> rusqlite::Result<Header> {
        let tx = conn.unchecked_transaction()?;
        let header = Header::read(&tx)?;
        tx.commit()?;
        Ok(header)
    }

    /// Reads the file's header: a read, which never waits for a writer in WAL mode.
    fn read(conn: &Connection) -> rusqlite::Result<Header> {
        Ok(Header {
            version: conn.pragma_query_value(None, "user_version", |row| row.get(0))?,
            application: conn.pragma_query_value(None, "application_id", |row| row.get(0))?,
            tables: conn.query_row("SELECT count(*) FROM sqlite_master", [], |row| row.get(0))?,
            journal_mode: conn.pragma_query_value(None, "journal_mode", |row| row.get(0))?,
        })
    }

    /// A new, empty database (a zero-length file reads as one).
    pub(super) fn is_empty(&self) -> bool {
        self.tables == 0 && self.version == 0 && self.application == 0
    }

    /// Refuses a file this build must not touch: another application's database, or a store
    /// from a newer build.
    pub(super) fn check(&self) -> rusqlite::Result<()> {
        if self.application != APPLICATION_ID && !self.is_empty() {
            return Err(refuse(
                "the file is an SQLite database of another application",
            ));
        }
        if self.version > VERSION {
            return Err(refuse(&format!(
                "the store has schema version {}, newer than this build's {VERSION}",
                self.version
            )));
        }
        Ok(())
    }

    /// Whether the store is at this build's schema, so opening it writes nothing.
    pub(super) fn is_current(&self) -> bool {
        self.application == APPLICATION_ID
            && self.version == VERSION
            && self.journal_mode.eq_ignore_ascii_case("wal")
    }

    /// The schema version, for messages.
    pub(super) fn version(&self) -> u32 {
        self.version
    }
}

/// Brings the store at `conn` to [`VERSION`], in one immediate transaction so that processes
/// opening the same file at once do not race; the file is checked again inside it.
pub(super) fn migrate(conn: &mut Connection) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let header = Header::read(&tx)?;
    header.check()?;
    upgrade(&tx, header.version, VERSION)?;
    tx.commit()
}

/// Applies the migrations from version `from` up to version `to`.
fn upgrade(conn: &Connection, from: u32, to: u32) -> rusqlite::Result<()> {
    let steps = MIGRATIONS
        .iter()
        .enumerate()
        .take(to as usize)
        .skip(from as usize);
    for (step, sql) in steps {
        conn.execute_batch(sql)?;
        conn.pragma_update(None, "user_version", step as u32 + 1)?;
    }
    conn.pragma_update(None, "application_id", APPLICATION_ID)
}

fn refuse(reason: &str) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_MISMATCH),
        Some(reason.to_owned()),
    )
}

/// Writes a store at an older schema version, for the migration tests.
#[cfg(test)]
pub(crate) fn create_at_version(conn: &mut Connection, version: u32) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    upgrade(&tx, 0, version)?;
    tx.commit()
}
