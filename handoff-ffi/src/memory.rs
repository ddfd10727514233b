//! Memory and sessions (docs/design.md §7) as the foreign languages see them: versioned JSON documents
//! by scope, the updater a caller gives `Store.memory_update`, and who owns a conversation.

use handoff_core as core;

use crate::arguments::{object, object_to_text};
use crate::error::{HandoffError, Result};

pub use handoff_core::store::{Memory, Session};

/// Changes a scope's memory for `Store.memory_update`: implement it in Swift, Kotlin or Python.
///
/// `update` may be called more than once, when another writer came first: it must compute the
/// new value from the one it is given, and have no other effect it would regret repeating (it
/// runs outside any transaction, so a slow one holds no lock). Throwing stops the update and
/// writes nothing: a `HandoffError` comes out of `memory_update` as it was thrown, anything
/// else as `HandoffError.Foreign` with its text.
#[uniffi::export(with_foreign)]
pub trait MemoryUpdater: Send + Sync {
    /// The new value of the memory, from `current` (its value now, `{}` when nothing was
    /// written): both JSON objects, as text.
    fn update(&self, current: String) -> Result<String>;
}

/// The core's change function for a foreign [`MemoryUpdater`]: JSON text out and in. A value
/// that is not a JSON object is refused as `Validation` on `value`, and nothing is written.
pub(crate) fn change(
    updater: &dyn MemoryUpdater,
) -> impl FnMut(core::Metadata) -> Result<core::Metadata> + '_ {
    move |current| {
        let changed = updater.update(object_to_text(current))?;
        object(&changed).map_err(|rule| HandoffError::invalid("value", rule))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::{Value, json};

    use super::*;
    use crate::{CreateOptions, OpenOptions, Store};

    /// Adds one to `n`, as a foreign updater would.
    struct Increment(AtomicUsize);

    impl MemoryUpdater for Increment {
        fn update(&self, current: String) -> Result<String> {
            self.0.fetch_add(1, Ordering::SeqCst);
            let mut value: Value = serde_json::from_str(&current).unwrap();
            let n = value["n"].as_u64().unwrap_or(0);
            value["n"] = json!(n + 1);
            Ok(value.to_string())
        }
    }

    /// Throws what it is given, as a foreign updater would.
    struct Throws(HandoffError);

    impl MemoryUpdater for Throws {
        fn update(&self, _: String) -> Result<String> {
            Err(match &self.0 {
                HandoffError::Foreign { description } => HandoffError::Foreign {
                    description: description.clone(),
                },
                _ => HandoffError::invalid("mine", "no"),
            })
        }
    }

    struct NotAnObject;

    impl MemoryUpdater for NotAnObject {
        fn update(&self, _: String) -> Result<String> {
            Ok("[1]".into())
        }
    }

    #[test]
    fn memory_is_versioned() {
        let store = Store::memory(OpenOptions::default()).unwrap();
        let scope = || "agent:writer".to_owned();
        assert!(store.memory_get(scope()).unwrap().is_none());
        let first = store
            .memory_put(scope(), r#"{"tone": "warm"}"#.into(), Some(0))
            .unwrap();
        assert_eq!(
            (
                first.version,
                Value::Object(first.value.clone()).to_string().as_str()
            ),
            (1, r#"{"tone":"warm"}"#)
        );
        let stale = store.memory_put(scope(), "{}".into(), Some(0)).unwrap_err();
        assert!(matches!(
            stale,
            HandoffError::Conflict {
                expected_version: Some(0),
                actual_version: Some(1),
                ..
            }
        ));
        let bad = store.memory_put(scope(), "[]".into(), None).unwrap_err();
        assert!(
            matches!(bad, HandoffError::Validation { problems, .. } if problems[0].field == "value")
        );
        assert_eq!(store.memory_get(scope()).unwrap(), Some(first));
        assert_eq!(store.memory_list(Some("agent:".into())).unwrap().len(), 1);
        assert!(store.memory_delete(scope(), Some(1)).unwrap());
        assert!(store.memory_list(None).unwrap().is_empty());
    }

    #[test]
    fn an_update_goes_through_the_updater() {
        let store = Store::memory(OpenOptions::default()).unwrap();
        let increment = Arc::new(Increment(AtomicUsize::new(0)));
        store
            .memory_update("shared".into(), increment.clone())
            .unwrap();
        let memory = store
            .memory_update("shared".into(), increment.clone())
            .unwrap();
        assert_eq!(
            (
                memory.version,
                Value::Object(memory.value).to_string().as_str()
            ),
            (2, r#"{"n":2}"#)
        );
        assert_eq!(increment.0.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_failed_update_writes_nothing() {
        let store = Store::memory(OpenOptions::default()).unwrap();
        store
            .memory_put("shared".into(), r#"{"n": 1}"#.into(), None)
            .unwrap();
        let before = store.memory_get("shared".into()).unwrap();
        let thrown = HandoffError::Foreign {
            description: "ValueError: no".into(),
        };
        let err = store
            .memory_update("shared".into(), Arc::new(Throws(thrown)))
            .unwrap_err();
        assert!(
            matches!(err, HandoffError::Foreign { description } if description == "ValueError: no")
        );
        let err = store
            .memory_update(
                "shared".into(),
                Arc::new(Throws(HandoffError::invalid("x", "y"))),
            )
            .unwrap_err();
        assert!(
            matches!(err, HandoffError::Validation { problems, .. } if problems[0].field == "mine")
        );
        let err = store
            .memory_update("shared".into(), Arc::new(NotAnObject))
            .unwrap_err();
        assert!(
            matches!(err, HandoffError::Validation { problems, .. } if problems[0].field == "value")
        );
        assert_eq!(store.memory_get("shared".into()).unwrap(), before);
    }

    #[test]
    fn a_session_knows_its_owner() {
        let store = Store::memory(OpenOptions::default()).unwrap();
        let handoff = CreateOptions {
            task_id: "t1".into(),
            goal: "Answer the customer".into(),
            from_agent: Some("triage".into()),
            to_agent: Some("billing".into()),
            session_id: Some("s1".into()),
            ..CreateOptions::default()
        };
        store.create(handoff).unwrap();
        store
            .memory_put("session:s1".into(), r#"{"lang": "ko"}"#.into(), None)
            .unwrap();
        let session = store.session("s1".into()).unwrap();
        assert_eq!(session.current_agent.as_deref(), Some("triage"));
        store
            .claim_next("billing".into(), None, None, None)
            .unwrap();
        let session = store.session("s1".into()).unwrap();
        assert_eq!(session.current_agent.as_deref(), Some("billing"));
        assert_eq!(session.handoff_chain.len(), 1);
        assert_eq!(
            Value::Object(session.context).to_string(),
            r#"{"lang":"ko"}"#
        );
    }
}
