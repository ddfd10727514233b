//! Path statistics: per from→to pair, how hand-offs went; the queue's counts per status and
//! addressee.

use handoff_core::{PathStats, QueueCount};
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

/// How many handoffs are in one status for one addressee.
#[napi(
    object,
    js_name = "QueueCount",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsQueueCount {
    /// The status.
    pub status: String,
    /// The agent they are addressed to; `null`: any agent may claim them.
    pub to_agent: Option<String>,
    /// How many.
    pub count: f64,
}

impl Mirror for QueueCount {
    type Out = JsQueueCount;
    fn mirror(self) -> JsQueueCount {
        let QueueCount {
            status,
            to_agent,
            count,
        } = self;
        JsQueueCount {
            status: status.as_str().to_owned(),
            to_agent,
            count: count as f64,
        }
    }
}
