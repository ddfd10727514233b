//! The conformance cases of curation: conversations, cherry-picks, the verification gate, merges.

use super::*;

/// Curation (docs/design.md §9): a conversation on an agent's branch, cherry-picked by range, by
/// decision points and by tool sequences; facts verified by a verifier (one it fails on is
/// reported and left), then merged upward once.
pub fn curated_knowledge_moves_up_once_verified(store: Store) {
    use crate::curation::{FactStatus, NewFact, Score, Thresholds, Verdict, Verifier, VerifyItem};
    use crate::store::NewConversation;

    let messages = crate::curation::seed_example();
    let agent = "task/fix-oauth/agent-b";
    let bad = store.add_conversation(NewConversation {
        branch: "feature/x".into(),
        messages: messages.clone(),
        ..NewConversation::default()
    });
    assert_eq!(bad.unwrap_err().problems()[0].field, "branch");
    let conv = store
        .add_conversation(NewConversation {
            branch: agent.into(),
            messages,
            ..NewConversation::default()
        })
        .unwrap();
    assert_eq!(
        (
            conv.message_count,
            conv.task_id.as_deref(),
            conv.agent.as_deref()
        ),
        (11, Some("fix-oauth"), Some("agent-b"))
    );

    // A range outside the conversation: refused, nothing written.
    let before = store.list_conversations(None, None).unwrap();
    let err = store
        .cherry_pick(&conv.id, "task/fix-oauth", Some(9), Some(20), None)
        .unwrap_err();
    assert_eq!(err.problems()[0].field, "to_seq");
    assert_eq!(store.list_conversations(None, None).unwrap(), before);

    let range = store
        .cherry_pick(&conv.id, "task/fix-oauth", Some(5), Some(9), None)
        .unwrap();
    assert_eq!(range.message_count, 5);
    assert_eq!(range.cherry_picked_from.as_deref(), Some(conv.id.as_str()));
    let source = store.messages(&conv.id, Some(4), Some(6)).unwrap();
    let picked: Vec<(u64, bool)> = source.iter().map(|m| (m.seq, m.is_cherry_picked)).collect();
    assert_eq!(picked, [(4, false), (5, true), (6, true)]);
    assert_eq!(source[1].cherry_picked_to[0].conversation_id, range.id);
    let decisions = store
        .cherry_pick_decisions(&conv.id, "task/fix-oauth", None)
        .unwrap();
    let texts: Vec<String> = store
        .messages(&decisions.id, None, None)
        .unwrap()
        .into_iter()
        .map(|m| m.message.content)
        .collect();
    assert_eq!(texts[0], "let me investigate...");
    assert_eq!(texts.len(), 3);
    let tools = store.cherry_pick_tools(&conv.id, "task/fix-oauth").unwrap();
    assert_eq!(tools.message_count, 6);

    store
        .add_facts(
            agent,
            vec![
                NewFact {
                    text: "refresh needs retries with backoff".into(),
                    confidence: Some(0.8),
                    source: None,
                },
                NewFact {
                    text: "the bug is in the login form".into(),
                    confidence: None,
                    source: None,
                },
                NewFact {
                    text: "the judge times out on this one".into(),
                    confidence: None,
                    source: None,
                },
            ],
        )
        .unwrap();
    // Without a verifier: the neutral 0.5, nothing verified, nothing invalidated, and nothing
    // written (no verdict given or undone).
    let before = store.facts(agent, None).unwrap();
    let neutral = store.verify(agent, None, &Thresholds::default()).unwrap();
    assert_eq!(
        (neutral.verified, neutral.invalidated, neutral.unverified),
        (0, 0, 4)
    );
    assert_eq!(store.facts(agent, None).unwrap(), before);

    struct Judge;
    impl Verifier for Judge {
        fn name(&self) -> &str {
            "judge"
        }
        fn verify(&mut self, item: VerifyItem<'_>) -> crate::Result<Score> {
            let score = match item {
                VerifyItem::Fact(fact) if fact.text.contains("times out") => {
                    return Err(crate::Error::invalid("verifier", "timed out"));
                }
                VerifyItem::Fact(fact) if fact.text.contains("backoff") => 0.9,
                VerifyItem::Fact(_) => 0.2,
                VerifyItem::Conversation(_, messages) => {
                    if messages.len() > 5 {
                        0.65
                    } else {
                        f64::NAN
                    }
                }
            };
            Ok(Score {
                score,
                explanation: Some("checked".into()),
            })
        }
    }
    let report = store
        .verify(agent, Some(&mut Judge), &Thresholds::default())
        .unwrap();
    assert_eq!(
        (report.verified, report.invalidated, report.failed),
        (2, 1, 1)
    );
    let facts = store.facts(agent, None).unwrap();
    let statuses: Vec<FactStatus> = facts.iter().map(|f| f.status).collect();
    assert_eq!(
        statuses,
        [
            FactStatus::Verified,
            FactStatus::Invalidated,
            FactStatus::Active
        ]
    );
    assert_eq!(facts[0].verified_by.as_deref(), Some("judge"));
    // A failed verifier leaves the item as it was: the neutral run before wrote nothing.
    assert_eq!(facts[2].score, None, "a failed verifier leaves the item");
    assert_eq!(facts[2].verified_by, None);
    assert_eq!(
        store
            .get_conversation(&conv.id)
            .unwrap()
            .verification_status,
        Verdict::Verified
    );

    let merged = store.merge(agent, None).unwrap();
    assert_eq!((merged.facts, merged.conversations), (1, 1), "{merged:?}");
    let up = store.facts("task/fix-oauth", None).unwrap();
    assert_eq!(up.len(), 1);
    assert_eq!(up[0].origin.as_deref(), Some(facts[0].id.as_str()));
    assert_eq!(
        store
            .facts(agent, Some(FactStatus::Promoted))
            .unwrap()
            .len(),
        1
    );
    let again = store.merge(agent, None).unwrap();
    assert_eq!((again.facts, again.conversations), (0, 0));
    let branches: Vec<String> = store
        .branches()
        .unwrap()
        .into_iter()
        .map(|b| b.name.to_string())
        .collect();
    assert_eq!(branches, ["task/fix-oauth", agent]);

    // The successor's packet: the handoff, the task's verified facts and key conversations.
    let secret = "sk-proj-aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5kL7n";
    let leaked = NewFact {
        text: format!("the test key is {secret}"),
        confidence: None,
        source: None,
    };
    store.add_facts("task/fix-oauth", vec![leaked]).unwrap();
    struct Everything;
    impl Verifier for Everything {
        fn verify(&mut self, _: VerifyItem<'_>) -> crate::Result<Score> {
            Ok(Score {
                score: 1.0,
                explanation: None,
            })
        }
    }
    store
        .verify(
            "task/fix-oauth",
            Some(&mut Everything),
            &Thresholds::default(),
        )
        .unwrap();
    let h = store
        .create(NewHandoff::new("fix-oauth", "Ship the token refresh fix").to_agent("agent-c"))
        .unwrap();
    let packet = store
        .context_for(&h.id, crate::store::ContextOptions::tokens(4000))
        .unwrap();
    let md = packet.to_markdown();
    assert!(md.contains("Ship the token refresh fix"), "{md}");
    assert!(md.contains("refresh needs retries with backoff"), "{md}");
    assert!(
        !md.contains("the bug is in the login form"),
        "invalidated: {md}"
    );
    assert!(md.contains("found the issue"), "a key conversation: {md}");
    assert!(!md.contains(secret), "redacted: {md}");
    assert_eq!(
        kind_of(
            &store
                .context_for(
                    "no-such-handoff",
                    crate::store::ContextOptions::tokens(4000)
                )
                .unwrap_err()
        ),
        ErrorKind::NotFound
    );

    // Every change in the task's curation log, in order.
    let kinds: Vec<String> = store
        .curation_events(Some("fix-oauth"))
        .unwrap()
        .iter()
        .map(|e| {
            serde_json::to_value(e.kind)
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "conversation_added",
            "cherry_picked",
            "cherry_picked",
            "cherry_picked",
            "facts_added",
            // The neutral run without a verifier wrote nothing, its log entry neither.
            "verified",
            "merged",
            "merged",
            "facts_added",
            "verified"
        ]
    );
    assert!(store.curation_events(None).unwrap().is_empty());
}

/// What a judge supplies is held to a record field's size: an explanation over it fails its
/// item (reported, the item left as it was), a name over it refuses the verification.
pub fn judges_texts_are_held_to_the_limits(store: Store) {
    use crate::curation::{NewFact, Score, Thresholds, Verifier, VerifyItem};

    struct Wordy(String, usize);
    impl Verifier for Wordy {
        fn name(&self) -> &str {
            &self.0
        }
        fn verify(&mut self, _: VerifyItem<'_>) -> crate::Result<Score> {
            Ok(Score {
                score: 0.9,
                explanation: Some("x".repeat(self.1)),
            })
        }
    }
    let branch = "task/sizes";
    let fact = NewFact {
        text: "retries need backoff".into(),
        confidence: None,
        source: None,
    };
    store.add_facts(branch, vec![fact]).unwrap();
    let limit = store.limits().max_field_bytes;
    let before = store.facts(branch, None).unwrap();
    let report = store
        .verify(
            branch,
            Some(&mut Wordy("judge".into(), limit + 1)),
            &Thresholds::default(),
        )
        .unwrap();
    assert_eq!((report.verified, report.failed), (0, 1), "{report:?}");
    assert_eq!(store.facts(branch, None).unwrap(), before);
    let err = store
        .verify(
            branch,
            Some(&mut Wordy("j".repeat(limit + 1), 1)),
            &Thresholds::default(),
        )
        .unwrap_err();
    assert_eq!(err.problems()[0].field, "verifier.name");
    assert_eq!(store.facts(branch, None).unwrap(), before);
    let report = store
        .verify(
            branch,
            Some(&mut Wordy("judge".into(), limit)),
            &Thresholds::default(),
        )
        .unwrap();
    assert_eq!(report.verified, 1);
}

/// `cherry_pick` with the gate (the seed's `cherry_pick_conversation(verify=True)`): the
/// verifier scores what is picked before it is written; a verifier that fails writes nothing.
pub fn cherry_picks_can_pass_the_gate(store: Store) {
    use crate::curation::{Score, Thresholds, Verdict, Verifier, VerifyItem};
    use crate::ops::{self, Arguments, Operation};
    use crate::store::NewConversation;

    let source = store
        .add_conversation(NewConversation {
            branch: "task/fix-oauth/agent-b".into(),
            messages: crate::curation::seed_example(),
            ..NewConversation::default()
        })
        .unwrap();
    // The verifier reads the pick as it will be written: its messages numbered from 1.
    struct Sees(Vec<u64>);
    impl Verifier for Sees {
        fn verify(&mut self, item: VerifyItem<'_>) -> crate::Result<Score> {
            if let VerifyItem::Conversation(c, messages) = item {
                assert_eq!(c.message_count, messages.len() as u64);
                self.0 = messages.iter().map(|m| m.seq).collect();
            }
            Ok(Score {
                score: 0.65,
                explanation: Some("the fix is tested".into()),
            })
        }
    }
    let mut sees = Sees(Vec::new());
    let picked = store
        .cherry_pick_verified(
            &source.id,
            "task/fix-oauth",
            Some(3),
            Some(9),
            None,
            &mut sees,
            &Thresholds::default(),
        )
        .unwrap();
    assert_eq!(sees.0, (1..=7).collect::<Vec<u64>>());
    assert_eq!(picked.message_count, 7);
    assert_eq!(picked.verification_status, Verdict::Verified);
    assert_eq!(picked.verification_score, Some(0.65));
    assert_eq!(picked.verified_by.as_deref(), Some("verifier"));
    assert_eq!(store.get_conversation(&picked.id).unwrap(), picked);
    let marked = store.messages(&source.id, Some(3), Some(3)).unwrap();
    assert!(marked[0].is_cherry_picked);

    // A failing verifier, or one out of range, writes nothing.
    let count = || store.list_conversations(None, None).unwrap().len();
    let before = count();
    let mut failing =
        crate::ops::JsonVerifier::new("down", |_| Err(Error::invalid("verifier", "timed out")));
    let err = store
        .cherry_pick_verified(
            &source.id,
            "task/fix-oauth",
            None,
            None,
            None,
            &mut failing,
            &Thresholds::default(),
        )
        .unwrap_err();
    assert_eq!(err.problems()[0].field, "verifier");
    let mut wild = crate::ops::JsonVerifier::new("wild", |_| Ok(serde_json::json!(1.5)));
    let args = ops::CherryPickArgs::read(
        serde_json::json!({"conversation_id": source.id, "target_branch": "task/fix-oauth",
                           "from_sequence": 2, "to_sequence": 4, "verify": true}),
        store.limits(),
    )
    .unwrap();
    let err = ops::CherryPick::run_with(&store, args.clone(), Some(&mut wild)).unwrap_err();
    assert_eq!(err.problems()[0].field, "score");
    // `verify` with no judge to ask is refused by name, before anything is written.
    let err = ops::CherryPick::run_with(&store, args.clone(), None).unwrap_err();
    assert_eq!(err.problems()[0].field, "verify");
    assert_eq!(count(), before);
    // The seed's argument names, and a low score invalidates.
    let mut low = crate::ops::JsonVerifier::new("low", |_| Ok(serde_json::json!([0.2, "wrong"])));
    let invalid = ops::CherryPick::run_with(&store, args, Some(&mut low)).unwrap();
    assert_eq!(invalid.message_count, 3);
    assert_eq!(invalid.verification_status, Verdict::Invalidated);
    assert_eq!(invalid.explanation.as_deref(), Some("wrong"));
    let plain = ops::CherryPick::call(
        &store,
        serde_json::json!({"conversation_id": source.id, "target_branch": "main",
                           "to_sequence": 2}),
    )
    .unwrap();
    assert_eq!(
        (plain.message_count, plain.verification_status),
        (2, Verdict::Unverified)
    );
    let log = store.curation_events(Some("fix-oauth")).unwrap();
    let kinds: Vec<_> = log.iter().map(|e| e.kind).collect();
    assert!(
        kinds.contains(&crate::curation::CurationChange::Verified),
        "{kinds:?}"
    );
}

/// `cherry_pick_to_facts` (seed §4.3): the heuristics draw the conclusions and decisions a
/// conversation states as candidate facts on the target branch, which the gate verifies
/// later; an extractor may draw them instead, and one that fails writes nothing.
pub fn conversations_become_candidate_facts(store: Store) {
    use crate::context::Message;
    use crate::curation::{FactStatus, Thresholds};
    use crate::ops::{self, Arguments, Operation};
    use crate::store::NewConversation;

    let say = |role: &str, content: &str| Message {
        role: role.into(),
        content: content.into(),
        ..Message::default()
    };
    let conversation = store
        .add_conversation(NewConversation {
            branch: "task/fix-oauth/agent-b".into(),
            messages: vec![
                say(
                    "user",
                    "The token refresh fails after an hour. Why is that?",
                ),
                say(
                    "assistant",
                    "Let me look. The root cause is the expiry compared in seconds. \
                     Is the clock skewed? Ok.",
                ),
                say(
                    "assistant",
                    "The bug sits in token_service.py:142 where the refresh runs once.",
                ),
                say(
                    "assistant",
                    "I'll retry the refresh 3 times with backoff. The root cause is the \
                     expiry compared in seconds.",
                ),
                say("assistant", "Done."),
            ],
            ..NewConversation::default()
        })
        .unwrap();
    let facts = ops::CherryPickToFacts::call(
        &store,
        serde_json::json!({"conversation_id": conversation.id, "target_branch": "task/fix-oauth"}),
    )
    .unwrap();
    let texts: Vec<&str> = facts.iter().map(|f| f.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "The root cause is the expiry compared in seconds.",
            "The bug sits in token_service.py:142 where the refresh runs once.",
            "I'll retry the refresh 3 times with backoff.",
        ]
    );
    assert!(facts.iter().all(|f| f.status == FactStatus::Active));
    assert_eq!(
        facts[1].source.as_deref(),
        Some(format!("conversation:{}#3", conversation.id).as_str())
    );
    assert_eq!(store.facts("task/fix-oauth", None).unwrap(), facts);
    // Candidates: the gate verifies them later.
    let report = store
        .verify(
            "task/fix-oauth",
            Some(&mut ScoresBackoff),
            &Thresholds::default(),
        )
        .unwrap();
    assert_eq!((report.verified, report.invalidated), (1, 2));

    // An extractor draws them instead; its own sources are kept, the others get the
    // conversation's.
    let mut extractor = ops::JsonExtractor::new("llm", |item: serde_json::Value| {
        assert_eq!(item["kind"], "conversation");
        Ok(serde_json::json!({"facts": [
            "refresh tokens expire after 1h",
            {"text": "the fix shipped in 4.2", "confidence": 0.8, "source": "CHANGELOG"},
        ]}))
    });
    let args = ops::CherryPickToFactsArgs::read(
        serde_json::json!({"conversation_id": conversation.id, "target_branch": "main"}),
        store.limits(),
    )
    .unwrap();
    let drawn =
        ops::CherryPickToFacts::run_with(&store, args.clone(), Some(&mut extractor)).unwrap();
    assert_eq!(drawn.len(), 2);
    assert_eq!(
        drawn[0].source.as_deref(),
        Some(format!("conversation:{}", conversation.id).as_str())
    );
    assert_eq!(drawn[1].source.as_deref(), Some("CHANGELOG"));
    // A failing extractor, or one that draws a bad fact, writes nothing.
    let on_main = || store.facts("main", None).unwrap().len();
    let mut bad = ops::JsonExtractor::new("bad", |_| Ok(serde_json::json!(["ok", "", 3])));
    let err = ops::CherryPickToFacts::run_with(&store, args.clone(), Some(&mut bad)).unwrap_err();
    let fields: Vec<&str> = err.problems().iter().map(|p| p.field.as_str()).collect();
    assert_eq!(fields, ["facts[2]"]);
    let mut empty = ops::JsonExtractor::new("empty", |_| Ok(serde_json::json!([" "])));
    let err = ops::CherryPickToFacts::run_with(&store, args.clone(), Some(&mut empty)).unwrap_err();
    assert_eq!(err.problems()[0].field, "facts[0].text");
    let mut down = ops::JsonExtractor::new("down", |_| Err(Error::invalid("extractor", "down")));
    assert!(ops::CherryPickToFacts::run_with(&store, args, Some(&mut down)).is_err());
    assert_eq!(on_main(), 2);
    // A conversation that states nothing writes nothing.
    let quiet = store
        .add_conversation(NewConversation {
            branch: "main".into(),
            messages: vec![say("user", "hi"), say("assistant", "Hello!")],
            ..NewConversation::default()
        })
        .unwrap();
    assert!(
        store
            .cherry_pick_to_facts(&quiet.id, "main", None)
            .unwrap()
            .is_empty()
    );
    let err = store
        .cherry_pick_to_facts(&quiet.id, "nope/x", None)
        .unwrap_err();
    assert_eq!(err.problems()[0].field, "target_branch");
}
