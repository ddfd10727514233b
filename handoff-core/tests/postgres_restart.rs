//! The PostgreSQL server restarted under load: workers creating, claiming and completing see
//! typed errors while it is down (never a panic or a hang), carry on by themselves once it is
//! back, and nothing the store acknowledged is lost; no record is half-written.
//!
//! Runs when `HANDOFF_TEST_POSTGRES` names a server and `HANDOFF_TEST_POSTGRES_RESTART` gives
//! the command that restarts it (CI: `pg_ctlcluster 15 main restart`). Restarting the server
//! breaks every other PostgreSQL test running at the time, so this is the only test of its
//! binary, ignored unless asked for (`-- --include-ignored`), and `make test` runs it alone,
//! after the others. It waits for the server to accept connections again before it ends.
#![cfg(feature = "postgres")]
#![allow(clippy::unwrap_used)]

#[path = "support/pg.rs"]
mod pg;

use std::collections::{BTreeMap, HashSet};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use handoff_core::{Error, NewHandoff, Status, Store};

const WORKERS: usize = 4;

/// How many operations each worker completes before the restart, and again after it.
const ROUNDS: usize = 20;

/// How long anything here may take before it counts as a hang.
const PATIENCE: Duration = Duration::from_secs(180);

/// Claims outlast the test: a record left claimed (its completion failed) stays as it is.
const LEASE: Duration = Duration::from_secs(3600);

#[test]
#[ignore = "restarts the PostgreSQL server: run alone, with --include-ignored (make test does)"]
fn postgres_restart_under_load_loses_nothing_acknowledged() {
    let Some(server) = pg::server("the PostgreSQL restart test") else {
        return;
    };
    let Ok(restart) = std::env::var("HANDOFF_TEST_POSTGRES_RESTART") else {
        eprintln!("HANDOFF_TEST_POSTGRES_RESTART is not set: skipping the PostgreSQL restart test");
        return;
    };
    let schema = pg::Schema::new(&server, "restart");
    let store = schema.store();
    let started_at = postmaster_start(&server);
    // Two stores whose pooled connections sit idle through the restart: a worker waiting for
    // work holds one connection on the notification channel and claims on another, so each
    // keeps two.
    let (idle_reader, idle_writer) = (schema.store(), schema.store());
    let seed = idle_writer
        .create(NewHandoff::new("seed", "read me"))
        .unwrap();
    for idle in [&idle_reader, &idle_writer] {
        let wait = Duration::from_millis(10);
        assert!(
            idle.claim_next_wait("idler", Some("none"), LEASE, wait)
                .unwrap()
                .is_none()
        );
    }

    let stop = Arc::new(AtomicBool::new(false));
    let progress: Vec<Arc<Mutex<Progress>>> = (0..WORKERS)
        .map(|_| Arc::new(Mutex::new(Progress::new())))
        .collect();
    let workers: Vec<_> = (0..WORKERS)
        .map(|n| {
            let (store, stop, progress) = (store.clone(), stop.clone(), progress[n].clone());
            std::thread::spawn(move || work(n, &store, &stop, &progress))
        })
        .collect();

    wait_for_progress(&progress, &workers, "before the restart");
    let restart_began = Instant::now();
    run_restart(&restart);
    let restart_took = restart_began.elapsed();
    // Each worker gets on by itself: ROUNDS more successes after the restart.
    for p in &progress {
        let mut p = p.lock().unwrap();
        p.target = p.oks + ROUNDS;
    }
    wait_for_progress(&progress, &workers, "after the restart");
    stop.store(true, Ordering::SeqCst);
    let start = Instant::now();
    while !workers.iter().all(|w| w.is_finished()) {
        assert!(
            start.elapsed() < PATIENCE,
            "a worker did not stop: {}",
            describe(&progress)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let tallies: Vec<Tally> = workers
        .into_iter()
        .enumerate()
        .map(|(n, w)| {
            w.join()
                .unwrap_or_else(|_| panic!("worker {n} panicked: see its message above"))
        })
        .collect();
    pg::wait_for_server(&server, PATIENCE);
    assert_ne!(
        postmaster_start(&server),
        started_at,
        "`{restart}` did not restart the server"
    );
    // Their next calls reconnect: a dead pooled connection is left behind, not reported.
    assert_eq!(idle_reader.get(&seed.id).unwrap().id, seed.id);
    let after = idle_writer
        .create(NewHandoff::new("after", "written after the restart"))
        .unwrap();

    // What each worker saw: errors of the kinds a binding can map, and when.
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    let mut window: Option<(Duration, Duration)> = None;
    for (n, tally) in tallies.iter().enumerate() {
        for (at, kind, message) in &tally.errors {
            *kinds.entry(format!("{kind}: {message}")).or_default() += 1;
            let at = at.saturating_duration_since(restart_began);
            window = Some(window.map_or((at, at), |(a, b)| (a.min(at), b.max(at))));
        }
        let back = tally
            .first_ok_after_errors
            .map(|at| at.saturating_duration_since(restart_began));
        eprintln!(
            "worker {n}: {} created, {} completed, {} errors, first success after its last error at {back:?}",
            tally.created.len(),
            tally.completed.len(),
            tally.errors.len(),
        );
    }
    eprintln!(
        "the restart command took {restart_took:?}; errors seen from {window:?} after it began:"
    );
    for (kind, count) in &kinds {
        eprintln!("  {count} x {kind}");
    }

    // Nothing acknowledged is lost, and no record is half-written. A fresh store, so that
    // nothing the workers' store remembers stands in for what the server has.
    let fresh = schema.store();
    let whole = pg::assert_whole(&fresh);
    let mut acknowledged = HashSet::from([&seed.id, &after.id]);
    for tally in &tallies {
        for id in &tally.created {
            assert!(
                whole.contains_key(id),
                "an acknowledged create is lost: {id}"
            );
            acknowledged.insert(id);
        }
        for id in &tally.completed {
            let (record, log) = &whole[id];
            assert_eq!(
                record.status,
                Status::Completed,
                "an acknowledged completion is lost: {id}"
            );
            assert_eq!(pg::count(log, "completed"), 1, "{id}: {log:?}");
        }
    }
    for (id, (_, log)) in &whole {
        assert!(pg::count(log, "completed") <= 1, "{id}: {log:?}");
        assert!(pg::count(log, "created") == 1, "{id}: {log:?}");
        if !acknowledged.contains(id) {
            // A create that failed and still happened: possible, and whole (checked above).
            eprintln!("{id} exists although its create returned an error");
        }
    }
}

/// One worker's view, shared with the test while it runs.
struct Progress {
    /// Operations that returned `Ok`.
    oks: usize,
    /// How many `oks` the test waits for.
    target: usize,
    /// What the worker is doing, and since when: a hang names itself.
    doing: &'static str,
    since: Instant,
}

impl Progress {
    fn new() -> Progress {
        Progress {
            oks: 0,
            target: ROUNDS,
            doing: "starting",
            since: Instant::now(),
        }
    }
}

/// What a worker was told.
struct Tally {
    /// Ids whose create returned `Ok`.
    created: Vec<String>,
    /// Ids whose completion returned `Ok`.
    completed: Vec<String>,
    /// Every error: when, its kind, its message.
    errors: Vec<(Instant, &'static str, String)>,
    /// The first success after the worker's last error: when it was back on its feet.
    first_ok_after_errors: Option<Instant>,
}

/// Creates a handoff, claims it, completes it; again and again until told to stop. A create
/// that fails is tried again with the same id (creates with an id are idempotent), so a create
/// that failed and still happened is taken up like any other.
fn work(n: usize, store: &Store, stop: &AtomicBool, progress: &Mutex<Progress>) -> Tally {
    let agent = format!("worker-{n}");
    let creator = format!("creator-{n}");
    let mut tally = Tally {
        created: Vec::new(),
        completed: Vec::new(),
        errors: Vec::new(),
        first_ok_after_errors: None,
    };
    let mut erred = false;
    let mut step = |doing: &'static str, tally: &mut Tally, ok: bool, error: Option<Error>| {
        let mut p = progress.lock().unwrap();
        if ok {
            p.oks += 1;
            if erred {
                tally.first_ok_after_errors = Some(Instant::now());
                erred = false;
            }
        }
        if let Some(e) = error {
            let kind = match &e {
                Error::Storage { .. } => "Storage",
                Error::Busy { .. } => "Busy",
                other => panic!("{agent} got an error of another kind while {doing}: {other:?}"),
            };
            tally.errors.push((Instant::now(), kind, e.to_string()));
            erred = true;
        }
        p.doing = "between steps";
        p.since = Instant::now();
    };
    let begin = |doing: &'static str| {
        let mut p = progress.lock().unwrap();
        p.doing = doing;
        p.since = Instant::now();
    };
    let mut next = 0;
    let mut unsure: Option<String> = None;
    while !stop.load(Ordering::SeqCst) {
        let id = unsure.take().unwrap_or_else(|| {
            next += 1;
            format!("r{n}-{next:06}")
        });
        begin("creating");
        // A task per handoff, so that no chain grows past the policy's limits.
        let new = NewHandoff::new(&id, "outlive a restart")
            .id(&id)
            .from_agent(&creator);
        match store.create(new) {
            Ok(_) => {
                tally.created.push(id.clone());
                step("creating", &mut tally, true, None);
            }
            Err(e) => {
                unsure = Some(id);
                step("creating", &mut tally, false, Some(e));
                pause();
                continue;
            }
        }
        // One worker waits for work as a worker would: on the notification channel.
        begin("claiming");
        let claimed = if n == 0 {
            store.claim_next_wait(&agent, Some(&id), LEASE, Duration::from_millis(200))
        } else {
            store.claim_next(&agent, Some(&id), LEASE)
        };
        let claim = match claimed {
            Ok(Some(claim)) => {
                step("claiming", &mut tally, true, None);
                claim
            }
            Ok(None) => panic!("{agent}: nothing to claim right after a create"),
            Err(e) => {
                step("claiming", &mut tally, false, Some(e));
                pause();
                continue;
            }
        };
        begin("completing");
        match store.complete(&claim, "done") {
            Ok(_) => {
                tally.completed.push(claim.handoff.id);
                step("completing", &mut tally, true, None);
            }
            Err(e) => {
                step("completing", &mut tally, false, Some(e));
                pause();
            }
        }
    }
    tally
}

/// A worker's pause after an error, so that it does not spin while the server is down.
fn pause() {
    std::thread::sleep(Duration::from_millis(20));
}

/// Waits until every worker has reached its target number of successes; fails, naming what
/// each worker is doing, after [`PATIENCE`].
fn wait_for_progress(
    progress: &[Arc<Mutex<Progress>>],
    workers: &[std::thread::JoinHandle<Tally>],
    when: &str,
) {
    let start = Instant::now();
    loop {
        // A worker ends only when told to, or when it panics.
        assert!(
            !workers.iter().any(|w| w.is_finished()),
            "a worker panicked {when}: see its message above"
        );
        let done = progress.iter().all(|p| {
            let p = p.lock().unwrap();
            p.oks >= p.target
        });
        if done {
            return;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "the workers did not get on {when}: {}",
            describe(progress)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What each worker has done and is doing, and for how long.
fn describe(progress: &[Arc<Mutex<Progress>>]) -> String {
    let workers: Vec<String> = progress
        .iter()
        .enumerate()
        .map(|(n, p)| match p.lock() {
            Ok(p) => format!(
                "worker {n}: {} successes, {} for {:?}",
                p.oks,
                p.doing,
                p.since.elapsed()
            ),
            Err(_) => format!("worker {n}: panicked"),
        })
        .collect();
    workers.join("; ")
}

/// Runs the restart command, bounded.
fn run_restart(command: &str) {
    let mut child = Command::new("sh")
        .args(["-c", command])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > PATIENCE {
            let _ = child.kill();
            panic!("`{command}` did not finish within {PATIENCE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "`{command}` failed: {status}");
}

/// When the server last started: changes with every restart.
fn postmaster_start(server: &str) -> String {
    let mut client = postgres::Client::connect(server, postgres::NoTls).unwrap();
    let rows = client
        .simple_query("SELECT pg_postmaster_start_time()::text")
        .unwrap();
    rows.iter()
        .find_map(|m| match m {
            postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
            _ => None,
        })
        .unwrap()
}
