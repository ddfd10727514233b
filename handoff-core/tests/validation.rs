//! Bad input: one test per validation rule, hostile JSON, and proof that refused input leaves
//! the store unchanged.
#![allow(clippy::unwrap_used)]

use chrono::{TimeDelta, Utc};
use handoff_core::{Error, Handoff, Limits, NewHandoff, Problem, Store};
use serde_json::{Value, json};

fn record() -> Handoff {
    NewHandoff::new("task-1", "Ship it")
        .from_agent("claude")
        .to_agent("gemini")
        .into_record("h-1".into(), Utc::now())
}

/// The problems a record breaks, as (field, rule) pairs.
fn problems(h: &Handoff) -> Vec<Problem> {
    match h.validate(&Limits::default()) {
        Ok(()) => Vec::new(),
        Err(Error::Validation { problems }) => problems,
        Err(other) => panic!("expected a validation error, got {other}"),
    }
}

fn fields(h: &Handoff) -> Vec<String> {
    problems(h).into_iter().map(|p| p.field).collect()
}

fn json_problems(json: &str) -> Vec<Problem> {
    match Handoff::from_json(json) {
        Err(Error::Validation { problems }) => problems,
        other => panic!("expected a validation error, got {other:?}"),
    }
}

#[test]
fn a_good_record_passes() {
    assert!(problems(&record()).is_empty());
}

#[test]
fn goal_must_not_be_empty() {
    let mut h = record();
    h.goal = "  \n".into();
    assert_eq!(problems(&h), [Problem::new("goal", "must not be empty")]);
}

#[test]
fn ids_must_match_the_ident_rule() {
    for bad in ["", "../x", "a/b", "..", "white space", &"x".repeat(300)] {
        let mut h = record();
        h.id = bad.into();
        h.task_id = bad.into();
        h.session_id = Some(bad.into());
        h.parent_id = Some(bad.into());
        assert_eq!(
            fields(&h),
            ["id", "task_id", "session_id", "parent_id"],
            "{bad:?}"
        );
        assert!(problems(&h)[0].rule.contains("A-Z a-z 0-9"));
    }
}

#[test]
fn agent_names_are_display_names() {
    for good in [
        "Tech Support",
        "Billing agent",
        "a/b",
        "../x",
        "연구원",
        &"é".repeat(128),
    ] {
        let mut h = record();
        h.from_agent = Some(good.into());
        h.to_agent = Some(good.into());
        h.claimed_by = Some(good.into());
        assert!(fields(&h).is_empty(), "{good:?}: {:?}", fields(&h));
    }
    for bad in [
        "",
        " ",
        " lead",
        "trail ",
        "tab\there",
        "nul\0",
        &"x".repeat(129),
        // Names that would show as another's.
        "gem\u{202e}ini",
        "gemini\u{200b}",
        "\u{feff}gemini",
        "gem\u{2066}ini",
    ] {
        let mut h = record();
        h.from_agent = Some(bad.into());
        h.to_agent = Some(bad.into());
        h.claimed_by = Some(bad.into());
        assert_eq!(
            fields(&h),
            ["from_agent", "to_agent", "claimed_by"],
            "{bad:?}"
        );
        assert!(problems(&h)[0].rule.contains("printable"));
    }
}

#[test]
fn context_usage_percent_is_at_most_100() {
    let mut h = record();
    h.context_usage_percent = Some(101);
    assert_eq!(fields(&h), ["context_usage_percent"]);
    h.context_usage_percent = Some(100);
    assert!(problems(&h).is_empty());
}

#[test]
fn a_field_over_its_size_limit() {
    let mut h = record();
    h.progress_summary = "x".repeat(64 * 1024 + 1);
    let found = problems(&h);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].field, "progress_summary");
    assert!(
        found[0].rule.contains("at most 65536 bytes"),
        "{}",
        found[0].rule
    );
}

#[test]
fn a_list_item_over_its_size_limit_names_its_index() {
    let mut h = record();
    h.pending_steps = vec!["ok".into(), "y".repeat(70_000)];
    assert_eq!(fields(&h), ["pending_steps[1]"]);
}

#[test]
fn a_list_with_too_many_items() {
    let mut h = record();
    h.warnings = vec!["w".into(); 1025];
    assert_eq!(fields(&h), ["warnings"]);
}

#[test]
fn the_whole_record_over_its_size_limit() {
    let mut h = record();
    let big = "z".repeat(60 * 1024);
    h.completed_steps = vec![big.clone(), big.clone()];
    h.key_decisions = vec![big.clone(), big.clone()];
    h.assumptions = vec![big];
    assert_eq!(fields(&h), ["record"]);
    let limits = Limits {
        max_record_bytes: 1024 * 1024,
        ..Limits::default()
    };
    assert!(h.validate(&limits).is_ok(), "the limit is configurable");
}

#[test]
fn metadata_nesting_is_bounded() {
    let mut value = json!(1);
    for _ in 0..100 {
        value = json!([value]);
    }
    let mut h = record();
    h.metadata.insert("deep".into(), value);
    assert_eq!(fields(&h), ["metadata"]);
}

#[test]
fn expires_at_must_be_after_created_at() {
    let mut h = record();
    h.expires_at = Some(h.created_at - TimeDelta::seconds(1));
    assert_eq!(fields(&h), ["expires_at"]);
}

#[test]
fn max_attempts_is_at_least_one() {
    let mut h = record();
    h.max_attempts = 0;
    assert_eq!(fields(&h), ["max_attempts"]);
}

#[test]
fn wrong_schema_version() {
    let mut h = record();
    h.schema_version = 2;
    assert_eq!(
        problems(&h),
        [Problem::new("schema_version", "must be 1, is 2")]
    );
    let mut value: Value = serde_json::from_str(&record().to_json()).unwrap();
    value["schema_version"] = json!(7);
    assert_eq!(json_problems(&value.to_string())[0].field, "schema_version");
}

#[test]
fn every_problem_is_reported_at_once() {
    let mut h = record();
    h.goal = String::new();
    h.to_agent = Some("no\ncontrol".into());
    h.context_usage_percent = Some(150);
    h.max_attempts = 0;
    assert_eq!(
        fields(&h),
        ["to_agent", "goal", "context_usage_percent", "max_attempts"]
    );
}

#[test]
fn json_round_trips_unchanged() {
    let mut h = record();
    h.metadata.insert(
        "plan".into(),
        json!({"z": 1, "a": [1.5, "two", null, {"deep": true}], "m": -0.0}),
    );
    h.reason = "error: disk full: /var".parse().unwrap();
    let back = Handoff::from_json(&h.to_json()).unwrap();
    assert_eq!(back, h);
    assert_eq!(back.to_json(), h.to_json());
}

#[test]
fn unknown_enum_values_name_their_field() {
    let mut value: Value = serde_json::from_str(&record().to_json()).unwrap();
    value["kind"] = json!("telepathy");
    let found = json_problems(&value.to_string());
    assert_eq!(found[0].field, "kind");
    assert!(
        found[0].rule.contains("unknown variant"),
        "{}",
        found[0].rule
    );

    let mut value: Value = serde_json::from_str(&record().to_json()).unwrap();
    value["status"] = json!("sleeping");
    assert_eq!(json_problems(&value.to_string())[0].field, "status");

    for reason in ["context_limit_150", "timeout_s", "timeout_+5s", "bored"] {
        let mut value: Value = serde_json::from_str(&record().to_json()).unwrap();
        value["reason"] = json!(reason);
        assert_eq!(
            json_problems(&value.to_string())[0].field,
            "reason",
            "{reason}"
        );
    }
}

#[test]
fn reasons_render_and_parse() {
    for text in [
        "context_limit_85",
        "timeout_300s",
        "explicit",
        "error: boom",
        "task_complete",
    ] {
        let reason: handoff_core::Reason = text.parse().unwrap();
        assert_eq!(reason.to_string(), text);
    }
}

#[test]
fn unknown_fields_and_wrong_types_name_their_field() {
    let mut value: Value = serde_json::from_str(&record().to_json()).unwrap();
    value["favourite_colour"] = json!("blue");
    assert!(
        json_problems(&value.to_string())[0]
            .rule
            .contains("unknown field")
    );

    let mut value: Value = serde_json::from_str(&record().to_json()).unwrap();
    value["pending_steps"] = json!(["fine", 3]);
    assert_eq!(
        json_problems(&value.to_string())[0].field,
        "pending_steps[1]"
    );

    for bad in ["", "[]", "null", "{", "{\"id\": 1}", "{} trailing"] {
        assert!(!json_problems(bad).is_empty(), "{bad:?}");
    }
}

#[test]
fn deeply_nested_json_is_refused_before_parsing() {
    let deep = format!(
        "{{\"metadata\": {}1{}}}",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let found = json_problems(&deep);
    assert_eq!(found[0].field, "record");
    assert!(found[0].rule.contains("nest"), "{}", found[0].rule);
    // Unbalanced, hostile text is refused just the same.
    assert!(!json_problems(&"{".repeat(1_000_000)).is_empty());
}

#[test]
fn oversized_json_is_refused_before_parsing() {
    let huge = format!("{{\"goal\": \"{}\"}}", "x".repeat(300 * 1024));
    let found = json_problems(&huge);
    assert_eq!(found[0].field, "record");
    assert!(found[0].rule.contains("at most 262144 bytes"));
}

#[test]
fn refused_creates_leave_the_sqlite_store_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("h.db")).unwrap();
    store.create(NewHandoff::new("t", "g")).unwrap();
    let before = (
        store.list(&Default::default()).unwrap(),
        store.events(None).unwrap(),
    );
    let big = "x".repeat(60 * 1024);
    let refused = [
        NewHandoff::new("t", ""),
        NewHandoff::new("t", "g").context_usage(101),
        NewHandoff::new("t", "g").pending(vec![big; 5]),
        NewHandoff::new("t", "g").id("../escape"),
        NewHandoff::new("t", "g").max_attempts(0),
    ];
    for new in refused {
        let err = store.create(new).unwrap_err();
        assert!(matches!(err, Error::Validation { .. }), "{err}");
    }
    let after = (
        store.list(&Default::default()).unwrap(),
        store.events(None).unwrap(),
    );
    assert_eq!(before, after);
    // Nothing was written outside the store's own files.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.iter().all(|n| n.starts_with("h.db")), "{names:?}");
}

#[test]
fn markdown_has_the_sections_and_omits_empty_ones() {
    let h = NewHandoff::new("task-9", "Port the CLI")
        .from_agent("claude")
        .to_agent("gemini")
        .progress("Parser ported.")
        .completed(["parser"])
        .pending(["output", "tests"])
        .decisions(["clap over argh"])
        .errors(["flaky test in ci"])
        .files(["src/main.rs"])
        .instructions("Keep the flags stable.")
        .into_record("h-9".into(), Utc::now());
    let md = h.to_markdown();
    let order = [
        "## Meta",
        "## Current Goal",
        "## Progress",
        "## Completed",
        "## Pending",
        "## Key Decisions",
        "## Unresolved Errors",
        "## Files",
        "## Instructions",
    ];
    let positions: Vec<usize> = order.iter().map(|s| md.find(s).expect(s)).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{md}");
    assert!(md.contains("- From: claude → To: gemini"));
    assert!(md.contains("- [x] parser\n"));
    assert!(md.contains("- [ ] output\n- [ ] tests\n"));
    assert!(md.contains("- modified: `src/main.rs`"));
    for absent in [
        "## Warnings",
        "## Assumptions",
        "## Blockers",
        "## Success Criteria",
    ] {
        assert!(!md.contains(absent), "{absent} should be omitted:\n{md}");
    }
}

#[test]
fn extreme_durations_are_errors_not_panics() {
    use std::time::Duration;
    let store = Store::memory();
    let h = store.create(NewHandoff::new("t", "g")).unwrap();
    for lease in [
        Duration::ZERO,
        Duration::MAX,
        Duration::from_secs(400 * 24 * 3600),
    ] {
        let err = store.claim(&h.id, "a", lease).unwrap_err();
        assert!(
            matches!(&err, Error::Validation { problems } if problems[0].field == "lease_seconds"),
            "{err}"
        );
    }
    assert!(store.stalled(Duration::MAX).unwrap().is_empty());
    // A clock at the end of time refuses leases instead of overflowing.
    let clock = std::sync::Arc::new(handoff_core::ManualClock::new(
        chrono::DateTime::<Utc>::MAX_UTC,
    ));
    let late = Store::memory().with_clock(clock);
    let h = late.create(NewHandoff::new("t", "g")).unwrap();
    let err = late.claim(&h.id, "a", Duration::from_secs(60)).unwrap_err();
    assert!(matches!(err, Error::Validation { .. }), "{err}");
}

#[test]
fn a_record_converts_back_to_its_creation_input() {
    let mut h = record();
    h.metadata.insert("k".into(), json!([1, {"a": null}]));
    let again = NewHandoff::from(h.clone()).into_record(h.id.clone(), h.created_at);
    assert_eq!(again, h);
}
