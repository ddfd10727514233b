//! create → claim → complete of a ~2 KB record, on every backend, each beside raw rusqlite
//! running the same statements in the same transactions on the same kind of database.
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use handoff_benches::{RawLifecycle, record_bytes, store_lifecycle};
use handoff_core::{SqliteOptions, Store, Synchronous};

fn lifecycle(c: &mut Criterion) {
    eprintln!("record size: {} bytes of JSON", record_bytes());
    let mut group = c.benchmark_group("lifecycle");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(6))
        .warm_up_time(Duration::from_secs(1));

    let mut n = 0;
    let memory = Store::memory();
    group.bench_function("memory", |b| {
        b.iter(|| {
            n += 1;
            store_lifecycle(&memory, n)
        })
    });

    let in_memory = Store::open(":memory:").unwrap();
    group.bench_function("sqlite_in_memory", |b| {
        b.iter(|| {
            n += 1;
            store_lifecycle(&in_memory, n)
        })
    });
    let mut raw = RawLifecycle::open(Path::new(":memory:"), Synchronous::Full);
    group.bench_function("raw_sqlite_in_memory", |b| b.iter(|| raw.lifecycle()));

    for (name, sync) in [("full", Synchronous::Full), ("normal", Synchronous::Normal)] {
        let dir = tempfile::tempdir().unwrap();
        let options = SqliteOptions {
            synchronous: sync,
            ..SqliteOptions::default()
        };
        let store = Store::open_with(dir.path().join("store.db"), &options).unwrap();
        group.bench_function(format!("sqlite_{name}"), |b| {
            b.iter(|| {
                n += 1;
                store_lifecycle(&store, n)
            })
        });
        let mut raw = RawLifecycle::open(&dir.path().join("raw.db"), sync);
        group.bench_function(format!("raw_sqlite_{name}"), |b| b.iter(|| raw.lifecycle()));
    }
    group.finish();
}

criterion_group!(benches, lifecycle);
criterion_main!(benches);
