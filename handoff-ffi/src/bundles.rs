//! Knowledge bundles (docs/design.md §9) as the foreign languages see them: a task's or a branch's
//! verified knowledge packaged by `Store.create_bundle`, found by id or (unless private) by its
//! share token, and imported into a branch of this store or another one.
//!
//! A [`Bundle`] carries its portable form beside its fields (`portable_json`, what the core's
//! `Bundle::to_json` writes): a Swift or Kotlin app writes it to a file, sends it, and
//! `Store.import_bundle` reads it anywhere, checked whole before anything is written.
//!
//! What a bundle says of its items is kept as its claim on import unless a key the importing
//! store trusts signed it: [`generate_bundle_key`] makes a [`BundleKeyPair`],
//! `Store.sign_bundle` signs with its secret, `Store.trust_bundle_keys` trusts its public key.

use std::fmt;
use std::time::SystemTime;

use handoff_core::bundle;
use handoff_core::store as core_store;

use crate::error::{HandoffError, Result};
use crate::record::time;

pub use handoff_core::bundle::{BundleType, Visibility};
pub use handoff_core::store::{BundleStatus, ImportReport, TrustedKey};

/// A bundle as its store keeps it: what it is, its counts and scores, who may find it, and
/// its portable form.
///
/// Printing one (`toString`, `description`, `str`) shows its id, name, visibility and counts,
/// not its share token or its portable JSON.
#[derive(Clone, Debug, PartialEq, uniffi::Record)]
#[uniffi::export(Display)]
pub struct Bundle {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// What it holds.
    pub description: Option<String>,
    /// What it is.
    pub bundle_type: BundleType,
    /// The task it was made from.
    pub source_task_id: Option<String>,
    /// The branch it was made from (`task/<task id>` for a task's).
    pub source_branch: Option<String>,
    /// How many facts it holds.
    pub fact_count: u64,
    /// How many conversations it holds.
    pub conversation_count: u64,
    /// How many messages its conversations hold.
    pub message_count: u64,
    /// Whether everything in it was verified.
    pub verification_status: BundleStatus,
    /// The mean of its items' verification scores.
    pub verification_score: Option<f64>,
    /// Who verified its items (their verifiers' names, joined with `, `).
    pub verified_by: Option<String>,
    /// `kb_` and 256 random bits: whoever holds it finds the bundle with
    /// `Store.bundle_by_token`; none while the bundle is private (sharing it issues a new one,
    /// making it private again kills it). Hand it only to whoever is to read the bundle.
    pub share_token: Option<String>,
    /// Who may find it by its token.
    pub visibility: Visibility,
    /// Labels for finding it.
    pub tags: Vec<String>,
    /// The portable form's content hash (`sha256:` and hex).
    pub content_hash: String,
    /// When it was made.
    pub created_at: SystemTime,
    /// When it last changed (its visibility).
    pub updated_at: SystemTime,
    /// The portable form, as JSON text: its facts and key conversations with their messages
    /// (redacted unless made with `redact = false`), the task's summary, the scores, its
    /// `schema_version` and `content_hash`. Write it to a file and give it to
    /// `Store.import_bundle`, in this store or another.
    pub portable_json: String,
}

/// A key pair for signing bundles, from `generate_bundle_key()`: `Store.sign_bundle` takes the
/// secret key; the stores that are to take your bundles' verdicts trust the public key
/// (`Store.trust_bundle_keys`).
///
/// Printing one (`toString`, `description`, `str`) shows its public key, never its secret key.
#[derive(Clone, PartialEq, Eq, uniffi::Record)]
#[uniffi::export(Display)]
pub struct BundleKeyPair {
    /// `ed25519:` and 64 hex digits: what a store trusts.
    pub public_key: String,
    /// `ed25519-secret:` and 64 hex digits: what signs. Keep it as you would a password.
    pub secret_key: String,
}

impl fmt::Display for BundleKeyPair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BundleKeyPair({}, secret key hidden)", self.public_key)
    }
}

impl fmt::Debug for BundleKeyPair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BundleKeyPair")
            .field("public_key", &self.public_key)
            .field("secret_key", &"…")
            .finish()
    }
}

/// A new key pair for signing bundles, from the operating system's random generator.
#[uniffi::export]
pub fn generate_bundle_key() -> Result<BundleKeyPair> {
    let bundle::BundleKeyPair {
        public_key,
        secret_key,
    } = bundle::BundleKeyPair::generate()?;
    Ok(BundleKeyPair {
        public_key,
        secret_key,
    })
}

impl fmt::Display for Bundle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Bundle(id {}, {:?}, {:?}, {:?}, {} facts, {} conversations, {} messages, share token hidden)",
            self.id,
            self.name,
            self.visibility,
            self.verification_status,
            self.fact_count,
            self.conversation_count,
            self.message_count,
        )
    }
}

impl TryFrom<core_store::Bundle> for Bundle {
    type Error = HandoffError;

    fn try_from(b: core_store::Bundle) -> Result<Self> {
        let portable_json = b.to_json()?;
        Ok(Bundle {
            id: b.id,
            name: b.name,
            description: b.description,
            bundle_type: b.bundle_type,
            source_task_id: b.source_task_id,
            source_branch: b.source_branch,
            fact_count: b.fact_count,
            conversation_count: b.conversation_count,
            message_count: b.message_count,
            verification_status: b.verification_status,
            verification_score: b.verification_score,
            verified_by: b.verified_by,
            share_token: b.share_token,
            visibility: b.visibility,
            tags: b.tags,
            content_hash: b.content_hash,
            created_at: time(b.created_at),
            updated_at: time(b.updated_at),
            portable_json,
        })
    }
}

/// The bundles the core returns, each with its portable JSON.
pub(crate) fn bundles(list: Vec<core_store::Bundle>) -> Result<Vec<Bundle>> {
    list.into_iter().map(Bundle::try_from).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;

    use super::*;
    use crate::{NewFact, OpenOptions, Score, Store, Verifier, VerifyItem};

    fn fields(err: HandoffError) -> Vec<String> {
        match err {
            HandoffError::Validation { problems, .. } => {
                problems.into_iter().map(|p| p.field).collect()
            }
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    struct Backoff;

    impl Verifier for Backoff {
        fn name(&self) -> String {
            "backoff".into()
        }

        fn verify(&self, item: VerifyItem) -> Result<Score> {
            let score = if item.text.contains("backoff") {
                0.9
            } else {
                0.1
            };
            Ok(Score {
                score,
                explanation: None,
            })
        }
    }

    fn curated() -> Arc<Store> {
        let store = Store::memory(OpenOptions::default()).unwrap();
        let fact = |text: &str| NewFact {
            text: text.into(),
            confidence: None,
            source: None,
        };
        store
            .add_facts(
                "task/t1/agent-b".into(),
                vec![fact("refresh needs backoff"), fact("tokens last a day")],
            )
            .unwrap();
        store
            .verify(
                "task/t1/agent-b".into(),
                Some(Arc::new(Backoff)),
                None,
                None,
                None,
            )
            .unwrap();
        store
    }

    /// The enums cross in the core's wire form (`team`, `task_export`), which its arguments
    /// read.
    #[test]
    fn the_enums_are_the_cores() {
        assert_eq!(
            serde_json::to_value(Visibility::Team).unwrap(),
            serde_json::to_value(bundle::Visibility::Team).unwrap()
        );
        assert_eq!(
            serde_json::to_value(BundleType::TaskExport).unwrap(),
            "task_export"
        );
    }

    #[test]
    fn a_bundle_carries_its_portable_form_to_another_store() {
        let store = curated();
        let bundle = store
            .create_bundle(
                "Playbook".into(),
                Some("t1".into()),
                None,
                true,
                Some(Visibility::Public),
                None,
                vec!["oauth".into()],
                None,
                true,
            )
            .unwrap();
        assert_eq!(bundle.fact_count, 1);
        assert_eq!(bundle.bundle_type, BundleType::TaskExport);
        assert_eq!(bundle.verification_status, BundleStatus::Verified);
        assert_eq!(bundle.verified_by.as_deref(), Some("backoff"));
        let printed = bundle.to_string();
        let token = bundle.share_token.clone().unwrap();
        assert!(!printed.contains(&token), "{printed}");
        assert!(!printed.contains("schema_version"), "{printed}");
        let portable: serde_json::Value = serde_json::from_str(&bundle.portable_json).unwrap();
        assert_eq!(portable["content_hash"], bundle.content_hash.as_str());
        assert_eq!(store.get_bundle(bundle.id.clone()).unwrap(), bundle);
        assert_eq!(store.bundle_by_token(token).unwrap(), bundle);

        let other = Store::memory(OpenOptions::default()).unwrap();
        let report = other
            .import_bundle(Some(bundle.portable_json.clone()), None, false, None, None)
            .unwrap();
        assert_eq!(
            (
                report.target_branch.as_ref().map(|b| b.as_str()),
                report.facts_added
            ),
            (Some("main"), 1)
        );
        let again = other
            .import_bundle(
                Some(bundle.portable_json.clone()),
                Some("main".into()),
                false,
                None,
                None,
            )
            .unwrap();
        assert_eq!((again.facts_added, again.facts_skipped), (0, 1));
    }

    /// Printing a key pair, by `Display` (what Swift, Kotlin and Python print) or `Debug`,
    /// never shows its secret key; a signed bundle imports verified only once its key is trusted.
    #[test]
    fn a_key_pair_hides_its_secret_and_signs_for_trusting_stores() {
        let keys = generate_bundle_key().unwrap();
        let secret = keys.secret_key.trim_start_matches("ed25519-secret:");
        assert_eq!(secret.len(), 64);
        for printed in [keys.to_string(), format!("{keys:?}"), format!("{keys:#?}")] {
            assert!(!printed.contains(secret), "{printed}");
            assert!(printed.contains(&keys.public_key), "{printed}");
        }

        let store = curated();
        let bundle = store
            .create_bundle(
                "Playbook".into(),
                Some("t1".into()),
                None,
                true,
                None,
                None,
                vec![],
                None,
                true,
            )
            .unwrap();
        let signed = store
            .sign_bundle(bundle.id.clone(), keys.secret_key.clone())
            .unwrap();
        let other = Store::memory(OpenOptions::default()).unwrap();
        let report = other
            .import_bundle(Some(signed.portable_json.clone()), None, false, None, None)
            .unwrap();
        assert_eq!(
            (report.signed_by.as_deref(), report.trusted),
            (Some(keys.public_key.as_str()), false)
        );
        let trusted = other
            .trust_bundle_keys(vec![keys.public_key.clone()], vec![])
            .unwrap();
        assert_eq!(trusted.len(), 1);
        assert_eq!(trusted[0].public_key, keys.public_key);
        let report = other
            .import_bundle(
                Some(signed.portable_json),
                Some("task/t2".into()),
                false,
                None,
                None,
            )
            .unwrap();
        assert!(report.trusted);

        let err = store
            .sign_bundle(bundle.id, keys.public_key.clone())
            .unwrap_err();
        assert_eq!(fields(err), ["secret_key"]);
        let err = other
            .trust_bundle_keys(vec![keys.secret_key.clone()], vec![])
            .unwrap_err();
        assert_eq!(fields(err), ["trust[0]"]);
    }

    #[test]
    fn bad_arguments_are_named_and_write_nothing() {
        let store = curated();
        let err = store
            .create_bundle(
                " ".into(),
                None,
                Some("feature/x".into()),
                true,
                None,
                None,
                vec![],
                None,
                true,
            )
            .unwrap_err();
        assert_eq!(fields(err), ["branch"]);
        let err = store
            .create_bundle("x".into(), None, None, true, None, None, vec![], None, true)
            .unwrap_err();
        assert_eq!(fields(err), ["task_id"]);
        let err = store
            .import_bundle(Some("{".into()), Some("x/y".into()), false, None, None)
            .unwrap_err();
        assert_eq!(fields(err), ["target_branch"]);
        assert!(store.list_bundles(None).unwrap().is_empty());
    }
}
