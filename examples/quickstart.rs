//! Three agents hand one task along, claude → gemini → codex, on the embedded SQLite store.
//!
//! ```sh
//! cargo run --example quickstart                 # uses ./handoff.db
//! cargo run --example quickstart -- --db /tmp/x.db
//! ```
//!
//! Each run adds a new task to the same file, so running it twice continues where the first
//! run left the store.

use std::collections::BTreeSet;
use std::time::Duration;

use handoff_core::{Claim, ListFilter, NewHandoff, Reason, Store};

const LEASE: Duration = Duration::from_secs(120);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let db = db_path()?;
    let store = Store::open(&db)?;
    let earlier: BTreeSet<String> = store
        .list(&ListFilter::default())?
        .into_iter()
        .map(|h| h.task_id)
        .filter(|task| task.starts_with("quickstart-"))
        .collect();
    let task = format!("quickstart-{}", earlier.len() + 1);
    println!("store: {db} ({} earlier quickstart runs)", earlier.len());
    println!("task:  {task}\n");

    // claude fills its context window and hands the rest to gemini.
    let first = store.create(
        NewHandoff::new(&task, "Add rate limiting to the public API")
            .from_agent("claude")
            .to_agent("gemini")
            .reason(Reason::ContextLimit { percent: 85 })
            .context_usage(85)
            .progress("Token-bucket limiter written and unit-tested; not wired in yet.")
            .completed(["design the token bucket", "implement limiter.rs with tests"])
            .pending([
                "wire the limiter into the router",
                "add 429 responses",
                "load test",
            ])
            .decisions(["per-API-key buckets, not per-IP: customers share NATs"])
            .assumptions(["Redis is not available; limits are per instance"])
            .warnings(["the /health route must never be limited"])
            .files(["src/limiter.rs", "src/limiter_tests.rs"])
            .instructions("Start with the router; keep the limiter's public API unchanged."),
    )?;

    // gemini takes the handoff, works, and hands the load test to codex.
    let claim = take(&store, "gemini", &task)?;
    store.heartbeat(&claim)?;
    store.create(
        NewHandoff::new(&task, "Load test the rate limiter")
            .from_agent("gemini")
            .to_agent("codex")
            .parent_id(&first.id)
            .reason(Reason::TaskComplete)
            .progress("Limiter wired in; 429 responses with Retry-After.")
            .completed(["wire the limiter into the router", "add 429 responses"])
            .pending(["load test at 2x peak traffic"])
            .decisions(["Retry-After is whole seconds, rounded up"])
            .warnings(["the /health route must never be limited"])
            .files(["src/router.rs", "src/limiter.rs"]),
    )?;
    store.complete(&claim, "router wired, handed load test to codex")?;

    // codex finishes the task.
    let claim = take(&store, "codex", &task)?;
    store.complete(
        &claim,
        "p99 stays under 40 ms at 2x peak; no 429 on /health",
    )?;

    let chain = store.chain(&task)?;
    println!("chain: {chain}");
    for hop in &chain.hops {
        println!(
            "  {} {:>9}  {}",
            hop.handoff_id,
            hop.status.as_str(),
            hop.created_at.to_rfc3339()
        );
    }
    let total = store.list(&ListFilter::default())?.len();
    println!("\nthe store now holds {total} handoffs");
    Ok(())
}

/// Claims the next handoff of `task` addressed to `agent` and shows what it receives.
fn take(store: &Store, agent: &str, task: &str) -> Result<Claim, Box<dyn std::error::Error>> {
    let claim = store
        .claim_next(agent, Some(task), LEASE)?
        .ok_or_else(|| format!("nothing for {agent} to claim"))?;
    println!(
        "──── {agent} claims {} (token {}) and reads:\n",
        claim.handoff.id, claim.token
    );
    println!("{}", claim.handoff.to_markdown());
    Ok(claim)
}

fn db_path() -> Result<String, String> {
    let mut args = std::env::args().skip(1);
    match (args.next().as_deref(), args.next()) {
        (None, _) => Ok("handoff.db".to_owned()),
        (Some("--db"), Some(path)) => Ok(path),
        _ => Err("usage: quickstart [--db PATH]".to_owned()),
    }
}
