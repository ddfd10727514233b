//! One iteration of the manager/worker protocol (the worker takes its instructions and
//! reports, the manager takes the report and decides CONTINUE) beside a plain handoff
//! lifecycle (`create`, `claim_next`, `complete`), on the same kind of store, in the same run,
//! in interleaved blocks, on every backend (in memory, SQLite NORMAL and FULL, JSON files and,
//! with the feature, PostgreSQL). Each protocol call settles one claim and creates one message
//! with a larger body, so an iteration does about two lifecycles' work; the target is ≤ 2.2×.
//!
//! ```sh
//! cargo bench -p handoff-benches --bench protocol            # prints a Markdown table
//! cargo bench -p handoff-benches --bench protocol -- SQLite  # only the stores named so
//! cargo bench -p handoff-benches --features postgres --bench protocol   # and PostgreSQL
//! ```
//!
//! PostgreSQL: `HANDOFF_BENCH_POSTGRES` (default `postgres://postgres@127.0.0.1:5432/test`),
//! two schemas of its own, dropped at the end.
//!
//! Runs last 10 iterations (the default `max_iterations`), each started by `initialize`,
//! whose cost is counted in the iterations (so the ratio is an upper bound). Both sides take
//! their work with `claim_next(agent)`, as a worker serving any task does.
#![allow(clippy::unwrap_used, missing_docs)]

use std::time::{Duration, Instant};

use handoff_core::protocol::{Decision, FileChange, Initialize, Tests, WorkerReport, WorkerStatus};
use handoff_core::{NewHandoff, SqliteOptions, Store, Synchronous};

const LEASE: Duration = Duration::from_secs(300);
const ITERATIONS: u32 = 10;

fn main() {
    let full = std::env::args().any(|arg| arg == "--bench");
    #[allow(unused_mut)]
    let mut stores = vec![
        ("in-memory", memory as fn(&tempfile::TempDir, &str) -> Store),
        ("SQLite NORMAL", sqlite_normal),
        ("SQLite FULL", sqlite_full),
        ("JSON files", files),
    ];
    #[cfg(feature = "postgres")]
    stores.push(("PostgreSQL", pg::store));
    let filter = std::env::args().skip(1).find(|arg| !arg.starts_with('-'));
    let (rounds, runs) = if full { (9, 20) } else { (1, 1) };
    println!("| store | plain lifecycle µs | protocol iteration µs | iteration ÷ lifecycle |");
    println!("|---|---|---|---|");
    for (name, make) in stores {
        if filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let plain_store = make(&dir, "plain.db");
        let run_store = make(&dir, "protocol.db");
        let (mut plain, mut protocol) = (Vec::new(), Vec::new());
        let mut n = 0u64;
        let units = runs * ITERATIONS as usize;
        for round in 0..rounds + 1 {
            let started = Instant::now();
            (0..units).for_each(|_| {
                n += 1;
                lifecycle(&plain_store, n);
            });
            let plain_us = started.elapsed().as_secs_f64() * 1e6 / units as f64;
            let started = Instant::now();
            (0..runs).for_each(|_| {
                n += 1;
                run(&run_store, n);
            });
            let protocol_us = started.elapsed().as_secs_f64() * 1e6 / units as f64;
            // The first round warms both up.
            if round > 0 {
                plain.push(plain_us);
                protocol.push(protocol_us);
            }
        }
        let (plain, protocol) = (median(plain), median(protocol));
        println!(
            "| {name} | {plain:.0} | {protocol:.0} | {:.2}× |",
            protocol / plain
        );
    }
    #[cfg(feature = "postgres")]
    pg::drop_schemas();
}

#[cfg(feature = "postgres")]
mod pg {
    use handoff_benches::pg::{drop_schema, fresh_schema};
    use handoff_core::Store;

    const SCHEMAS: [&str; 2] = ["hc_bench_protocol_plain", "hc_bench_protocol_run"];

    /// A store in a schema of this bench's own.
    pub(super) fn store(_: &tempfile::TempDir, file: &str) -> Store {
        let schema = if file.starts_with("plain") {
            SCHEMAS[0]
        } else {
            SCHEMAS[1]
        };
        Store::connect(&fresh_schema(schema)).unwrap()
    }

    pub(super) fn drop_schemas() {
        SCHEMAS.iter().for_each(|schema| drop_schema(schema));
    }
}

fn memory(_: &tempfile::TempDir, _: &str) -> Store {
    Store::memory()
}

fn files(dir: &tempfile::TempDir, name: &str) -> Store {
    Store::connect(&format!("files:{}", dir.path().join(name).display())).unwrap()
}

fn sqlite_normal(dir: &tempfile::TempDir, file: &str) -> Store {
    sqlite(dir, file, Synchronous::Normal)
}

fn sqlite_full(dir: &tempfile::TempDir, file: &str) -> Store {
    sqlite(dir, file, Synchronous::Full)
}

fn sqlite(dir: &tempfile::TempDir, file: &str, synchronous: Synchronous) -> Store {
    let options = SqliteOptions {
        synchronous,
        ..SqliteOptions::default()
    };
    Store::open_with(dir.path().join(file), &options).unwrap()
}

/// A plain handoff with about the text of a protocol message: create, `claim_next`, complete.
fn lifecycle(store: &Store, n: u64) {
    let new = NewHandoff::new(format!("plain-{n}"), "Add token refresh to src/auth.js")
        .to_agent("w")
        .instructions("Answer with a report.")
        .files(["src/auth.js"]);
    store.create(new).unwrap();
    let claim = store.claim_next("w", None, LEASE).unwrap().unwrap();
    store.complete(&claim, "done").unwrap();
}

/// A run of `ITERATIONS` iterations: each a report and a decision (CONTINUE, then COMPLETE).
fn run(store: &Store, n: u64) {
    let task = format!("run-{n}");
    store
        .initialize(Initialize {
            task_id: task.clone(),
            manager: "m".into(),
            worker: "w".into(),
            instructions: "Add token refresh to src/auth.js".into(),
            success_criteria: vec!["a 401 triggers one refresh".into()],
            ..Initialize::default()
        })
        .unwrap();
    for i in 1..=ITERATIONS {
        let work = store.claim_next("w", None, LEASE).unwrap().unwrap();
        let report = WorkerReport {
            status: WorkerStatus::Partial,
            accomplished: vec![format!("step {i}")],
            files_modified: vec![FileChange {
                path: "src/auth.js".into(),
                description: "refresh on 401".into(),
            }],
            tests: Tests {
                added: 1,
                passing: i,
                coverage: None,
            },
            issues: vec!["more to do".into()],
            validation: Vec::new(),
        };
        store.report(&work, report).unwrap();
        let review = store.claim_next("m", None, LEASE).unwrap().unwrap();
        let (decision, next) = if i == ITERATIONS {
            (Decision::Complete, None)
        } else {
            (
                Decision::Continue,
                Some("Go on with the next step".to_owned()),
            )
        };
        store
            .decide(&review, decision, next, None, None, None)
            .unwrap();
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
