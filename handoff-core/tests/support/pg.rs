//! What the PostgreSQL failure tests share: a schema of their own, dropped at the end, and the
//! check that every record agrees with its event log.
#![allow(dead_code, clippy::unwrap_used)]

use std::collections::HashMap;
use std::time::{Duration, Instant};

use handoff_core::machine::apply;
use handoff_core::{Event, Handoff, Lifecycle, ListFilter, Store};

/// The server `HANDOFF_TEST_POSTGRES` names, or `None` (with a note) when it is not set.
pub(crate) fn server(what: &str) -> Option<String> {
    let server = std::env::var("HANDOFF_TEST_POSTGRES").ok();
    if server.is_none() {
        eprintln!("HANDOFF_TEST_POSTGRES is not set: skipping {what}");
    }
    server
}

/// A fresh schema on the server, dropped when this is dropped.
pub(crate) struct Schema {
    server: String,
    name: String,
    /// The store URL naming the schema.
    pub(crate) url: String,
}

impl Schema {
    /// A schema named `hc_<label>_<random>`.
    pub(crate) fn new(server: &str, label: &str) -> Schema {
        let name = format!("hc_{label}_{:016x}", fastrand::u64(..));
        let separator = if server.contains('?') { '&' } else { '?' };
        Schema {
            server: server.to_owned(),
            url: format!("{server}{separator}schema={name}"),
            name,
        }
    }

    /// A store on the schema; an unreachable server fails the test (CI sets the variable, and
    /// must not pass without the server).
    pub(crate) fn store(&self) -> Store {
        Store::connect(&self.url)
            .unwrap_or_else(|e| panic!("HANDOFF_TEST_POSTGRES={} is unreachable: {e}", self.server))
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&self.server, postgres::NoTls) {
            let _ =
                client.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.name));
        }
    }
}

/// Waits (at most `patience`) until the server accepts connections and answers a query; how
/// long that took.
pub(crate) fn wait_for_server(server: &str, patience: Duration) -> Duration {
    let start = Instant::now();
    loop {
        let answered = postgres::Client::connect(server, postgres::NoTls)
            .and_then(|mut client| client.simple_query("SELECT 1"))
            .is_ok();
        if answered {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < patience,
            "the server at {server} did not accept connections again within {patience:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Checks that the store is whole: every event belongs to a record, every record's log starts
/// with its creation, and replaying a record's log over its content as created gives the
/// record exactly (so no write left a record without its events or events without their
/// record). Returns the records by id with their logs.
pub(crate) fn assert_whole(store: &Store) -> HashMap<String, (Handoff, Vec<Event>)> {
    let records = store.list(&ListFilter::default()).unwrap();
    let mut logs: HashMap<String, Vec<Event>> = HashMap::new();
    for event in store.events(None).unwrap() {
        logs.entry(event.handoff_id.clone())
            .or_default()
            .push(event);
    }
    let mut whole = HashMap::new();
    for record in records {
        let log = logs
            .remove(&record.id)
            .unwrap_or_else(|| panic!("{} has no events: {record:?}", record.id));
        assert_eq!(log[0].change.kind(), "created", "{}: {log:?}", record.id);
        // The record as its create left it, then every event applied in order (what
        // `machine::replay` does).
        let mut replayed = record.clone();
        replayed.replace_lifecycle(Lifecycle::default());
        for event in &log {
            apply(&mut replayed, &event.change, event.at);
        }
        assert_eq!(
            replayed, record,
            "{}: the record and its log disagree: {log:?}",
            record.id
        );
        whole.insert(record.id.clone(), (record, log));
    }
    assert!(logs.is_empty(), "events without a record: {logs:?}");
    whole
}

/// How many events of `kind` the log has.
pub(crate) fn count(log: &[Event], kind: &str) -> usize {
    log.iter().filter(|e| e.change.kind() == kind).count()
}
