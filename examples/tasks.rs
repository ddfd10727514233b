//! The Deep Agents state protocol's bilingual blog post, run as a task: a plan of four steps
//! (research, a Korean and an English draft, a review), each step a handoff, taken by three
//! worker processes — researcher, writer, reviewer — that share one SQLite file and wait for
//! work instead of polling.
//!
//! ```sh
//! cargo run --example tasks                  # uses ./tasks.db
//! cargo run --example tasks -- --db /tmp/x.db
//! ```
//!
//! The example starts its own workers: it runs itself again with `--worker AGENT`.

use std::process::{Child, Command};
use std::time::Duration;

use handoff_core::Store;
use handoff_core::plan::StepSpec;
use handoff_core::task::{NewTask, TaskStatus};

const LEASE: Duration = Duration::from_secs(60);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["--db", db, "--worker", agent, steps] => worker(db, agent, steps.parse()?),
        [] => orchestrate("tasks.db"),
        ["--db", db] => orchestrate(db),
        _ => Err("usage: tasks [--db PATH]".into()),
    }
}

/// Creates and starts the task, starts one worker process per agent, waits for them, and
/// prints how the task went.
fn orchestrate(db: &str) -> Result<(), Box<dyn std::error::Error>> {
    let store = Store::open(db)?;
    let task = store.create_task(NewTask {
        name: "Write a post".into(),
        goal: "A bilingual blog post".into(),
        steps: vec![
            StepSpec::new("research", "Research", "researcher"),
            StepSpec::new("draft-ko", "Draft (ko)", "writer").after(["research"]),
            StepSpec::new("draft-en", "Draft (en)", "writer").after(["research"]),
            StepSpec::new("review", "Review", "reviewer").after(["draft-ko", "draft-en"]),
        ],
        success_criteria: vec!["both drafts reviewed".into()],
        orchestrator: Some("orchestrator".into()),
        ..NewTask::default()
    })?;
    let id = task.header.id.clone();
    println!("store: {db}\ntask:  {id} ({})\n", task.header.goal);

    // The workers wait for their steps; the researcher's is offered by the start.
    let exe = std::env::current_exe()?;
    let spawn = |agent: &str, steps: usize| -> std::io::Result<Child> {
        Command::new(&exe)
            .args(["--db", db, "--worker", agent, &steps.to_string()])
            .spawn()
    };
    let workers = [
        spawn("researcher", 1)?,
        spawn("writer", 2)?,
        spawn("reviewer", 1)?,
    ];
    store.start_task(&id)?;
    for mut worker in workers {
        if !worker.wait()?.success() {
            return Err("a worker failed".into());
        }
    }

    let done = store.get_task(&id)?;
    println!();
    for step in &done.steps {
        println!(
            "{:<9} {:<10} {:?}  {}",
            step.spec.id,
            step.spec.addressee(),
            step.status,
            step.output.as_deref().unwrap_or("")
        );
    }
    let log: Vec<String> = store
        .task_events(&id)?
        .iter()
        .map(|e| match &e.actor {
            Some(actor) => format!("{} ({actor})", e.change.kind()),
            None => e.change.kind().to_owned(),
        })
        .collect();
    println!("\nlog: {}", log.join(" → "));
    if done.header.status != TaskStatus::Completed {
        return Err(format!("the task ended {:?}", done.header.status).into());
    }
    Ok(())
}

/// One worker: takes `steps` steps addressed to `agent`, waiting for each, and completes them.
fn worker(db: &str, agent: &str, steps: usize) -> Result<(), Box<dyn std::error::Error>> {
    let store = Store::open(db)?;
    for _ in 0..steps {
        let Some(claim) = store.claim_next_wait(agent, None, LEASE, Duration::from_secs(60))?
        else {
            return Err(format!("{agent} waited a minute for a step").into());
        };
        let step = claim.handoff.metadata["step_id"]
            .as_str()
            .unwrap_or("?")
            .to_owned();
        println!("{agent:<10} took {step}");
        store.complete(&claim, &format!("{step} done by {agent}"))?;
    }
    Ok(())
}
