//! The conformance cases of what a successor is given: the packet, its knowledge, its budget.

use super::*;

/// Seed 001 §8 steps 2–4: what agent A found on its own branch reaches B, who accepts A's
/// escalation, before anyone verifies it, marked unverified; A's history and the branch to
/// continue on come with it.
pub fn successors_receive_what_their_predecessors_knew(store: Store) {
    use crate::curation::NewFact;
    use crate::store::{ContextOptions, NewConversation};

    let finding = NewFact {
        text: "token_service.py:142 drops the refresh token after a 401".into(),
        confidence: Some(0.8),
        source: None,
    };
    store
        .add_facts("task/fix-oauth/agent-investigator", vec![finding])
        .unwrap();
    let said = |role: &str, content: &str| crate::context::Message {
        role: role.into(),
        content: content.into(),
        ..crate::context::Message::default()
    };
    store
        .add_conversation(NewConversation {
            branch: "task/fix-oauth/agent-investigator".into(),
            title: Some("investigation".into()),
            task_id: Some("fix-oauth".into()),
            agent: Some("agent-investigator".into()),
            messages: vec![
                said("user", "Why does the refresh fail?"),
                said(
                    "assistant",
                    "The state machine resets on a 401 before the retry.",
                ),
            ],
        })
        .unwrap();
    let escalation = store
        .create(
            NewHandoff::new("fix-oauth", "Fix the OAuth2 token refresh")
                .from_agent("agent-investigator")
                .kind(Kind::Escalation)
                .instructions("Found the issue in token_service.py:142; needs OAuth2 expertise.")
                .blockers(["Unclear OAuth2 state transition after refresh failure"]),
        )
        .unwrap();
    let claim = store
        .claim(&escalation.id, "agent-oauth-expert", MINUTE)
        .unwrap();
    let packet = store
        .context_for(&claim.handoff.id, ContextOptions::default())
        .unwrap();
    let md = packet.to_markdown();
    assert!(
        md.contains("token_service.py:142 drops the refresh token after a 401 (unverified)"),
        "{md}"
    );
    assert!(
        md.contains(
            "## Unverified Findings of agent-investigator (on task/fix-oauth/agent-investigator)"
        ),
        "{md}"
    );
    assert!(
        md.contains("## Conversation: investigation by agent-investigator, unverified")
            && md.contains("The state machine resets on a 401 before the retry."),
        "{md}"
    );
    assert!(md.contains("Unclear OAuth2 state transition"), "{md}");
    assert!(
        md.contains("Continue on `task/fix-oauth/agent-oauth-expert`"),
        "{md}"
    );
    // Everything offered is accounted for.
    let m = &packet.manifest;
    assert!(m.dropped.is_empty() && m.truncated.is_empty(), "{m:?}");

    // The successor of a failed attempt reads what went wrong.
    let retried = store
        .create(NewHandoff::new("fix-oauth", "Rotate the signing key").max_attempts(3))
        .unwrap();
    let first = store.claim(&retried.id, "agent-a", MINUTE).unwrap();
    store
        .fail(&first, "the vault refused the rotation: 403")
        .unwrap();
    let second = store.claim(&retried.id, "agent-b", MINUTE).unwrap();
    let md = store
        .context_for(&second.handoff.id, ContextOptions::default())
        .unwrap()
        .to_markdown();
    assert!(
        md.contains("## Errors So Far")
            && md.contains("failed: the vault refused the rotation: 403"),
        "{md}"
    );
    store.release(&second, "not mine").unwrap();

    // The next hop sees the one before in its history.
    store.complete(&claim, "fixed the state machine").unwrap();
    let tests = store
        .create(
            NewHandoff::new("fix-oauth", "Add regression tests")
                .from_agent("agent-oauth-expert")
                .to_agent("agent-tester"),
        )
        .unwrap();
    let md = store
        .context_for(&tests.id, ContextOptions::default())
        .unwrap()
        .to_markdown();
    assert!(
        md.contains("## Agent History")
            && md.contains("agent-investigator → agent-oauth-expert (escalation")
            && md.contains("fixed the state machine"),
        "{md}"
    );
    // A's findings were A's: B's successor reads B's branch, not A's.
    assert!(!md.contains("(unverified)"), "{md}");
}

/// A plan step's successor reads the task's goal, the plan, and what the steps it depends on
/// produced.
pub fn a_plan_steps_successor_reads_its_dependencies(store: Store) {
    use crate::store::ContextOptions;

    let new = NewTask {
        name: "fix-oauth-token-refresh".into(),
        goal: "Token refresh survives a 401 from the identity provider".into(),
        success_criteria: vec!["no user is logged out by an expired token".into()],
        steps: vec![
            StepSpec::new("investigate", "Identify root cause", "investigator"),
            StepSpec::new("fix", "Implement fix", "expert").after(["investigate"]),
            StepSpec::new("test", "Add regression tests", "tester").after(["fix"]),
        ],
        ..NewTask::default()
    };
    let task = store.create_task(new).unwrap();
    store.start_task(&task.header.id).unwrap();
    let investigate = store
        .claim_next("investigator", None, MINUTE)
        .unwrap()
        .unwrap();
    store
        .complete(&investigate, "the state machine resets on a 401")
        .unwrap();
    let fix = store.claim_next("expert", None, MINUTE).unwrap().unwrap();
    store
        .complete(&fix, "retry with exponential backoff in token_service.py")
        .unwrap();
    let test = store.claim_next("tester", None, MINUTE).unwrap().unwrap();
    let md = store
        .context_for(&test.handoff.id, ContextOptions::default())
        .unwrap()
        .to_markdown();
    assert!(
        md.contains("Token refresh survives a 401 from the identity provider"),
        "the task's goal: {md}"
    );
    assert!(
        md.contains("fix (Implement fix, by expert, completed): retry with exponential backoff"),
        "step 2's outcome: {md}"
    );
    assert!(md.contains("- [x] investigate Identify root cause"), "{md}");
    assert!(
        md.contains("test Add regression tests (tester, in_progress) ← this handoff"),
        "{md}"
    );
    assert!(md.contains("no user is logged out"), "{md}");
}

/// Seed 001 §8 step 9: a playbook imported into `main` reaches the successor of a new task
/// about the same thing, found by relevance among unrelated knowledge, with its provenance.
pub fn knowledge_on_main_reaches_new_tasks_by_relevance(store: Store) {
    use crate::curation::{NewFact, Score, Thresholds, Verifier, VerifyItem};
    use crate::store::{ContextOptions, NewBundle};

    let elsewhere = Store::memory();
    let mut facts: Vec<NewFact> = (0..200)
        .map(|i| NewFact {
            text: format!("invoice batch {i} rounds line totals before summing the ledger"),
            confidence: None,
            source: None,
        })
        .collect();
    facts.insert(
        117,
        NewFact {
            text: "OAuth2 token refresh needs a retry with exponential backoff after a 401".into(),
            confidence: None,
            source: None,
        },
    );
    elsewhere.add_facts("task/playbook", facts).unwrap();
    struct Everything;
    impl Verifier for Everything {
        fn verify(&mut self, _: VerifyItem<'_>) -> crate::Result<Score> {
            Ok(Score {
                score: 1.0,
                explanation: None,
            })
        }
    }
    elsewhere
        .verify(
            "task/playbook",
            Some(&mut Everything),
            &Thresholds::default(),
        )
        .unwrap();
    let bundle = elsewhere
        .create_bundle(NewBundle::of_task(
            "OAuth2 Token Refresh Fix Playbook",
            "playbook",
        ))
        .unwrap();
    // Signed by a key this store trusts, its verdicts hold here (an unsigned bundle's would be
    // its claim, reaching no successor until this store verified them).
    let keys = crate::bundle::BundleKeyPair::generate().unwrap();
    let json = elsewhere
        .sign_bundle(&bundle.id, &keys.secret_key)
        .unwrap()
        .to_json()
        .unwrap();
    store
        .trust_bundle_keys(std::slice::from_ref(&keys.public_key), &[])
        .unwrap();
    assert!(store.import_bundle(&json, "main").unwrap().trusted);

    let h = store
        .create(
            NewHandoff::new(
                "oauth-again",
                "Users are logged out when the OAuth token expires",
            )
            .pending(["make the token refresh robust"]),
        )
        .unwrap();
    let packet = store.context_for(&h.id, ContextOptions::default()).unwrap();
    let md = packet.to_markdown();
    assert!(md.contains("## Relevant Knowledge on main"), "{md}");
    assert!(
        md.contains(
            "OAuth2 token refresh needs a retry with exponential backoff after a 401 (verified by bundle:"
        ),
        "{md}"
    );
    assert!(
        !md.contains("invoice batch"),
        "unrelated facts stay out: {md}"
    );
}

/// The seed's 2,000-character packet: the Markdown fits, the mandatory sections are whole,
/// and whatever was cut says so, in the text and in the manifest.
pub fn packets_fit_a_character_budget(store: Store) {
    use crate::curation::NewFact;
    use crate::store::ContextOptions;

    let facts: Vec<NewFact> = (0..60)
        .map(|i| NewFact {
            text: format!(
                "finding {i}: the ledger export drifts by one cent on refunds of batch {i}"
            ),
            confidence: None,
            source: None,
        })
        .collect();
    store.add_facts("task/ledger/agent-a", facts).unwrap();
    let h = store
        .create(
            NewHandoff::new("ledger", "Find why the ledger export drifts")
                .from_agent("agent-a")
                .instructions("Start with the refunds of batch 7.")
                .blockers(["no access to the production ledger"])
                .completed(
                    (0..40).map(|i| format!("checked batch {i} against the bank statement")),
                ),
        )
        .unwrap();
    let packet = store
        .context_for(&h.id, ContextOptions::chars(2000))
        .unwrap();
    let md = packet.to_markdown();
    assert!(
        md.chars().count() <= 2000,
        "{} chars:\n{md}",
        md.chars().count()
    );
    assert_eq!(packet.tokens, md.chars().count());
    assert_eq!(packet.unit, crate::context::BudgetUnit::Chars);
    for whole in [
        "Find why the ledger export drifts",
        "Start with the refunds of batch 7.",
        "no access to the production ledger",
    ] {
        assert!(md.contains(whole), "{whole}: {md}");
    }
    let m = &packet.manifest;
    assert!(!m.dropped.is_empty(), "{m:?}");
    // The most recent findings are kept.
    assert!(md.contains("finding 59:"), "{md}");
    assert!(!md.contains("finding 0:"), "{md}");
    for cut in &m.truncated {
        let section = packet.sections.iter().find(|s| s.id == cut.id).unwrap();
        assert!(section.text.contains('…'), "{section:?}");
    }
    let err = store
        .context_for(&h.id, ContextOptions::chars(0))
        .unwrap_err();
    assert_eq!(err.problems()[0].field, "budget_chars");
}
