//! Chains: the hops a task took from agent to agent.

use handoff_core::{Chain, Hop};
use napi_derive::napi;

use crate::record::iso;
use crate::task::Mirror;
use serde::Serialize;

/// One hop of a chain: a handoff from one agent to the next.
#[napi(
    object,
    js_name = "Hop",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsHop {
    /// The handoff making this hop.
    pub handoff_id: String,
    /// The handoff it continues.
    pub parent_id: Option<String>,
    /// The agent handing over.
    pub from_agent: Option<String>,
    /// The agent taking over: the addressee, or whoever claimed an open handoff.
    pub to_agent: Option<String>,
    /// The handoff's kind.
    #[napi(ts_type = "HandoffKind")]
    pub kind: String,
    /// The handoff's status.
    #[napi(ts_type = "HandoffStatus")]
    pub status: String,
    /// When the hop was created (ISO 8601).
    pub created_at: String,
}

/// A task's hops in creation order (checkpoints are not hops).
#[napi(
    object,
    js_name = "Chain",
    object_from_js = false,
    object_to_js = false
)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsChain {
    /// The task.
    pub task_id: String,
    /// Its hops, oldest first.
    pub hops: Vec<JsHop>,
    /// The agents the task passed through, in order (`*` for anyone / unnamed).
    pub path: Vec<String>,
    /// The path as text: `claude → gemini`.
    pub text: String,
}

impl Mirror for Hop {
    type Out = JsHop;
    fn mirror(self) -> JsHop {
        JsHop {
            handoff_id: self.handoff_id,
            parent_id: self.parent_id,
            from_agent: self.from_agent,
            to_agent: self.to_agent,
            kind: self.kind.as_str().to_owned(),
            status: self.status.as_str().to_owned(),
            created_at: iso(self.created_at),
        }
    }
}

impl Mirror for Chain {
    type Out = JsChain;
    fn mirror(self) -> JsChain {
        let path = self.path();
        let text = self.to_string();
        JsChain {
            task_id: self.task_id,
            hops: self.hops.into_iter().map(Mirror::mirror).collect(),
            path,
            text,
        }
    }
}
