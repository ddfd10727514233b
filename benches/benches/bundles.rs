//! Bundles and replay (issue 18's targets), each beside its baseline in the same run, on SQLite
//! NORMAL:
//!
//! - importing a bundle of 10,000 facts and 100 conversations (10 messages each) beside a raw
//!   rusqlite insert of the rows that import wrote (one per fact, conversation and message,
//!   with the store's keys and bodies, serialised beforehand) into the same kind of table, in
//!   one transaction: target ≥ 0.5× (throughput);
//! - `replay` of a task with 100,000 events beside reading those events alone
//!   (`events_page` of the task): target ≤ 2×.
//!
//! ```sh
//! cargo bench -p handoff-benches --bench bundles   # prints a Markdown table
//! ```
#![allow(clippy::unwrap_used, missing_docs)]

use std::time::{Duration, Instant};

use handoff_core::context::Message;
use handoff_core::curation::{NewFact, Score, Thresholds, Verifier, VerifyItem};
use handoff_core::store::{NewBundle, NewConversation};
use handoff_core::{EventFilter, NewHandoff, SqliteOptions, Store, Synchronous};

struct Scores;
impl Verifier for Scores {
    fn verify(&mut self, _: VerifyItem<'_>) -> handoff_core::Result<Score> {
        Ok(Score {
            score: 0.9,
            explanation: None,
        })
    }
}

fn sqlite(path: &std::path::Path) -> Store {
    let options = SqliteOptions {
        synchronous: Synchronous::Normal,
        ..SqliteOptions::default()
    };
    Store::open_with(path, &options).unwrap()
}

/// The documents an import wrote, as (kind, key, body) with the store's own keys and bodies.
fn stored_rows(store: &Store) -> Vec<(&'static str, String, String)> {
    let mut rows = Vec::new();
    for fact in store.facts("main", None).unwrap() {
        let key = format!("1/main/{}", fact.id);
        rows.push(("fact", key, serde_json::to_string(&fact).unwrap()));
    }
    for conversation in store.list_conversations(Some("main"), None).unwrap() {
        for message in store.messages(&conversation.id, None, None).unwrap() {
            let key = format!("{}/{:010}", conversation.id, message.seq);
            rows.push((
                "message",
                key,
                serde_json::to_string(&message.message).unwrap(),
            ));
        }
        rows.push((
            "conversation",
            conversation.id.clone(),
            serde_json::to_string(&conversation).unwrap(),
        ));
    }
    rows
}

fn main() {
    let full = std::env::args().any(|arg| arg == "--bench");
    let (facts, conversations, events) = if full {
        (10_000, 100, 100_000)
    } else {
        (200, 5, 2_000)
    };
    let dir = tempfile::tempdir().unwrap();
    println!("| measure | handoff-core | baseline | ratio | target |");
    println!("|---|---|---|---|---|");

    // The bundle, made in one store and imported into fresh ones.
    let source = sqlite(&dir.path().join("source.db"));
    let new_facts: Vec<NewFact> = (0..facts)
        .map(|i| NewFact {
            text: format!("fact {i}: the token refresh is retried with backoff"),
            confidence: Some(0.8),
            source: Some("src/auth.js".into()),
        })
        .collect();
    for chunk in new_facts.chunks(1000) {
        source.add_facts("task/export", chunk.to_vec()).unwrap();
    }
    for c in 0..conversations {
        let messages = (0..10)
            .map(|i| Message {
                role: if i % 2 == 0 { "user" } else { "assistant" }.into(),
                content: format!("conversation {c}, message {i}: let me retry with backoff"),
                ..Message::default()
            })
            .collect();
        source
            .add_conversation(NewConversation {
                branch: "task/export".into(),
                messages,
                ..NewConversation::default()
            })
            .unwrap();
    }
    source
        .verify("task/export", Some(&mut Scores), &Thresholds::default())
        .unwrap();
    let bundle = source
        .create_bundle(NewBundle::of_task("Playbook", "export"))
        .unwrap();
    let json = bundle.to_json().unwrap();
    let mut ours = Duration::MAX;
    let mut raw = Duration::MAX;
    for round in 0..3 {
        let target = sqlite(&dir.path().join(format!("import-{round}.db")));
        let started = Instant::now();
        let report = target.import_bundle(&json, "main").unwrap();
        ours = ours.min(started.elapsed());
        // The baseline writes the rows this import wrote, as the store keeps them.
        let rows = stored_rows(&target);
        assert_eq!(report.facts_added as usize, facts);

        let mut conn =
            rusqlite::Connection::open(dir.path().join(format!("raw-{round}.db"))).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;
             CREATE TABLE docs (kind TEXT NOT NULL, key TEXT NOT NULL, version INTEGER NOT NULL,
                                body TEXT NOT NULL, PRIMARY KEY (kind, key));",
        )
        .unwrap();
        let started = Instant::now();
        let tx = conn.transaction().unwrap();
        {
            let mut insert = tx
                .prepare("INSERT INTO docs (kind, key, version, body) VALUES (?1, ?2, 1, ?3)")
                .unwrap();
            for (kind, key, body) in &rows {
                insert.execute((kind, key, body)).unwrap();
            }
        }
        tx.commit().unwrap();
        raw = raw.min(started.elapsed());
    }
    println!(
        "| import of {facts} facts and {conversations} conversations ({} bytes) | {:.0} ms | {:.0} ms (raw insert of the rows) | {:.2}× | ≥ 0.5× |",
        json.len(),
        ours.as_secs_f64() * 1e3,
        raw.as_secs_f64() * 1e3,
        raw.as_secs_f64() / ours.as_secs_f64()
    );

    // A task with `events` events: handoffs claimed once and renewed many times.
    let store = sqlite(&dir.path().join("replay.db"));
    let handoffs = events / 100;
    for i in 0..handoffs {
        let h = store
            .create(NewHandoff::new("long-run", format!("part {i}")).from_agent("planner"))
            .unwrap();
        let claim = store
            .claim(&h.id, "worker", Duration::from_secs(600))
            .unwrap();
        for _ in 0..97 {
            store.heartbeat(&claim).unwrap();
        }
        store.complete(&claim, "done").unwrap();
    }
    let filter = EventFilter {
        task_id: Some("long-run".into()),
        ..EventFilter::default()
    };
    let mut read = Duration::MAX;
    let mut replayed = Duration::MAX;
    for _ in 0..3 {
        let started = Instant::now();
        let got = store.events_page(&filter).unwrap();
        read = read.min(started.elapsed());
        assert_eq!(got.len(), events);
        let started = Instant::now();
        let replay = store.replay("long-run", false).unwrap();
        replayed = replayed.min(started.elapsed());
        assert_eq!(replay.timeline.len(), events);
    }
    println!(
        "| replay of a task with {events} events | {:.0} ms | {:.0} ms (reading the events) | {:.2}× | ≤ 2× |",
        replayed.as_secs_f64() * 1e3,
        read.as_secs_f64() * 1e3,
        replayed.as_secs_f64() / read.as_secs_f64()
    );
}
