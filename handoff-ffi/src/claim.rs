//! Claims (docs/design.md §3): the handoff as claimed, its public fencing token and the secret only
//! the claimer sees; a [`ClaimRef`] is what heartbeat, release, complete and `cancel_claim`
//! take, so nobody settles a claim from what `get`, `list` or the event log show.

use std::fmt;
use std::time::Duration;

use handoff_core as core;
use serde::{Serialize, Serializer};

use crate::record::Handoff;

/// A live claim: the handoff as claimed, the fencing token, the claim's secret and the lease.
///
/// Settle it with its reference: `store.complete(claim.reference(), "done")`. Printing a
/// claim (`toString`, `description`, `str`) hides the secret.
#[derive(Clone, PartialEq, uniffi::Record)]
#[uniffi::export(Display)]
pub struct Claim {
    /// The handoff, as it was when claimed.
    pub handoff: Handoff,
    /// The fencing token: public (the record's `claim_token`), increasing with every claim,
    /// for fencing writes downstream.
    pub token: u64,
    /// The claim's secret (`hcs_` and 64 hex digits): shown to the claimer only, and needed
    /// to heartbeat, release, complete or cancel the claim. Hand it on only to whoever is to
    /// settle the claim.
    pub secret: String,
    /// The lease length; a heartbeat renews it for as long again.
    pub lease: Duration,
}

/// What settles a claim: which handoff, the fencing token, the claim's secret and the lease
/// length (which a heartbeat renews). `Claim.reference()` gives it; a process that was handed
/// the four values (another worker, a restarted app) builds one itself. A current token with
/// another secret is `LeaseLost` and changes nothing; a secret not of the form a claim hands
/// out is `Validation` on `secret`. Printing one hides the secret.
///
/// It serializes as the core's claim argument: the same names, the lease in `lease_seconds`.
#[derive(Clone, PartialEq, Eq, Serialize, uniffi::Record)]
#[uniffi::export(Display)]
pub struct ClaimRef {
    /// The claimed handoff's id.
    pub handoff_id: String,
    /// The claim's fencing token.
    pub token: u64,
    /// The claim's secret, as `Claim.secret` gave it.
    pub secret: String,
    /// The lease length, renewed by each heartbeat.
    #[serde(rename = "lease_seconds", serialize_with = "seconds")]
    pub lease: Duration,
}

fn seconds<S: Serializer>(lease: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(lease.as_secs_f64())
}

#[uniffi::export]
impl Claim {
    /// The reference that settles this claim.
    pub fn reference(&self) -> ClaimRef {
        ClaimRef {
            handoff_id: self.handoff.id.clone(),
            token: self.token,
            secret: self.secret.clone(),
            lease: self.lease,
        }
    }
}

impl fmt::Display for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Claim(handoff {}, token {}, lease {}s, secret hidden)",
            self.handoff.id,
            self.token,
            self.lease.as_secs_f64()
        )
    }
}

impl fmt::Debug for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Claim")
            .field("handoff", &self.handoff)
            .field("token", &self.token)
            .field("secret", &"…")
            .field("lease", &self.lease)
            .finish()
    }
}

impl fmt::Display for ClaimRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ClaimRef(handoff {}, token {}, lease {}s, secret hidden)",
            self.handoff_id,
            self.token,
            self.lease.as_secs_f64()
        )
    }
}

impl fmt::Debug for ClaimRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClaimRef")
            .field("handoff_id", &self.handoff_id)
            .field("token", &self.token)
            .field("secret", &"…")
            .field("lease", &self.lease)
            .finish()
    }
}

impl From<core::Claim> for Claim {
    fn from(claim: core::Claim) -> Self {
        Claim {
            secret: claim.secret.expose().to_owned(),
            handoff: claim.handoff,
            token: claim.token,
            lease: claim.lease,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(secret: &str) -> ClaimRef {
        ClaimRef {
            handoff_id: "h1".into(),
            token: 2,
            secret: secret.into(),
            lease: Duration::from_secs(60),
        }
    }

    #[test]
    fn printing_hides_the_secret() {
        let secret = format!("hcs_{}", "ab".repeat(32));
        let r = reference(&secret);
        for shown in [r.to_string(), format!("{r:?}")] {
            assert!(!shown.contains(&secret[4..]), "{shown}");
            assert!(shown.contains("h1"), "{shown}");
        }
    }
}
