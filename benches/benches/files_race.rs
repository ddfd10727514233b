//! The JSON-files backend (`files:DIR`) shared by processes: lifecycles per second from 4
//! processes on one folder, then checks that nothing was lost or doubled; and a kill -9 run
//! that SIGKILLs workers at random moments and checks the folder on disk and the work left.
//!
//! ```sh
//! cargo bench -p handoff-benches --bench files_race   # prints Markdown tables
//! ```
//!
//! Each worker runs create → `claim_next` → complete in a loop (it may claim another worker's
//! handoff; there is always one to claim). `FILES_LIFECYCLES` (default 1000, split over the
//! processes), `FILES_PROCESSES` (default 4), `FILES_KILL_ROUNDS` (default 3) and
//! `FILES_KILL_LIFECYCLES` (default 1000: a kill run lasts as long as the clean run took for
//! that many) change the runs. Each kill run SIGKILLs two workers at random moments in the
//! first 60% of its time and stops the others at its end; every other run kills the rest at
//! once before that, so that the write a killed worker left half done is finished by the fresh
//! open, not by a survivor. There is no raw baseline here: compare with the SQLite race
//! (`--bench race`) on the same disk.
//!
//! After a kill run the bench opens the store afresh (which finishes a write a killed
//! process left in `journal.json`), then checks the files themselves: `pending.json` lists
//! exactly the records in `handoffs/*.json` that are pending or claimed, with their status,
//! and its `next_seq` follows the last line of `events.jsonl`. Then one process finishes the
//! remaining work (the killed workers' claims lapse after a 2 s lease), and every handoff must
//! end completed exactly once, with one `claimed` event per claim.
#![allow(clippy::unwrap_used, missing_docs)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use handoff_benches::team::{self, Outcome, Team};
use handoff_core::{EventFilter, NewHandoff, Status, Store};

fn main() {
    if team::worker_role().is_some() {
        return worker();
    }
    // `cargo bench` passes `--bench`; `cargo test` does not, and gets a quick smoke run.
    let full = std::env::args().any(|arg| arg == "--bench");
    let number = |name: &str, default: usize| {
        std::env::var(name).map_or(default, |n| n.parse().expect("a number"))
    };
    let processes = number("FILES_PROCESSES", 4);
    let (lifecycles, kill_lifecycles, kill_rounds) = if full {
        (
            number("FILES_LIFECYCLES", 1_000),
            number("FILES_KILL_LIFECYCLES", 1_000),
            number("FILES_KILL_ROUNDS", 3),
        )
    } else {
        (40, 40, 1)
    };
    let per_process = lifecycles.div_ceil(processes);

    println!(
        "fsync of a small file on this disk now: {:.2} ms (median)",
        handoff_benches::fsync_ms()
    );
    println!(
        "| run | processes | lifecycles | seconds | lifecycles/s | shares (%) | handoffs | completed once | claimed events = claims | lost | doubled | pending.json consistent |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let dir = tempfile::tempdir().unwrap();
    let team = start(dir.path(), processes, per_process, 300);
    team.go();
    let reports: Vec<_> = team.wait().into_iter().map(Option::unwrap).collect();
    let outcome = Outcome::of(&reports);
    let first = reports.iter().map(|r| r.start).min().unwrap();
    let last = reports.iter().map(|r| r.end).max().unwrap();
    let claims: Vec<String> = reports.iter().flat_map(|r| r.ids.clone()).collect();
    assert_eq!(outcome.errors, 0, "no worker met an error");
    let disk = check_disk(&dir.path().join("store"));
    let audit = audit(dir.path(), &claims);
    println!(
        "| clean | {processes} | {} | {:.1} | {:.1} | {} | {} | {} | {} | {} | {} | {} |",
        outcome.total,
        (last - first) as f64 / 1e6,
        outcome.rate,
        outcome.shares_text(),
        audit.handoffs,
        audit.completed_once,
        audit.claimed_events == claims.len(),
        audit.lost,
        audit.doubled,
        disk.is_ok(),
    );
    disk.unwrap();
    audit.assert_clean();
    assert_eq!(audit.handoffs, processes * per_process);

    println!();
    println!(
        "| kill run | killed (SIGKILL) | journal.json left for the fresh open | pending.json agrees with handoffs/ after the open | handoffs | claims the survivors reported | finished afterwards | completed once | lost | doubled | one claimed event per claim | pending.json agrees at the end |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    // A kill run lasts as long as the clean run says its lifecycles take.
    let duration = (last - first) as f64 / 1e6 * kill_lifecycles as f64 / lifecycles as f64;
    for round in 0..kill_rounds {
        // Every other round also kills the rest at once, so that nobody finishes a write the
        // killed left half done but the fresh open.
        kill_run(round, round % 2 == 1, processes, duration);
    }
}

/// Spawns the workers on the store in `dir`; each runs `count` lifecycles, or fewer when a
/// `stop` file appears in `dir`.
fn start(dir: &Path, processes: usize, count: usize, lease_secs: u64) -> Team {
    let store_dir = dir.join("store");
    drop(Store::connect(&format!("files:{}", store_dir.display())).unwrap());
    Team::spawn(dir, "lifecycle", processes, |_| {
        vec![
            ("FILES_DIR", store_dir.clone().into_os_string()),
            ("FILES_COUNT", count.to_string().into()),
            ("FILES_LEASE", lease_secs.to_string().into()),
            ("FILES_STOP", dir.join("stop").into_os_string()),
        ]
    })
}

/// Starts the workers, SIGKILLs two of them at random moments within the first 60% of
/// `duration` seconds (and with `kill_all` the others at once, before 85%), stops the rest at
/// its end, checks the folder, finishes the work in this process and checks it again.
fn kill_run(round: usize, kill_all: bool, processes: usize, duration: f64) {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    let mut team = start(dir.path(), processes, usize::MAX, 2);
    team.go();
    let started = Instant::now();
    let mut victims: Vec<usize> = (0..processes).collect();
    fastrand::shuffle(&mut victims);
    let moment = |from: f64, to: f64| duration * (from + fastrand::f64() * (to - from));
    let mut plan: Vec<(f64, Vec<usize>)> = victims
        .iter()
        .take(2.min(processes))
        .map(|&victim| (moment(0.1, 0.6), vec![victim]))
        .collect();
    if kill_all {
        plan.push((moment(0.65, 0.85), victims[2.min(processes)..].to_vec()));
    }
    plan.push((duration, Vec::new()));
    plan.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut killed = Vec::new();
    for (at, victims) in plan {
        let wait = at - started.elapsed().as_secs_f64();
        if wait > 0.0 {
            std::thread::sleep(Duration::from_secs_f64(wait));
        }
        for victim in victims {
            if team.running(victim) {
                team.kill(victim);
                killed.push(format!(
                    "p{victim} at {:.2} s",
                    started.elapsed().as_secs_f64()
                ));
            }
        }
    }
    std::fs::write(dir.path().join("stop"), b"").unwrap();
    let reports = team.wait();
    // The ids the surviving workers claimed (and completed); the killed ones' are unknown.
    let claims: Vec<String> = reports
        .iter()
        .flatten()
        .flat_map(|r| r.ids.clone())
        .collect();
    let journal_left = store_dir.join("journal.json").exists();

    // A fresh open recovers a write left half done; then the files must agree.
    drop(Store::connect(&format!("files:{}", store_dir.display())).unwrap());
    let disk_after_kill = check_disk(&store_dir);

    let finished_started = Instant::now();
    let finished = finish(&store_dir);
    let finish_secs = finished_started.elapsed().as_secs_f64();
    let disk_after_finish = check_disk(&store_dir);
    let audit = audit(dir.path(), &claims);
    println!(
        "| {round} | {} | {journal_left} | {} | {} | {} | {finished} in {finish_secs:.1} s | {} | {} | {} | {} | {} |",
        killed.join(", "),
        disk_after_kill.is_ok(),
        audit.handoffs,
        claims.len(),
        audit.completed_once,
        audit.lost,
        audit.doubled,
        audit.claims_accounted,
        disk_after_finish.is_ok(),
    );
    disk_after_kill.unwrap();
    disk_after_finish.unwrap();
    audit.assert_clean();
}

/// Claims and completes what is left, waiting for lapsed leases; returns how many.
fn finish(store_dir: &Path) -> usize {
    let store = Store::connect(&format!("files:{}", store_dir.display())).unwrap();
    let mut done = 0;
    loop {
        match store
            .claim_next("finisher", None, Duration::from_secs(60))
            .unwrap()
        {
            Some(claim) => {
                store.complete(&claim, "finished").unwrap();
                done += 1;
            }
            None => {
                let open = read_index(store_dir).open.len();
                if open == 0 {
                    return done;
                }
                // Claims of killed workers: wait for their leases to lapse.
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}

/// `pending.json` as the files backend writes it.
#[derive(Debug)]
struct Index {
    next_seq: u64,
    /// id → status
    open: BTreeMap<String, String>,
}

fn read_index(store_dir: &Path) -> Index {
    let text = std::fs::read_to_string(store_dir.join("pending.json")).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    Index {
        next_seq: value["next_seq"].as_u64().unwrap(),
        open: value["open"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["id"].as_str().unwrap().to_owned(),
                    e["status"].as_str().unwrap().to_owned(),
                )
            })
            .collect(),
    }
}

/// The files on disk agree: no journal; `pending.json` lists exactly the open records of
/// `handoffs/*.json`, with their status, once each; `next_seq` follows the event log, whose
/// seqs run 1, 2, 3, … without a gap.
fn check_disk(store_dir: &Path) -> Result<(), String> {
    if store_dir.join("journal.json").exists() {
        return Err("journal.json is still there after a fresh open".into());
    }
    let text = std::fs::read_to_string(store_dir.join("pending.json")).unwrap();
    let raw: serde_json::Value = serde_json::from_str(&text).unwrap();
    let entries = raw["open"].as_array().unwrap().len();
    let index = read_index(store_dir);
    if entries != index.open.len() {
        return Err(format!(
            "pending.json lists {} ids {entries} times",
            index.open.len()
        ));
    }
    let mut open_records = BTreeMap::new();
    for entry in std::fs::read_dir(store_dir.join("handoffs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|ext| ext != "json") {
            continue; // a temporary file a killed writer left
        }
        let record: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
                .map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
        let status = record["status"].as_str().unwrap().to_owned();
        if status == "pending" || status == "claimed" {
            open_records.insert(record["id"].as_str().unwrap().to_owned(), status);
        }
    }
    if open_records != index.open {
        let missing: Vec<_> = open_records
            .keys()
            .filter(|id| !index.open.contains_key(*id))
            .collect();
        let extra: Vec<_> = index
            .open
            .keys()
            .filter(|id| !open_records.contains_key(*id))
            .collect();
        return Err(format!(
            "pending.json and handoffs/ disagree: open records missing from the index {missing:?}, \
             index entries that are not open records {extra:?}, statuses {:?} vs {:?}",
            index.open, open_records
        ));
    }
    let log = std::fs::read_to_string(store_dir.join("events.jsonl")).unwrap_or_default();
    for (n, line) in log.lines().enumerate() {
        let event: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| format!("events.jsonl line {} is not JSON: {e}", n + 1))?;
        if event["seq"].as_u64() != Some(n as u64 + 1) {
            return Err(format!(
                "events.jsonl line {} has seq {}",
                n + 1,
                event["seq"]
            ));
        }
    }
    let lines = log.lines().count() as u64;
    if index.next_seq != lines + 1 {
        return Err(format!(
            "next_seq is {} after {lines} events",
            index.next_seq
        ));
    }
    Ok(())
}

/// What the event log and the records say about the run.
struct Audit {
    handoffs: usize,
    /// Handoffs completed, with exactly one `completed` event.
    completed_once: usize,
    /// Handoffs not completed, or without one `created` event.
    lost: usize,
    /// Handoffs with more than one `completed` event.
    doubled: usize,
    claimed_events: usize,
    /// Every claim a worker reported has its `claimed` event, and every handoff as many
    /// `claimed` events as claims that ended (completed once, plus each lapsed lease).
    claims_accounted: bool,
}

impl Audit {
    fn assert_clean(&self) {
        assert_eq!(self.lost, 0, "no handoff lost");
        assert_eq!(self.doubled, 0, "no handoff completed twice");
        assert_eq!(self.completed_once, self.handoffs, "each completed once");
        assert!(self.claims_accounted, "one claimed event per claim");
    }
}

fn audit(dir: &Path, claims: &[String]) -> Audit {
    let store = Store::connect(&format!("files:{}", dir.join("store").display())).unwrap();
    let records = store.list(&Default::default()).unwrap();
    let mut kinds: BTreeMap<String, BTreeMap<&'static str, usize>> = BTreeMap::new();
    for event in store.events_page(&EventFilter::default()).unwrap() {
        *kinds
            .entry(event.handoff_id.clone())
            .or_default()
            .entry(event.change.kind())
            .or_default() += 1;
    }
    let count = |id: &str, kind: &str| {
        kinds
            .get(id)
            .and_then(|k| k.get(kind))
            .copied()
            .unwrap_or(0)
    };
    let distinct: BTreeSet<&String> = claims.iter().collect();
    let mut audit = Audit {
        handoffs: records.len(),
        completed_once: 0,
        lost: 0,
        doubled: 0,
        claimed_events: kinds.values().filter_map(|k| k.get("claimed")).sum(),
        claims_accounted: distinct.len() == claims.len(),
    };
    for h in &records {
        let completed = count(&h.id, "completed");
        if h.status == Status::Completed && completed == 1 && count(&h.id, "created") == 1 {
            audit.completed_once += 1;
        } else if completed > 1 {
            audit.doubled += 1;
        } else {
            audit.lost += 1;
        }
        let ended = completed
            + count(&h.id, "lease_expired")
            + count(&h.id, "released")
            + count(&h.id, "failed");
        if count(&h.id, "claimed") != ended {
            audit.claims_accounted = false;
        }
    }
    if claims.iter().any(|id| count(id, "claimed") == 0) {
        audit.claims_accounted = false;
    }
    audit
}

/// One worker: `FILES_COUNT` times (or until `FILES_STOP` exists) create → claim_next →
/// complete; reports the ids claimed.
fn worker() {
    let dir = team::var("FILES_DIR");
    let agent = team::var("TEAM_AGENT");
    let count: usize = team::var("FILES_COUNT").parse().unwrap();
    let stop = std::path::PathBuf::from(team::var("FILES_STOP"));
    let lease = Duration::from_secs(team::var("FILES_LEASE").parse().unwrap());
    let store = Store::connect(&format!("files:{dir}")).unwrap();
    let mut done = 0;
    team::work(|| {
        if done == count || stop.exists() {
            return Ok(None);
        }
        done += 1;
        store
            .create(
                // From a producer: the default chain policy does not let an agent take back
                // its own handoff.
                NewHandoff::new(format!("{agent}-{done}"), "pass it on").from_agent("producer"),
            )
            .map_err(|e| e.to_string())?;
        let claim = store
            .claim_next(&agent, None, lease)
            .map_err(|e| e.to_string())?
            .ok_or("nothing to claim right after a create")?;
        store.complete(&claim, "done").map_err(|e| e.to_string())?;
        Ok(Some(claim.handoff.id))
    });
}
