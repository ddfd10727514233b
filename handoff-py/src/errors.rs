//! The core's [`Error`] as Python exceptions, mapped in exactly one function, [`to_py`].
//!
//! The exception classes are plain Python classes in `handoff_core/_errors.py` (so that they
//! carry typed attributes, docstrings and pickle across processes); this file only builds them.

use handoff_core::{Error, Problem};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyTuple, PyType};

use crate::convert::json_to_py;
use crate::redact::shown;

/// What a binding call fails with: a core error (mapped by [`to_py`]) or a Python one.
pub(crate) enum Failure {
    Core(Error),
    Py(PyErr),
}

impl From<Error> for Failure {
    fn from(err: Error) -> Self {
        Failure::Core(err)
    }
}

impl From<PyErr> for Failure {
    fn from(err: PyErr) -> Self {
        Failure::Py(err)
    }
}

impl From<Failure> for PyErr {
    fn from(failure: Failure) -> Self {
        match failure {
            Failure::Py(err) => err,
            // Attaching is free when the caller holds the GIL, which every pymethod does.
            Failure::Core(err) => Python::attach(|py| to_py(py, err)),
        }
    }
}

/// The result of a binding call.
pub(crate) type Result<T, E = Failure> = std::result::Result<T, E>;

/// The Python class for one error kind, imported once.
fn class<'py>(py: Python<'py>, name: &'static str) -> PyResult<&'py Bound<'py, PyType>> {
    macro_rules! cached {
        ($($name:literal),+) => {
            match name {
                $($name => {
                    static CELL: PyOnceLock<Py<PyType>> = PyOnceLock::new();
                    CELL.import(py, "handoff_core._errors", $name)
                })+
                _ => {
                    static BASE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
                    BASE.import(py, "handoff_core._errors", "HandoffError")
                }
            }
        };
    }
    cached!(
        "NotFound",
        "AlreadyClaimed",
        "LeaseLost",
        "InvalidTransition",
        "ValidationError",
        "Conflict",
        "ChainViolation",
        "Busy",
        "StorageError"
    )
}

/// Maps a core error to its Python exception, carrying the error's fields as attributes and,
/// for storage errors, the backend's error as `__cause__`. The only place errors are mapped.
///
/// An error may quote its input (a value a rule refused, a path, an agent's name), and an
/// exception ends up in logs and tracebacks: its message and every text it carries are
/// redacted, as the CLI shows its errors. A validation error's fields and rules are redacted
/// one by one, as the CLI does: `field: rule` read whole could look like an assignment.
pub(crate) fn to_py(py: Python<'_>, err: Error) -> PyErr {
    let err = match err {
        Error::Validation { problems } => Error::Validation {
            problems: problems
                .iter()
                .map(|p| Problem::new(shown(&p.field), shown(&p.rule)))
                .collect(),
        },
        other => other,
    };
    build(py, &err).unwrap_or_else(|failed| failed)
}

fn build(py: Python<'_>, err: &Error) -> PyResult<PyErr> {
    let fields = PyDict::new(py);
    let mut cause = None;
    let name = match err {
        Error::NotFound { id, .. } => {
            fields.set_item("id", shown(id))?;
            "NotFound"
        }
        Error::AlreadyClaimed { id, holder } => {
            fields.set_item("id", shown(id))?;
            fields.set_item("holder", shown(holder))?;
            "AlreadyClaimed"
        }
        Error::LeaseLost { id, token, reason } => {
            fields.set_item("id", shown(id))?;
            fields.set_item("token", token)?;
            fields.set_item("reason", shown(reason))?;
            "LeaseLost"
        }
        Error::InvalidTransition {
            id,
            status,
            event,
            reason,
        } => {
            fields.set_item("id", shown(id))?;
            fields.set_item("status", status.as_str())?;
            fields.set_item("event", *event)?;
            fields.set_item("reason", shown(reason))?;
            "InvalidTransition"
        }
        Error::Validation { problems } => {
            let list = PyList::empty(py);
            for problem in problems {
                list.append(PyTuple::new(py, [&problem.field, &problem.rule])?)?;
            }
            fields.set_item("problems", list)?;
            "ValidationError"
        }
        Error::Conflict { id } => {
            fields.set_item("id", shown(id))?;
            "Conflict"
        }
        Error::VersionConflict {
            id,
            expected,
            actual,
        } => {
            fields.set_item("id", shown(id))?;
            fields.set_item("expected_version", expected)?;
            fields.set_item("actual_version", actual)?;
            "Conflict"
        }
        Error::ChainViolation(violation) => {
            fields.set_item("task_id", shown(&violation.task_id))?;
            let path: Vec<String> = violation.path.iter().map(|agent| shown(agent)).collect();
            fields.set_item("path", path)?;
            // The rule travels as its JSON form so that rules the core adds later arrive too.
            let mut rule = serde_json::to_value(&violation.rule).unwrap_or_default();
            crate::redact::redact_json(&mut rule);
            let get = |key: &str| rule.get(key).cloned().unwrap_or_default();
            fields.set_item("rule", json_to_py(py, &get("rule"))?)?;
            fields.set_item("limit", json_to_py(py, &get("limit"))?)?;
            fields.set_item("agent", json_to_py(py, &get("agent"))?)?;
            match (get("from").as_str(), get("to").as_str()) {
                (Some(from), Some(to)) => fields.set_item("pair", (from, to))?,
                _ => fields.set_item("pair", py.None())?,
            }
            "ChainViolation"
        }
        Error::Busy { message } => {
            fields.set_item("detail", shown(message))?;
            "Busy"
        }
        Error::Storage { message, source } => {
            fields.set_item("detail", shown(message))?;
            cause = source.as_ref().map(|source| shown(&source.to_string()));
            "StorageError"
        }
        // The core's error is non-exhaustive: a kind added later arrives as the base class,
        // with its code, until it gets a class of its own.
        _ => "HandoffError",
    };
    if name == "HandoffError" {
        fields.set_item("code", err.kind().code())?;
    }
    // A validation error's problems were redacted one by one (see `to_py`).
    let message = match err {
        Error::Validation { .. } => err.to_string(),
        _ => shown(&err.to_string()),
    };
    let exception = class(py, name)?.call((message,), Some(&fields))?;
    let pyerr = PyErr::from_value(exception);
    if let Some(cause) = cause {
        pyerr.set_cause(py, Some(pyo3::exceptions::PyOSError::new_err(cause)));
    }
    Ok(pyerr)
}
