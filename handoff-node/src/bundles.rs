//! Knowledge bundles (DESIGN §9, the core's [`handoff_core::bundle`] and its store's bundles):
//! a bundle as plain data in the seed's snake_case, the way the core writes it, with its
//! portable form (`data`) and a `toJson()` method that gives that form as the core's JSON
//! text; what an import did; and `importBundle`, which also takes the `Bundle` a
//! `createBundle` returned. The other bundle operations are entries of the store's operation
//! table (`src/store.rs`).
//!
//! `toJson` is a method of the plain bundle object, not enumerable (as a packet's
//! `toMessages`): a bundle still compares, spreads and serialises as data, and
//! `JSON.stringify(bundle)` keeps its `data`, which `importBundle` reads back as well.
//!
//! Signing: `generateBundleKey()` gives a key pair whose `secret_key` is not enumerable, so
//! that printing, spreading or serialising the pair never shows it; `signBundle` and
//! `trustBundleKeys` are table entries, returning a `Bundle` and `TrustedKey`s.

use handoff_core::Store as CoreStore;
use handoff_core::bundle::{BundleConversation, BundleData, BundleFact, BundleKeyPair};
use handoff_core::context::Message;
use handoff_core::ops::{self, Operation};
use handoff_core::store::{Bundle, BundleStatus, ImportReport, TrustedKey};
use napi::bindgen_prelude::{Function, FunctionCallContext, JsObjectValue, Object};
use napi::{Env, JsValue, Property, PropertyAttributes, Unknown, ValueType};
use napi_derive::napi;
use serde::Serialize;
use serde_json::Value;

use crate::curation::JsToolCall;
use crate::errors::{self, Failure, Naming, Outcome};
use crate::ops::{Given, JsArguments, Method, Parameter, arguments_of};
use crate::record::iso;
use crate::store::Store;
use crate::task::{Job, Mirror, Settle, ToJs, guarded, json_to_js};
use crate::tasks::{number, word};

/// A bundle's status, as `BundleStatus` in dts-header.d.ts spells it: matched in full, so that
/// a status the core adds does not compile here until that type names it too.
fn status_word(status: BundleStatus) -> String {
    match status {
        BundleStatus::Draft | BundleStatus::Verified => word(&status),
    }
}

/// A message as a bundle carries it: OpenAI's chat shape, as the store keeps it.
#[napi(
    object,
    js_name = "BundleMessage",
    object_from_js = false,
    object_to_js = false
)]
#[derive(Serialize)]
pub struct JsBundleMessage {
    /// `user`, `assistant`, `tool` or `system`.
    pub role: String,
    /// The text (redacted unless the bundle was made with `redact: false`).
    pub content: String,
    /// The tool calls it made.
    #[napi(js_name = "tool_calls", ts_type = "Array<ToolCall>")]
    pub tool_calls: Vec<JsToolCall>,
    /// For a `tool` message, the id of the call it answers.
    #[napi(js_name = "tool_call_id")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For a `tool` message, `true` when the tool failed (absent otherwise).
    #[napi(js_name = "is_error")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// When it was said (ISO 8601), when known.
    #[napi(ts_type = "string | null")]
    pub at: Value,
    /// The id it came with.
    #[napi(ts_type = "string | null")]
    pub id: Value,
    /// The priority it came with.
    #[napi(ts_type = "number | null")]
    pub priority: Value,
}

impl Mirror for Message {
    type Out = JsBundleMessage;
    fn mirror(self) -> JsBundleMessage {
        // Destructured in full: a field the core adds fails to compile here until it is mapped.
        let Message {
            role,
            content,
            tool_calls,
            tool_call_id,
            is_error,
            at,
            id,
            priority,
        } = self;
        JsBundleMessage {
            role,
            content,
            tool_calls: tool_calls.mirror(),
            tool_call_id,
            is_error: is_error.then_some(true),
            at: at.map(iso).into(),
            id: id.into(),
            priority: priority.into(),
        }
    }
}

/// A fact as a bundle carries it.
#[napi(
    object,
    js_name = "BundleFact",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
pub struct JsBundleFact {
    /// Its id where it was exported (what makes an import idempotent).
    pub id: String,
    /// What is known.
    pub text: String,
    /// How sure its author was, from 0 to 1.
    pub confidence: Option<f64>,
    /// Where it came from.
    pub source: Option<String>,
    /// Its verification score, from 0 to 1.
    pub score: Option<f64>,
    /// Who verified it.
    #[napi(js_name = "verified_by")]
    pub verified_by: Option<String>,
}

impl Mirror for BundleFact {
    type Out = JsBundleFact;
    fn mirror(self) -> JsBundleFact {
        let BundleFact {
            id,
            text,
            confidence,
            source,
            score,
            verified_by,
        } = self;
        JsBundleFact {
            id,
            text,
            confidence,
            source,
            score,
            verified_by,
        }
    }
}

/// A conversation as a bundle carries it, with its messages.
#[napi(
    object,
    js_name = "BundleConversation",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
pub struct JsBundleConversation {
    /// Its id where it was exported (what makes an import idempotent).
    pub id: String,
    /// What it is about.
    pub title: Option<String>,
    /// The agent that had it.
    pub agent: Option<String>,
    /// Its verification score, from 0 to 1.
    #[napi(js_name = "verification_score")]
    pub verification_score: Option<f64>,
    /// Its messages, in order.
    pub messages: Vec<JsBundleMessage>,
}

impl Mirror for BundleConversation {
    type Out = JsBundleConversation;
    fn mirror(self) -> JsBundleConversation {
        let BundleConversation {
            id,
            title,
            agent,
            verification_score,
            messages,
        } = self;
        JsBundleConversation {
            id,
            title,
            agent,
            verification_score,
            messages: messages.mirror(),
        }
    }
}

/// A bundle's portable form, what `bundle.toJson()` writes as text and `importBundle` reads
/// (in this store or another): the knowledge, the task's summary and the scores, with its
/// schema version and a content hash that refuses a bundle changed after it was made.
#[napi(
    object,
    js_name = "BundleData",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
pub struct JsBundleData {
    /// The version of the portable form (1).
    #[napi(js_name = "schema_version")]
    pub schema_version: f64,
    /// The bundle's name.
    pub name: String,
    /// What it holds.
    pub description: Option<String>,
    /// What it is.
    #[napi(js_name = "bundle_type", ts_type = "BundleType")]
    pub bundle_type: String,
    /// The task it was exported from.
    #[napi(js_name = "source_task_id")]
    pub source_task_id: Option<String>,
    /// The branch it was exported from.
    #[napi(js_name = "source_branch")]
    pub source_branch: Option<String>,
    /// The task's summary (`id`, `name`, `goal`, `status`), when it was a task's with a plan.
    #[napi(ts_type = "JsonObject | null")]
    pub task: Value,
    /// Labels for finding it.
    pub tags: Vec<String>,
    /// The facts.
    pub facts: Vec<JsBundleFact>,
    /// The key conversations.
    pub conversations: Vec<JsBundleConversation>,
    /// The mean of its items' verification scores.
    #[napi(js_name = "verification_score")]
    pub verification_score: Option<f64>,
    /// When it was made (ISO 8601).
    #[napi(js_name = "created_at")]
    pub created_at: String,
    /// `sha256:` and the hex digest of the portable JSON without it and its signature.
    #[napi(js_name = "content_hash")]
    pub content_hash: String,
    /// The signature of whoever vouches for it (`signBundle`), over `content_hash`; absent
    /// while it is not signed, as in the portable JSON.
    #[napi(ts_type = "BundleSignature | undefined")]
    #[serde(skip_serializing_if = "Signed::is_none")]
    pub signature: Signed,
}

/// A bundle's signature if it has one: left out of the data when it has none, so that the data
/// stays what its portable JSON reads as (an `Option` field would be typed `| null` here).
#[derive(Serialize)]
#[serde(transparent)]
pub struct Signed(Option<JsBundleSignature>);

impl Signed {
    fn is_none(&self) -> bool {
        self.0.is_none()
    }
}

/// Who vouches for a bundle: an Ed25519 signature over its `content_hash`.
#[napi(
    object,
    js_name = "BundleSignature",
    object_from_js = false,
    object_to_js = false
)]
#[derive(Serialize)]
pub struct JsBundleSignature {
    /// The signer's public key: `ed25519:` and 64 hex digits.
    #[napi(js_name = "public_key")]
    pub public_key: String,
    /// The signature of the `content_hash` text: 128 hex digits.
    pub signature: String,
}

impl Mirror for BundleData {
    type Out = JsBundleData;
    fn mirror(self) -> JsBundleData {
        let BundleData {
            schema_version,
            name,
            description,
            bundle_type,
            source_task_id,
            source_branch,
            task,
            tags,
            facts,
            conversations,
            verification_score,
            created_at,
            content_hash,
            signature,
        } = self;
        JsBundleData {
            schema_version: schema_version.into(),
            name,
            description,
            bundle_type: word(&bundle_type),
            source_task_id,
            source_branch,
            task: task.unwrap_or(Value::Null),
            tags,
            facts: facts.mirror(),
            conversations: conversations.mirror(),
            verification_score,
            created_at: iso(created_at),
            content_hash,
            signature: Signed(signature.map(|s| JsBundleSignature {
                public_key: s.public_key,
                signature: s.signature,
            })),
        }
    }
}

/// A knowledge bundle: what `createBundle`, `getBundle`, `listBundles`, `bundleByToken` and
/// `setVisibility` return.
#[napi(
    object,
    js_name = "Bundle",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
pub struct JsBundle {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// What it holds.
    pub description: Option<String>,
    /// What it is.
    #[napi(js_name = "bundle_type", ts_type = "BundleType")]
    pub bundle_type: String,
    /// The task it was made from.
    #[napi(js_name = "source_task_id")]
    pub source_task_id: Option<String>,
    /// The branch it was made from.
    #[napi(js_name = "source_branch")]
    pub source_branch: Option<String>,
    /// How many facts it holds.
    #[napi(js_name = "fact_count")]
    pub fact_count: f64,
    /// How many conversations it holds.
    #[napi(js_name = "conversation_count")]
    pub conversation_count: f64,
    /// How many messages its conversations hold.
    #[napi(js_name = "message_count")]
    pub message_count: f64,
    /// Whether everything in it was verified.
    #[napi(js_name = "verification_status", ts_type = "BundleStatus")]
    pub verification_status: String,
    /// The mean of its items' scores.
    #[napi(js_name = "verification_score")]
    pub verification_score: Option<f64>,
    /// Who verified its items (their verifiers' names, joined).
    #[napi(js_name = "verified_by")]
    pub verified_by: Option<String>,
    /// `kb_` and 256 random bits: `bundleByToken` finds the bundle with it; `null` while it is
    /// private (sharing it issues a new one, making it private again kills it). Keep it as you
    /// would a password.
    #[napi(js_name = "share_token")]
    pub share_token: Option<String>,
    /// Who may find it by its token.
    #[napi(ts_type = "Visibility")]
    pub visibility: String,
    /// Labels for finding it.
    pub tags: Vec<String>,
    /// The portable form's content hash.
    #[napi(js_name = "content_hash")]
    pub content_hash: String,
    /// When it was made (ISO 8601).
    #[napi(js_name = "created_at")]
    pub created_at: String,
    /// When it last changed (ISO 8601).
    #[napi(js_name = "updated_at")]
    pub updated_at: String,
    /// Its portable form, as data: `importBundle` takes it (or the whole bundle) as it is.
    pub data: JsBundleData,
    /// The portable form as the core's JSON text, what another store's `importBundle` (or
    /// Python's `import_bundle`, the CLI's `handoff bundle import`) reads. A method (not
    /// enumerable): bundles still compare and serialise as data.
    #[napi(ts_type = "() => string")]
    #[serde(skip)]
    pub to_json: (),
}

/// A bundle's data, without its method (see [`bundle_to_js`]).
struct BundleFields(Bundle);

impl Mirror for BundleFields {
    type Out = JsBundle;
    fn mirror(self) -> JsBundle {
        let Bundle {
            id,
            name,
            description,
            bundle_type,
            source_task_id,
            source_branch,
            fact_count,
            conversation_count,
            message_count,
            verification_status,
            verification_score,
            verified_by,
            share_token,
            visibility,
            tags,
            content_hash,
            created_at,
            updated_at,
            data,
        } = self.0;
        JsBundle {
            id,
            name,
            description,
            bundle_type: word(&bundle_type),
            source_task_id,
            source_branch,
            fact_count: number(fact_count),
            conversation_count: number(conversation_count),
            message_count: number(message_count),
            verification_status: status_word(verification_status),
            verification_score,
            verified_by,
            share_token,
            visibility: word(&visibility),
            tags,
            content_hash,
            created_at: iso(created_at),
            updated_at: iso(updated_at),
            data: data.mirror(),
            to_json: (),
        }
    }
}

/// The portable JSON text of `bundle`, or the error to throw.
fn portable_text(env: &Env, bundle: &Bundle) -> napi::Result<String> {
    bundle
        .to_json()
        .map_err(|err| errors::to_js(env, Failure::Core(err), Naming::AsIs))
}

/// Gives `value`, a bundle's plain data, its `toJson` method returning `text`: not
/// enumerable, so that the bundle still compares, spreads and serialises as data.
fn add_to_json(env: &Env, value: &Unknown<'_>, text: String) -> napi::Result<()> {
    let to_json: Function<'_, Unknown<'_>, String> = env
        .create_function_from_closure("toJson", move |_: FunctionCallContext<'_>| {
            Ok(text.clone())
        })?;
    let mut object = value.coerce_to_object()?;
    object.define_properties(&[Property::new()
        .with_utf8_name("toJson")?
        .with_value(&to_json)
        .with_property_attributes(
            PropertyAttributes::Writable | PropertyAttributes::Configurable,
        )])?;
    Ok(())
}

/// A bundle as JavaScript gets it: its plain data with its `toJson` method.
fn bundle_to_js(env: &Env, bundle: Bundle) -> napi::Result<Unknown<'static>> {
    let text = portable_text(env, &bundle)?;
    let value = json_to_js(env, BundleFields(bundle))?;
    add_to_json(env, &value, text)?;
    Ok(value)
}

/// Bundles as JavaScript gets them: an array built at once, each with its `toJson` method.
fn bundles_to_js(env: &Env, bundles: Vec<Bundle>) -> napi::Result<Unknown<'static>> {
    let texts = bundles
        .iter()
        .map(|bundle| portable_text(env, bundle))
        .collect::<napi::Result<Vec<String>>>()?;
    let fields: Vec<BundleFields> = bundles.into_iter().map(BundleFields).collect();
    let value = json_to_js(env, fields)?;
    let array = value.coerce_to_object()?;
    for (i, text) in (0u32..).zip(texts) {
        let item: Unknown<'_> = array.get_element(i)?;
        add_to_json(env, &item, text)?;
    }
    Ok(value)
}

impl ToJs for Bundle {
    fn to_js<'env>(self, env: &'env Env) -> napi::Result<Unknown<'env>> {
        bundle_to_js(env, self)
    }
}

impl Settle for Bundle {
    fn settle(self, env: Env) -> napi::Result<Unknown<'static>> {
        bundle_to_js(&env, self)
    }
}

impl ToJs for Vec<Bundle> {
    fn to_js<'env>(self, env: &'env Env) -> napi::Result<Unknown<'env>> {
        bundles_to_js(env, self)
    }
}

impl Settle for Vec<Bundle> {
    fn settle(self, env: Env) -> napi::Result<Unknown<'static>> {
        bundles_to_js(&env, self)
    }
}

/// What an import added and what it found already there: `importBundle` returns it.
#[napi(
    object,
    js_name = "ImportReport",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
pub struct JsImportReport {
    /// The bundle's name.
    pub bundle: String,
    /// The branch imported into.
    #[napi(js_name = "target_branch")]
    pub target_branch: String,
    /// Facts written.
    #[napi(js_name = "facts_added")]
    pub facts_added: f64,
    /// Facts already there (imported before).
    #[napi(js_name = "facts_skipped")]
    pub facts_skipped: f64,
    /// Conversations written.
    #[napi(js_name = "conversations_added")]
    pub conversations_added: f64,
    /// Conversations already there.
    #[napi(js_name = "conversations_skipped")]
    pub conversations_skipped: f64,
    /// Messages written with the conversations.
    #[napi(js_name = "messages_added")]
    pub messages_added: f64,
    /// The public key that signed the bundle (`ed25519:...`), or `null`.
    #[napi(js_name = "signed_by")]
    pub signed_by: Option<String>,
    /// Whether this store trusts that key: then the bundle's verdicts were taken as verified;
    /// otherwise its facts and conversations came in unverified, its verdicts kept as its
    /// claim (`verified_by: bundle:<hash>`).
    pub trusted: bool,
}

impl Mirror for ImportReport {
    type Out = JsImportReport;
    fn mirror(self) -> JsImportReport {
        let ImportReport {
            bundle,
            target_branch,
            facts_added,
            facts_skipped,
            conversations_added,
            conversations_skipped,
            messages_added,
            signed_by,
            trusted,
        } = self;
        JsImportReport {
            bundle,
            target_branch: target_branch.map(Into::into).unwrap_or_default(),
            facts_added: number(facts_added),
            facts_skipped: number(facts_skipped),
            conversations_added: number(conversations_added),
            conversations_skipped: number(conversations_skipped),
            messages_added: number(messages_added),
            signed_by,
            trusted,
        }
    }
}

/// A public key the store trusts to vouch for bundles: `trustBundleKeys` returns them.
#[napi(
    object,
    js_name = "TrustedKey",
    object_from_js = false,
    object_to_js = false
)]
#[derive(Serialize)]
pub struct JsTrustedKey {
    /// `ed25519:` and 64 hex digits.
    #[napi(js_name = "public_key")]
    pub public_key: String,
    /// When it was trusted (ISO 8601).
    #[napi(js_name = "trusted_at")]
    pub trusted_at: String,
}

impl Mirror for TrustedKey {
    type Out = JsTrustedKey;
    fn mirror(self) -> JsTrustedKey {
        let TrustedKey {
            public_key,
            trusted_at,
        } = self;
        JsTrustedKey {
            public_key,
            trusted_at: iso(trusted_at),
        }
    }
}

/// A key pair for signing bundles, from `generateBundleKey()`: `signBundle` takes the secret
/// key, the stores that are to take your bundles' verdicts trust the public key
/// (`trustBundleKeys`).
#[napi(
    object,
    js_name = "BundleKeyPair",
    object_from_js = false,
    object_to_js = false
)]
#[derive(Serialize)]
pub struct JsBundleKeyPair {
    /// `ed25519:` and 64 hex digits: what a store trusts.
    #[napi(js_name = "public_key")]
    pub public_key: String,
    /// `ed25519-secret:` and 64 hex digits: what signs. Keep it as you would a password. Not
    /// enumerable: printing (`console.log`, `util.inspect`), spreading or `JSON.stringify`
    /// of the pair leaves it out.
    #[napi(js_name = "secret_key", readonly)]
    #[serde(skip)]
    pub secret_key: String,
}

/// The public half of a key pair, as JSON builds it (the secret is added apart).
struct PublicHalf(String);

impl Mirror for PublicHalf {
    type Out = JsBundleKeyPair;
    fn mirror(self) -> JsBundleKeyPair {
        JsBundleKeyPair {
            public_key: self.0,
            secret_key: String::new(),
        }
    }
}

/// A new key pair for signing bundles, from the operating system's random generator:
/// `{ public_key, secret_key }`, the secret not enumerable.
#[napi(catch_unwind, ts_return_type = "BundleKeyPair")]
pub fn generate_bundle_key(env: Env) -> napi::Result<Unknown<'static>> {
    let BundleKeyPair {
        public_key,
        secret_key,
    } = guarded(&env, Naming::Js, || Ok(BundleKeyPair::generate()?))?;
    let value = json_to_js(&env, PublicHalf(public_key))?;
    let secret = env.create_string(&secret_key)?;
    let mut object = value.coerce_to_object()?;
    object.define_properties(&[Property::new()
        .with_utf8_name("secret_key")?
        .with_value(&secret)
        .with_property_attributes(PropertyAttributes::Configurable)])?;
    Ok(value)
}

/// What `importBundle` takes by position, in TypeScript: the portable JSON as text, as data
/// (a bundle's `data`, `JSON.parse` of its text), or the `Bundle` itself.
/// `null` (or `undefined`) when the options name it instead (`bundleId`, `shareToken`).
const BUNDLE_ARGUMENT: &str = "string | Bundle | BundleData | JsonObject | null | undefined";

/// The portable form `bundle` stands for: a `Bundle` (an object with a `visibility` and its
/// portable form as `data`, whether `createBundle` returned it or it went through
/// `JSON.stringify`) stands for its `data`; text and any other value stand for themselves.
fn portable<'env>(bundle: &Unknown<'env>) -> Outcome<Unknown<'env>> {
    if bundle.get_type()? != ValueType::Object || bundle.is_array()? {
        return Ok(*bundle);
    }
    let object: Object<'env> = bundle.coerce_to_object()?;
    if object.has_own_property("schema_version")? || !object.has_own_property("visibility")? {
        return Ok(*bundle);
    }
    let data: Unknown<'env> = object.get_named_property("data")?;
    if data.get_type()? == ValueType::Object && !data.is_array()? {
        Ok(data)
    } else {
        Ok(*bundle)
    }
}

/// Reads a call of `importBundle` on the JavaScript thread.
fn read_import(bundle: &Unknown<'_>, options: Option<&Unknown<'_>>) -> Outcome<JsArguments> {
    let portable = portable(bundle)?;
    let absent = matches!(bundle.get_type()?, ValueType::Undefined | ValueType::Null);
    let positional: &[(&'static str, &Unknown<'_>)] = if absent {
        &[]
    } else {
        &[("bundle", &portable)]
    };
    arguments_of::<ops::ImportBundle>(&Given {
        positional,
        options: Some(("options", options)),
    })
}

/// Runs an import. The arguments' problems are named as the caller wrote them
/// (`targetBranch`); the bundle's own (`content_hash`, `schema_version`, `facts[0].id`) as
/// the bundle writes them, relative to it, as every face names them.
fn run_import(store: &CoreStore, arguments: JsArguments) -> handoff_core::Result<ImportReport> {
    arguments
        .then(store.limits(), |args| {
            Ok(ops::ImportBundle::run(store, args))
        })
        .and_then(|imported| imported)
}

/// The store's bundle methods written by hand, as the type generator sees them.
pub(crate) fn methods() -> Vec<Method> {
    vec![Method::of::<ops::ImportBundle>(
        &[("bundle", BUNDLE_ARGUMENT)],
        Some(Parameter {
            name: "options",
            ts: "ImportBundleOptions",
            optional: true,
        }),
        ["ImportReport", "Promise<ImportReport>"],
    )]
}

#[napi]
impl Store {
    /// Imports a bundle into `targetBranch` (default `main`): its portable JSON as text
    /// (`bundle.toJson()`, a file another store wrote), as data (`bundle.data`, `JSON.parse` of
    /// the text), or the `Bundle` itself. Checked whole before anything is written: size and
    /// nesting first, then the schema version, the content hash, every id, text and message;
    /// a problem is a `VALIDATION` error naming it as the bundle writes it (`content_hash`,
    /// `facts[0].id`), and the store is left as it was. Importing the same bundle again adds
    /// nothing: the report counts what was added and what was already there (`facts_skipped`).
    /// With `null` for the bundle, `bundleId` or `shareToken` in the options names one of this
    /// store's (seed 001's `memory_bundle_import`).
    #[napi(
        catch_unwind,
        ts_args_type = "bundle: string | Bundle | BundleData | JsonObject | null | undefined, options?: ImportBundleOptions",
        ts_return_type = "ImportReport"
    )]
    pub fn import_bundle<'env>(
        &self,
        env: &'env Env,
        bundle: Unknown<'_>,
        options: Option<Unknown<'_>>,
    ) -> napi::Result<Unknown<'env>> {
        let store = self.core();
        let report = guarded(env, Naming::AsIs, || {
            let arguments = read_import(&bundle, options.as_ref())?;
            Ok(run_import(&store, arguments)?)
        })?;
        report.to_js(env)
    }

    /// Imports a bundle, as `importBundle` does, as a Promise: the bundle is read on this
    /// thread, checked and written on libuv's thread pool.
    #[napi(
        catch_unwind,
        ts_args_type = "bundle: string | Bundle | BundleData | JsonObject | null | undefined, options?: ImportBundleOptions",
        ts_return_type = "Promise<ImportReport>"
    )]
    pub fn import_bundle_async<'env>(
        &self,
        env: &'env Env,
        bundle: Unknown<'_>,
        options: Option<Unknown<'_>>,
    ) -> napi::Result<Unknown<'env>> {
        let store = self.core();
        let arguments = read_import(&bundle, options.as_ref());
        let job = Job::new(
            Naming::AsIs,
            arguments.map(|arguments| move || run_import(&store, arguments)),
        );
        Ok(env.spawn(job)?.promise_object().to_unknown())
    }
}
