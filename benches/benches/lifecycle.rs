//! create → claim → complete of a ~2 KB record, on every backend, each beside two raw rusqlite
//! baselines on the same kind of database: `raw_*` runs the store's own statements in the same
//! transactions (the cost of SQLite under our schema), `minimal_raw_*` the least a user could
//! hand-write for the same lifecycle ([`MinimalRawLifecycle`]: one table, a small event log,
//! three immediate transactions).
//!
//! ```sh
//! cargo bench -p handoff-benches --bench lifecycle                 # everything
//! cargo bench -p handoff-benches --bench lifecycle -- sqlite       # the SQLite entries only
//! ```
//!
//! After criterion's entries (unless a filter excludes `lifecycle/sqlite_ratios`) the bench
//! prints a Markdown table of ratios for `synchronous` FULL and NORMAL: the store, the
//! same-statements baseline and the minimal one run in interleaved blocks on the same disk,
//! and each ratio is the store's throughput over the baseline's (medians of the blocks).
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use handoff_benches::{MinimalRawLifecycle, RawLifecycle, record_bytes, store_lifecycle};
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
        let store = sqlite_store(&dir.path().join("store.db"), sync);
        group.bench_function(format!("sqlite_{name}"), |b| {
            b.iter(|| {
                n += 1;
                store_lifecycle(&store, n)
            })
        });
        let mut raw = RawLifecycle::open(&dir.path().join("raw.db"), sync);
        group.bench_function(format!("raw_sqlite_{name}"), |b| b.iter(|| raw.lifecycle()));
        let mut minimal = MinimalRawLifecycle::open(&dir.path().join("minimal.db"), sync);
        group.bench_function(format!("minimal_raw_sqlite_{name}"), |b| {
            b.iter(|| minimal.lifecycle())
        });
    }
    group.finish();
}

fn sqlite_store(path: &Path, sync: Synchronous) -> Store {
    let options = SqliteOptions {
        synchronous: sync,
        ..SqliteOptions::default()
    };
    Store::open_with(path, &options).unwrap()
}

/// The ratios, from interleaved blocks: criterion's entries run one after another, minutes
/// apart on a disk whose fsync time drifts; blocks that alternate meet the same disk.
fn ratios() {
    let bench = std::env::args().any(|arg| arg == "--bench");
    if !wanted("lifecycle/sqlite_ratios") {
        return;
    }
    let rounds = if bench { 15 } else { 1 };
    println!();
    println!(
        "fsync of a small file on this disk now: {:.2} ms (median)",
        handoff_benches::fsync_ms()
    );
    println!(
        "| synchronous | store µs | raw, same statements µs | minimal raw µs | store ÷ raw same (throughput) | store ÷ minimal raw (throughput) |"
    );
    println!("|---|---|---|---|---|---|");
    for (name, sync, block) in [
        ("FULL", Synchronous::Full, 40),
        ("NORMAL", Synchronous::Normal, 200),
    ] {
        let block = if bench { block } else { 3 };
        let dir = tempfile::tempdir().unwrap();
        let store = sqlite_store(&dir.path().join("store.db"), sync);
        let mut raw = RawLifecycle::open(&dir.path().join("raw.db"), sync);
        let mut minimal = MinimalRawLifecycle::open(&dir.path().join("minimal.db"), sync);
        let mut n = 0;
        let mut contenders: [(&mut dyn FnMut(), Vec<f64>); 3] = [
            (
                &mut || {
                    n += 1;
                    store_lifecycle(&store, n)
                },
                Vec::new(),
            ),
            (&mut || raw.lifecycle(), Vec::new()),
            (&mut || minimal.lifecycle(), Vec::new()),
        ];
        for (run, _) in contenders.iter_mut() {
            (0..block).for_each(|_| run()); // warm-up
        }
        for round in 0..rounds {
            // Rotate who goes first, so that none always follows the same one.
            for k in 0..3 {
                let (run, times) = &mut contenders[(round + k) % 3];
                let started = Instant::now();
                (0..block).for_each(|_| run());
                times.push(started.elapsed().as_secs_f64() * 1e6 / block as f64);
            }
        }
        let [store_us, raw_us, minimal_us] = contenders.map(|(_, times)| median(times));
        println!(
            "| {name} | {store_us:.0} | {raw_us:.0} | {minimal_us:.0} | {:.2} | {:.2} |",
            raw_us / store_us,
            minimal_us / store_us
        );
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Whether criterion's filter (the first free argument, a substring match) lets `id` run.
fn wanted(id: &str) -> bool {
    // Criterion's options that take a value: their value is not a filter.
    const VALUED: [&str; 12] = [
        "--save-baseline",
        "-s",
        "--baseline",
        "-b",
        "--load-baseline",
        "--measurement-time",
        "--warm-up-time",
        "--sample-size",
        "--nresamples",
        "--noise-threshold",
        "--profile-time",
        "--output-format",
    ];
    let args: Vec<String> = std::env::args().skip(1).collect();
    let filter = args
        .iter()
        .enumerate()
        .find(|(i, arg)| {
            !arg.starts_with('-') && (*i == 0 || !VALUED.contains(&args[i - 1].as_str()))
        })
        .map(|(_, arg)| arg.as_str());
    filter.is_none_or(|f| id.contains(f))
}

criterion_group!(benches, lifecycle);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    ratios();
}
