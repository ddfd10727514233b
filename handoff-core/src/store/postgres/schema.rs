//! The schema: the version this build writes, the migrations that bring an older one up to it,
//! and the migration itself, run by one process at a time.

use super::*;

/// The schema version this build writes.
pub const VERSION: i32 = 7;

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
    // 6 -> 7: priorities (a claim takes the highest first, the oldest within one: the two
    // scans of `next_ctes` read these indexes in that order) and the holder's last progress.
    "ALTER TABLE handoffs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE handoffs ADD COLUMN progress TEXT;
    DROP INDEX handoffs_open;
    CREATE INDEX handoffs_open ON handoffs (priority DESC, pos)
        WHERE status = 'pending' AND to_agent IS NULL;
    DROP INDEX handoffs_claimable;
    CREATE INDEX handoffs_claimable ON handoffs (to_agent, priority DESC, pos)
        WHERE status = 'pending';",
];

impl PostgresBackend {
    /// Creates the schema or brings it to [`VERSION`], one process at a time.
    pub(super) fn migrate(&self) -> Result<()> {
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
    pub(super) fn migrate_in(&self, tx: &Conn) -> Result<()> {
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
}
