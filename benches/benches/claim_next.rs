//! `claim_next` latency with 10k, 100k and 1M pending handoffs: an index seek should not care
//! how long the queue is, nor whether the queue mixes priorities (`*_priorities`: every record
//! one of five priorities, so each claim takes the oldest of the highest). Only the claim is
//! timed; the queue is topped up between claims so it never shrinks by more than a few percent.
//! `CLAIM_NEXT_SIZES=10000,100000` picks the queue lengths.
#![allow(clippy::unwrap_used, missing_docs)]

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use handoff_core::{ChainPolicy, NewHandoff, SqliteOptions, Store, Synchronous};

const SIZES: [usize; 3] = [10_000, 100_000, 1_000_000];

/// `cargo test` runs benches once as a smoke test (without `--bench`): a small queue will do.
fn sizes() -> Vec<usize> {
    if let Ok(sizes) = std::env::var("CLAIM_NEXT_SIZES") {
        return sizes
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect();
    }
    if std::env::args().any(|arg| arg == "--bench") {
        SIZES.to_vec()
    } else {
        vec![1_000]
    }
}
const LEASE: Duration = Duration::from_secs(3600);

/// A small record: this bench is about the queue, not the payload. With `mixed`, one of five
/// priorities.
fn pending(i: usize, mixed: bool) -> NewHandoff {
    let priority = if mixed { (i % 5) as i32 } else { 0 };
    NewHandoff::new(format!("q-{i}"), "take the next item")
        .from_agent("producer")
        .priority(priority)
}

fn fill(store: &Store, from: usize, count: usize, mixed: bool) {
    let mut next = from;
    while next < from + count {
        let batch = (next..(from + count).min(next + 10_000))
            .map(|i| pending(i, mixed))
            .collect();
        store.create_many(batch).unwrap();
        next += 10_000;
    }
}

fn claim_next(c: &mut Criterion) {
    let mut group = c.benchmark_group("claim_next");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(5))
        .warm_up_time(Duration::from_secs(1));
    for size in sizes() {
        let dir = tempfile::tempdir().unwrap();
        let options = SqliteOptions {
            synchronous: Synchronous::Normal,
            ..SqliteOptions::default()
        };
        let sqlite = |file: &str| {
            Store::open_with(dir.path().join(file), &options)
                .unwrap()
                .with_policy(ChainPolicy::unlimited())
        };
        let memory = || Store::memory().with_policy(ChainPolicy::unlimited());
        for (name, store, mixed) in [
            ("sqlite_normal", sqlite("queue.db"), false),
            ("sqlite_normal_priorities", sqlite("mixed.db"), true),
            ("memory", memory(), false),
            ("memory_priorities", memory(), true),
        ] {
            let store = &store;
            let started = Instant::now();
            fill(store, 0, size, mixed);
            eprintln!("{name}: filled {size} pending in {:.1?}", started.elapsed());
            let mut created = size;
            let mut claimed = 0;
            group.bench_with_input(BenchmarkId::new(name, size), &size, |b, &size| {
                b.iter_custom(|iters| {
                    let mut spent = Duration::ZERO;
                    for _ in 0..iters {
                        // Keep the queue within 5% of its nominal size, outside the timing.
                        if created - claimed < size - size / 20 {
                            fill(store, created, size / 20, mixed);
                            created += size / 20;
                        }
                        let t = Instant::now();
                        let claim = store.claim_next("worker", None, LEASE).unwrap();
                        spent += t.elapsed();
                        assert!(claim.is_some());
                        claimed += 1;
                    }
                    spent
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, claim_next);
criterion_main!(benches);
