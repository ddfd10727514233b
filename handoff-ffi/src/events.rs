//! What the store reports back: the event log, chains, per-path statistics and the store's
//! metrics. The records are the core's own (its `uniffi` feature); a chain adds what the core
//! computes from it.

use handoff_core as core;

pub use handoff_core::metrics::{Bucket, EventCount, Histogram, Metrics, StepCount};
pub use handoff_core::{Change, Event, Hop, PathStats, QueueCount};

/// A task's hops in creation order. Checkpoints are not hops and are left out.
#[derive(Clone, Debug, PartialEq, uniffi::Record)]
pub struct Chain {
    /// The task.
    pub task_id: String,
    /// Its hops, oldest first.
    pub hops: Vec<Hop>,
    /// The agents the task passed through, in order (`*` for an open, unclaimed handoff).
    pub path: Vec<String>,
    /// The path as text: `claude → gemini → codex`.
    pub text: String,
}

/// The event as it may be shown: every text its change carries (an outcome, a reason, an
/// error, the addressee, whatever a newer change adds) through the core's redaction, as the
/// CLI shows events.
pub(crate) fn redacted(mut event: Event) -> Event {
    if let Ok(mut change) = serde_json::to_value(&event.change) {
        // Iterative, so that nesting depth costs heap, not stack; keys name, not carry.
        let mut pending = vec![&mut change];
        while let Some(value) = pending.pop() {
            match value {
                serde_json::Value::String(text) => {
                    let (clean, found) = core::redact(text);
                    if !found.is_empty() {
                        *text = clean;
                    }
                }
                serde_json::Value::Array(items) => pending.extend(items.iter_mut()),
                serde_json::Value::Object(map) => pending.extend(map.values_mut()),
                _ => {}
            }
        }
        if let Ok(change) = serde_json::from_value(change) {
            event.change = change;
        }
    }
    event
}

impl From<core::Chain> for Chain {
    fn from(chain: core::Chain) -> Self {
        let path = chain.path();
        let text = chain.to_string();
        Chain {
            task_id: chain.task_id,
            hops: chain.hops,
            path,
            text,
        }
    }
}
