//! The conformance cases of replays of a task and comparisons of runs.

use super::*;

pub fn replays_tell_a_task_in_order_and_compare_runs(store: Store) {
    use crate::curation::NewFact;

    let fact = |text: &str| NewFact {
        text: text.into(),
        confidence: None,
        source: None,
    };
    // A run without a plan: claude hands to gemini, which completes; facts on its branch.
    let h = store
        .create(
            NewHandoff::new("fix-oauth", "Fix the token refresh")
                .from_agent("claude")
                .to_agent("gemini")
                .decisions(["retry with backoff"]),
        )
        .unwrap();
    let claim = store.claim(&h.id, "gemini", MINUTE).unwrap();
    store.complete(&claim, "refresh retried").unwrap();
    store
        .add_facts("task/fix-oauth/gemini", vec![fact("refresh needs backoff")])
        .unwrap();
    let r = store.replay("fix-oauth", false).unwrap();
    let kinds: Vec<&str> = r.timeline.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "handoff.created",
            "handoff.claimed",
            "handoff.completed",
            "curation.facts_added"
        ]
    );
    assert!(r.timeline.windows(2).all(|w| w[0].at <= w[1].at));
    assert_eq!(r.timeline[1].agent.as_deref(), Some("gemini"));
    assert_eq!(r.timeline[2].data["outcome"], "refresh retried");
    assert_eq!(r.timeline[0].data["goal"], "Fix the token refresh");
    assert_eq!(r.timeline[0].data["kind"], "full");
    let gemini = r.agents.iter().find(|a| a.agent == "gemini").unwrap();
    assert_eq!(
        (gemini.claimed, gemini.completed, gemini.curated),
        (1, 1, 1)
    );
    assert_eq!(r.outcome.status, "completed");
    assert_eq!(r.outcome.result.as_deref(), Some("refresh retried"));
    assert_eq!(
        r.key_facts.len(),
        1,
        "not verified, but not invalidated either"
    );
    assert!(
        store
            .replay("fix-oauth", true)
            .unwrap()
            .key_facts
            .is_empty()
    );

    // A run with a plan: its steps are in the timeline, its status is the task's.
    let task = store.create_task(blog_task()).unwrap();
    let id = task.header.id.clone();
    store.start_task(&id).unwrap();
    let research = store
        .claim_next("researcher", None, MINUTE)
        .unwrap()
        .unwrap();
    store.complete(&research, "notes").unwrap();
    let planned = store.replay(&id, false).unwrap();
    let kinds: Vec<&str> = planned.timeline.iter().map(|e| e.kind.as_str()).collect();
    for kind in [
        "task.created",
        "task.started",
        "task.step_started",
        "task.step_completed",
    ] {
        assert!(kinds.contains(&kind), "{kind} in {kinds:?}");
    }
    assert_eq!(planned.outcome.status, "in_progress");

    let compared = store.compare("fix-oauth", &id).unwrap();
    assert_eq!(compared.agents.only_a, ["claude", "gemini"]);
    assert!(compared.agents.only_b.contains(&"researcher".to_owned()));
    assert_eq!(compared.decision_points.only_a, ["retry with backoff"]);
    assert_eq!(compared.facts.only_a, ["refresh needs backoff"]);
    // A protocol run's messages say which they are.
    store
        .initialize(crate::protocol::Initialize {
            task_id: "oauth-run".into(),
            manager: "lead".into(),
            worker: "dev".into(),
            instructions: "Add token refresh".into(),
            success_criteria: vec!["a 401 refreshes once".into()],
            ..crate::protocol::Initialize::default()
        })
        .unwrap();
    let run = store.replay("oauth-run", false).unwrap();
    assert_eq!(run.timeline[0].data["protocol"], "initialization");
    assert_eq!(run.timeline[0].data["iteration"], 1);
    assert!(
        run.timeline[0]
            .summary
            .starts_with("initialization message")
    );
    assert_eq!(
        store.replay("no-such-task", false).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        store.replay("../x", false).unwrap_err().kind(),
        ErrorKind::Validation
    );
}
