//! Curation (issue 17's targets), each beside its baseline in the same run, on SQLite NORMAL:
//!
//! - a cherry-pick of a 10,000-message range beside writing those messages once
//!   (`add_conversation`): target ≤ 2×;
//! - `verify` of 10,000 facts with a verifier that scores at once: target ≥ 50,000 facts/s;
//! - `context_for` on a task with 100,000 verified facts beside one with 10,000, the best of
//!   five calls each: target ≤ 12×.
//!
//! ```sh
//! cargo bench -p handoff-benches --bench curation   # prints a Markdown table
//! ```
#![allow(clippy::unwrap_used, missing_docs)]

use std::time::Instant;

use handoff_core::context::Message;
use handoff_core::curation::{NewFact, Score, Thresholds, Verifier, VerifyItem};
use handoff_core::store::NewConversation;
use handoff_core::{NewHandoff, SqliteOptions, Store, Synchronous};

fn main() {
    let full = std::env::args().any(|arg| arg == "--bench");
    let (messages, facts, small, large) = if full {
        (10_000, 10_000, 10_000, 100_000)
    } else {
        (100, 100, 100, 1_000)
    };
    let dir = tempfile::tempdir().unwrap();
    let options = SqliteOptions {
        synchronous: Synchronous::Normal,
        ..SqliteOptions::default()
    };
    let store = Store::open_with(dir.path().join("curation.db"), &options).unwrap();
    println!("| measure | handoff-core | baseline | ratio | target |");
    println!("|---|---|---|---|---|");

    let conversation: Vec<Message> = (0..messages)
        .map(|i| Message {
            role: if i % 2 == 0 { "user" } else { "assistant" }.into(),
            content: format!("message {i}: the refresh token is retried with backoff"),
            ..Message::default()
        })
        .collect();
    let started = Instant::now();
    let conv = store
        .add_conversation(NewConversation {
            branch: "task/bench/agent".into(),
            messages: conversation,
            ..NewConversation::default()
        })
        .unwrap();
    let insert = started.elapsed().as_secs_f64();
    let started = Instant::now();
    store
        .cherry_pick(&conv.id, "task/bench", None, None, None)
        .unwrap();
    let pick = started.elapsed().as_secs_f64();
    println!(
        "| cherry-pick of {messages} messages | {:.0} ms | {:.0} ms (writing them once) | {:.2}× | ≤ 2× |",
        pick * 1e3,
        insert * 1e3,
        pick / insert
    );

    let new_facts = |n: usize| -> Vec<NewFact> {
        (0..n)
            .map(|i| NewFact {
                text: format!("fact {i}: refresh needs retries with backoff"),
                confidence: None,
                source: None,
            })
            .collect()
    };
    for chunk in new_facts(facts).chunks(1000) {
        store.add_facts("task/verify", chunk.to_vec()).unwrap();
    }
    struct Instant1;
    impl Verifier for Instant1 {
        fn verify(&mut self, _: VerifyItem<'_>) -> handoff_core::Result<Score> {
            Ok(Score {
                score: 0.9,
                explanation: None,
            })
        }
    }
    let started = Instant::now();
    let report = store
        .verify("task/verify", Some(&mut Instant1), &Thresholds::default())
        .unwrap();
    let rate = report.verified as f64 / started.elapsed().as_secs_f64();
    println!("| verify, a verifier that answers at once | {rate:.0} facts/s | | | ≥ 50,000 |");

    let mut times = Vec::new();
    for (task, n) in [("ctx-small", small), ("ctx-large", large)] {
        let branch = format!("task/{task}");
        for chunk in new_facts(n).chunks(1000) {
            store.add_facts(&branch, chunk.to_vec()).unwrap();
        }
        store
            .verify(&branch, Some(&mut Instant1), &Thresholds::default())
            .unwrap();
        let h = store.create(NewHandoff::new(task, "Go on")).unwrap();
        store
            .context_for(&h.id, handoff_core::store::ContextOptions::tokens(2000))
            .unwrap(); // warm-up
        // The best of five: on a shared machine the slowest runs measure the neighbours.
        let best = (0..5)
            .map(|_| {
                let started = Instant::now();
                store
                    .context_for(&h.id, handoff_core::store::ContextOptions::tokens(2000))
                    .unwrap();
                started.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min);
        times.push(best);
    }
    println!(
        "| context_for, {large} facts vs {small} | {:.0} ms | {:.0} ms | {:.2}× | ≤ 12× |",
        times[1] * 1e3,
        times[0] * 1e3,
        times[1] / times[0]
    );
}
