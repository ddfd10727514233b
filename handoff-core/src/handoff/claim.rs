//! Claims: the proof of holding a handoff. A claim carries two things (docs/design.md §3): the public,
//! increasing **fencing token**, for fencing writes downstream, and a **claim secret** that
//! only the claimer ever sees. Heartbeat, release, complete and a holder's cancel need both,
//! so nobody can settle a claim from what they can read (`get`, `list`, events, exports).

use std::fmt;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::record::Handoff;

/// What every claim secret starts with, so that one is recognisable in logs and configs.
const PREFIX: &str = "hcs_";
/// 32 random bytes, hex-encoded.
const HEX_LEN: usize = 64;

/// A claim's secret: 256 bits from the operating system's generator. The store keeps only its
/// SHA-256 digest. `Debug` does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct ClaimSecret(String);

impl ClaimSecret {
    /// A new secret.
    pub(crate) fn generate() -> Result<ClaimSecret> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)
            .map_err(|e| Error::storage(format!("the OS random generator failed: {e}")))?;
        Ok(ClaimSecret(format!("{PREFIX}{}", hex(&bytes))))
    }

    /// A secret as the claimer got it, checked for its form (`hcs_` and 64 hex digits).
    pub fn parse(text: &str) -> Result<ClaimSecret> {
        let valid = text.strip_prefix(PREFIX).is_some_and(|hex| {
            hex.len() == HEX_LEN
                && hex
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        });
        if valid {
            Ok(ClaimSecret(text.to_owned()))
        } else {
            Err(Error::invalid(
                "secret",
                "must be the claim secret the claim returned (hcs_ and 64 hex digits)",
            ))
        }
    }

    /// The secret's text, to hand to the claimer (and to nobody else).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// What the store keeps.
    pub(crate) fn digest(&self) -> [u8; 32] {
        Sha256::digest(self.0.as_bytes()).into()
    }

    /// Whether this secret is the one whose digest the store kept, in constant time.
    pub(crate) fn matches(&self, stored: &[u8; 32]) -> bool {
        let digest = self.digest();
        digest
            .iter()
            .zip(stored)
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
    }
}

impl fmt::Debug for ClaimSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClaimSecret(…)")
    }
}

/// A digest as a database column holds it (see [`ClaimSecret::digest`]): `None` for none, or
/// for one not 32 bytes long, which no secret can match.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn stored_digest(column: Option<&[u8]>) -> Option<[u8; 32]> {
    column.and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
}

/// What a database transaction keeps of the claim secret's digest that its last record read
/// (`Tx::get`) brought along: a settle reads its record and then proves its claim against
/// this, so that one statement reads both.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
#[derive(Debug, Default)]
pub(crate) struct ReadSecret(Option<(String, Option<[u8; 32]>)>);

#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl ReadSecret {
    /// Keeps `digest`, read with the record `id`.
    pub(crate) fn keep(&mut self, id: &str, digest: Option<[u8; 32]>) {
        self.0 = Some((id.to_owned(), digest));
    }

    /// The digest kept for `id`, if the last record read was `id`'s.
    pub(crate) fn of(&self, id: &str) -> Option<Option<[u8; 32]>> {
        self.0
            .as_ref()
            .filter(|(read, _)| read == id)
            .map(|(_, digest)| *digest)
    }

    /// Forgets what was kept for `id`, whose secret the transaction is changing.
    pub(crate) fn forget(&mut self, id: &str) {
        if self.of(id).is_some() {
            self.0 = None;
        }
    }
}

/// `bytes` as lowercase hex digits.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(2 * bytes.len());
    for byte in bytes {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
    text
}

/// `N` bytes from `2 * N` hex digits (either case), `None` for anything else.
pub(crate) fn unhex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let mut out = [0u8; N];
    if text.len() != 2 * N || !text.is_ascii() {
        return None;
    }
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// What heartbeat, release, complete and a holder's cancel need of a claim: which handoff,
/// the fencing token, the secret and the lease length. A [`Claim`] gives one
/// ([`Claim::reference`]); a process that was handed the four values builds one itself, without
/// reading the record again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimRef {
    /// The claimed handoff.
    pub handoff_id: String,
    /// The claim's fencing token.
    pub token: u64,
    /// The claim's secret.
    pub secret: ClaimSecret,
    /// The lease length, renewed by each heartbeat.
    pub lease: Duration,
}

/// A live claim: the handoff as claimed, the fencing token, the secret that proves ownership,
/// and the lease length.
#[derive(Clone, Debug, PartialEq)]
pub struct Claim {
    /// The handoff, as it was when claimed.
    pub handoff: Handoff,
    /// The fencing token: public, increasing with every claim.
    pub token: u64,
    /// The claim's secret: shown to the claimer only.
    pub secret: ClaimSecret,
    /// The lease length, reused by [`Store::heartbeat`](crate::Store::heartbeat).
    pub lease: Duration,
}

/// A claim as every face returns it to its claimer: the secret shown, the lease in seconds.
#[derive(serde::Serialize, schemars::JsonSchema)]
#[schemars(rename = "Claim")]
struct ClaimView<'a> {
    /// The claimed handoff's id.
    handoff_id: &'a str,
    /// The fencing token: public, increasing with every claim.
    token: u64,
    /// The claim's secret, which settles the claim (`hcs_` and 64 hex digits): shown to the
    /// claimer only.
    claim_secret: &'a str,
    /// The lease length, renewed by each heartbeat.
    lease_seconds: u64,
    /// When the lease lapses unless renewed.
    #[serde(with = "crate::clock::rfc3339::option")]
    #[schemars(with = "Option<chrono::DateTime<chrono::Utc>>")]
    lease_until: Option<chrono::DateTime<chrono::Utc>>,
    /// The handoff, as it was when claimed.
    handoff: &'a Handoff,
}

impl serde::Serialize for Claim {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        ClaimView {
            handoff_id: &self.handoff.id,
            token: self.token,
            claim_secret: self.secret.expose(),
            lease_seconds: self.lease.as_secs(),
            lease_until: self.handoff.lease_until,
            handoff: &self.handoff,
        }
        .serialize(serializer)
    }
}

impl schemars::JsonSchema for Claim {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Claim".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        ClaimView::json_schema(generator)
    }
}

impl Claim {
    /// The reason a claim is released with when the caller it was made for was gone before
    /// receiving it: a cancelled task, a client that disconnected while the claim was made.
    /// Nobody holds such a claim, so it is given back rather than left to lapse.
    pub const UNRECEIVED: &'static str = "the claimant was gone before it received the claim";

    /// The claimed handoff's id.
    pub fn handoff_id(&self) -> &str {
        &self.handoff.id
    }

    /// The reference that settles this claim.
    pub fn reference(&self) -> ClaimRef {
        ClaimRef::from(self)
    }
}

impl From<&Claim> for ClaimRef {
    fn from(claim: &Claim) -> Self {
        ClaimRef {
            handoff_id: claim.handoff.id.clone(),
            token: claim.token,
            secret: claim.secret.clone(),
            lease: claim.lease,
        }
    }
}

impl From<&ClaimRef> for ClaimRef {
    fn from(claim: &ClaimRef) -> Self {
        claim.clone()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn secrets_are_random_parse_back_and_hide_in_debug() {
        let a = ClaimSecret::generate().unwrap();
        let b = ClaimSecret::generate().unwrap();
        assert_ne!(a, b);
        assert_eq!(ClaimSecret::parse(a.expose()).unwrap(), a);
        assert!(a.matches(&a.digest()));
        assert!(!b.matches(&a.digest()));
        assert!(!format!("{a:?}").contains(&a.expose()[4..]));
        for bad in [
            "",
            "hcs_",
            "hcs_xyz",
            &a.expose()[..60],
            &a.expose().to_uppercase(),
        ] {
            assert!(ClaimSecret::parse(bad).is_err(), "{bad}");
        }
    }
}
