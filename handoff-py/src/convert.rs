//! Conversions between Python values and the core's types, shared by every binding file.
//!
//! Arguments arrive as plain Python objects and are checked here, so that a wrong type becomes
//! a `ValidationError` naming the argument (as the core names broken rules) instead of a bare
//! `TypeError`, and so that every problem of one call is reported at once. Rules on *values*
//! (empty goal, bad agent names, ranges) stay in the core.

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, FixedOffset, Utc};
use handoff_core::{Error, Problem};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDateTime, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// Collects the problems found while converting one call's arguments.
#[derive(Default)]
pub(crate) struct Args {
    problems: Vec<Problem>,
    /// Put before every field name reported (`records[3].` for an item of a batch).
    prefix: String,
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
pub(crate) fn type_name(obj: &Bound<'_, PyAny>) -> String {
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

    /// Reports `field` (under the current prefix) as breaking `rule`.
    pub(crate) fn problem(&mut self, field: impl fmt::Display, rule: impl Into<String>) {
        self.problems
            .push(Problem::new(format!("{}{field}", self.prefix), rule));
    }

    /// Names the fields reported from now on as parts of `prefix` (e.g. `records[3].`).
    pub(crate) fn set_prefix(&mut self, prefix: String) {
        self.prefix = prefix;
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

    /// Like [`Args::finish`], but when there are problems, also reports those `more` finds
    /// (the core's own rules, checked on what could be converted) for fields not reported yet,
    /// so that one call names every problem at once.
    pub(crate) fn finish_with(mut self, more: impl FnOnce() -> Vec<Problem>) -> Result<(), Error> {
        if self.problems.is_empty() {
            return Ok(());
        }
        let root = |field: &str| {
            field
                .split(['[', '.'])
                .next()
                .unwrap_or_default()
                .to_owned()
        };
        let reported: Vec<String> = self.problems.iter().map(|p| root(&p.field)).collect();
        for problem in more() {
            if !reported.contains(&root(&problem.field)) {
                self.problems.push(problem);
            }
        }
        self.finish()
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

    /// A JSON object from a `dict`; absent and `None` are empty.
    pub(crate) fn json_object(
        &mut self,
        field: &str,
        obj: Option<&Bound<'_, PyAny>>,
        max_depth: usize,
    ) -> Map<String, Value> {
        let Some(obj) = given(obj) else {
            return Map::new();
        };
        if !obj.is_instance_of::<PyDict>() {
            self.problem(field, format!("must be a dict, not {}", type_name(obj)));
            return Map::new();
        }
        match self.json(Field::Name(field), obj, 0, max_depth) {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    /// Any JSON value given by the caller as `field`.
    pub(crate) fn json_value(
        &mut self,
        field: &str,
        obj: &Bound<'_, PyAny>,
        max_depth: usize,
    ) -> Value {
        self.json(Field::Name(field), obj, 0, max_depth)
    }

    /// Any JSON value. Nesting deeper than `max_depth` (which also catches a container that
    /// holds itself) is reported, not followed, so that no input can exhaust the stack.
    fn json(
        &mut self,
        field: Field<'_>,
        obj: &Bound<'_, PyAny>,
        depth: usize,
        max_depth: usize,
    ) -> Value {
        let nested = |args: &mut Args| {
            if depth >= max_depth {
                args.problem(
                    field,
                    format!(
                        "must nest at most {max_depth} levels, nests {} or more",
                        depth + 1
                    ),
                );
                false
            } else {
                true
            }
        };
        if obj.is_none() {
            Value::Null
        } else if let Ok(b) = obj.cast::<PyBool>() {
            Value::Bool(b.is_true())
        } else if obj.is_instance_of::<PyInt>() {
            if let Ok(n) = obj.extract::<i64>() {
                Value::from(n)
            } else if let Ok(n) = obj.extract::<u64>() {
                Value::from(n)
            } else {
                self.problem(field, "integers must fit in 64 bits");
                Value::Null
            }
        } else if obj.is_instance_of::<PyFloat>() {
            let n = obj.extract::<f64>().ok().and_then(Number::from_f64);
            n.map(Value::Number).unwrap_or_else(|| {
                self.problem(field, "numbers must be finite (no NaN or infinity in JSON)");
                Value::Null
            })
        } else if obj.is_instance_of::<PyString>() {
            Value::String(self.try_text(field, obj).unwrap_or_default())
        } else if let Ok(dict) = obj.cast::<PyDict>() {
            if !nested(self) {
                return Value::Null;
            }
            let mut map = Map::with_capacity(dict.len());
            for (key, value) in dict.iter() {
                let Ok(key) = key.cast::<PyString>() else {
                    self.problem(field, format!("keys must be str, not {}", type_name(&key)));
                    continue;
                };
                // Never `to_string_lossy`: two keys with different lone surrogates would
                // collapse into one U+FFFD key, and a value would be lost without a word.
                let Ok(key) = key.to_cow().map(std::borrow::Cow::into_owned) else {
                    self.problem(
                        field,
                        format!(
                            "keys must be valid Unicode text (no lone surrogates), not {}",
                            key.repr()
                                .map_or_else(|_| "?".to_owned(), |r| r.to_string())
                        ),
                    );
                    continue;
                };
                let value = self.json(Field::Key(&field, &key), &value, depth + 1, max_depth);
                map.insert(key, value);
            }
            Value::Object(map)
        } else if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
            if !nested(self) {
                return Value::Null;
            }
            let items: Vec<Bound<'_, PyAny>> = match obj.cast::<PyList>() {
                Ok(list) => list.iter().collect(),
                Err(_) => obj
                    .cast::<PyTuple>()
                    .map(|t| t.iter().collect())
                    .unwrap_or_default(),
            };
            let values = items
                .iter()
                .enumerate()
                .map(|(i, item)| self.json(Field::Item(&field, i), item, depth + 1, max_depth))
                .collect();
            Value::Array(values)
        } else {
            self.problem(
                field,
                format!(
                    "must hold only JSON values (dict, list, str, int, float, bool, None), not {}",
                    type_name(obj)
                ),
            );
            Value::Null
        }
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
