//! The context builder: budget, mandatory sections, priority and recency, manifest, redaction,
//! determinism.
#![allow(clippy::unwrap_used)]

use chrono::{TimeDelta, Utc};
use handoff_core::context::{
    Budget, BudgetUnit, ContextBuilder, DropReason, ItemKind, Message, Packet, Summarizer,
    SummaryRequest,
};
use handoff_core::{Handoff, NewHandoff};
use proptest::prelude::*;

fn handoff() -> Handoff {
    NewHandoff::new("t1", "Finish the billing migration")
        .pending(["port refunds", "run the billing tests"])
        .instructions("Start with refunds.")
        .blockers(["waiting for the staging database"])
        .progress("Invoices are done.")
        .completed(["schema", "invoices"])
        .decisions(["keep ids stable"])
        .warnings(["refunds round differently"])
        .into_record("h1".into(), Utc::now())
}

fn messages(n: usize) -> Vec<Message> {
    let start = Utc::now();
    (0..n)
        .map(|i| Message {
            role: if i % 2 == 0 { "user" } else { "assistant" }.into(),
            content: format!("message number {i} with some words to fill the context window"),
            at: Some(start + TimeDelta::seconds(i as i64)),
            ..Message::default()
        })
        .collect()
}

/// Every offered id appears exactly once across included, truncated and dropped.
fn accounted(packet: &Packet, offered: usize) {
    let m = &packet.manifest;
    let mut ids: Vec<&str> = m.included.iter().map(String::as_str).collect();
    ids.extend(m.truncated.iter().map(|t| t.id.as_str()));
    ids.extend(m.summarized.iter().map(|t| t.id.as_str()));
    ids.extend(m.dropped.iter().map(|d| d.id.as_str()));
    assert_eq!(ids.len(), offered, "{m:?}");
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), offered, "an id is listed twice: {m:?}");
}

#[test]
fn everything_fits_in_a_large_budget() {
    let mut b = ContextBuilder::new(10_000);
    b.add_handoff(&handoff())
        .add_messages(messages(4))
        .add_facts(["the API is v2"]);
    let packet = b.build();
    assert!(packet.manifest.dropped.is_empty() && packet.manifest.truncated.is_empty());
    accounted(&packet, 8 + 4 + 1);
    let md = packet.to_markdown();
    for heading in [
        "## Current Goal",
        "## Pending",
        "## Instructions",
        "## Blockers",
        "## Conversation",
        "## Fact",
    ] {
        assert!(md.contains(heading), "{heading} missing:\n{md}");
    }
    // Mandatory sections come first, the conversation in order.
    assert!(md.find("## Current Goal").unwrap() < md.find("## Progress").unwrap());
    assert!(md.find("message number 0").unwrap() < md.find("message number 3").unwrap());
}

#[test]
fn a_tight_budget_keeps_mandatory_sections_and_the_newest_messages() {
    let mut b = ContextBuilder::new(150);
    b.add_handoff(&handoff()).add_messages(messages(40));
    let packet = b.build();
    assert!(packet.tokens <= 150, "{}", packet.tokens);
    accounted(&packet, 8 + 40);
    let md = packet.to_markdown();
    assert!(md.contains("Finish the billing migration") && md.contains("port refunds"));
    let kept: Vec<usize> = packet
        .sections
        .iter()
        .filter(|s| s.kind == ItemKind::Message)
        .map(|s| s.text.split_whitespace().nth(2).unwrap().parse().unwrap())
        .collect();
    assert!(!kept.is_empty());
    // Newest kept when cutting: the kept messages are the last ones.
    let first_kept = kept[0];
    assert_eq!(kept, (first_kept..40).collect::<Vec<_>>());
    assert!(
        packet
            .manifest
            .dropped
            .iter()
            .any(|d| d.id == "message-8" && d.reason == DropReason::Budget)
    );
}

#[test]
fn mandatory_sections_are_truncated_visibly_when_they_alone_overflow() {
    let mut long = handoff();
    long.goal = "migrate ".repeat(400);
    let mut b = ContextBuilder::new(60);
    b.add_handoff(&long);
    let packet = b.build();
    assert!(packet.tokens <= 60, "{}", packet.tokens);
    let goal = packet.sections.iter().find(|s| s.id == "h1#goal").unwrap();
    assert!(goal.text.ends_with("… [truncated]"), "{}", goal.text);
    let cut = packet
        .manifest
        .truncated
        .iter()
        .find(|t| t.id == "h1#goal")
        .unwrap();
    assert!(cut.kept_tokens < cut.original_tokens);
    for id in ["h1#pending_steps", "h1#instructions", "h1#blockers"] {
        assert!(packet.sections.iter().any(|s| s.id == id), "{id} missing");
    }
}

#[test]
fn priority_beats_recency() {
    let mut b = ContextBuilder::new(30);
    b.add_item(
        "old but important ".repeat(4),
        90,
        Some(Utc::now() - TimeDelta::days(1)),
    );
    b.add_item("new and trivial ".repeat(4), 10, Some(Utc::now()));
    let packet = b.build();
    assert_eq!(packet.manifest.included, ["item-0"]);
    assert_eq!(packet.manifest.dropped[0].id, "item-1");
}

#[test]
fn secrets_are_redacted_and_listed() {
    let mut b = ContextBuilder::new(1_000);
    b.add_messages([Message {
        role: "user".into(),
        content: "use AKIAZ3MSJV6WIBXQNJKH and password=hunter2hunter2".into(),
        id: Some("m1".into()),
        ..Message::default()
    }]);
    let packet = b.build();
    let md = packet.to_markdown();
    assert!(!md.contains("AKIAZ3MSJV6WIBXQNJKH") && !md.contains("hunter2"));
    let rules: Vec<(&str, &str, usize)> = packet
        .manifest
        .redacted
        .iter()
        .map(|r| (r.id.as_str(), r.rule.as_str(), r.count))
        .collect();
    assert_eq!(
        rules,
        [
            ("m1", "aws-access-key-id", 1),
            ("m1", "password-assignment", 1)
        ]
    );

    let mut plain = ContextBuilder::new(1_000).redact(false);
    plain.add_facts(["AKIAZ3MSJV6WIBXQNJKH"]);
    assert!(plain.build().to_markdown().contains("AKIAZ3MSJV6WIBXQNJKH"));
}

#[test]
fn chat_messages_and_json() {
    let mut b = ContextBuilder::new(1_000);
    b.add_handoff(&handoff()).add_messages(messages(2));
    let packet = b.build();
    let chat = packet.to_messages();
    assert_eq!(chat[0]["role"], "system");
    assert!(
        chat[0]["content"]
            .as_str()
            .unwrap()
            .contains("## Current Goal")
    );
    assert_eq!(chat[1]["role"], "user");
    assert_eq!(chat[2]["role"], "assistant");
    let back: Packet = serde_json::from_str(&packet.to_json()).unwrap();
    assert_eq!(back, packet);
}

proptest! {
    #[test]
    fn deterministic_bounded_and_fully_accounted(
        budget in 0usize..400,
        texts in proptest::collection::vec((".{0,80}", 0i32..100), 0..30),
    ) {
        let make = || {
            let mut b = ContextBuilder::new(budget);
            b.add_handoff(&handoff());
            for (text, priority) in &texts {
                b.add_item(text.clone(), *priority, None);
            }
            b.build()
        };
        let packet = make();
        prop_assert_eq!(&packet, &make());
        accounted(&packet, 8 + texts.len());
        let mandatory_floor: usize = packet.manifest.truncated.iter().map(|t| t.kept_tokens).sum();
        prop_assert!(packet.tokens <= budget.max(mandatory_floor + 40), "{} > {}", packet.tokens, budget);
    }
}

#[test]
fn a_character_budget_bounds_the_markdown() {
    for budget in [120, 400, 2000] {
        let mut b = ContextBuilder::with_budget(Budget::Chars(budget));
        b.add_handoff(&handoff()).add_messages(messages(40));
        for i in 0..30 {
            b.add_item(format!("note {i} about the refunds"), 40, None);
        }
        let packet = b.build();
        let md = packet.to_markdown();
        assert_eq!(packet.unit, BudgetUnit::Chars);
        assert_eq!(packet.tokens, md.chars().count());
        assert!(
            md.chars().count() <= budget
                // Only the mandatory sections' headings and cut marks may not fit.
                || (budget < 200 && packet.sections.iter().all(|s| s.id.starts_with("h1#"))),
            "{budget}: {} chars\n{md}",
            md.chars().count()
        );
        accounted(&packet, 8 + 40 + 30);
    }
}

#[test]
fn the_best_item_that_does_not_fit_is_cut_a_list_keeping_its_latest_entries() {
    let mut h = handoff();
    h.completed_steps = (0..50).map(|i| format!("step {i} done")).collect();
    // Room for the mandatory sections and part of the completed steps, nothing else.
    let mut b = ContextBuilder::new(120);
    b.add_handoff(&h);
    let packet = b.build();
    let cut = packet
        .manifest
        .truncated
        .iter()
        .find(|t| t.id == "h1#completed_steps");
    let section = packet
        .sections
        .iter()
        .find(|s| s.id == "h1#completed_steps");
    if let (Some(cut), Some(section)) = (cut, section) {
        assert!(cut.kept_tokens < cut.original_tokens);
        assert!(
            section.text.starts_with("[truncated] …"),
            "{}",
            section.text
        );
        assert!(section.text.ends_with("step 49 done"), "{}", section.text);
    } else {
        // Something of higher priority took the room: it is the one cut.
        assert!(
            !packet.manifest.truncated.is_empty(),
            "{:?}",
            packet.manifest
        );
    }
    assert!(packet.tokens <= 120, "{}", packet.tokens);
    accounted(&packet, 8);
}

struct Shorten;
impl Summarizer for Shorten {
    fn summarize(&self, request: &SummaryRequest<'_>) -> handoff_core::Result<String> {
        assert!(request.budget > 0 && !request.text.is_empty());
        Ok(format!("summary of {}", request.id))
    }
}

struct Broken;
impl Summarizer for Broken {
    fn summarize(&self, _: &SummaryRequest<'_>) -> handoff_core::Result<String> {
        Err(handoff_core::Error::invalid("summary", "the model is down"))
    }
}

#[test]
fn a_summarizer_compresses_what_does_not_fit_and_a_failing_one_falls_back_to_a_cut() {
    let long = "the refunds round half-even in the old code and half-up in the new ".repeat(20);
    let build = |b: ContextBuilder| {
        let mut b = b;
        b.add_item(long.clone(), 50, None);
        b.build()
    };
    let packet = build(ContextBuilder::new(60).summarizer(Shorten));
    assert_eq!(packet.manifest.summarized.len(), 1, "{:?}", packet.manifest);
    assert!(packet.to_markdown().contains("summary of item-0"));
    assert!(packet.tokens <= 60);
    accounted(&packet, 1);

    let packet = build(ContextBuilder::new(60).summarizer(Broken));
    assert!(packet.manifest.summarized.is_empty());
    assert_eq!(packet.manifest.truncated.len(), 1, "{:?}", packet.manifest);
    assert!(packet.to_markdown().contains("… [truncated]"));
    accounted(&packet, 1);
}

#[test]
fn a_conversation_is_in_time_order_whatever_the_order_it_was_offered_in() {
    let mut later_first = messages(3);
    later_first.reverse();
    let mut b = ContextBuilder::new(1_000);
    b.add_messages(later_first);
    let packet = b.build();
    let said: Vec<&str> = packet.sections.iter().map(|s| s.text.as_str()).collect();
    assert!(
        said[0].contains("number 0") && said[2].contains("number 2"),
        "{said:?}"
    );
}
