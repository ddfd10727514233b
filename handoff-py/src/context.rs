//! `handoff_core.ContextBuilder`, `Packet` and `Manifest`: the successor's context packet,
//! built by the core under a token budget; and what `Store.context_for` hands the core beside
//! its arguments (a Python `summarize` callable, a transcript of framework messages).

use std::sync::{Arc, Mutex};

use handoff_core as core;
use handoff_core::ops;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString, PyTuple};

use crate::convert::{Args, ToJson, json_to_py, to_py};
use crate::errors::Result;
use crate::ops::{given, read};
use crate::record::Handoff;
use crate::redact::Redactor;

/// The items of a list (or tuple) argument; a problem for anything else.
fn items<'py>(args: &mut Args, field: &str, obj: &Bound<'py, PyAny>) -> Vec<Bound<'py, PyAny>> {
    if let Ok(list) = obj.cast::<PyList>() {
        list.iter().collect()
    } else if let Ok(tuple) = obj.cast::<PyTuple>() {
        tuple.iter().collect()
    } else {
        args.problem(field, "must be a list");
        Vec::new()
    }
}

/// A message object's `model_dump(mode="json")` (pydantic SDK items, LangChain messages), or
/// `None` when that is no `dict`.
fn dumped<'py>(message: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyDict>>> {
    let kwargs = PyDict::new(message.py());
    kwargs.set_item("mode", "json")?;
    let dumped = message.call_method("model_dump", (), Some(&kwargs))?;
    Ok(dumped.cast_into::<PyDict>().ok())
}

/// `Store.context_for`'s `transcript` as the core reads it: each message object with
/// `model_dump()` as its `dict`, and an `at` datetime as its ISO 8601 text. Anything else goes
/// on as given, for the core to name (`transcript[3]`, `transcript[3].role`, ...).
pub(crate) fn transcript<'py>(transcript: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = transcript.py();
    let messages: Vec<Bound<'py, PyAny>> = if let Ok(list) = transcript.cast::<PyList>() {
        list.iter().collect()
    } else if let Ok(tuple) = transcript.cast::<PyTuple>() {
        tuple.iter().collect()
    } else {
        return Ok(transcript.clone());
    };
    let plain = PyList::empty(py);
    for message in messages {
        let dict = if let Ok(dict) = message.cast::<PyDict>() {
            Some(dict.copy()?)
        } else if message.hasattr("model_dump")? {
            dumped(&message)?
        } else {
            None
        };
        let Some(dict) = dict else {
            plain.append(message)?;
            continue;
        };
        if let Some(at) = dict
            .get_item("at")?
            .filter(|at| !at.is_none() && !at.is_instance_of::<PyString>())
        {
            // A datetime the conversion cannot read stays, and is named as `transcript[i].at`.
            let mut args = Args::new();
            if let Some(at) = args.opt_time("at", Some(&at)) {
                dict.set_item("at", handoff_core::clock::to_text(&at))?;
            }
        }
        plain.append(dict)?;
    }
    Ok(plain.into_any())
}

/// A Python `summarize(request) -> str` as the core's [`core::context::Summarizer`]:
/// `request` is a `dict` (`id`, `title`, `text`, `budget`, `unit`). An exception or an answer
/// that is no `str` is a failure the core answers by cutting the item instead. Only an
/// exception that is no `Exception` (`KeyboardInterrupt`, `SystemExit`) is kept, for
/// `context_for` to raise once the packet is built.
pub(crate) struct Summarizer {
    callable: Py<PyAny>,
    interrupted: Arc<Mutex<Option<PyErr>>>,
}

impl Summarizer {
    /// The summarizer calling `callable`, and where it keeps an interruption.
    pub(crate) fn new(callable: &Bound<'_, PyAny>) -> (Summarizer, Arc<Mutex<Option<PyErr>>>) {
        let interrupted = Arc::new(Mutex::new(None));
        let summarizer = Summarizer {
            callable: callable.clone().unbind(),
            interrupted: Arc::clone(&interrupted),
        };
        (summarizer, interrupted)
    }
}

impl core::context::Summarizer for Summarizer {
    fn summarize(&self, request: &core::context::SummaryRequest<'_>) -> core::Result<String> {
        let failed = |rule: String| core::Error::invalid("summarize", rule);
        Python::attach(|py| {
            let answer = to_py(py, request).and_then(|arg| self.callable.bind(py).call1((arg,)));
            let answer = match answer {
                Ok(answer) => answer,
                Err(err) => {
                    let shown = err.to_string();
                    if !err.is_instance_of::<PyException>(py) {
                        let mut kept = self
                            .interrupted
                            .lock()
                            .unwrap_or_else(|poisoned| poisoned.into_inner());
                        kept.get_or_insert(err);
                    }
                    return Err(failed(format!("raised {shown}")));
                }
            };
            match answer.cast::<PyString>() {
                Ok(text) => text
                    .to_cow()
                    .map(|text| text.into_owned())
                    .map_err(|_| failed("must return valid Unicode text".into())),
                Err(_) => Err(failed(format!(
                    "must return a str, not {}",
                    answer
                        .get_type()
                        .name()
                        .map_or_else(|_| "?".into(), |n| n.to_string())
                ))),
            }
        })
    }
}

/// Builds a successor's context packet under a token budget: mandatory sections (goal, pending
/// steps, instructions, blockers) always, the rest by priority and recency; secrets redacted
/// unless `redact=False`; a manifest of what was included, truncated, dropped and redacted.
#[pyclass(module = "handoff_core", name = "ContextBuilder", frozen)]
pub struct ContextBuilder {
    inner: Mutex<core::ContextBuilder>,
}

impl ContextBuilder {
    fn with<T>(&self, f: impl FnOnce(&mut core::ContextBuilder) -> T) -> T {
        let mut guard = self
            .inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut guard)
    }
}

#[pymethods]
impl ContextBuilder {
    #[new]
    /// `budget_tokens=None` is 2000 tokens (docs/design.md §5).
    #[pyo3(signature = (budget_tokens=None, redact=true, redactor=None))]
    fn py_new(
        py: Python<'_>,
        budget_tokens: Option<&Bound<'_, PyAny>>,
        redact: bool,
        redactor: Option<&Bound<'_, Redactor>>,
    ) -> Result<ContextBuilder> {
        let redact = PyBool::new(py, redact);
        let redact = Some(redact.as_any());
        let args: ops::ContextArgs = read("ContextBuilder", given!(None; budget_tokens, redact))?;
        let mut inner = args.builder();
        if let Some(redactor) = redactor {
            inner = inner.redactor(redactor.get().inner.clone());
        }
        Ok(ContextBuilder {
            inner: Mutex::new(inner),
        })
    }

    /// Adds a handoff record. Returns the builder, for chaining.
    fn add_handoff<'py>(slf: &Bound<'py, Self>, h: &Bound<'py, PyAny>) -> Result<Bound<'py, Self>> {
        let Ok(h) = h.cast::<Handoff>() else {
            return Err(core::Error::invalid("h", "must be a Handoff").into());
        };
        slf.get().with(|b| {
            b.add_handoff(&h.get().inner);
        });
        Ok(slf.clone())
    }

    /// Adds conversation messages in any provider's shape: OpenAI Chat Completions messages,
    /// Responses API / Agents SDK items, Anthropic messages (text, `tool_use`, `tool_result`
    /// blocks) and LangChain messages, as dicts or as objects with `model_dump()` (pydantic SDK
    /// items, LangChain messages). Each may also carry `at` (aware datetime), `id` (str) and
    /// `priority` (int). A shape the core cannot read is a `ValidationError` naming
    /// `messages[i]` and the rule; then nothing is added.
    fn add_messages<'py>(
        slf: &Bound<'py, Self>,
        messages: &Bound<'py, PyAny>,
    ) -> Result<Bound<'py, Self>> {
        let mut args = Args::new();
        let mut values = Vec::new();
        for (i, message) in items(&mut args, "messages", messages).iter().enumerate() {
            let field = format!("messages[{i}]");
            let dict = if let Ok(dict) = message.cast::<PyDict>() {
                dict.copy()?
            } else if message.hasattr("model_dump")? {
                match dumped(message)? {
                    Some(dict) => dict,
                    None => {
                        args.problem(field, "model_dump() must return a dict");
                        continue;
                    }
                }
            } else {
                args.problem(
                    field,
                    "must be a dict (or an object with model_dump(), like a LangChain message)",
                );
                continue;
            };
            // A datetime travels to the core as its ISO 8601 text.
            if let Some(at) = dict
                .get_item("at")?
                .filter(|at| !at.is_none() && !at.is_instance_of::<PyString>())
            {
                if let Some(at) = args.opt_time(&format!("{field}.at"), Some(&at)) {
                    dict.set_item("at", handoff_core::clock::to_text(&at))?;
                } else {
                    continue;
                }
            }
            let mut json = ToJson::untyped(64);
            values.push(json.json(&field, dict.as_any()));
            for problem in json.into_problems() {
                args.problem(problem.field, problem.rule);
            }
        }
        args.finish()?;
        let added = slf
            .get()
            .with(|b| b.add_message_values(&values).map(|_| ()));
        added?;
        Ok(slf.clone())
    }

    /// Adds facts (priority 70): each a str, or a dict with a `text` str.
    fn add_facts<'py>(
        slf: &Bound<'py, Self>,
        facts: &Bound<'py, PyAny>,
    ) -> Result<Bound<'py, Self>> {
        let mut args = Args::new();
        let mut texts = Vec::new();
        for (i, fact) in items(&mut args, "facts", facts).iter().enumerate() {
            let field = format!("facts[{i}]");
            if fact.is_instance_of::<PyString>() {
                texts.push(args.text(&field, fact));
            } else if let Ok(dict) = fact.cast::<PyDict>() {
                match dict.get_item("text").ok().flatten() {
                    Some(text) => texts.push(args.text(&format!("{field}.text"), &text)),
                    None => args.problem(format!("{field}.text"), "is required"),
                }
            } else {
                args.problem(field, "must be a str or a dict with a text str");
            }
        }
        args.finish()?;
        slf.get().with(|b| {
            b.add_facts(texts);
        });
        Ok(slf.clone())
    }

    /// Adds a free item with a priority (higher is kept first) and an optional time.
    #[pyo3(signature = (text, priority, at=None))]
    fn add_item<'py>(
        slf: &Bound<'py, Self>,
        text: Option<&Bound<'py, PyAny>>,
        priority: Option<&Bound<'py, PyAny>>,
        at: Option<&Bound<'py, PyAny>>,
    ) -> Result<Bound<'py, Self>> {
        let item: ops::ContextItemArgs = read("add_item", given!(None; text, priority, at))?;
        slf.get().with(|b| {
            b.add_item(item.text, item.priority, item.at);
        });
        Ok(slf.clone())
    }

    /// Builds the packet (deterministic for the same input).
    fn build(&self, py: Python<'_>) -> Packet {
        let packet = py.detach(|| self.with(|b| b.build()));
        Packet { inner: packet }
    }
}

/// A built context packet.
#[pyclass(module = "handoff_core", name = "Packet", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct Packet {
    inner: core::Packet,
}

impl Packet {
    pub(crate) fn new(inner: core::Packet) -> Packet {
        Packet { inner }
    }
}

#[pymethods]
impl Packet {
    /// The packet rendered as Markdown.
    #[getter]
    fn markdown(&self) -> String {
        self.inner.to_markdown()
    }
    /// The packet as OpenAI Chat Completions messages: `to_messages("openai_chat")`.
    #[getter]
    fn messages<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        self.inner
            .to_messages()
            .iter()
            .map(|m| json_to_py(py, m))
            .collect()
    }
    /// The packet as input for `provider` (`openai_chat`, `openai_responses`, `anthropic`),
    /// valid whatever the builder kept: tool calls go out as calls only with their results
    /// right after them (otherwise both as text), roles alternate where the provider needs it,
    /// no message is empty.
    /// `None` is `openai_chat`.
    #[pyo3(signature = (provider=None))]
    fn to_messages<'py>(
        &self,
        py: Python<'py>,
        provider: Option<&Bound<'py, PyAny>>,
    ) -> Result<Vec<Bound<'py, PyAny>>> {
        let mut args = Args::new();
        let provider = args.opt_parsed::<core::Provider>("provider", provider);
        args.finish()?;
        let provider = provider.unwrap_or(core::Provider::OpenAiChat);
        let messages = self.inner.to_messages_for(provider)?;
        Ok(messages
            .iter()
            .map(|m| json_to_py(py, m))
            .collect::<PyResult<_>>()?)
    }
    /// What the packet costs, in `unit`: tokens, or characters of its Markdown.
    #[getter]
    fn tokens(&self) -> usize {
        self.inner.tokens
    }
    /// The budget it was built for, in `unit`.
    #[getter]
    fn budget(&self) -> usize {
        self.inner.budget
    }
    /// What `budget` and `tokens` count: `"tokens"`, or `"chars"` of the Markdown.
    #[getter]
    fn unit(&self) -> &'static str {
        match self.inner.unit {
            core::context::BudgetUnit::Tokens => "tokens",
            core::context::BudgetUnit::Chars => "chars",
        }
    }
    /// The sections, in order, as dicts (`id`, `kind`, `title`, `text`, `role`, `tokens`, and
    /// `group`, the heading it is listed under with others, when it has one). `kind` is
    /// `task`, `history`, `output`, `handoff`, `fact`, `message` or `note`.
    #[getter]
    fn sections<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.sections)
    }
    /// What was included, truncated, dropped and redacted.
    #[getter]
    fn manifest(&self) -> Manifest {
        Manifest {
            inner: self.inner.manifest.clone(),
        }
    }
    /// The packet's JSON form.
    fn to_json(&self) -> String {
        self.inner.to_json()
    }

    fn __repr__(&self) -> String {
        format!(
            "Packet(tokens={}, budget={}, unit='{}', sections={})",
            self.inner.tokens,
            self.inner.budget,
            self.unit(),
            self.inner.sections.len()
        )
    }
}

/// What a packet included (ids), truncated, dropped (with ids and reasons) and redacted.
#[pyclass(module = "handoff_core", name = "Manifest", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct Manifest {
    inner: core::context::Manifest,
}

#[pymethods]
impl Manifest {
    /// Ids of the items included.
    #[getter]
    fn included(&self) -> Vec<String> {
        self.inner.included.clone()
    }
    /// `[{"id", "original_tokens", "kept_tokens"}]`.
    #[getter]
    fn truncated<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.truncated)
    }
    /// `[{"id", "original_tokens", "kept_tokens"}]` of the items a `summarize` callable
    /// compressed instead of cutting them (costs in the packet's `unit`).
    #[getter]
    fn summarized<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.summarized)
    }
    /// `[{"id", "tokens", "reason"}]`.
    #[getter]
    fn dropped<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.dropped)
    }
    /// `[{"id", "rule", "count"}]`.
    #[getter]
    fn redacted<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.redacted)
    }
    /// Every part as a `dict`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner)
    }
}
