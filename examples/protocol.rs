//! The dual-agent manager/worker protocol, run by two processes that share one SQLite file: a
//! scripted worker and a scripted manager, each waiting for its next message (never polling
//! each other). The run goes through a REFINE, an error and its recovery, an escalation that
//! this process answers as the human, and the COMPLETE that ends it.
//!
//! ```sh
//! cargo run --example protocol                  # uses ./protocol.db
//! cargo run --example protocol -- --db /tmp/x.db
//! ```
//!
//! The example starts its own agents: it runs itself again with `--manager` and `--worker`.

use std::process::{Child, Command};
use std::time::Duration;

use handoff_core::protocol::{
    BlockerType, Category, Decision, ErrorReport, ErrorType, EscalationDetails, FileChange,
    Initialize, Phase, RecoveryInstructions, Severity, Tests, Urgency, WorkerReport, WorkerStatus,
};
use handoff_core::{Claim, Kind, Store};

const TASK: &str = "oauth-refresh";
const LEASE: Duration = Duration::from_secs(60);
const PATIENCE: Duration = Duration::from_secs(60);

type Outcome = Result<(), Box<dyn std::error::Error>>;

fn main() -> Outcome {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["--db", db, "--worker"] => worker(&Store::open(db)?),
        ["--db", db, "--manager"] => manager(&Store::open(db)?),
        [] => run("protocol.db"),
        ["--db", db] => run(db),
        _ => Err("usage: protocol [--db PATH]".into()),
    }
}

/// Starts the run and both agents, answers the escalation as the human, and prints the run.
fn run(db: &str) -> Outcome {
    let store = Store::open(db)?;
    let exe = std::env::current_exe()?;
    let spawn = |role: &str| -> std::io::Result<Child> {
        Command::new(&exe).args(["--db", db, role]).spawn()
    };
    let agents = [spawn("--worker")?, spawn("--manager")?];
    store.initialize(Initialize {
        task_id: TASK.into(),
        manager: "manager".into(),
        worker: "worker".into(),
        instructions: "Add token refresh with retries to src/auth.js".into(),
        success_criteria: vec![
            "a 401 triggers one refresh".into(),
            "refresh retries back off exponentially".into(),
        ],
        max_retries: Some(2),
        ..Initialize::default()
    })?;
    println!("store: {db}\nrun:   {TASK}, manager and worker in two processes\n");

    let escalation = wait(&store, "human")?;
    let details = escalation
        .handoff
        .protocol
        .as_ref()
        .and_then(|p| p.escalation_details.as_ref())
        .map_or_else(String::new, |d| d.description.clone());
    println!("human    reads the escalation: {details}");
    store.resolve(
        &escalation,
        "Registered the client id in the OAuth sandbox",
        Some("run the refresh tests again"),
    )?;
    println!("human    resolved it");

    for mut agent in agents {
        if !agent.wait()?.success() {
            return Err("an agent failed".into());
        }
    }
    let run = store.protocol_run(TASK)?;
    println!("\niteration  outcome   instructions");
    for item in &run.history {
        println!(
            "{:<10} {:<9} {}",
            item.iteration, item.outcome, item.manager_instructions
        );
    }
    let kinds: Vec<&str> = store
        .protocol_history(TASK)?
        .iter()
        .map(|h| h.kind.as_str())
        .collect();
    println!("\nmessages: {}", kinds.join(" → "));
    let stats = store.protocol_stats()?;
    println!(
        "runs {}, completed {}, retries {}, escalated {:.0}%",
        stats.runs,
        stats.completed,
        stats.retries,
        stats.escalation_rate * 100.0
    );
    if run.phase != Phase::Completed {
        return Err(format!("the run ended {:?}", run.phase).into());
    }
    Ok(())
}

/// The next message for `agent`, waiting for it.
fn wait(store: &Store, agent: &str) -> Result<Claim, Box<dyn std::error::Error>> {
    store
        .claim_next_wait(agent, Some(TASK), LEASE, PATIENCE)?
        .ok_or_else(|| format!("{agent} waited a minute for a message").into())
}

/// The worker: a partial first try, an error on the refinement, the same error after the
/// recovery, and the work done once the human has helped.
fn worker(store: &Store) -> Outcome {
    let file = |description: &str| FileChange {
        path: "src/auth.js".into(),
        description: description.into(),
    };
    let sandbox_error = || ErrorReport {
        error_type: ErrorType::Configuration,
        severity: Severity::High,
        description: "the OAuth sandbox rejects our client id".into(),
        context: "POST /oauth/token during the refresh tests".into(),
        attempted_solutions: vec!["checked the client id in .env".into()],
        error_messages: vec!["invalid_client".into()],
        affected_files: vec!["src/auth.js".into()],
    };
    let mut errors = 0;
    loop {
        let message = wait(store, "worker")?;
        let body = message
            .handoff
            .protocol
            .clone()
            .ok_or("a message of the run without its protocol body")?;
        let resuming = body.continuation_instructions.is_some() && errors > 0;
        if body.iteration == 1 && body.recovery_instructions.is_none() {
            println!("worker   implements the refresh, no backoff yet");
            store.report(
                &message,
                WorkerReport {
                    status: WorkerStatus::Partial,
                    accomplished: vec!["refresh on 401".into()],
                    files_modified: vec![file("refresh call on 401")],
                    tests: Tests {
                        added: 3,
                        passing: 3,
                        coverage: Some("78%".into()),
                    },
                    issues: vec!["no backoff between refresh retries".into()],
                    validation: vec!["npm test".into()],
                },
            )?;
        } else if !resuming && errors < 2 {
            errors += 1;
            println!("worker   hits an error (attempt {errors})");
            store.report_error(&message, sandbox_error())?;
        } else {
            println!("worker   finishes the backoff; tests pass");
            store.report(
                &message,
                WorkerReport {
                    status: WorkerStatus::Completed,
                    accomplished: vec!["exponential backoff".into(), "tests green".into()],
                    files_modified: vec![file("backoff: 1s, 2s, 4s")],
                    tests: Tests {
                        added: 4,
                        passing: 7,
                        coverage: Some("88%".into()),
                    },
                    issues: Vec::new(),
                    validation: vec!["npm test".into()],
                },
            )?;
            return Ok(());
        }
    }
}

/// The manager: REFINE a partial report, recover from the first error, escalate when it
/// comes back, go on after the human's answer, COMPLETE a complete report.
fn manager(store: &Store) -> Outcome {
    loop {
        let message = wait(store, "manager")?;
        let body = message
            .handoff
            .protocol
            .clone()
            .ok_or("a message of the run without its protocol body")?;
        if message.handoff.kind == Kind::ErrorRecovery {
            if body.retry_count.unwrap_or(0) == 0 {
                println!("manager  sends recovery steps");
                store.recover(
                    &message,
                    RecoveryInstructions {
                        strategy: "use the staging client id".into(),
                        steps: vec![
                            "read STAGING_CLIENT_ID".into(),
                            "rerun the refresh tests".into(),
                        ],
                        alternatives: vec!["mock the token endpoint".into()],
                        success_indicators: vec!["refresh tests pass".into()],
                        escalation_trigger: Some("invalid_client again".into()),
                    },
                )?;
            } else {
                println!("manager  escalates: the same error is back");
                store.escalate(
                    &message,
                    EscalationDetails {
                        category: Category::Configuration,
                        severity: Severity::High,
                        urgency: Urgency::Medium,
                        blocker_type: BlockerType::Access,
                        description: "The sandbox rejects both client ids".into(),
                        impact: "Refresh cannot be tested end to end".into(),
                        recommendation: "Register the client id in the sandbox".into(),
                    },
                )?;
            }
        } else if body.resume_instructions.is_some() {
            println!("manager  reads the resolution: CONTINUE");
            store.decide(
                &message,
                Decision::Continue,
                Some("Rerun the refresh tests, then finish the backoff".into()),
                None,
                None,
                None,
            )?;
        } else if body
            .worker_report
            .as_ref()
            .is_some_and(|r| r.status == WorkerStatus::Completed)
        {
            println!("manager  reviews the report: COMPLETE");
            store.decide(&message, Decision::Complete, None, None, None, None)?;
            return Ok(());
        } else {
            println!("manager  reviews the report: REFINE");
            store.decide(
                &message,
                Decision::Refine,
                Some("Add exponential backoff between refresh retries".into()),
                None,
                None,
                None,
            )?;
        }
    }
}
