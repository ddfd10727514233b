//! Spans of the core's work, through the `tracing` crate: one per catalog operation
//! ([`operation`], opened by [`Operation::call`](crate::ops::Operation::call), which every face
//! goes through) and one per write of the [`Store`](crate::Store) to a handoff ([`write`]).
//! Each names the operation, the backend, the handoff, task and agents it concerns, and its
//! outcome (`ok` or the error's code).
//!
//! The core installs no subscriber: a program that wants the spans installs one (the `handoff`
//! command does, see its `--log-format`). Without one, a span costs the check of one cached
//! flag; the fields are read only for a span someone listens to.

use serde_json::Value;
use tracing::{Span, field};

use crate::error::Result;
use crate::store::Store;

/// The span of the catalog operation `name` on `store`, called with `args` (the named
/// arguments as JSON): the handoff, task and agents they name are its fields.
pub(crate) fn operation(name: &'static str, store: &Store, args: &Value) -> Span {
    let span = tracing::info_span!(
        "handoff.operation",
        otel.name = name,
        operation = name,
        backend = store.backend.name(),
        handoff_id = field::Empty,
        task_id = field::Empty,
        agent = field::Empty,
        from_agent = field::Empty,
        to_agent = field::Empty,
        outcome = field::Empty,
    );
    if !span.is_disabled() {
        // The arguments that name what the operation is about, under the span's names. The
        // acting agent goes by several names (see ARCHITECTURE.md, "the agent acting").
        const NAMED: [(&str, &str); 9] = [
            ("id", "handoff_id"),
            ("handoff_id", "handoff_id"),
            ("task_id", "task_id"),
            ("agent", "agent"),
            ("by", "agent"),
            ("manager", "agent"),
            ("orchestrator", "agent"),
            ("from_agent", "from_agent"),
            ("to_agent", "to_agent"),
        ];
        for (argument, name) in NAMED {
            if let Some(text) = args.get(argument).and_then(Value::as_str) {
                span.record(name, text);
            }
        }
    }
    span
}

/// The span of one write of the store to the handoff `id` (`None`: not known before it is
/// written), of `task` and by `agent` when the caller knows them.
pub(crate) fn write(
    what: &'static str,
    store: &Store,
    id: Option<&str>,
    task: Option<&str>,
    agent: Option<&str>,
) -> Span {
    tracing::debug_span!(
        "handoff.write",
        otel.name = what,
        write = what,
        backend = store.backend.name(),
        handoff_id = id,
        task_id = task,
        agent,
        outcome = field::Empty,
    )
}

/// Records `result`'s outcome on `span` (`ok`, or the error's code: `NOT_FOUND`, ...) and
/// hands it back.
pub(crate) fn outcome<T>(span: &Span, result: Result<T>) -> Result<T> {
    if !span.is_disabled() {
        match &result {
            Ok(_) => span.record("outcome", "ok"),
            Err(err) => span.record("outcome", err.kind().code()),
        };
    }
    result
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::{Arc, Mutex};

    use serde_json::json;
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Metadata, Subscriber};

    use crate::ops::{self, Operation};
    use crate::{NewHandoff, Store};

    /// A span's name and its fields as `name=value` texts, in the order they were given.
    type Seen = (String, Vec<String>);

    /// Every span seen.
    #[derive(Clone, Default)]
    struct Spans(Arc<Mutex<Vec<Seen>>>);

    struct Fields<'a>(&'a mut Vec<String>);

    impl tracing::field::Visit for Fields<'_> {
        fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
            self.0.push(format!("{}={value:?}", field.name()));
        }
        fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
            self.0.push(format!("{}={value}", field.name()));
        }
    }

    impl Subscriber for Spans {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, span: &Attributes<'_>) -> Id {
            let mut spans = self.0.lock().unwrap();
            let mut fields = Vec::new();
            span.record(&mut Fields(&mut fields));
            spans.push((span.metadata().name().to_owned(), fields));
            Id::from_u64(spans.len() as u64)
        }
        fn record(&self, span: &Id, values: &Record<'_>) {
            let mut spans = self.0.lock().unwrap();
            let index = usize::try_from(span.into_u64()).unwrap() - 1;
            values.record(&mut Fields(&mut spans[index].1));
        }
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, _: &Event<'_>) {}
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    #[test]
    fn operations_and_writes_have_spans_naming_what_they_touch() {
        let spans = Spans::default();
        let store = Store::memory();
        let h = store.create(NewHandoff::new("t1", "goal")).unwrap();
        tracing::subscriber::with_default(spans.clone(), || {
            ops::Claim::call(&store, json!({"id": h.id, "agent": "worker"})).unwrap();
            let missing = ops::Claim::call(&store, json!({"id": "nope", "agent": "worker"}));
            assert!(missing.is_err());
            ops::Stats::call(&store, json!({})).unwrap();
        });
        let spans = spans.0.lock().unwrap();
        let has = |index: usize, field: &str| spans[index].1.iter().any(|f| f == field);
        assert_eq!(spans[0].0, "handoff.operation");
        for field in [
            "operation=claim",
            "backend=memory",
            &format!("handoff_id={}", h.id),
            "agent=worker",
            "outcome=ok",
        ] {
            assert!(has(0, field), "{field} in {:?}", spans[0].1);
        }
        let failed = spans
            .iter()
            .position(|(_, f)| f.iter().any(|f| f == "handoff_id=nope"))
            .unwrap();
        assert!(has(failed, "outcome=NOT_FOUND"), "{:?}", spans[failed].1);
        let (_, stats) = spans.last().unwrap();
        assert!(stats.iter().any(|f| f == "operation=stats"), "{stats:?}");
        assert!(stats.iter().any(|f| f == "outcome=ok"), "{stats:?}");
    }
}
