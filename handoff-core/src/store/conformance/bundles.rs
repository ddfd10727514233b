//! The conformance cases of knowledge bundles: made, shared, imported once, verified.

use super::*;

pub fn bundles_share_verified_knowledge_and_import_once(store: Store) {
    use crate::bundle::Visibility;
    use crate::curation::{NewFact, Score, Thresholds, Verifier, VerifyItem};
    use crate::store::{NewBundle, NewConversation};

    struct ByText;
    impl Verifier for ByText {
        fn name(&self) -> &str {
            "by-text"
        }
        fn verify(&mut self, item: VerifyItem<'_>) -> crate::Result<Score> {
            let score = match item {
                VerifyItem::Fact(f) if f.text.contains("backoff") => 0.9,
                VerifyItem::Fact(_) => 0.1,
                VerifyItem::Conversation(..) => 0.8,
            };
            Ok(Score {
                score,
                explanation: None,
            })
        }
    }
    let fact = |text: &str| NewFact {
        text: text.into(),
        confidence: None,
        source: None,
    };
    let key = "sk-proj-aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5kL7n";
    store
        .add_conversation(NewConversation {
            branch: "task/fix-oauth".into(),
            messages: crate::curation::seed_example(),
            ..NewConversation::default()
        })
        .unwrap();
    store
        .add_facts(
            "task/fix-oauth",
            vec![
                fact(&format!("refresh needs backoff; the test key was {key}")),
                fact("tokens last 1h"),
            ],
        )
        .unwrap();
    store
        .verify("task/fix-oauth", Some(&mut ByText), &Thresholds::default())
        .unwrap();

    let bundle = store
        .create_bundle(NewBundle::of_task(
            "OAuth2 Token Refresh Fix Playbook",
            "fix-oauth",
        ))
        .unwrap();
    assert_eq!((bundle.fact_count, bundle.conversation_count), (1, 1));
    assert_eq!(bundle.message_count, 11);
    assert_eq!(
        bundle.verification_status,
        crate::store::BundleStatus::Verified
    );
    // A private bundle has no token to find it by, in any listing.
    assert_eq!(bundle.share_token, None);
    let json = bundle.to_json().unwrap();
    assert!(!json.contains(key), "a bundle is redacted by default");
    assert_eq!(store.get_bundle(&bundle.id).unwrap(), bundle);
    assert!(store.list_bundles(None).unwrap()[0].share_token.is_none());

    // Sharing issues a token; a wrong one says what a revoked one does.
    let team = store.set_visibility(&bundle.id, Visibility::Team).unwrap();
    let token = team.share_token.clone().unwrap();
    assert!(token.starts_with("kb_") && token.len() >= 3 + 32);
    assert_eq!(store.bundle_by_token(&token).unwrap().id, bundle.id);
    let public = store
        .set_visibility(&bundle.id, Visibility::Public)
        .unwrap();
    assert_eq!(
        public.share_token.as_deref(),
        Some(token.as_str()),
        "shared to shared keeps it"
    );
    // Made private, the token dies for good: sharing again issues another.
    let private = store
        .set_visibility(&bundle.id, Visibility::Private)
        .unwrap();
    assert_eq!(private.share_token, None);
    let revoked = store.bundle_by_token(&token).unwrap_err();
    let wrong = store.bundle_by_token("kb_0000").unwrap_err();
    assert_eq!(revoked.to_string(), wrong.to_string());
    assert_eq!(revoked.kind(), ErrorKind::NotFound);
    let shared = store.set_visibility(&bundle.id, Visibility::Team).unwrap();
    let token = shared.share_token.clone().unwrap();
    assert!(
        store
            .bundle_by_token(&team.share_token.clone().unwrap())
            .is_err()
    );
    assert_eq!(store.bundle_by_token(&token).unwrap().id, bundle.id);
    assert_eq!(store.list_bundles(Some(Visibility::Team)).unwrap().len(), 1);
    assert!(
        store
            .list_bundles(Some(Visibility::Public))
            .unwrap()
            .is_empty()
    );

    // Hostile bundles: refused by name, nothing written.
    let events = store.curation_events(None).unwrap().len();
    let tampered = json
        .replace("tokens", "TOKENS")
        .replace("backoff", "no backoff");
    for (bad, field) in [
        (&json[..json.len() / 2], "bundle"),
        (tampered.as_str(), "content_hash"),
        ("{\"schema_version\": 99}", "schema_version"),
    ] {
        let err = store.import_bundle(bad, "main").unwrap_err();
        assert_eq!(err.problems()[0].field, field, "{err}");
    }
    let err = store.import_bundle(&json, "feature/x").unwrap_err();
    assert_eq!(err.problems()[0].field, "target_branch");
    assert!(store.facts("main", None).unwrap().is_empty());
    assert_eq!(store.curation_events(None).unwrap().len(), events);

    // A dry run says what the import will add, and writes nothing.
    let checked = store.check_bundle_import(&json, "main").unwrap();
    assert!(store.facts("main", None).unwrap().is_empty());
    assert_eq!(store.curation_events(None).unwrap().len(), events);
    let first = store.import_bundle(&json, "main").unwrap();
    assert_eq!(checked, first);
    assert_eq!(
        (
            first.facts_added,
            first.conversations_added,
            first.messages_added
        ),
        (1, 1, 11)
    );
    let again = store.import_bundle(&json, "main").unwrap();
    assert_eq!(
        (
            again.facts_added,
            again.facts_skipped,
            again.conversations_skipped
        ),
        (0, 1, 1)
    );
    // Unsigned: what the bundle says of its items is its claim, not this store's verdict.
    let imported = store.facts("main", None).unwrap();
    assert_eq!(imported.len(), 1);
    assert_eq!(imported[0].status, crate::curation::FactStatus::Active);
    assert_eq!(imported[0].score, Some(0.9), "the claim is kept");
    let short = &bundle.content_hash[..7 + 16];
    assert_eq!(imported[0].verified_by, Some(format!("bundle:{short}")));
    let conversations = store.list_conversations(Some("main"), None).unwrap();
    assert_eq!(conversations.len(), 1);
    assert_eq!(
        conversations[0].verification_status,
        crate::curation::Verdict::Unverified
    );
    assert_eq!((first.signed_by.as_deref(), first.trusted), (None, false));

    // Signed by a key this store trusts: the verdicts come in as verified, and the packet
    // says whose word they are.
    let keys = crate::bundle::BundleKeyPair::generate().unwrap();
    let signed = store.sign_bundle(&bundle.id, &keys.secret_key).unwrap();
    let signed_json = signed.to_json().unwrap();
    assert!(signed_json.contains(&keys.public_key) && !signed_json.contains(&keys.secret_key));
    let untrusted = store.import_bundle(&signed_json, "task/later").unwrap();
    assert_eq!(
        (untrusted.signed_by.as_deref(), untrusted.trusted),
        (Some(keys.public_key.as_str()), false)
    );
    assert_eq!(
        store.facts("task/later", None).unwrap()[0].status,
        crate::curation::FactStatus::Active
    );
    let trusted = store
        .trust_bundle_keys(std::slice::from_ref(&keys.public_key), &[])
        .unwrap();
    assert_eq!(trusted.len(), 1);
    assert_eq!(trusted[0].public_key, keys.public_key);
    let vouched = store.import_bundle(&signed_json, "task/vouched").unwrap();
    assert!(vouched.trusted);
    let fact = &store.facts("task/vouched", None).unwrap()[0];
    assert_eq!(fact.status, crate::curation::FactStatus::Verified);
    let by = format!("bundle:{short} signed by {}", keys.public_key);
    assert_eq!(fact.verified_by.as_deref(), Some(by.as_str()));
    let h = store
        .create(NewHandoff::new("vouched", "Use what the playbook says"))
        .unwrap();
    let md = store
        .context_for(&h.id, crate::store::ContextOptions::tokens(4000))
        .unwrap()
        .to_markdown();
    assert!(md.contains(&format!("(verified by {by})")), "{md}");
    // A signature that does not hold is refused by name; bad keys, every one at once.
    let forged = signed_json.replace(
        &keys.public_key,
        &crate::bundle::BundleKeyPair::generate().unwrap().public_key,
    );
    let err = store.import_bundle(&forged, "task/forged").unwrap_err();
    assert_eq!(err.problems()[0].field, "signature");
    let err = store
        .trust_bundle_keys(&["nope".into()], &["ed25519:00".into()])
        .unwrap_err();
    let fields: Vec<&str> = err.problems().iter().map(|p| p.field.as_str()).collect();
    assert_eq!(fields, ["trust[0]", "distrust[0]"]);
    let err = store.sign_bundle(&bundle.id, &keys.public_key).unwrap_err();
    assert_eq!(err.problems()[0].field, "secret_key");
    assert!(
        store
            .trust_bundle_keys(&[], std::slice::from_ref(&keys.public_key))
            .unwrap()
            .is_empty()
    );

    store.delete_bundle(&bundle.id).unwrap();
    assert_eq!(
        store.get_bundle(&bundle.id).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert!(store.bundle_by_token(&token).is_err());
    assert_eq!(store.facts("main", None).unwrap().len(), 1, "imports stay");
}

/// A task's bundle holds its verified knowledge whether or not it was merged since: bundles
/// follow provenance (where knowledge came from), not the branch it lies on now (seed 001 §8:
/// the bundle is made after the task was merged into `main`).
pub fn bundles_follow_provenance_after_a_merge(store: Store) {
    use crate::bundle::Visibility;
    use crate::curation::{FactStatus, Thresholds};
    use crate::store::{NewBundle, NewConversation};

    let agent = "task/fix-oauth/agent-b";
    let conversation = store
        .add_conversation(NewConversation {
            branch: agent.into(),
            messages: crate::curation::seed_example(),
            ..NewConversation::default()
        })
        .unwrap();
    store
        .add_facts(
            agent,
            vec![
                plain_fact("refresh needs backoff"),
                plain_fact("tokens last 1h"),
            ],
        )
        .unwrap();
    store
        .add_facts(
            "task/fix-oauth",
            vec![plain_fact("retry the refresh with backoff")],
        )
        .unwrap();
    store
        .cherry_pick(&conversation.id, "task/fix-oauth", Some(2), Some(9), None)
        .unwrap();
    for branch in [agent, "task/fix-oauth"] {
        store
            .verify(branch, Some(&mut ScoresBackoff), &Thresholds::default())
            .unwrap();
    }
    let before = store
        .create_bundle(NewBundle::of_task("Before the merge", "fix-oauth"))
        .unwrap();
    // The agent's branch into the task's, then the task's into main: everything verified
    // now lies on main, its sources `promoted`.
    store.merge(agent, None).unwrap();
    store.merge("task/fix-oauth", None).unwrap();
    assert!(
        store
            .facts("task/fix-oauth", Some(FactStatus::Verified))
            .unwrap()
            .is_empty()
    );
    let after = store
        .create_bundle(NewBundle {
            visibility: Visibility::Team,
            ..NewBundle::of_task("After the merge", "fix-oauth")
        })
        .unwrap();
    let texts = |b: &crate::store::Bundle| {
        let mut t: Vec<String> = b.data.facts.iter().map(|f| f.text.clone()).collect();
        t.sort();
        t
    };
    assert_eq!(
        texts(&after),
        ["refresh needs backoff", "retry the refresh with backoff"],
        "each verified fact once, the invalidated one left out"
    );
    assert_eq!(texts(&after), texts(&before));
    assert_eq!(
        after.conversation_count, before.conversation_count,
        "{after:?}"
    );
    // The agent's conversation (verified) and the pick: each once, though a merge copied the
    // agent's up to the task's branch.
    assert_eq!(after.conversation_count, 2);
    assert_eq!(
        after.verification_status,
        crate::store::BundleStatus::Verified
    );
    // A branch's bundle is the branch's: main's holds the copies.
    let main = store
        .create_bundle(NewBundle {
            task_id: None,
            branch: Some("main".into()),
            ..NewBundle::of_task("Main", "fix-oauth")
        })
        .unwrap();
    assert_eq!(main.fact_count, 2);
}

/// `verify_bundle` runs the gate on a bundle's contents and records, on the bundle, its
/// status, its score and who verified it, leaving the portable form (and its hash) as it was.
pub fn bundles_record_their_verification(store: Store) {
    use crate::curation::Thresholds;
    use crate::ops::{self, Arguments, Operation};
    use crate::store::{BundleStatus, NewBundle, NewConversation};

    store
        .add_conversation(NewConversation {
            branch: "task/fix-oauth".into(),
            messages: crate::curation::seed_example(),
            ..NewConversation::default()
        })
        .unwrap();
    store
        .add_facts(
            "task/fix-oauth",
            vec![
                plain_fact("refresh needs backoff"),
                plain_fact("tokens last 1h"),
            ],
        )
        .unwrap();
    let draft = store
        .create_bundle(NewBundle {
            verified_only: false,
            ..NewBundle::of_task("Unverified", "fix-oauth")
        })
        .unwrap();
    assert_eq!(draft.verification_status, BundleStatus::Draft);
    assert_eq!(draft.verified_by, None);

    // One fact fails the gate: the bundle stays a draft, its mean score and verifier recorded.
    let judged = store
        .verify_bundle(&draft.id, &mut ScoresBackoff, &Thresholds::default())
        .unwrap();
    assert_eq!(judged.verification_status, BundleStatus::Draft);
    assert_eq!(judged.verified_by.as_deref(), Some("scores-backoff"));
    let mean = (0.9 + 0.1 + 0.8) / 3.0;
    assert!((judged.verification_score.unwrap() - mean).abs() < 1e-9);
    assert_eq!(judged.content_hash, draft.content_hash);
    assert_eq!(judged.data, draft.data);
    assert_eq!(store.get_bundle(&draft.id).unwrap(), judged);
    // Lower thresholds: every item passes, and the bundle is verified.
    let args = ops::VerifyBundleArgs::read(
        serde_json::json!({"bundle_id": draft.id, "fact_threshold": 0.1,
                           "invalidate_below": 0.05}),
        store.limits(),
    )
    .unwrap();
    let verified =
        ops::VerifyBundle::run_with(&store, args.clone(), Some(&mut ScoresBackoff)).unwrap();
    assert_eq!(verified.verification_status, BundleStatus::Verified);
    // Without a judge, or with one that fails, nothing is recorded.
    let err = ops::VerifyBundle::run_with(&store, args.clone(), None).unwrap_err();
    assert_eq!(err.problems()[0].field, "verifier");
    let mut failing = crate::ops::JsonVerifier::new("down", |item: serde_json::Value| {
        if item["kind"] == "conversation" {
            Err(Error::invalid("verifier", "timed out"))
        } else {
            Ok(serde_json::json!(0.9))
        }
    });
    let err = ops::VerifyBundle::run_with(&store, args, Some(&mut failing)).unwrap_err();
    assert_eq!(err.problems()[0].field, "conversations[0]");
    assert_eq!(store.get_bundle(&draft.id).unwrap(), verified);
    let err = ops::VerifyBundle::call(&store, serde_json::json!({"id": "nope"})).unwrap_err();
    assert_eq!(err.problems()[0].field, "verifier");
    let missing = store
        .verify_bundle("nope", &mut ScoresBackoff, &Thresholds::default())
        .unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::NotFound);
    // The log keeps each item's score.
    let log = store.curation_events(Some("fix-oauth")).unwrap();
    let verifications: Vec<_> = log
        .iter()
        .filter(|e| e.detail["bundle_id"] == draft.id.as_str() && e.detail["items"].is_array())
        .collect();
    assert_eq!(verifications.len(), 2);
    assert_eq!(
        verifications[0].detail["items"].as_array().unwrap().len(),
        3
    );
}
