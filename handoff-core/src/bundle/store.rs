//! Knowledge bundles in the store (docs/design.md §9): made from a task's or a branch's knowledge,
//! found by id or, unless private, by share token, and imported into a branch whole and once.
//!
//! A bundle's document (kind `bundle`, keyed by its id) holds the bundle with its portable
//! form; its share token is found through a document keyed by the token's digest
//! (`bundle_token`), so that a lookup compares no token text.

use std::collections::{BTreeSet, HashSet};

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::bundle::{
    self, BUNDLE_SCHEMA_VERSION, BundleConversation, BundleData, BundleFact, BundleType, Visibility,
};
use crate::curation::store::{
    CONVERSATION, FACT, facts_of, insert_messages, log, oldest_first, task_facts_of,
    write_conversation,
};
use crate::curation::{
    Branch, Conversation, CurationChange, Fact, FactStatus, StoredMessage, Thresholds, Verdict,
    Verifier, VerifyItem,
};
use crate::error::{Error, Result};
use crate::redact::redact;
use crate::store::{Doc, Tx, body, parsed};
use crate::store::{Store, hex};
use crate::validate::{self, Collector};

pub(super) const BUNDLE: &str = "bundle";
const TOKEN: &str = "bundle_token";

/// How far a bundle got through the gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
pub enum BundleStatus {
    /// Holds knowledge that was not all verified.
    Draft,
    /// Holds verified knowledge only.
    Verified,
}

/// A bundle as the store keeps it: what it is, its counts and scores, who may find it, and its
/// portable form ([`Bundle::to_json`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
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
    /// The branch it was made from.
    pub source_branch: Option<String>,
    /// How many facts it holds.
    pub fact_count: u64,
    /// How many conversations it holds.
    pub conversation_count: u64,
    /// How many messages its conversations hold.
    pub message_count: u64,
    /// Whether everything in it was verified.
    pub verification_status: BundleStatus,
    /// The mean of its items' scores.
    pub verification_score: Option<f64>,
    /// Who verified its items (their verifiers' names, joined).
    pub verified_by: Option<String>,
    /// `kb_` and 256 random bits: finds the bundle; `None` while it is private. Sharing a
    /// private bundle issues a new token, and making it private again kills it.
    pub share_token: Option<String>,
    /// Who may find it by its token.
    pub visibility: Visibility,
    /// Labels for finding it.
    pub tags: Vec<String>,
    /// The portable form's content hash.
    pub content_hash: String,
    /// When it was made.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "DateTime<Utc>")]
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "DateTime<Utc>")]
    pub updated_at: DateTime<Utc>,
    /// The portable form.
    pub data: BundleData,
}

impl Bundle {
    /// The portable JSON, which `import_bundle` reads (in this store or another).
    pub fn to_json(&self) -> Result<String> {
        self.data.to_json()
    }
}

/// A new bundle, as [`Store::create_bundle`] takes it.
#[derive(Clone, Debug, PartialEq)]
pub struct NewBundle {
    /// Its name.
    pub name: String,
    /// Package this task's knowledge (`task/<task>` and its agents' branches)…
    pub task_id: Option<String>,
    /// …or this branch's.
    pub branch: Option<String>,
    /// Only verified facts and conversations (default true); otherwise everything but what
    /// was invalidated.
    pub verified_only: bool,
    /// Who may find it by its token (default private).
    pub visibility: Visibility,
    /// What it is (default `task_export`).
    pub bundle_type: BundleType,
    /// Labels for finding it.
    pub tags: Vec<String>,
    /// What it holds.
    pub description: Option<String>,
    /// Replace secrets in every text with `[REDACTED:<rule>]` (default true).
    pub redact: bool,
}

impl NewBundle {
    /// A private, redacted bundle of `task_id`'s verified knowledge.
    pub fn of_task(name: impl Into<String>, task_id: impl Into<String>) -> NewBundle {
        NewBundle {
            name: name.into(),
            task_id: Some(task_id.into()),
            branch: None,
            verified_only: true,
            visibility: Visibility::Private,
            bundle_type: BundleType::TaskExport,
            tags: Vec::new(),
            description: None,
            redact: true,
        }
    }
}

/// What an import added and what it found already there.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct ImportReport {
    /// The bundle's name.
    pub bundle: String,
    /// The branch imported into.
    pub target_branch: Option<Branch>,
    /// Facts written.
    pub facts_added: u64,
    /// Facts already there (imported before).
    pub facts_skipped: u64,
    /// Conversations written.
    pub conversations_added: u64,
    /// Conversations already there.
    pub conversations_skipped: u64,
    /// Messages written with the conversations.
    pub messages_added: u64,
    /// The public key that signed the bundle (`ed25519:...`), if it is signed.
    pub signed_by: Option<String>,
    /// Whether this store trusts that key: then the bundle's verdicts were taken as verified;
    /// otherwise they were kept as the bundle's claim (`verified_by: bundle:<hash>`), its facts
    /// and conversations unverified until this store verifies them.
    pub trusted: bool,
}

/// What `create_bundle` says when it is given neither a task nor a branch.
pub(crate) const NO_SOURCE: &str = "a task or a branch must be given";

pub(super) fn no_bundle(id: &str) -> Error {
    Error::NotFound {
        what: "bundle",
        id: id.to_owned(),
    }
}

/// The id an imported conversation gets on `target`: the same for the same bundle
/// conversation, so that importing twice finds it.
fn imported_conversation_id(target: &Branch, source_id: &str) -> String {
    let digest = Sha256::digest(format!("{target}\n{source_id}").as_bytes());
    format!("imported-{}", hex(&digest[..16]))
}

fn redacted(text: &str, on: bool) -> String {
    if on { redact(text).0 } else { text.to_owned() }
}

impl Store {
    /// Packages a task's (or a branch's) knowledge as a bundle: its verified facts and key
    /// conversations (verified or cherry-picked; with `verified_only` false, everything not
    /// invalidated) with their messages, the task's summary and the scores, redacted by
    /// default, with a share token.
    pub fn create_bundle(&self, new: NewBundle) -> Result<Bundle> {
        let mut c = Collector::default();
        validate::text(&mut c, &self.limits, "name", &new.name);
        if new.name.trim().is_empty() {
            c.push("name", "must not be empty");
        }
        if let Some(description) = &new.description {
            validate::text(&mut c, &self.limits, "description", description);
        }
        for (i, tag) in new.tags.iter().enumerate() {
            validate::text(&mut c, &self.limits, &format!("tags[{i}]"), tag);
        }
        c.opt_ident("task_id", new.task_id.as_deref());
        // Where the knowledge lies: the branch's facts, or the task's and its agents'.
        let source = match (&new.branch, &new.task_id) {
            (Some(name), _) => match Branch::named("branch", name) {
                Ok(branch) => Some((vec![facts_of(&branch)], branch)),
                Err(err) => {
                    err.problems()
                        .iter()
                        .for_each(|p| c.push(&p.field, &p.rule));
                    None
                }
            },
            // A bad task id is already named above.
            (None, Some(task)) => Branch::of_task(task)
                .ok()
                .map(|branch| (task_facts_of(&branch).to_vec(), branch)),
            (None, None) => {
                c.push("task_id", NO_SOURCE);
                None
            }
        };
        c.finish()?;
        let (prefixes, source_branch) =
            source.ok_or_else(|| Error::invalid("task_id", NO_SOURCE))?;

        // Bundles follow provenance, not the current branch: a fact a merge moved up is still
        // the source's knowledge (its status `promoted` says it passed the gate), so a task's
        // bundle holds it after the task was merged into `main` as before.
        let mut facts = self.facts_under(&prefixes, |f| {
            f.status == FactStatus::Promoted || f.status.is_key(new.verified_only)
        })?;
        oldest_first(&mut facts);
        let facts = once_each(facts, |f| &f.id, |f| f.origin.as_deref());
        let in_source = |c: &Conversation| {
            c.branch == source_branch
                || (new.branch.is_none() && c.branch.parent().as_ref() == Some(&source_branch))
        };
        // A promoted conversation (copied up by a merge) keeps the verdict it went up with.
        let key = |c: &Conversation| {
            c.verification_status != Verdict::Invalidated
                && (!new.verified_only
                    || c.verification_status == Verdict::Verified
                    || c.cherry_picked_from.is_some())
        };
        // A task's conversations come from its index (every one of its branches, and the
        // copies a merge made of them, which the source filter leaves out).
        let candidates = match (&new.branch, &new.task_id) {
            (None, Some(task)) => self.list_conversations(None, Some(task))?,
            _ => self.list_conversations(None, None)?,
        };
        let conversations: Vec<Conversation> = once_each(
            candidates
                .into_iter()
                .filter(|c| in_source(c) && key(c))
                .collect(),
            |c| &c.id,
            |c| c.origin.as_deref(),
        );

        let on = new.redact;
        let mut scores = Vec::new();
        let mut verifiers = BTreeSet::new();
        let bundle_facts: Vec<BundleFact> = facts
            .iter()
            .map(|f| {
                scores.extend(f.score);
                verifiers.extend(f.verified_by.clone());
                BundleFact {
                    id: f.id.clone(),
                    text: redacted(&f.text, on),
                    confidence: f.confidence,
                    source: f.source.as_deref().map(|s| redacted(s, on)),
                    score: f.score,
                    verified_by: f.verified_by.clone(),
                }
            })
            .collect();
        let mut bundle_conversations = Vec::new();
        for conversation in &conversations {
            scores.extend(conversation.verification_score);
            verifiers.extend(conversation.verified_by.clone());
            let messages = self
                .messages(&conversation.id, None, None)?
                .into_iter()
                .map(|m| {
                    let mut message = m.message;
                    message.content = redacted(&message.content, on);
                    message
                })
                .collect();
            bundle_conversations.push(BundleConversation {
                id: conversation.id.clone(),
                title: conversation.title.as_deref().map(|t| redacted(t, on)),
                agent: conversation.agent.clone(),
                verification_score: conversation.verification_score,
                messages,
            });
        }
        let task = match &new.task_id {
            Some(id) => match self.get_task(id) {
                Ok(task) => Some(json!({
                    "id": task.header.id,
                    "name": redacted(&task.header.name, on),
                    "goal": redacted(&task.header.goal, on),
                    "status": task.header.status,
                })),
                Err(Error::NotFound { .. }) => None,
                Err(err) => return Err(err),
            },
            None => None,
        };
        #[allow(clippy::cast_precision_loss)] // counts of items, far below 2^52
        let verification_score =
            (!scores.is_empty()).then(|| scores.iter().sum::<f64>() / scores.len() as f64);
        let now = self.clock.now();
        let data = BundleData {
            schema_version: BUNDLE_SCHEMA_VERSION,
            name: new.name.clone(),
            description: new.description.clone(),
            bundle_type: new.bundle_type,
            source_task_id: new.task_id.clone(),
            source_branch: Some(source_branch.to_string()),
            task,
            tags: new.tags.clone(),
            facts: bundle_facts,
            conversations: bundle_conversations,
            verification_score,
            created_at: now,
            content_hash: String::new(),
            signature: None,
        }
        .seal()?;
        data.check(&self.limits)?;
        let everything_verified = facts
            .iter()
            .all(|f| matches!(f.status, FactStatus::Verified | FactStatus::Promoted))
            && conversations
                .iter()
                .all(|c| c.verification_status == Verdict::Verified);
        let bundle = Bundle {
            id: crate::store::new_id(now),
            name: new.name,
            description: new.description,
            bundle_type: new.bundle_type,
            source_task_id: new.task_id,
            source_branch: Some(source_branch.to_string()),
            fact_count: data.facts.len() as u64,
            conversation_count: data.conversations.len() as u64,
            message_count: data.message_count() as u64,
            verification_status: if everything_verified
                && !(facts.is_empty() && conversations.is_empty())
            {
                BundleStatus::Verified
            } else {
                BundleStatus::Draft
            },
            verification_score,
            verified_by: (!verifiers.is_empty())
                .then(|| verifiers.into_iter().collect::<Vec<_>>().join(", ")),
            share_token: match new.visibility {
                Visibility::Private => None,
                _ => Some(bundle::new_share_token()?),
            },
            visibility: new.visibility,
            tags: new.tags,
            content_hash: data.content_hash.clone(),
            created_at: now,
            updated_at: now,
            data,
        };
        self.backend.write(&mut |tx| {
            write_bundle(tx, &bundle, 1)?;
            if let Some(token) = &bundle.share_token {
                index_token(tx, &bundle.id, token)?;
            }
            let detail = json!({"bundle_id": bundle.id, "name": bundle.name,
                                "facts": bundle.fact_count,
                                "conversations": bundle.conversation_count});
            log(
                tx,
                CurationChange::BundleCreated,
                &source_branch,
                detail,
                now,
            )
        })?;
        Ok(bundle)
    }

    /// The bundle with this id.
    pub fn get_bundle(&self, id: &str) -> Result<Bundle> {
        validate::ident("id", id)?;
        let doc = self.backend.doc(BUNDLE, id)?.ok_or_else(|| no_bundle(id))?;
        read_bundle(&doc)
    }

    /// The store's bundles, oldest first, optionally only those of one visibility.
    pub fn list_bundles(&self, visibility: Option<Visibility>) -> Result<Vec<Bundle>> {
        let mut bundles: Vec<Bundle> = self
            .backend
            .docs(BUNDLE, "", None, usize::MAX)?
            .iter()
            .map(|(_, doc)| read_bundle(doc))
            .collect::<Result<_>>()?;
        bundles.retain(|b| visibility.is_none_or(|v| b.visibility == v));
        bundles.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(bundles)
    }

    /// The bundle this share token opens. A private bundle is never found by token, and a
    /// wrong token, a private bundle's and a missing one all give the same `NotFound`.
    pub fn bundle_by_token(&self, token: &str) -> Result<Bundle> {
        let not_found = || Error::NotFound {
            what: "bundle",
            id: "(share token)".to_owned(),
        };
        if token.len() > 128 {
            return Err(not_found());
        }
        let Some(index) = self.backend.doc(TOKEN, &bundle::token_digest(token))? else {
            return Err(not_found());
        };
        let id: serde_json::Value = parsed("bundle token", &index)?;
        let id = id["bundle_id"].as_str().unwrap_or_default();
        let Some(doc) = self.backend.doc(BUNDLE, id)? else {
            return Err(not_found());
        };
        let bundle = read_bundle(&doc)?;
        if bundle
            .share_token
            .as_deref()
            .is_some_and(|own| bundle::same_token(own, token))
        {
            Ok(bundle)
        } else {
            Err(not_found())
        }
    }

    /// Changes who may find a bundle by its token: a private bundle shared gets a new token,
    /// a shared one made private loses its token for good.
    pub fn set_visibility(&self, id: &str, visibility: Visibility) -> Result<Bundle> {
        validate::ident("id", id)?;
        let now = self.clock.now();
        // Drawn outside the write, which may run more than once.
        let fresh = bundle::new_share_token()?;
        let mut changed = None;
        self.backend.write(&mut |tx| {
            let doc = tx.doc(BUNDLE, id)?.ok_or_else(|| no_bundle(id))?;
            let mut bundle: Bundle = parsed("bundle", &doc)?;
            let old = bundle.share_token.take();
            // Shared to shared keeps its token; anything else ends it (a store written before
            // kept a token for a private bundle: it is not the one the bundle is shared with).
            let keep =
                visibility != Visibility::Private && bundle.visibility != Visibility::Private;
            match old {
                Some(old) if keep => bundle.share_token = Some(old),
                old => {
                    if let Some(old) = old {
                        tx.delete_doc(TOKEN, &bundle::token_digest(&old))?;
                    }
                    if visibility != Visibility::Private {
                        index_token(tx, &bundle.id, &fresh)?;
                        bundle.share_token = Some(fresh.clone());
                    }
                }
            }
            bundle.visibility = visibility;
            bundle.updated_at = now;
            write_bundle(tx, &bundle, doc.version + 1)?;
            changed = Some(bundle);
            Ok(())
        })?;
        changed.ok_or_else(|| Error::storage("write returned no bundle"))
    }

    /// Runs the verification gate on a bundle's contents (the seed's `POST
    /// /bundles/{id}/verify`): `verifier` scores each of its facts and conversations, as
    /// `verify` scores a branch's, and the bundle records the outcome: `verified` when every
    /// item passed `thresholds` (otherwise `draft`), the mean score, and the verifier's name as
    /// `verified_by`. The portable form is left as it was (its content hash and any signature
    /// stay valid); each item's score goes to the curation log. The verifier is asked before
    /// anything is written; when it fails on an item, or scores it with NaN or outside 0..1,
    /// nothing is recorded and the error names the item (`facts[2]`, `conversations[0]`).
    pub fn verify_bundle(
        &self,
        id: &str,
        verifier: &mut dyn Verifier,
        thresholds: &Thresholds,
    ) -> Result<Bundle> {
        thresholds.check()?;
        let bundle = self.get_bundle(id)?;
        let data = &bundle.data;
        if data.facts.is_empty() && data.conversations.is_empty() {
            return Err(Error::invalid(
                "id",
                "names a bundle that holds nothing to verify",
            ));
        }
        let by = verifier.name().to_owned();
        self.check_text("verifier.name", &by)?;
        let branch = bundle
            .source_branch
            .as_deref()
            .and_then(|b| Branch::parse(b).ok())
            .unwrap_or_else(Branch::main);
        let mut scored = Vec::new();
        let mut ask = |field: String, item: VerifyItem<'_>| -> Result<f64> {
            let answer = verifier
                .verify(item)
                .and_then(|answer| crate::curation::check_score(answer.score));
            answer.map_err(|err| Error::invalid(field, format!("the verifier failed: {err}")))
        };
        // Asked first, outside any transaction: a verifier may take seconds per item.
        for (i, fact) in data.facts.iter().enumerate() {
            let as_fact = Fact {
                id: fact.id.clone(),
                branch: branch.clone(),
                text: fact.text.clone(),
                confidence: fact.confidence,
                source: fact.source.clone(),
                status: FactStatus::Active,
                score: fact.score,
                explanation: None,
                verified_by: fact.verified_by.clone(),
                verified_at: None,
                origin: None,
                created_at: data.created_at,
            };
            let score = ask(format!("facts[{i}]"), VerifyItem::Fact(&as_fact))?;
            scored.push((
                "fact",
                fact.id.clone(),
                score,
                thresholds.fact_verdict(score),
            ));
        }
        for (i, conversation) in data.conversations.iter().enumerate() {
            let as_conversation = Conversation {
                id: conversation.id.clone(),
                branch: branch.clone(),
                title: conversation.title.clone(),
                task_id: data.source_task_id.clone(),
                agent: conversation.agent.clone(),
                message_count: conversation.messages.len() as u64,
                verification_status: Verdict::Unverified,
                verification_score: conversation.verification_score,
                explanation: None,
                verified_by: None,
                cherry_picked_from: None,
                origin: None,
                promoted: false,
                created_at: data.created_at,
            };
            let messages: Vec<StoredMessage> = conversation
                .messages
                .iter()
                .zip(1..)
                .map(|(message, seq)| StoredMessage {
                    seq,
                    message: message.clone(),
                    is_cherry_picked: false,
                    cherry_picked_to: Vec::new(),
                })
                .collect();
            let item = VerifyItem::Conversation(&as_conversation, &messages);
            let score = ask(format!("conversations[{i}]"), item)?;
            let verdict = thresholds.conversation_verdict(score);
            scored.push(("conversation", conversation.id.clone(), score, verdict));
        }
        #[allow(clippy::cast_precision_loss)] // counts of items, far below 2^52
        let mean = scored.iter().map(|(.., score, _)| score).sum::<f64>() / scored.len() as f64;
        let passed = scored.iter().all(|(.., v)| *v == Verdict::Verified);
        let now = self.clock.now();
        let mut changed = None;
        self.backend.write(&mut |tx| {
            let doc = tx.doc(BUNDLE, id)?.ok_or_else(|| no_bundle(id))?;
            let mut stored: Bundle = parsed("bundle", &doc)?;
            stored.verification_status = if passed {
                BundleStatus::Verified
            } else {
                BundleStatus::Draft
            };
            stored.verification_score = Some(mean);
            stored.verified_by = Some(by.clone());
            stored.updated_at = now;
            write_bundle(tx, &stored, doc.version + 1)?;
            let items: Vec<serde_json::Value> = scored
                .iter()
                .map(|(kind, id, score, verdict)| {
                    json!({"kind": kind, "id": id, "score": score, "verdict": verdict})
                })
                .collect();
            let detail = json!({"bundle_id": id, "verified_by": by, "score": mean,
                                "status": stored.verification_status, "items": items});
            log(tx, CurationChange::Verified, &branch, detail, now)?;
            changed = Some(as_shown(stored));
            Ok(())
        })?;
        changed.ok_or_else(|| Error::storage("write returned no bundle"))
    }

    /// Deletes a bundle and its share token (what was imported from it stays).
    pub fn delete_bundle(&self, id: &str) -> Result<()> {
        validate::ident("id", id)?;
        self.backend.write(&mut |tx| {
            let doc = tx.doc(BUNDLE, id)?.ok_or_else(|| no_bundle(id))?;
            let bundle: Bundle = parsed("bundle", &doc)?;
            if let Some(token) = &bundle.share_token {
                tx.delete_doc(TOKEN, &bundle::token_digest(token))?;
            }
            tx.delete_doc(BUNDLE, id)
        })
    }

    /// Imports a bundle's portable JSON into `target_branch`, checked whole before anything is
    /// written (size and nesting before parsing, schema version, content hash, signature, every
    /// id, text and message): its facts and conversations with their messages, in one
    /// transaction. Importing the same bundle again adds nothing.
    ///
    /// Anyone can edit a bundle and seal it again, so the verdicts it carries are kept as its
    /// claim (`verified_by: bundle:<hash>`, the score kept, the item unverified) unless the
    /// bundle is signed by a key this store trusts ([`Store::trust_bundle_keys`]); then an
    /// item whose score passes the gate is verified. Verify the branch to check the rest.
    pub fn import_bundle(&self, json: &str, target_branch: &str) -> Result<ImportReport> {
        self.import_or_check(json, target_branch, Mode::Import)
    }

    /// What [`import_bundle`](Self::import_bundle) would do, without doing it: the bundle is
    /// checked whole the same way, and the report counts what importing it into
    /// `target_branch` would add and what is already there. Nothing is written.
    pub fn check_bundle_import(&self, json: &str, target_branch: &str) -> Result<ImportReport> {
        self.import_or_check(json, target_branch, Mode::Check)
    }

    fn import_or_check(&self, json: &str, target_branch: &str, mode: Mode) -> Result<ImportReport> {
        let target = Branch::named("target_branch", target_branch)?;
        let data = BundleData::read(json, &self.limits)?;
        let signer = data.signer()?;
        let now = self.clock.now();
        let gate = Thresholds::default();
        let mut report = ImportReport::default();
        self.backend.write(&mut |tx| {
            let trusted = match &signer {
                Some(key) => tx.doc(crate::bundle::keys::TRUSTED_KEY, key)?.is_some(),
                None => false,
            };
            // Who vouches for what the bundle says, on every item it brings.
            let short = data
                .content_hash
                .get(..7 + 16)
                .unwrap_or(&data.content_hash);
            let vouched = match (&signer, trusted) {
                (Some(key), true) => format!("bundle:{short} signed by {key}"),
                _ => format!("bundle:{short}"),
            };
            report = ImportReport {
                bundle: data.name.clone(),
                target_branch: Some(target.clone()),
                signed_by: signer.clone(),
                trusted,
                ..ImportReport::default()
            };
            // What the target holds already, by id, by origin and by text: a bundle of a task
            // merged into the target since (seed 001's order: merge, bundle, import) brings
            // what the merge copied there, under the ids the copies came from.
            let mut present: HashSet<String> = HashSet::new();
            if !data.facts.is_empty() {
                for (_, doc) in tx.docs(FACT, &facts_of(&target))? {
                    let there: Fact = parsed("fact", &doc)?;
                    present.extend(there.origin);
                    present.insert(there.id);
                    present.insert(there.text);
                }
            }
            for fact in &data.facts {
                if present.contains(&fact.id) || present.contains(&fact.text) {
                    report.facts_skipped += 1;
                    continue;
                }
                let verified = trusted && fact.score.is_some_and(|s| s >= gate.fact_threshold);
                let stored = Fact {
                    id: fact.id.clone(),
                    branch: target.clone(),
                    text: fact.text.clone(),
                    confidence: fact.confidence,
                    source: fact.source.clone(),
                    status: if verified {
                        FactStatus::Verified
                    } else {
                        FactStatus::Active
                    },
                    score: fact.score,
                    explanation: claimed(fact.score, fact.verified_by.as_deref(), trusted),
                    verified_by: Some(vouched.clone()),
                    verified_at: None,
                    // It keeps its id: nothing in this store is its origin.
                    origin: None,
                    created_at: now,
                };
                if mode == Mode::Import {
                    crate::context::knowledge::insert_fact(tx, &stored)?;
                }
                report.facts_added += 1;
            }
            let copied: HashSet<String> = if data.conversations.is_empty() {
                HashSet::new()
            } else {
                tx.docs(CONVERSATION, "")?
                    .iter()
                    .map(|(_, doc)| parsed::<Conversation>("conversation", doc))
                    .filter_map(|c| c.ok().filter(|c| c.branch == target)?.origin)
                    .collect()
            };
            for conversation in &data.conversations {
                let id = imported_conversation_id(&target, &conversation.id);
                if copied.contains(&conversation.id) || tx.doc(CONVERSATION, &id)?.is_some() {
                    report.conversations_skipped += 1;
                    continue;
                }
                let verified = trusted
                    && conversation
                        .verification_score
                        .is_some_and(|s| s >= gate.conversation_threshold);
                let stored = Conversation {
                    id: id.clone(),
                    branch: target.clone(),
                    title: conversation.title.clone(),
                    task_id: target.task_id().map(str::to_owned),
                    agent: conversation.agent.clone(),
                    message_count: conversation.messages.len() as u64,
                    verification_status: if verified {
                        Verdict::Verified
                    } else {
                        Verdict::Unverified
                    },
                    verification_score: conversation.verification_score,
                    explanation: claimed(conversation.verification_score, None, trusted),
                    verified_by: Some(vouched.clone()),
                    cherry_picked_from: None,
                    origin: Some(conversation.id.clone()),
                    promoted: false,
                    created_at: now,
                };
                report.conversations_added += 1;
                if mode == Mode::Check {
                    report.messages_added += conversation.messages.len() as u64;
                    continue;
                }
                write_conversation(tx, &stored, 1)?;
                report.messages_added +=
                    insert_messages(tx, &id, 1, conversation.messages.iter().cloned())?;
            }
            if mode == Mode::Check {
                return Ok(());
            }
            let detail = json!({"bundle": data.name, "content_hash": data.content_hash,
                                "signed_by": signer, "trusted": trusted,
                                "facts": report.facts_added,
                                "conversations": report.conversations_added,
                                "skipped": report.facts_skipped + report.conversations_skipped});
            log(tx, CurationChange::BundleImported, &target, detail, now)
        })?;
        Ok(report)
    }
}

/// `items` with each piece of knowledge once: an item a merge copied within the source (an
/// agent's fact copied up to its task's branch) is there as the copy and as its origin, and
/// only the copy is kept (it is what the source holds now). Order is kept.
fn once_each<T>(
    items: Vec<T>,
    id: impl Fn(&T) -> &String,
    origin: impl Fn(&T) -> Option<&str>,
) -> Vec<T> {
    let copied: HashSet<String> = items
        .iter()
        .filter_map(|item| origin(item).map(str::to_owned))
        .collect();
    items
        .into_iter()
        .filter(|item| !copied.contains(id(item)))
        .collect()
}

/// What an imported item's explanation says of the verdict the bundle carried.
fn claimed(score: Option<f64>, by: Option<&str>, trusted: bool) -> Option<String> {
    let score = score?;
    let by = by.map(|by| format!(" by {by}")).unwrap_or_default();
    Some(match trusted {
        true => format!("scored {score}{by} in a bundle signed by a key this store trusts"),
        false => format!(
            "scored {score}{by} in the bundle: its claim, not verified in this store (verify \
             the branch, or trust the key that signs the bundle)"
        ),
    })
}

/// Whether an import writes, or only says what it would write.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Import,
    Check,
}

/// A stored bundle as callers see it: a private one shows no token (a store written before
/// kept one from its making; it never works, and sharing issues a new one).
pub(super) fn read_bundle(doc: &Doc) -> Result<Bundle> {
    parsed("bundle", doc).map(as_shown)
}

/// `bundle` as callers see it (see [`read_bundle`]).
pub(super) fn as_shown(mut bundle: Bundle) -> Bundle {
    if bundle.visibility == Visibility::Private {
        bundle.share_token = None;
    }
    bundle
}

/// Makes `token` find the bundle `id`.
fn index_token(tx: &mut dyn Tx, id: &str, token: &str) -> Result<()> {
    let index = Doc {
        version: 1,
        body: body(&json!({ "bundle_id": id }))?,
    };
    tx.insert_doc(TOKEN, &bundle::token_digest(token), &index)
}

pub(super) fn write_bundle(tx: &mut dyn Tx, bundle: &Bundle, version: u64) -> Result<()> {
    let doc = Doc {
        version,
        body: body(bundle)?,
    };
    if version == 1 {
        tx.insert_doc(BUNDLE, &bundle.id, &doc)
    } else {
        tx.update_doc(BUNDLE, &bundle.id, &doc)
    }
}
