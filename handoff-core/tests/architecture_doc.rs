//! ARCHITECTURE.md's table of what each backend can do is `Backend::capabilities` written out:
//! this reads the table and asks every backend, so the document cannot drift from the code. A
//! capability added to `Capabilities` fails here until the table has its row.
//!
//! The PostgreSQL column is checked when `HANDOFF_TEST_POSTGRES` names a server (CI sets it)
//! and the `postgres` feature is on; otherwise it says so and checks the other three.
#![allow(clippy::unwrap_used)]

#[cfg(feature = "postgres")]
#[path = "support/pg.rs"]
mod pg;

use std::collections::BTreeMap;

use handoff_core::Store;
use serde_json::Value;

/// The line the table follows in ARCHITECTURE.md.
const MARKER: &str = "<!-- capabilities: checked by handoff-core/tests/architecture_doc.rs -->";

/// The table under [`MARKER`]: for each backend (a column's heading), each capability's value.
fn documented() -> BTreeMap<String, BTreeMap<String, bool>> {
    let text = include_str!("../../ARCHITECTURE.md");
    let start = text
        .find(MARKER)
        .unwrap_or_else(|| panic!("ARCHITECTURE.md has lost the line {MARKER}"));
    let mut rows = text[start + MARKER.len()..]
        .lines()
        .skip_while(|line| line.trim().is_empty())
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            line.trim()
                .trim_matches('|')
                .split('|')
                .map(|cell| cell.trim().trim_matches('`').to_owned())
                .collect::<Vec<_>>()
        });
    let heading = rows.next().expect("the table has a heading");
    let backends = &heading[1..];
    let mut table: BTreeMap<String, BTreeMap<String, bool>> = BTreeMap::new();
    for row in rows.skip(1) {
        assert_eq!(row.len(), heading.len(), "a row of another width: {row:?}");
        for (backend, cell) in backends.iter().zip(&row[1..]) {
            let value = match cell.as_str() {
                "yes" => true,
                "no" => false,
                other => panic!("{}/{backend}: write yes or no, not {other:?}", row[0]),
            };
            table
                .entry(backend.clone())
                .or_default()
                .insert(row[0].clone(), value);
        }
    }
    table
}

/// What `store` says it can do, by the names `capabilities` has in JSON (every face's).
fn capabilities(store: &Store) -> BTreeMap<String, bool> {
    match serde_json::to_value(store.capabilities()).unwrap() {
        Value::Object(fields) => fields
            .into_iter()
            .map(|(name, value)| (name, value.as_bool().expect("a capability is a bool")))
            .collect(),
        other => panic!("capabilities serialise as an object, not {other}"),
    }
}

fn check(table: &BTreeMap<String, BTreeMap<String, bool>>, backend: &str, store: &Store) {
    let written = table
        .get(backend)
        .unwrap_or_else(|| panic!("the table has no column {backend:?}"));
    assert_eq!(
        written,
        &capabilities(store),
        "ARCHITECTURE.md's capabilities of {backend} (left) disagree with the backend's \
         `capabilities()` (right)"
    );
}

#[test]
fn the_capability_table_is_what_each_backend_says() {
    let table = documented();
    assert_eq!(
        table.keys().collect::<Vec<_>>(),
        ["JSON files", "PostgreSQL", "SQLite", "memory"],
        "one column per backend"
    );
    let dir = tempfile::tempdir().unwrap();
    check(&table, "memory", &Store::connect("memory:").unwrap());
    let sqlite = dir.path().join("store.db");
    check(
        &table,
        "SQLite",
        &Store::connect(sqlite.to_str().unwrap()).unwrap(),
    );
    let files = format!("files:{}", dir.path().join("files").display());
    check(&table, "JSON files", &Store::connect(&files).unwrap());
    #[cfg(feature = "postgres")]
    if let Some(server) = pg::server("the PostgreSQL column of ARCHITECTURE.md's table") {
        let schema = pg::Schema::new(&server, "architecture");
        check(&table, "PostgreSQL", &schema.store());
    }
    #[cfg(not(feature = "postgres"))]
    eprintln!("the postgres feature is off: the PostgreSQL column is not checked");
}
