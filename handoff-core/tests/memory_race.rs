//! `memory_update` from several OS processes on one store: every increment counts. 8
//! processes × 200 increments on an SQLite file end at exactly 1,600 (and, on PostgreSQL when
//! `HANDOFF_TEST_POSTGRES` names a server, 4 × 100 at 400).
//!
//! The test re-runs its own binary as the workers: `memory_worker` does nothing unless the
//! environment names a store.
#![allow(clippy::unwrap_used)]

use std::process::{Command, Stdio};

use handoff_core::{Error, Store};

#[cfg(feature = "postgres")]
#[path = "support/pg.rs"]
mod pg;

#[test]
fn processes_increment_a_shared_memory_without_losing_one() {
    let dir = tempfile::tempdir().unwrap();
    let url = dir.path().join("memory.db").display().to_string();
    increments(&url, 8, 200);
}

#[cfg(feature = "postgres")]
#[test]
fn processes_increment_a_shared_memory_on_postgres() {
    let Some(server) = pg::server("the PostgreSQL memory race") else {
        return;
    };
    let schema = pg::Schema::new(&server, "memory");
    increments(&schema.url, 4, 100);
}

fn increments(url: &str, workers: usize, each: usize) {
    // The store exists (and is migrated) before the workers race to open it.
    Store::connect(url).unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..workers)
        .map(|_| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "memory_worker",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("HANDOFF_MEMORY_DB", url)
                .env("HANDOFF_MEMORY_EACH", each.to_string())
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a worker failed");
    }
    let shared = Store::connect(url)
        .unwrap()
        .memory_get("shared")
        .unwrap()
        .unwrap();
    assert_eq!(shared.value["count"], (workers * each) as u64);
    assert_eq!(shared.version, (workers * each) as u64);
}

/// A worker: `HANDOFF_MEMORY_EACH` increments of `shared.count`.
#[test]
fn memory_worker() {
    let (Ok(url), Ok(each)) = (
        std::env::var("HANDOFF_MEMORY_DB"),
        std::env::var("HANDOFF_MEMORY_EACH"),
    ) else {
        return;
    };
    let store = Store::connect(&url).unwrap();
    for _ in 0..each.parse::<usize>().unwrap() {
        store
            .memory_update("shared", |mut value| {
                let n = value.get("count").and_then(|c| c.as_u64()).unwrap_or(0);
                value.insert("count".into(), (n + 1).into());
                Ok::<_, Error>(value)
            })
            .unwrap();
    }
}
