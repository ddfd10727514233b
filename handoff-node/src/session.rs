//! Sessions: who owns a conversation now, and the hops it took (the core's
//! [`handoff_core::store::Session`]).

use handoff_core::Metadata;
use handoff_core::store::Session;
use napi_derive::napi;
use serde::Serialize;

use crate::chain::JsHop;
use crate::task::Mirror;

/// A conversation as the store knows it: what `session(sessionId)` returns.
#[napi(
    object,
    js_name = "Session",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsSession {
    /// The session, as handoffs name it in `sessionId`.
    pub session_id: String,
    /// Who owns it now: the holder of its latest handoff once taken (claimed or completed),
    /// else that handoff's sender; `null` before its first handoff.
    pub current_agent: Option<String>,
    /// Its handoffs as hops, oldest first.
    pub handoff_chain: Vec<JsHop>,
    /// Its shared context: the memory of scope `session:<sessionId>` (`{}` when none).
    #[napi(ts_type = "JsonObject")]
    pub context: Metadata,
}

impl Mirror for Session {
    type Out = JsSession;
    fn mirror(self) -> JsSession {
        let Session {
            session_id,
            current_agent,
            handoff_chain,
            context,
        } = self;
        JsSession {
            session_id,
            current_agent,
            handoff_chain: handoff_chain.mirror(),
            context,
        }
    }
}
