//! Conversions between Python values and the core's types, shared by every binding file.
//!
//! The arguments of store operations, the registry and the context builder become JSON here
//! ([`ToJson`]) and are read by the core's argument types (see `ops.rs`), so that every face
//! reports the same problems. The few calls that are no operation (constructors of policies,
//! limits, clocks) check their arguments with [`Args`]. Either way a wrong type is a
//! `ValidationError` naming the argument, never a bare `TypeError`, and one call reports every
//! problem at once.

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, FixedOffset, Utc};
use handoff_core::{Error, Problem};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyDateTime, PyDelta, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType,
};
use serde_json::{Map, Number, Value};

/// Collects the problems found while converting the arguments of a call that is not a store
/// operation (those go through [`ToJson`] and the core's argument types).
#[derive(Default)]
pub(crate) struct Args {
    problems: Vec<Problem>,
}

/// Where a value sits in an argument, rendered only when a problem is reported, so that a call
/// with good arguments allocates no names.
#[derive(Clone, Copy)]
enum Field<'a> {
    Name(&'a str),
    Item(&'a Field<'a>, usize),
    Key(&'a Field<'a>, &'a str),
}

impl fmt::Display for Field<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Field::Name(name) => f.write_str(name),
            Field::Item(parent, i) => write!(f, "{parent}[{i}]"),
            Field::Key(parent, key) => write!(f, "{parent}.{key}"),
        }
    }
}

/// The Python type name of `obj`, for messages.
fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "object".to_owned())
}

/// `obj` unless it is absent or `None`.
fn given<'a, 'py>(obj: Option<&'a Bound<'py, PyAny>>) -> Option<&'a Bound<'py, PyAny>> {
    obj.filter(|obj| !obj.is_none())
}

impl Args {
    pub(crate) fn new() -> Args {
        Args::default()
    }

    /// Reports `field` as breaking `rule`.
    pub(crate) fn problem(&mut self, field: impl fmt::Display, rule: impl Into<String>) {
        self.problems.push(Problem::new(field.to_string(), rule));
    }

    /// Records the problems of a core validation error (any other error as a problem of
    /// `field`).
    pub(crate) fn core_problems(&mut self, field: &str, err: Error) {
        match err {
            Error::Validation { problems } => self.problems.extend(problems),
            other => self.problem(field, other.to_string()),
        }
    }

    /// Fails with every problem found so far, if there is one.
    pub(crate) fn finish(self) -> Result<(), Error> {
        if self.problems.is_empty() {
            Ok(())
        } else {
            Err(Error::Validation {
                problems: self.problems,
            })
        }
    }

    /// A required `str`; `None` (with a problem recorded) if it is not one.
    fn try_text(&mut self, field: Field<'_>, obj: &Bound<'_, PyAny>) -> Option<String> {
        match obj.cast::<PyString>() {
            Ok(s) => match s.to_cow() {
                Ok(text) => Some(text.into_owned()),
                Err(_) => {
                    self.problem(field, "must be valid Unicode text (no lone surrogates)");
                    None
                }
            },
            Err(_) => {
                self.problem(field, format!("must be a str, not {}", type_name(obj)));
                None
            }
        }
    }

    /// A required `str` (empty, with a problem recorded, if it is not one).
    pub(crate) fn text(&mut self, field: &str, obj: &Bound<'_, PyAny>) -> String {
        self.try_text(Field::Name(field), obj).unwrap_or_default()
    }

    /// An optional `str`: absent and `None` are `None`.
    pub(crate) fn opt_text(
        &mut self,
        field: &str,
        obj: Option<&Bound<'_, PyAny>>,
    ) -> Option<String> {
        given(obj).and_then(|obj| self.try_text(Field::Name(field), obj))
    }

    /// A list (or tuple) of `str`; absent and `None` are empty.
    pub(crate) fn texts(&mut self, field: &str, obj: Option<&Bound<'_, PyAny>>) -> Vec<String> {
        let Some(obj) = given(obj) else {
            return Vec::new();
        };
        let items: Vec<Bound<'_, PyAny>> = if let Ok(list) = obj.cast::<PyList>() {
            list.iter().collect()
        } else if let Ok(tuple) = obj.cast::<PyTuple>() {
            tuple.iter().collect()
        } else {
            self.problem(
                field,
                format!("must be a list of str, not {}", type_name(obj)),
            );
            return Vec::new();
        };
        let base = Field::Name(field);
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                self.try_text(Field::Item(&base, i), item)
                    .unwrap_or_default()
            })
            .collect()
    }

    /// An optional whole number (not a `bool`) that fits `T`; `range` names the allowed values.
    pub(crate) fn opt_int<T: TryFrom<i128>>(
        &mut self,
        field: &str,
        obj: Option<&Bound<'_, PyAny>>,
        range: &str,
    ) -> Option<T> {
        let obj = given(obj)?;
        if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
            self.problem(field, format!("must be an int, not {}", type_name(obj)));
            return None;
        }
        match obj.extract::<i128>().ok().and_then(|n| T::try_from(n).ok()) {
            Some(n) => Some(n),
            None => {
                self.problem(field, format!("must be {range}"));
                None
            }
        }
    }

    /// An optional number of seconds (`int` or `float`, not `bool`).
    pub(crate) fn opt_seconds(
        &mut self,
        field: &str,
        obj: Option<&Bound<'_, PyAny>>,
    ) -> Option<f64> {
        let obj = given(obj)?;
        let number = (!obj.is_instance_of::<PyBool>()
            && (obj.is_instance_of::<PyInt>() || obj.is_instance_of::<PyFloat>()))
        .then(|| obj.extract::<f64>().ok())
        .flatten();
        if number.is_none() {
            self.problem(
                field,
                format!(
                    "must be a number of seconds (int or float), not {}",
                    type_name(obj)
                ),
            );
        }
        number
    }

    /// A lease length. Zero, negative and NaN become a zero duration and huge values the
    /// largest one, so that the core's own rule (more than 0, at most a year) reports them.
    pub(crate) fn opt_lease(
        &mut self,
        field: &str,
        obj: Option<&Bound<'_, PyAny>>,
    ) -> Option<Duration> {
        self.opt_seconds(field, obj).map(|secs| {
            if secs.is_nan() || secs <= 0.0 {
                Duration::ZERO
            } else {
                Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
            }
        })
    }

    /// A span of time that may be zero but not negative.
    pub(crate) fn duration(&mut self, field: &str, obj: &Bound<'_, PyAny>) -> Duration {
        if obj.is_none() {
            self.problem(
                field,
                "must be a number of seconds (int or float), not None",
            );
            return Duration::ZERO;
        }
        match self.opt_seconds(field, Some(obj)) {
            Some(secs) if secs >= 0.0 => Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX),
            Some(_) => {
                self.problem(field, "must be at least 0 seconds");
                Duration::ZERO
            }
            None => Duration::ZERO,
        }
    }

    /// An optional timezone-aware `datetime`, as UTC.
    pub(crate) fn opt_time(
        &mut self,
        field: &str,
        obj: Option<&Bound<'_, PyAny>>,
    ) -> Option<DateTime<Utc>> {
        let obj = given(obj)?;
        if !obj.is_instance_of::<PyDateTime>() {
            self.problem(field, format!("must be a datetime, not {}", type_name(obj)));
            return None;
        }
        match obj.extract::<DateTime<FixedOffset>>() {
            Ok(at) => Some(at.with_timezone(&Utc)),
            Err(_) => {
                self.problem(
                    field,
                    "must be a timezone-aware datetime (e.g. tzinfo=timezone.utc)",
                );
                None
            }
        }
    }

    /// A value parsed by the core (`Kind`, `Status`, `Reason`, ...) from its wire string.
    pub(crate) fn opt_parsed<T>(&mut self, field: &str, obj: Option<&Bound<'_, PyAny>>) -> Option<T>
    where
        T: std::str::FromStr<Err = Error>,
    {
        let text = self.opt_text(field, obj)?;
        match text.parse() {
            Ok(value) => Some(value),
            Err(err) => {
                self.core_problems(field, err);
                None
            }
        }
    }
}

/// The most levels of described structure (a list of records, a record's lists) an argument
/// may nest: the argument types nest a few, so only a hostile value reaches this.
const MAX_STRUCTURE: usize = 16;

/// No schema: any JSON value.
const ANY_JSON: &Value = &Value::Bool(true);

/// What an argument's schema asks for at one place of its value.
#[derive(Clone, Copy)]
enum Want<'s> {
    /// Any JSON value the schema does not describe (metadata, a provider's response): JSON's own
    /// types only, nested at most `max_depth` levels.
    Json,
    /// A claim reference: from Python, a `Claim` or a `ClaimRef`.
    Claim,
    /// A value of the JSON type `kind` (`string`, `integer`, `array`, ...), described by `node`.
    Typed { kind: &'s str, node: &'s Value },
}

/// Converts Python values into the JSON an operation's arguments are read from, guided by the
/// arguments' JSON schema, so that the core reads them under its own rules and words.
///
/// Python types JSON lacks become what the schema asks for: an aware `datetime` a date-time
/// string, a `timedelta` its seconds, an `Enum` its value, an `os.PathLike` its path, a `Claim`
/// its reference. A value that cannot become JSON (a lone surrogate, NaN, a set, nesting past
/// the limit, which also stops a container that holds itself) is a problem named by its path,
/// and `null` stands in for it so that the core still reports what is wrong with the rest.
pub(crate) struct ToJson<'s> {
    /// The arguments' schema, for its `$defs`.
    root: &'s Value,
    max_depth: usize,
    problems: Vec<Problem>,
}

impl<'s> ToJson<'s> {
    /// A converter for the arguments described by `schema`, refusing free-form JSON nested
    /// deeper than `max_depth`.
    pub(crate) fn new(schema: &'s Value, max_depth: usize) -> ToJson<'s> {
        ToJson {
            root: schema,
            max_depth,
            problems: Vec::new(),
        }
    }

    /// A converter for values no schema describes.
    pub(crate) fn untyped(max_depth: usize) -> ToJson<'static> {
        ToJson::new(ANY_JSON, max_depth)
    }

    /// The problems found, in the order met.
    pub(crate) fn into_problems(self) -> Vec<Problem> {
        self.problems
    }

    /// Converts the argument `name`, whose schema is `node`.
    pub(crate) fn argument(
        &mut self,
        name: &str,
        node: &'s Value,
        obj: &Bound<'_, PyAny>,
    ) -> Value {
        let want = self.want(node);
        self.convert(obj, want, Field::Name(name), 0, 0)
    }

    /// Converts a value named `name` that no schema describes.
    pub(crate) fn json(&mut self, name: &str, obj: &Bound<'_, PyAny>) -> Value {
        self.convert(obj, Want::Json, Field::Name(name), 0, 0)
    }

    fn problem(&mut self, field: Field<'_>, rule: impl Into<String>) -> Value {
        self.problems.push(Problem::new(field.to_string(), rule));
        Value::Null
    }

    /// What `node` asks for, through `$ref`s and `T | null`.
    fn want(&self, mut node: &'s Value) -> Want<'s> {
        // A few wrappers deep at most (`anyOf` of a `$ref` and `null`); a cycle ends here too.
        for _ in 0..8 {
            if let Some(reference) = node.get("$ref").and_then(Value::as_str) {
                let name = reference.trim_start_matches("#/$defs/");
                if name == "ClaimRef" {
                    return Want::Claim;
                }
                match self.root.get("$defs").and_then(|defs| defs.get(name)) {
                    Some(def) => {
                        node = def;
                        continue;
                    }
                    None => return Want::Json,
                }
            }
            if let Some(Value::Array(alternatives)) =
                node.get("anyOf").or_else(|| node.get("oneOf"))
            {
                let not_null: Vec<&Value> = alternatives
                    .iter()
                    .filter(|a| a.get("type").and_then(Value::as_str) != Some("null"))
                    .collect();
                if let [only] = not_null.as_slice() {
                    node = only;
                    continue;
                }
                let names = not_null
                    .iter()
                    .all(|a| a.get("const").is_some_and(Value::is_string));
                return if names {
                    Want::Typed {
                        kind: "string",
                        node,
                    }
                } else {
                    Want::Json
                };
            }
            let kind = match node.get("type") {
                Some(Value::String(kind)) => kind.as_str(),
                Some(Value::Array(kinds)) => kinds
                    .iter()
                    .filter_map(Value::as_str)
                    .find(|kind| *kind != "null")
                    .unwrap_or("null"),
                _ if node.get("enum").is_some() => "string",
                _ => return Want::Json,
            };
            // An object without named properties is a free-form map (metadata).
            if kind == "object" && node.get("properties").is_none() {
                return Want::Json;
            }
            return Want::Typed { kind, node };
        }
        Want::Json
    }

    /// What the member `key` of an object that `want` describes must be.
    fn member(&self, want: Want<'s>, key: &str) -> Want<'s> {
        match want {
            Want::Typed { node, .. } => node
                .get("properties")
                .and_then(|properties| properties.get(key))
                .map_or(Want::Json, |member| self.want(member)),
            _ => Want::Json,
        }
    }

    /// What the items of a list that `want` describes must be.
    fn item(&self, want: Want<'s>) -> Want<'s> {
        match want {
            Want::Typed { node, .. } => node.get("items").map_or(Want::Json, |i| self.want(i)),
            _ => Want::Json,
        }
    }

    fn convert(
        &mut self,
        obj: &Bound<'_, PyAny>,
        want: Want<'s>,
        field: Field<'_>,
        depth: usize,
        structure: usize,
    ) -> Value {
        if obj.is_none() {
            return Value::Null;
        }
        if let Want::Claim = want {
            return match crate::store::claim_reference(obj) {
                Some(reference) => reference,
                None => self.problem(
                    field,
                    "must be a Claim returned by claim() or claim_next(), or a ClaimRef",
                ),
            };
        }
        if let Ok(b) = obj.cast::<PyBool>() {
            return Value::Bool(b.is_true());
        }
        if obj.is_instance_of::<PyInt>() {
            if let Ok(n) = obj.extract::<i64>() {
                return Value::from(n);
            }
            if let Ok(n) = obj.extract::<u64>() {
                return Value::from(n);
            }
            // Past 64 bits, an argument's value goes on as a float, so that the core names the
            // rule it breaks ("must be a whole number from 0 to 100").
            if let (Want::Typed { .. }, Some(n)) =
                (want, obj.extract::<f64>().ok().and_then(Number::from_f64))
            {
                return Value::Number(n);
            }
            return self.problem(field, "integers must fit in 64 bits");
        }
        if obj.is_instance_of::<PyFloat>() {
            return match obj.extract::<f64>().ok().and_then(Number::from_f64) {
                Some(n) => Value::Number(n),
                None => self.problem(field, "numbers must be finite (no NaN or infinity in JSON)"),
            };
        }
        if let Ok(text) = obj.cast::<PyString>() {
            return match text.to_cow() {
                Ok(text) => Value::String(text.into_owned()),
                Err(_) => self.problem(field, "must be valid Unicode text (no lone surrogates)"),
            };
        }
        if let Ok(dict) = obj.cast::<PyDict>() {
            let want = match want {
                Want::Typed { kind: "object", .. } => want,
                _ => Want::Json,
            };
            let Some((depth, structure)) = self.nest(want, field, depth, structure) else {
                return Value::Null;
            };
            return self.object(dict, want, field, depth, structure);
        }
        let items: Option<Vec<Bound<'_, PyAny>>> = if let Ok(list) = obj.cast::<PyList>() {
            Some(list.iter().collect())
        } else if let Ok(tuple) = obj.cast::<PyTuple>() {
            Some(tuple.iter().collect())
        } else {
            None
        };
        if let Some(items) = items {
            let want = match want {
                Want::Typed { kind: "array", .. } => want,
                _ => Want::Json,
            };
            let Some((depth, structure)) = self.nest(want, field, depth, structure) else {
                return Value::Null;
            };
            let item = self.item(want);
            return Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, value)| {
                        self.convert(value, item, Field::Item(&field, i), depth, structure)
                    })
                    .collect(),
            );
        }
        self.not_json(obj, want, field, depth, structure)
    }

    /// The levels one more container reaches, or `None` (reported) past the limit.
    fn nest(
        &mut self,
        want: Want<'s>,
        field: Field<'_>,
        depth: usize,
        structure: usize,
    ) -> Option<(usize, usize)> {
        let (level, limit) = match want {
            Want::Typed { .. } => (structure, MAX_STRUCTURE),
            _ => (depth, self.max_depth),
        };
        if level >= limit {
            self.problem(
                field,
                format!(
                    "must nest at most {limit} levels, nests {} or more",
                    level + 1
                ),
            );
            return None;
        }
        Some(match want {
            Want::Typed { .. } => (depth, structure + 1),
            _ => (depth + 1, structure),
        })
    }

    fn object(
        &mut self,
        dict: &Bound<'_, PyDict>,
        want: Want<'s>,
        field: Field<'_>,
        depth: usize,
        structure: usize,
    ) -> Value {
        let mut map = Map::with_capacity(dict.len());
        for (key, value) in dict.iter() {
            let Ok(key) = key.cast::<PyString>() else {
                self.problem(field, format!("keys must be str, not {}", type_name(&key)));
                continue;
            };
            // Never `to_string_lossy`: two keys with different lone surrogates would collapse
            // into one U+FFFD key, and a value would be lost without a word.
            let Ok(key) = key.to_cow().map(std::borrow::Cow::into_owned) else {
                let shown = key
                    .repr()
                    .map_or_else(|_| "?".to_owned(), |r| r.to_string());
                self.problem(
                    field,
                    format!("keys must be valid Unicode text (no lone surrogates), not {shown}"),
                );
                continue;
            };
            // As for a call's own arguments, `None` for an optional member is its default.
            if value.is_none() && optional(want, &key) {
                continue;
            }
            let member = self.member(want, &key);
            let value = self.convert(&value, member, Field::Key(&field, &key), depth, structure);
            map.insert(key, value);
        }
        Value::Object(map)
    }

    /// A Python value JSON has no type for: what the schema asks for, if it can be that.
    fn not_json(
        &mut self,
        obj: &Bound<'_, PyAny>,
        want: Want<'s>,
        field: Field<'_>,
        depth: usize,
        structure: usize,
    ) -> Value {
        if let Want::Typed { kind, node } = want {
            let time = node.get("format").and_then(Value::as_str) == Some("date-time");
            if kind == "string" && time && obj.is_instance_of::<PyDateTime>() {
                return match obj.extract::<DateTime<FixedOffset>>() {
                    Ok(at) => Value::String(handoff_core::clock::to_text(&at.with_timezone(&Utc))),
                    Err(_) => self.problem(
                        field,
                        "must be a timezone-aware datetime (e.g. tzinfo=timezone.utc)",
                    ),
                };
            }
            if matches!(kind, "number" | "integer") && obj.is_instance_of::<PyDelta>() {
                let seconds = obj
                    .call_method0("total_seconds")
                    .and_then(|s| s.extract::<f64>());
                return match seconds {
                    // Whole seconds stay whole, for the arguments that count in integers.
                    Ok(s) if s.fract() == 0.0 && s.abs() < 9.0e15 => Value::from(s as i64),
                    Ok(s) => Number::from_f64(s).map_or(Value::Null, Value::Number),
                    Err(_) => self.problem(field, "must be a timedelta Python can measure"),
                };
            }
            if kind == "string" && obj.hasattr("__fspath__").unwrap_or(false) {
                let path = obj
                    .py()
                    .import("os")
                    .and_then(|os| os.call_method1("fspath", (obj,)));
                if let Ok(path) = path.and_then(|p| p.cast_into::<PyString>().map_err(PyErr::from))
                {
                    return self.convert(path.as_any(), want, field, depth, structure);
                }
            }
        }
        if structure < MAX_STRUCTURE
            && is_enum(obj)
            && let Ok(value) = obj.getattr("value")
        {
            return self.convert(&value, want, field, depth, structure + 1);
        }
        let rule = match want {
            Want::Typed { kind, node } => format!(
                "must be {}, not {}",
                python_type(kind, node),
                type_name(obj)
            ),
            _ => format!(
                "must hold only JSON values (dict, list, str, int, float, bool, None), not {}",
                type_name(obj)
            ),
        };
        self.problem(field, rule)
    }
}

/// Whether `key` is a member `want` describes and does not require.
fn optional(want: Want<'_>, key: &str) -> bool {
    let Want::Typed { node, .. } = want else {
        return false;
    };
    let described = node
        .get("properties")
        .is_some_and(|properties| properties.get(key).is_some());
    let required = match node.get("required") {
        Some(Value::Array(names)) => names.iter().any(|name| name.as_str() == Some(key)),
        _ => false,
    };
    described && !required
}

/// Whether `obj` is a member of an `enum.Enum` (a `str` enum is a `str` already).
fn is_enum(obj: &Bound<'_, PyAny>) -> bool {
    static ENUM: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    ENUM.import(obj.py(), "enum", "Enum")
        .is_ok_and(|enum_type| obj.is_instance(enum_type).unwrap_or(false))
}

/// The Python type a JSON schema type stands for, in messages.
fn python_type(kind: &str, node: &Value) -> &'static str {
    match kind {
        "string" if node.get("format").and_then(Value::as_str) == Some("date-time") => {
            "a timezone-aware datetime"
        }
        "string" => "a str",
        "integer" => "an int",
        "number" => "a number",
        "boolean" => "a bool",
        "array" => "a list",
        "object" => "a dict",
        _ => "a JSON value",
    }
}

/// A JSON value as the Python value a user expects: `dict`, `list`, `str`, `int`, `float`,
/// `bool` or `None`, with object keys in their stored order.
pub(crate) fn json_to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(json_to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => object_to_py(py, map)?.into_any(),
    })
}

/// A JSON object as a `dict`.
pub(crate) fn object_to_py<'py>(
    py: Python<'py>,
    map: &Map<String, Value>,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (key, value) in map {
        dict.set_item(key, json_to_py(py, value)?)?;
    }
    Ok(dict)
}

/// A serialisable core value as a `dict` (or other JSON-shaped Python value).
pub(crate) fn to_py<'py, T: serde::Serialize>(
    py: Python<'py>,
    value: &T,
) -> PyResult<Bound<'py, PyAny>> {
    let value = serde_json::to_value(value)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    json_to_py(py, &value)
}

/// Seconds in a duration, as Python likes them.
pub(crate) fn seconds(duration: Duration) -> f64 {
    duration.as_secs_f64()
}

/// `text` quoted as Python's `repr` of a `str` would (for the plain ids and names it is used on).
pub(crate) fn py_repr(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// [`py_repr`] of an optional `str`, `None` when absent.
pub(crate) fn opt_repr(text: Option<&str>) -> String {
    text.map_or_else(|| "None".to_owned(), py_repr)
}
