//! The CLI's errors, their exit codes and their JSON form: the one place that maps core
//! [`ErrorKind`]s to what a shell or an MCP client sees.

use std::process::ExitCode;

use handoff_core::{Error, ErrorKind, Problem};
use serde_json::{Value, json};

use crate::location::{Location, OnDisk};
use crate::output::Output;

/// Exit codes, documented in `handoff --help` and the README.
pub(crate) mod code {
    pub(crate) const OK: u8 = 0;
    /// A spawned successor failed; the handoff was released.
    pub(crate) const SPAWN_FAILED: u8 = 1;
    pub(crate) const INVALID: u8 = 2;
    pub(crate) const NOT_FOUND: u8 = 3;
    pub(crate) const CONFLICT: u8 = 4;
    pub(crate) const CHAIN_VIOLATION: u8 = 5;
    pub(crate) const STORAGE: u8 = 6;
    pub(crate) const INVALID_TRANSITION: u8 = 7;
    /// Another process held the write lock past `--lock-patience`; nothing changed.
    pub(crate) const BUSY: u8 = 8;
    /// `handoff check` found damage that it did not repair.
    pub(crate) const DAMAGED: u8 = 9;
}

/// Everything a command can fail with.
#[derive(Debug)]
pub(crate) enum CliError {
    /// The core refused or failed.
    Core(Error),
    /// A command that does not create the store was pointed at one that does not exist.
    MissingStore(Location),
    /// With agent-scoped credentials (`--credentials`), an argument names an agent acting
    /// that the caller may not act as: `FORBIDDEN`, naming the argument and the rule.
    Forbidden { field: String, rule: String },
    /// With agent-scoped credentials, no token or one they do not list: `UNAUTHORIZED`.
    Unauthorized { field: String, rule: String },
}

impl From<Error> for CliError {
    fn from(e: Error) -> Self {
        CliError::Core(e)
    }
}

pub(crate) type CliResult<T> = Result<T, CliError>;

impl CliError {
    /// An input the caller named (`field`) cannot be read: invalid input, exit 2.
    pub(crate) fn input(field: &str, what: impl std::fmt::Display, e: std::io::Error) -> CliError {
        Error::invalid(field, format!("{what}: {e}")).into()
    }

    /// An output cannot be written: a storage error, exit 6.
    pub(crate) fn output(what: impl std::fmt::Display, e: std::io::Error) -> CliError {
        Error::storage(format!("{what}: {e}")).into()
    }

    /// The stable code: the core's `ErrorKind::code()`, and the servers' `FORBIDDEN` and
    /// `UNAUTHORIZED` (the codes the HTTP layer gives its own refusals).
    pub(crate) fn code(&self) -> &'static str {
        match self {
            CliError::Core(e) => e.kind().code(),
            CliError::MissingStore(_) => ErrorKind::Storage.code(),
            CliError::Forbidden { .. } => "FORBIDDEN",
            CliError::Unauthorized { .. } => "UNAUTHORIZED",
        }
    }

    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            CliError::Core(e) => match e.kind() {
                ErrorKind::Validation => code::INVALID,
                ErrorKind::NotFound => code::NOT_FOUND,
                ErrorKind::AlreadyClaimed | ErrorKind::LeaseLost | ErrorKind::Conflict => {
                    code::CONFLICT
                }
                ErrorKind::ChainViolation => code::CHAIN_VIOLATION,
                ErrorKind::InvalidTransition => code::INVALID_TRANSITION,
                ErrorKind::Busy => code::BUSY,
                // Storage, and kinds a newer core may add.
                _ => code::STORAGE,
            },
            CliError::MissingStore(_) => code::STORAGE,
            // Only a server refuses a call; `handoff mcp` started without a token it knows
            // exits as for any bad input.
            CliError::Forbidden { .. } | CliError::Unauthorized { .. } => code::INVALID,
        }
    }

    /// `{"error": {"code", "message", ...}}`, with the problems of a validation error.
    pub(crate) fn to_json(&self) -> Value {
        let mut error = json!({ "code": self.code(), "message": self.to_string() });
        match self {
            CliError::Core(Error::Validation { problems }) => {
                error["problems"] = serde_json::to_value(problems).unwrap_or_default();
            }
            CliError::Core(Error::NotFound { id, .. } | Error::Conflict { id }) => {
                error["id"] = json!(id);
            }
            CliError::Core(Error::VersionConflict {
                id,
                expected,
                actual,
            }) => {
                error["id"] = json!(id);
                error["expected_version"] = json!(expected);
                error["actual_version"] = json!(actual);
            }
            CliError::Core(Error::AlreadyClaimed { id, holder }) => {
                error["id"] = json!(id);
                error["holder"] = json!(holder);
            }
            CliError::Core(Error::LeaseLost { id, token, .. }) => {
                error["id"] = json!(id);
                error["token"] = json!(token);
            }
            CliError::Core(Error::InvalidTransition { id, status, .. }) => {
                error["id"] = json!(id);
                error["status"] = json!(status);
            }
            CliError::MissingStore(path) => {
                error["path"] = json!(path.shown());
            }
            CliError::Forbidden { field, rule } | CliError::Unauthorized { field, rule } => {
                error["problems"] = json!([{ "field": field, "rule": rule }]);
            }
            _ => {}
        }
        json!({ "error": error })
    }

    /// A validation error with each field and rule redacted on its own: a rule may quote
    /// input, and redacting `field: rule` whole would take a field named like a credential
    /// (`secret: must be ...`) for an assignment.
    fn redacted_problems(&self, out: &Output) -> Option<CliError> {
        let CliError::Core(Error::Validation { problems }) = self else {
            return None;
        };
        let problems = problems
            .iter()
            .map(|p| {
                Problem::new(
                    out.text(&p.field).into_owned(),
                    out.text(&p.rule).into_owned(),
                )
            })
            .collect();
        Some(CliError::Core(Error::Validation { problems }))
    }

    /// The message as it may be shown. An error may quote its input, so it leaves through
    /// `out` like everything else.
    pub(crate) fn shown_text(&self, out: &Output) -> String {
        match self.redacted_problems(out) {
            Some(e) => e.to_string(),
            None => out.text(&self.to_string()).into_owned(),
        }
    }

    /// [`CliError::to_json`] as it may be shown.
    pub(crate) fn shown_json(&self, out: &Output) -> Value {
        match self.redacted_problems(out) {
            Some(e) => e.to_json(),
            None => out.json(self.to_json()),
        }
    }

    /// Prints the error to stderr (as JSON with `--json`) and returns the exit code.
    pub(crate) fn report(&self, as_json: bool, out: &Output) -> ExitCode {
        if as_json {
            eprintln!("{}", self.shown_json(out));
        } else {
            eprintln!("handoff: error: {}", self.shown_text(out));
            if let Some(CliError::Core(Error::Validation { problems })) =
                self.redacted_problems(out)
                && problems.len() > 1
            {
                for problem in problems {
                    eprintln!("  - {problem}");
                }
            }
        }
        ExitCode::from(self.exit_code())
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Core(e) => write!(f, "{e}"),
            CliError::MissingStore(at) => write!(
                f,
                "no store at {}: {} (only create, create-many, import, policy save and mcp \
                 create one; check --db or HANDOFF_DB)",
                at.shown(),
                match at.on_disk() {
                    Some(OnDisk::Folder(_)) => "the folder does not exist or holds no store",
                    _ => "the file does not exist",
                }
            ),
            CliError::Forbidden { field, rule } => write!(f, "refused: {field}: {rule}"),
            CliError::Unauthorized { field, rule } => write!(f, "unauthorized: {field}: {rule}"),
        }
    }
}

impl std::error::Error for CliError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_exit_code() {
        let cases = [
            (Error::invalid("goal", "must not be empty"), code::INVALID),
            (
                Error::NotFound {
                    what: "handoff",
                    id: "x".into(),
                },
                code::NOT_FOUND,
            ),
            (
                Error::AlreadyClaimed {
                    id: "x".into(),
                    holder: "a".into(),
                },
                code::CONFLICT,
            ),
            (Error::Conflict { id: "x".into() }, code::CONFLICT),
            (Error::storage("disk on fire"), code::STORAGE),
            (
                Error::Busy {
                    message: "stuck".into(),
                },
                code::BUSY,
            ),
        ];
        for (error, exit) in cases {
            assert_eq!(CliError::Core(error).exit_code(), exit);
        }
        assert_eq!(
            CliError::MissingStore(Location::new("x.db")).exit_code(),
            code::STORAGE
        );
    }

    #[test]
    fn every_kind_has_a_documented_exit_code_and_code() {
        let kinds = [
            ErrorKind::Validation,
            ErrorKind::NotFound,
            ErrorKind::AlreadyClaimed,
            ErrorKind::LeaseLost,
            ErrorKind::Conflict,
            ErrorKind::ChainViolation,
            ErrorKind::InvalidTransition,
            ErrorKind::Busy,
            ErrorKind::Storage,
        ];
        let help = crate::args::EXIT_CODES;
        for kind in kinds {
            assert!(
                help.contains(kind.code()),
                "{} is not in --help",
                kind.code()
            );
        }
        assert!(help.contains("  8  "), "{help}");
        for field_error in [
            CliError::input(
                "policy",
                "cannot read p.json",
                std::io::Error::other("gone"),
            ),
            CliError::output("cannot write out.jsonl", std::io::Error::other("full")),
        ] {
            assert_ne!(field_error.code(), "IO");
        }
    }

    #[test]
    fn validation_json_lists_problems() {
        let e = CliError::Core(Error::invalid("goal", "must not be empty"));
        let v = e.to_json();
        assert_eq!(v["error"]["code"], "VALIDATION");
        assert_eq!(v["error"]["problems"][0]["field"], "goal");
    }
}
