//! The successor's packet (issue 46's target), beside its baseline in the same run: with
//! 100,000 verified facts on `main`, `context_for` takes at most twice its time with 1,000 (the
//! relevant knowledge is found through an index, not by reading `main`), on SQLite and, with
//! the `postgres` feature and `HANDOFF_TEST_POSTGRES` set, on PostgreSQL. Beside it, a plain
//! `get` + `to_markdown` of the same handoff: what a successor read before the packet.
//!
//! ```sh
//! cargo bench -p handoff-benches --bench successor                      # SQLite
//! HANDOFF_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test \
//!   cargo bench -p handoff-benches --features postgres --bench successor  # and PostgreSQL
//! ```
#![allow(clippy::unwrap_used, missing_docs)]

use std::time::Instant;

use handoff_core::bundle::BundleKeyPair;
use handoff_core::curation::{NewFact, Score, Thresholds, Verifier, VerifyItem};
use handoff_core::store::{ContextOptions, NewBundle};
use handoff_core::{NewHandoff, SqliteOptions, Store, Synchronous};

/// Scores everything at once: the facts are verified without a model.
struct Accept;
impl Verifier for Accept {
    fn verify(&mut self, _: VerifyItem<'_>) -> handoff_core::Result<Score> {
        Ok(Score {
            score: 0.9,
            explanation: None,
        })
    }
}

/// `n` facts about unrelated things, from a vocabulary of a few thousand words, so that terms
/// have the spread of document counts real notes have.
fn unrelated(n: usize, seed: u64) -> Vec<NewFact> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..n)
        .map(|_| {
            let words: Vec<String> = (0..12)
                .map(|_| format!("w{}", rng.usize(0..4000)))
                .collect();
            NewFact {
                text: words.join(" "),
                confidence: None,
                source: None,
            }
        })
        .collect()
}

/// The best of twenty `context_for` calls and of twenty `get` + `to_markdown`, in seconds (on
/// a shared machine the slower runs measure the neighbours).
fn time(store: &Store, facts: usize) -> (f64, f64) {
    // As knowledge reaches `main` from elsewhere: playbooks of a thousand facts verified in
    // another store, signed there, and imported by this one, which trusts their key. (Merging
    // a thousand at a time reads all of `main` on every merge: too slow to fill 100,000.)
    let keys = BundleKeyPair::generate().unwrap();
    store
        .trust_bundle_keys(std::slice::from_ref(&keys.public_key), &[])
        .unwrap();
    let mut facts_left = unrelated(facts, facts as u64);
    facts_left.push(NewFact {
        text: "OAuth2 token refresh needs a retry with exponential backoff after a 401".into(),
        confidence: None,
        source: None,
    });
    for (i, chunk) in facts_left.chunks(1000).enumerate() {
        let source = Store::memory();
        let task = format!("fill-{i}");
        let branch = format!("task/{task}");
        source.add_facts(&branch, chunk.to_vec()).unwrap();
        source
            .verify(&branch, Some(&mut Accept), &Thresholds::default())
            .unwrap();
        let bundle = source
            .create_bundle(NewBundle::of_task(format!("playbook {i}"), task))
            .unwrap();
        let json = source
            .sign_bundle(&bundle.id, &keys.secret_key)
            .unwrap()
            .to_json()
            .unwrap();
        assert!(store.import_bundle(&json, "main").unwrap().trusted);
    }
    let h = store
        .create(
            NewHandoff::new(
                format!("oauth-{facts}"),
                "Users are logged out when the OAuth token expires",
            )
            .pending(["make the token refresh robust", "w17 w230 w3999"]),
        )
        .unwrap();
    let packet = store.context_for(&h.id, ContextOptions::default()).unwrap();
    assert!(
        packet.to_markdown().contains("exponential backoff"),
        "the relevant fact is found"
    );
    let best = |f: &dyn Fn()| {
        (0..20)
            .map(|_| {
                let started = Instant::now();
                f();
                started.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    };
    let packet = best(&|| {
        store.context_for(&h.id, ContextOptions::default()).unwrap();
    });
    let plain = best(&|| {
        store.get(&h.id).unwrap().to_markdown();
    });
    (packet, plain)
}

fn report(backend: &str, small: usize, large: usize, make: &dyn Fn(&str) -> Store) {
    let (few, plain_few) = time(&make("few"), small);
    let (many, plain_many) = time(&make("many"), large);
    println!(
        "| {backend}: context_for, {large} facts on main vs {small} | {:.1} ms | {:.1} ms | {:.2}× | ≤ 2× |",
        many * 1e3,
        few * 1e3,
        many / few
    );
    println!(
        "| {backend}: context_for beside get + to_markdown ({large} facts) | {:.1} ms | {:.2} ms | {:.0}× | |",
        many * 1e3,
        plain_many * 1e3,
        many / plain_many
    );
    let _ = plain_few;
}

fn main() {
    let full = std::env::args().any(|arg| arg == "--bench");
    let (small, large) = if full { (1_000, 100_000) } else { (100, 1_000) };
    println!("| measure | handoff-core | baseline | ratio | target |");
    println!("|---|---|---|---|---|");
    let dir = tempfile::tempdir().unwrap();
    let options = SqliteOptions {
        synchronous: Synchronous::Normal,
        ..SqliteOptions::default()
    };
    report("SQLite", small, large, &|name| {
        Store::open_with(dir.path().join(format!("{name}.db")), &options).unwrap()
    });
    #[cfg(feature = "postgres")]
    if let Ok(url) = std::env::var("HANDOFF_TEST_POSTGRES") {
        let run = std::process::id();
        report("PostgreSQL", small, large, &|name| {
            let schema = format!("bench_successor_{name}_{run}");
            Store::connect(&format!("{url}?schema={schema}")).unwrap()
        });
    }
}
