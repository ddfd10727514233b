//! `handoff_core.AgentRegistry`, `Agent` and `HandoffIntent`: `transfer_to_<agent>` tools for
//! the major LLM APIs and the detector that reads a provider's response, from the core's
//! `tools` module.

use std::sync::RwLock;

use handoff_core as core;
use handoff_core::ops;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use serde_json::Value;

use crate::chain::ChainPolicy;
use crate::convert::{Args, json_to_py, object_to_py, opt_repr, py_repr, to_py};
use crate::errors::Result;
use crate::ops::{given, read};

/// A registered agent: its name, what it is good at, and who it may hand off to (`None`: every
/// other agent).
#[pyclass(module = "handoff_core", name = "Agent", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct Agent {
    inner: core::tools::Agent,
}

#[pymethods]
impl Agent {
    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }
    #[getter]
    fn description(&self) -> &str {
        &self.inner.description
    }
    #[getter]
    fn collaborators(&self) -> Option<Vec<String>> {
        self.inner.collaborators.clone()
    }

    /// `{"name", "description", "collaborators"}`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        Ok(to_py(py, &self.inner)?.cast_into::<PyDict>()?)
    }

    fn __repr__(&self) -> String {
        let collaborators = match &self.inner.collaborators {
            Some(names) => format!(
                "[{}]",
                names
                    .iter()
                    .map(|n| py_repr(n))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => "None".to_owned(),
        };
        format!(
            "Agent(name={}, description={}, collaborators={collaborators})",
            py_repr(&self.inner.name),
            py_repr(&self.inner.description),
        )
    }
}

/// A handoff an LLM asked for through a `transfer_to_<agent>` tool call: the `target` agent,
/// the call's `arguments` as sent (`reason`, `summary`, `pending`, `instructions`), the
/// provider's `call_id` (to answer the call) and the `tool` name the model called.
#[pyclass(module = "handoff_core", name = "HandoffIntent", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct HandoffIntent {
    inner: core::HandoffIntent,
}

#[pymethods]
impl HandoffIntent {
    /// The agent to hand off to.
    #[getter]
    fn target(&self) -> &str {
        &self.inner.target
    }
    /// The tool call's arguments, as the model sent them (a fresh `dict` on each access).
    #[getter]
    fn arguments<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        object_to_py(py, &self.inner.arguments)
    }
    /// The provider's id for the call, or `None` when the response had none.
    #[getter]
    fn call_id(&self) -> Option<&str> {
        self.inner.call_id.as_deref()
    }
    /// The tool name the model called (`transfer_to_<agent>`, sanitised).
    #[getter]
    fn tool(&self) -> &str {
        &self.inner.tool
    }

    /// `{"target", "arguments", "call_id", "tool"}`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        Ok(to_py(py, &self.inner)?.cast_into::<PyDict>()?)
    }

    /// The keyword arguments of `Store.create` for the handoff this intent asks for, so that
    /// `store.create(**intent.create_kwargs(task_id=..., goal=..., from_agent=...))` records
    /// it: `to_agent` is the target, the model's `summary` the progress, `pending` the pending
    /// steps, `instructions` the instructions; its `reason` and the call id go in `metadata`.
    /// Only arguments that differ from `create`'s defaults are present; the dict is yours to
    /// extend (`kind=`, `context_pct=`, ...) before creating.
    #[pyo3(signature = (*, task_id, goal, from_agent))]
    fn create_kwargs<'py>(
        &self,
        py: Python<'py>,
        task_id: &Bound<'py, PyAny>,
        goal: &Bound<'py, PyAny>,
        from_agent: &Bound<'py, PyAny>,
    ) -> Result<Bound<'py, PyDict>> {
        let mut args = Args::new();
        let task_id = args.text("task_id", task_id);
        let goal = args.text("goal", goal);
        let from_agent = args.text("from_agent", from_agent);
        args.finish()?;
        let new = self.inner.to_new_handoff(&task_id, &from_agent, &goal);
        Ok(create_kwargs(py, &new)?)
    }

    fn __repr__(&self) -> String {
        format!(
            "HandoffIntent(target={}, tool={}, call_id={})",
            py_repr(&self.inner.target),
            py_repr(&self.inner.tool),
            opt_repr(self.inner.call_id.as_deref()),
        )
    }
}

/// `new` as `Store.create` keyword arguments: the record's JSON fields under `create`'s
/// argument names, keeping `task_id` and `goal` and whatever differs from the defaults (which
/// stay the core's to decide).
fn create_kwargs<'py>(py: Python<'py>, new: &core::NewHandoff) -> PyResult<Bound<'py, PyDict>> {
    let json = |new: &core::NewHandoff| match serde_json::to_value(new) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(pyo3::exceptions::PyValueError::new_err(
            "a record is a JSON object",
        )),
        Err(e) => Err(pyo3::exceptions::PyValueError::new_err(e.to_string())),
    };
    let fields = json(new)?;
    let defaults = json(&core::NewHandoff::default())?;
    let kwargs = PyDict::new(py);
    for (field, value) in &fields {
        if field != "task_id" && field != "goal" && defaults.get(field) == Some(value) {
            continue;
        }
        let name = ops::argument_name(field);
        if field == "expires_at" {
            // `create` takes a datetime, not the JSON form's string.
            kwargs.set_item(name, new.expires_at)?;
        } else {
            kwargs.set_item(name, json_to_py(py, value)?)?;
        }
    }
    Ok(kwargs)
}

/// The agents of a swarm and who may hand off to whom; generates their `transfer_to_<agent>`
/// tools and finds the handoff in a provider's response.
#[pyclass(module = "handoff_core", name = "AgentRegistry", frozen)]
pub struct AgentRegistry {
    inner: RwLock<core::AgentRegistry>,
}

impl AgentRegistry {
    fn read<T>(&self, f: impl FnOnce(&core::AgentRegistry) -> T) -> T {
        let guard = self
            .inner
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&guard)
    }
}

/// The `response` argument of `detect` as the core's `DetectArgs` read it. JSON text stays
/// text (the core checks its size and nesting before parsing it), UTF-8 `bytes` become text,
/// and an SDK object (pydantic: the OpenAI and Anthropic SDKs' responses, LangChain's messages)
/// becomes its JSON text, the raw shape the detector reads. Anything else goes on as it is.
fn response_arg<'py>(obj: &Bound<'py, PyAny>) -> Result<Bound<'py, PyAny>> {
    if let Ok(bytes) = obj.cast::<PyBytes>() {
        return match std::str::from_utf8(bytes.as_bytes()) {
            Ok(text) => Ok(PyString::new(obj.py(), text).into_any()),
            Err(_) => Err(core::Error::invalid("response", "must be UTF-8 text").into()),
        };
    }
    let is_json = |obj: &Bound<'py, PyAny>| {
        obj.is_instance_of::<PyString>()
            || obj.is_instance_of::<PyDict>()
            || obj.is_instance_of::<PyList>()
            || obj.is_instance_of::<PyTuple>()
    };
    if !is_json(obj) && obj.hasattr("model_dump_json")? {
        return Ok(obj.call_method0("model_dump_json")?);
    }
    // A transcript of SDK objects (LangChain messages, the Agents SDK's items): each as its
    // JSON form, so the core reads the list message by message.
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let items: Vec<Bound<'py, PyAny>> = obj.try_iter()?.collect::<PyResult<_>>()?;
        if items
            .iter()
            .any(|item| !is_json(item) && item.hasattr("model_dump").unwrap_or(false))
        {
            let kwargs = PyDict::new(obj.py());
            kwargs.set_item("mode", "json")?;
            let converted = PyList::empty(obj.py());
            for item in items {
                if !is_json(&item) && item.hasattr("model_dump")? {
                    converted.append(item.call_method("model_dump", (), Some(&kwargs))?)?;
                } else {
                    converted.append(item)?;
                }
            }
            return Ok(converted.into_any());
        }
    }
    Ok(obj.clone())
}

#[pymethods]
impl AgentRegistry {
    /// An empty registry.
    #[new]
    fn py_new() -> AgentRegistry {
        AgentRegistry {
            inner: RwLock::new(core::AgentRegistry::new()),
        }
    }

    /// Registers (or replaces) an agent. `collaborators` names who it may hand off to; `None`
    /// is every other agent. Returns the registry, for chaining.
    #[pyo3(signature = (name, description, collaborators=None))]
    fn add<'py>(
        slf: &Bound<'py, Self>,
        name: Option<&Bound<'py, PyAny>>,
        description: Option<&Bound<'py, PyAny>>,
        collaborators: Option<&Bound<'py, PyAny>>,
    ) -> Result<Bound<'py, Self>> {
        let agent: ops::AgentArgs = read("add", given!(None; name, description, collaborators))?;
        let mut guard = slf
            .get()
            .inner
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        agent.add_to(&mut guard)?;
        Ok(slf.clone())
    }

    /// The agents described by the `*.md` files in `path` (name, description and a
    /// `## Collaborations` section each; see the README), in file-name order.
    #[staticmethod]
    fn from_markdown_dir(py: Python<'_>, path: std::path::PathBuf) -> Result<AgentRegistry> {
        let registry = py.detach(|| core::AgentRegistry::from_markdown_dir(&path))?;
        Ok(AgentRegistry {
            inner: RwLock::new(registry),
        })
    }

    /// The registered agents, in the order they were added.
    #[getter]
    fn agents(&self) -> Vec<Agent> {
        self.read(|r| {
            r.agents()
                .iter()
                .cloned()
                .map(|inner| Agent { inner })
                .collect()
        })
    }

    fn __len__(&self) -> usize {
        self.read(|r| r.agents().len())
    }

    fn __contains__(&self, name: &Bound<'_, PyAny>) -> bool {
        let Ok(name) = name.cast::<PyString>() else {
            return false;
        };
        let Ok(name) = name.to_cow() else {
            return false;
        };
        self.read(|r| r.agents().iter().any(|a| a.name == name))
    }

    /// The `transfer_to_<agent>` tools `agent` may call, exactly as `provider` expects them:
    /// `"openai_chat"`, `"openai_responses"`, `"anthropic"` or `"mcp"`.
    #[pyo3(signature = (agent, provider))]
    fn tools<'py>(
        &self,
        py: Python<'py>,
        agent: Option<&Bound<'py, PyAny>>,
        provider: Option<&Bound<'py, PyAny>>,
    ) -> Result<Bound<'py, PyList>> {
        // Python has always asked for the provider; the core defaults it.
        if provider.is_none() {
            return Err(core::Error::invalid("provider", "is required").into());
        }
        let args: ops::ToolsArgs = read("tools", given!(None; agent, provider))?;
        let tools = self.read(|r| args.tools(r))?;
        let list = PyList::empty(py);
        for tool in &tools {
            list.append(json_to_py(py, tool)?)?;
        }
        Ok(list)
    }

    /// Finds the `transfer_to_<agent>` call in a raw Chat Completions, Responses, Anthropic or
    /// LangChain response, whole or just its message, item or block: a `dict` or `list`, JSON
    /// text (`str` or `bytes`, checked for size and nesting before parsing), or an SDK object
    /// (`model_dump_json()`: OpenAI and Anthropic responses, LangChain's `AIMessage`); or a
    /// transcript, a list of messages or items (chat dicts, LangChain message objects, the
    /// Agents SDK's items), read to the agent's last turn that handed off. `None` when the
    /// model did not hand off; a `ValidationError` for a shape it cannot read.
    /// Several handoffs in one response are an error, unless `multiple="first_wins"`
    /// (`"first"` is accepted too).
    #[pyo3(signature = (response, from_agent, multiple=None))]
    fn detect(
        &self,
        py: Python<'_>,
        response: &Bound<'_, PyAny>,
        from_agent: Option<&Bound<'_, PyAny>>,
        multiple: Option<&Bound<'_, PyAny>>,
    ) -> Result<Option<HandoffIntent>> {
        let response = response_arg(response)?;
        let response = Some(&response);
        let args: ops::DetectArgs = read("detect", given!(None; response, from_agent, multiple))?;
        let found = py.detach(|| {
            self.read(|r| match &args.response {
                Value::String(text) => {
                    r.detect_json(text, &args.from_agent, args.multiple.unwrap_or_default())
                }
                _ => args.detect(r),
            })
        });
        Ok(found
            .map_err(from_agent_argument)?
            .map(|inner| HandoffIntent { inner }))
    }

    /// The chain policy the registry implies, for `hc.open(..., policy=...)`: each agent may
    /// hand off only to the agents it may call tools for. `max_handoffs` and `max_revisits`
    /// left `None` keep the core's defaults (5, 0).
    #[pyo3(signature = (max_handoffs=None, max_revisits=None))]
    fn policy(
        &self,
        max_handoffs: Option<&Bound<'_, PyAny>>,
        max_revisits: Option<&Bound<'_, PyAny>>,
    ) -> Result<ChainPolicy> {
        let mut args = Args::new();
        let mut base = core::ChainPolicy::default();
        if let Some(max) = args.opt_int("max_handoffs", max_handoffs, "a whole number at least 0") {
            base.max_handoffs = max;
        }
        if let Some(max) = args.opt_int("max_revisits", max_revisits, "a whole number at least 0") {
            base.max_revisits = max;
        }
        args.finish()?;
        Ok(ChainPolicy {
            inner: self.read(|r| r.policy(base)),
        })
    }

    fn __repr__(&self) -> String {
        let names = self.read(|r| {
            r.agents()
                .iter()
                .map(|a| py_repr(&a.name))
                .collect::<Vec<_>>()
                .join(", ")
        });
        format!("AgentRegistry(agents=[{names}])")
    }
}

/// The core names the sender `agent` (its registry's word); `detect`'s argument is `from_agent`.
fn from_agent_argument(err: core::Error) -> core::Error {
    let core::Error::Validation { mut problems } = err else {
        return err;
    };
    for problem in &mut problems {
        if problem.field == "agent" {
            problem.field = "from_agent".to_owned();
        }
    }
    core::Error::Validation { problems }
}
