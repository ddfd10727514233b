//! How this binding hands its values to the core (docs/design.md §15): a method serializes its record,
//! or its parameters with [`arguments!`], under the core's argument names, and the core reads
//! them as it reads every face's (`ops::Operation::call`), reporting every problem at once by
//! argument name. What this binding's types can hold and JSON cannot (metadata text that is not
//! a JSON object, a time beyond a record's years) is refused here, named by its path.

use handoff_core as core;
use handoff_core::ops;
use serde::{Serialize, Serializer, ser::Error as _};
use serde_json::{Map, Value};

use crate::error::{HandoffError, Result};

/// A method's parameters as an operation's named arguments: `arguments! { id, agent }`
/// serializes as `{"id": …, "agent": …}`, and `arguments! { older_than_seconds: d.as_secs_f64() }`
/// gives a parameter the core's name and unit. Attributes pass to the field
/// (`#[serde(flatten)] fields`). Each name is a type parameter too, so that any serializable
/// value fits without writing its type; the module keeps the lowercase type names to itself.
macro_rules! arguments {
    ($($(#[$attr:meta])* $name:ident $(: $value:expr)?),* $(,)?) => {{
        #[allow(non_camel_case_types)]
        mod named {
            #[derive(serde::Serialize)]
            pub(super) struct Arguments<$($name),*> { $($(#[$attr])* pub(super) $name: $name),* }
        }
        named::Arguments { $($name $(: $value)?),* }
    }};
}
pub(crate) use arguments;

/// Where this binding's API names a value differently from the core's arguments, as (core,
/// ours). A lease is a `Duration` called `lease` here (the core counts `lease_seconds`), and so
/// is `claim_next`'s `wait` (`wait_seconds`); a claim reference's problems are named by its own
/// fields (`secret`): the Swift and Kotlin API and its tests say so. Every other problem keeps
/// the core's name.
const OWN_NAMES: &[(&str, &str)] = &[
    ("lease_seconds", "lease"),
    ("claim.lease_seconds", "lease"),
    ("claim.secret", "secret"),
    ("wait_seconds", "wait"),
];

/// Runs the core's operation `O` with `arguments`, serialized under `O`'s argument names.
pub(crate) fn call<O: ops::Operation>(
    store: &core::Store,
    arguments: &impl Serialize,
) -> Result<O::Output> {
    O::call(store, json("", arguments)?).map_err(own_names)
}

/// Reads the arguments `A` of an operation that takes code beside them (a verifier, a judge:
/// its `run_with`) from `arguments`, under `store`'s limits, as [`call`] reads them.
pub(crate) fn read_for<A: ops::Arguments>(
    store: &core::Store,
    arguments: &impl Serialize,
) -> Result<A> {
    A::read(json("", arguments)?, store.limits()).map_err(own_names)
}

/// Reads the core's arguments `A` (a registry's or a context builder's) from `arguments`.
pub(crate) fn read<A: ops::Arguments>(arguments: &impl Serialize) -> Result<A> {
    Ok(A::read(json("", arguments)?, &core::Limits::default())?)
}

/// `value` as JSON. A part it cannot be is a validation error named by `field` and the part's
/// path inside `value` (`messages[0]` and `tool_calls[1]`: `messages[0].tool_calls[1]`).
pub(crate) fn json(field: &str, value: &impl Serialize) -> Result<Value> {
    serde_path_to_error::serialize(value, serde_json::value::Serializer).map_err(|err| {
        let inner = err.path().to_string();
        let name = match (field, inner.as_str()) {
            (_, ".") => field.to_owned(),
            ("", _) => inner,
            (_, _) if inner.starts_with('[') => format!("{field}{inner}"),
            _ => format!("{field}.{inner}"),
        };
        HandoffError::invalid(&name, err.into_inner().to_string())
    })
}

fn own_names(error: core::Error) -> HandoffError {
    match error {
        core::Error::Validation { mut problems } => {
            for problem in &mut problems {
                if let Some((_, ours)) = OWN_NAMES.iter().find(|(name, _)| *name == problem.field) {
                    (*ours).clone_into(&mut problem.field);
                }
            }
            core::Error::Validation { problems }.into()
        }
        other => other.into(),
    }
}

/// `text` as a JSON object, or the rule it breaks.
pub(crate) fn object(text: &str) -> std::result::Result<Map<String, Value>, String> {
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("must be a JSON object".to_owned()),
        Err(e) => Err(format!("is not valid JSON: {e}")),
    }
}

/// Metadata given as JSON text, which the core's arguments hold as the object itself.
pub(crate) mod object_text {
    use serde::{Deserialize, Deserializer, Serialize, Serializer, ser::Error as _};
    use serde_json::{Map, Value};

    pub(crate) fn serialize<S: Serializer>(
        text: &Option<String>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match text {
            Some(text) => super::object(text)
                .map_err(S::Error::custom)?
                .serialize(serializer),
            None => serializer.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<String>, D::Error> {
        let object = Option::<Map<String, Value>>::deserialize(deserializer)?;
        Ok(object.map(|map| Value::Object(map).to_string()))
    }
}

/// A time, which the core's arguments read in RFC 3339, if a record can hold it.
pub(crate) mod rfc3339 {
    use std::time::SystemTime;

    use chrono::{DateTime, Utc};
    use serde::{Deserialize, Deserializer, Serialize, Serializer, ser::Error as _};

    use crate::record::{OUT_OF_RANGE, record_time};

    pub(crate) fn serialize<S: Serializer>(
        at: &Option<SystemTime>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match at {
            Some(at) => record_time(*at)
                .ok_or_else(|| S::Error::custom(OUT_OF_RANGE))?
                .serialize(serializer),
            None => serializer.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<SystemTime>, D::Error> {
        Ok(Option::<DateTime<Utc>>::deserialize(deserializer)?.map(SystemTime::from))
    }
}

/// JSON texts (tool calls), serialized as the values they hold; a text that is not JSON is
/// named by its index.
pub(crate) fn json_texts<S: Serializer>(
    texts: &[String],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(texts.iter().map(|text| JsonText(text)))
}

/// JSON object text (a task's context, a memory's value), serialized as the object it holds.
pub(crate) struct ObjectText<'a>(pub(crate) &'a str);

impl Serialize for ObjectText<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        object(self.0)
            .map_err(S::Error::custom)?
            .serialize(serializer)
    }
}

/// JSON texts (a task's artifacts and issues), serialized as the list of values they hold.
pub(crate) struct JsonTexts<'a>(pub(crate) &'a [String]);

impl Serialize for JsonTexts<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        json_texts(self.0, serializer)
    }
}

/// A JSON value as text, as this binding hands JSON to the foreign languages.
pub(crate) fn text(value: Value) -> String {
    value.to_string()
}

/// A JSON object as text.
pub(crate) fn object_to_text(map: Map<String, Value>) -> String {
    Value::Object(map).to_string()
}

/// JSON text (a heartbeat's progress), serialized as the value it holds.
pub(crate) struct JsonText<'a>(pub(crate) &'a str);

impl Serialize for JsonText<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serde_json::from_str::<Value>(self.0)
            .map_err(|e| S::Error::custom(format!("is not valid JSON: {e}")))?
            .serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::BTreeSet;
    use std::time::Duration;

    use super::*;
    use crate::{ClaimRef, CreateOptions, ListFilter, OpenOptions, Store};

    /// The names `O` takes.
    fn argument_names<O: ops::Operation>() -> BTreeSet<String> {
        let info = ops::OperationInfo::of::<O>();
        info.arguments["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    }

    fn names(value: &impl Serialize) -> BTreeSet<String> {
        json("", value)
            .unwrap()
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    }

    fn problems(err: HandoffError) -> Vec<(String, String)> {
        match err {
            HandoffError::Validation { problems, .. } => {
                problems.into_iter().map(|p| (p.field, p.rule)).collect()
            }
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    /// One description: this binding's records carry the core's arguments under their names,
    /// so that an argument the core adds fails here until the record has it.
    #[test]
    fn the_records_are_the_core_arguments() {
        let every_option = CreateOptions {
            from_agent: Some("a".into()),
            to_agent: Some("b".into()),
            kind: Some(crate::HandoffKind::Full),
            ..CreateOptions::default()
        };
        let mut create = argument_names::<ops::Create>();
        // The typed reason carries its seconds: there is no bare `timeout` to complete.
        assert!(create.remove("timeout_seconds"));
        assert_eq!(names(&every_option), create);

        assert_eq!(names(&ListFilter::default()), argument_names::<ops::List>());

        let claim = ClaimRef {
            handoff_id: "h".into(),
            token: 1,
            secret: "s".into(),
            lease: Duration::from_secs(1),
        };
        let schema = ops::OperationInfo::of::<ops::Heartbeat>().arguments;
        let claim_argument = schema["$defs"]["ClaimRef"]["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<BTreeSet<_>>();
        assert_eq!(names(&claim), claim_argument);
    }

    /// The fixture every face's test feeds through its own door.
    #[test]
    fn one_bad_create_gives_the_shared_problem_list() {
        let fixture: Value = serde_json::from_str(include_str!(
            "../../handoff-core/tests/fixtures/bad_create.json"
        ))
        .unwrap();
        let expected: Vec<(String, String)> =
            serde_json::from_value(fixture["problems"].clone()).unwrap();
        let store = Store::memory(OpenOptions::default()).unwrap();
        let err = store.create_json(fixture["input"].to_string()).unwrap_err();
        assert_eq!(problems(err), expected);
        assert!(store.list(ListFilter::default()).unwrap().is_empty());
    }

    /// A store's clock may stand anywhere (here at 2026-01-01, before the wall clock): an
    /// expiry is judged by it, not by the wall clock.
    #[test]
    fn expiries_are_judged_by_the_stores_clock() {
        let clock = crate::ManualClock::new(None).unwrap();
        let store = Store::memory(OpenOptions {
            clock: Some(clock.clone()),
            ..OpenOptions::default()
        })
        .unwrap();
        let expiring = |at| CreateOptions {
            task_id: "t".into(),
            goal: "g".into(),
            expires_at: Some(at),
            ..CreateOptions::default()
        };
        let minute = Duration::from_secs(60);
        assert!(store.create(expiring(clock.now() + minute)).is_ok());
        let err = store.create(expiring(clock.now() - minute)).unwrap_err();
        assert_eq!(problems(err)[0].0, "expires_at");
    }

    /// A wait is a `Duration` called `wait` here, as a lease is `lease`: the core's problems
    /// with `wait_seconds` carry this binding's name.
    #[test]
    fn a_wait_is_named_as_this_binding_names_it() {
        let store = Store::memory(OpenOptions::default()).unwrap();
        let err = store
            .claim_next("w".into(), None, Some(Duration::MAX), Some(Duration::MAX))
            .unwrap_err();
        let fields: Vec<String> = problems(err).into_iter().map(|(field, _)| field).collect();
        assert_eq!(fields, ["lease", "wait"]);
        let waited = store.claim_next("w".into(), None, None, Some(Duration::from_millis(20)));
        assert!(waited.unwrap().is_none());
    }

    #[test]
    fn what_json_cannot_hold_is_named_by_its_path() {
        let store = Store::memory(OpenOptions::default()).unwrap();
        let bad = CreateOptions {
            task_id: "t".into(),
            goal: "g".into(),
            metadata: Some("[1]".into()),
            ..CreateOptions::default()
        };
        let good = CreateOptions {
            metadata: None,
            ..bad.clone()
        };
        let err = store.create_many(vec![good, bad]).unwrap_err();
        assert_eq!(
            problems(err),
            [(
                "items[1].metadata".to_owned(),
                "must be a JSON object".to_owned()
            )]
        );
        let err = store.create_json("{".into()).unwrap_err();
        assert_eq!(problems(err)[0].0, "arguments_json");
    }
}

/// Every operation of the core's catalog is a method of the Swift and Kotlin `Store`, as the
/// committed API surface shows: a new operation without its one ffi method fails here.
#[cfg(test)]
mod coverage {
    #[test]
    fn every_catalog_operation_is_a_store_method() {
        let surface = include_str!("../api/kotlin.txt");
        for op in handoff_core::ops::catalog() {
            let camel: String = op
                .name
                .split('_')
                .enumerate()
                .map(|(i, part)| match i {
                    0 => part.to_owned(),
                    _ => part[..1].to_uppercase() + &part[1..],
                })
                .collect();
            assert!(
                surface.contains(&format!("fun `{camel}`(")),
                "the uniffi Store has no method for the core's `{}`",
                op.name
            );
        }
    }
}
