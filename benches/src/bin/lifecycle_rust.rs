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
//! The record is `handoff_benches::record`, the one the Python script uses (`RECORD` there).
#![allow(clippy::unwrap_used, missing_docs)] // Bench code: a failed unwrap is a failed run.

use std::time::Instant;

use handoff_benches::store_lifecycle;
use handoff_core::{SqliteOptions, Store, Synchronous};

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
                store_lifecycle(&store, i as u64);
            }
            done += n;
            writeln!(out, "{}", started.elapsed().as_secs_f64() * 1e6 / n as f64).unwrap();
            out.flush().unwrap();
        }
        return;
    }
    for n in 0..warmup {
        store_lifecycle(&store, n as u64);
    }
    let started = Instant::now();
    for n in warmup..warmup + iterations {
        store_lifecycle(&store, n as u64);
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{{\"mode\": \"{mode}\", \"iterations\": {iterations}, \"seconds\": {seconds}, \"per_op_us\": {}}}",
        seconds * 1e6 / iterations as f64
    );
}
