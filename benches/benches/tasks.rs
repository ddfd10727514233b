//! Steps of a task run as handoffs: the cost of one step (its offer created by the previous
//! step's completion, `claim_next`, `complete`) beside a plain handoff lifecycle (`create`,
//! `claim_next`, `complete`) on the same kind of store, in the same run, and at two plan sizes,
//! to show that a step costs the same in a plan of 100 steps and of 10,000.
//!
//! ```sh
//! cargo bench -p handoff-benches --bench tasks   # prints a Markdown table
//! ```
//!
//! The plan is a chain (each step waits for the one before), so every completion offers
//! exactly one step. SQLite with `synchronous=NORMAL` (so that the disk's fsync does not
//! drown the difference) and the in-memory store. `TASK_STEPS` (default `100,10000`) sets the
//! plan sizes; the plain lifecycles run as many times as the largest plan has steps.
#![allow(clippy::unwrap_used, missing_docs)]

use std::time::{Duration, Instant};

use handoff_core::plan::StepSpec;
use handoff_core::task::{NewTask, TaskStatus};
use handoff_core::{NewHandoff, SqliteOptions, Store, Synchronous};

const LEASE: Duration = Duration::from_secs(300);

fn main() {
    let full = std::env::args().any(|arg| arg == "--bench");
    let sizes: Vec<usize> = if full {
        std::env::var("TASK_STEPS")
            .unwrap_or_else(|_| "100,10000".into())
            .split(',')
            .map(|n| n.trim().parse().expect("a list of numbers"))
            .collect()
    } else {
        vec![20]
    };
    let largest = sizes.iter().copied().max().unwrap_or(1);
    println!(
        "| store | plain lifecycle µs | {} | step ÷ plain (largest plan) |",
        sizes
            .iter()
            .map(|n| format!("step µs, {n}-step plan"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("|---|---|{}---|", "---|".repeat(sizes.len()));
    for (name, make) in [
        (
            "SQLite NORMAL",
            sqlite as fn(&tempfile::TempDir, &str) -> Store,
        ),
        ("memory", |_: &tempfile::TempDir, _: &str| Store::memory()),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let plain = plain_lifecycle_us(&make(&dir, "plain.db"), largest);
        let steps: Vec<f64> = sizes
            .iter()
            .map(|&n| step_us(&make(&dir, &format!("plan-{n}.db")), n))
            .collect();
        println!(
            "| {name} | {plain:.1} | {} | {:.2} |",
            steps
                .iter()
                .map(|s| format!("{s:.1}"))
                .collect::<Vec<_>>()
                .join(" | "),
            steps.last().copied().unwrap_or(0.0) / plain
        );
    }
}

fn sqlite(dir: &tempfile::TempDir, name: &str) -> Store {
    Store::open_with(
        dir.path().join(name),
        &SqliteOptions {
            synchronous: Synchronous::Normal,
            ..SqliteOptions::default()
        },
    )
    .unwrap()
}

/// Microseconds per create → `claim_next` → complete of an addressed handoff.
fn plain_lifecycle_us(store: &Store, n: usize) -> f64 {
    let started = Instant::now();
    for i in 0..n {
        store
            .create(NewHandoff::new(format!("t{i}"), "step").to_agent("w"))
            .unwrap();
        let claim = store.claim_next("w", None, LEASE).unwrap().unwrap();
        store.complete(&claim, "done").unwrap();
    }
    started.elapsed().as_secs_f64() * 1e6 / n as f64
}

/// Microseconds per step of an `n`-step chain: `claim_next` → complete, which offers the next.
fn step_us(store: &Store, n: usize) -> f64 {
    let steps: Vec<StepSpec> = (0..n)
        .map(|i| {
            let spec = StepSpec::new(format!("s{i}"), "step", "w");
            if i == 0 {
                spec
            } else {
                spec.after([format!("s{}", i - 1)])
            }
        })
        .collect();
    let task = store
        .create_task(NewTask {
            name: "chain".into(),
            goal: "every step once".into(),
            steps,
            ..NewTask::default()
        })
        .unwrap();
    store.start_task(&task.header.id).unwrap();
    let started = Instant::now();
    for _ in 0..n {
        let claim = store.claim_next("w", None, LEASE).unwrap().unwrap();
        store.complete(&claim, "done").unwrap();
    }
    let per_step = started.elapsed().as_secs_f64() * 1e6 / n as f64;
    let done = store.get_task(&task.header.id).unwrap();
    assert_eq!(done.header.status, TaskStatus::Completed);
    per_step
}
