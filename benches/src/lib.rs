//! Shared pieces of the benches: a realistic ~2 KB handover record; two SQLite baselines, one
//! running the SQLite backend's own statements through raw rusqlite and one doing the least a
//! user could hand-write for the same lifecycle, so that every figure is a ratio; and the
//! harness of the multi-process benches ([`team`]).
#![allow(clippy::unwrap_used, missing_docs)] // Bench code: a failed unwrap is a failed run.

#[cfg(feature = "postgres")]
pub mod pg;
pub mod team;

use std::path::Path;

use handoff_core::{NewHandoff, Reason, Store, Synchronous};
use rusqlite::{Connection, TransactionBehavior, params};

/// A handover record of about 2 KB as JSON, like one a coding agent writes.
pub fn record(task: &str) -> NewHandoff {
    let line = |topic: &str, i: usize| {
        format!(
            "{topic} {i}: checked the module boundaries and wrote down what the next agent needs"
        )
    };
    NewHandoff::new(
        task,
        "Migrate the billing service from the legacy ORM to sqlx",
    )
    .from_agent("claude")
    .reason(Reason::ContextLimit { percent: 85 })
    .context_usage(85)
    .progress("Half of the repositories are ported; invoices and refunds remain. Tests pass.")
    .completed((0..4).map(|i| line("ported", i)))
    .pending((0..4).map(|i| line("port", i)))
    .decisions((0..3).map(|i| line("decided", i)))
    .assumptions(["the schema is frozen until the release"])
    .warnings(["refunds use a different rounding mode"])
    .files([
        "src/billing/invoices.rs",
        "src/billing/refunds.rs",
        "src/db.rs",
    ])
    .instructions("Port invoices first; run the billing tests after each repository.")
}

/// The JSON size of [`record`], for the report.
pub fn record_bytes() -> usize {
    record("task-000000")
        .into_record(
            "01900000-0000-7000-8000-000000000000".into(),
            chrono::Utc::now(),
        )
        .to_json()
        .len()
}

/// The same statements the SQLite backend runs for create → claim → complete, in the same
/// three immediate transactions, through raw rusqlite with pre-serialised values: the cost of
/// SQLite itself, without validation, serde, the state machine or the chain check.
pub struct RawLifecycle {
    conn: Connection,
    body: String,
    created: String,
    claimed: String,
    completed: String,
    next: u64,
}

impl RawLifecycle {
    /// Opens `path` as the store would (schema, WAL, `synchronous`); `":memory:"` works too.
    pub fn open(path: &Path, sync: Synchronous) -> RawLifecycle {
        let conn = if path == Path::new(":memory:") {
            let conn = Connection::open_in_memory().unwrap();
            // The schema, exactly as the store creates it: copy it from a scratch store file.
            let dir = tempfile::tempdir().unwrap();
            let scratch = dir.path().join("schema.db");
            drop(Store::open(&scratch).unwrap());
            let source = Connection::open(&scratch).unwrap();
            let mut stmt = source
                .prepare("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid")
                .unwrap();
            let ddl: Vec<String> = stmt
                .query_map([], |r| r.get(0))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            for sql in ddl {
                conn.execute_batch(&sql).unwrap();
            }
            conn
        } else {
            drop(Store::open(path).unwrap());
            Connection::open(path).unwrap()
        };
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        let sync = match sync {
            Synchronous::Full => "FULL",
            _ => "NORMAL",
        };
        conn.pragma_update(None, "synchronous", sync).unwrap();
        let h = record("task-000000").into_record("x".into(), chrono::Utc::now());
        let body = h.to_json();
        RawLifecycle {
            conn,
            claimed: r#"{"kind":"claimed","detail":{"agent":"gemini","token":1,"lease_until":"2026-01-01T00:05:00Z"}}"#.into(),
            completed: r#"{"kind":"completed","detail":{"outcome":"done"}}"#.into(),
            // What the store's `created` event holds since schema 4: where the work goes, not
            // a second copy of the record.
            created: r#"{"kind":"created","detail":{"task_id":"task-000000","to_agent":null}}"#
                .into(),
            body,
            next: 0,
        }
    }

    /// One create → claim → complete.
    pub fn lifecycle(&mut self) {
        self.next += 1;
        let id = format!("01900000-0000-7000-8000-{:012}", self.next);
        let task = format!("task-{:06}", self.next);
        let now = 1_767_225_600_000_000i64 + self.next as i64;

        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .unwrap();
        // The event first: the record's write names it as its latest.
        let seq = event(&tx, &id, now, "created", &self.created);
        tx.prepare_cached(
            "INSERT INTO handoffs (id, task_id, kind, from_agent, to_agent, parent_id, \
             created_at, expires_at, status, claimed_by, claim_token, lease_until, \
             heartbeat_at, attempts, completed_at, outcome, body, last_event, claim_secret) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
        )
        .unwrap()
        .execute(params![
            id,
            task,
            "full",
            "claude",
            None::<String>,
            None::<String>,
            now,
            None::<i64>,
            "pending",
            None::<String>,
            None::<i64>,
            None::<i64>,
            None::<i64>,
            0,
            None::<i64>,
            None::<String>,
            self.body,
            seq,
            None::<Vec<u8>>
        ])
        .unwrap();
        tx.commit().unwrap();

        for (status, kind, detail) in [
            ("claimed", "claimed", &self.claimed),
            ("completed", "completed", &self.completed),
        ] {
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .unwrap();
            // With the digest of the claim's secret, which completing checks.
            tx.prepare_cached(
                "SELECT status, claimed_by, claim_token, lease_until, heartbeat_at, attempts, \
                 completed_at, outcome, body, claim_secret FROM handoffs WHERE id = ?1",
            )
            .unwrap()
            .query_row([&id], |row| {
                let body = row.get_ref(8)?.as_str()?;
                Ok((body.len(), row.get::<_, Option<Vec<u8>>>(9)?))
            })
            .unwrap();
            if kind == "claimed" {
                // The chain policy's check of an open handoff's claimant reads the task's hops.
                tx.prepare_cached(
                    "SELECT id, parent_id, from_agent, to_agent, claimed_by, kind, status, \
                     created_at FROM handoffs WHERE task_id = CAST(?1 AS TEXT) ORDER BY pos",
                )
                .unwrap()
                .query_map([&task], |row| row.get::<_, String>(0))
                .unwrap()
                .for_each(drop);
            }
            let seq = event(&tx, &id, now, kind, detail);
            // Literal statements, as the store's: no string is built per call.
            macro_rules! lifecycle {
                () => {
                    "UPDATE handoffs SET status = ?2, claimed_by = ?3, claim_token = ?4, \
                     lease_until = ?5, heartbeat_at = ?6, attempts = ?7, completed_at = ?8, \
                     outcome = ?9, last_event = coalesce(?10, last_event)"
                };
            }
            let args = params![
                id,
                status,
                "gemini",
                1,
                now + 300_000_000,
                now,
                0,
                now,
                "done",
                seq
            ];
            if kind == "claimed" {
                // With the digest of the claim's secret.
                let mut with_secret = args.to_vec();
                let digest = [7u8; 32].to_vec();
                with_secret.push(&digest);
                tx.prepare_cached(concat!(lifecycle!(), ", claim_secret = ?11 WHERE id = ?1"))
                    .unwrap()
                    .execute(with_secret.as_slice())
                    .unwrap();
            } else {
                tx.prepare_cached(concat!(lifecycle!(), " WHERE id = ?1"))
                    .unwrap()
                    .execute(args)
                    .unwrap();
            }
            tx.commit().unwrap();
        }
    }
}

/// An event as the store appends one, linked to its handoff's latest event; returns its
/// `seq`, which the record's write that follows names as the latest.
fn event(tx: &Connection, id: &str, at: i64, kind: &str, detail: &str) -> i64 {
    tx.prepare_cached(
        "INSERT INTO events (handoff_id, at, actor, kind, detail, prev) VALUES \
         (?1, ?2, ?3, ?4, ?5, coalesce(?6, (SELECT last_event FROM handoffs WHERE id = ?1)))",
    )
    .unwrap()
    .execute(params![id, at, "gemini", kind, detail, None::<i64>])
    .unwrap();
    tx.last_insert_rowid()
}

/// One create → claim → complete through the store.
pub fn store_lifecycle(store: &Store, n: u64) {
    let task = format!("task-{n:06}");
    let h = store.create(record(&task)).unwrap();
    let claim = store
        .claim(&h.id, "gemini", std::time::Duration::from_secs(300))
        .unwrap();
    store.complete(&claim, "done").unwrap();
}

/// The least a user could hand-write for create → claim → complete on SQLite: one table
/// (`id TEXT PRIMARY KEY, status, claimed_by, token, body`) and a small event log
/// (`seq INTEGER PRIMARY KEY, handoff_id, kind, at, detail`), three immediate transactions
/// (insert the body and a `created` row; claim with `UPDATE … WHERE id = ? AND status =
/// 'pending'` and a `claimed` row; complete with `UPDATE … WHERE id = ? AND status =
/// 'claimed' AND token = ?` and a `completed` row), WAL, and the store's `synchronous`.
///
/// No validation, no chain, no claim secret, no lease columns, events a few bytes long: the
/// floor under any store that keeps a record, a fenced claim and a log.
pub struct MinimalRawLifecycle {
    conn: Connection,
    body: String,
    next: u64,
}

impl MinimalRawLifecycle {
    /// Opens (or creates) the tables in the database at `path`.
    pub fn open(path: &Path, sync: Synchronous) -> MinimalRawLifecycle {
        let conn = Connection::open(path).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        let sync = match sync {
            Synchronous::Full => "FULL",
            _ => "NORMAL",
        };
        conn.pragma_update(None, "synchronous", sync).unwrap();
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS handoffs (
                 id TEXT PRIMARY KEY,
                 status TEXT NOT NULL,
                 claimed_by TEXT,
                 token INTEGER NOT NULL DEFAULT 0,
                 body TEXT NOT NULL
             );
             CREATE TABLE IF NOT EXISTS events (
                 seq INTEGER PRIMARY KEY,
                 handoff_id TEXT NOT NULL,
                 kind TEXT NOT NULL,
                 at INTEGER NOT NULL,
                 detail TEXT
             );",
        )
        .unwrap();
        let body = record("task-000000")
            .into_record("x".into(), chrono::Utc::now())
            .to_json();
        MinimalRawLifecycle {
            conn,
            body,
            next: 0,
        }
    }

    /// One create → claim → complete; panics if a conditional update finds its row changed.
    pub fn lifecycle(&mut self) {
        self.next += 1;
        let id = format!("01900000-0000-7000-8000-{:012}", self.next);
        let now = 1_767_225_600_000_000i64 + self.next as i64;

        let tx = immediate(&mut self.conn);
        tx.prepare_cached("INSERT INTO handoffs (id, status, body) VALUES (?1, 'pending', ?2)")
            .unwrap()
            .execute(params![id, self.body])
            .unwrap();
        small_event(&tx, &id, "created", now, r#"{"from":"claude"}"#);
        tx.commit().unwrap();

        let tx = immediate(&mut self.conn);
        let token: i64 = tx
            .prepare_cached(
                "UPDATE handoffs SET status = 'claimed', claimed_by = ?2, token = token + 1 \
                 WHERE id = ?1 AND status = 'pending' RETURNING token",
            )
            .unwrap()
            .query_row(params![id, "gemini"], |row| row.get(0))
            .unwrap();
        small_event(&tx, &id, "claimed", now, r#"{"agent":"gemini"}"#);
        tx.commit().unwrap();

        let tx = immediate(&mut self.conn);
        let changed = tx
            .prepare_cached(
                "UPDATE handoffs SET status = 'completed' \
                 WHERE id = ?1 AND status = 'claimed' AND token = ?2",
            )
            .unwrap()
            .execute(params![id, token])
            .unwrap();
        assert_eq!(changed, 1, "the claim was still ours");
        small_event(&tx, &id, "completed", now, r#"{"outcome":"done"}"#);
        tx.commit().unwrap();
    }
}

fn immediate(conn: &mut Connection) -> rusqlite::Transaction<'_> {
    conn.transaction_with_behavior(TransactionBehavior::Immediate)
        .unwrap()
}

fn small_event(tx: &Connection, id: &str, kind: &str, at: i64, detail: &str) {
    tx.prepare_cached("INSERT INTO events (handoff_id, kind, at, detail) VALUES (?1, ?2, ?3, ?4)")
        .unwrap()
        .execute(params![id, kind, at, detail])
        .unwrap();
}

/// The median time, in milliseconds, of a small append and `fsync` in a temporary folder: how
/// fast the disk commits during a run. The figures of a run that waits for the disk (SQLite
/// FULL, the files store, PostgreSQL's commits) are read with it.
pub fn fsync_ms() -> f64 {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let mut file = std::fs::File::create(dir.path().join("probe")).unwrap();
    let mut times: Vec<f64> = (0..50)
        .map(|_| {
            let started = std::time::Instant::now();
            file.write_all(&[b'x'; 100]).unwrap();
            file.sync_all().unwrap();
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}
