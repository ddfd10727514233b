//! Processes racing to claim from one PostgreSQL schema: claims per second and each process's
//! share, for the store's `claim_next` beside a raw claimer measured in the same run.
//!
//! ```sh
//! cargo bench -p handoff-benches --features postgres --bench pg_race   # prints a Markdown table
//! ```
//!
//! `HANDOFF_BENCH_POSTGRES` names the server (default `postgres://postgres@127.0.0.1:5432/test`);
//! every run gets a fresh schema `hc_bench_<random>`, dropped afterwards. `PG_RACE_PROCESSES`
//! (default `1,2,4,8`), `PG_RACE_HANDOFFS` (default 3000) and `PG_RACE_ROUNDS` (default 2; the
//! table shows the best rate of the rounds and the worst share) change the runs.
//!
//! The raw claimer is what a user would hand-write: a table `(seq, id, status, claimed_by,
//! token, body)` holding the same records' JSON as bodies, and per claim one transaction of
//! `UPDATE … WHERE seq = (SELECT … FOR UPDATE SKIP LOCKED) RETURNING id` and one event row
//! (`events` with a `bigserial` seq and an index on `(handoff_id, seq)`, as the store's), its
//! statements prepared once per connection. The store's `claim_next` does the same work plus
//! lapsed-lease settling, the chain policy's read of the task, the claim secret's digest and
//! the store-wide ordering of events.
//!
//! The bench re-runs its own binary as the racing processes (see `handoff_benches::team`).
#![allow(clippy::unwrap_used, missing_docs)]

use std::time::Duration;

use handoff_benches::team::{self, Outcome, Team, micros_now};
use handoff_core::{ChainPolicy, NewHandoff, Store};
use postgres::{Client, NoTls};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Contender {
    Raw,
    Store,
}

fn main() {
    if let Some(role) = team::worker_role() {
        return worker(&role);
    }
    // `cargo bench` passes `--bench`; `cargo test` does not, and gets a quick smoke run.
    let full = std::env::args().any(|arg| arg == "--bench");
    let (counts, handoffs, rounds) = if full {
        (
            list_var("PG_RACE_PROCESSES", "1,2,4,8"),
            number_var("PG_RACE_HANDOFFS", 3_000),
            number_var("PG_RACE_ROUNDS", 2),
        )
    } else {
        (vec![2], 100, 1)
    };
    let url = handoff_benches::pg::url();
    println!(
        "{handoffs} handoffs per run, {rounds} round(s), on {}; fsync of a small file on this \
         machine now: {:.2} ms (median)",
        handoff_core::store::display_url(&url),
        handoff_benches::fsync_ms()
    );
    println!(
        "| processes | raw claims/s | store claims/s | store ÷ raw | raw min share ÷ fair | store min share ÷ fair | store shares (%) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for processes in counts {
        let mut raw: Vec<Outcome> = Vec::new();
        let mut store: Vec<Outcome> = Vec::new();
        for round in 0..rounds {
            // Alternate who goes first, so that neither always meets a warmer server.
            let order = if round % 2 == 0 {
                [Contender::Raw, Contender::Store]
            } else {
                [Contender::Store, Contender::Raw]
            };
            for contender in order {
                let outcome = with_retries(|| race(&url, contender, processes, handoffs));
                eprintln!(
                    "  {processes} process(es), round {round}, {contender:?}: {:.0} claims/s, shares {}",
                    outcome.rate,
                    outcome.shares_text()
                );
                match contender {
                    Contender::Raw => raw.push(outcome),
                    Contender::Store => store.push(outcome),
                }
            }
        }
        let best = |runs: &[Outcome]| runs.iter().map(|o| o.rate).fold(0.0, f64::max);
        let worst_share = |runs: &[Outcome]| {
            runs.iter()
                .map(Outcome::min_over_fair)
                .fold(f64::INFINITY, f64::min)
        };
        let best_store = store
            .iter()
            .max_by(|a, b| a.rate.total_cmp(&b.rate))
            .unwrap();
        println!(
            "| {processes} | {:.0} | {:.0} | {:.2} | {:.2} | {:.2} | {} |",
            best(&raw),
            best(&store),
            best(&store) / best(&raw),
            worst_share(&raw),
            worst_share(&store),
            best_store.shares_text(),
        );
    }
}

/// Runs `run` again (twice at most) when it fails: a server restart in the middle of a run
/// (the shared test server is restarted by other tests) is not a result.
fn with_retries(run: impl Fn() -> Outcome) -> Outcome {
    for attempt in 1.. {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(&run)) {
            Ok(outcome) => return outcome,
            Err(_) if attempt < 3 => eprintln!("  the run failed (attempt {attempt}); again"),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
    unreachable!()
}

fn list_var(name: &str, default: &str) -> Vec<usize> {
    std::env::var(name)
        .unwrap_or_else(|_| default.to_owned())
        .split(',')
        .map(|n| n.trim().parse().expect("a list of numbers"))
        .collect()
}

fn number_var(name: &str, default: usize) -> usize {
    std::env::var(name).map_or(default, |n| n.parse().expect("a number"))
}

/// A fresh schema, dropped when the run ends.
struct Schema {
    url: String,
    name: String,
}

impl Schema {
    fn new(url: &str) -> Schema {
        Schema {
            url: url.to_owned(),
            name: format!("hc_bench_{:016x}", fastrand::u64(..)),
        }
    }

    /// The store URL of this schema.
    fn store_url(&self) -> String {
        let separator = if self.url.contains('?') { '&' } else { '?' };
        format!("{}{separator}schema={}", self.url, self.name)
    }

    fn client(&self) -> Client {
        let mut client = Client::connect(&self.url, NoTls).unwrap();
        client
            .batch_execute(&format!(
                "CREATE SCHEMA IF NOT EXISTS \"{0}\"; SET search_path TO \"{0}\"",
                self.name
            ))
            .unwrap();
        client
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        if let Ok(mut client) = Client::connect(&self.url, NoTls) {
            let _ =
                client.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.name));
        }
    }
}

/// The records both sides claim: small ones, as in the SQLite race, so that the claim is what
/// is measured.
fn news(handoffs: usize) -> Vec<NewHandoff> {
    (0..handoffs)
        .map(|i| NewHandoff::new(format!("race-{i}"), "claim me").from_agent("producer"))
        .collect()
}

fn race(url: &str, contender: Contender, processes: usize, handoffs: usize) -> Outcome {
    let schema = Schema::new(url);
    match contender {
        Contender::Store => {
            let store = Store::connect(&schema.store_url())
                .unwrap()
                .with_policy(ChainPolicy::unlimited());
            for batch in news(handoffs).chunks(1_000) {
                store.create_many(batch.to_vec()).unwrap();
            }
            schema.client().batch_execute("ANALYZE").unwrap();
        }
        Contender::Raw => seed_raw(&mut schema.client(), handoffs),
    }

    let dir = tempfile::tempdir().unwrap();
    let team = Team::spawn(dir.path(), &format!("{contender:?}"), processes, |_| {
        vec![
            ("PG_RACE_URL", schema.url.clone().into()),
            ("PG_RACE_SCHEMA", schema.name.clone().into()),
        ]
    });
    team.go();
    let reports: Vec<_> = team.wait().into_iter().map(Option::unwrap).collect();
    let outcome = Outcome::of(&reports);
    assert_eq!(
        outcome.total as usize, handoffs,
        "every handoff claimed once"
    );
    // An error (a server restart) makes the rate meaningless: the run is done again.
    assert_eq!(outcome.errors, 0, "no claim failed");
    let mut client = schema.client();
    let claimed_events: i64 = client
        .query_one("SELECT count(*) FROM events WHERE kind = 'claimed'", &[])
        .unwrap()
        .get(0);
    assert_eq!(
        claimed_events as usize, handoffs,
        "one claimed event per claim"
    );
    outcome
}

/// The raw side's tables, filled with the same bodies the store keeps.
fn seed_raw(client: &mut Client, handoffs: usize) {
    client
        .batch_execute(
            "CREATE TABLE t (
                 seq BIGSERIAL PRIMARY KEY,
                 id TEXT NOT NULL UNIQUE,
                 status TEXT NOT NULL,
                 claimed_by TEXT,
                 token BIGINT NOT NULL DEFAULT 0,
                 body TEXT NOT NULL
             );
             CREATE INDEX t_pending ON t (seq) WHERE status = 'pending';
             CREATE TABLE events (
                 seq BIGSERIAL PRIMARY KEY,
                 handoff_id TEXT NOT NULL,
                 at BIGINT NOT NULL,
                 actor TEXT,
                 kind TEXT NOT NULL,
                 detail TEXT NOT NULL
             );
             CREATE INDEX events_handoff ON events (handoff_id, seq);",
        )
        .unwrap();
    let mut tx = client.transaction().unwrap();
    let insert = tx
        .prepare("INSERT INTO t (id, status, body) VALUES ($1, 'pending', $2)")
        .unwrap();
    let now = chrono::Utc::now();
    for (i, new) in news(handoffs).into_iter().enumerate() {
        let id = format!("01900000-0000-7000-8000-{i:012}");
        let body = new.into_record(id.clone(), now).to_json();
        tx.execute(&insert, &[&id, &body]).unwrap();
    }
    tx.commit().unwrap();
    client.batch_execute("ANALYZE").unwrap();
}

/// One racing process: claims until nothing is left.
fn worker(role: &str) {
    let url = team::var("PG_RACE_URL");
    let schema = team::var("PG_RACE_SCHEMA");
    let agent = team::var("TEAM_AGENT");
    if role == "Store" {
        let separator = if url.contains('?') { '&' } else { '?' };
        let store = Store::connect(&format!("{url}{separator}schema={schema}")).unwrap();
        return team::work(|| {
            store
                .claim_next(&agent, None, Duration::from_secs(3600))
                .map(|claim| claim.map(|c| c.handoff.id))
                .map_err(|e| e.to_string())
        });
    }
    let mut client = Client::connect(&url, NoTls).unwrap();
    client
        .batch_execute(&format!("SET search_path TO \"{schema}\""))
        .unwrap();
    let claim = client
        .prepare(
            "UPDATE t SET status = 'claimed', claimed_by = $1, token = token + 1 \
             WHERE seq = (SELECT seq FROM t WHERE status = 'pending' \
                          ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED) \
             RETURNING id, token",
        )
        .unwrap();
    let event = client
        .prepare(
            "INSERT INTO events (handoff_id, at, actor, kind, detail) \
             VALUES ($1, $2, $3, 'claimed', $4)",
        )
        .unwrap();
    team::work(|| {
        let mut tx = client.transaction().map_err(|e| e.to_string())?;
        let Some(row) = tx.query_opt(&claim, &[&agent]).map_err(|e| e.to_string())? else {
            tx.commit().map_err(|e| e.to_string())?;
            return Ok(None);
        };
        let id: String = row.get(0);
        let token: i64 = row.get(1);
        let detail = format!(
            r#"{{"kind":"claimed","detail":{{"agent":"{agent}","token":{token},"lease_until":"2026-01-01T01:00:00Z"}}}}"#
        );
        tx.execute(&event, &[&id, &(micros_now() as i64), &agent, &detail])
            .map_err(|e| e.to_string())?;
        tx.commit().map_err(|e| e.to_string())?;
        Ok(Some(id))
    });
}
