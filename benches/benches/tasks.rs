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
//! Then 4 worker processes on one store (SQLite FULL, the default; SQLite NORMAL; JSON files;
//! PostgreSQL with `--features postgres`, `HANDOFF_BENCH_POSTGRES` naming the server, schemas
//! `hc_bench_tasks_*` made and dropped) drive a 1,000-step DAG (10 layers of 100, each step
//! waiting for two of the layer before) to completion, beside 4 processes running 1,000 plain
//! lifecycles (create, `claim_next`, complete; one queue, as the steps) on another store of the
//! same kind: time per step and per lifecycle from the first start to the last unit done, in
//! 11 rounds that alternate the two, each on fresh stores; the medians and each round's ratio
//! are printed. `TASKS_PROCESSES` (default `4`; a list such as `1,4` runs each) sets the
//! number of processes: a step's cost that grows with them, where a lifecycle's shrinks, is
//! contention between the steps of one task. A first argument keeps only the stores whose
//! names contain it (`-- PostgreSQL`). The bench re-runs its own binary as the workers (see
//! `handoff_benches::team`).
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::Path;
use std::time::{Duration, Instant};

use handoff_benches::team::{self, Outcome, Team};
use handoff_core::plan::StepSpec;
use handoff_core::task::{NewTask, TaskStatus};
use handoff_core::{NewHandoff, SqliteOptions, Store, Synchronous};

const LEASE: Duration = Duration::from_secs(300);

/// Makes a single-process bench's store named so, in the directory.
type MakeStore = fn(&tempfile::TempDir, &str) -> Store;

fn main() {
    if let Some(role) = team::worker_role() {
        return worker(&role);
    }
    let full = std::env::args().any(|arg| arg == "--bench");
    let filter = std::env::args().skip(1).find(|arg| !arg.starts_with('-'));
    let chosen = |name: &str| filter.as_ref().is_none_or(|f| name.contains(f.as_str()));
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
    let single: Vec<(&str, MakeStore)> = vec![
        ("SQLite NORMAL", |dir, name| {
            open(&Kind::Sqlite(Synchronous::Normal).fresh(dir.path(), name))
        }),
        ("memory", |_, _| Store::memory()),
    ];
    let single: Vec<_> = single
        .into_iter()
        .filter(|(name, _)| chosen(name))
        .collect();
    if !single.is_empty() {
        println!(
            "| store | plain lifecycle µs | {} | step ÷ plain (largest plan) |",
            sizes
                .iter()
                .map(|n| format!("step µs, {n}-step plan"))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        println!("|---|---|{}---|", "---|".repeat(sizes.len()));
    }
    for (name, make) in single {
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
    let (layers, width, rounds) = if full { (10, 100, 11) } else { (3, 4, 1) };
    #[allow(unused_mut)]
    let mut kinds = vec![
        Kind::Sqlite(Synchronous::Full),
        Kind::Sqlite(Synchronous::Normal),
        Kind::Files,
    ];
    #[cfg(feature = "postgres")]
    kinds.push(Kind::Postgres);
    let processes: Vec<usize> = std::env::var("TASKS_PROCESSES")
        .unwrap_or_else(|_| "4".into())
        .split(',')
        .map(|n| n.trim().parse().expect("a list of process counts"))
        .collect();
    for kind in kinds.into_iter().filter(|kind| chosen(kind.name())) {
        for &n in &processes {
            dag_beside_plain(layers, width, rounds, kind, n);
        }
    }
}

/// The kind of store the processes share.
#[derive(Clone, Copy)]
enum Kind {
    Sqlite(Synchronous),
    Files,
    #[cfg(feature = "postgres")]
    Postgres,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Sqlite(Synchronous::Full) => "SQLite FULL",
            Kind::Sqlite(_) => "SQLite NORMAL",
            Kind::Files => "JSON files",
            #[cfg(feature = "postgres")]
            Kind::Postgres => "PostgreSQL",
        }
    }

    /// Where a fresh store of this kind named `name` is (emptied first, for a schema): what
    /// [`open`] takes, in the workers too.
    fn fresh(self, dir: &Path, name: &str) -> String {
        match self {
            Kind::Sqlite(sync) => {
                let mode = if sync == Synchronous::Full {
                    "FULL"
                } else {
                    "NORMAL"
                };
                format!("{mode}:{}", dir.join(format!("{name}.db")).display())
            }
            Kind::Files => format!("files:{}", dir.join(name).display()),
            #[cfg(feature = "postgres")]
            Kind::Postgres => pg::fresh(name),
        }
    }
}

/// Opens the store at `location` (from [`Kind::fresh`]).
fn open(location: &str) -> Store {
    let sqlite = |path: &str, synchronous| {
        let options = SqliteOptions {
            synchronous,
            ..SqliteOptions::default()
        };
        Store::open_with(path, &options).unwrap()
    };
    if let Some(path) = location.strip_prefix("FULL:") {
        sqlite(path, Synchronous::Full)
    } else if let Some(path) = location.strip_prefix("NORMAL:") {
        sqlite(path, Synchronous::Normal)
    } else {
        Store::connect(location).unwrap()
    }
}

/// `processes` processes drive a `layers` × `width` DAG, beside as many processes running as
/// many plain lifecycles as the DAG has steps, in `rounds` rounds that alternate the two teams,
/// each on a fresh store, so that both meet the machine as it is at that moment; the figures
/// are the medians of the rounds.
fn dag_beside_plain(layers: usize, width: usize, rounds: usize, kind: Kind, processes: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (mut plain, mut steps, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let plain_at = kind.fresh(dir.path(), &format!("plain_{round}"));
        let dag_at = kind.fresh(dir.path(), &format!("dag_{round}"));
        // Each store exists before its workers open it: processes that all find no store
        // would race to create it.
        let p = team_us(
            dir.path(),
            "plain",
            &plain_at,
            layers * width,
            processes,
            || {
                open(&plain_at);
                None
            },
        );
        let d = team_us(
            dir.path(),
            "dag",
            &dag_at,
            layers * width,
            processes,
            || {
                let store = open(&dag_at);
                let task = store.create_task(dag(layers, width)).unwrap();
                store.start_task(&task.header.id).unwrap();
                Some(task.header.id)
            },
        );
        plain.push(p);
        steps.push(d);
        ratios.push(d / p);
    }
    #[cfg(feature = "postgres")]
    pg::drop_schemas();
    let (plain, step) = (median(plain), median(steps));
    ratios.sort_by(f64::total_cmp);
    println!(
        "\n{processes} processes, {}, {rounds} rounds: {} plain lifecycles {plain:.0} µs each, \
         {}-step DAG {step:.0} µs per step (medians): {:.2}×; per round {:.2}–{:.2}×",
        kind.name(),
        layers * width,
        layers * width,
        step / plain,
        ratios[0],
        ratios[ratios.len() - 1],
    );
}

#[cfg(feature = "postgres")]
mod pg {
    use std::sync::Mutex;

    use handoff_benches::pg::{drop_schema, fresh_schema};

    /// The schemas this run made, dropped at the end.
    static MADE: Mutex<Vec<String>> = Mutex::new(Vec::new());

    /// The URL of a schema of this bench's own, emptied first.
    pub(super) fn fresh(name: &str) -> String {
        let schema = format!("hc_bench_tasks_{name}");
        MADE.lock().unwrap().push(schema.clone());
        fresh_schema(&schema)
    }

    pub(super) fn drop_schemas() {
        MADE.lock()
            .unwrap()
            .drain(..)
            .for_each(|schema| drop_schema(&schema));
    }
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

/// Microseconds per unit for `processes` `role` processes doing `units` units on the store at
/// `location` (`seed` prepares it and names the task for a DAG run).
fn team_us(
    dir: &Path,
    role: &str,
    location: &str,
    units: usize,
    processes: usize,
    seed: impl FnOnce() -> Option<String>,
) -> f64 {
    let task = seed();
    let team = Team::spawn(dir, role, processes, |n| {
        vec![
            ("TASKS_STORE", location.into()),
            ("TASKS_TASK", task.clone().unwrap_or_default().into()),
            (
                "TASKS_UNITS",
                (units / processes + usize::from(n < units % processes))
                    .to_string()
                    .into(),
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
    let store = open(&team::var("TASKS_STORE"));
    let agent = team::var("TEAM_AGENT");
    if role == "plain" {
        let mut left: usize = team::var("TASKS_UNITS").parse().unwrap();
        return team::work(|| {
            if left == 0 {
                return Ok(None);
            }
            left -= 1;
            // One queue for every worker, as the DAG's steps are: whoever is free takes the
            // oldest, which need not be the one it created. There is always one to take
            // (every worker creates before it claims), but PostgreSQL's claim skips those
            // other transactions hold, and may find none for a moment.
            store
                .create(NewHandoff::new(format!("t-{agent}-{left}"), "step").to_agent("w"))
                .map_err(|e| e.to_string())?;
            let claim = loop {
                if let Some(claim) = store
                    .claim_next("w", None, LEASE)
                    .map_err(|e| e.to_string())?
                {
                    break claim;
                }
            };
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
