//! The operations on knowledge bundles, task replays and run comparisons (docs/design.md §9), under
//! the names every face shows: Python's `create_bundle`, the CLI's `handoff bundle create`, the
//! MCP tool `bundle_create`; `replay` is `handoff task replay` and `task_replay`.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::bundle::{BundleType, Visibility};
use crate::curation::{Thresholds, Verifier};
use crate::error::{Error, Problem, Result};
use crate::ops::{Access, Arguments, Operation, branch_problems};
use crate::store::{Bundle, ImportReport, NO_SOURCE, NewBundle, Store};
use crate::validate::Limits;

/// Packages a task's (or a branch's) knowledge as a bundle: its verified facts and key
/// conversations with their messages, the task's summary and the scores, redacted by default,
/// with a share token (`kb_` and 256 random bits) that finds it unless it is private.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateBundleArgs {
    /// The bundle's name.
    pub name: String,
    /// Package this task's knowledge (`task/<task>` and its agents' branches)…
    #[serde(default)]
    pub task_id: Option<String>,
    /// …or this branch's (`branch_name` is accepted too).
    #[serde(default, alias = "branch_name")]
    #[schemars(extend("x-aliases" = ["branch_name"]))]
    pub branch: Option<String>,
    /// Only verified facts and conversations (default true); false: everything not
    /// invalidated.
    #[serde(default)]
    pub verified_only: Option<bool>,
    /// Who may find it by its token: `private` (default, nobody), `team` or `public`.
    #[serde(default)]
    pub visibility: Option<Visibility>,
    /// What it is: `task_export` (default), `curated` or `template`.
    #[serde(default)]
    pub bundle_type: Option<BundleType>,
    /// Labels for finding it.
    #[serde(default)]
    pub tags: Vec<String>,
    /// What it holds.
    #[serde(default)]
    pub description: Option<String>,
    /// Replace secrets with `[REDACTED:<rule>]` (default true).
    #[serde(default)]
    pub redact: Option<bool>,
}

impl Arguments for CreateBundleArgs {
    fn problems(&self, _: &Limits) -> Vec<Problem> {
        let mut problems = Vec::new();
        if let Some(branch) = &self.branch {
            branch_problems(&mut problems, "branch", branch);
        }
        if self.task_id.is_none() && self.branch.is_none() {
            problems.push(Problem::new("task_id", NO_SOURCE));
        }
        problems
    }
}

/// The `create_bundle` operation.
pub struct CreateBundle;

impl Operation for CreateBundle {
    const NAME: &'static str = "create_bundle";
    const ACCESS: Access = Access::Creates;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("bundle", "create"));
    const POSITIONAL: &'static [&'static str] = &["name"];
    type Args = CreateBundleArgs;
    type Output = Bundle;

    fn run(store: &Store, args: CreateBundleArgs) -> Result<Bundle> {
        store.create_bundle(NewBundle {
            name: args.name,
            task_id: args.task_id,
            branch: args.branch,
            verified_only: args.verified_only.unwrap_or(true),
            visibility: args.visibility.unwrap_or_default(),
            bundle_type: args.bundle_type.unwrap_or_default(),
            tags: args.tags,
            description: args.description,
            redact: args.redact.unwrap_or(true),
        })
    }
}

/// The bundle with this id; `NOT_FOUND` if there is none.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetBundleArgs {
    /// The bundle's id.
    pub id: String,
}

impl Arguments for GetBundleArgs {}

/// The `get_bundle` operation.
pub struct GetBundle;

impl Operation for GetBundle {
    const NAME: &'static str = "get_bundle";
    const ACCESS: Access = Access::Reads;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("bundle", "show"));
    const POSITIONAL: &'static [&'static str] = &["id"];
    type Args = GetBundleArgs;
    type Output = Bundle;

    fn run(store: &Store, args: GetBundleArgs) -> Result<Bundle> {
        store.get_bundle(&args.id)
    }
}

/// The store's bundles, oldest first, optionally only those of one visibility.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListBundlesArgs {
    /// Only bundles of this visibility.
    #[serde(default)]
    pub visibility: Option<Visibility>,
}

impl Arguments for ListBundlesArgs {}

/// The `list_bundles` operation.
pub struct ListBundles;

impl Operation for ListBundles {
    const NAME: &'static str = "list_bundles";
    const ACCESS: Access = Access::Reads;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("bundle", "list"));
    const POSITIONAL: &'static [&'static str] = &[];
    type Args = ListBundlesArgs;
    type Output = Vec<Bundle>;

    fn run(store: &Store, args: ListBundlesArgs) -> Result<Vec<Bundle>> {
        store.list_bundles(args.visibility)
    }
}

/// The bundle a share token opens. A private bundle is never found by its token; a wrong
/// token, a private bundle's and a missing bundle all give the same `NOT_FOUND`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BundleByTokenArgs {
    /// The share token (`kb_…`).
    pub token: String,
}

impl Arguments for BundleByTokenArgs {}

/// The `bundle_by_token` operation.
pub struct BundleByToken;

impl Operation for BundleByToken {
    const NAME: &'static str = "bundle_by_token";
    const ACCESS: Access = Access::Reads;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("bundle", "shared"));
    const POSITIONAL: &'static [&'static str] = &["token"];
    type Args = BundleByTokenArgs;
    type Output = Bundle;

    fn run(store: &Store, args: BundleByTokenArgs) -> Result<Bundle> {
        store.bundle_by_token(&args.token)
    }
}

/// Changes who may find a bundle by its token.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetVisibilityArgs {
    /// The bundle's id.
    pub id: String,
    /// `private`, `team` or `public`.
    pub visibility: Visibility,
}

impl Arguments for SetVisibilityArgs {}

/// The `set_visibility` operation.
pub struct SetVisibility;

impl Operation for SetVisibility {
    const NAME: &'static str = "set_visibility";
    const ACCESS: Access = Access::Writes;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("bundle", "visibility"));
    const POSITIONAL: &'static [&'static str] = &["id", "visibility"];
    type Args = SetVisibilityArgs;
    type Output = Bundle;

    fn run(store: &Store, args: SetVisibilityArgs) -> Result<Bundle> {
        store.set_visibility(&args.id, args.visibility)
    }
}

/// Signs a bundle with a secret key (`ed25519-secret:...`): a store that trusts its public
/// key imports the bundle's verdicts as verified. The signature travels in the portable form.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SignBundleArgs {
    /// The bundle's id.
    pub id: String,
    /// `ed25519-secret:` and 64 hex digits (a key pair comes from `handoff keygen FILE` or `generate_bundle_key`).
    pub secret_key: String,
}

impl Arguments for SignBundleArgs {}

/// The `sign_bundle` operation.
pub struct SignBundle;

impl Operation for SignBundle {
    const NAME: &'static str = "sign_bundle";
    const ACCESS: Access = Access::Writes;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("bundle", "sign"));
    const POSITIONAL: &'static [&'static str] = &["id"];
    type Args = SignBundleArgs;
    type Output = Bundle;

    fn run(store: &Store, args: SignBundleArgs) -> Result<Bundle> {
        store.sign_bundle(&args.id, &args.secret_key)
    }
}

/// Trusts public keys (`ed25519:...`) to vouch for bundles, or stops trusting them: a bundle
/// signed by a trusted key is imported with its verdicts; any other bundle's verdicts stay its
/// claim. Returns the keys trusted afterwards (none given: only lists them).
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrustBundleKeysArgs {
    /// Public keys to trust.
    #[serde(default)]
    pub trust: Vec<String>,
    /// Public keys to stop trusting.
    #[serde(default)]
    pub distrust: Vec<String>,
}

impl Arguments for TrustBundleKeysArgs {}

/// The `trust_bundle_keys` operation.
pub struct TrustBundleKeys;

impl Operation for TrustBundleKeys {
    const NAME: &'static str = "trust_bundle_keys";
    const ACCESS: Access = Access::Writes;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("bundle", "trust"));
    const POSITIONAL: &'static [&'static str] = &[];
    type Args = TrustBundleKeysArgs;
    type Output = Vec<crate::store::TrustedKey>;

    fn run(store: &Store, args: TrustBundleKeysArgs) -> Result<Vec<crate::store::TrustedKey>> {
        store.trust_bundle_keys(&args.trust, &args.distrust)
    }
}

/// Deletes a bundle and its share token; what was imported from it stays.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteBundleArgs {
    /// The bundle's id.
    pub id: String,
}

impl Arguments for DeleteBundleArgs {}

/// The `delete_bundle` operation.
pub struct DeleteBundle;

impl Operation for DeleteBundle {
    const NAME: &'static str = "delete_bundle";
    const ACCESS: Access = Access::Writes;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("bundle", "delete"));
    const POSITIONAL: &'static [&'static str] = &["id"];
    type Args = DeleteBundleArgs;
    type Output = ();

    fn run(store: &Store, args: DeleteBundleArgs) -> Result<()> {
        store.delete_bundle(&args.id)
    }
}

/// Imports a bundle into a branch: its portable JSON (as text or as an object), or a bundle
/// of this store by its id or its share token. It is checked whole before anything is
/// written: size and nesting before parsing, the schema version, the content hash, every id,
/// text and message. Importing the same bundle again adds nothing; the report says what was
/// added and what was already there.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportBundleArgs {
    /// The bundle's portable JSON (what `to_json` wrote), as text or as an object; or give
    /// `bundle_id` or `share_token` instead.
    #[serde(default)]
    pub bundle: Option<Value>,
    /// A bundle of this store, by its id.
    #[serde(default)]
    pub bundle_id: Option<String>,
    /// A shared bundle of this store, by its token (`kb_…`; a private bundle is never found so).
    #[serde(default)]
    pub share_token: Option<String>,
    /// Where its knowledge goes (default `main`).
    #[serde(default)]
    pub target_branch: Option<String>,
    /// Only check it (default false): the bundle is read and checked whole, and the report
    /// counts what importing it would add; nothing is written.
    #[serde(default)]
    pub dry_run: Option<bool>,
}

/// What `import_bundle` says of a bundle that is neither JSON text nor an object.
const NOT_A_BUNDLE: &str = "must be a bundle's JSON, as text or as an object";

/// A bundle given as text or as an object, as JSON text.
fn bundle_text(bundle: Value) -> Result<String> {
    match bundle {
        Value::String(text) => Ok(text),
        object @ Value::Object(_) => Ok(object.to_string()),
        _ => Err(Error::invalid("bundle", NOT_A_BUNDLE)),
    }
}

/// What `import_bundle` says when it is given no bundle, or more than one.
const ONE_SOURCE: &str = "give exactly one of bundle, bundle_id and share_token";

impl Arguments for ImportBundleArgs {
    fn problems(&self, _: &Limits) -> Vec<Problem> {
        let mut problems = Vec::new();
        // Only the kind of value: the text itself (megabytes, perhaps) is read by the run.
        if self
            .bundle
            .as_ref()
            .is_some_and(|b| !matches!(b, Value::String(_) | Value::Object(_)))
        {
            problems.push(Problem::new("bundle", NOT_A_BUNDLE));
        }
        let given = [
            self.bundle.is_some(),
            self.bundle_id.is_some(),
            self.share_token.is_some(),
        ];
        if given.iter().filter(|g| **g).count() != 1 {
            problems.push(Problem::new("bundle", ONE_SOURCE));
        }
        if let Some(branch) = &self.target_branch {
            branch_problems(&mut problems, "target_branch", branch);
        }
        problems
    }
}

/// The `import_bundle` operation.
pub struct ImportBundle;

impl Operation for ImportBundle {
    const NAME: &'static str = "import_bundle";
    const ACCESS: Access = Access::Creates;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("bundle", "import"));
    const POSITIONAL: &'static [&'static str] = &["bundle"];
    type Args = ImportBundleArgs;
    type Output = ImportReport;

    fn run(store: &Store, args: ImportBundleArgs) -> Result<ImportReport> {
        let ImportBundleArgs {
            bundle,
            bundle_id,
            share_token,
            target_branch,
            dry_run,
        } = args;
        let json = match (bundle, bundle_id, share_token) {
            (Some(bundle), None, None) => bundle_text(bundle)?,
            (None, Some(id), None) => store.get_bundle(&id)?.to_json()?,
            (None, None, Some(token)) => store.bundle_by_token(&token)?.to_json()?,
            _ => return Err(Error::invalid("bundle", ONE_SOURCE)),
        };
        let target = target_branch.as_deref().unwrap_or("main");
        if dry_run.unwrap_or(false) {
            store.check_bundle_import(&json, target)
        } else {
            store.import_bundle(&json, target)
        }
    }
}

/// Runs the verification gate on a bundle's contents: a verifier (a face's callable, the
/// judge command, or the MCP client's model) scores each of its facts and conversations, and
/// the bundle records the outcome: `verification_status` `verified` when every item passed
/// (otherwise `draft`), `verification_score` (the mean) and `verified_by` (the verifier). Its
/// portable form stays as it was (its hash and signature valid); each item's score goes to the
/// curation log. Without a judge to ask, or when it fails on an item, nothing is recorded.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyBundleArgs {
    /// The bundle's id (`bundle_id` is accepted too).
    #[serde(alias = "bundle_id")]
    #[schemars(extend("x-aliases" = ["bundle_id"]))]
    pub id: String,
    /// A fact scoring at least this passes (default 0.7).
    #[serde(default)]
    pub fact_threshold: Option<f64>,
    /// A fact or a conversation scoring below this is invalidated (default 0.4).
    #[serde(default)]
    pub invalidate_below: Option<f64>,
    /// A conversation scoring at least this passes (default 0.6).
    #[serde(default)]
    pub conversation_threshold: Option<f64>,
}

impl VerifyBundleArgs {
    /// The thresholds, the seed's where not given.
    pub fn thresholds(&self) -> Thresholds {
        crate::curation::ops::thresholds(
            self.fact_threshold,
            self.invalidate_below,
            self.conversation_threshold,
        )
    }
}

impl Arguments for VerifyBundleArgs {
    fn problems(&self, _: &Limits) -> Vec<Problem> {
        match self.thresholds().check() {
            Err(err) => err.problems().to_vec(),
            Ok(()) => Vec::new(),
        }
    }
}

/// The `verify_bundle` operation.
pub struct VerifyBundle;

impl VerifyBundle {
    /// Runs the gate with `verifier` scoring each item; without one, refused (naming
    /// `verifier`): a bundle's status says a judge looked at it.
    pub fn run_with(
        store: &Store,
        args: VerifyBundleArgs,
        verifier: Option<&mut dyn Verifier>,
    ) -> Result<Bundle> {
        let Some(verifier) = verifier else {
            return Err(Error::invalid("verifier", crate::ops::NO_JUDGE));
        };
        store.verify_bundle(&args.id, verifier, &args.thresholds())
    }
}

impl Operation for VerifyBundle {
    const NAME: &'static str = "verify_bundle";
    const ACCESS: Access = Access::Writes;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("bundle", "verify"));
    const POSITIONAL: &'static [&'static str] = &["id"];
    type Args = VerifyBundleArgs;
    type Output = Bundle;

    fn run(store: &Store, args: VerifyBundleArgs) -> Result<Bundle> {
        Self::run_with(store, args, None)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::ops::Replay;
    use serde_json::json;

    #[test]
    fn a_bundle_goes_out_and_back_in_through_the_operations() {
        let store = Store::memory();
        crate::ops::AddFacts::call(
            &store,
            json!({"branch": "task/t1", "facts": ["refresh needs backoff"]}),
        )
        .unwrap();
        let bad = CreateBundle::call(&store, json!({"name": "x"})).unwrap_err();
        assert_eq!(bad.problems()[0].field, "task_id");
        let bundle = CreateBundle::call(
            &store,
            json!({"name": "Playbook", "task_id": "t1", "verified_only": false, "visibility": "public"}),
        )
        .unwrap();
        assert_eq!(bundle.fact_count, 1);
        let found = BundleByToken::call(&store, json!({"token": bundle.share_token})).unwrap();
        assert_eq!(found.id, bundle.id);
        // As an object or as text: the same bundle, imported once.
        let object: Value = serde_json::from_str(&bundle.to_json().unwrap()).unwrap();
        let first = ImportBundle::call(&store, json!({"bundle": object})).unwrap();
        assert_eq!(first.facts_added, 1);
        let again =
            ImportBundle::call(&store, json!({"bundle": bundle.to_json().unwrap()})).unwrap();
        assert_eq!(again.facts_skipped, 1);
        let bad =
            ImportBundle::call(&store, json!({"bundle": 3, "target_branch": "x/y"})).unwrap_err();
        let fields: Vec<&str> = bad.problems().iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["bundle", "target_branch"]);
        let replay = Replay::call(&store, json!({"task_id": "t1"})).unwrap();
        assert_eq!(replay.timeline[0].kind, "curation.facts_added");
        DeleteBundle::call(&store, json!({"id": bundle.id})).unwrap();
        assert!(ListBundles::call(&store, json!({})).unwrap().is_empty());
    }
}
