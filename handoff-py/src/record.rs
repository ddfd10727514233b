//! `handoff_core.Handoff`: the core's record, read through attributes, plus the conversion of
//! `create`/`checkpoint` keyword arguments into the core's `NewHandoff`.

use chrono::{DateTime, Utc};
use handoff_core as core;
use handoff_core::{Kind, NewHandoff, Reason};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple};

use crate::convert::{Args, object_to_py, opt_repr, py_repr, to_py};
use crate::errors::Result;
use crate::validate::Limits;

/// A handover record. Fields are read-only attributes named as in the JSON form; times are
/// timezone-aware UTC `datetime`s and absent values are `None`.
#[pyclass(module = "handoff_core", name = "Handoff", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct Handoff {
    pub(crate) inner: core::Handoff,
}

impl Handoff {
    pub(crate) fn new(inner: core::Handoff) -> Handoff {
        Handoff { inner }
    }
}

/// The text of a record's JSON form, from a `str` or UTF-8 `bytes` argument `s`.
fn json_text(s: &Bound<'_, PyAny>) -> Result<String> {
    if let Ok(bytes) = s.cast::<PyBytes>() {
        return match std::str::from_utf8(bytes.as_bytes()) {
            Ok(text) => Ok(text.to_owned()),
            Err(_) => Err(core::Error::invalid("s", "must be UTF-8 text").into()),
        };
    }
    let mut args = Args::new();
    let text = args.text("s", s);
    args.finish()?;
    Ok(text)
}

/// The record's times, which `to_dict` gives as `datetime`s rather than JSON strings.
fn times(h: &core::Handoff) -> [(&'static str, Option<DateTime<Utc>>); 5] {
    [
        ("created_at", Some(h.created_at)),
        ("expires_at", h.expires_at),
        ("lease_until", h.lease_until),
        ("heartbeat_at", h.heartbeat_at),
        ("completed_at", h.completed_at),
    ]
}

#[pymethods]
impl Handoff {
    /// Parses and validates a record from its JSON form (`str` or UTF-8 `bytes`), under
    /// `limits` (the default limits when `None`; pass a store's `limits` to read what it wrote).
    #[staticmethod]
    #[pyo3(signature = (s, *, limits=None))]
    fn from_json(s: &Bound<'_, PyAny>, limits: Option<&Bound<'_, Limits>>) -> Result<Handoff> {
        let text = json_text(s)?;
        let limits = limits.map(|l| l.get().inner.clone()).unwrap_or_default();
        Ok(Handoff::new(core::Handoff::from_json_with(&text, &limits)?))
    }

    /// Unpickles a record: what a store wrote, under its (possibly raised) limits, reads back.
    #[staticmethod]
    fn _unpickle(s: &Bound<'_, PyAny>) -> Result<Handoff> {
        let text = json_text(s)?;
        let limits = core::Limits {
            max_record_bytes: usize::MAX,
            max_field_bytes: usize::MAX,
            max_list_items: usize::MAX,
            max_depth: core::MAX_DEPTH,
        };
        Ok(Handoff::new(core::Handoff::from_json_with(&text, &limits)?))
    }

    /// The canonical JSON form (what `from_json` reads, in every language).
    fn to_json(&self) -> String {
        self.inner.to_json()
    }

    /// Every field as a `dict` in JSON order, with `datetime`s for times.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = to_py(py, &self.inner)?.cast_into::<PyDict>()?;
        for (field, at) in times(&self.inner) {
            dict.set_item(field, at)?;
        }
        Ok(dict)
    }

    /// The record rendered for a successor's prompt, secrets redacted unless `redact=False`.
    #[pyo3(signature = (*, redact=true))]
    fn to_markdown(&self, redact: bool) -> String {
        if redact {
            self.inner.to_markdown()
        } else {
            self.inner.to_markdown_unredacted()
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "Handoff(id={}, task_id={}, status={}, from_agent={}, to_agent={})",
            py_repr(&self.inner.id),
            py_repr(&self.inner.task_id),
            py_repr(self.inner.status.as_str()),
            opt_repr(self.inner.from_agent.as_deref()),
            opt_repr(self.inner.to_agent.as_deref()),
        )
    }

    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let from_json = py.get_type::<Handoff>().getattr("_unpickle")?;
        Ok((from_json, PyTuple::new(py, [self.inner.to_json()])?))
    }

    #[getter]
    fn schema_version(&self) -> u32 {
        self.inner.schema_version
    }
    #[getter]
    fn id(&self) -> &str {
        &self.inner.id
    }
    #[getter]
    fn task_id(&self) -> &str {
        &self.inner.task_id
    }
    #[getter]
    fn session_id(&self) -> Option<&str> {
        self.inner.session_id.as_deref()
    }
    #[getter]
    fn parent_id(&self) -> Option<&str> {
        self.inner.parent_id.as_deref()
    }
    #[getter]
    fn kind(&self) -> &'static str {
        self.inner.kind.as_str()
    }
    #[getter]
    fn reason(&self) -> String {
        self.inner.reason.to_string()
    }
    #[getter]
    #[allow(clippy::wrong_self_convention)] // the field's name, not a conversion
    fn from_agent(&self) -> Option<&str> {
        self.inner.from_agent.as_deref()
    }
    #[getter]
    fn to_agent(&self) -> Option<&str> {
        self.inner.to_agent.as_deref()
    }
    #[getter]
    fn goal(&self) -> &str {
        &self.inner.goal
    }
    #[getter]
    fn progress_summary(&self) -> &str {
        &self.inner.progress_summary
    }
    #[getter]
    fn completed_steps(&self) -> Vec<String> {
        self.inner.completed_steps.clone()
    }
    #[getter]
    fn pending_steps(&self) -> Vec<String> {
        self.inner.pending_steps.clone()
    }
    #[getter]
    fn key_decisions(&self) -> Vec<String> {
        self.inner.key_decisions.clone()
    }
    #[getter]
    fn assumptions(&self) -> Vec<String> {
        self.inner.assumptions.clone()
    }
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.inner.warnings.clone()
    }
    #[getter]
    fn unresolved_errors(&self) -> Vec<String> {
        self.inner.unresolved_errors.clone()
    }
    #[getter]
    fn blockers(&self) -> Vec<String> {
        self.inner.blockers.clone()
    }
    #[getter]
    fn modified_files(&self) -> Vec<String> {
        self.inner.modified_files.clone()
    }
    #[getter]
    fn locked_files(&self) -> Vec<String> {
        self.inner.locked_files.clone()
    }
    #[getter]
    fn instructions(&self) -> Option<&str> {
        self.inner.instructions.as_deref()
    }
    #[getter]
    fn priority_items(&self) -> Vec<String> {
        self.inner.priority_items.clone()
    }
    #[getter]
    fn success_criteria(&self) -> Vec<String> {
        self.inner.success_criteria.clone()
    }
    #[getter]
    fn context_usage_percent(&self) -> Option<u8> {
        self.inner.context_usage_percent
    }
    /// A fresh `dict` on every access: changing it does not change the record.
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        object_to_py(py, &self.inner.metadata)
    }
    #[getter]
    fn created_at(&self) -> DateTime<Utc> {
        self.inner.created_at
    }
    #[getter]
    fn expires_at(&self) -> Option<DateTime<Utc>> {
        self.inner.expires_at
    }
    #[getter]
    fn max_attempts(&self) -> u32 {
        self.inner.max_attempts
    }
    #[getter]
    fn status(&self) -> &'static str {
        self.inner.status.as_str()
    }
    #[getter]
    fn claimed_by(&self) -> Option<&str> {
        self.inner.claimed_by.as_deref()
    }
    #[getter]
    fn claim_token(&self) -> Option<u64> {
        self.inner.claim_token
    }
    #[getter]
    fn lease_until(&self) -> Option<DateTime<Utc>> {
        self.inner.lease_until
    }
    #[getter]
    fn heartbeat_at(&self) -> Option<DateTime<Utc>> {
        self.inner.heartbeat_at
    }
    #[getter]
    fn attempts(&self) -> u32 {
        self.inner.attempts
    }
    #[getter]
    fn completed_at(&self) -> Option<DateTime<Utc>> {
        self.inner.completed_at
    }
    #[getter]
    fn outcome(&self) -> Option<&str> {
        self.inner.outcome.as_deref()
    }
}

/// The content fields a caller may give `create`, `create_many` and `checkpoint`, under their
/// Python argument names. `None` (or absent) leaves the core's default.
#[derive(Default)]
pub(crate) struct Fields<'a, 'py> {
    pub task_id: Option<&'a Bound<'py, PyAny>>,
    pub goal: Option<&'a Bound<'py, PyAny>>,
    pub from_agent: Option<&'a Bound<'py, PyAny>>,
    pub to_agent: Option<&'a Bound<'py, PyAny>>,
    pub kind: Option<&'a Bound<'py, PyAny>>,
    pub reason: Option<&'a Bound<'py, PyAny>>,
    pub context_pct: Option<&'a Bound<'py, PyAny>>,
    pub timeout_seconds: Option<&'a Bound<'py, PyAny>>,
    pub progress: Option<&'a Bound<'py, PyAny>>,
    pub completed: Option<&'a Bound<'py, PyAny>>,
    pub pending: Option<&'a Bound<'py, PyAny>>,
    pub decisions: Option<&'a Bound<'py, PyAny>>,
    pub assumptions: Option<&'a Bound<'py, PyAny>>,
    pub warnings: Option<&'a Bound<'py, PyAny>>,
    pub errors: Option<&'a Bound<'py, PyAny>>,
    pub files: Option<&'a Bound<'py, PyAny>>,
    pub instructions: Option<&'a Bound<'py, PyAny>>,
    pub metadata: Option<&'a Bound<'py, PyAny>>,
    pub id: Option<&'a Bound<'py, PyAny>>,
    pub parent_id: Option<&'a Bound<'py, PyAny>>,
    pub session_id: Option<&'a Bound<'py, PyAny>>,
    pub blockers: Option<&'a Bound<'py, PyAny>>,
    pub locked_files: Option<&'a Bound<'py, PyAny>>,
    pub priority_items: Option<&'a Bound<'py, PyAny>>,
    pub success_criteria: Option<&'a Bound<'py, PyAny>>,
    pub expires_at: Option<&'a Bound<'py, PyAny>>,
    pub max_attempts: Option<&'a Bound<'py, PyAny>>,
}

/// The keys `create_many` accepts in each dict: `create`'s keyword arguments.
pub(crate) const CREATE_KEYS: &[&str] = &[
    "task_id",
    "goal",
    "from_agent",
    "to_agent",
    "kind",
    "reason",
    "context_pct",
    "progress",
    "completed",
    "pending",
    "decisions",
    "assumptions",
    "warnings",
    "errors",
    "files",
    "instructions",
    "metadata",
    "id",
    "parent_id",
    "session_id",
    "blockers",
    "locked_files",
    "priority_items",
    "success_criteria",
    "expires_at",
    "max_attempts",
    "timeout_seconds",
];

impl<'a, 'py> Fields<'a, 'py> {
    /// The fields in `values`, which holds the value of each of [`CREATE_KEYS`] in order.
    pub(crate) fn from_values(values: &'a [Option<Bound<'py, PyAny>>]) -> Fields<'a, 'py> {
        let at = |i: usize| values.get(i).and_then(Option::as_ref);
        Fields {
            task_id: at(0),
            goal: at(1),
            from_agent: at(2),
            to_agent: at(3),
            kind: at(4),
            reason: at(5),
            context_pct: at(6),
            progress: at(7),
            completed: at(8),
            pending: at(9),
            decisions: at(10),
            assumptions: at(11),
            warnings: at(12),
            errors: at(13),
            files: at(14),
            instructions: at(15),
            metadata: at(16),
            id: at(17),
            parent_id: at(18),
            session_id: at(19),
            blockers: at(20),
            locked_files: at(21),
            priority_items: at(22),
            success_criteria: at(23),
            expires_at: at(24),
            max_attempts: at(25),
            timeout_seconds: at(26),
        }
    }

    /// Converts the fields, collecting type problems in `args`.
    pub(crate) fn to_new(&self, args: &mut Args, max_depth: usize) -> NewHandoff {
        let mut new = NewHandoff::default();
        if let Some(task_id) = self.task_id {
            new.task_id = args.text("task_id", task_id);
        }
        match self.goal.filter(|goal| !goal.is_none()) {
            Some(goal) => new.goal = args.text("goal", goal),
            None => args.problem("goal", "is required"),
        }
        new.from_agent = args.opt_text("from_agent", self.from_agent);
        new.to_agent = args.opt_text("to_agent", self.to_agent);
        if let Some(kind) = args.opt_parsed::<Kind>("kind", self.kind) {
            new.kind = kind;
        }
        let reason = args.opt_text("reason", self.reason);
        new.context_usage_percent =
            args.opt_int("context_pct", self.context_pct, "between 0 and 100");
        let timeout_seconds = args.opt_int(
            "timeout_seconds",
            self.timeout_seconds,
            "between 0 and 18446744073709551615",
        );
        // MASC's bare `context_limit` + `context_pct` (or `timeout` + `timeout_seconds`) is
        // combined by the core, which names the problem the way every face does.
        match Reason::from_input(
            reason.as_deref(),
            new.context_usage_percent,
            timeout_seconds,
        ) {
            Ok(reason) => new.reason = reason,
            Err(core::Error::Validation { problems }) => {
                for problem in problems {
                    args.problem(problem.field, problem.rule);
                }
            }
            Err(other) => args.problem("reason", other.to_string()),
        }
        if let Some(progress) = args.opt_text("progress", self.progress) {
            new.progress_summary = progress;
        }
        new.completed_steps = args.texts("completed", self.completed);
        new.pending_steps = args.texts("pending", self.pending);
        new.key_decisions = args.texts("decisions", self.decisions);
        new.assumptions = args.texts("assumptions", self.assumptions);
        new.warnings = args.texts("warnings", self.warnings);
        new.unresolved_errors = args.texts("errors", self.errors);
        new.modified_files = args.texts("files", self.files);
        new.instructions = args.opt_text("instructions", self.instructions);
        new.metadata = args.json_object("metadata", self.metadata, max_depth);
        new.id = args.opt_text("id", self.id);
        new.parent_id = args.opt_text("parent_id", self.parent_id);
        new.session_id = args.opt_text("session_id", self.session_id);
        new.blockers = args.texts("blockers", self.blockers);
        new.locked_files = args.texts("locked_files", self.locked_files);
        new.priority_items = args.texts("priority_items", self.priority_items);
        new.success_criteria = args.texts("success_criteria", self.success_criteria);
        new.expires_at = args.opt_time("expires_at", self.expires_at);
        new.max_attempts = args.opt_int(
            "max_attempts",
            self.max_attempts,
            "between 1 and 4294967295",
        );
        new
    }
}

/// Fails with every problem of `args`, plus the core's verdict on the rest of `new`.
pub(crate) fn finish_new(args: Args, new: &NewHandoff, limits: &core::Limits) -> Result<()> {
    args.finish_with(|| {
        let id = new.id.clone().unwrap_or_else(|| "unsaved".to_owned());
        match new.clone().into_record(id, Utc::now()).validate(limits) {
            Err(core::Error::Validation { problems }) => problems,
            _ => Vec::new(),
        }
    })
    .map_err(|err| as_arguments(err).into())
}

/// The JSON field names that `create`/`checkpoint` take under a shorter argument name.
const ARGUMENT_NAMES: &[(&str, &str)] = &[
    ("progress_summary", "progress"),
    ("completed_steps", "completed"),
    ("pending_steps", "pending"),
    ("key_decisions", "decisions"),
    ("unresolved_errors", "errors"),
    ("modified_files", "files"),
    ("context_usage_percent", "context_pct"),
];

/// The `create` argument that sets the record's JSON field `field`.
pub(crate) fn argument_name(field: &str) -> &str {
    ARGUMENT_NAMES
        .iter()
        .find(|(json, _)| *json == field)
        .map_or(field, |(_, argument)| argument)
}

/// A core error about a new record, with its problems named after the Python arguments the
/// caller used (`completed[2]` rather than `completed_steps[2]`).
pub(crate) fn as_arguments(err: core::Error) -> core::Error {
    let core::Error::Validation { mut problems } = err else {
        return err;
    };
    for problem in &mut problems {
        for (field, argument) in ARGUMENT_NAMES {
            if let Some(rest) = problem.field.strip_prefix(field)
                && (rest.is_empty() || rest.starts_with(['[', '.']))
            {
                problem.field = format!("{argument}{rest}");
            }
        }
    }
    core::Error::Validation { problems }
}

/// Reads one `create_many` item: a dict whose keys are `create`'s argument names.
pub(crate) fn new_from_dict(
    args: &mut Args,
    item: &Bound<'_, PyAny>,
    prefix: &str,
    max_depth: usize,
) -> NewHandoff {
    let Ok(dict) = item.cast::<PyDict>() else {
        args.problem(
            prefix.trim_end_matches('.'),
            "must be a dict of create() arguments",
        );
        return NewHandoff::default();
    };
    args.set_prefix(prefix.to_owned());
    for key in dict.keys() {
        let known = key
            .cast::<PyString>()
            .is_ok_and(|k| CREATE_KEYS.contains(&k.to_string_lossy().as_ref()));
        if !known {
            args.problem(&key, "is not an argument of create()");
        }
    }
    let values: Vec<Option<Bound<'_, PyAny>>> = CREATE_KEYS
        .iter()
        .map(|key| dict.get_item(*key).ok().flatten())
        .collect();
    let new = Fields::from_values(&values).to_new(args, max_depth);
    args.set_prefix(String::new());
    new
}
