//! The one place where errors become JavaScript `Error`s.
//!
//! Every failure of a call, sync or `*Async`, goes through `to_js`: a core [`Error`] becomes
//! an `Error` whose `code` is the core's stable code (`NOT_FOUND`, `ALREADY_CLAIMED`,
//! `LEASE_LOST`, `INVALID_TRANSITION`, `VALIDATION`, `CONFLICT`, `CHAIN_VIOLATION`, `BUSY`, `STORAGE`)
//! and which carries the core's details as properties (`problems`, `id`, `holder`, `token`, ...):
//! a compare-and-swap that found a task or a memory scope at another version is a `CONFLICT`
//! with `expected` and `actual`.
//! Field names in `problems` are the names the caller used.

use handoff_core::{Error, Problem};
use napi::bindgen_prelude::{JsObjectValue, Object};
use napi::{Env, JsValue, Status};

/// Why a call failed.
pub enum Failure {
    /// The core refused or failed.
    Core(Error),
    /// A JavaScript exception raised while reading the caller's values (a throwing getter);
    /// it is passed on unchanged.
    Js(napi::Error),
    /// A panic, caught before it reached Node.
    Panic(String),
}

/// The result of a call before it reaches JavaScript.
pub type Outcome<T> = std::result::Result<T, Failure>;

impl From<Error> for Failure {
    fn from(err: Error) -> Self {
        Failure::Core(err)
    }
}

impl From<napi::Error> for Failure {
    fn from(err: napi::Error) -> Self {
        Failure::Js(err)
    }
}

/// A validation failure naming one field, in the caller's words.
pub(crate) fn invalid(field: impl Into<String>, rule: impl Into<String>) -> Failure {
    Failure::Core(Error::invalid(field, rule))
}

/// How the core's field names are shown to the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Naming {
    /// camelCase record fields and call arguments (`taskId`, `completedSteps[2]`).
    Js,
    /// As they are: the snake_case fields of JSON text, file names, and problems already named
    /// in the caller's words (store operations, see [`crate::ops`]).
    AsIs,
}

/// A core field path (`completed_steps[3]`, `metadata.a`) in the caller's naming.
pub(crate) fn field_name(field: &str, naming: Naming) -> String {
    if naming == Naming::AsIs {
        return field.to_owned();
    }
    let end = field.find(['[', '.']).unwrap_or(field.len());
    let (head, rest) = field.split_at(end);
    format!("{}{rest}", camel_case(head))
}

/// `task_id` → `taskId`; names without underscores are returned as they are.
pub(crate) fn camel_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' && !out.is_empty() {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `taskId` → `task_id`.
pub(crate) fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Turns a failure into the error thrown or rejected in JavaScript.
pub(crate) fn to_js(env: &Env, failure: Failure, naming: Naming) -> napi::Error {
    match failure {
        Failure::Js(err) => err,
        Failure::Panic(message) => napi::Error::new(
            Status::GenericFailure,
            format!("handoff-core panicked: {message}"),
        ),
        Failure::Core(err) => {
            let message = match &err {
                Error::Validation { problems } => {
                    let list: Vec<String> = problems
                        .iter()
                        .map(|p| format!("{}: {}", field_name(&p.field, naming), p.rule))
                        .collect();
                    format!("invalid input: {}", list.join("; "))
                }
                other => other.to_string(),
            };
            // Building the object only fails while the environment shuts down; the message
            // then still names the code.
            build(env, &err, &message, naming).unwrap_or_else(|_| {
                napi::Error::new(
                    Status::GenericFailure,
                    format!("{}: {message}", err.kind().code()),
                )
            })
        }
    }
}

/// A problem as JavaScript sees it.
#[napi_derive::napi(object, object_from_js = false)]
pub struct ValidationProblem {
    /// The field, in the caller's naming (`goal`, `completedSteps[3]`, `leaseSeconds`).
    pub field: String,
    /// The rule it breaks.
    pub rule: String,
}

fn problem(p: &Problem, naming: Naming) -> ValidationProblem {
    ValidationProblem {
        field: field_name(&p.field, naming),
        rule: p.rule.clone(),
    }
}

fn build(env: &Env, err: &Error, message: &str, naming: Naming) -> napi::Result<napi::Error> {
    let mut obj: Object<'_> =
        env.create_error(napi::Error::new(Status::GenericFailure, message.to_owned()))?;
    obj.set_named_property("code", err.kind().code())?;
    match err {
        Error::NotFound { what, id } => {
            obj.set_named_property("id", id.as_str())?;
            obj.set_named_property("what", *what)?;
        }
        Error::Conflict { id } => {
            obj.set_named_property("id", id.as_str())?;
        }
        Error::VersionConflict {
            id,
            expected,
            actual,
        } => {
            obj.set_named_property("id", id.as_str())?;
            obj.set_named_property("expected", *expected as f64)?;
            obj.set_named_property("actual", *actual as f64)?;
        }
        Error::AlreadyClaimed { id, holder } => {
            obj.set_named_property("id", id.as_str())?;
            obj.set_named_property("holder", holder.as_str())?;
        }
        Error::LeaseLost { id, token, reason } => {
            obj.set_named_property("id", id.as_str())?;
            obj.set_named_property("token", *token as f64)?;
            obj.set_named_property("reason", reason.as_str())?;
        }
        Error::InvalidTransition {
            id,
            status,
            event,
            reason,
        } => {
            obj.set_named_property("id", id.as_str())?;
            obj.set_named_property("status", status.as_str())?;
            obj.set_named_property("event", *event)?;
            obj.set_named_property("reason", reason.as_str())?;
        }
        Error::Validation { problems } => {
            let problems: Vec<ValidationProblem> =
                problems.iter().map(|p| problem(p, naming)).collect();
            obj.set_named_property("problems", problems)?;
        }
        Error::ChainViolation(violation) => {
            obj.set_named_property("taskId", violation.task_id.as_str())?;
            obj.set_named_property("path", violation.path.clone())?;
            let rule = serde_json::to_value(&violation.rule).unwrap_or_default();
            obj.set_named_property("rule", rule)?;
        }
        _ => {}
    }
    Ok(napi::Error::from(obj.to_unknown()))
}
