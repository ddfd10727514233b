//! Processes racing to claim from one SQLite file: total claims per second and each process's
//! share, for the store's `claim_next` beside a raw `UPDATE … RETURNING` claim loop on the same
//! schema and settings.
//!
//! ```sh
//! cargo bench -p handoff-benches --bench race            # prints a Markdown table
//! ```
//!
//! The bench re-runs its own binary as the racing processes. They all start together (a "go"
//! file) and the rate is taken from the first start to the last finish.
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use handoff_benches::team::{self, Outcome, Team, micros_now};
use handoff_core::{ChainPolicy, NewHandoff, SqliteOptions, Store, Synchronous};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Contender {
    /// One `UPDATE … RETURNING` per claim: what a hand-written claimer does.
    Raw,
    /// The same, plus the event row the store writes, in one immediate transaction.
    RawWithEvent,
    Store,
}

impl Contender {
    fn label(self) -> &'static str {
        match self {
            Contender::Raw => "raw UPDATE … RETURNING",
            Contender::RawWithEvent => "raw UPDATE … RETURNING + event row",
            Contender::Store => "Store::claim_next",
        }
    }
}

fn main() {
    if let Some(role) = team::worker_role() {
        return worker(&role);
    }
    // `cargo bench` passes `--bench`; `cargo test` does not, and gets a quick smoke run.
    let full = std::env::args().any(|arg| arg == "--bench");
    let configs: Vec<(Synchronous, usize, Vec<usize>)> = if full {
        vec![
            (Synchronous::Full, 3_000, process_counts()),
            (Synchronous::Normal, 12_000, process_counts()),
        ]
    } else {
        vec![(Synchronous::Normal, 300, vec![2])]
    };
    println!(
        "| sync | processes | contender | claims/s | ratio to raw | share per process (%) | errors |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (sync, handoffs, processes) in configs {
        for processes in processes {
            let raw = race(Contender::Raw, sync, processes, handoffs);
            for contender in [Contender::Raw, Contender::RawWithEvent, Contender::Store] {
                let result = if contender == Contender::Raw {
                    &raw
                } else {
                    &race(contender, sync, processes, handoffs)
                };
                println!(
                    "| {sync:?} | {processes} | {} | {:.0} | {:.2} | {} | {} |",
                    contender.label(),
                    result.rate,
                    result.rate / raw.rate,
                    result.shares_text(),
                    result.errors,
                );
            }
        }
    }
}

/// `RACE_PROCESSES=1,4,8` chooses the process counts; 4 and 8 by default.
fn process_counts() -> Vec<usize> {
    std::env::var("RACE_PROCESSES")
        .unwrap_or_else(|_| "4,8".to_owned())
        .split(',')
        .map(|n| {
            n.trim()
                .parse()
                .expect("RACE_PROCESSES is a list of numbers")
        })
        .collect()
}

fn race(contender: Contender, sync: Synchronous, processes: usize, handoffs: usize) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("race.db");
    let options = SqliteOptions {
        synchronous: sync,
        ..SqliteOptions::default()
    };
    let store = Store::open_with(&db, &options)
        .unwrap()
        .with_policy(ChainPolicy::unlimited());
    let news: Vec<NewHandoff> = (0..handoffs)
        .map(|i| NewHandoff::new(format!("race-{i}"), "claim me").from_agent("producer"))
        .collect();
    for batch in news.chunks(5_000) {
        store.create_many(batch.to_vec()).unwrap();
    }
    drop(store);

    let team = Team::spawn(dir.path(), &format!("{contender:?}"), processes, |_| {
        vec![
            ("RACE_DB", db.clone().into_os_string()),
            ("RACE_SYNC", format!("{sync:?}").into()),
        ]
    });
    team.go();
    let reports: Vec<_> = team.wait().into_iter().map(Option::unwrap).collect();
    let outcome = Outcome::of(&reports);
    assert_eq!(
        outcome.total as usize, handoffs,
        "every handoff claimed once"
    );
    outcome
}

/// One racing process: claims until nothing is left.
fn worker(role: &str) {
    let db = PathBuf::from(team::var("RACE_DB"));
    let agent = team::var("TEAM_AGENT");
    let sync = if team::var("RACE_SYNC") == "Full" {
        Synchronous::Full
    } else {
        Synchronous::Normal
    };
    let mut claim: Box<dyn FnMut() -> Result<bool, String>> = if role == "Raw" {
        let conn = raw_connection(&db, sync);
        Box::new(move || raw_claim(&conn, &agent))
    } else if role == "RawWithEvent" {
        let mut conn = raw_connection(&db, sync);
        Box::new(move || raw_claim_with_event(&mut conn, &agent))
    } else {
        let options = SqliteOptions {
            synchronous: sync,
            ..SqliteOptions::default()
        };
        let store = Store::open_with(&db, &options).unwrap();
        Box::new(move || {
            store
                .claim_next(&agent, None, Duration::from_secs(3600))
                .map(|c| c.is_some())
                .map_err(|e| e.to_string())
        })
    };
    // The ids are not needed here: an empty one keeps the report short.
    team::work(|| claim().map(|claimed| claimed.then(String::new)));
}

/// A connection as a hand-written claimer would open it: WAL, rusqlite's default 5 s busy
/// timeout (SQLite's own busy handler).
fn raw_connection(db: &Path, sync: Synchronous) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.pragma_update(
        None,
        "synchronous",
        if sync == Synchronous::Full {
            "FULL"
        } else {
            "NORMAL"
        },
    )
    .unwrap();
    conn
}

/// One raw claim: the oldest open pending row, claimed by `agent`; its id, if there was one.
/// It finds that row through the schema's index of open records (`queue` is the addressee of
/// a pending record, `''` for anyone), as a hand-written claimer would through an index of its
/// own: without one, every claim walks past all the rows claimed before it.
fn raw_update(
    conn: &rusqlite::Connection,
    agent: &str,
    now: i64,
) -> Result<Option<String>, String> {
    let mut stmt = conn
        .prepare_cached(
            "UPDATE handoffs SET status = 'claimed', claimed_by = ?1, \
             claim_token = coalesce(claim_token, 0) + 1, lease_until = ?2, heartbeat_at = ?3 \
             WHERE pos = (SELECT pos FROM handoffs INDEXED BY handoffs_queue \
             WHERE queue = '' AND to_agent IS NULL ORDER BY pos LIMIT 1) RETURNING id",
        )
        .map_err(|e| e.to_string())?;
    let mut rows = stmt
        .query(rusqlite::params![agent, now + 3_600_000_000, now])
        .map_err(|e| e.to_string())?;
    match rows.next().map_err(|e| e.to_string())? {
        Some(row) => Ok(Some(row.get(0).map_err(|e| e.to_string())?)),
        None => Ok(None),
    }
}

fn raw_claim(conn: &rusqlite::Connection, agent: &str) -> Result<bool, String> {
    Ok(raw_update(conn, agent, micros_now() as i64)?.is_some())
}

fn raw_claim_with_event(conn: &mut rusqlite::Connection, agent: &str) -> Result<bool, String> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(|e| e.to_string())?;
    let now = micros_now() as i64;
    let id = raw_update(&tx, agent, now)?;
    if let Some(id) = &id {
        tx.prepare_cached(
            "INSERT INTO events (handoff_id, at, actor, kind, detail) VALUES (?1, ?2, ?3, 'claimed', ?4)",
        )
        .and_then(|mut stmt| {
            stmt.execute(rusqlite::params![
                id,
                now,
                agent,
                r#"{"kind":"claimed","detail":{"agent":"p0","token":1,"lease_until":"2026-01-01T01:00:00Z"}}"#
            ])
        })
        .map_err(|e| e.to_string())?;
    }
    tx.commit().map_err(|e| e.to_string())?;
    Ok(id.is_some())
}
