//! Signing bundles and the keys a store trusts (see `bundle/signing.rs`): a bundle signed by a
//! trusted key is imported with its verdicts; any other bundle's verdicts stay its claim.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::bundle::public_key;
use crate::bundle::store::{BUNDLE, Bundle, as_shown, no_bundle, write_bundle};
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::{Doc, body, parsed};
use crate::validate::{self, Collector};

/// The documents that say which public keys the store trusts, keyed by the key.
pub(super) const TRUSTED_KEY: &str = "trusted_bundle_key";

/// A public key the store trusts to vouch for bundles.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct TrustedKey {
    /// `ed25519:` and 64 hex digits.
    pub public_key: String,
    /// When it was trusted.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "DateTime<Utc>")]
    pub trusted_at: DateTime<Utc>,
}

impl Store {
    /// Signs the bundle `id` with `secret_key` (`ed25519-secret:...`, from
    /// [`BundleKeyPair::generate`](crate::bundle::BundleKeyPair::generate)): a store that
    /// trusts its public key imports the bundle's verdicts as verified. The signature travels
    /// in the portable form.
    pub fn sign_bundle(&self, id: &str, secret_key: &str) -> Result<Bundle> {
        validate::ident("id", id)?;
        let now = self.clock.now();
        let mut signed = None;
        self.backend.write(&mut |tx| {
            let doc = tx.doc(BUNDLE, id)?.ok_or_else(|| no_bundle(id))?;
            let mut bundle: Bundle = parsed("bundle", &doc)?;
            bundle.data.sign(secret_key)?;
            bundle.updated_at = now;
            write_bundle(tx, &bundle, doc.version + 1)?;
            signed = Some(bundle);
            Ok(())
        })?;
        signed
            .map(as_shown)
            .ok_or_else(|| Error::storage("write returned no bundle"))
    }

    /// Trusts the public keys `trust` and stops trusting `distrust` (each `ed25519:...`, every
    /// bad one named at once, nothing changed then); the keys trusted afterwards, in key order.
    pub fn trust_bundle_keys(
        &self,
        trust: &[String],
        distrust: &[String],
    ) -> Result<Vec<TrustedKey>> {
        let mut c = Collector::default();
        let mut read = |field: &str, keys: &[String]| -> Vec<String> {
            keys.iter()
                .enumerate()
                .filter_map(|(i, key)| match public_key(&format!("{field}[{i}]"), key) {
                    Ok(key) => Some(key),
                    Err(err) => {
                        for p in err.problems() {
                            c.push(&p.field, &p.rule);
                        }
                        None
                    }
                })
                .collect()
        };
        let trust = read("trust", trust);
        let distrust = read("distrust", distrust);
        c.finish()?;
        let now = self.clock.now();
        self.backend.write(&mut |tx| {
            for key in &trust {
                if tx.doc(TRUSTED_KEY, key)?.is_none() {
                    let trusted = TrustedKey {
                        public_key: key.clone(),
                        trusted_at: now,
                    };
                    let doc = Doc {
                        version: 1,
                        body: body(&trusted)?,
                    };
                    tx.insert_doc(TRUSTED_KEY, key, &doc)?;
                }
            }
            for key in &distrust {
                if tx.doc(TRUSTED_KEY, key)?.is_some() {
                    tx.delete_doc(TRUSTED_KEY, key)?;
                }
            }
            Ok(())
        })?;
        self.trusted_bundle_keys()
    }

    /// The public keys the store trusts to vouch for bundles, in key order.
    pub fn trusted_bundle_keys(&self) -> Result<Vec<TrustedKey>> {
        self.backend
            .docs(TRUSTED_KEY, "", None, usize::MAX)?
            .iter()
            .map(|(_, doc)| parsed("trusted key", doc))
            .collect()
    }
}
