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
//!
//! Then 4 worker processes on one SQLite NORMAL file drive a 1,000-step DAG (10 layers of
//! 100, each step waiting for two of the layer before) to completion, beside 4 processes
//! running 1,000 plain lifecycles (create, `claim_next`, complete; one queue, as the steps) on
//! another file: time per step and per lifecycle from the first start to the last unit done,
//! in 7 rounds that alternate the two, each on fresh files; the medians and each round's ratio
//! are printed. The bench re-runs its own binary as the workers (see `handoff_benches::team`).
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::Path;
use std::time::{Duration, Instant};

use handoff_benches::team::{self, Outcome, Team};
use handoff_core::plan::StepSpec;
use handoff_core::task::{NewTask, TaskStatus};
use handoff_core::{NewHandoff, SqliteOptions, Store, Synchronous};

const LEASE: Duration = Duration::from_secs(300);

fn main() {
    if let Some(role) = team::worker_role() {
        return worker(&role);
    }
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
    let (layers, width, rounds) = if full { (10, 100, 7) } else { (3, 4, 1) };
    // Rounds alternate the two teams, each on fresh files, so that both meet the machine as
    // it is at that moment; the figures are the medians of the rounds.
    let dir = tempfile::tempdir().unwrap();
    let (mut plain, mut steps, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let plain_db = format!("plain-{round}.db");
        let dag_db = format!("dag-{round}.db");
        // Each store exists before its workers open it: processes that all find no file
        // would race to create it.
        let p = team_us(dir.path(), "plain", &plain_db, layers * width, || {
            sqlite(&dir, &plain_db);
            None
        });
        let d = team_us(dir.path(), "dag", &dag_db, layers * width, || {
            let store = sqlite(&dir, &dag_db);
            let task = store.create_task(dag(layers, width)).unwrap();
            store.start_task(&task.header.id).unwrap();
            Some(task.header.id)
        });
        plain.push(p);
        steps.push(d);
        ratios.push(d / p);
    }
    let (plain, step) = (median(plain), median(steps));
    ratios.sort_by(f64::total_cmp);
    println!(
        "\n4 processes, SQLite NORMAL, {rounds} rounds: {} plain lifecycles {plain:.0} µs each, \
         {}-step DAG {step:.0} µs per step (medians): {:.2}×; per round {:.2}–{:.2}×",
        layers * width,
        layers * width,
        step / plain,
        ratios[0],
        ratios[ratios.len() - 1],
    );
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// `layers` layers of `width` steps, each waiting for two steps of the layer before.
fn dag(layers: usize, width: usize) -> NewTask {
    let id = |layer: usize, i: usize| format!("l{layer}-{i}");
    let steps = (0..layers)
        .flat_map(|layer| {
            (0..width).map(move |i| {
                let spec = StepSpec::new(id(layer, i), "step", "w");
                if layer == 0 {
                    spec
                } else {
                    spec.after([id(layer - 1, i), id(layer - 1, (i + 1) % width)])
                }
            })
        })
        .collect();
    NewTask {
        name: "dag".into(),
        goal: "every step once".into(),
        steps,
        ..NewTask::default()
    }
}

/// Microseconds per unit for 4 `role` processes doing `units` units on the store at
/// `dir/<file>` (`seed` prepares it and names the task for a DAG run).
fn team_us(
    dir: &Path,
    role: &str,
    file: &str,
    units: usize,
    seed: impl FnOnce() -> Option<String>,
) -> f64 {
    let task = seed();
    let db = dir.join(file);
    let team = Team::spawn(dir, role, 4, |n| {
        vec![
            ("TASKS_DB", db.clone().into_os_string()),
            ("TASKS_TASK", task.clone().unwrap_or_default().into()),
            (
                "TASKS_UNITS",
                (units / 4 + usize::from(n < units % 4)).to_string().into(),
            ),
        ]
    });
    team.go();
    let reports: Vec<_> = team.wait().into_iter().map(Option::unwrap).collect();
    let outcome = Outcome::of(&reports);
    assert_eq!(outcome.total as usize, units, "every unit done once");
    1e6 / outcome.rate
}

/// A worker: plain lifecycles, or steps of the DAG until the task is done.
fn worker(role: &str) {
    let store = Store::open_with(
        team::var("TASKS_DB"),
        &SqliteOptions {
            synchronous: Synchronous::Normal,
            ..SqliteOptions::default()
        },
    )
    .unwrap();
    let agent = team::var("TEAM_AGENT");
    if role == "plain" {
        let mut left: usize = team::var("TASKS_UNITS").parse().unwrap();
        return team::work(|| {
            if left == 0 {
                return Ok(None);
            }
            left -= 1;
            // One queue for every worker, as the DAG's steps are: whoever is free takes the
            // oldest, which need not be the one it created.
            store
                .create(NewHandoff::new(format!("t-{agent}-{left}"), "step").to_agent("w"))
                .map_err(|e| e.to_string())?;
            let claim = store
                .claim_next("w", None, LEASE)
                .map_err(|e| e.to_string())?
                .ok_or("the queue was empty after a create")?;
            store.complete(&claim, "done").map_err(|e| e.to_string())?;
            Ok(Some(claim.handoff.id))
        });
    }
    let task = team::var("TASKS_TASK");
    team::work(|| {
        loop {
            match store.claim_next_wait("w", None, LEASE, Duration::from_millis(100)) {
                Ok(Some(claim)) => {
                    store.complete(&claim, "done").map_err(|e| e.to_string())?;
                    return Ok(Some(claim.handoff.id));
                }
                Ok(None) => {
                    let status = store
                        .get_task(&task)
                        .map_err(|e| e.to_string())?
                        .header
                        .status;
                    if status == TaskStatus::Completed {
                        return Ok(None);
                    }
                }
                Err(e) => return Err(e.to_string()),
            }
        }
    });
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
