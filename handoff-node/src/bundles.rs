//! Knowledge bundles (docs/design.md §9, the core's [`handoff_core::bundle`] and its store's bundles):
//! `importBundle`, which also takes the `Bundle` a `createBundle` returned, and the portable
//! text behind a bundle's `toJson()`. A bundle is plain data in the seed's snake_case, the way
//! the core writes it (src/output.rs); index.js gives it `toJson`, a method that is not
//! enumerable (as a packet's `toMessages`): a bundle still compares, spreads and serialises as
//! data, and `JSON.stringify(bundle)` keeps its `data`, which `importBundle` reads back as well.
//!
//! Signing: `generateBundleKey()` gives a key pair whose `secret_key` is not enumerable, so
//! that printing, spreading or serialising the pair never shows it; `signBundle` and
//! `trustBundleKeys` are table entries, returning a `Bundle` and `TrustedKey`s.

use handoff_core::Store as CoreStore;
use handoff_core::bundle::{BundleData, BundleKeyPair};
use handoff_core::ops::{self, Operation};
use handoff_core::store::ImportReport;
use napi::bindgen_prelude::JsObjectValue;
use napi::bindgen_prelude::Object;
use napi::{Env, JsValue, Property, PropertyAttributes, Unknown, ValueType};
use napi_derive::napi;
use serde::Serialize;

use crate::errors::{Naming, Outcome};
use crate::ops::{Given, JsArguments, arguments_of};
use crate::output::{Out, plain_to_js};
use crate::run::{Job, ToJs, guarded};
use crate::store::Store;

/// The portable JSON text of a bundle's `data` (given as JSON): what a bundle's `toJson()`
/// returns (index.js gives every `Bundle` a store method returns that method). Not part of the
/// API.
#[napi(js_name = "_bundleJson", skip_typescript, catch_unwind)]
pub fn bundle_json(env: Env, data: String) -> napi::Result<String> {
    guarded(&env, Naming::AsIs, || {
        let data: BundleData = serde_json::from_str(&data)
            .map_err(|e| handoff_core::Error::invalid("data", e.to_string()))?;
        Ok(data.to_json()?)
    })
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

impl From<PublicHalf> for JsBundleKeyPair {
    fn from(half: PublicHalf) -> JsBundleKeyPair {
        JsBundleKeyPair {
            public_key: half.0,
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
    let value = plain_to_js(&env, &JsBundleKeyPair::from(PublicHalf(public_key)))?;
    let secret = env.create_string(&secret_key)?;
    let mut object = value.coerce_to_object()?;
    object.define_properties(&[Property::new()
        .with_utf8_name("secret_key")?
        .with_value(&secret)
        .with_property_attributes(PropertyAttributes::Configurable)])?;
    Ok(value)
}

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
        Out(report).to_js(env)
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
            arguments.map(|arguments| move || run_import(&store, arguments).map(Out)),
        );
        Ok(env.spawn(job)?.promise_object().to_unknown())
    }
}
