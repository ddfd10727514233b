//! `handoff_core.redact`, `Redactor` and `Redaction`: secret redaction.
//!
//! The core reports byte offsets into the UTF-8 text; Python indexes `str` by code point, so
//! offsets are converted here, and `text[r.start:r.end]` is the secret in Python too.

use handoff_core as core;
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::convert::{Args, py_repr};
use crate::errors::Result;

/// One secret found and replaced: the rule that found it and where it was in the input
/// (`str` indices, so that `text[start:end]` is the secret).
#[pyclass(module = "handoff_core", name = "Redaction", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct Redaction {
    rule: String,
    start: usize,
    end: usize,
}

#[pymethods]
impl Redaction {
    #[getter]
    fn rule(&self) -> &str {
        &self.rule
    }
    #[getter]
    fn start(&self) -> usize {
        self.start
    }
    #[getter]
    fn end(&self) -> usize {
        self.end
    }

    fn __repr__(&self) -> String {
        format!(
            "Redaction(rule={}, start={}, end={})",
            py_repr(&self.rule),
            self.start,
            self.end
        )
    }
}

/// The core's findings with byte offsets turned into code-point indices of `text`.
fn to_python(text: &str, found: Vec<core::Redaction>) -> Vec<Redaction> {
    let mut offsets: Vec<usize> = found.iter().flat_map(|r| [r.start, r.end]).collect();
    offsets.sort_unstable();
    offsets.dedup();
    // One pass over the text maps every offset (each on a char boundary) to its index.
    let mut indices = Vec::with_capacity(offsets.len());
    let mut wanted = offsets.iter().peekable();
    for (index, (byte, _)) in text.char_indices().chain([(text.len(), ' ')]).enumerate() {
        while wanted.next_if(|offset| **offset <= byte).is_some() {
            indices.push(index);
        }
    }
    let index_of = |byte: usize| match offsets.binary_search(&byte) {
        Ok(i) => indices.get(i).copied().unwrap_or(byte),
        Err(_) => byte,
    };
    found
        .into_iter()
        .map(|r| Redaction {
            start: index_of(r.start),
            end: index_of(r.end),
            rule: r.rule,
        })
        .collect()
}

fn run<'py>(
    py: Python<'py>,
    redactor: &core::Redactor,
    text: &Bound<'py, PyAny>,
) -> Result<(String, Bound<'py, PyList>)> {
    let mut args = Args::new();
    let text = args.text("text", text);
    args.finish()?;
    let (clean, found) = py.detach(|| {
        let (clean, found) = redactor.redact(&text);
        (clean, to_python(&text, found))
    });
    Ok((clean, PyList::new(py, found)?))
}

/// Replaces API keys, tokens, private keys and password pairs in `text` with
/// `[REDACTED:<rule>]`; returns the clean text and what was found.
#[pyfunction]
pub fn redact<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyAny>,
) -> Result<(String, Bound<'py, PyList>)> {
    run(py, &core::Redactor::default(), text)
}

/// `text` as it may leave the library (an exception's message, an event's reason): with the
/// core's built-in redaction, as the CLI shows its errors and events.
pub(crate) fn shown(text: &str) -> String {
    let (clean, found) = core::redact(text);
    if found.is_empty() {
        text.to_owned()
    } else {
        clean
    }
}

/// Every string inside `value` [`shown`]; keys are left alone (they name, not carry).
pub(crate) fn redact_json(value: &mut serde_json::Value) {
    use serde_json::Value;
    // Iterative, so that nesting depth costs heap, not stack.
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::String(text) => *text = shown(text),
            Value::Array(items) => pending.extend(items.iter_mut()),
            Value::Object(map) => pending.extend(map.values_mut()),
            _ => {}
        }
    }
}

/// A redactor with the built-in rules and any rules you add. Build once and reuse.
#[pyclass(module = "handoff_core", name = "Redactor", frozen)]
pub struct Redactor {
    pub(crate) inner: core::Redactor,
}

#[pymethods]
impl Redactor {
    /// The built-in rules.
    #[new]
    fn py_new() -> Redactor {
        Redactor {
            inner: core::Redactor::default(),
        }
    }

    /// A new redactor with these rules plus one named `id` (`[a-z0-9-]+`) whose regular
    /// expression's first group (or whole match) is the secret; it runs only on text holding
    /// one of `keywords` (case-insensitive), or on every text when there are none.
    #[pyo3(signature = (id, pattern, keywords=None))]
    fn with_rule(
        &self,
        id: &Bound<'_, PyAny>,
        pattern: &Bound<'_, PyAny>,
        keywords: Option<&Bound<'_, PyAny>>,
    ) -> Result<Redactor> {
        let mut args = Args::new();
        let id = args.text("id", id);
        let pattern = args.text("pattern", pattern);
        let keywords = args.texts("keywords", keywords);
        args.finish()?;
        let keywords: Vec<&str> = keywords.iter().map(String::as_str).collect();
        let rule = core::redact::Rule::new(&id, &pattern, &keywords)?;
        Ok(Redactor {
            inner: self.inner.with_rule(rule)?,
        })
    }

    /// The ids of the rules, in order.
    #[getter]
    fn rule_ids(&self) -> Vec<String> {
        self.inner.rule_ids().map(str::to_owned).collect()
    }

    /// Like `handoff_core.redact`, with this redactor's rules.
    fn redact<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'py, PyAny>,
    ) -> Result<(String, Bound<'py, PyList>)> {
        run(py, &self.inner, text)
    }
}
