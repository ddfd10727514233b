//! Store operations from their one description in the core ([`handoff_core::ops`], DESIGN §15).
//!
//! A call's JavaScript arguments become the JSON object of named arguments the core reads: the
//! positional arguments under their core names, the options object's camelCase keys in
//! snake_case (and those of the records a list option holds: a plan's `steps`), integral numbers as integers, `Date`s as RFC 3339 text, a claim as its four
//! reference keys. The core reads that object, reporting every problem at once, and runs the
//! operation. Problems come back in the caller's words, each named relative to the JavaScript
//! argument holding it: `taskId`, `completed[1]`, a claim's `token`, `createMany`'s `[2].goal`.
//!
//! `store_operations!` declares each operation's method and its `*Async` twin from one entry;
//! `_catalogJson` hands the core's catalog and these entries to `scripts/gen-types.mjs`, which
//! writes the options' TypeScript types.

use std::marker::PhantomData;
use std::sync::OnceLock;

use handoff_core::ops::{self, Operation};
use handoff_core::{Error, Limits, Problem, Store as CoreStore};
use napi::bindgen_prelude::{JsObjectValue, Object};
use napi::{Env, JsValue, Unknown, ValueType};
use napi_derive::napi;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::convert::{Reader, type_name};
use crate::errors::{Failure, Naming, Outcome, camel_case, invalid, snake_case};
use crate::task::{Job, Settle, ToJs, guarded, on_own_thread};

/// The positional argument read as a claim reference: only its reference keys are read, never
/// the record a `Claim` carries, so nothing a caller can read (`get`, `list`, events) settles one.
const CLAIM: &str = "claim";

/// A JavaScript method's parameter, as the type generator sees it.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Parameter {
    /// The core's argument name (`task_id`); JavaScript shows it in camelCase.
    pub name: &'static str,
    /// Its TypeScript type, as the method's signature declares it.
    pub ts: &'static str,
    /// Whether the caller may leave it out.
    pub optional: bool,
}

/// A store method of this face: the core operation it calls, which arguments it takes by
/// position, and the options object that takes the others.
#[derive(Clone, Debug, Serialize)]
pub struct Method {
    /// The core operation's name.
    pub operation: &'static str,
    /// The arguments taken by position, in order.
    pub positional: Vec<Parameter>,
    /// The options object, named after the method's parameter (`options`, `fields`); its
    /// TypeScript type is generated under the name `ts`.
    pub options: Option<Parameter>,
    /// Older spellings of arguments, as (alias, argument): the core's `x-aliases`.
    pub aliases: &'static [(String, String)],
    /// The TypeScript types the method and its `*Async` twin return.
    pub returns: [&'static str; 2],
}

impl Method {
    /// The method calling operation `O`.
    pub fn of<O: Operation>(
        positional: &[(&'static str, &'static str)],
        options: Option<Parameter>,
        returns: [&'static str; 2],
    ) -> Method {
        Method {
            operation: O::NAME,
            positional: positional
                .iter()
                .map(|&(name, ts)| Parameter {
                    name,
                    ts,
                    optional: false,
                })
                .collect(),
            options,
            aliases: aliases_of(O::NAME),
            returns,
        }
    }
}

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

/// Operation `operation`'s older spellings of arguments, as (alias, argument), from the
/// `x-aliases` of its schema's properties: the core accepts them, and the face names a problem
/// in the spelling the caller used.
fn aliases_of(operation: &str) -> &'static [(String, String)] {
    &shape_of(operation).aliases
}

/// The core's catalog and this face's methods over it, as JSON: what `scripts/gen-types.mjs`
/// writes the options' TypeScript types from. Not part of the API.
#[napi(js_name = "_catalogJson", skip_typescript, catch_unwind)]
pub fn catalog_json() -> String {
    let mut methods = crate::store::methods();
    // Those written by hand, which take a callable beside the core's arguments.
    methods.extend(crate::curation::methods());
    // Those that read an argument themselves (`importBundle` takes a `Bundle` too).
    methods.extend(crate::bundles::methods());
    // Those that take an option of this face's own (`events`' `redact`).
    methods.extend(crate::machine::methods());
    let catalog = serde_json::json!({
        "operations": ops::catalog(),
        "methods": methods,
    });
    serde_json::to_string_pretty(&catalog).unwrap_or_default()
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

/// An options parameter, which a method may declare optional (`Option<Unknown>`) or not.
pub trait OptionsArgument<'env> {
    /// The value, unless the caller left it out.
    fn given(&self) -> Option<&Unknown<'env>>;
}

impl<'env> OptionsArgument<'env> for Unknown<'env> {
    fn given(&self) -> Option<&Unknown<'env>> {
        Some(self)
    }
}

impl<'env> OptionsArgument<'env> for Option<Unknown<'env>> {
    fn given(&self) -> Option<&Unknown<'env>> {
        self.as_ref()
    }
}

/// A call's JavaScript arguments: the positional ones by their core names, then the options
/// object under its parameter's name.
pub(crate) struct Given<'a, 'env> {
    pub(crate) positional: &'a [(&'static str, &'a Unknown<'env>)],
    pub(crate) options: Option<(&'static str, Option<&'a Unknown<'env>>)>,
}

/// Runs operation `O` on the JavaScript thread.
pub(crate) fn now<'env, O>(
    env: &'env Env,
    store: CoreStore,
    given: Given<'_, '_>,
) -> napi::Result<Unknown<'env>>
where
    O: Operation,
    O::Output: ToJs,
{
    let output = guarded(env, Naming::AsIs, || {
        Ok(Call::<O>::read(store, &given)?.run()?)
    })?;
    output.to_js(env)
}

/// Runs operation `O` off the JavaScript thread and returns the Promise of its result, its
/// arguments read first, on this thread: on libuv's thread pool, or on a thread of its own when
/// the call may wait (a positive `wait_seconds`), so that a waiting worker holds none of the
/// pool's few threads.
pub(crate) fn later<'env, O>(
    env: &'env Env,
    store: CoreStore,
    given: Given<'_, '_>,
) -> napi::Result<Unknown<'env>>
where
    O: Operation + 'static,
    O::Output: Settle,
{
    let call = Call::<O>::read(store, &given);
    match call {
        Ok(call) if call.waits() => on_own_thread(env, Naming::AsIs, move || call.run()),
        call => {
            let job = Job::new(Naming::AsIs, call.map(|call| move || call.run()));
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

/// A call of operation `O` whose arguments were read from JavaScript.
struct Call<O> {
    store: CoreStore,
    arguments: JsArguments,
    operation: PhantomData<fn() -> O>,
}

impl<O: Operation> Call<O> {
    fn read(store: CoreStore, given: &Given<'_, '_>) -> Outcome<Call<O>> {
        let arguments = arguments_of::<O>(given)?;
        Ok(Call {
            store,
            arguments,
            operation: PhantomData,
        })
    }

    /// Whether the call may wait for work to arrive (`claimNext`'s `waitSeconds`).
    fn waits(&self) -> bool {
        let wait = self
            .arguments
            .value
            .get("wait_seconds")
            .and_then(Value::as_f64);
        wait.is_some_and(|seconds| seconds > 0.0)
    }

    /// Reads the arguments into the core's argument type and runs the operation.
    fn run(self) -> handoff_core::Result<O::Output> {
        let store = self.store;
        self.arguments
            .then(store.limits(), |args: O::Args| O::run(&store, args))
    }
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
        let JsArguments {
            value,
            refused,
            reader,
            names,
        } = self;
        let problems = reader.into_problems();
        let value = Value::Object(value);
        if refused.is_empty() && problems.is_empty() {
            return A::read(value, limits)
                .and_then(then)
                .map_err(|err| names.error(err));
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

/// Declares the store's operations, each from one entry, as methods of `Store`:
///
/// ```text
/// "The doc of both methods, a string a line."
/// claim, claim_async = Claim(id: "string", agent: "string"; options?: "ClaimOptions")
///     -> "Claim", "Promise<Claim>";
/// ```
///
/// The doc is given as strings, not `///` comments: napi-rs copies a doc comment that reached
/// it through `macro_rules!` into the .d.ts as the raw string literal it became (`r" ...`).
/// `Claim` is the core operation (`handoff_core::ops::Claim`); the parameters taken by position
/// are named by the core's arguments, with their TypeScript types; after `;` comes the options
/// object (`?` when it may be left out), whose TypeScript type `scripts/gen-types.mjs`
/// generates from the core's schema under that name; then the TypeScript return types of the
/// method and of its `*Async` twin. The entries also give `methods()`, their description for
/// the type generator.
macro_rules! store_operations {
    (@munch [$($done:tt)*]) => {
        $crate::ops::store_operations!(@emit $($done)*);
    };
    (@munch [$($done:tt)*]
        $($doc:literal)*
        $sync:ident, $async:ident = $op:ident($($arg:ident: $ts:tt),*) -> $ret:tt, $aret:tt;
        $($rest:tt)*
    ) => {
        $crate::ops::store_operations!(@munch [$($done)*
            {[$($doc)*] $sync $async $op [$($arg $ts)*] [] $ret $aret}] $($rest)*);
    };
    (@munch [$($done:tt)*]
        $($doc:literal)*
        $sync:ident, $async:ident = $op:ident($($arg:ident: $ts:tt),*; $opt:ident ?: $ots:tt)
            -> $ret:tt, $aret:tt;
        $($rest:tt)*
    ) => {
        $crate::ops::store_operations!(@munch [$($done)*
            {[$($doc)*] $sync $async $op [$($arg $ts)*] [$opt $ots true (Option<Unknown<'_>>)]
             $ret $aret}] $($rest)*);
    };
    (@munch [$($done:tt)*]
        $($doc:literal)*
        $sync:ident, $async:ident = $op:ident($($arg:ident: $ts:tt),*; $opt:ident: $ots:tt)
            -> $ret:tt, $aret:tt;
        $($rest:tt)*
    ) => {
        $crate::ops::store_operations!(@munch [$($done)*
            {[$($doc)*] $sync $async $op [$($arg $ts)*] [$opt $ots false (Unknown<'_>)]
             $ret $aret}] $($rest)*);
    };
    (@emit $({
        [$($doc:literal)*] $sync:ident $async:ident $op:ident [$($arg:ident $ts:tt)*]
        [$($opt:ident $ots:tt $optional:tt ($($opt_ty:tt)*))?] $ret:tt $aret:tt
    })*) => {
        #[napi]
        impl Store {
            $(
                $(#[doc = $doc])*
                #[napi(catch_unwind, ts_return_type = $ret)]
                pub fn $sync<'env>(
                    &self,
                    env: &'env Env,
                    $(#[napi(ts_arg_type = $ts)] $arg: Unknown<'_>,)*
                    $(#[napi(ts_arg_type = $ots)] $opt: $($opt_ty)*,)?
                ) -> napi::Result<Unknown<'env>> {
                    let given = $crate::ops::store_operations!(@given $($arg)*; $($opt)?);
                    $crate::ops::now::<handoff_core::ops::$op>(env, self.core(), given)
                }

                $(#[doc = $doc])*
                #[doc = ""]
                #[doc = "As a Promise: the work runs on libuv's thread pool."]
                #[napi(catch_unwind, ts_return_type = $aret)]
                pub fn $async<'env>(
                    &self,
                    env: &'env Env,
                    $(#[napi(ts_arg_type = $ts)] $arg: Unknown<'_>,)*
                    $(#[napi(ts_arg_type = $ots)] $opt: $($opt_ty)*,)?
                ) -> napi::Result<Unknown<'env>> {
                    let given = $crate::ops::store_operations!(@given $($arg)*; $($opt)?);
                    $crate::ops::later::<handoff_core::ops::$op>(env, self.core(), given)
                }
            )*
        }

        /// The store's methods over the core's operations, for the type generator.
        pub(crate) fn methods() -> Vec<$crate::ops::Method> {
            vec![$(
                $crate::ops::Method::of::<handoff_core::ops::$op>(
                    &[$((stringify!($arg), $ts)),*],
                    $crate::ops::store_operations!(@options $($opt $ots $optional)?),
                    [$ret, $aret],
                )
            ),*]
        }
    };
    (@given $($arg:ident)*; $($opt:ident)?) => {
        $crate::ops::Given {
            positional: &[$((stringify!($arg), &$arg)),*],
            options: $crate::ops::store_operations!(@given_options $($opt)?),
        }
    };
    (@given_options) => { None };
    (@given_options $opt:ident) => {
        Some((stringify!($opt), $crate::ops::OptionsArgument::given(&$opt)))
    };
    (@options) => { None };
    (@options $opt:ident $ts:tt $optional:tt) => {
        Some($crate::ops::Parameter { name: stringify!($opt), ts: $ts, optional: $optional })
    };
    ($($entries:tt)*) => {
        $crate::ops::store_operations!(@munch [] $($entries)*);
    };
}

pub(crate) use store_operations;
