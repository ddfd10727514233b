//! The backend conformance suite: one set of behaviours every [`Backend`](super::Backend) must
//! show, written once and run by each backend's tests through [`conformance_tests!`](crate::conformance_tests).
//!
//! The cases live one file per feature under `conformance/`; the macro lists them all, so
//! every case runs on every backend.
//!
//! Out-of-tree backends enable the `testing` feature and invoke the macro with an expression
//! that makes a fresh, empty [`Store`] on their backend.
#![allow(clippy::unwrap_used, missing_docs)] // Test code: a failed unwrap is a failed test.

use std::sync::Arc;
use std::time::Duration;

use crate::chain::{ChainPolicy, ChainRule};
use crate::clock::ManualClock;
use crate::error::{Error, ErrorKind};
use crate::machine::{Change, Event, replay};
use crate::plan::StepSpec;
use crate::record::{Handoff, Kind, NewHandoff, Reason, Status};
use crate::store::{ClaimRef, ClaimSecret, Doc, EventFilter, ListFilter, Store};
use crate::task::{NewTask, StepStatus, TaskChange, TaskResult, TaskStatus, TaskUpdate};

// The cases, one file per feature; the macro names each by its path here.
mod bundles;
mod context;
mod curation;
mod handoffs;
mod memory;
mod metrics;
mod operators;
mod protocol;
mod replay;
mod retention;
mod tasks;

pub use bundles::*;
pub use context::*;
pub use curation::*;
pub use handoffs::*;
pub use memory::*;
pub use metrics::*;
pub use operators::*;
pub use protocol::*;
pub use replay::*;
pub use retention::*;
pub use tasks::*;

const MINUTE: Duration = Duration::from_secs(60);

/// Generates one `#[test]` per conformance case, each on a store made by `$make`.
#[macro_export]
macro_rules! conformance_tests {
    // `optional EXPR`: EXPR is an `Option` of a fixture; `None` skips the case (a backend whose
    // server is not configured on this machine).
    (optional $make:expr) => {
        $crate::conformance_tests!(@cases (optional $make);
            create_and_get, idempotent_create, claim_is_exclusive, addressed_handoffs,
            heartbeat_release_and_reclaim, terminal_states_accept_nothing, fencing,
            lapses_fail_after_max_attempts, pending_expiry, reject_and_cancel,
            claim_next_order_and_filters, claim_next_reclaims_lapsed_leases,
            lapsed_leases_go_before_newer_work, chain_and_policy,
            checkpoints_and_stalled, list_filters, events_replay_to_records,
            bad_ids_change_nothing, create_many_is_atomic, unknown_parent, path_stats,
            limits_count_paths_not_tasks, open_handoffs_obey_the_policy_at_claim,
            display_names_are_agent_names, events_are_paged, lists_are_paged, claims_need_their_secret,
            cancel_rights, waiting_workers_get_new_work, failures_are_retried_then_final,
            documents_are_kept_by_kind_and_key, tasks_run_their_plans_as_handoffs,
            failed_steps_escalate_and_pause_their_task, tasks_pause_resume_and_cancel,
            tasks_update_by_compare_and_swap, memory_is_versioned_by_scope,
            sessions_say_who_owns_a_conversation, protocol_runs_answer_each_message_once,
            lost_protocol_messages_escalate_their_run, curated_knowledge_moves_up_once_verified,
            bundles_share_verified_knowledge_and_import_once,
            replays_tell_a_task_in_order_and_compare_runs, judges_texts_are_held_to_the_limits,
            successors_receive_what_their_predecessors_knew, a_plan_steps_successor_reads_its_dependencies,
            knowledge_on_main_reaches_new_tasks_by_relevance, packets_fit_a_character_budget,
            bundles_follow_provenance_after_a_merge, cherry_picks_can_pass_the_gate,
            bundles_record_their_verification, conversations_become_candidate_facts,
            prune_removes_old_tasks_handoffs_and_keeps_their_history,
            backups_restore_into_any_store, damaged_backups_are_refused_and_write_nothing,
            tasks_take_objectives_and_members, step_escalations_never_strand_a_task,
            completing_a_task_merges_only_what_was_verified,
            tasks_run_again_seeded_with_what_they_learned,
            priorities_jump_the_queue, dead_handoffs_are_retried, operators_revoke_stuck_claims,
            heartbeats_carry_progress, records_carry_their_trace_context,
            metrics_count_what_happened,
        );
    };
    ($make:expr) => {
        $crate::conformance_tests!(optional Some($make));
    };
    (@cases (optional $make:expr); $($case:ident),+ $(,)?) => {
        $(
            #[test]
            fn $case() {
                // Kept alive for the whole case: it may own the store's files.
                let Some(fixture) = $make else { return };
                $crate::store::conformance::$case($crate::store::conformance::Fixture::store(&fixture));
            }
        )+
    };
}

/// What a conformance case runs on: a store, and whatever must outlive it (a temp folder).
pub trait Fixture {
    /// The store under test.
    fn store(&self) -> Store;
}

impl Fixture for Store {
    fn store(&self) -> Store {
        self.clone()
    }
}

impl<T> Fixture for (Store, T) {
    fn store(&self) -> Store {
        self.0.clone()
    }
}

/// A store on a manual clock, for deterministic time.
fn timed(store: Store) -> (Store, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::at_epoch());
    (store.with_clock(clock.clone()), clock)
}

/// Everything a store holds, to prove that a refused call changed nothing.
fn snapshot(store: &Store) -> (Vec<Handoff>, Vec<Event>) {
    (
        store.list(&ListFilter::default()).unwrap(),
        store.events(None).unwrap(),
    )
}

fn rich(task: &str) -> NewHandoff {
    let mut metadata = crate::Metadata::new();
    metadata.insert(
        "nested".into(),
        serde_json::json!({"list": [1, 2.5, null, true, "x"], "z": {"a": {}}, "a": -3}),
    );
    NewHandoff::new(task, "Finish the migration")
        .from_agent("claude")
        .to_agent("gemini")
        .session_id("sess-1")
        .reason(Reason::ContextLimit { percent: 85 })
        .context_usage(85)
        .progress("Schema done, data half moved.")
        .completed(["schema", "copy users"])
        .pending(["copy orders", "verify counts"])
        .decisions(["keep ids stable"])
        .assumptions(["no writes during the move"])
        .warnings(["orders table is large"])
        .errors(["timeout on batch 7"])
        .blockers(["waiting for a maintenance window"])
        .files(["migrate.sql"])
        .instructions("Resume at batch 7 with smaller batches.")
        .metadata(metadata)
}

fn kind_of(err: &Error) -> ErrorKind {
    err.kind()
}

/// A scripted verifier for the curation cases: facts mentioning `backoff` and every
/// conversation pass; anything else fails.
struct ScoresBackoff;

impl crate::curation::Verifier for ScoresBackoff {
    fn name(&self) -> &str {
        "scores-backoff"
    }
    fn verify(
        &mut self,
        item: crate::curation::VerifyItem<'_>,
    ) -> crate::Result<crate::curation::Score> {
        use crate::curation::VerifyItem;
        let score = match item {
            VerifyItem::Fact(f) if f.text.contains("backoff") => 0.9,
            VerifyItem::Fact(_) => 0.1,
            VerifyItem::Conversation(..) => 0.8,
        };
        Ok(crate::curation::Score {
            score,
            explanation: Some("scripted".into()),
        })
    }
}

fn plain_fact(text: &str) -> crate::curation::NewFact {
    crate::curation::NewFact {
        text: text.into(),
        confidence: None,
        source: None,
    }
}
