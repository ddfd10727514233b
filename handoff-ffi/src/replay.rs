//! A task's replay and the comparison of two runs (docs/design.md §9) as the foreign languages see
//! them: one ordered timeline over the task's handoffs' events, its plan's log and its curation
//! log, what each agent contributed, its key facts and conversations, and how it ended.
//!
//! The records are the core's own (its `uniffi` feature). A timeline entry's kind is text
//! (`handoff.created`, `task.step_started`, `curation.facts_added`, ...), as its logs name it;
//! its `data` is JSON text.

pub use handoff_core::replay::{
    AgentContribution, Overlap, TaskComparison, TaskOutcome, TaskReplay, TimelineEntry,
};

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use crate::{CreateOptions, HandoffError, NewFact, OpenOptions, Store};

    #[test]
    fn a_run_replayed_and_compared() {
        let clock = crate::ManualClock::new(None).unwrap();
        let store = Store::memory(OpenOptions {
            clock: Some(clock.clone()),
            ..OpenOptions::default()
        })
        .unwrap();
        let h = store
            .create(CreateOptions {
                task_id: "t1".into(),
                goal: "Fix the refresh".into(),
                from_agent: Some("claude".into()),
                to_agent: Some("gemini".into()),
                decisions: vec!["retry with backoff".into()],
                ..CreateOptions::default()
            })
            .unwrap();
        clock.advance(Duration::from_secs(30));
        let claim = store.claim(h.id, "gemini".into(), None).unwrap();
        clock.advance(Duration::from_secs(30));
        store
            .complete(claim.reference(), "retried".into(), None)
            .unwrap();
        store
            .add_facts(
                "task/t1/gemini".into(),
                vec![NewFact {
                    text: "refresh needs backoff".into(),
                    confidence: None,
                    source: None,
                }],
            )
            .unwrap();
        let r = store.replay("t1".into(), false).unwrap();
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
        assert_eq!(r.timeline[2].data["outcome"], "retried");
        assert_eq!(r.outcome.status, "completed");
        assert_eq!(r.outcome.duration_seconds, Some(60.0));
        assert_eq!(r.key_facts.len(), 1);
        let gemini = r.agents.iter().find(|a| a.agent == "gemini").unwrap();
        assert_eq!(
            (gemini.claimed, gemini.completed, gemini.curated),
            (1, 1, 1)
        );

        let c = store.compare("t1".into(), "t1".into()).unwrap();
        assert_eq!(c.agents.both, ["claude", "gemini"]);
        assert_eq!(c.timeline_length_a, 4);
        assert!(matches!(
            store.replay("nothing".into(), false),
            Err(HandoffError::NotFound { .. })
        ));
    }
}
