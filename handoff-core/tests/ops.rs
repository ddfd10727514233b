//! The operation descriptions: arguments read from JSON with every problem at once, the same
//! names every face shows, and the catalog the faces are derived from.

#![allow(clippy::unwrap_used)]

use handoff_core::ops::{self, Arguments, Operation};
use handoff_core::{ErrorKind, Limits, Reason, Store};
use serde_json::{Value, json};

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

#[test]
fn create_reads_the_face_names_into_record_fields() {
    let store = Store::memory();
    let h = ops::Create::call(
        &store,
        json!({"task_id": "t1", "goal": "g", "decisions": ["d"], "errors": ["e"],
               "files": ["f.rs"], "context_pct": 85, "progress": "half",
               "reason": "context_limit", "from_agent": "claude", "kind": "partial"}),
    )
    .unwrap();
    assert_eq!(h.key_decisions, ["d"]);
    assert_eq!(h.unresolved_errors, ["e"]);
    assert_eq!(h.modified_files, ["f.rs"]);
    assert_eq!(h.context_usage_percent, Some(85));
    assert_eq!(h.progress_summary, "half");
    assert_eq!(h.reason, Reason::ContextLimit { percent: 85 });
    assert_eq!(h.from_agent.as_deref(), Some("claude"));
}

#[test]
fn every_problem_is_reported_at_once_by_argument_name() {
    let store = Store::memory();
    let err = ops::Create::call(
        &store,
        json!({"task_id": "t1", "goal": "", "completed": ["ok", 1, "ok", false],
               "kind": "sideways", "context_pct": 300, "expires_at": "tomorrow",
               "completed_steps": [], "from_agent": " padded"}),
    )
    .unwrap_err();
    let got = problems(&err);
    let names: Vec<&str> = got.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        names,
        [
            "completed_steps",
            "completed[1]",
            "completed[3]",
            "kind",
            "context_pct",
            "expires_at",
            "from_agent",
            "goal"
        ],
        "{got:?}"
    );
    let rule = |field: &str| got.iter().find(|(f, _)| f == field).unwrap().1.clone();
    assert_eq!(rule("completed[1]"), "must be a string");
    assert!(
        rule("kind").starts_with("must be one of full, partial"),
        "{}",
        rule("kind")
    );
    assert_eq!(rule("context_pct"), "must be a whole number from 0 to 100");
    assert!(rule("expires_at").contains("RFC 3339"));
    assert_eq!(
        rule("completed_steps"),
        "is not an argument of this operation"
    );
    assert_eq!(rule("goal"), "must not be empty");
    assert!(
        store.list(&Default::default()).unwrap().is_empty(),
        "nothing written"
    );
}

#[test]
fn missing_and_mistyped_required_arguments() {
    let err = ops::CreateArgs::read(json!({"goal": 5}), &Limits::default()).unwrap_err();
    assert_eq!(fields(&err), ["goal", "task_id"]);
    let err = ops::CreateArgs::read(json!([1]), &Limits::default()).unwrap_err();
    assert_eq!(fields(&err), ["arguments"]);
    assert!(ops::ReapArgs::read(Value::Null, &Limits::default()).is_ok());
}

#[test]
fn record_rules_come_back_under_argument_names() {
    let store = Store::memory().with_limits(Limits {
        max_list_items: 2,
        ..Limits::default()
    });
    let err = ops::Create::call(
        &store,
        json!({"task_id": "t", "goal": "g", "completed": ["a", "b", "c"], "pending": [""]}),
    )
    .unwrap_err();
    let names = fields(&err);
    assert!(names.contains(&"completed".to_owned()), "{names:?}");
    assert!(names.iter().all(|f| !f.contains("_steps")), "{names:?}");
}

#[test]
fn claims_are_settled_from_a_reference() {
    let store = Store::memory();
    let h = ops::Create::call(&store, json!({"task_id": "t", "goal": "g"})).unwrap();
    let claim = ops::Claim::call(
        &store,
        json!({"id": h.id, "agent": "b", "lease_seconds": 30}),
    )
    .unwrap();
    let reference = json!({"handoff_id": h.id, "token": claim.token,
                           "secret": claim.secret.expose(), "lease_seconds": 30});
    ops::Heartbeat::call(&store, json!({"claim": reference})).unwrap();
    let done = ops::Complete::call(&store, json!({"claim": reference, "outcome": "done"})).unwrap();
    assert_eq!(done.outcome.as_deref(), Some("done"));

    let err = ops::Release::call(
        &store,
        json!({"claim": {"handoff_id": h.id, "token": "1", "secret": "nope"}, "reason": 3}),
    )
    .unwrap_err();
    let got = problems(&err);
    let names: Vec<&str> = got.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(names, ["claim.token", "reason", "claim.secret"], "{got:?}");
    assert!(got[2].1.contains("hcs_"), "{got:?}");

    let err = ops::Claim::call(
        &store,
        json!({"id": h.id, "agent": "b", "lease_seconds": 0}),
    )
    .unwrap_err();
    assert_eq!(fields(&err), ["lease_seconds"]);
}

#[test]
fn checkpoint_takes_the_content_of_create() {
    let store = Store::memory();
    let h = ops::Checkpoint::call(
        &store,
        json!({"task_id": "t", "agent": "a", "goal": "g", "completed": ["x"],
               "priority_items": ["p"]}),
    )
    .unwrap();
    assert_eq!(h.completed_steps, ["x"]);
    assert_eq!(h.priority_items, ["p"]);
    let err = ops::Checkpoint::call(
        &store,
        json!({"task_id": "t", "agent": "a", "goal": "g", "to_agent": "b"}),
    )
    .unwrap_err();
    assert_eq!(fields(&err), ["to_agent"]);
}

#[test]
fn multiple_has_one_spelling_and_accepts_the_old_one() {
    for (given, expected) in [
        ("first_wins", "first_wins"),
        ("first", "first_wins"),
        ("error", "error"),
    ] {
        let args = ops::DetectArgs::read(
            json!({"response": {}, "from_agent": "a", "multiple": given}),
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(args.multiple.unwrap().as_str(), expected);
    }
    let err = ops::DetectArgs::read(
        json!({"response": {}, "from_agent": "a", "multiple": "last"}),
        &Limits::default(),
    )
    .unwrap_err();
    assert_eq!(
        problems(&err),
        [(
            "multiple".to_owned(),
            "must be one of error, first_wins".to_owned()
        )]
    );
}

#[test]
fn the_catalog_describes_every_operation() {
    let catalog = ops::catalog();
    let names: Vec<&str> = catalog.iter().map(|o| o.name).collect();
    assert!(
        names.contains(&"create") && names.contains(&"claim_next"),
        "{names:?}"
    );
    for op in &catalog {
        assert!(!op.description().is_empty(), "{} has no doc", op.name);
        let properties = op.arguments.get("properties").cloned().unwrap_or(json!({}));
        for p in op.positional {
            assert!(
                properties.get(p).is_some(),
                "{}: positional {p} is no argument",
                op.name
            );
        }
        for (name, schema) in properties.as_object().unwrap() {
            assert!(
                schema.get("description").is_some() || schema.get("$ref").is_some(),
                "{}.{name} has no doc",
                op.name
            );
        }
    }
    let create = &catalog[0];
    // The goal may be left out: the task's is taken (seed 001's calls carry none).
    assert_eq!(create.arguments["required"], json!(["task_id"]));
}

/// The fixture every face's test feeds through its own door.
#[test]
fn one_bad_create_gives_the_shared_problem_list() {
    let fixture: Value = serde_json::from_str(include_str!("fixtures/bad_create.json")).unwrap();
    let store = Store::memory();
    let err = ops::Create::call(&store, fixture["input"].clone()).unwrap_err();
    let expected: Vec<(String, String)> =
        serde_json::from_value(fixture["problems"].clone()).unwrap();
    assert_eq!(problems(&err), expected);
}

#[test]
fn reading_goes_on_past_a_missing_argument_and_knows_aliases() {
    let store = Store::memory();
    let err = ops::Release::call(
        &store,
        json!({"claim": {"handoff_id": "h", "token": 1, "secret": "nope", "colour": 1}}),
    )
    .unwrap_err();
    assert_eq!(fields(&err), ["claim.colour", "reason", "claim.secret"]);
    let args = ops::EventsArgs::read(json!({"id": "h1"}), &Limits::default()).unwrap();
    assert_eq!(args.handoff_id.as_deref(), Some("h1"));
}

#[test]
fn a_future_expiry_is_judged_by_the_store_clock() {
    use std::sync::Arc;
    let clock = Arc::new(handoff_core::ManualClock::at_epoch());
    let store = Store::memory().with_clock(clock.clone());
    let at = (store.now() + chrono::Duration::hours(1)).to_rfc3339();
    ops::Create::call(
        &store,
        json!({"task_id": "t", "goal": "g", "expires_at": at}),
    )
    .unwrap();
    let past = (store.now() - chrono::Duration::hours(1)).to_rfc3339();
    let err = ops::Create::call(
        &store,
        json!({"task_id": "t", "goal": "g", "expires_at": past}),
    )
    .unwrap_err();
    assert_eq!(fields(&err), ["expires_at"]);
}

#[test]
fn claim_next_waits_when_asked() {
    let store = Store::memory();
    let none = ops::ClaimNext::call(&store, json!({"agent": "w", "wait_seconds": 0.05})).unwrap();
    assert!(none.is_none());
    let err = ops::ClaimNext::call(&store, json!({"agent": "w", "wait_seconds": -1})).unwrap_err();
    assert_eq!(fields(&err), ["wait_seconds"]);
}
