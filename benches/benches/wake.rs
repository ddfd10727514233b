//! Wake latency of a waiting worker: the time from `create` returning in one thread to
//! `Store::claim_next_wait` returning the new handoff in another, on PostgreSQL (LISTEN/NOTIFY)
//! beside the stores that have no server to tell them and look for commits themselves: SQLite
//! (the baseline) and a `files:` folder. Each line also shows a plain `claim_next` of a
//! handoff that is already there: the floor under any wake.
//!
//! ```sh
//! cargo bench -p handoff-benches --features postgres --bench wake   # prints a Markdown table
//! ```
//!
//! `HANDOFF_BENCH_POSTGRES` names the server (default `postgres://postgres@127.0.0.1:5432/test`),
//! used in a fresh schema `hc_bench_<random>` dropped afterwards; `WAKE_SAMPLES` (default 50)
//! sets the number of wakes. Before each `create` the producer sleeps 20–80 ms, so that the
//! waiter is asleep in its wait and a poll meets the work at a random phase.
#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::mpsc;
use std::time::{Duration, Instant};

use handoff_core::{NewHandoff, Store};

const LEASE: Duration = Duration::from_secs(60);

fn main() {
    let full = std::env::args().any(|arg| arg == "--bench");
    let samples = if full {
        std::env::var("WAKE_SAMPLES").map_or(50, |n| n.parse().expect("a number"))
    } else {
        5
    };
    let url = handoff_benches::pg::url();
    let schema = format!("hc_bench_{:016x}", fastrand::u64(..));
    let _drop = DropSchema {
        url: url.clone(),
        name: schema.clone(),
    };
    let separator = if url.contains('?') { '&' } else { '?' };
    let pg_url = format!("{url}{separator}schema={schema}");
    let dir = tempfile::tempdir().unwrap();
    let sqlite_url = dir.path().join("wake.db").display().to_string();
    let files_url = format!("files:{}", dir.path().join("wake-files").display());

    println!(
        "| store | wake median ms | wake p90 ms | wake max ms | plain claim_next median ms | samples |"
    );
    println!("|---|---|---|---|---|---|");
    for (name, url) in [
        ("PostgreSQL (LISTEN/NOTIFY)", &pg_url),
        ("SQLite FULL (baseline)", &sqlite_url),
        ("files: folder", &files_url),
    ] {
        let mut wakes = wake_latencies(url, samples);
        let mut plain = plain_claims(url, samples);
        wakes.sort_by(f64::total_cmp);
        plain.sort_by(f64::total_cmp);
        println!(
            "| {name} | {:.1} | {:.1} | {:.1} | {:.2} | {samples} |",
            percentile(&wakes, 50),
            percentile(&wakes, 90),
            wakes[wakes.len() - 1],
            percentile(&plain, 50),
        );
    }
}

fn percentile(sorted: &[f64], p: usize) -> f64 {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

/// Milliseconds from `create` returning to the waiter's claim returning, `samples` times.
fn wake_latencies(url: &str, samples: usize) -> Vec<f64> {
    let producer = Store::connect(url).unwrap();
    let (ready_tx, ready) = mpsc::channel::<()>();
    let (claimed_tx, claimed) = mpsc::channel::<(Instant, String)>();
    let waiter_url = url.to_owned();
    let waiter = std::thread::spawn(move || {
        let store = Store::connect(&waiter_url).unwrap();
        for _ in 0..samples {
            ready_tx.send(()).unwrap();
            let claim = store
                .claim_next_wait("waiter", None, LEASE, Duration::from_secs(30))
                .unwrap()
                .expect("work arrives within 30 s");
            let at = Instant::now();
            claimed_tx.send((at, claim.handoff.id.clone())).unwrap();
            store.complete(&claim, "done").unwrap();
        }
    });
    let mut latencies = Vec::with_capacity(samples);
    for i in 0..samples {
        ready.recv().unwrap();
        std::thread::sleep(Duration::from_millis(fastrand::u64(20..80)));
        let h = producer
            .create(NewHandoff::new(format!("wake-{i}"), "wake up").from_agent("producer"))
            .unwrap();
        let created = Instant::now();
        let (at, id) = claimed.recv().unwrap();
        assert_eq!(id, h.id, "the waiter claimed what was just created");
        // The waiter may even return first: then the wake cost nothing on this side.
        latencies.push(at.saturating_duration_since(created).as_secs_f64() * 1e3);
    }
    waiter.join().unwrap();
    latencies
}

/// Milliseconds of a `claim_next` that finds its handoff waiting, `samples` times.
fn plain_claims(url: &str, samples: usize) -> Vec<f64> {
    let store = Store::connect(url).unwrap();
    (0..samples)
        .map(|i| {
            store
                .create(
                    NewHandoff::new(format!("plain-{i}"), "already here").from_agent("producer"),
                )
                .unwrap();
            let started = Instant::now();
            let claim = store.claim_next("worker", None, LEASE).unwrap().unwrap();
            let ms = started.elapsed().as_secs_f64() * 1e3;
            store.complete(&claim, "done").unwrap();
            ms
        })
        .collect()
}

struct DropSchema {
    url: String,
    name: String,
}

impl Drop for DropSchema {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&self.url, postgres::NoTls) {
            let _ =
                client.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.name));
        }
    }
}
