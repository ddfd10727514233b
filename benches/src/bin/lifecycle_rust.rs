//! The Rust side of `benches/python_lifecycle.py`: runs create → claim → complete through the
//! core's `Store` and prints the time per lifecycle as JSON, so that the Python script can put
//! the same lifecycle from Rust and from Python side by side in one run.
//!
//! `lifecycle_rust <memory|full|normal> <iterations> [warmup]` runs once and prints
//! `{"mode", "iterations", "seconds", "per_op_us"}`.
//!
//! `lifecycle_rust <memory|full|normal> serve` keeps one store open and, for each number `n`
//! read from stdin, runs `n` lifecycles and prints the microseconds per lifecycle on a line: the
//! Python script alternates such blocks with its own, so that both sides meet the same disk.
//!
//! The record is the one the Python script uses (`RECORD` there): about 1.5 KB as JSON.
#![allow(clippy::unwrap_used, missing_docs)] // Bench code: a failed unwrap is a failed run.

use std::time::{Duration, Instant};

use handoff_core::{NewHandoff, Reason, SqliteOptions, Store, Synchronous};

fn record(task: &str) -> NewHandoff {
    let line = |topic: &str, i: usize| {
        format!(
            "{topic} {i}: checked the module boundaries and wrote down what the next agent needs"
        )
    };
    NewHandoff::new(
        task,
        "Migrate the billing service from the legacy ORM to sqlx",
    )
    .from_agent("claude")
    .reason(Reason::ContextLimit { percent: 85 })
    .context_usage(85)
    .progress("Half of the repositories are ported; invoices and refunds remain. Tests pass.")
    .completed((0..4).map(|i| line("ported", i)))
    .pending((0..4).map(|i| line("port", i)))
    .decisions((0..3).map(|i| line("decided", i)))
    .assumptions(["the schema is frozen until the release"])
    .warnings(["refunds use a different rounding mode"])
    .files([
        "src/billing/invoices.rs",
        "src/billing/refunds.rs",
        "src/db.rs",
    ])
    .instructions("Port invoices first; run the billing tests after each repository.")
}

fn lifecycle(store: &Store, n: usize) {
    let h = store.create(record(&format!("task-{n:07}"))).unwrap();
    let claim = store
        .claim(&h.id, "gemini", Duration::from_secs(300))
        .unwrap();
    store.complete(&claim, "done").unwrap();
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("memory");
    let serve = args.get(2).map(String::as_str) == Some("serve");
    let iterations: usize = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(1000);
    let warmup: usize = args
        .get(3)
        .and_then(|n| n.parse().ok())
        .unwrap_or(iterations / 10);
    let dir = match std::env::var_os("BENCH_TMPDIR") {
        Some(parent) => tempfile::tempdir_in(parent).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    let store = match mode {
        "memory" => Store::memory(),
        "full" | "normal" => {
            let options = SqliteOptions {
                synchronous: if mode == "full" {
                    Synchronous::Full
                } else {
                    Synchronous::Normal
                },
                ..SqliteOptions::default()
            };
            Store::open_with(dir.path().join("bench.db"), &options).unwrap()
        }
        other => panic!("unknown mode {other:?}: memory, full or normal"),
    };
    if serve {
        use std::io::{BufRead, Write};
        let mut done = 0;
        let mut out = std::io::stdout().lock();
        for line in std::io::stdin().lock().lines() {
            let n: usize = line.unwrap().trim().parse().unwrap();
            let started = Instant::now();
            for i in done..done + n {
                lifecycle(&store, i);
            }
            done += n;
            writeln!(out, "{}", started.elapsed().as_secs_f64() * 1e6 / n as f64).unwrap();
            out.flush().unwrap();
        }
        return;
    }
    for n in 0..warmup {
        lifecycle(&store, n);
    }
    let started = Instant::now();
    for n in warmup..warmup + iterations {
        lifecycle(&store, n);
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{{\"mode\": \"{mode}\", \"iterations\": {iterations}, \"seconds\": {seconds}, \"per_op_us\": {}}}",
        seconds * 1e6 / iterations as f64
    );
}
