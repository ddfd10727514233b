//! Seed 001 §8 end to end, through the operations every face derives from and with the seed's
//! own request bodies: three agents fix a bug (create the task, agents join, an escalation, an
//! expert accepts, cherry-picks, verify and merge, a bundle, an import), and the next task's
//! successor in another store receives what was learned.

#![allow(clippy::unwrap_used)]

use handoff_core::curation::{Score, Verifier, VerifyItem};
use handoff_core::ops::{self, Arguments, Operation};
use handoff_core::store::ContextOptions;
use handoff_core::{NewHandoff, Store};
use serde_json::{Value, json};

/// The judge: facts that state the fix or its cause pass, guesses fail; a conversation passes
/// when it reaches the fix.
struct Judge;

impl Verifier for Judge {
    fn name(&self) -> &str {
        "llm_judge"
    }
    fn verify(&mut self, item: VerifyItem<'_>) -> handoff_core::Result<Score> {
        let score = match item {
            VerifyItem::Fact(f) if f.text.starts_with("Maybe") => 0.2,
            VerifyItem::Fact(_) => 0.9,
            VerifyItem::Conversation(_, messages) => {
                let fixed = messages
                    .iter()
                    .any(|m| m.message.content.contains("backoff"));
                if fixed { 0.9 } else { 0.5 }
            }
        };
        Ok(Score {
            score,
            explanation: None,
        })
    }
}

fn say(role: &str, content: &str) -> Value {
    json!({"role": role, "content": content})
}

/// Agent B's conversation: 16 messages, the fix among them.
fn expert_conversation() -> Vec<Value> {
    let mut messages = vec![say("user", "Take over the OAuth2 token refresh bug.")];
    for i in 1..=3 {
        messages.push(say("assistant", &format!("Reading the handoff, part {i}.")));
    }
    messages.extend([
        say("assistant", "Let me look at token_service.py:142 first."),
        say("tool", "def refresh(): ... # no retry"),
        say(
            "assistant",
            "The root cause is a refresh that runs once and gives up.",
        ),
        say(
            "assistant",
            "I'll add retry logic with exponential backoff.",
        ),
        say("tool", "tests: 42 passed"),
        say(
            "assistant",
            "The fix works: retry with exponential backoff.",
        ),
    ]);
    while messages.len() < 16 {
        messages.push(say("assistant", "Writing up the notes."));
    }
    messages
}

#[test]
fn three_agents_fix_a_bug_and_the_next_task_receives_what_they_learned() {
    let store = Store::memory();

    // Step 1: the task, from objectives alone, under the seed's readable name.
    let task = ops::CreateTask::call(
        &store,
        json!({
            "id": "fix-oauth-token-refresh",
            "name": "fix-oauth-token-refresh",
            "objectives": [
                "Identify root cause of token refresh failure",
                "Implement fix",
                "Add regression tests"
            ]
        }),
    )
    .unwrap();
    let task_id = task.header.id.clone();
    let task_branch = format!("task/{task_id}");
    assert_eq!(task_branch, "task/fix-oauth-token-refresh");
    ops::StartTask::call(&store, json!({"id": task_id})).unwrap();

    // Step 2: agent A joins as investigator with objective 1, and writes what it found.
    let joined = ops::JoinTask::call(
        &store,
        json!({"task_id": task_id, "agent_id": "agent-investigator",
               "role": "investigator", "assigned_objectives": [1]}),
    )
    .unwrap();
    let a_branch = joined.header.members[0].branch.clone();
    assert_eq!(a_branch, "task/fix-oauth-token-refresh/agent-investigator");
    ops::AddFacts::call(
        &store,
        json!({"branch": a_branch, "facts": [
            {"text": "The failure is in token_service.py:142"},
            {"text": "Maybe the clock is skewed"}
        ]}),
    )
    .unwrap();
    ops::AddConversation::call(
        &store,
        json!({"branch": a_branch, "title": "Investigation", "messages": [
            say("user", "Why does the token refresh fail?"),
            say("assistant", "The failure is in token_service.py:142, inside the OAuth2 state machine.")
        ]}),
    )
    .unwrap();

    // Step 3: agent A gets stuck: an escalation handoff, as the seed writes it.
    let escalation = ops::Create::call(
        &store,
        json!({
            "task_id": task_id,
            "from_agent_id": "agent-investigator",
            "handoff_type": "escalation",
            "instructions": "Found the issue in token_service.py:142 but the fix requires \
                             understanding the OAuth2 state machine. Need someone with OAuth2 \
                             expertise.",
            "blockers": ["Unclear OAuth2 state transition after refresh failure"]
        }),
    )
    .unwrap();

    // Step 4: agent B accepts it, and its packet holds agent A's work.
    let accepted = ops::Claim::call(
        &store,
        json!({"handoff_id": escalation.id, "agent_id": "agent-oauth-expert"}),
    )
    .unwrap();
    let packet = store
        .context_for(&escalation.id, ContextOptions::default())
        .unwrap()
        .to_markdown();
    for expected in [
        "The failure is in token_service.py:142",
        "Unclear OAuth2 state transition after refresh failure",
        "inside the OAuth2 state machine",
        "(unverified)",
    ] {
        assert!(packet.contains(expected), "{expected}: {packet}");
    }
    let listed =
        ops::List::call(&store, json!({"task_id": task_id, "status": "accepted"})).unwrap();
    assert_eq!(listed.len(), 1);

    // Step 5: B fixes it on its branch; C joins for testing.
    ops::JoinTask::call(
        &store,
        json!({"task_id": task_id, "agent_id": "agent-oauth-expert", "role": "expert"}),
    )
    .unwrap();
    ops::JoinTask::call(
        &store,
        json!({"task_id": task_id, "agent_id": "agent-tester", "role": "tester"}),
    )
    .unwrap();
    let b_branch = format!("{task_branch}/agent-oauth-expert");
    ops::AddFacts::call(
        &store,
        json!({"branch": b_branch, "facts": [
            {"text": "Token refresh needs retry logic with exponential backoff"}
        ]}),
    )
    .unwrap();
    let b_conversation = ops::AddConversation::call(
        &store,
        json!({"branch": b_branch, "title": "The fix", "messages": expert_conversation()}),
    )
    .unwrap();
    ops::Complete::call(
        &store,
        json!({"claim": {"handoff_id": accepted.handoff.id, "token": accepted.token,
                         "secret": accepted.secret.expose()},
               "outcome": "Retry with exponential backoff in token_service.py"}),
    )
    .unwrap();

    // Step 6: cherry-pick the decisions, verified as they are picked.
    let picked = ops::CherryPick::run_with(
        &store,
        ops::CherryPickArgs::read(
            json!({"conversation_id": b_conversation.id, "target_branch": task_branch,
                   "from_sequence": 5, "to_sequence": 15, "verify": true}),
            store.limits(),
        )
        .unwrap(),
        Some(&mut Judge),
    )
    .unwrap();
    assert_eq!(picked.message_count, 11);
    ops::CherryPickDecisions::call(
        &store,
        json!({"conversation_id": b_conversation.id, "target_branch": task_branch}),
    )
    .unwrap();

    // Step 7: verify the task's branch (its agents' too) and complete it into main.
    let report = ops::Verify::run_with(
        &store,
        ops::VerifyArgs::read(json!({"branch_name": task_branch}), store.limits()).unwrap(),
        Some(&mut Judge),
    )
    .unwrap();
    assert!(report.verified >= 2, "{report:?}");
    assert_eq!(report.invalidated, 1, "the guess: {report:?}");
    let done = ops::CompleteTask::call(
        &store,
        json!({"id": task_id, "merge_to_main": true,
               "result_summary": "Fixed OAuth2 token refresh by adding retry logic with \
                                  exponential backoff"}),
    )
    .unwrap();
    assert_eq!(
        done.header.status,
        handoff_core::task::TaskStatus::Completed
    );
    let main: Vec<String> = ops::Facts::call(&store, json!({"branch": "main"}))
        .unwrap()
        .into_iter()
        .map(|f| f.text)
        .collect();
    assert!(main.contains(&"Token refresh needs retry logic with exponential backoff".to_owned()));
    assert!(
        !main.iter().any(|t| t.starts_with("Maybe")),
        "unverified stays: {main:?}"
    );

    // Step 8: the bundle, made after the merge, holds the task's verified knowledge.
    let bundle = ops::CreateBundle::call(
        &store,
        json!({"task_id": task_id, "name": "OAuth2 Token Refresh Fix Playbook",
               "verified_only": true, "visibility": "team"}),
    )
    .unwrap();
    assert_eq!(bundle.fact_count, 2, "{bundle:?}");
    assert!(bundle.conversation_count >= 1, "{bundle:?}");
    let token = bundle.share_token.clone().unwrap();
    assert!(token.starts_with("kb_"));

    // Step 9, as the seed writes it: the bundle imported into main; the next task's
    // successor gets the knowledge automatically.
    let imported = ops::ImportBundle::call(
        &store,
        json!({"bundle_id": bundle.id, "target_branch": "main"}),
    )
    .unwrap();
    assert_eq!(imported.facts_added, 0, "merged already: {imported:?}");
    let next_task = "oauth-login-loop";
    let next = store
        .create(
            NewHandoff::new(
                next_task,
                "Users are logged out when the OAuth token refresh fails",
            )
            .to_agent("agent-next"),
        )
        .unwrap();
    let packet = store
        .context_for(&next.id, ContextOptions::default())
        .unwrap()
        .to_markdown();
    let fix = "Token refresh needs retry logic with exponential backoff";
    assert!(packet.contains(fix), "{packet}");

    // And into another team's store: a bundle signed by a key it trusts arrives verified.
    let keys = handoff_core::bundle::BundleKeyPair::generate().unwrap();
    ops::SignBundle::call(
        &store,
        json!({"id": bundle.id, "secret_key": keys.secret_key}),
    )
    .unwrap();
    let json = store.bundle_by_token(&token).unwrap().to_json().unwrap();
    let other = Store::memory();
    ops::TrustBundleKeys::call(&other, json!({"trust": [keys.public_key]})).unwrap();
    let imported =
        ops::ImportBundle::call(&other, json!({"bundle": json, "target_branch": "main"})).unwrap();
    assert_eq!(imported.facts_added, 2, "{imported:?}");
    let next = other
        .create(
            NewHandoff::new(
                next_task,
                "Users are logged out when the OAuth token refresh fails",
            )
            .to_agent("agent-next"),
        )
        .unwrap();
    let packet = other
        .context_for(&next.id, ContextOptions::default())
        .unwrap()
        .to_markdown();
    assert!(packet.contains(fix), "{packet}");
}
