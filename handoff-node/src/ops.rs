//! Store operations from their one description in the core ([`handoff_core::ops`], docs/design.md §15).
//!
//! Every operation is a method of `Store` with no line here: index.js defines each method (and
//! its `…Async` twin) from the core's catalog (`_catalogJson`, read by methods.js), calling
//! `_call` / `_callAsync` with the operation's name and the JavaScript arguments; the
//! operation is found in the core's list of operations ([`ops::each`]).
//!
//! A call's JavaScript arguments become the JSON object of named arguments the core reads: the
//! positional arguments under their core names, the options object's camelCase keys in
//! snake_case (and those of the records a list option holds: a plan's `steps`), integral
//! numbers as integers, `Date`s as RFC 3339 text, a claim as its four reference keys. The core
//! reads that object, reporting every problem at once, and runs the operation. Problems come
//! back in the caller's words, each named relative to the JavaScript argument holding it:
//! `taskId`, `completed[1]`, a claim's `token`, `createMany`'s `[2].goal`. The result comes
//! back as [`Json`], its keys as JavaScript shows them.

use std::sync::OnceLock;

use handoff_core::ops::{self, Operation, Visitor};
use handoff_core::{Error, Limits, Problem, Store as CoreStore};
use napi::bindgen_prelude::{JsObjectValue, Object};
use napi::{Env, JsValue, Unknown, ValueType};
use napi_derive::napi;
use serde_json::{Map, Value};

use crate::convert::{Reader, type_name};
use crate::errors::{Failure, Naming, Outcome, camel_case, invalid, snake_case};
use crate::output::Json;
use crate::run::{Job, ToJs, guarded, on_own_thread};
use crate::store::Store;

/// The positional argument read as a claim reference: only its reference keys are read, never
/// the record a `Claim` carries, so nothing a caller can read (`get`, `list`, events) settles one.
const CLAIM: &str = "claim";

/// What a face reads from an operation's argument schema beyond the argument names.
#[derive(Default)]
struct Shape {
    /// Older spellings of arguments, as (alias, argument): the core's `x-aliases`.
    aliases: Vec<(String, String)>,
    /// The arguments that are lists of records (`create_task`'s `steps`): objects with
    /// arguments of their own, whose keys a caller writes in camelCase as the options' keys.
    records: Vec<String>,
}

/// Operation `operation`'s [`Shape`], read from the catalog once.
fn shape_of(operation: &str) -> &'static Shape {
    static SHAPES: OnceLock<Vec<(&'static str, Shape)>> = OnceLock::new();
    static NONE: Shape = Shape {
        aliases: Vec::new(),
        records: Vec::new(),
    };
    let all = SHAPES.get_or_init(|| {
        ops::catalog()
            .into_iter()
            .map(|info| {
                let schema = &info.arguments;
                let mut shape = Shape::default();
                for (name, property) in schema["properties"].as_object().into_iter().flatten() {
                    let aliases = property["x-aliases"].as_array().into_iter().flatten();
                    shape.aliases.extend(
                        aliases
                            .filter_map(|alias| Some((alias.as_str()?.to_owned(), name.clone()))),
                    );
                    if lists_records(schema, property) {
                        shape.records.push(name.clone());
                    }
                }
                (info.name, shape)
            })
            .collect()
    });
    all.iter()
        .find(|(name, _)| *name == operation)
        .map_or(&NONE, |(_, shape)| shape)
}

/// Whether `property` of `schema` is a list (or an optional list) of objects with properties
/// of their own: records, not free-form JSON objects like `metadata`.
fn lists_records(schema: &Value, property: &Value) -> bool {
    let alternatives = property["anyOf"].as_array().into_iter().flatten();
    std::iter::once(property).chain(alternatives).any(|p| {
        p["items"]["$ref"]
            .as_str()
            .and_then(|r| r.strip_prefix("#/$defs/"))
            .is_some_and(|def| schema["$defs"][def]["properties"].is_object())
    })
}

/// The core's catalog as JSON, with how this face names results ([`crate::output`]): what
/// methods.js derives the store's methods from and `scripts/gen-types.mjs` writes the types
/// from. Not part of the API.
#[napi(js_name = "_catalogJson", skip_typescript, catch_unwind)]
pub fn catalog_json() -> String {
    let catalog = serde_json::json!({
        "operations": ops::catalog(),
        "results": crate::output::naming(),
    });
    serde_json::to_string(&catalog).unwrap_or_default()
}

/// The problems the core's argument type `kind` (`agent`, `tools`, `detect`, `context`,
/// `context_item`) finds in `json`, its arguments under the core's names, as a JSON list of
/// `{field, rule}`: what the tests compare this face's problems with. Not part of the API.
#[napi(js_name = "_coreProblems", skip_typescript, catch_unwind)]
pub fn core_problems(kind: String, json: String) -> String {
    fn problems<A: ops::Arguments>(value: Value) -> Vec<Problem> {
        match A::read(value, &Limits::default()) {
            Ok(_) => Vec::new(),
            Err(err) => err.problems().to_vec(),
        }
    }
    let value: Value = serde_json::from_str(&json).unwrap_or_default();
    let found = match kind.as_str() {
        "agent" => problems::<ops::AgentArgs>(value),
        "tools" => problems::<ops::ToolsArgs>(value),
        "detect" => problems::<ops::DetectArgs>(value),
        "context" => problems::<ops::ContextArgs>(value),
        "context_item" => problems::<ops::ContextItemArgs>(value),
        _ => vec![Problem::new("kind", "is not an argument type")],
    };
    let found: Vec<Value> = found
        .into_iter()
        .map(|p| serde_json::json!({ "field": p.field, "rule": p.rule }))
        .collect();
    Value::Array(found).to_string()
}

/// A call's JavaScript arguments: the positional ones by their core names, then the options
/// object under its parameter's name.
pub(crate) struct Given<'a, 'env> {
    pub(crate) positional: &'a [(&'static str, &'a Unknown<'env>)],
    pub(crate) options: Option<(&'static str, Option<&'a Unknown<'env>>)>,
}

/// An operation as `_call` runs it.
struct Runner {
    name: &'static str,
    /// The arguments a face may take by position, in order.
    positional: &'static [&'static str],
    /// Reads the arguments into the core's type, runs the operation and writes its result.
    run: fn(&CoreStore, JsArguments) -> handoff_core::Result<Json>,
}

fn run<O: Operation>(store: &CoreStore, arguments: JsArguments) -> handoff_core::Result<Json> {
    let output = arguments.call::<O>(store)?;
    Json::of(&output)
}

/// The operation named `name`, from the core's one list of operations.
fn runner(name: &str) -> Outcome<&'static Runner> {
    struct Runners;
    impl Visitor for Runners {
        type Out = Runner;
        fn visit<O: Operation>(&mut self) -> Runner {
            Runner {
                name: O::NAME,
                positional: O::POSITIONAL,
                run: run::<O>,
            }
        }
    }
    static RUNNERS: OnceLock<Vec<Runner>> = OnceLock::new();
    RUNNERS
        .get_or_init(|| ops::each(&mut Runners))
        .iter()
        .find(|r| r.name == name)
        .ok_or_else(|| invalid("operation", format!("{name} is no operation of the core")))
}

/// The parameter names a method gives its options object (`options`, `fields`, `changes`), as
/// napi needs them: for the lifetime of the process.
fn options_name(name: &str) -> &'static str {
    match name {
        "fields" => "fields",
        "changes" => "changes",
        _ => "options",
    }
}

/// A call of `_call`/`_callAsync`, read on the JavaScript thread: the operation and its
/// arguments.
fn read_call(
    operation: &str,
    positional: u32,
    options: Option<&str>,
    args: &Object<'_>,
) -> Outcome<(&'static Runner, JsArguments)> {
    let runner = runner(operation)?;
    let count = (positional as usize).min(runner.positional.len());
    let mut values = Vec::with_capacity(count + 1);
    for i in 0..=count {
        let value: Unknown<'_> = args.get_element(i as u32)?;
        values.push(value);
    }
    let given: Vec<(&'static str, &Unknown<'_>)> = runner.positional[..count]
        .iter()
        .copied()
        .zip(&values)
        .collect();
    let given = Given {
        positional: &given,
        options: options.map(|name| (options_name(name), values.get(count))),
    };
    let shape = shape_of(runner.name);
    let arguments = JsArguments::read(&given, &shape.aliases, &shape.records, true)?;
    Ok((runner, arguments))
}

/// Whether a call may wait for work to arrive (`claimNext`'s `waitSeconds`).
fn waits(arguments: &JsArguments) -> bool {
    let wait = arguments.value.get("wait_seconds").and_then(Value::as_f64);
    wait.is_some_and(|seconds| seconds > 0.0)
}

/// Runs the core's operation `operation` on `store` on the JavaScript thread, its first `positional`
/// arguments taken by position from `args`, then its options object (named `options`)
/// when the method has one. What every operation's method calls (index.js); not part of the
/// API.
#[napi(js_name = "_call", skip_typescript, catch_unwind)]
pub fn call<'env>(
    env: &'env Env,
    store: &Store,
    operation: String,
    positional: u32,
    options: Option<String>,
    args: Object<'_>,
) -> napi::Result<Unknown<'env>> {
    let store = store.core();
    let output = guarded(env, Naming::AsIs, || {
        let (runner, arguments) = read_call(&operation, positional, options.as_deref(), &args)?;
        Ok((runner.run)(&store, arguments)?)
    })?;
    output.to_js(env)
}

/// `_call` as a Promise: the arguments read on this thread, the operation run on libuv's
/// thread pool, or on a thread of its own when the call may wait (a positive
/// `waitSeconds`), so that a waiting worker holds none of the pool's few threads.
#[napi(js_name = "_callAsync", skip_typescript, catch_unwind)]
pub fn call_async<'env>(
    env: &'env Env,
    store: &Store,
    operation: String,
    positional: u32,
    options: Option<String>,
    args: Object<'_>,
) -> napi::Result<Unknown<'env>> {
    let store = store.core();
    match read_call(&operation, positional, options.as_deref(), &args) {
        Ok((runner, arguments)) if waits(&arguments) => {
            on_own_thread(env, Naming::AsIs, move || (runner.run)(&store, arguments))
        }
        read => {
            let work = read.map(|(runner, arguments)| move || (runner.run)(&store, arguments));
            let job = Job::new(Naming::AsIs, work);
            Ok(env.spawn(job)?.promise_object().to_unknown())
        }
    }
}

/// Reads the JavaScript arguments of a call of operation `O`, for a method that runs it itself
/// (with a callable the core takes beside its arguments: a verifier, a judge).
pub(crate) fn arguments_of<O: Operation>(given: &Given<'_, '_>) -> Outcome<JsArguments> {
    let shape = shape_of(O::NAME);
    JsArguments::read(given, &shape.aliases, &shape.records, true)
}

/// Whether a problem at `known` already covers one at `field` (the same argument, or a part).
fn covers(known: &str, field: &str) -> bool {
    field
        .strip_prefix(known)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

/// How the core's argument paths are shown to the caller.
struct Names {
    /// The arguments taken by position: a problem inside one is named relative to it, as the
    /// caller wrote that value (`claim.token` → `token`, `items[2].goal` → `[2].goal`).
    positional: Vec<&'static str>,
    /// Older spellings, as (alias, argument).
    aliases: &'static [(String, String)],
    /// Options that are lists of records, whose keys are read from camelCase too.
    records: &'static [String],
    /// Whether a problem inside a positional argument is named relative to it (the store's
    /// methods) or in full (`collaborators[1]`).
    relative: bool,
    /// Arguments the caller spelled otherwise than in camelCase (an alias), as (argument, as
    /// written).
    spelled: Vec<(String, String)>,
}

impl Names {
    /// `context_pct` → `contextPct`, `claim.lease_seconds` → `leaseSeconds`, `id` when the
    /// caller wrote `id` for `handoff_id`.
    fn show(&self, field: &str) -> String {
        let (head, rest) = split_head(field);
        let head = self
            .aliases
            .iter()
            .find(|(alias, _)| alias == head)
            .map_or(head, |(_, argument)| argument.as_str());
        if self.relative && self.positional.contains(&head) {
            if let Some(inner) = rest.strip_prefix('.') {
                return camel_head(inner);
            }
            if rest.starts_with('[') {
                // A list of records (`createMany`'s items) is read in camelCase; any other list
                // (messages, facts) as written.
                return if self.records.iter().any(|r| r == head) {
                    camel_head(rest)
                } else {
                    rest.to_owned()
                };
            }
        }
        if rest.starts_with('[') && self.records.iter().any(|r| r == head) {
            // A record's keys are camelCase too: `steps[1].maxAttempts`.
            return format!("{}{}", camel_case(head), camel_head(rest));
        }
        match self.spelled.iter().find(|(argument, _)| argument == head) {
            Some((_, written)) => format!("{written}{rest}"),
            None => format!("{}{rest}", camel_case(head)),
        }
    }

    fn problem(&self, p: Problem) -> Problem {
        Problem::new(self.show(&p.field), p.rule)
    }

    fn error(&self, err: Error) -> Error {
        match err {
            Error::Validation { problems } => Error::Validation {
                problems: problems.into_iter().map(|p| self.problem(p)).collect(),
            },
            other => other,
        }
    }

    fn failure(&self, failure: Failure) -> Failure {
        match failure {
            Failure::Core(err) => Failure::Core(self.error(err)),
            other => other,
        }
    }
}

/// `completed[2]` → (`completed`, `[2]`).
fn split_head(field: &str) -> (&str, &str) {
    field.split_at(field.find(['[', '.']).unwrap_or(field.len()))
}

/// `lease_seconds` → `leaseSeconds`, `[2].task_id` → `[2].taskId`: the first name in camelCase.
fn camel_head(field: &str) -> String {
    if field.starts_with('[') {
        return match field.find("].") {
            Some(end) => {
                let (index, rest) = field.split_at(end + 2);
                format!("{index}{}", camel_head(rest))
            }
            None => field.to_owned(),
        };
    }
    let (head, rest) = split_head(field);
    format!("{}{rest}", camel_case(head))
}

/// A call's arguments, read from JavaScript for one of the core's argument types.
pub(crate) struct JsArguments {
    /// The JSON object of named arguments.
    value: Map<String, Value>,
    /// Options refused before the core sees them, already in the caller's words.
    refused: Vec<Problem>,
    /// Reads the values, noting those that cannot be JSON (by core paths; read as `null`).
    reader: Reader,
    names: Names,
}

impl JsArguments {
    /// Reads the call's JavaScript arguments: `aliases` are the older spellings the core
    /// accepts; `records` the options that are lists of records (their items' keys are
    /// camelCase too); `relative` names a problem inside a positional argument relative to it.
    pub(crate) fn read(
        given: &Given<'_, '_>,
        aliases: &'static [(String, String)],
        records: &'static [String],
        relative: bool,
    ) -> Outcome<JsArguments> {
        let names = Names {
            positional: given.positional.iter().map(|(name, _)| *name).collect(),
            aliases,
            records,
            relative,
            spelled: Vec::new(),
        };
        let mut arguments = JsArguments {
            value: Map::new(),
            refused: Vec::new(),
            reader: Reader::default(),
            names,
        };
        match arguments.read_given(given) {
            Ok(()) => Ok(arguments),
            Err(failure) => Err(arguments.names.failure(failure)),
        }
    }

    /// Reads argument `name` as plain JSON, as the caller wrote it (keys and all).
    pub(crate) fn raw(&mut self, name: &str, argument: &Unknown<'_>) -> Outcome<()> {
        match self.reader.value(argument, &mut name.to_owned(), 0) {
            Ok(value) => {
                self.value.insert(name.to_owned(), value);
                Ok(())
            }
            Err(failure) => Err(self.names.failure(failure)),
        }
    }

    /// Sets argument `name` to `value` when the caller left it out (or gave `null`).
    pub(crate) fn default(&mut self, name: &str, value: Value) {
        let slot = self.value.entry(name).or_insert(Value::Null);
        if slot.is_null() {
            *slot = value;
        }
    }

    /// Takes argument `name` out, for the face to read itself (`null` when left out).
    pub(crate) fn take(&mut self, name: &str) -> Value {
        self.value.remove(name).unwrap_or(Value::Null)
    }

    /// Takes the face's own boolean option `name` out (`default` when left out); anything but a
    /// boolean is refused by name, with the call's other problems.
    pub(crate) fn take_bool(&mut self, name: &str, default: bool) -> bool {
        match self.take(name) {
            Value::Null => default,
            Value::Bool(on) => on,
            other => {
                let got = match other {
                    Value::Number(_) => "a number",
                    Value::String(_) => "a string",
                    Value::Array(_) => "an array",
                    _ => "an object",
                };
                let rule = format!("must be true or false, got {got}");
                self.refused.push(Problem::new(camel_case(name), rule));
                default
            }
        }
    }

    /// Reads the arguments into the core's argument type `A` under `limits` and calls `then`
    /// with them. Every problem comes back in the caller's words: any found while reading the
    /// JavaScript values first, with the core's about the rest.
    pub(crate) fn then<A: ops::Arguments, T>(
        self,
        limits: &Limits,
        then: impl FnOnce(A) -> handoff_core::Result<T>,
    ) -> handoff_core::Result<T> {
        self.read_with::<A, T>(limits, |value| A::read(value, limits).and_then(then))
    }

    /// Runs the operation `O` on the arguments as the core reads every face's
    /// ([`Operation::call`]: inside its span, which names the handoff, task and agents).
    pub(crate) fn call<O: Operation>(self, store: &CoreStore) -> handoff_core::Result<O::Output> {
        self.read_with::<O::Args, O::Output>(store.limits(), |value| O::call(store, value))
    }

    /// What `then` and `call` share: `read` on the arguments as JSON under the core's names
    /// when the JavaScript values were all readable, else every problem at once.
    fn read_with<A: ops::Arguments, T>(
        self,
        limits: &Limits,
        read: impl FnOnce(Value) -> handoff_core::Result<T>,
    ) -> handoff_core::Result<T> {
        let JsArguments {
            value,
            refused,
            reader,
            names,
        } = self;
        let problems = reader.into_problems();
        let value = Value::Object(value);
        if refused.is_empty() && problems.is_empty() {
            return read(value).map_err(|err| names.error(err));
        }
        let mut found = problems;
        if let Err(Error::Validation { problems: more }) = A::read(value, limits) {
            // The core also finds the values read as `null` in place of what was refused.
            let fresh: Vec<Problem> = more
                .into_iter()
                .filter(|p| !found.iter().any(|known| covers(&known.field, &p.field)))
                .collect();
            found.extend(fresh);
        }
        let mut all = refused;
        all.extend(found.into_iter().map(|p| names.problem(p)));
        Err(Error::Validation { problems: all })
    }

    fn read_given(&mut self, given: &Given<'_, '_>) -> Outcome<()> {
        for &(name, argument) in given.positional {
            self.positional(name, argument)?;
        }
        if let Some((name, Some(options))) = given.options {
            self.options(name, options)?;
        }
        Ok(())
    }

    /// A positional argument; left out when `undefined`, so the core names it if it is required.
    fn positional(&mut self, name: &'static str, argument: &Unknown<'_>) -> Outcome<()> {
        let t = argument.get_type()?;
        let value = match t {
            ValueType::Undefined => return Ok(()),
            // A list of records (`createMany`'s items) is read as options objects, camelCase
            // keys and all; any other list (chat messages in a provider's shape, facts) as
            // written.
            ValueType::Object
                if argument.is_array()? && self.names.records.iter().any(|r| r == name) =>
            {
                self.list(name, argument)?
            }
            ValueType::Object if name == CLAIM => self.claim(argument)?,
            _ => self.reader.value(argument, &mut name.to_owned(), 0)?,
        };
        self.value.insert(name.to_owned(), value);
        Ok(())
    }

    /// A list argument: its objects are options objects (`createMany`'s items).
    fn list(&mut self, name: &str, argument: &Unknown<'_>) -> Outcome<Value> {
        let array = argument.coerce_to_object()?;
        let len = array.get_array_length()?;
        let mut items = Vec::with_capacity(len.min(4096) as usize);
        for i in 0..len {
            let item: Unknown<'_> = array.get_element(i)?;
            let mut path = format!("{name}[{i}]");
            let value = if item.get_type()? == ValueType::Object && !item.is_array()? {
                Value::Object(self.object(&item.coerce_to_object()?, &path, &path)?)
            } else {
                self.reader.value(&item, &mut path, 1)?
            };
            items.push(value);
        }
        Ok(Value::Array(items))
    }

    /// A claim, or a reference to one: only the reference's keys. A `Claim` saved by a version
    /// without `handoffId` is read by its `handoff.id`.
    fn claim(&mut self, argument: &Unknown<'_>) -> Outcome<Value> {
        let claim = argument.coerce_to_object()?;
        let mut map = Map::new();
        for (key, js_key) in claim_keys() {
            let mut item: Unknown<'_> = claim.get_named_property(js_key)?;
            if item.get_type()? == ValueType::Undefined && key == "handoff_id" {
                let handoff: Unknown<'_> = claim.get_named_property("handoff")?;
                if handoff.get_type()? == ValueType::Object {
                    item = handoff.coerce_to_object()?.get_named_property("id")?;
                }
            }
            if item.get_type()? != ValueType::Undefined {
                let value = self.reader.value(&item, &mut format!("{CLAIM}.{key}"), 1)?;
                map.insert(key.clone(), value);
            }
        }
        Ok(Value::Object(map))
    }

    /// The options object: `undefined` and `null` mean all defaults.
    fn options(&mut self, name: &'static str, options: &Unknown<'_>) -> Outcome<()> {
        let t = options.get_type()?;
        match t {
            ValueType::Undefined | ValueType::Null => return Ok(()),
            ValueType::Object if !options.is_array()? => {}
            _ => {
                let got = if t == ValueType::Object {
                    "an array"
                } else {
                    type_name(t)
                };
                return Err(invalid(name, format!("must be an object, got {got}")));
            }
        }
        let object = options.coerce_to_object()?;
        let map = self.object(&object, "", name)?;
        for (key, value) in map {
            self.value.insert(key, value);
        }
        Ok(())
    }

    /// An options object found at `path` (empty for the call's options, which `owner` names):
    /// its keys from camelCase to the core's names, its values as JSON.
    fn object(
        &mut self,
        object: &Object<'_>,
        path: &str,
        owner: &str,
    ) -> Outcome<Map<String, Value>> {
        let mut map = Map::new();
        for (key, item) in self.reader.entries(object, owner)? {
            let mut argument = snake_case(&key);
            if camel_case(&argument) != key {
                // `task_id`, `TaskId`: no argument is spelled so in JavaScript.
                let rule = format!(
                    "is not an argument of this operation (options are camelCase: {})",
                    camel_case(&argument)
                );
                self.refuse(path, &key, rule);
                continue;
            }
            if item.get_type()? == ValueType::Null {
                // `null` is `undefined` here: the option is left out, its default applies (no
                // argument of the core means by `null` anything else than its absence).
                continue;
            }
            if path.is_empty() {
                let alias = self.names.aliases.iter().find(|(a, _)| *a == argument);
                if let Some((_, target)) = alias {
                    self.names.spelled.push((target.clone(), key.clone()));
                    argument = target.clone();
                } else if self.names.positional.contains(&argument.as_str()) {
                    self.refuse(path, &key, "is an argument of its own, not an option");
                    continue;
                }
            }
            if map.contains_key(&argument) {
                // Only an older spelling names an argument twice: given under both names.
                let spelled = self.names.spelled.iter().find(|(a, _)| *a == argument);
                let older = spelled.map_or(key.clone(), |(_, written)| written.clone());
                let rule = format!(
                    "give {} or {older} (its older name), not both",
                    camel_case(&argument)
                );
                map.remove(&argument);
                self.refuse(path, &older, rule);
                continue;
            }
            let mut at = if path.is_empty() {
                argument.clone()
            } else {
                format!("{path}.{argument}")
            };
            let value =
                if path.is_empty() && self.names.records.contains(&argument) && item.is_array()? {
                    self.list(&at, &item)?
                } else {
                    self.reader.value(&item, &mut at, 1)?
                };
            map.insert(argument, value);
        }
        Ok(map)
    }

    /// Refuses the key `key` of the object at `path`, naming it as the caller wrote it.
    fn refuse(&mut self, path: &str, key: &str, rule: impl Into<String>) {
        let field = if path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.names.show(path))
        };
        self.refused.push(Problem::new(field, rule));
    }
}

/// The keys of a claim reference, as (argument, JavaScript key), from the core's schema.
fn claim_keys() -> &'static [(String, String)] {
    static KEYS: OnceLock<Vec<(String, String)>> = OnceLock::new();
    KEYS.get_or_init(|| {
        let info = ops::OperationInfo::of::<ops::Heartbeat>();
        let schema = &info.arguments;
        let reference = schema["properties"][CLAIM]["$ref"]
            .as_str()
            .and_then(|r| r.strip_prefix("#/$defs/"))
            .unwrap_or_default();
        schema["$defs"][reference]["properties"]
            .as_object()
            .map(|properties| {
                properties
                    .keys()
                    .map(|key| (key.clone(), camel_case(key)))
                    .collect()
            })
            .unwrap_or_default()
    })
}
