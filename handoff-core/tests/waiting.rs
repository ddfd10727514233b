//! Workers waiting in `claim_next_wait` on a store that another connection (another process,
//! in real life) writes to: they wake for the work it creates, on every shared backend.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use handoff_core::{NewHandoff, Store};

#[cfg(feature = "postgres")]
#[path = "support/pg.rs"]
mod pg;

/// A worker waits on one connection while another creates work; it gets the work, long before
/// its wait runs out.
fn wakes_for_work_from_another_connection(url: &str) {
    let waiting = Store::connect(url).unwrap();
    let writer = Store::connect(url).unwrap();
    let worker = std::thread::spawn(move || {
        waiting
            .claim_next_wait(
                "gemini",
                None,
                Duration::from_secs(60),
                Duration::from_secs(30),
            )
            .unwrap()
    });
    // Let the worker find nothing and go to sleep first.
    std::thread::sleep(Duration::from_millis(300));
    let h = writer.create(NewHandoff::new("t", "wake up")).unwrap();
    let claim = worker
        .join()
        .unwrap()
        .expect("the waiting worker got the work");
    assert_eq!(claim.handoff.id, h.id);
}

#[test]
fn sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    wakes_for_work_from_another_connection(dir.path().join("store.db").to_str().unwrap());
}

#[test]
fn files_folder() {
    let dir = tempfile::tempdir().unwrap();
    wakes_for_work_from_another_connection(&format!("files:{}", dir.path().display()));
}

/// On PostgreSQL when `HANDOFF_TEST_POSTGRES` names a server (CI sets it), in a schema of its
/// own.
#[cfg(feature = "postgres")]
#[test]
fn postgres_schema() {
    let Some(server) = pg::server("the PostgreSQL wait") else {
        return;
    };
    let schema = pg::Schema::new(&server, "wait");
    wakes_for_work_from_another_connection(&schema.url);
}
