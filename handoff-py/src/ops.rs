//! The core's operation descriptions (`handoff_core::ops`) seen from Python: one way for every
//! store operation (and the registry and context builder) to turn its Python arguments into
//! the core's argument type and run it, its result made into Python values, and the catalog
//! the Python face is generated from.
//!
//! A generated `Store` method (`handoff_core._store`) hands every argument by name to
//! `Store._call`, which finds the operation's [`runner`] in a table built from the core's list
//! of operations ([`core::ops::each`]); the runner converts the arguments with [`ToJson`],
//! reads them with the operation's argument type (the core's problems, by the core's names)
//! and runs the operation with the GIL released. Which names exist, which are required and
//! what they hold is the core's schema, and what comes back is a hand-written class for a type
//! with behaviour or the result's JSON for a generated record ([`Made`]), so an operation, an
//! argument or a result field the core adds reaches Python without a line here.

use std::any::Any;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use handoff_core as core;
use handoff_core::ops::{Arguments, Operation};
use handoff_core::{Error, Limits, Problem};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::bundles::Bundle;
use crate::chain::Chain;
use crate::context::Packet;
use crate::convert::{ToJson, json_to_py, to_py};
use crate::errors::{Failure, Result};
use crate::machine::Event;
use crate::record::Handoff;
use crate::store::Claim;
use crate::tasks::{Session, Task, TaskSummary};

/// A parameter as pyo3 hands it over: a Python value, or `None` when it is `None` or absent.
pub(crate) type Arg<'a> = Option<&'a Bound<'a, PyAny>>;

/// A method's `**kwargs` (pyo3 wants to see the `Option` around it).
pub(crate) type Kwargs<'a> = &'a Bound<'a, PyDict>;

/// A call's arguments as the caller gave them: the method's named parameters, then the others.
pub(crate) struct Given<'a> {
    /// Each named parameter under its Python name.
    pub(crate) named: Vec<(&'static str, Arg<'a>)>,
    /// The keyword arguments beyond them.
    pub(crate) kwargs: Option<Kwargs<'a>>,
}

impl<'a> Given<'a> {
    /// Every argument by name, as a generated `Store` method hands them over.
    pub(crate) fn all(arguments: Kwargs<'a>) -> Given<'a> {
        Given {
            named: Vec::new(),
            kwargs: Some(arguments),
        }
    }
}

/// The [`Given`] arguments of a method: `given!(kwargs; id, agent)` names each parameter as
/// its variable is named.
macro_rules! given {
    ($kwargs:expr; $($name:ident),* $(,)?) => {
        $crate::ops::Given {
            named: vec![$((stringify!($name), $name)),*],
            kwargs: $kwargs,
        }
    };
}
pub(crate) use given;

/// Arguments Python names differently from the core, as (operation, Python name, core name).
/// The signature (and so the stubs) shows Python's name, and for an optional argument the
/// core's by keyword too. The core does not know `records`, so Python also reads it here;
/// `id` is the core's own other name for `handoff_id` (its `x-aliases`), so that entry only
/// names the parameter.
const PYTHON_NAMES: &[(&str, &str, &str)] = &[
    ("create_many", "records", "items"),
    ("events", "id", "handoff_id"),
];

/// The property an argument given as `name` fills, with its schema: its own, the one whose
/// `x-aliases` (the core's other names for it) include `name`, or the one Python names so.
fn property<'s>(
    properties: &'s Map<String, Value>,
    operation: &str,
    name: &str,
) -> Option<(&'s String, &'s Value)> {
    if let Some(found) = properties.get_key_value(name) {
        return Some(found);
    }
    let aliased = properties.iter().find(|(_, node)| {
        node.get("x-aliases")
            .and_then(Value::as_array)
            .is_some_and(|aliases| aliases.iter().any(|a| a.as_str() == Some(name)))
    });
    if aliased.is_some() {
        return aliased;
    }
    let (_, _, core) = PYTHON_NAMES
        .iter()
        .find(|(op, python, _)| *op == operation && *python == name)?;
    properties.get_key_value(*core)
}

/// A call's arguments as JSON, with the problems met converting them.
struct Prepared {
    value: Value,
    problems: Vec<Problem>,
    spelling: Spelling,
}

/// (core name, name given) of each argument the caller gave under another name.
#[derive(Default)]
struct Spelling(Vec<(String, String)>);

impl Spelling {
    /// The field of a core problem as the caller spelled its argument.
    fn field(&self, problem: &Problem) -> String {
        let field = problem.field.as_str();
        for (core, python) in &self.0 {
            if let Some(rest) = field.strip_prefix(core.as_str())
                && (rest.is_empty() || rest.starts_with(['.', '[']))
            {
                return format!("{python}{rest}");
            }
        }
        field.to_owned()
    }

    /// `err` with its problems named as the caller spelled the arguments.
    fn error(&self, err: Error) -> Error {
        match err {
            Error::Validation { problems } => Error::Validation {
                problems: problems
                    .iter()
                    .map(|p| Problem::new(self.field(p), &p.rule))
                    .collect(),
            },
            other => other,
        }
    }
}

/// Converts `given` into the JSON object `A` reads. A name `A` does not know, one given twice,
/// or a required one missing is a `TypeError`, as for any Python function. `None` leaves an
/// optional argument out (its default) and stays `null` for a required one (a problem).
fn prepare<A: Arguments>(operation: &str, given: Given<'_>, max_depth: usize) -> Result<Prepared> {
    let schema = core::ops::arguments_schema::<A>();
    let schema = schema.as_value();
    let no_properties = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&no_properties);
    let required: Vec<&str> = match schema.get("required") {
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let mut entries: Vec<(Cow<'static, str>, Option<Bound<'_, PyAny>>)> = given
        .named
        .into_iter()
        .map(|(name, obj)| (Cow::Borrowed(name), obj.cloned()))
        .collect();
    if let Some(kwargs) = given.kwargs {
        for (key, obj) in kwargs.iter() {
            // Python makes every keyword a `str`; one with a lone surrogate is unknown anyway.
            let key = key
                .cast::<PyString>()
                .ok()
                .and_then(|k| k.to_cow().ok().map(Cow::into_owned))
                .unwrap_or_default();
            entries.push((Cow::Owned(key), Some(obj)));
        }
    }
    let refuse =
        |what: String| Failure::from(PyTypeError::new_err(format!("{operation}() {what}")));
    let mut convert = ToJson::new(schema, max_depth);
    let mut object = Map::new();
    let mut named: Vec<&str> = Vec::new();
    let mut spelling = Spelling::default();
    for (name, obj) in &entries {
        let Some((core, node)) = property(properties, operation, name) else {
            return Err(refuse(format!(
                "got an unexpected keyword argument '{name}'"
            )));
        };
        named.push(core);
        // An optional parameter left at `None` is as good as absent: its other spelling may
        // still come by keyword.
        let obj = obj.as_ref().filter(|obj| !obj.is_none());
        if obj.is_none() && !required.contains(&core.as_str()) {
            continue;
        }
        if object.contains_key(core) {
            // Named as given: its own name and another (an older one, or a seed's), or one twice.
            let earlier = spelling
                .0
                .iter()
                .find(|(known, _)| known == core)
                .map_or(core.as_str(), |(_, given)| given.as_str());
            return Err(refuse(format!(
                "got multiple values for argument '{core}' (given as '{earlier}' and '{name}')"
            )));
        }
        if core != name {
            spelling.0.push((core.clone(), name.to_string()));
        }
        let value = obj.map_or(Value::Null, |obj| convert.argument(name, node, obj));
        object.insert(core.clone(), value);
    }
    if let Some(missing) = required.iter().find(|name| !named.contains(name)) {
        return Err(refuse(format!("missing required argument: '{missing}'")));
    }
    Ok(Prepared {
        value: Value::Object(object),
        problems: convert.into_problems(),
        spelling,
    })
}

impl Prepared {
    /// Reads the arguments as `A`.
    fn read<A: Arguments>(self, limits: &Limits) -> Result<A, Error> {
        if !self.problems.is_empty() {
            return Err(self.refuse::<A>(limits));
        }
        let Prepared {
            value, spelling, ..
        } = self;
        A::read(value, limits).map_err(|err| spelling.error(err))
    }

    /// Every problem of arguments that did not convert: the conversion's first, then what the
    /// core finds wrong with the rest.
    fn refuse<A: Arguments>(self, limits: &Limits) -> Error {
        let Prepared {
            value,
            mut problems,
            spelling,
        } = self;
        if let Err(Error::Validation { problems: more }) = A::read(value, limits) {
            for problem in more {
                let field = spelling.field(&problem);
                if !problems.iter().any(|known| covers(&known.field, &field)) {
                    problems.push(Problem::new(field, problem.rule));
                }
            }
        }
        Error::Validation { problems }
    }
}

/// Whether a problem reported at `known` covers one at `field` (the same place or inside it).
fn covers(known: &str, field: &str) -> bool {
    field
        .strip_prefix(known)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

/// Reads the arguments of a call that needs no store (the registry, the context builder).
pub(crate) fn read<A: Arguments>(operation: &str, given: Given<'_>) -> Result<A> {
    let limits = Limits::default();
    let prepared = prepare::<A>(operation, given, limits.max_depth)?;
    Ok(prepared.read(&limits)?)
}

/// Reads the arguments of `O` under `store`'s limits, for a method that runs `O` itself.
pub(crate) fn arguments<O: Operation>(store: &core::Store, given: Given<'_>) -> Result<O::Args> {
    let limits = store.limits();
    Ok(prepare::<O::Args>(O::NAME, given, limits.max_depth)?.read(limits)?)
}

/// Runs the operation `O` on `store` with the arguments `given`, the GIL released while the
/// core reads them and the store works; the result as [`to_python`] makes it.
fn run<O: Operation>(py: Python<'_>, store: &core::Store, given: Given<'_>) -> Result<Py<PyAny>> {
    let limits = store.limits();
    let prepared = prepare::<O::Args>(O::NAME, given, limits.max_depth)?;
    if !prepared.problems.is_empty() {
        // Nothing runs; the core only adds what else is wrong.
        return Err(prepared.refuse::<O::Args>(limits).into());
    }
    let Prepared {
        value, spelling, ..
    } = prepared;
    let done = py.detach(|| O::call(store, value).map(Made::of));
    Ok(done.map_err(|err| spelling.error(err))?.make(py)?)
}

/// How `Store._call` runs one operation.
type Runner = fn(Python<'_>, &core::Store, Given<'_>) -> Result<Py<PyAny>>;

/// The runner of the operation named `name`: from the core's list of operations
/// ([`core::ops::each`]), so that an operation the core adds runs without a line here.
pub(crate) fn runner(name: &str) -> Option<Runner> {
    struct Runners;
    impl core::ops::Visitor for Runners {
        type Out = (&'static str, Runner);
        fn visit<O: Operation>(&mut self) -> Self::Out {
            (O::NAME, run::<O>)
        }
    }
    static TABLE: OnceLock<HashMap<&'static str, Runner>> = OnceLock::new();
    let table = TABLE.get_or_init(|| core::ops::each(&mut Runners).into_iter().collect());
    table.get(name).copied()
}

/// A core result on its way to Python: taken apart while the GIL is released, made into
/// Python objects once it is held again.
pub(crate) struct Made(Box<dyn Make>);

/// What makes the Python value of a [`Made`].
trait Make: FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send {}
impl<F: FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send> Make for F {}

impl Made {
    /// The Python value of `out`: a hand-written class for a type with behaviour (and a list
    /// or an optional one of them), otherwise its serde JSON as Python values, which the
    /// generated records (`handoff_core._records`) read.
    pub(crate) fn of<T: Serialize + 'static>(out: T) -> Made {
        let any: Box<dyn Any> = Box::new(out);
        macro_rules! native {
            ($any:ident; $($core:ty => $py:ty),* $(,)?) => {$(
                let $any = match $any.downcast::<$core>() {
                    Ok(one) => return Made(Box::new(move |py| Ok(Py::new(py, <$py>::new(*one))?.into_any()))),
                    Err(any) => any,
                };
                let $any = match $any.downcast::<Vec<$core>>() {
                    Ok(many) => return Made(Box::new(move |py| {
                        let many = many.into_iter().map(|one| Py::new(py, <$py>::new(one)));
                        Ok(PyList::new(py, many.collect::<PyResult<Vec<_>>>()?)?.into_any().unbind())
                    })),
                    Err(any) => any,
                };
                let $any = match $any.downcast::<Option<$core>>() {
                    Ok(maybe) => return Made(Box::new(move |py| match *maybe {
                        Some(one) => Ok(Py::new(py, <$py>::new(one))?.into_any()),
                        None => Ok(py.None()),
                    })),
                    Err(any) => any,
                };
            )*};
        }
        // (The macro names `any` so that its shadowing reaches the code after it.)
        native! {
            any;
            core::Handoff => Handoff,
            core::Claim => Claim,
            core::Event => Event,
            core::Chain => Chain,
            core::store::Task => Task,
            core::task::TaskHeader => TaskSummary,
            core::store::Session => Session,
            core::store::Bundle => Bundle,
            core::Packet => Packet,
        }
        let json = any
            .downcast::<T>()
            .map_err(|_| "a result changed its type")
            .and_then(|out| serde_json::to_value(&*out).map_err(|_| "a result without JSON"));
        Made(Box::new(move |py| match json {
            Ok(json) => Ok(json_to_py(py, &json)?.unbind()),
            Err(why) => Err(PyTypeError::new_err(why)),
        }))
    }

    /// The Python value.
    pub(crate) fn make(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        (self.0)(py)
    }
}

/// `out` as Python receives it (see [`Made::of`]).
pub(crate) fn to_python<T: Serialize + 'static>(py: Python<'_>, out: T) -> PyResult<Py<PyAny>> {
    Made::of(out).make(py)
}

/// The generated record `name` (`handoff_core._records`) of a value's JSON, for a method that
/// is no operation but returns what one does (`Store.memory_update`).
pub(crate) fn record<T: Serialize>(py: Python<'_>, name: &str, value: &T) -> PyResult<Py<PyAny>> {
    let json = to_py(py, value)?;
    let class = py.import("handoff_core._records")?.getattr(name)?;
    Ok(class.call_method1("_of", (json,))?.unbind())
}

/// The operation catalog as Python shows it (its names for the arguments it names differently,
/// the core's as `aliases`), as JSON: what `scripts/gen_stubs.py` writes the stubs from.
#[pyfunction(name = "_catalog_json")]
pub fn catalog_json() -> String {
    let operations: Vec<Value> = core::ops::catalog()
        .iter()
        .map(|op| {
            let mut op = serde_json::to_value(op).unwrap_or_default();
            let name = op["name"].as_str().unwrap_or_default().to_owned();
            let mut aliases = Map::new();
            for (_, python, core) in PYTHON_NAMES.iter().filter(|(o, _, _)| *o == name) {
                rename(&mut op, core, python);
                // A required argument is a positional parameter pyo3 insists on by its
                // Python name; an optional one takes the core's name by keyword too.
                let required = op["arguments"]["required"]
                    .as_array()
                    .is_some_and(|names| names.iter().any(|n| n == *python));
                if !required {
                    aliases.insert((*core).to_owned(), Value::from(*python));
                }
            }
            op["aliases"] = Value::Object(aliases);
            op
        })
        .collect();
    serde_json::to_string_pretty(&operations).unwrap_or_default()
}

/// Renames the argument `from` of a catalog entry to `to`, keeping its place.
fn rename(op: &mut Value, from: &str, to: &str) {
    let swap = |name: &mut Value| {
        if name.as_str() == Some(from) {
            *name = Value::from(to);
        }
    };
    if let Some(Value::Array(names)) = op.get_mut("positional") {
        names.iter_mut().for_each(&swap);
    }
    if let Some(Value::Array(names)) = op.pointer_mut("/arguments/required") {
        names.iter_mut().for_each(&swap);
    }
    if let Some(Value::Object(properties)) = op.pointer_mut("/arguments/properties") {
        *properties = std::mem::take(properties)
            .into_iter()
            .map(|(name, schema)| (if name == from { to.to_owned() } else { name }, schema))
            .collect();
    }
}
