//! Knowledge bundles (docs/design.md §9, seed: Day1 Phase 5), the pure part: a task's or a branch's
//! verified knowledge packaged as portable JSON (facts, key conversations with their messages,
//! the task's summary, verification scores) with a schema version and a content hash; share
//! tokens; and the whole check of a bundle read from outside before anything of it is written.
//! The store keeps bundles and imports them ([`crate::Store::create_bundle`],
//! [`crate::Store::import_bundle`]).
//!
//! The folder: this file is the pure part, `signing` signs and checks bundles; `store` keeps
//! bundles in the [`Store`](crate::Store), `keys` the keys it trusts, `ops` bundles' operations.

pub(crate) mod keys;
pub(crate) mod ops;
pub(crate) mod store;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::context::Message;
use crate::curation::{NewFact, check_score};
use crate::error::{Error, Result};
use crate::store::check_messages;
use crate::validate::{self, Collector, Limits};

mod signing;
pub use signing::{
    BundleKeyPair, BundleSignature, PUBLIC_KEY_PREFIX, SECRET_KEY_PREFIX, public_key,
};

/// The version of the portable form this library writes and reads.
pub const BUNDLE_SCHEMA_VERSION: u32 = 1;

/// The largest portable bundle read, in bytes: refused before it is parsed.
pub const MAX_BUNDLE_BYTES: usize = 64 << 20;

/// The most facts, conversations or messages (each) one bundle holds.
pub const MAX_BUNDLE_ITEMS: usize = 100_000;

/// What every share token starts with.
pub const SHARE_TOKEN_PREFIX: &str = "kb_";

/// What a bundle is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
pub enum BundleType {
    /// A task's verified knowledge.
    #[default]
    TaskExport,
    /// Knowledge chosen by hand (a branch's).
    Curated,
    /// A starting point for tasks of a kind.
    Template,
}

/// Who may find a bundle by its share token.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    /// Only its store's users, by id; never found by token.
    #[default]
    Private,
    /// Whoever holds the token, within the team.
    Team,
    /// Whoever holds the token.
    Public,
}

/// A fact as a bundle carries it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BundleFact {
    /// Its id where it was exported (what makes an import idempotent).
    pub id: String,
    /// What is known.
    pub text: String,
    /// How sure its author was, from 0 to 1.
    #[serde(default)]
    pub confidence: Option<f64>,
    /// Where it came from.
    #[serde(default)]
    pub source: Option<String>,
    /// Its verification score, from 0 to 1.
    #[serde(default)]
    pub score: Option<f64>,
    /// Who verified it.
    #[serde(default)]
    pub verified_by: Option<String>,
}

/// A conversation as a bundle carries it, with its messages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BundleConversation {
    /// Its id where it was exported (what makes an import idempotent).
    pub id: String,
    /// What it is about.
    #[serde(default)]
    pub title: Option<String>,
    /// The agent that had it.
    #[serde(default)]
    pub agent: Option<String>,
    /// Its verification score, from 0 to 1.
    #[serde(default)]
    pub verification_score: Option<f64>,
    /// Its messages, in order.
    pub messages: Vec<Message>,
}

/// The portable form of a bundle: what `to_json` writes and `import_bundle` reads. The
/// `content_hash` is the SHA-256 of the same JSON without it, so that a tampered bundle is
/// refused.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BundleData {
    /// [`BUNDLE_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The bundle's name.
    pub name: String,
    /// What it holds, in a sentence or two.
    #[serde(default)]
    pub description: Option<String>,
    /// What it is.
    #[serde(default)]
    pub bundle_type: BundleType,
    /// The task it was exported from.
    #[serde(default)]
    pub source_task_id: Option<String>,
    /// The branch it was exported from.
    #[serde(default)]
    pub source_branch: Option<String>,
    /// The task's summary (its name, goal, status, outcome), when it was a task's.
    #[serde(default)]
    pub task: Option<serde_json::Value>,
    /// Labels for finding it.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The facts.
    #[serde(default)]
    pub facts: Vec<BundleFact>,
    /// The key conversations.
    #[serde(default)]
    pub conversations: Vec<BundleConversation>,
    /// The mean of its items' verification scores.
    #[serde(default)]
    pub verification_score: Option<f64>,
    /// When it was made.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "DateTime<Utc>")]
    pub created_at: DateTime<Utc>,
    /// `sha256:` and the hex digest of this JSON without `content_hash` and `signature`.
    #[serde(default)]
    pub content_hash: String,
    /// The signature of whoever vouches for it ([`BundleData::sign`]), over `content_hash`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<BundleSignature>,
}

impl BundleData {
    /// The hash of the content: the SHA-256 of its JSON with `content_hash` empty and no
    /// `signature`.
    pub fn hash(&self) -> Result<String> {
        if self.content_hash.is_empty() && self.signature.is_none() {
            return self.digest_unsealed();
        }
        let mut unsealed = self.clone();
        unsealed.content_hash.clear();
        unsealed.signature = None;
        unsealed.digest_unsealed()
    }

    /// [`BundleData::hash`] of a bundle whose `content_hash` is empty and that has no
    /// `signature`, streamed into the digest without a copy of the JSON.
    fn digest_unsealed(&self) -> Result<String> {
        struct Hashing(Sha256);
        impl std::io::Write for Hashing {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.update(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut hashing = Hashing(Sha256::new());
        serde_json::to_writer(&mut hashing, self)
            .map_err(|e| Error::storage(format!("could not write a bundle: {e}")))?;
        Ok(format!(
            "sha256:{}",
            crate::store::hex(&hashing.0.finalize())
        ))
    }

    /// Sets `content_hash` for the content as it is (a signature, which was of the content
    /// before, goes).
    pub fn seal(mut self) -> Result<BundleData> {
        self.content_hash.clear();
        self.signature = None;
        self.content_hash = self.digest_unsealed()?;
        Ok(self)
    }

    /// How many messages its conversations hold.
    pub fn message_count(&self) -> usize {
        self.conversations.iter().map(|c| c.messages.len()).sum()
    }

    /// The portable JSON.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string(self)
            .map_err(|e| Error::storage(format!("could not write a bundle: {e}")))
    }

    /// Reads a bundle from outside, checked whole before anything is written: size and
    /// nesting before it is parsed, then the schema version, the content hash, every id, text,
    /// score and message under `limits` (every problem at once), duplicate ids.
    pub fn read(json: &str, limits: &Limits) -> Result<BundleData> {
        let text_limits = Limits {
            max_record_bytes: MAX_BUNDLE_BYTES,
            ..limits.clone()
        };
        // serde would read a struct from an array too, and name its items: a bundle is an
        // object.
        if !json.trim_start().starts_with('{') {
            return Err(Error::invalid(
                "bundle",
                "must be a JSON object, a bundle's portable form",
            ));
        }
        let mut data: BundleData =
            match validate::parse_json("bundle", validate::FieldNames::Bare, json, &text_limits) {
                Ok(data) => data,
                Err(err) => {
                    // Too big or too deep: said as such.
                    validate::check_json_text("bundle", json, &text_limits)?;
                    // Not JSON (cut short, say): the bundle is what is wrong, not a field.
                    if let Err(syntax) = serde_json::from_str::<serde::de::IgnoredAny>(json) {
                        return Err(Error::invalid("bundle", format!("must be JSON: {syntax}")));
                    }
                    // A bundle of another version is named as such, not by the fields this
                    // version lacks.
                    #[derive(Deserialize)]
                    struct Version {
                        schema_version: Option<serde_json::Value>,
                    }
                    return Err(match serde_json::from_str::<Version>(json) {
                        Ok(Version { schema_version })
                            if schema_version != Some(BUNDLE_SCHEMA_VERSION.into()) =>
                        {
                            version_error(schema_version)
                        }
                        _ => err,
                    });
                }
            };
        if data.schema_version != BUNDLE_SCHEMA_VERSION {
            return Err(version_error(Some(data.schema_version.into())));
        }
        data.check(limits)?;
        let signature = data.signature.take();
        let claimed = std::mem::take(&mut data.content_hash);
        // A bundle sealed before times were written in six digits hashed them as chrono
        // writes them: it verifies against that form too.
        let verified = claimed == data.digest_unsealed()?
            || claimed == crate::clock::rfc3339::as_before(|| data.digest_unsealed())?;
        data.content_hash = claimed;
        data.signature = signature;
        if !verified {
            return Err(Error::invalid(
                "content_hash",
                "does not match the content: the bundle was changed after it was made",
            ));
        }
        data.signer()?;
        Ok(data)
    }

    /// Every problem of the content at once.
    pub fn check(&self, limits: &Limits) -> Result<()> {
        let mut c = Collector::default();
        validate::text(&mut c, limits, "name", &self.name);
        if self.name.trim().is_empty() {
            c.push("name", "must not be empty");
        }
        if let Some(description) = &self.description {
            validate::text(&mut c, limits, "description", description);
        }
        c.opt_ident("source_task_id", self.source_task_id.as_deref());
        if let Some(branch) = &self.source_branch
            && let Err(err) = crate::curation::Branch::named("source_branch", branch)
        {
            err.problems()
                .iter()
                .for_each(|p| c.push(&p.field, &p.rule));
        }
        for (i, tag) in self.tags.iter().enumerate() {
            validate::text(&mut c, limits, &format!("tags[{i}]"), tag);
        }
        for (field, count) in [
            ("facts", self.facts.len()),
            ("conversations", self.conversations.len()),
        ] {
            if count > MAX_BUNDLE_ITEMS {
                c.push(field, format!("must have at most {MAX_BUNDLE_ITEMS} items"));
            }
        }
        if self.message_count() > MAX_BUNDLE_ITEMS {
            c.push(
                "conversations",
                format!("must hold at most {MAX_BUNDLE_ITEMS} messages in all"),
            );
        }
        let score = |c: &mut Collector, field: String, score: Option<f64>| {
            if score.is_some_and(|s| check_score(s).is_err()) {
                c.push(field, "must be a number from 0 to 1");
            }
        };
        score(&mut c, "verification_score".into(), self.verification_score);
        let mut seen = std::collections::HashSet::new();
        for (i, fact) in self.facts.iter().enumerate() {
            c.ident(&format!("facts[{i}].id"), &fact.id);
            if !seen.insert(&fact.id) {
                c.push(
                    format!("facts[{i}].id"),
                    "must not repeat another fact's id",
                );
            }
            score(&mut c, format!("facts[{i}].score"), fact.score);
            if let Some(by) = &fact.verified_by {
                validate::text(&mut c, limits, &format!("facts[{i}].verified_by"), by);
            }
        }
        for (i, fact) in self.facts.iter().enumerate() {
            let given = (fact.text.as_str(), fact.confidence, fact.source.as_deref());
            NewFact::check_one(&mut c, i, given, limits);
        }
        let mut seen = std::collections::HashSet::new();
        for (i, conversation) in self.conversations.iter().enumerate() {
            c.ident(&format!("conversations[{i}].id"), &conversation.id);
            if !seen.insert(&conversation.id) {
                c.push(
                    format!("conversations[{i}].id"),
                    "must not repeat another conversation's id",
                );
            }
            c.opt_ident(
                &format!("conversations[{i}].agent"),
                conversation.agent.as_deref(),
            );
            if let Some(title) = &conversation.title {
                validate::text(&mut c, limits, &format!("conversations[{i}].title"), title);
            }
            score(
                &mut c,
                format!("conversations[{i}].verification_score"),
                conversation.verification_score,
            );
            let mut inner = Collector::default();
            check_messages(&mut inner, limits, &conversation.messages);
            if let Err(err) = inner.finish() {
                for p in err.problems() {
                    c.push(format!("conversations[{i}].{}", p.field), &p.rule);
                }
            }
        }
        c.finish()
    }
}

fn version_error(found: Option<serde_json::Value>) -> Error {
    Error::invalid(
        "schema_version",
        format!(
            "must be {BUNDLE_SCHEMA_VERSION} (this library's bundle version), is {}",
            found.map_or_else(|| "missing".to_owned(), |v| v.to_string())
        ),
    )
}

/// A new share token: `kb_` and 256 bits from the operating system's generator, hex-encoded.
pub fn new_share_token() -> Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::storage(format!("the OS random generator failed: {e}")))?;
    Ok(format!("{SHARE_TOKEN_PREFIX}{}", crate::store::hex(&bytes)))
}

/// The digest a share token is found by: the store keys bundles' tokens by it, so that a
/// lookup compares no token text (and so leaks nothing through its timing).
pub fn token_digest(token: &str) -> String {
    crate::store::hex(&Sha256::digest(token.as_bytes()))
}

/// Whether two tokens are equal, in time that depends only on their lengths.
pub fn same_token(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |diff, (x, y)| diff | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    pub(super) fn sample() -> BundleData {
        BundleData {
            schema_version: BUNDLE_SCHEMA_VERSION,
            name: "OAuth2 Token Refresh Fix Playbook".into(),
            description: None,
            bundle_type: BundleType::TaskExport,
            source_task_id: Some("fix-oauth".into()),
            source_branch: Some("task/fix-oauth".into()),
            task: None,
            tags: vec!["oauth".into()],
            facts: vec![BundleFact {
                id: "f1".into(),
                text: "refresh needs retries with backoff".into(),
                confidence: None,
                source: None,
                score: Some(0.9),
                verified_by: Some("judge".into()),
            }],
            conversations: vec![],
            verification_score: Some(0.9),
            created_at: DateTime::UNIX_EPOCH,
            content_hash: String::new(),
            signature: None,
        }
        .seal()
        .unwrap()
    }

    #[test]
    fn a_sealed_bundle_reads_back_and_a_tampered_one_does_not() {
        let bundle = sample();
        let json = bundle.to_json().unwrap();
        assert_eq!(BundleData::read(&json, &Limits::default()).unwrap(), bundle);
        let tampered = json.replace("backoff", "no backoff");
        let err = BundleData::read(&tampered, &Limits::default()).unwrap_err();
        assert_eq!(err.problems()[0].field, "content_hash");
    }

    /// Sealed by a version that wrote times as chrono does (`1970-01-01T00:00:00Z`): it
    /// verifies as it was written, and once re-written by this version (a store's export).
    #[test]
    fn a_bundle_sealed_before_six_digit_times_still_verifies() {
        let data = BundleData {
            content_hash: String::new(),
            ..sample()
        };
        let old = crate::clock::rfc3339::as_before(|| data.seal()?.to_json()).unwrap();
        assert!(old.contains("\"1970-01-01T00:00:00Z\""), "{old}");
        let read = BundleData::read(&old, &Limits::default()).unwrap();
        let rewritten = read.to_json().unwrap();
        assert!(rewritten.contains("\"1970-01-01T00:00:00.000000Z\""));
        assert_eq!(
            BundleData::read(&rewritten, &Limits::default()).unwrap(),
            read
        );
        let tampered = old.replace("backoff", "no backoff");
        let err = BundleData::read(&tampered, &Limits::default()).unwrap_err();
        assert_eq!(err.problems()[0].field, "content_hash");
    }

    #[test]
    fn hostile_bundles_are_refused_by_name() {
        let limits = Limits::default();
        let field = |json: &str| {
            BundleData::read(json, &limits).unwrap_err().problems()[0]
                .field
                .clone()
        };
        let json = sample().to_json().unwrap();
        assert_eq!(field(&json[..json.len() / 2]), "bundle");
        let deep = format!("{{\"x\": {}{}}}", "[".repeat(10_000), "]".repeat(10_000));
        assert_eq!(field(&deep), "bundle");
        assert_eq!(field("{\"schema_version\": 2}"), "schema_version");
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert_eq!(field(&deep), "bundle");
        let deep = format!("{}{}", "{\"a\":".repeat(10_000), "}".repeat(10_000));
        assert_eq!(field(&deep), "bundle");
        assert_eq!(field("[1, 2]"), "bundle");
        let mut twice = sample();
        twice.facts.push(twice.facts[0].clone());
        let twice = twice.seal().unwrap().to_json().unwrap();
        assert_eq!(field(&twice), "facts[1].id");
        let mut bad = serde_json::to_value(sample()).unwrap();
        bad["facts"][0]["score"] = json!(1.5);
        bad["facts"][0]["id"] = json!("../../etc");
        let bad: BundleData = serde_json::from_value(bad).unwrap();
        let problems = bad.check(&limits).unwrap_err();
        let fields: Vec<&str> = problems
            .problems()
            .iter()
            .map(|p| p.field.as_str())
            .collect();
        assert_eq!(fields, ["facts[0].id", "facts[0].score"]);
    }

    #[test]
    fn share_tokens_are_long_random_and_compared_whole() {
        let a = new_share_token().unwrap();
        let b = new_share_token().unwrap();
        assert!(a.starts_with(SHARE_TOKEN_PREFIX) && a.len() == 3 + 64);
        assert_ne!(a, b);
        assert!(same_token(&a, &a.clone()));
        assert!(!same_token(&a, &b));
        assert!(!same_token(&a, &a[..10]));
    }
}
