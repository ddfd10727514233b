//! How a Python verifier, judge or extractor is called by the curation operations (whose
//! results are generated records, `handoff_core._records`).

use handoff_core as core;
use pyo3::prelude::*;
use serde_json::Value;

use crate::convert::{ToJson, json_to_py};

/// Calls a verifier's or a judge's `callable` with `argument` (JSON, given as a `dict`) and
/// reads its answer as JSON. An exception is kept in `raised` (to be raised again as it was,
/// where the call must fail) and reported to the core as `field`'s failure.
pub(crate) fn call_json(
    callable: &Py<PyAny>,
    argument: &Value,
    field: &str,
    max_depth: usize,
    raised: &mut Option<PyErr>,
) -> core::Result<Value> {
    Python::attach(|py| {
        let answered = json_to_py(py, argument).and_then(|arg| callable.bind(py).call1((arg,)));
        let answer = match answered {
            Ok(answer) => answer,
            Err(err) => {
                let shown = err.to_string();
                *raised = Some(err);
                return Err(core::Error::invalid(field, format!("raised {shown}")));
            }
        };
        let mut convert = ToJson::untyped(max_depth);
        let json = convert.json(field, &answer);
        match convert.into_problems().into_iter().next() {
            None => Ok(json),
            Some(problem) => Err(core::Error::invalid(field, problem.rule)),
        }
    })
}

/// What a verifier is called as `verified_by`: its `__name__`, else its class's.
pub(crate) fn callable_name(callable: &Bound<'_, PyAny>) -> String {
    callable
        .getattr("__name__")
        .or_else(|_| callable.get_type().getattr("__name__"))
        .and_then(|name| name.extract::<String>())
        .unwrap_or_else(|_| "verifier".to_owned())
}
