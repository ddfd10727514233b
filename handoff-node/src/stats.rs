//! Path statistics: per from→to pair, how hand-offs went.

use handoff_core::PathStats;
use napi_derive::napi;
use serde::Serialize;

use crate::task::Mirror;

/// How the hand-offs of one from→to pair went.
#[napi(
    object,
    js_name = "PathStats",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsPathStats {
    /// The agent handing over (`*` when unnamed).
    pub from_agent: String,
    /// The agent taking over: the addressee, or whoever claimed an open hand-off (`*` while
    /// nobody has).
    pub to_agent: String,
    /// Hand-offs on this path.
    pub total: f64,
    /// Of which completed.
    pub completed: f64,
    /// Of which failed (their leases ran out `maxAttempts` times).
    pub failed: f64,
    /// Of which rejected by the addressee.
    pub rejected: f64,
    /// Median seconds from creation to the first claim, over the claimed ones.
    pub median_claim_seconds: Option<f64>,
    /// Median seconds from creation to completion, over the completed ones.
    pub median_complete_seconds: Option<f64>,
}

impl Mirror for PathStats {
    type Out = JsPathStats;
    fn mirror(self) -> JsPathStats {
        // Destructured in full: a new statistic fails to compile here until it is mapped.
        let PathStats {
            from_agent,
            to_agent,
            total,
            completed,
            failed,
            rejected,
            median_claim_seconds,
            median_complete_seconds,
        } = self;
        JsPathStats {
            from_agent,
            to_agent,
            total: total as f64,
            completed: completed as f64,
            failed: failed as f64,
            rejected: rejected as f64,
            median_claim_seconds,
            median_complete_seconds,
        }
    }
}
