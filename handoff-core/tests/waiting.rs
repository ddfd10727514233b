//! Workers waiting in `claim_next_wait` on a store that another connection (another process,
//! in real life) writes to: they wake for the work it creates, on every shared backend.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use handoff_core::{NewHandoff, Store};

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
    let Ok(server) = std::env::var("HANDOFF_TEST_POSTGRES") else {
        eprintln!("HANDOFF_TEST_POSTGRES is not set: skipping the PostgreSQL wait");
        return;
    };
    let schema = format!("hc_wait_{:016x}", fastrand::u64(..));
    let separator = if server.contains('?') { '&' } else { '?' };
    wakes_for_work_from_another_connection(&format!("{server}{separator}schema={schema}"));
    let mut client = postgres::Client::connect(&server, postgres::NoTls).unwrap();
    client
        .batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .unwrap();
}
