//! The seeds' own calls (issue 47): seed 000's `masc_handover_*` arguments and seed 001's
//! `memory_handoff_*` arguments and `handoff_records` field names, read by the handoff
//! operations as other names of their own arguments, so that every face answers them.

#![allow(clippy::unwrap_used)]

use handoff_core::ops::{self, Arguments, Operation};
use handoff_core::{ErrorKind, Kind, Limits, Status, Store};
use serde_json::json;

fn problems(err: &handoff_core::Error) -> Vec<(String, String)> {
    assert_eq!(err.kind(), ErrorKind::Validation, "{err}");
    err.problems()
        .iter()
        .map(|p| (p.field.clone(), p.rule.clone()))
        .collect()
}

fn fields(err: &handoff_core::Error) -> Vec<String> {
    problems(err).into_iter().map(|(f, _)| f).collect()
}

/// Seed 001 §3.3 / §7.3 / §8: an escalation with no goal of its own on a task made first,
/// accepted by an expert, then listed as `accepted`.
#[test]
fn seed_001_create_accept_and_list() {
    let store = Store::memory();
    let task = ops::CreateTask::call(
        &store,
        json!({"name": "fix-oauth-token-refresh", "goal": "Fix the OAuth2 token refresh"}),
    )
    .unwrap();
    let task_id = task.header.id.clone();
    let h = ops::Create::call(
        &store,
        json!({
            "task_id": task_id,
            "from_agent_id": "agent-investigator",
            "handoff_type": "escalation",
            "instructions": "Found the issue in token_service.py:142",
            "blockers": ["Unclear OAuth2 state transition after refresh failure"],
            "priority_objectives": [1, 2],
        }),
    )
    .unwrap();
    assert_eq!(h.goal, "Fix the OAuth2 token refresh", "the task's goal");
    assert_eq!(h.from_agent.as_deref(), Some("agent-investigator"));
    assert_eq!(h.kind, Kind::Escalation);
    assert_eq!(h.priority_items, ["1", "2"]);

    // memory_handoff_list {task_id, status: 'pending'}
    let pending = ops::List::call(&store, json!({"task_id": task_id, "status": "pending"}));
    assert_eq!(pending.unwrap().len(), 1);

    // memory_handoff_accept {handoff_id, agent_id}: a claim.
    let claim = ops::Claim::call(
        &store,
        json!({"handoff_id": h.id, "agent_id": "agent-oauth-expert"}),
    )
    .unwrap();
    assert_eq!(claim.handoff.status, Status::Claimed);
    assert_eq!(
        claim.handoff.claimed_by.as_deref(),
        Some("agent-oauth-expert")
    );

    // `accepted` is seed 001's word for `claimed`.
    let accepted = ops::List::call(&store, json!({"task_id": task_id, "status": "accepted"}));
    let accepted = accepted.unwrap();
    assert_eq!(accepted.len(), 1);
    assert_eq!(accepted[0].id, h.id);
    assert_eq!("accepted".parse::<Status>().unwrap(), Status::Claimed);
    assert_eq!(Status::Claimed.as_str(), "claimed", "written as ever");

    // A later handoff of the task without a goal keeps the task's.
    let next = ops::Create::call(&store, json!({"task_id": task_id, "to_agent_id": "tester"}));
    let next = next.unwrap();
    assert_eq!(next.goal, "Fix the OAuth2 token refresh");
    assert_eq!(next.to_agent.as_deref(), Some("tester"));
}

/// Seed 000's tools: `masc_handover_create` is already spelled as `create`; list, claim and
/// get take `pending_only`, `handover_id` and `agent_name`.
#[test]
fn seed_000_list_claim_and_get() {
    let store = Store::memory();
    let h = ops::Create::call(
        &store,
        json!({"task_id": "task-001", "session_id": "session-xyz", "reason": "context_limit",
               "context_pct": 85, "goal": "Fix the SSR bug", "progress": "cause found",
               "completed": ["reproduced"], "pending": ["fix", "test"], "errors": [],
               "files": ["src/hooks/useLocalStorage.ts"]}),
    )
    .unwrap();
    let other = ops::Create::call(&store, json!({"task_id": "task-002", "goal": "g"})).unwrap();
    ops::Claim::call(&store, json!({"id": other.id, "agent": "claude"})).unwrap();

    let pending = ops::List::call(&store, json!({"pending_only": true})).unwrap();
    assert_eq!(pending.iter().map(|h| &h.id).collect::<Vec<_>>(), [&h.id]);
    assert_eq!(
        ops::List::call(&store, json!({"pending_only": false}))
            .unwrap()
            .len(),
        2
    );

    let claim =
        ops::Claim::call(&store, json!({"handover_id": h.id, "agent_name": "gemini"})).unwrap();
    assert_eq!(claim.handoff.claimed_by.as_deref(), Some("gemini"));
    let got = ops::Get::call(&store, json!({"handover_id": h.id})).unwrap();
    assert_eq!(got.id, h.id);
    // claim_next (masc_handover_claim without an id) by the same names.
    ops::Create::call(&store, json!({"task_id": "task-003", "goal": "g"})).unwrap();
    let next = ops::ClaimNext::call(&store, json!({"agent_name": "codex"})).unwrap();
    assert_eq!(next.unwrap().handoff.claimed_by.as_deref(), Some("codex"));
}

#[test]
fn a_name_and_its_other_name_together_are_refused_naming_both() {
    let limits = Limits::default();
    let err = ops::CreateArgs::read(
        json!({"task_id": "t", "goal": "g", "kind": "full", "handoff_type": "partial"}),
        &limits,
    )
    .unwrap_err();
    let found = problems(&err);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "handoff_type");
    assert!(
        found[0].1.contains("kind") && found[0].1.contains("another name"),
        "{found:?}"
    );

    // Two other names of one argument, without its own.
    let err = ops::ClaimArgs::read(
        json!({"id": "h", "agent_id": "a", "agent_name": "b"}),
        &limits,
    )
    .unwrap_err();
    assert_eq!(fields(&err), ["agent_name"]);

    // Every problem at once: the clash, and what else is wrong.
    let err = ops::CreateArgs::read(
        json!({"task_id": "t", "goal": "", "from_agent": "a", "from_agent_id": "b",
               "priority_objectives": [1, true]}),
        &limits,
    )
    .unwrap_err();
    let found = problems(&err);
    let names: Vec<&str> = found.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(names, ["from_agent_id", "priority_objectives[1]", "goal"]);
    assert_eq!(found[1].1, "must be a string or a whole number");

    // `pending_only` says what `status` says.
    let err = ops::ListArgs::read(json!({"pending_only": true, "status": "pending"}), &limits)
        .unwrap_err();
    assert_eq!(fields(&err), ["pending_only"]);
    assert!(problems(&err)[0].1.contains("status"));

    // A wrong value under another name is named as the caller spelled it.
    let err = ops::CreateArgs::read(
        json!({"task_id": "t", "goal": "g", "handoff_type": "sideways"}),
        &limits,
    )
    .unwrap_err();
    assert_eq!(fields(&err), ["handoff_type"]);
    // Unknown names are still unknown.
    let err = ops::ClaimArgs::read(json!({"id": "h", "agent_nick": "a"}), &limits).unwrap_err();
    assert_eq!(fields(&err), ["agent_nick", "agent"]);
}

#[test]
fn a_goal_is_required_when_the_task_has_none_to_take() {
    let store = Store::memory();
    let err =
        ops::Create::call(&store, json!({"task_id": "t-new", "handoff_type": "full"})).unwrap_err();
    assert_eq!(fields(&err), ["goal"]);
    assert!(problems(&err)[0].1.starts_with("is required"));
    // An empty goal is still refused, not replaced.
    let err = ops::Create::call(&store, json!({"task_id": "t-new", "goal": ""})).unwrap_err();
    assert_eq!(
        problems(&err),
        [("goal".into(), "must not be empty".into())]
    );
    // A checkpoint (seed 001's `checkpoint(task_id, agent_id)`) keeps the task's goal too.
    ops::Create::call(&store, json!({"task_id": "t-new", "goal": "Ship it"})).unwrap();
    let saved = ops::Checkpoint::call(
        &store,
        json!({"task_id": "t-new", "agent_id": "claude", "progress": "half"}),
    )
    .unwrap();
    assert_eq!(saved.goal, "Ship it");
    assert_eq!(saved.from_agent.as_deref(), Some("claude"));
    // create_many names an item's problem by its place.
    let err = ops::CreateMany::call(
        &store,
        json!({"items": [{"task_id": "t-new"}, {"task_id": "t-none"}]}),
    )
    .unwrap_err();
    assert_eq!(fields(&err), ["items[1].goal"]);
    let err = ops::CreateManyArgs::read(
        json!({"items": [{"task_id": "t", "goal": "g", "to_agent": "a", "to_agent_id": "b"}]}),
        &Limits::default(),
    )
    .unwrap_err();
    assert_eq!(fields(&err), ["items[0].to_agent_id"]);
}

#[test]
fn the_schema_lists_the_other_names() {
    let catalog = ops::catalog();
    let aliases = |op: &str, argument: &str| -> Vec<String> {
        let info = catalog.iter().find(|o| o.name == op).unwrap();
        let property = &info.arguments["properties"][argument];
        property["x-aliases"]
            .as_array()
            .map(|a| a.iter().map(|v| v.as_str().unwrap().to_owned()).collect())
            .unwrap_or_default()
    };
    assert_eq!(aliases("create", "from_agent"), ["from_agent_id"]);
    assert_eq!(aliases("create", "to_agent"), ["to_agent_id"]);
    assert_eq!(aliases("create", "kind"), ["handoff_type"]);
    assert_eq!(aliases("create", "priority_items"), ["priority_objectives"]);
    assert_eq!(aliases("create", "session_id"), ["from_session_id"]);
    assert_eq!(aliases("claim", "id"), ["handoff_id", "handover_id"]);
    assert_eq!(aliases("claim", "agent"), ["agent_id", "agent_name"]);
    assert_eq!(aliases("get", "id"), ["handoff_id", "handover_id"]);
    assert_eq!(aliases("checkpoint", "agent"), ["agent_id"]);
    let list = catalog.iter().find(|o| o.name == "list").unwrap();
    assert_eq!(
        list.arguments["properties"]["pending_only"]["type"],
        "boolean"
    );
    // The goal may be left out (the task's is taken); the task may not.
    let create = catalog.iter().find(|o| o.name == "create").unwrap();
    assert_eq!(create.arguments["required"], json!(["task_id"]));
}
