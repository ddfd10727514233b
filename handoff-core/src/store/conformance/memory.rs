//! The conformance cases of documents, and the memory and sessions kept in them.

use super::*;

pub fn documents_are_kept_by_kind_and_key(store: Store) {
    let backend = store.backend();
    let doc = |version: u64, body: &str| Doc {
        version,
        body: body.to_owned(),
    };
    backend
        .write(&mut |tx| {
            assert_eq!(tx.doc("task", "t1")?, None);
            tx.insert_doc("task", "t1", &doc(1, r#"{"name":"a"}"#))?;
            for step in ["t1/b", "t1/a", "t10/a", "t2/a"] {
                tx.insert_doc("step", step, &doc(1, r#"{"step":true}"#))?;
            }
            // A transaction sees its own writes.
            assert_eq!(tx.doc("task", "t1")?, Some(doc(1, r#"{"name":"a"}"#)));
            let keys: Vec<String> = tx
                .docs("step", "t1/")?
                .into_iter()
                .map(|(k, _)| k)
                .collect();
            assert_eq!(keys, ["t1/a", "t1/b"]);
            // Several at once, in the order asked, a missing one as `None`; an update of a
            // document inserted in the same transaction is what is then read.
            tx.update_doc("step", "t2/a", &doc(2, r#"{"step":false}"#))?;
            let read = tx.docs_at(&[("step", "t2/a"), ("step", "t3/a"), ("task", "t1")])?;
            assert_eq!(
                read,
                [
                    Some(doc(2, r#"{"step":false}"#)),
                    None,
                    Some(doc(1, r#"{"name":"a"}"#))
                ]
            );
            assert_eq!(tx.docs_at(&[])?, []);
            // A look that locks nothing still sees the transaction's own writes.
            assert_eq!(
                tx.peek_doc("step", "t2/a")?,
                Some(doc(2, r#"{"step":false}"#))
            );
            assert_eq!(tx.peek_doc("step", "t3/a")?, None);
            Ok(())
        })
        .unwrap();
    assert_eq!(backend.doc("task", "t1").unwrap().unwrap().version, 1);
    assert_eq!(backend.doc("step", "t2/a").unwrap().unwrap().version, 2);
    assert_eq!(backend.doc("step", "t1").unwrap(), None, "kinds are apart");

    let keys = |prefix: &str, after: Option<&str>, limit: usize| -> Vec<String> {
        backend
            .docs("step", prefix, after, limit)
            .unwrap()
            .into_iter()
            .map(|(key, _)| key)
            .collect()
    };
    assert_eq!(keys("t1/", None, 10), ["t1/a", "t1/b"]);
    assert_eq!(keys("t1", None, 10), ["t1/a", "t1/b", "t10/a"]);
    assert_eq!(keys("", Some("t1/a"), 2), ["t1/b", "t10/a"]);
    assert_eq!(keys("t1/", Some("t1/b"), 10), Vec::<String>::new());

    // A failed write leaves every document as it was.
    let err = backend
        .write(&mut |tx| {
            tx.update_doc("task", "t1", &doc(2, r#"{"name":"b"}"#))?;
            tx.insert_doc("task", "t3", &doc(1, "{}"))?;
            Err(Error::storage("refused"))
        })
        .unwrap_err();
    assert_eq!(kind_of(&err), ErrorKind::Storage);
    assert_eq!(backend.doc("task", "t1").unwrap().unwrap().version, 1);
    assert_eq!(backend.doc("task", "t3").unwrap(), None);

    backend
        .write(&mut |tx| {
            let current = tx.doc("task", "t1")?.unwrap();
            tx.update_doc("task", "t1", &doc(current.version + 1, r#"{"name":"b"}"#))
        })
        .unwrap();
    assert_eq!(
        backend.doc("task", "t1").unwrap(),
        Some(doc(2, r#"{"name":"b"}"#))
    );
}

pub fn memory_is_versioned_by_scope(store: Store) {
    let value = |n: i64| {
        let mut map = crate::record::Metadata::new();
        map.insert("count".into(), serde_json::json!(n));
        map
    };
    assert_eq!(store.memory_get("agent:writer").unwrap(), None);
    let first = store.memory_put("agent:writer", value(1), Some(0)).unwrap();
    assert_eq!(first.version, 1);
    match store.memory_put("agent:writer", value(9), Some(0)) {
        Err(Error::VersionConflict {
            expected, actual, ..
        }) => assert_eq!((expected, actual), (0, 1)),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        store.memory_get("agent:writer").unwrap(),
        Some(first.clone())
    );
    let err = store.memory_put("../x", value(1), None).unwrap_err();
    assert_eq!(err.problems()[0].field, "scope");

    // A failing change writes nothing and comes back as it was.
    let failed: std::result::Result<_, Error> =
        store.memory_update("agent:writer", |_| Err(Error::invalid("mine", "no")));
    assert_eq!(failed.unwrap_err().problems()[0].field, "mine");
    assert_eq!(
        store.memory_get("agent:writer").unwrap().unwrap().version,
        1
    );

    // Concurrent increments: none lost.
    std::thread::scope(|scope| {
        for _ in 0..4 {
            let store = store.clone();
            scope.spawn(move || {
                for _ in 0..25 {
                    store
                        .memory_update("shared", |mut v| {
                            let n = v.get("count").and_then(|c| c.as_i64()).unwrap_or(0);
                            v.insert("count".into(), serde_json::json!(n + 1));
                            Ok::<_, Error>(v)
                        })
                        .unwrap();
                }
            });
        }
    });
    let shared = store.memory_get("shared").unwrap().unwrap();
    assert_eq!(shared.value["count"], 100);
    assert_eq!(shared.version, 100);

    store.memory_put("session:s1", value(1), None).unwrap();
    let scopes: Vec<String> = store
        .memory_list(None)
        .unwrap()
        .into_iter()
        .map(|m| m.scope)
        .collect();
    assert_eq!(scopes, ["agent:writer", "session:s1", "shared"]);
    assert_eq!(store.memory_list(Some("session:")).unwrap().len(), 1);
    assert!(store.memory_delete("session:s1", Some(7)).is_err());
    assert!(store.memory_delete("session:s1", Some(1)).unwrap());
    assert!(!store.memory_delete("session:s1", None).unwrap());
    assert_eq!(store.memory_get("session:s1").unwrap(), None);
    assert_eq!(store.memory_list(Some("session:")).unwrap(), []);
    // A writer that read version 1 before the delete does not overwrite what comes after it.
    let again = store.memory_put("session:s1", value(2), Some(0)).unwrap();
    assert_eq!(again.version, 3, "versions go on after a delete");
    assert!(store.memory_put("session:s1", value(3), Some(1)).is_err());
}

pub fn sessions_say_who_owns_a_conversation(store: Store) {
    let empty = store.session("s1").unwrap();
    assert_eq!((empty.current_agent, empty.handoff_chain.len()), (None, 0));
    let first = store
        .create(
            NewHandoff::new("t1", "triage")
                .from_agent("triage")
                .to_agent("billing")
                .session_id("s1"),
        )
        .unwrap();
    store
        .create(NewHandoff::new("t9", "elsewhere").session_id("s2"))
        .unwrap();
    // Handed over but not taken yet: still the sender's.
    assert_eq!(
        store.session("s1").unwrap().current_agent.as_deref(),
        Some("triage")
    );
    let claim = store.claim(&first.id, "billing", MINUTE).unwrap();
    assert_eq!(
        store.session("s1").unwrap().current_agent.as_deref(),
        Some("billing")
    );
    store.complete(&claim, "refunded").unwrap();
    let mut context = crate::record::Metadata::new();
    context.insert("customer".into(), serde_json::json!("c-42"));
    store.memory_put("session:s1", context, None).unwrap();

    let session = store.session("s1").unwrap();
    assert_eq!(session.current_agent.as_deref(), Some("billing"));
    assert_eq!(session.handoff_chain.len(), 1);
    assert_eq!(
        session.handoff_chain[0].to_agent.as_deref(),
        Some("billing")
    );
    assert_eq!(session.context["customer"], "c-42");
    assert_eq!(
        store.session("bad session").unwrap_err().problems()[0].field,
        "session_id"
    );
}
