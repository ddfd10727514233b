//! Building a context packet from 10k, 100k and 1M candidate items: the cost should grow
//! about linearly with the number of candidates.
#![allow(clippy::unwrap_used, missing_docs)]

use std::time::Duration;

use chrono::{TimeDelta, Utc};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use handoff_core::ContextBuilder;

fn sizes() -> Vec<usize> {
    if std::env::args().any(|arg| arg == "--bench") {
        vec![10_000, 100_000, 1_000_000]
    } else {
        vec![1_000]
    }
}

fn context(c: &mut Criterion) {
    let mut group = c.benchmark_group("context_build");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    let start = Utc::now();
    for n in sizes() {
        let mut builder = ContextBuilder::new(2_000);
        for i in 0..n {
            let text =
                format!("observation {i}: the parser handles nested blocks; tests pass on linux");
            builder.add_item(
                text,
                (i % 100) as i32,
                Some(start + TimeDelta::seconds(i as i64)),
            );
        }
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| builder.build())
        });
    }
    group.finish();
}

criterion_group!(benches, context);
criterion_main!(benches);
