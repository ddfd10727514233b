//! Redaction throughput on 1 MB of prose with no secrets and on 1 MB dense with secrets.
#![allow(clippy::unwrap_used, missing_docs)]

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use handoff_core::redact;

const MB: usize = 1 << 20;

fn prose() -> String {
    let sentence = "The agent ported the billing repository, ran the tests, and wrote down which \
                    decisions were taken and why; the next agent should start with refunds, \
                    keep the task-level notes, and assess the risk-based rollout plan. ";
    sentence.repeat(MB / sentence.len() + 1)[..MB].to_owned()
}

fn dense() -> String {
    let secrets = "key sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z then AKIAZ3MSJV6WIBXQNJKH and \
                   ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8 with password=hunter2hunter2 at \
                   postgres://admin:s3cr3tP4ss@db:5432/app; Authorization: Bearer abcdef0123456789 ";
    let mut text = secrets.repeat(MB / secrets.len() + 1);
    text.truncate(
        text.char_indices()
            .take_while(|(i, _)| *i < MB)
            .last()
            .map_or(0, |(i, _)| i),
    );
    text
}

fn redaction(c: &mut Criterion) {
    let mut group = c.benchmark_group("redact");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(4));
    for (name, text) in [("prose_1mb", prose()), ("dense_secrets_1mb", dense())] {
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(name, |b| b.iter(|| redact(&text)));
    }
    group.finish();
}

criterion_group!(benches, redaction);
criterion_main!(benches);
