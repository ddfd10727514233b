//! Reading the caller's JavaScript values: strings, numbers and plain JSON.
//!
//! Arguments arrive untyped (`Unknown`) so that a wrong type becomes a `VALIDATION` error that
//! names the field, instead of napi's generic conversion error. Values are read as JSON (what
//! `JSON.stringify` would keep) by a `Reader`, which names every value it cannot read; the
//! store operations hand that JSON to the core ([`crate::ops`]), the other calls deserialise
//! their options into a typed struct here.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use handoff_core::{Error, Problem};
use napi::bindgen_prelude::{
    Either, Function, JsObjectValue, KeyCollectionMode, KeyConversion, KeyFilter, Object,
};
use napi::{Env, JsValue, Unknown, ValueType};
use serde::de::DeserializeOwned;
use serde_json::{Map, Number, Value};

use crate::errors::{Failure, Outcome, invalid};

/// Deepest nesting read from a JavaScript value: a little more than the most any store
/// accepts ([`handoff_core::MAX_DEPTH`]), so that the core's own check (64 by default, at most
/// 100) gives the precise message, while a cyclic or absurdly deep value is refused after a
/// bounded number of recursive steps, never by exhausting the stack.
const MAX_DEPTH: usize = handoff_core::MAX_DEPTH + 8;

/// How many problems one call reports at most, as in the core.
const MAX_PROBLEMS: usize = 64;

/// The rule broken by a string holding a lone surrogate.
const SURROGATE_RULE: &str = "must be Unicode text: it holds a lone surrogate (an unpaired UTF-16 code unit such as '\\ud800')";
/// The rule broken by an object with such a key.
const SURROGATE_KEY_RULE: &str = "has a key that is not Unicode text: it holds a lone surrogate (an unpaired UTF-16 code unit such as '\\ud800')";

/// Largest integer a JavaScript number holds exactly.
pub(crate) const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

pub(crate) fn type_name(t: ValueType) -> &'static str {
    match t {
        ValueType::Undefined => "undefined",
        ValueType::Null => "null",
        ValueType::Boolean => "a boolean",
        ValueType::Number => "a number",
        ValueType::String => "a string",
        ValueType::Symbol => "a symbol",
        ValueType::Object => "an object",
        ValueType::Function => "a function",
        ValueType::External => "an external",
        ValueType::BigInt => "a bigint",
        _ => "an unknown value",
    }
}

/// A required string argument.
pub(crate) fn string(value: &Unknown<'_>, field: &str) -> Outcome<String> {
    match value.get_type()? {
        ValueType::String => text(value, || field.to_owned(), SURROGATE_RULE),
        other => Err(invalid(
            field,
            format!("must be a string, got {}", type_name(other)),
        )),
    }
}

/// Reads a JavaScript string (of type string, already checked) as Rust text: the one place
/// where strings enter the binding. A lone surrogate is refused, naming `field`, instead of
/// being replaced by U+FFFD as N-API's UTF-8 conversion would: text is never altered silently.
fn text(value: &Unknown<'_>, field: impl FnOnce() -> String, rule: &str) -> Outcome<String> {
    let string = value.coerce_to_string()?;
    let utf8 = string.into_utf8()?.into_owned()?;
    // N-API writes U+FFFD for each lone surrogate, so text without one is exactly what the
    // caller passed; text with one is read again as UTF-16 to tell a real U+FFFD from a
    // replaced surrogate. The common case costs one scan of the bytes.
    if utf8.contains('\u{FFFD}') {
        let utf16 = value.coerce_to_string()?.into_utf16()?;
        if char::decode_utf16(utf16.as_slice().iter().copied()).any(|c| c.is_err()) {
            return Err(invalid(field(), rule));
        }
    }
    Ok(utf8)
}

/// A number argument (finite).
pub(crate) fn number(value: &Unknown<'_>, field: &str) -> Outcome<f64> {
    match value.get_type()? {
        ValueType::Number => {
            let n = value.coerce_to_number()?.get_double()?;
            if n.is_finite() {
                Ok(n)
            } else {
                Err(invalid(field, "must be a finite number"))
            }
        }
        other => Err(invalid(
            field,
            format!("must be a number, got {}", type_name(other)),
        )),
    }
}

/// A plain object argument (not an array, not null).
pub(crate) fn object<'env>(value: &Unknown<'env>, field: &str) -> Outcome<Object<'env>> {
    let t = value.get_type()?;
    if t != ValueType::Object || value.is_array()? {
        let got = if t == ValueType::Object {
            "an array"
        } else {
            type_name(t)
        };
        return Err(invalid(field, format!("must be an object, got {got}")));
    }
    Ok(value.coerce_to_object()?)
}

/// An options object: `undefined` and `null` mean all defaults. Unknown keys and wrong types
/// are `VALIDATION` errors naming the key.
pub(crate) fn options<T: DeserializeOwned>(value: &Unknown<'_>, field: &str) -> Outcome<T> {
    let json = match value.get_type()? {
        ValueType::Undefined | ValueType::Null => Value::Object(Map::new()),
        _ => {
            object(value, field)?;
            // Keys are named from the options object itself: `metadata.x`, `completed[2]`.
            json(value, "")?
        }
    };
    from_json(json, field)
}

/// Deserialises JSON read from the caller into `T`, naming the offending key on failure.
pub(crate) fn from_json<T: DeserializeOwned>(json: Value, field: &str) -> Outcome<T> {
    serde_path_to_error::deserialize(json).map_err(|err| {
        let path = err.path().to_string();
        let message = err.into_inner().to_string();
        // serde names a missing key in its message and points at the parent: name the key.
        if let Some(key) = message
            .strip_prefix("missing field `")
            .and_then(|rest| rest.strip_suffix('`'))
        {
            let at = if path == "." {
                key.to_owned()
            } else {
                format!("{path}.{key}")
            };
            return invalid(at, "is required");
        }
        let at = if path == "." { field.to_owned() } else { path };
        invalid(at, message)
    })
}

/// Reads a JavaScript value as JSON, as `JSON.stringify` would see it: an object's own
/// enumerable properties (not its prototype's getters), `undefined` ones left out, an object
/// with a `toJSON` method read as what that returns, a `Date` as its ISO string; functions, symbols, bigints, `Map`s and
/// `Set`s (which it would write as `{}`), non-finite numbers and values nested too deeply (or cyclic) are refused, every
/// one of them named.
pub(crate) fn json(value: &Unknown<'_>, field: &str) -> Outcome<Value> {
    let mut reader = Reader::default();
    let json = reader.value(value, &mut field.to_owned(), 0)?;
    reader.finish()?;
    Ok(json)
}

/// The built-in collection `object` is (`Map`, `Set` or their weak twins), if it is one: their
/// contents are no properties, so read as JSON they would be an empty object.
fn collection(object: &Object<'_>) -> Outcome<Option<&'static str>> {
    let global = Env::from_raw(object.value().env).get_global()?;
    for name in ["Map", "Set", "WeakMap", "WeakSet"] {
        let constructor: Unknown<'_> = global.get_named_property(name)?;
        if constructor.get_type()? == ValueType::Function && object.instanceof(constructor)? {
            return Ok(Some(name));
        }
    }
    Ok(None)
}

/// Reads JavaScript values as JSON, collecting the problems of the values it meets (each value
/// that cannot be JSON is named and read as `null`), so that a call reports them all at once.
#[derive(Default)]
pub(crate) struct Reader {
    problems: Vec<Problem>,
}

impl Reader {
    /// Notes a problem at `field`; past [`MAX_PROBLEMS`] they are not worth more work.
    pub(crate) fn problem(&mut self, field: impl Into<String>, rule: impl Into<String>) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(Problem::new(field, rule));
        }
    }

    /// The problems noted so far.
    pub(crate) fn into_problems(self) -> Vec<Problem> {
        self.problems
    }

    /// Fails with every problem noted, if there is one.
    pub(crate) fn finish(self) -> Outcome<()> {
        if self.problems.is_empty() {
            Ok(())
        } else {
            Err(Failure::Core(Error::Validation {
                problems: self.problems,
            }))
        }
    }

    /// A JavaScript string (of type string, already checked) as Rust text, or `None` after
    /// noting why it is not text.
    pub(crate) fn text(&mut self, value: &Unknown<'_>, field: &str) -> Outcome<Option<String>> {
        match text(value, || field.to_owned(), SURROGATE_RULE) {
            Ok(text) => Ok(Some(text)),
            Err(Failure::Core(err)) => {
                self.problems.extend(err.problems().iter().cloned());
                Ok(None)
            }
            Err(other) => Err(other),
        }
    }

    /// The own enumerable string keys of `object` whose values are not `undefined`, as text,
    /// with their values; a key that is not text is noted against `path`, the object's name.
    pub(crate) fn entries<'env>(
        &mut self,
        object: &Object<'env>,
        path: &str,
    ) -> Outcome<Vec<(String, Unknown<'env>)>> {
        let keys = object.get_all_property_names(
            KeyCollectionMode::OwnOnly,
            KeyFilter::Enumerable,
            KeyConversion::NumbersToStrings,
        )?;
        let len = keys.get_array_length()?;
        let mut entries = Vec::with_capacity(len.min(256) as usize);
        for i in 0..len {
            let key: Unknown<'_> = keys.get_element(i)?;
            if key.get_type()? != ValueType::String {
                continue; // a symbol key, which JSON leaves out
            }
            // Looked up by the key value itself: no C string, no re-internalising.
            let item: Unknown<'env> = object.get_property_unchecked(key)?;
            if item.get_type()? == ValueType::Undefined {
                continue;
            }
            // A key is named by the object holding it: the key itself is not text.
            match text(&key, || path.to_owned(), SURROGATE_KEY_RULE) {
                Ok(key) => entries.push((key, item)),
                Err(Failure::Core(err)) => self.problems.extend(err.problems().iter().cloned()),
                Err(other) => return Err(other),
            }
        }
        Ok(entries)
    }

    /// The own enumerable properties of `object` found at `path`, `depth` levels down, as a
    /// JSON object (as `JSON.stringify` sees them: a getter of a class's prototype is not).
    fn fields(&mut self, object: &Object<'_>, path: &mut String, depth: usize) -> Outcome<Value> {
        let owner = if path.is_empty() {
            "options".to_owned()
        } else {
            path.clone()
        };
        let entries = self.entries(object, &owner)?;
        if entries.is_empty()
            && let Some(name) = collection(object)?
        {
            // JSON.stringify writes it as `{}`: what it holds would be lost without a word.
            self.problem(owner, format!("must be JSON, got a {name}"));
            return Ok(Value::Null);
        }
        let mut map = Map::new();
        let base = path.len();
        for (key, item) in entries {
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(&key);
            let v = self.value(&item, path, depth + 1)?;
            path.truncate(base);
            map.insert(key, v);
        }
        Ok(Value::Object(map))
    }

    /// Reads `value` found at `path` (which names it in problems) `depth` levels down.
    pub(crate) fn value(
        &mut self,
        value: &Unknown<'_>,
        path: &mut String,
        depth: usize,
    ) -> Outcome<Value> {
        if depth > MAX_DEPTH {
            // A cyclic value would make a very long path: name where it starts. Reading stops
            // here: a cyclic value reached twice would otherwise be read again and again.
            let start: String = path.chars().take(64).collect();
            let at = if start.len() < path.len() {
                format!("{start}…")
            } else {
                start
            };
            self.problem(
                at,
                format!("nested deeper than {MAX_DEPTH} levels (or cyclic)"),
            );
            return Err(Failure::Core(Error::Validation {
                problems: std::mem::take(&mut self.problems),
            }));
        }
        Ok(match value.get_type()? {
            ValueType::Undefined | ValueType::Null => Value::Null,
            ValueType::Boolean => Value::Bool(value.coerce_to_bool()?),
            ValueType::Number => {
                let n = value.coerce_to_number()?.get_double()?;
                if !n.is_finite() {
                    self.problem(path.clone(), "must be a finite number");
                    Value::Null
                } else if n.fract() == 0.0 && n.abs() <= MAX_SAFE_INTEGER {
                    // Integers stay integers, so that integer arguments accept them.
                    Value::Number(Number::from(n as i64))
                } else {
                    Number::from_f64(n)
                        .map(Value::Number)
                        .unwrap_or(Value::Null)
                }
            }
            ValueType::String => self.text(value, path)?.map_or(Value::Null, Value::String),
            ValueType::Object if value.is_date()? => {
                let millis = value.coerce_to_number()?.get_double()?;
                match (millis.is_finite())
                    .then(|| DateTime::<Utc>::from_timestamp_millis(millis as i64))
                    .flatten()
                {
                    Some(at) => Value::String(handoff_core::clock::to_text(&at)),
                    None => {
                        self.problem(path.clone(), "is an invalid Date");
                        Value::Null
                    }
                }
            }
            ValueType::Object if value.is_array()? => {
                let array = value.coerce_to_object()?;
                let len = array.get_array_length()?;
                let mut items = Vec::with_capacity(len.min(4096) as usize);
                let base = path.len();
                for i in 0..len {
                    let item: Unknown<'_> = array.get_element(i)?;
                    let _ = write!(path, "[{i}]");
                    items.push(self.value(&item, path, depth + 1)?);
                    path.truncate(base);
                }
                Value::Array(items)
            }
            ValueType::Object => {
                let object = value.coerce_to_object()?;
                // An object with a `toJSON` method (a class instance of an SDK, a LangChain
                // message) is read as what it returns, as `JSON.stringify` reads it: that
                // value's own `toJSON` is not called again.
                let to_json: Either<Function<'_, (), Unknown<'_>>, Unknown<'_>> =
                    object.get_named_property("toJSON")?;
                if let Either::A(to_json) = to_json {
                    let data = to_json.apply(object, ())?;
                    if data.get_type()? == ValueType::Object
                        && !data.is_array()?
                        && !data.is_date()?
                    {
                        self.fields(&data.coerce_to_object()?, path, depth)?
                    } else {
                        self.value(&data, path, depth + 1)?
                    }
                } else {
                    self.fields(&object, path, depth)?
                }
            }
            other => {
                self.problem(
                    path.clone(),
                    format!("must be JSON, got {}", type_name(other)),
                );
                Value::Null
            }
        })
    }
}
