//! A worker process killed with SIGKILL while it holds a claim on a PostgreSQL store: its lease
//! lapses, another worker takes the handoff over and finishes it, the dead worker's claim is
//! refused from then on, and the work is done exactly once. Runs when `HANDOFF_TEST_POSTGRES`
//! names a server, each test in a schema of its own.
//!
//! The test re-runs its own binary as the workers: `kill_worker` does nothing unless the
//! environment gives it a store.
#![cfg(feature = "postgres")]
#![allow(clippy::unwrap_used)]

#[path = "support/pg.rs"]
mod pg;

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use chrono::Utc;
use handoff_core::{
    Change, Claim, ClaimRef, ClaimSecret, Error, EventFilter, NewHandoff, Status, Store,
};

/// The lease the workers take: short, so that a dead worker's claim lapses soon.
const LEASE: Duration = Duration::from_secs(2);

/// How long anything in these tests may take before it counts as a hang.
const PATIENCE: Duration = Duration::from_secs(300);

#[test]
fn postgres_lease_of_a_killed_worker_lapses_and_the_work_is_done_once() {
    let Some(server) = pg::server("the PostgreSQL kill test") else {
        return;
    };
    let schema = pg::Schema::new(&server, "kill_one");
    let store = schema.store();
    let h = store
        .create(NewHandoff::new("kill-one", "outlive a kill -9").from_agent("seed"))
        .unwrap();

    // A worker claims it, tells us its claim, and is killed before it completes.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("claim.txt");
    let mut doomed = worker(&schema.url, "hold", "doomed", &out).spawn().unwrap();
    let dead = wait_for_claim(&mut doomed, &out);
    assert_eq!(dead.handoff_id, h.id);
    let held = store.get(&h.id).unwrap();
    assert_eq!(held.status, Status::Claimed);
    assert_eq!(held.claimed_by.as_deref(), Some("doomed"));
    assert_eq!(held.claim_token, Some(dead.token));
    let lease_until = held.lease_until.unwrap();
    doomed.kill().unwrap();
    let status = doomed.wait().unwrap();
    assert!(!status.success(), "the worker was killed: {status}");

    // While its lease runs, nobody else may take the handoff. (Should this machine be so slow
    // that the lease ran out already, the store must have seen that, and the claim stands.)
    let mut rescue = match store.claim(&h.id, "rescuer", PATIENCE) {
        Err(Error::AlreadyClaimed { holder, .. }) => {
            assert_eq!(holder, "doomed");
            None
        }
        Ok(claim) => {
            assert!(Utc::now() >= lease_until, "claimed under a live lease");
            Some(claim)
        }
        Err(e) => panic!("claiming under a live lease: {e}"),
    };

    if rescue.is_none() {
        // Once the lease has passed, reaping settles it: pending again, one attempt counted.
        while let Ok(left) = (lease_until - Utc::now()).to_std() {
            std::thread::sleep(left + Duration::from_millis(1));
        }
        assert_eq!(store.reap().unwrap(), 1);
        let lapsed = store.get(&h.id).unwrap();
        assert_eq!(lapsed.status, Status::Pending);
        assert_eq!(lapsed.attempts, 1);
        assert_lease_lost(store.complete(&dead, "done by the dead"), "after the lapse");
        rescue = store.claim_next("rescuer", None, PATIENCE).unwrap();
    }

    // Another worker takes it over; the dead worker's claim is refused, before and after.
    let rescue = rescue.expect("the lapsed handoff is claimable again");
    assert_eq!(rescue.handoff.id, h.id);
    assert_eq!(rescue.token, dead.token + 1);
    assert_lease_lost(
        store.complete(&dead, "done by the dead"),
        "after a new claim",
    );
    assert_lease_lost(store.heartbeat(&dead), "a heartbeat after a new claim");
    let done = store.complete(&rescue, "done by the rescuer").unwrap();
    assert_eq!(done.status, Status::Completed);
    assert_eq!(done.claimed_by.as_deref(), Some("rescuer"));
    assert_eq!(done.attempts, 1);
    assert_lease_lost(
        store.complete(&dead, "done by the dead"),
        "after completion",
    );

    let whole = pg::assert_whole(&store);
    let (_, log) = &whole[&h.id];
    let kinds: Vec<_> = log.iter().map(|e| e.change.kind()).collect();
    assert_eq!(
        kinds,
        [
            "created",
            "claimed",
            "lease_expired",
            "claimed",
            "completed"
        ]
    );
}

#[test]
fn postgres_workers_killed_under_load_leave_every_handoff_done_once() {
    const WORKERS: usize = 4;
    const HANDOFFS: usize = 500;
    let Some(server) = pg::server("the PostgreSQL kill-under-load test") else {
        return;
    };
    let schema = pg::Schema::new(&server, "kill_load");
    let store = schema.store();
    let news: Vec<NewHandoff> = (0..HANDOFFS)
        .map(|i| {
            NewHandoff::new(format!("load-{i}"), "outlive a kill -9")
                .from_agent("seed")
                // A handoff may lapse more than once (its holder killed, or stalled past its
                // lease on a busy machine); it must not fail for that here.
                .max_attempts(1_000)
        })
        .collect();
    store.create_many(news).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let file = |n: usize, ext: &str| dir.path().join(format!("worker-{n}.{ext}"));
    let mut workers: Vec<Child> = (0..WORKERS)
        .map(|n| {
            let mut command = worker(
                &schema.url,
                "drain",
                &format!("worker-{n}"),
                &file(n, "txt"),
            );
            command.env("HANDOFF_KILL_SIGNAL", file(n, "signal"));
            command.spawn().unwrap()
        })
        .collect();

    // Two die at random moments of the run: when the count of completions reaches a random
    // point (not a time, which depends on the machine). The first is killed while it holds a
    // claim (told to stop at its next claim, it writes the claim down and waits); the second,
    // one time in two, wherever it is (in a transaction, between two, holding a claim).
    let first = fastrand::usize(..WORKERS);
    let second = (first + fastrand::usize(1..WORKERS)) % WORKERS;
    let mut victims = vec![Victim::new(first, true, HANDOFFS)];
    if fastrand::bool() {
        victims.push(Victim::new(second, false, HANDOFFS));
    }
    let start = Instant::now();
    let mut completed = 0;
    let mut seen = EventFilter::default();
    let mut dead_claims = Vec::new();
    while victims.iter().any(|v| !v.killed) {
        assert!(start.elapsed() < PATIENCE, "the workers made no progress");
        let events = store.events_page(&seen).unwrap();
        seen.after = events.last().map(|e| e.seq).or(seen.after);
        completed += events
            .iter()
            .filter(|e| e.change.kind() == "completed")
            .count();
        for victim in victims.iter_mut().filter(|v| !v.killed) {
            let n = victim.worker;
            let child = &mut workers[n];
            if let Some(status) = child.try_wait().unwrap() {
                panic!("worker-{n} ended before it was killed: {status}");
            }
            if completed < victim.at {
                continue;
            }
            if victim.holding {
                let claim = file(n, "claim");
                if !claim.exists() {
                    std::fs::write(file(n, "signal"), "").unwrap();
                    continue;
                }
                dead_claims.push((n, read_claim(&claim)));
            }
            child.kill().unwrap();
            let status = child.wait().unwrap();
            victim.killed = true;
            eprintln!("killed worker-{n} after {completed} completions ({status})");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    for (n, child) in workers.iter_mut().enumerate() {
        if victims.iter().all(|v| v.worker != n) {
            let status = wait_bounded(child, PATIENCE);
            assert!(status.success(), "worker-{n} failed: {status}");
        }
    }

    // Every handoff is completed, with exactly one completion in its log, and no two workers
    // were ever told that they completed the same handoff.
    let whole = pg::assert_whole(&store);
    assert_eq!(whole.len(), HANDOFFS);
    let mut lapses = 0;
    for (id, (record, log)) in &whole {
        assert_eq!(record.status, Status::Completed, "{id}: {log:?}");
        assert_eq!(pg::count(log, "completed"), 1, "{id}: {log:?}");
        lapses += pg::count(log, "lease_expired");
    }
    let mut done_by: HashMap<String, String> = HashMap::new();
    for n in 0..WORKERS {
        // A killed worker may have been killed before it wrote its last completion down.
        let text = std::fs::read_to_string(file(n, "txt")).unwrap_or_default();
        for id in text.lines() {
            let agent = format!("worker-{n}");
            assert_eq!(whole[id].0.claimed_by.as_deref(), Some(agent.as_str()));
            if let Some(other) = done_by.insert(id.to_owned(), agent) {
                panic!("{id} was completed by {other} and by worker-{n}");
            }
        }
    }
    // The claim held by the worker killed while holding it lapsed, another worker completed
    // the handoff, and the dead claim is refused.
    for (n, dead) in &dead_claims {
        let (record, log) = &whole[&dead.handoff_id];
        assert_ne!(record.claimed_by, Some(format!("worker-{n}")), "{log:?}");
        assert!(
            log.iter().any(|e| matches!(
                e.change,
                Change::LeaseExpired { token } if token == dead.token
            )),
            "the dead worker's lease did not lapse: {log:?}"
        );
        assert_lease_lost(store.complete(dead, "done by the dead"), "after the run");
    }
    eprintln!(
        "{HANDOFFS} handoffs completed once each by {WORKERS} workers, {} killed; {lapses} leases lapsed",
        victims.len()
    );
}

/// A worker the load test kills when `at` handoffs are completed.
struct Victim {
    worker: usize,
    at: usize,
    /// Killed while holding a claim, or wherever it is.
    holding: bool,
    killed: bool,
}

impl Victim {
    fn new(worker: usize, holding: bool, handoffs: usize) -> Victim {
        Victim {
            worker,
            at: fastrand::usize(handoffs / 10..handoffs * 4 / 5),
            holding,
            killed: false,
        }
    }
}

/// A worker (run as its own process by the tests above): `hold` claims one handoff, writes its
/// claim down (`HANDOFF_KILL_OUT`) and waits to be killed; `drain` claims and completes until
/// every handoff is completed, writing each id it completed to the output file, and once the
/// file `HANDOFF_KILL_SIGNAL` exists, writes its next claim down beside it and waits to be
/// killed.
#[test]
fn kill_worker() {
    let (Ok(url), Ok(mode), Ok(agent), Some(out)) = (
        std::env::var("HANDOFF_KILL_URL"),
        std::env::var("HANDOFF_KILL_MODE"),
        std::env::var("HANDOFF_KILL_AGENT"),
        std::env::var_os("HANDOFF_KILL_OUT"),
    ) else {
        return;
    };
    let store = Store::connect(&url).unwrap();
    match mode.as_str() {
        "hold" => {
            let claim = store.claim_next(&agent, None, LEASE).unwrap().unwrap();
            hold(&claim, Path::new(&out));
        }
        "drain" => {
            let signal = std::env::var_os("HANDOFF_KILL_SIGNAL").unwrap();
            drain(&store, &agent, Path::new(&out), Path::new(&signal));
        }
        other => panic!("unknown worker mode {other}"),
    }
}

/// Writes `claim` down at `out` and waits to be killed.
fn hold(claim: &Claim, out: &Path) -> ! {
    // Written whole, then renamed, so the test never reads half a claim.
    let text = format!(
        "{}\n{}\n{}\n",
        claim.handoff.id,
        claim.token,
        claim.secret.expose()
    );
    let partial = out.with_extension("partial");
    std::fs::write(&partial, text).unwrap();
    std::fs::rename(&partial, out).unwrap();
    // Killed long before this ends; bounded so that a lost worker does not linger.
    std::thread::sleep(PATIENCE);
    std::process::exit(3);
}

fn drain(store: &Store, agent: &str, out: &Path, signal: &Path) {
    let mut done = std::fs::File::create(out).unwrap();
    let start = Instant::now();
    let mut lost = 0;
    loop {
        assert!(
            start.elapsed() < PATIENCE,
            "{agent}: the handoffs were not all completed"
        );
        match store.claim_next(agent, None, LEASE).unwrap() {
            Some(claim) if signal.exists() => hold(&claim, &signal.with_extension("claim")),
            Some(claim) => {
                // The work, during which a kill may come.
                std::thread::sleep(Duration::from_millis(fastrand::u64(1..10)));
                match store.complete(&claim, "done") {
                    // One write per line, so a kill leaves whole lines only.
                    Ok(_) => done
                        .write_all(format!("{}\n", claim.handoff.id).as_bytes())
                        .unwrap(),
                    // Stalled past the lease on a busy machine: another worker takes it over.
                    Err(Error::LeaseLost { .. }) => lost += 1,
                    Err(e) => panic!("{agent} could not complete: {e}"),
                }
            }
            // Nothing to claim: done when everything is completed; otherwise a claim is held
            // (perhaps by a dead worker, until its lease lapses).
            None => {
                let all = store.list(&Default::default()).unwrap();
                if all.iter().all(|h| h.status == Status::Completed) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    eprintln!("{agent}: done; {lost} leases lost while working");
}

/// This test binary as a worker, to spawn.
fn worker(url: &str, mode: &str, agent: &str, out: &Path) -> Command {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", "kill_worker", "--nocapture", "--test-threads=1"])
        .env("HANDOFF_KILL_URL", url)
        .env("HANDOFF_KILL_MODE", mode)
        .env("HANDOFF_KILL_AGENT", agent)
        .env("HANDOFF_KILL_OUT", out)
        .stdout(Stdio::null());
    command
}

/// The claim a worker wrote down, once it has.
fn wait_for_claim(child: &mut Child, out: &Path) -> ClaimRef {
    let start = Instant::now();
    while !out.exists() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the worker ended before it claimed: {status}");
        }
        assert!(start.elapsed() < PATIENCE, "the worker did not claim");
        std::thread::sleep(Duration::from_millis(20));
    }
    read_claim(out)
}

fn read_claim(out: &Path) -> ClaimRef {
    let text = std::fs::read_to_string(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    ClaimRef {
        handoff_id: lines[0].to_owned(),
        token: lines[1].parse().unwrap(),
        secret: ClaimSecret::parse(lines[2]).unwrap(),
        lease: LEASE,
    }
}

fn wait_bounded(child: &mut Child, patience: Duration) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > patience {
            let _ = child.kill();
            panic!("a worker did not finish within {patience:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn assert_lease_lost<T: std::fmt::Debug>(result: handoff_core::Result<T>, when: &str) {
    match result {
        Err(Error::LeaseLost { .. }) => {}
        other => panic!("the dead worker's claim {when}: expected LeaseLost, got {other:?}"),
    }
}
