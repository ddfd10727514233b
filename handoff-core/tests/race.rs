//! Several OS processes claim from one store at once — an SQLite file, a JSON-files folder, a
//! PostgreSQL schema: every handoff is claimed exactly once, none is left, the log has one
//! claim per handoff, and no process ever sees an error (busy or otherwise).
//!
//! The test re-runs its own binary as the workers: `race_worker` does nothing unless the
//! environment names a store.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use handoff_core::{ListFilter, NewHandoff, Status, Store};

#[cfg(feature = "postgres")]
#[path = "support/pg.rs"]
mod pg;

const WORKERS: usize = 8;
const HANDOFFS: usize = 5_000;

#[test]
fn processes_claim_each_handoff_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("race.db");
    race(db.to_str().unwrap(), dir.path(), WORKERS, HANDOFFS);
    assert_integrity(&db);
}

#[test]
fn processes_share_a_files_store() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("files:{}", dir.path().join("store").display());
    race(&url, dir.path(), 4, 500);
}

/// On PostgreSQL when `HANDOFF_TEST_POSTGRES` names a server (CI sets it), in a schema of its
/// own.
#[cfg(feature = "postgres")]
#[test]
fn processes_share_a_postgres_schema() {
    let Some(server) = pg::server("the PostgreSQL race") else {
        return;
    };
    let schema = pg::Schema::new(&server, "race");
    let dir = tempfile::tempdir().unwrap();
    race(&schema.url, dir.path(), 4, 2_000);
}

/// Seeds `handoffs` handoffs at `url`, lets `workers` processes claim until none is left, and
/// checks that each was claimed once, by the process the store names.
fn race(url: &str, dir: &Path, workers: usize, handoffs: usize) {
    let store = Store::connect(url).unwrap();
    let news: Vec<NewHandoff> = (0..handoffs)
        .map(|i| NewHandoff::new(format!("task-{i}"), "race me").from_agent("seed"))
        .collect();
    for batch in news.chunks(1_000) {
        store.create_many(batch.to_vec()).unwrap();
    }

    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..workers)
        .map(|n| {
            Command::new(&exe)
                .args(["--exact", "race_worker", "--nocapture", "--test-threads=1"])
                .env("HANDOFF_RACE_DB", url)
                .env("HANDOFF_RACE_OUT", dir.join(format!("worker-{n}.txt")))
                .env("HANDOFF_RACE_AGENT", format!("worker-{n}"))
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        let status = child.wait().unwrap();
        assert!(status.success(), "a worker failed: {status}");
    }

    let mut claims: HashMap<String, Vec<String>> = HashMap::new();
    for n in 0..workers {
        let out = std::fs::read_to_string(dir.join(format!("worker-{n}.txt"))).unwrap();
        for id in out.lines() {
            claims
                .entry(id.to_owned())
                .or_default()
                .push(format!("worker-{n}"));
        }
    }
    assert_eq!(claims.len(), handoffs, "every handoff was claimed");
    let doubles: Vec<_> = claims.iter().filter(|(_, by)| by.len() > 1).collect();
    assert!(doubles.is_empty(), "claimed more than once: {doubles:?}");

    let records = store.list(&ListFilter::default()).unwrap();
    assert!(records.iter().all(|h| h.status == Status::Claimed));
    for h in &records {
        assert_eq!(h.claimed_by.as_ref(), claims[&h.id].first());
    }
    let mut claimed_events: HashMap<String, usize> = HashMap::new();
    for event in store.events(None).unwrap() {
        if event.change.kind() == "claimed" {
            *claimed_events.entry(event.handoff_id).or_default() += 1;
        }
    }
    assert_eq!(claimed_events.len(), handoffs);
    assert!(claimed_events.values().all(|n| *n == 1));
}

/// A worker: claims until nothing is left, writing each claimed id to its output file.
#[test]
fn race_worker() {
    let (Some(db), Some(out), Some(agent)) = (
        std::env::var_os("HANDOFF_RACE_DB"),
        std::env::var_os("HANDOFF_RACE_OUT"),
        std::env::var("HANDOFF_RACE_AGENT").ok(),
    ) else {
        return;
    };
    let store = Store::connect(&db.to_string_lossy()).unwrap();
    let mut claimed = String::new();
    loop {
        match store.claim_next(&agent, None, Duration::from_secs(3600)) {
            Ok(Some(claim)) => {
                claimed.push_str(&claim.handoff.id);
                claimed.push('\n');
            }
            Ok(None) => break,
            Err(e) => panic!("{agent} saw an error: {e}"),
        }
    }
    std::fs::write(out, claimed).unwrap();
}

fn assert_integrity(db: &Path) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(check, "ok");
}
